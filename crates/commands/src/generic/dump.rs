//! DUMP and RESTORE: Redis's serialized-value payloads (the format is `tern_persist::rdb`'s).

use std::sync::atomic::Ordering::Relaxed;
use tern_engine::clock;
use tern_engine::EntryBox;
use tern_persist::rdb::{dump_payload, restore_payload_with, RestoreError};
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX};
use tern_runtime::ctx::Ctx;
use tern_runtime::notify;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "generic";
    ("dump", 2, [READONLY], [KEYSPACE], [key(1, RO ACCESS)], dump, "2.6.0",
        "Returns a serialized representation of the value stored at a key.",
        complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
        tips: &["nondeterministic_output"]),
    ("restore", -4, [WRITE DENYOOM], [KEYSPACE DANGEROUS], [key(1, OW UPDATE)], restore, "2.6.0",
        "Creates a key from the serialized representation of a value.",
        complexity: RESTORE_COMPLEXITY),
    // What MIGRATE sends in cluster mode: RESTORE that a node importing the slot accepts
    // without the client having sent ASKING.
    ("restore-asking", -4, [WRITE DENYOOM ASKING], [KEYSPACE DANGEROUS], [key(1, OW UPDATE)],
        restore, "3.0.0", "An internal command for migrating keys in a cluster.",
        group: "server", complexity: RESTORE_COMPLEXITY),
};

const RESTORE_COMPLEXITY: &str = "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).";

fn dump(ctx: &mut Ctx, args: &Args) {
    let now = ctx.now_ms;
    let (h, mut g) = ctx.lock(&args[1]);
    let payload = match g.get(h, &args[1], now) {
        Some(e) => {
            ctx.touch(e);
            dump_payload(&e.value)
        }
        None => {
            drop(g);
            ctx.hit(false, &args[1]);
            return ctx.out.null();
        }
    };
    drop(g);
    ctx.hit(true, &args[1]);
    ctx.out.bulk(&payload);
}

/// Whether RESTORE runs the deep checks (`sanitize-dump-payload`): `yes` always; `clients`
/// for normal clients only, not for the master's stream, the AOF (internal clients, no
/// user) or a user with `skip-sanitize-payload`.
fn deep_sanitize(ctx: &Ctx) -> bool {
    match ctx.srv.config.get("sanitize-dump-payload").as_deref() {
        Some("yes") => true,
        Some("clients") => {
            let internal = ctx.conn.user.is_none()
                || ctx
                    .conn
                    .handle
                    .has_flag(tern_runtime::clients::cflags::MASTER)
                || ctx.srv.rdb.loading.load(Relaxed);
            !internal
                && !ctx
                    .conn
                    .user
                    .as_ref()
                    .is_some_and(|u| u.rules().skip_sanitize)
        }
        _ => false,
    }
}

fn restore(ctx: &mut Ctx, args: &Args) {
    let (mut replace, mut absttl) = (false, false);
    let (mut freq, mut idle): (i64, i64) = (-1, -1);
    let mut j = 4;
    while j < args.len() {
        let more = args.len() - j - 1;
        let a = &args[j];
        if eq_ic(a, "replace") {
            replace = true;
        } else if eq_ic(a, "absttl") {
            absttl = true;
        } else if eq_ic(a, "idletime") && more >= 1 && freq == -1 {
            match parse_i64(&args[j + 1]) {
                None => return ctx.error(ERR_NOT_INT),
                Some(v) if v < 0 => return ctx.error("ERR Invalid IDLETIME value, must be >= 0"),
                Some(v) => idle = v,
            }
            j += 1;
        } else if eq_ic(a, "freq") && more >= 1 && idle == -1 {
            match parse_i64(&args[j + 1]) {
                None => return ctx.error(ERR_NOT_INT),
                Some(v) if !(0..=255).contains(&v) => {
                    return ctx.error("ERR Invalid FREQ value, must be >= 0 and <= 255")
                }
                Some(v) => freq = v,
            }
            j += 1;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let now = ctx.now_ms;
    let key = &args[1];
    {
        let (h, mut g) = ctx.lock(key);
        if !replace && g.get_quiet(h, key, now).is_some() {
            return ctx.error("BUSYKEY Target key name already exists.");
        }
    }
    let ttl = match parse_i64(&args[2]) {
        None => return ctx.error(ERR_NOT_INT),
        Some(t) if t < 0 => return ctx.error("ERR Invalid TTL value, must be >= 0"),
        Some(t) => t,
    };
    let verify_crc = !ctx.srv.rdb.skip_checksum_validation.load(Relaxed);
    let value = match restore_payload_with(&args[3], verify_crc, deep_sanitize(ctx)) {
        Ok(v) => v,
        Err(RestoreError::VersionOrChecksum) => {
            return ctx.error("ERR DUMP payload version or checksum are wrong")
        }
        Err(e) => {
            // In RESTORE's context Redis logs the reason at verbose level and replies.
            tern_runtime::log::write(
                tern_runtime::log::VERBOSE,
                &format!(
                    "Internal error in RDB reading offset 0, function at rdbLoadObject -> {e}"
                ),
            );
            return ctx.error("ERR Bad data format");
        }
    };
    let expire_at = match ttl {
        0 => 0,
        t if absttl => t,
        t => t.saturating_add(now as i64),
    };
    let lfu = ctx.srv.config.hot.lfu_policy.load(Relaxed);
    let mut access = clock::initial_access_at(now);
    if lfu {
        if freq >= 0 {
            access = (clock::lfu_minutes() << 8) | freq as u32;
        }
    } else if idle >= 0 {
        let lru = clock::lru_clock() as i64;
        let mut abs = lru - idle;
        if abs < 0 {
            abs += clock::LRU_CLOCK_MAX as i64;
        }
        access = abs as u32;
    }
    let (h, mut g) = ctx.lock(key);
    if !replace && g.get_quiet(h, key, now).is_some() {
        drop(g);
        return ctx.error("BUSYKEY Target key name already exists.");
    }
    let old = if replace { g.remove(h, key) } else { None };
    if expire_at != 0 && tern_engine::expire::already_expired(expire_at, now) {
        drop(g);
        let deleted = old.is_some();
        drop(old);
        if deleted {
            ctx.dirty(1);
            ctx.notify(notify::GENERIC, "del", key);
            let lazy = ctx.srv.config.hot.lazyfree_lazy_server_del.load(Relaxed);
            ctx.propagate_as(&[if lazy { b"UNLINK" } else { b"DEL" }, key]);
        }
        return ctx.out.ok();
    }
    let entry = EntryBox::new_expiring(key, value, access, expire_at.max(0) as u64);
    g.insert_entry(h, entry, now);
    drop(g);
    drop(old);
    ctx.dirty(1);
    ctx.notify(notify::GENERIC, "restore", key);
    ctx.out.ok();
    // A relative TTL is propagated as the absolute time it gave (ABSTTL).
    if ttl != 0 && !absttl && ctx.propagating() {
        let t = expire_at.to_string();
        let mut argv: Vec<&[u8]> = args.iter().collect();
        argv[2] = t.as_bytes();
        argv.push(b"ABSTTL");
        ctx.propagate_as(&argv);
    }
}
