//! DEBUG (the subcommands the Redis test suite leans on).
//!
//! DEBUG is one command with a free-form first argument, as in Redis (not a container), and
//! is refused unless `enable-debug-command` allows it for this connection.

pub mod digest;

use std::sync::atomic::Ordering::Relaxed;
use tern_engine::value::{RString, Value};
use tern_runtime::args::{eq_ic, parse_f64, parse_i64, Args, ERR_NOT_INT, ERR_NO_SUCH_KEY};
use tern_runtime::ctx::Ctx;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("debug", -2, [ADMIN NOSCRIPT LOADING STALE PROTECTED], [], [], debug, "1.0.0",
        "A container for debugging commands.", complexity: "Depends on subcommand."),
};

/// DEBUG CLUSTERLINK KILL <to|from|all> <node-id>.
fn clusterlink_kill(ctx: &mut Ctx, args: &Args) {
    let Some(c) = ctx.srv.cluster.get().cloned() else {
        return ctx.error("ERR Debug option only available for cluster mode enabled setup!");
    };
    let id = tern_runtime::cluster::proto::NodeId::parse(&args[4])
        .filter(|id| c.state.lock().node(id).is_some());
    let Some(id) = id else {
        return ctx.error(&format!("ERR Unknown node {}", args.str(4)));
    };
    let (to, from) = match args.str(3).to_ascii_lowercase().as_str() {
        "to" => (true, false),
        "from" => (false, true),
        "all" => (true, true),
        _ => return ctx.error(&format!("ERR Unknown direction {}", args.str(3))),
    };
    tern_runtime::cluster::bus::kill_links(&c, id, to, from);
    ctx.out.ok();
}

fn debug(ctx: &mut Ctx, args: &Args) {
    // Refused with `enable-debug-command` by the dispatcher (PROTECTED flag).
    let sub = args.str(1).to_ascii_lowercase();
    let argc = args.len();
    match (sub.as_str(), argc) {
        ("help", 2) => debug_help(ctx),
        ("sleep", 3) => {
            let secs = strtod_prefix(&args[2]);
            if secs > 0.0 && secs.is_finite() {
                // The whole server sleeps, as single-threaded Redis does.
                let d = std::time::Duration::from_micros((secs * 1e6) as u64);
                ctx.srv.world.stop_for(d);
            }
            ctx.out.ok();
        }
        ("object", 3) => debug_object(ctx, &args[2]),
        ("listpack", 3) => debug_listpack(ctx, &args[2]),
        ("drop-cluster-packet-filter", 3) => {
            let Some(kind) = parse_i64(&args[2]) else {
                return ctx.error(ERR_NOT_INT);
            };
            if let Some(c) = ctx.srv.cluster.get() {
                c.io.set_drop_filter(kind);
            }
            ctx.out.ok();
        }
        ("clusterlink", 5) if args.str(2).eq_ignore_ascii_case("kill") => {
            clusterlink_kill(ctx, args)
        }
        ("set-active-expire", 3) => {
            let on = atoi(&args[2]) != 0;
            ctx.srv.active_expire_enabled.store(on, Relaxed);
            ctx.out.ok();
        }
        ("pause-cron", 3) => {
            let on = atoi(&args[2]) != 0;
            ctx.srv.cron_paused.store(on, Relaxed);
            ctx.out.ok();
        }
        ("populate", 3..=5) => populate(ctx, args),
        ("protocol", 3) => protocol(ctx, &args[2]),
        ("quicklist-packed-threshold", 3) => {
            let ok = tern_runtime::config::parse_memory(&args.str(2))
                .is_some_and(|n| n >= 0 && tern_engine::limits::set_packed_threshold(n as u64));
            if ok {
                ctx.out.ok();
            } else {
                ctx.error("ERR argument must be a memory value bigger than 1 and smaller than 4gb");
            }
        }
        ("replybuffer", 4) => replybuffer(ctx, args),
        ("set-disable-deny-scripts", 3) => {
            ctx.srv
                .lua
                .disable_deny_scripts
                .store(atoi(&args[2]) != 0, Relaxed);
            ctx.out.ok();
        }
        ("change-repl-id", 2) => {
            tern_runtime::replication::change_replid(ctx.srv);
            ctx.out.ok();
        }
        ("replicate", 3..) => {
            // To the replicas alone (not the AOF), without a SELECT: a test's way to make
            // the replicas diverge.
            let argv: Vec<&[u8]> = args.iter().skip(2).collect();
            ctx.srv.propagation.log.feed_replicas_only(&argv);
            ctx.out.ok();
        }
        ("stringmatch-test", 2) => {
            stringmatch_selftest();
            ctx.out
                .simple(b"Apparently Redis did not crash: test passed");
        }
        ("error", 3) => {
            let mut line = vec![b'-'];
            line.extend(
                args[2]
                    .iter()
                    .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
            );
            line.extend_from_slice(b"\r\n");
            ctx.out.errors += 1;
            ctx.out.raw(&line);
        }
        ("log", 3) => {
            tern_runtime::log::warning(&format!("DEBUG LOG: {}", args.str(2)));
            ctx.out.ok();
        }
        ("set-skip-checksum-validation", 3) => {
            let skip = atoi(&args[2]) != 0;
            ctx.srv.rdb.skip_checksum_validation.store(skip, Relaxed);
            ctx.out.ok();
        }
        ("aof-flush-sleep", 3) => {
            let us = atoi(&args[2]).max(0) as u64;
            ctx.srv.aof.flush_sleep_us.store(us, Relaxed);
            ctx.out.ok()
        }
        ("segfault", 2) => crash_segfault(),
        ("panic", 2) => {
            tern_runtime::log::warning(&format!(
                "Guru Meditation: DEBUG PANIC called at Unix time {} #debug.rs",
                tern_engine::clock::now_ms() / 1000
            ));
            std::process::abort()
        }
        ("assert", 2) => {
            tern_runtime::log::warning("=== ASSERTION FAILED ===");
            tern_runtime::log::warning("==> debug.rs: DEBUG ASSERT '1 == 2' is not true");
            std::process::abort()
        }
        ("reload", _) => tern_runtime::persistence::debug_reload(ctx, args),
        ("loadaof", 2) => tern_runtime::aof::debug_loadaof(ctx),
        ("digest", 2) => digest(ctx),
        ("digest-value", _) => digest_value(ctx, args),
        _ => ctx.error(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
            args.str(1)
        )),
    }
}

/// DEBUG SEGFAULT: a real invalid memory access (a write to a read-only page), so the crash
/// report path is the one a genuine fault takes.
fn crash_segfault() -> ! {
    // SAFETY: deliberately faulting is this command's job; the page is mapped read-only so
    // the volatile write raises SIGSEGV, whose handler reports and kills the process.
    unsafe {
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        std::ptr::write_volatile(page as *mut u8, 1);
    }
    std::process::abort()
}

/// C's atoi: optional sign and leading digits, 0 when there are none.
fn atoi(s: &[u8]) -> i64 {
    let t = String::from_utf8_lossy(s);
    let t = t.trim_start();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let n: i64 = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |acc, d| {
            acc.saturating_mul(10).saturating_add((d - b'0') as i64)
        });
    if neg {
        -n
    } else {
        n
    }
}

/// C's strtod on the longest numeric prefix (0 when there is none).
fn strtod_prefix(s: &[u8]) -> f64 {
    if let Some(v) = parse_f64(s) {
        return v;
    }
    let t = String::from_utf8_lossy(s);
    let t = t.trim_start();
    let mut best = 0.0;
    for end in (1..=t.len()).rev() {
        if !t.is_char_boundary(end) {
            continue;
        }
        if let Ok(v) = t[..end].parse::<f64>() {
            best = v;
            break;
        }
    }
    best
}

/// Bytes an RDB length prefix takes.
fn rdb_len_size(n: usize) -> usize {
    if n < 1 << 6 {
        1
    } else if n < 1 << 14 {
        2
    } else if n <= u32::MAX as usize {
        5
    } else {
        9
    }
}

/// Bytes a string takes in an RDB file (uncompressed; integers in their compact form).
fn rdb_string_len(b: &[u8]) -> usize {
    if b.len() <= 11 {
        if let Some(n) = parse_i64(b) {
            if i8::try_from(n).is_ok() {
                return 2;
            } else if i16::try_from(n).is_ok() {
                return 3;
            } else if i32::try_from(n).is_ok() {
                return 5;
            }
        }
    }
    rdb_len_size(b.len()) + b.len()
}

fn debug_object(ctx: &mut Ctx, key: &[u8]) {
    let (hash, shard) = ctx.lock(key);
    // Like Redis, look at the entry even if it is logically expired.
    let Some(e) = shard.dict().get(hash, key) else {
        drop(shard);
        ctx.error(ERR_NO_SUCH_KEY);
        return;
    };
    let v = &e.value;
    let addr = v as *const Value as usize;
    #[allow(unreachable_patterns)]
    let serialized = match v {
        Value::Str(s) => s.with_bytes(rdb_string_len),
        _ => v.heap_size(),
    };
    let line = format!(
        "Value at:0x{addr:x} refcount:1 encoding:{} serializedlength:{serialized} lru:{} lru_seconds_idle:{}",
        v.encoding(),
        e.access,
        tern_engine::clock::idle_seconds(e.access)
    );
    drop(shard);
    ctx.out.simple(line.as_bytes());
}

/// DEBUG LISTPACK: the listpack behind a compact hash or sorted set, entry by entry, on the
/// server's standard output (as Redis's lpRepr); other encodings are refused.
fn debug_listpack(ctx: &mut Ctx, key: &[u8]) {
    let (hash, shard) = ctx.lock(key);
    let Some(e) = shard.dict().get(hash, key) else {
        drop(shard);
        return ctx.error(ERR_NO_SUCH_KEY);
    };
    let lp = match &e.value {
        Value::Hash(h) => match h.fields() {
            tern_engine::HashValue::Listpack(lp) => Some(lp),
            _ => None,
        },
        Value::ZSet(z) => match z.members() {
            tern_engine::ZSetValue::Listpack(lp) => Some(lp),
            _ => None,
        },
        _ => None,
    };
    let Some(lp) = lp else {
        drop(shard);
        return ctx.error("ERR Not a listpack encoded object.");
    };
    let mut text = format!(
        "{{total bytes {}}} {{num entries {}}}\n",
        lp.bytes_len(),
        lp.len()
    );
    for (i, item) in lp.iter().enumerate() {
        let shown = item.with_bytes(|b| String::from_utf8_lossy(b).into_owned());
        text.push_str(&format!("{{\n\t[{i}] {shown}\n}}\n"));
    }
    drop(shard);
    print!("{text}");
    ctx.out.simple(b"Listpack structure printed on stdout");
}

/// DEBUG DIGEST: every key of every database, logically expired ones included (as Redis,
/// which walks its dictionaries without expiring).
fn digest(ctx: &mut Ctx) {
    use crate::server::debug::digest::{entry_digest, hex, mix_in, xor_in};
    let store = &ctx.srv.store;
    let dbs: Vec<usize> = (0..store.databases()).collect();
    let per_db = store.shards_per_db();
    let mut g = store.lock_dbs(&dbs);
    let mut total = [0u8; 20];
    let mut shards = g.guards_mut();
    for db in dbs {
        let mut d = [0u8; 20];
        let mut any = false;
        for shard in shards.by_ref().take(per_db) {
            for e in shard.dict().iter() {
                any = true;
                xor_in(&mut d, &entry_digest(e));
            }
        }
        if any {
            mix_in(&mut total, &(db as u32).to_be_bytes());
            for (a, b) in total.iter_mut().zip(d.iter()) {
                *a ^= b;
            }
        }
    }
    drop(shards);
    drop(g);
    ctx.out.simple(hex(&total).as_bytes());
}

/// DEBUG DIGEST-VALUE key...: each value's digest (zeros for a missing key), expired keys
/// still counted.
fn digest_value(ctx: &mut Ctx, args: &Args) {
    use crate::server::debug::digest::{hex, value_digest};
    let mut lines = Vec::with_capacity(args.len() - 2);
    for key in args.iter().skip(2) {
        let (hash, shard) = ctx.lock(key);
        let mut d = [0u8; 20];
        if let Some(e) = shard.dict().get(hash, key) {
            value_digest(&mut d, &e.value, e.expire_at() != 0);
        }
        drop(shard);
        lines.push(hex(&d));
    }
    ctx.out.array(lines.len());
    for l in &lines {
        ctx.out.simple(l.as_bytes());
    }
}

fn populate(ctx: &mut Ctx, args: &Args) {
    let count = match parse_i64(&args[2]) {
        None => return ctx.error(ERR_NOT_INT),
        Some(n) if n < 0 => return ctx.error("ERR value is out of range, must be positive"),
        Some(n) => n as u64,
    };
    let prefix: Vec<u8> = if args.len() >= 4 {
        args[3].to_vec()
    } else {
        b"key".to_vec()
    };
    let size = if args.len() == 5 {
        match parse_i64(&args[4]) {
            None => return ctx.error(ERR_NOT_INT),
            Some(n) if n < 0 => return ctx.error("ERR value is out of range, must be positive"),
            Some(n) => n as usize,
        }
    } else {
        0
    };
    let now = ctx.now_ms;
    for j in 0..count {
        let mut key = prefix.clone();
        key.push(b':');
        key.extend_from_slice(itoa::Buffer::new().format(j).as_bytes());
        let (hash, mut shard) = ctx.lock(&key);
        if shard.contains(hash, &key, now) {
            continue;
        }
        let text = format!("value:{j}");
        let val = if size == 0 {
            RString::from_bytes(text.as_bytes())
        } else {
            let mut v = vec![0u8; size];
            let n = size.min(text.len());
            v[..n].copy_from_slice(&text.as_bytes()[..n]);
            RString::from_vec(v)
        };
        shard.set(hash, &key, Value::Str(val), false, now);
    }
    ctx.out.ok();
}

fn protocol(ctx: &mut Ctx, kind: &[u8]) {
    let k = String::from_utf8_lossy(kind).to_ascii_lowercase();
    let out = &mut *ctx.out;
    match k.as_str() {
        "string" => out.bulk(b"Hello World"),
        "integer" => out.int(12345),
        "double" => out.double_str(b"3.141"),
        "bignum" => {
            let n = b"1234567999999999999999999999999999999";
            if out.is_resp3() {
                out.raw(b"(");
                out.raw(n);
                out.raw(b"\r\n");
            } else {
                out.bulk(n);
            }
        }
        "null" => out.null(),
        "array" | "set" => {
            if k == "set" {
                out.set(3);
            } else {
                out.array(3);
            }
            for j in 0..3 {
                out.int(j);
            }
        }
        "map" => {
            out.map(3);
            for j in 0..3 {
                out.int(j);
                out.boolean(j == 1);
            }
        }
        "attrib" => {
            if out.is_resp3() {
                out.raw(b"|1\r\n");
                out.bulk(b"key-popularity");
                out.array(2);
                out.bulk(b"key:123");
                out.int(90);
            }
            out.bulk(b"Some real reply following the attribute");
        }
        "push" => {
            if !out.is_resp3() {
                ctx.error("ERR RESP2 is not supported by this command");
                return;
            }
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.int(42);
            out.bulk(b"Some real reply following the push reply");
        }
        "true" => out.boolean(true),
        "false" => out.boolean(false),
        "verbatim" => out.verbatim(b"This is a verbatim\nstring"),
        _ => ctx.error(
            "ERR Wrong protocol type name. Please use one of the following: \
             string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}

fn replybuffer(ctx: &mut Ctx, args: &Args) {
    let policy = &ctx.srv.clients.reply_buffers;
    if eq_ic(&args[2], "peak-reset-time") {
        if eq_ic(&args[3], "never") {
            policy.peak_reset_ms.store(-1, Relaxed);
        } else if eq_ic(&args[3], "reset") {
            policy.reset_peak_time();
        } else if let Some(ms) = parse_i64(&args[3]) {
            policy.peak_reset_ms.store(ms, Relaxed);
        } else {
            return ctx.error(ERR_NOT_INT);
        }
        ctx.out.ok();
    } else if eq_ic(&args[2], "resizing") {
        match parse_i64(&args[3]) {
            Some(v) => {
                policy.resizing.store(v != 0, Relaxed);
                ctx.out.ok();
            }
            None => ctx.error(ERR_NOT_INT),
        }
    } else {
        ctx.error("ERR Unknown subcommand or wrong number of arguments for 'replybuffer'");
    }
}

/// A quick randomized check of the glob matcher: it must never panic on odd patterns.
fn stringmatch_selftest() {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    let alphabet = b"*?[]^-\\ab";
    for _ in 0..10_000 {
        let plen = rng.gen_range(0..12);
        let slen = rng.gen_range(0..12);
        let p: Vec<u8> = (0..plen)
            .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
            .collect();
        let s: Vec<u8> = (0..slen)
            .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
            .collect();
        let _ = tern_runtime::glob::matches(&p, &s, rng.gen());
    }
}

const DEBUG_HELP: &[&str] = &[
    "CHANGE-REPL-ID",
    "    Give the instance new replication IDs (no effect until replication exists).",
    "ASSERT",
    "    Crash the server with a failed assertion (abort, with a crash report).",
    "AOF-FLUSH-SLEEP <microsec>",
    "    Sleep this long before each write of the AOF (0 turns the pause off).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Reply with <string> as an error, to exercise client error handling.",
    "LISTPACK <key>",
    "    Show the listpack of a compact hash or sorted set on the server's standard output.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "OBJECT <key>",
    "    Describe how the value at <key> is stored.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named <prefix>:<n> (prefix defaults to 'key'),",
    "    skipping names that already exist; <size> pads or cuts the values.",
    "PROTOCOL <type>",
    "    Reply with a sample value of <type>: string, integer, double, bignum, null,",
    "    array, set, map, attrib, push, verbatim, true or false.",
    "PANIC",
    "    Crash the server (abort, with a crash report).",
    "PAUSE-CRON <0|1>",
    "    Stop (1) or resume (0) the periodic tasks: active expiry, tracking table limit.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Set the element size above which list entries are stored on their own.",
    "RELOAD [option ...]",
    "    Not supported yet (needs RDB persistence).",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER|RESET|time>",
    "    Accepted for compatibility; reply buffers are managed per batch.",
    "REPLYBUFFER RESIZING <0|1>",
    "    Accepted for compatibility; reply buffers are managed per batch.",
    "SEGFAULT",
    "    Crash the server with an invalid memory access (with a crash report).",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Turn the background expiry of keys off (0) or back on (1).",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SET-DISABLE-DENY-SCRIPTS <0|1>",
    "    Allow (1) or refuse (0) commands flagged noscript inside scripts.",
    "SLEEP <seconds>",
    "    Block this connection's thread for <seconds> (fractions allowed).",
    "STRINGMATCH-TEST",
    "    Run a randomized robustness check of the glob matcher.",
];

fn debug_help(ctx: &mut Ctx) {
    tern_runtime::ctx::reply_help(ctx, "DEBUG", DEBUG_HELP);
}
