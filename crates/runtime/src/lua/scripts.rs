//! The EVAL script cache (sha -> body and flags): process-wide, so SCRIPT LOAD on one
//! connection serves EVALSHA on every thread; each thread's Lua state compiles a script the
//! first time it runs it there. Also the checks every script run shares with FCALL (numkeys,
//! shebang flags against the server's state) and a script's lock plan.

use crate::args::{parse_i64, Args};
use crate::ctx::Ctx;
use crate::lua::{self, sflags};
use crate::server::Server;
use crate::txn::LockPlan;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

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

/// The EVAL script cache, owned by the server (`Server::scripts`).
pub struct ScriptCache {
    cache: RwLock<Cache>,
    /// Replaced by SCRIPT FLUSH: every thread then starts a fresh Lua state.
    gen: AtomicU64,
}

impl Default for ScriptCache {
    fn default() -> ScriptCache {
        ScriptCache {
            cache: RwLock::default(),
            gen: AtomicU64::new(lua::fresh_generation()),
        }
    }
}

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

// Per-thread cache by nature; keyed by a generation unique in the process, so another server's
// lookup refills it rather than reading this server's scripts.
thread_local! {
    /// This thread's view of the script cache for the generation it was filled in: EVALSHA
    /// finds a script without the shared lock, and takes a thread-local reference to it, so
    /// that threads running the same script share its cache lines read-only (no reader
    /// count or reference count bouncing between cores).
    static LOCAL: std::cell::RefCell<(u64, LocalScripts)> =
        std::cell::RefCell::new((u64::MAX, LocalScripts::default()));
}

/// The cached script with digest `hex` (40 hex digits, either case).
pub fn lookup(srv: &Server, hex: &[u8]) -> Option<ScriptRef> {
    let key = HexKey(hex.try_into().ok()?);
    let gen = srv.scripts.gen.load(Relaxed);
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
        let s = Rc::new(
            srv.scripts
                .cache
                .read()
                .scripts
                .get(lower.as_str())
                .cloned()?,
        );
        l.1.insert(key, s.clone());
        Some(s)
    })
}

/// The script cache's generation (SCRIPT FLUSH bumps it).
pub fn generation(srv: &Server) -> u64 {
    srv.scripts.gen.load(Relaxed)
}

/// (number of cached scripts, bytes of their bodies) for INFO.
pub fn cache_stats(srv: &Server) -> (usize, usize) {
    let c = srv.scripts.cache.read();
    (c.scripts.len(), c.bytes)
}

/// Script flags that make a script a `denyoom` command (Redis's scriptFlagsToCmdFlags): a
/// shebang script that neither says `allow-oom` nor `no-writes`.
pub fn flags_deny_oom(fl: u32) -> bool {
    fl & sflags::EVAL_COMPAT == 0 && fl & (sflags::ALLOW_OOM | sflags::NO_WRITES) == 0
}

/// The flags an EVAL/EVALSHA (or _RO) script declares in its shebang: None for a script
/// without one, or not in the cache, whose command keeps its own flags (Redis's
/// evalGetCommandFlags).
pub fn eval_declared_flags(srv: &Server, by_sha: bool, args: &Args) -> Option<u32> {
    if args.len() < 2 {
        return None;
    }
    let fl = if by_sha {
        lookup(srv, &args[1])?.flags
    } else {
        shebang_flags(&args[1]).ok()?.0
    };
    (fl & sflags::EVAL_COMPAT == 0).then_some(fl)
}

/// May this EVAL/EVALSHA write (CLIENT PAUSE WRITE holds it)? A script without a shebang, or
/// not in the cache, may; one with a shebang may unless it declares `no-writes`.
pub fn eval_may_write(srv: &Server, by_sha: bool, args: &Args) -> bool {
    eval_declared_flags(srv, by_sha, args).is_none_or(|fl| fl & sflags::NO_WRITES == 0)
}

/// Is this EVAL/EVALSHA (and _RO) refused while memory is over `maxmemory`?
pub fn eval_denies_oom(srv: &Server, by_sha: bool, args: &Args) -> bool {
    eval_declared_flags(srv, by_sha, args).is_some_and(flags_deny_oom)
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
pub fn ensure_compiled(vm: &mut lua::Vm, script: &Script) -> Result<lua::Compiled, String> {
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
pub fn create(srv: &Server, body: &[u8]) -> Result<Arc<Script>, String> {
    let sha = lua::sha1_hex(body);
    if let Some(s) = srv.scripts.cache.read().scripts.get(&sha) {
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
    let gen = srv.scripts.gen.load(Relaxed);
    lua::with_vm(
        srv,
        true,
        gen,
        |_| Ok(()),
        |vm| ensure_compiled(vm, &script).map(|_| ()),
    )??;
    let mut c = srv.scripts.cache.write();
    if !c.scripts.contains_key(&sha) {
        c.bytes += body.len() + 40;
        c.scripts.insert(sha, script.clone());
    }
    Ok(script)
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
    if fl & sflags::NO_CLUSTER != 0 && ctx.srv.cluster.get().is_some() {
        ctx.error("ERR Can not run script on cluster, 'no-cluster' flag is set.");
        return false;
    }
    if fl & sflags::NO_WRITES == 0 && ro {
        ctx.error("ERR Can not execute a script with write flag using *_ro command.");
        return false;
    }
    if crate::master_link::obeys(&ctx.conn.handle) {
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

/// SCRIPT EXISTS: is a script with this digest (hex, either case) cached?
pub fn exists(srv: &Server, sha: &[u8]) -> bool {
    let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
    srv.scripts.cache.read().scripts.contains_key(&sha)
}

/// SCRIPT FLUSH: forget every script; each thread then starts a fresh Lua state.
pub fn flush(srv: &Server) {
    {
        let mut c = srv.scripts.cache.write();
        c.scripts.clear();
        c.bytes = 0;
    }
    srv.scripts.gen.store(lua::fresh_generation(), Relaxed);
}
