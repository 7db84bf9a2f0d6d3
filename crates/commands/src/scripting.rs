//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT. The script cache (sha -> body and flags) is
//! process-wide, so SCRIPT LOAD on one connection serves EVALSHA on every thread; each
//! thread's Lua state compiles a script the first time it runs it there.

use crate::args::{eq_ic, parse_i64, Args};
use crate::ctx::Ctx;
use crate::lua::{self, sflags};
use crate::table::CommandSpec;
use crate::txn::LockPlan;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};

pub static COMMANDS: &[CommandSpec] = crate::table::commands! { group "scripting";
    ("eval", -3, [NOSCRIPT STALE SKIP_MONITOR MAY_REPLICATE NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RW ACCESS UPDATE)], eval, "2.6.0",
        "Executes a server-side Lua script.",
        complexity: "Depends on the script that is executed."),
    ("evalsha", -3, [NOSCRIPT STALE SKIP_MONITOR MAY_REPLICATE NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RW ACCESS UPDATE)], evalsha, "2.6.0",
        "Executes a server-side Lua script by SHA1 digest.",
        complexity: "Depends on the script that is executed."),
    ("eval_ro", -3, [READONLY NOSCRIPT STALE SKIP_MONITOR NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RO ACCESS)], eval_ro, "7.0.0",
        "Executes a read-only server-side Lua script.",
        complexity: "Depends on the script that is executed."),
    ("evalsha_ro", -3, [READONLY NOSCRIPT STALE SKIP_MONITOR NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RO ACCESS)], evalsha_ro, "7.0.0",
        "Executes a read-only server-side Lua script by SHA1 digest.",
        complexity: "Depends on the script that is executed."),
    ("script", -2, [], [], [], _, "2.6.0", "A container for Lua scripts management commands.",
        complexity: "Depends on subcommand.", subcommands: SCRIPT_SUBCOMMANDS),
};

static SCRIPT_SUBCOMMANDS: &[CommandSpec] = crate::table::commands! { group "scripting";
    ("debug", 3, [NOSCRIPT], [SCRIPTING], [], script_debug, "3.2.0",
        "Sets the debug mode of server-side Lua scripts."),
    ("exists", -3, [NOSCRIPT], [SCRIPTING], [], script_exists, "2.6.0",
        "Determines whether server-side Lua scripts exist in the script cache.",
        complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        tips: &["request_policy:all_shards", "response_policy:agg_logical_and"]),
    ("flush", -2, [NOSCRIPT], [SCRIPTING], [], script_flush, "2.6.0",
        "Removes all server-side Lua scripts from the script cache.",
        complexity: "O(N) with N being the number of scripts in cache",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("help", 2, [LOADING STALE], [SCRIPTING], [], script_help, "5.0.0",
        "Returns helpful text about the different subcommands."),
    ("kill", 2, [NOSCRIPT ALLOW_BUSY], [SCRIPTING], [], script_kill, "2.6.0",
        "Terminates a server-side Lua script during execution.",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"]),
    ("load", 3, [NOSCRIPT STALE], [SCRIPTING], [], script_load, "2.6.0",
        "Loads a server-side Lua script to the script cache.",
        complexity: "O(N) with N being the length in bytes of the script body.",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
};

/// One cached script.
pub struct Script {
    /// Its SHA1 in lowercase hex (what errors and SCRIPT LOAD show), and as bytes.
    pub sha: String,
    pub digest: Sha,
    pub body: Vec<u8>,
    /// Shebang flags (`sflags`), or EVAL_COMPAT without a shebang.
    pub flags: u32,
    /// Bytes of the shebang line, skipped when compiling (its newline is kept, so line
    /// numbers stay right).
    pub shebang_len: usize,
    /// Slow last time: run on a script thread.
    pub history: lua::RunHistory,
}

#[derive(Default)]
struct Cache {
    scripts: HashMap<String, Arc<Script>>,
    bytes: usize,
}

static CACHE: LazyLock<RwLock<Cache>> = LazyLock::new(Default::default);

/// A SHA1 digest, the key of the per-thread lookups.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Sha([u8; 20]);

impl Sha {
    /// From 40 hex digits, either case; None for anything else (no script has that name).
    pub fn from_hex(hex: &[u8]) -> Option<Sha> {
        if hex.len() != 40 {
            return None;
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        };
        let mut out = [0u8; 20];
        for (i, o) in out.iter_mut().enumerate() {
            *o = (digit(hex[2 * i])? << 4) | digit(hex[2 * i + 1])?;
        }
        Some(Sha(out))
    }
}

impl std::hash::Hash for Sha {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.0[..8]);
        state.write_u64(u64::from_le_bytes(w));
    }
}

/// A digest's bytes are already uniformly spread: its first eight are its hash.
#[derive(Default)]
pub struct ShaHasher(u64);

impl std::hash::Hasher for ShaHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by script digest.
pub type ShaMap<V> = HashMap<Sha, V, std::hash::BuildHasherDefault<ShaHasher>>;

/// A script's digest as a client spelled it (40 hex digits), the key of the per-thread
/// lookup: no decoding before the lookup, and the first 8 digits are its hash.
#[derive(Clone, Copy, PartialEq, Eq)]
struct HexKey([u8; 40]);

impl std::hash::Hash for HexKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut w = [0u8; 8];
        w.copy_from_slice(&self.0[..8]);
        state.write_u64(u64::from_le_bytes(w));
    }
}

/// A thread's reference to a cached script: cloning it is a plain increment, where cloning
/// the Arc would be an atomic one on a line every thread running the script shares.
#[allow(clippy::redundant_allocation)]
type ScriptRef = Rc<Arc<Script>>;

type LocalScripts = HashMap<HexKey, ScriptRef, std::hash::BuildHasherDefault<ShaHasher>>;

thread_local! {
    /// This thread's view of the script cache for the generation it was filled in: EVALSHA
    /// finds a script without the shared lock, and takes a thread-local reference to it, so
    /// that threads running the same script share its cache lines read-only (no reader
    /// count or reference count bouncing between cores).
    static LOCAL: std::cell::RefCell<(u64, LocalScripts)> =
        std::cell::RefCell::new((u64::MAX, LocalScripts::default()));
}

/// The cached script with digest `hex` (40 hex digits, either case).
fn lookup(hex: &[u8]) -> Option<ScriptRef> {
    let key = HexKey(hex.try_into().ok()?);
    let gen = GEN.load(Relaxed);
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        if l.0 != gen {
            l.1.clear();
            l.0 = gen;
        }
        if let Some(s) = l.1.get(&key) {
            return Some(s.clone());
        }
        // Read after `gen`: a SCRIPT FLUSH in between empties the cache first (NOSCRIPT), or
        // bumps the generation after, which clears this copy on the next lookup.
        let lower = std::str::from_utf8(hex).ok()?.to_ascii_lowercase();
        let s = Rc::new(CACHE.read().scripts.get(lower.as_str()).cloned()?);
        l.1.insert(key, s.clone());
        Some(s)
    })
}

/// Bumped by SCRIPT FLUSH: every thread then starts a fresh Lua state.
static GEN: AtomicU64 = AtomicU64::new(0);

/// The script cache's generation (SCRIPT FLUSH bumps it).
pub fn generation() -> u64 {
    GEN.load(Relaxed)
}

/// (number of cached scripts, bytes of their bodies) for INFO.
pub fn cache_stats() -> (usize, usize) {
    let c = CACHE.read();
    (c.scripts.len(), c.bytes)
}

/// Script flags that make a script a `denyoom` command (Redis's scriptFlagsToCmdFlags): a
/// shebang script that neither says `allow-oom` nor `no-writes`.
pub fn flags_deny_oom(fl: u32) -> bool {
    fl & sflags::EVAL_COMPAT == 0 && fl & (sflags::ALLOW_OOM | sflags::NO_WRITES) == 0
}

/// May this EVAL/EVALSHA write (CLIENT PAUSE WRITE holds it)? A script without a shebang, or
/// not in the cache, may; one with a shebang may unless it declares `no-writes`.
pub fn eval_may_write(by_sha: bool, args: &Args) -> bool {
    if args.len() < 2 {
        return true;
    }
    let fl = if by_sha {
        let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        match CACHE.read().scripts.get(&sha) {
            Some(s) => s.flags,
            None => return true,
        }
    } else {
        match shebang_flags(&args[1]) {
            Ok((fl, _)) => fl,
            Err(_) => return true,
        }
    };
    fl & sflags::EVAL_COMPAT != 0 || fl & sflags::NO_WRITES == 0
}

/// Is this EVAL/EVALSHA (and _RO) refused while memory is over `maxmemory`?
pub fn eval_denies_oom(by_sha: bool, args: &Args) -> bool {
    if args.len() < 2 {
        return false;
    }
    let fl = if by_sha {
        match lookup(&args[1]) {
            Some(s) => s.flags,
            None => return false,
        }
    } else {
        match shebang_flags(&args[1]) {
            Ok((fl, _)) => fl,
            Err(_) => return false,
        }
    };
    flags_deny_oom(fl)
}

/// Redis's shebang parsing for EVAL scripts: `#!lua [flags=a,b]`.
pub fn shebang_flags(body: &[u8]) -> Result<(u32, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((sflags::EVAL_COMPAT, 0));
    }
    let Some(end) = body.iter().position(|&c| c == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    if tern_resp::split_args(&body[..end], &mut buf, &mut ranges).is_err() || ranges.is_empty() {
        return Err("Invalid engine in script shebang".into());
    }
    let part = |i: usize| &buf[ranges[i].0..ranges[i].1];
    if part(0) != b"#!lua" {
        return Err(format!(
            "Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(part(0))
        ));
    }
    let mut fl = 0;
    for i in 1..ranges.len() {
        let p = part(i);
        let Some(list) = p.strip_prefix(b"flags=") else {
            return Err(format!(
                "Unknown lua shebang option: {}",
                String::from_utf8_lossy(p)
            ));
        };
        // `flags=` alone declares no flags (Redis splits an empty list into nothing).
        for name in list.split(|&c| c == b',').filter(|_| !list.is_empty()) {
            match sflags::NAMES.iter().find(|(_, n)| n.as_bytes() == name) {
                Some((bit, _)) => fl |= bit,
                None => {
                    return Err(format!(
                        "Unexpected flag in script shebang: {}",
                        String::from_utf8_lossy(name)
                    ))
                }
            }
        }
    }
    Ok((fl, end))
}

/// `script` compiled on this thread's VM (the first time it runs here).
fn ensure_compiled(vm: &mut lua::Vm, script: &Script) -> Result<lua::Compiled, String> {
    let sha = script.digest;
    if let Some(&c) = vm.scripts.get(&sha) {
        return Ok(c);
    }
    let f = vm
        .compile(&script.body[script.shebang_len..], "@user_script")
        .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
    let c = vm.keep(f)?;
    vm.scripts.insert(sha, c);
    Ok(c)
}

/// Add a script to the cache after compiling it here (SCRIPT LOAD, first EVAL).
fn create(body: &[u8]) -> Result<Arc<Script>, String> {
    let sha = lua::sha1_hex(body);
    if let Some(s) = CACHE.read().scripts.get(&sha) {
        return Ok(s.clone());
    }
    let (flags, shebang_len) = shebang_flags(body).map_err(|e| format!("ERR {e}"))?;
    let script = Arc::new(Script {
        digest: Sha::from_hex(sha.as_bytes()).expect("sha1_hex gives 40 hex digits"),
        sha: sha.clone(),
        body: body.to_vec(),
        flags,
        shebang_len,
        history: Default::default(),
    });
    let gen = GEN.load(Relaxed);
    lua::with_vm(
        true,
        gen,
        |_| Ok(()),
        |vm| ensure_compiled(vm, &script).map(|_| ()),
    )??;
    let mut c = CACHE.write();
    if !c.scripts.contains_key(&sha) {
        c.bytes += body.len() + 40;
        c.scripts.insert(sha, script.clone());
    }
    Ok(script)
}

fn eval(ctx: &mut Ctx, args: &Args) {
    eval_generic(ctx, args, false, false)
}
fn evalsha(ctx: &mut Ctx, args: &Args) {
    eval_generic(ctx, args, true, false)
}
fn eval_ro(ctx: &mut Ctx, args: &Args) {
    eval_generic(ctx, args, false, true)
}
fn evalsha_ro(ctx: &mut Ctx, args: &Args) {
    eval_generic(ctx, args, true, true)
}

/// numkeys as EVAL and FCALL check it (`bad_int` is the error for a non-integer).
pub fn numkeys(ctx: &mut Ctx, args: &Args, bad_int: &str) -> Option<usize> {
    let Some(n) = parse_i64(&args[2]) else {
        ctx.error(bad_int);
        return None;
    };
    if n > args.len() as i64 - 3 {
        ctx.error("ERR Number of keys can't be greater than number of args");
        return None;
    }
    if n < 0 {
        ctx.error("ERR Number of keys can't be negative");
        return None;
    }
    Some(n as usize)
}

/// Redis's checks before a script with declared flags runs (compat-mode scripts skip them).
pub fn check_flags(ctx: &mut Ctx, fl: u32, ro: bool) -> bool {
    if fl & sflags::EVAL_COMPAT != 0 {
        return true;
    }
    if fl & sflags::NO_WRITES == 0 && ro {
        ctx.error("ERR Can not execute a script with write flag using *_ro command.");
        return false;
    }
    if crate::master_link::obeys(ctx.conn.handle.id) {
        return true;
    }
    if fl & sflags::NO_WRITES == 0 {
        if let Some(e) = crate::persistence::disk_error(ctx.srv) {
            ctx.error(e);
            return false;
        }
        if let Some(e) = crate::replication::deny_write(ctx.srv) {
            ctx.error(e);
            return false;
        }
    }
    // On a replica, as Redis's scriptPrepareForRun.
    let stale_ok = fl & sflags::ALLOW_STALE != 0;
    match crate::master_link::deny_reason(ctx.srv, fl & sflags::NO_WRITES == 0, stale_ok) {
        Some(e) if e.starts_with("READONLY") => {
            ctx.error("READONLY Can not run script with write flag on readonly replica");
            false
        }
        Some(e) => {
            ctx.error(e);
            false
        }
        None => true,
    }
}

/// The lock plan of a script: its declared keys in the current database.
pub fn plan<'a>(db: usize, keys: impl Iterator<Item = &'a [u8]>) -> LockPlan {
    LockPlan::Keys(keys.map(|k| (db, tern_engine::key_hash(k))).collect())
}

fn eval_generic(ctx: &mut Ctx, args: &Args, by_sha: bool, ro: bool) {
    if by_sha && args[1].len() != 40 {
        return ctx.error("NOSCRIPT No matching script. Please use EVAL.");
    }
    let Some(nk) = numkeys(ctx, args, crate::args::ERR_NOT_INT) else {
        return;
    };
    let script = if by_sha {
        match lookup(&args[1]) {
            Some(s) => s,
            None => return ctx.error("NOSCRIPT No matching script. Please use EVAL."),
        }
    } else {
        match create(&args[1]) {
            Ok(x) => Rc::new(x),
            Err(e) => return ctx.error(&e),
        }
    };
    if !check_flags(ctx, script.flags, ro) {
        return;
    }
    if script.history.offload(ctx) {
        return;
    }
    let read_only =
        ro || (script.flags & sflags::EVAL_COMPAT == 0 && script.flags & sflags::NO_WRITES != 0);
    let gen = GEN.load(Relaxed);
    let r = lua::with_vm(
        true,
        gen,
        |_| Ok(()),
        |vm| -> Result<(), String> {
            let f = ensure_compiled(vm, &script)?;
            let spec = lua::Run {
                is_eval: true,
                name: &script.sha,
                read_only,
                allow_oom: script.flags & sflags::ALLOW_OOM != 0,
                command: args,
                nkeys: nk,
            };
            lua::run_atomic(ctx, vm, &f, spec, &script.history);
            Ok(())
        },
    );
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) | Err(e) => ctx.error(&e),
    }
}

fn script_load(ctx: &mut Ctx, args: &Args) {
    match create(&args[2]) {
        Ok(s) => ctx.out.bulk(s.sha.as_bytes()),
        Err(e) => ctx.error(&e),
    }
}

fn script_exists(ctx: &mut Ctx, args: &Args) {
    let c = CACHE.read();
    ctx.out.array(args.len() - 2);
    for i in 2..args.len() {
        let sha = String::from_utf8_lossy(&args[i]).to_ascii_lowercase();
        ctx.out.int(c.scripts.contains_key(&sha) as i64);
    }
}

fn script_flush(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 || (args.len() == 3 && !eq_ic(&args[2], "ASYNC") && !eq_ic(&args[2], "SYNC"))
    {
        return ctx.error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    {
        let mut c = CACHE.write();
        c.scripts.clear();
        c.bytes = 0;
    }
    GEN.fetch_add(1, Relaxed);
    ctx.out.ok();
}

fn script_kill(ctx: &mut Ctx, _args: &Args) {
    match lua::kill(true) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(e),
    }
}

fn script_debug(ctx: &mut Ctx, args: &Args) {
    let a = &args[2];
    if eq_ic(a, "no") {
        ctx.out.ok()
    } else if eq_ic(a, "yes") || eq_ic(a, "sync") {
        ctx.error("ERR SCRIPT DEBUG is not supported by tern")
    } else {
        ctx.error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
    }
}

fn script_help(ctx: &mut Ctx, _args: &Args) {
    crate::client_cmd::reply_help(
        ctx,
        "SCRIPT",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
}
