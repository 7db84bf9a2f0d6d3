//! The Lua side of EVAL and FCALL: one sandboxed Lua state per worker thread for scripts and
//! one for function libraries (so scripts on different threads run at the same time), the
//! `redis.*` API, the conversions between Lua values and RESP, and the registry of running
//! scripts that SCRIPT KILL / FUNCTION KILL / FUNCTION STATS and the BUSY check read.
//!
//! The sandbox itself (read-only globals, Redis's error tables, pcall, math.random) is the Lua
//! prelude in `prelude.lua`; the Rust side supplies the raw functions it wraps.

pub mod convert;
pub mod libraries;
pub mod scripts;

use crate::ctx::{Conn, Ctx};
use crate::server::Server;
use crate::table::flags;
use mlua::{Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value};
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;
use tern_resp::Reply;

const PRELUDE: &str = include_str!("prelude.lua");

/// `REDIS_VERSION_NUM` of 7.2.6.
const VERSION_NUM: i64 = 0x00070206;

/// Instructions between two looks at the kill flag and the clock.
const HOOK_EVERY: u32 = 100_000;

/// Script flags (shebang `flags=` and `redis.register_function` flags), Redis's names.
pub mod sflags {
    pub const NO_WRITES: u32 = 1 << 0;
    pub const ALLOW_OOM: u32 = 1 << 1;
    pub const ALLOW_STALE: u32 = 1 << 2;
    pub const NO_CLUSTER: u32 = 1 << 3;
    pub const ALLOW_CROSS_SLOT: u32 = 1 << 4;
    /// An EVAL script without a shebang (Redis's "compat mode").
    pub const EVAL_COMPAT: u32 = 1 << 5;

    pub const NAMES: &[(u32, &str)] = &[
        (NO_WRITES, "no-writes"),
        (ALLOW_OOM, "allow-oom"),
        (ALLOW_STALE, "allow-stale"),
        (NO_CLUSTER, "no-cluster"),
        (ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
    ];
}

// ---------------------------------------------------------------------------------------------
// Where a script runs

/// A script or function whose runs take at least this long runs on a script thread, so that
/// its connection's worker keeps serving its other clients meanwhile; one that got fast again
/// comes back. A script's first run (nothing known yet) goes to a script thread too, so not
/// even one run of a slow script stalls a worker. Below this the thread hop costs more than it
/// saves.
pub const SLOW_RUN: std::time::Duration = std::time::Duration::from_millis(1);

const UNKNOWN: u8 = 0;
const FAST: u8 = 1;
/// Fast so far, and the last run was slow: still runs on the worker. One slow run of a fast
/// script is most often the thread being preempted (a busy machine), and moving the script
/// then would cost more than it saves (a script thread builds a VM to run it, ~1 ms); a second
/// slow run in a row makes it SLOW.
const SUSPECT: u8 = 2;
const SLOW: u8 = 3;

/// What was learnt of one script's (or function's) run time, shared by every thread.
pub struct RunHistory {
    state: std::sync::atomic::AtomicU8,
}

impl Default for RunHistory {
    fn default() -> Self {
        RunHistory {
            state: std::sync::atomic::AtomicU8::new(UNKNOWN),
        }
    }
}

impl RunHistory {
    /// True when the command is to run again on a script thread (the handler must return at
    /// once): it is new or was slow twice in a row, and it can move (see `Ctx::offload`).
    pub fn offload(&self, ctx: &mut Ctx) -> bool {
        matches!(self.state.load(Relaxed), UNKNOWN | SLOW)
            && ctx.offload_to(crate::background::Pool::Script)
    }

    /// Remember how long a run took. Written only when the state changes: threads running
    /// the same fast script share the cache line read-only.
    pub fn note(&self, took: std::time::Duration) {
        let old = self.state.load(Relaxed);
        let state = match (took >= SLOW_RUN, old) {
            (false, _) => FAST,
            (true, FAST) => SUSPECT,
            (true, _) => SLOW,
        };
        if old != state {
            self.state.store(state, Relaxed);
        }
    }
}

/// Run a script or function as one atomic unit holding its declared keys' shards, and learn
/// how long it took. On a script thread (new or known slow) the unit is declared long-running,
/// so that workers do not wait for its shards on their own threads.
pub fn run_atomic(ctx: &mut Ctx, vm: &mut Vm, f: &Compiled, spec: Run, history: &RunHistory) {
    let srv = ctx.srv;
    let plan = crate::lua::scripts::plan(ctx.conn.db, spec.keys());
    let start = Instant::now();
    crate::txn::run_locked(srv, plan, || {
        if ctx.conn.offloaded {
            srv.store.mark_unit_long();
        }
        run(ctx, vm, f, spec, start)
    });
    let took = start.elapsed();
    history.note(took);
    if ctx.conn.offloaded && took < SLOW_RUN {
        keep_vm_if_busy(vm);
    }
}

/// A script thread that ran a new script only to learn it is fast will not see it again:
/// its VM (~70 KB) is dropped, unless that VM ran another new script within the last
/// `PROBE_KEEP` (a stream of new scripts keeps it).
const PROBE_KEEP: std::time::Duration = std::time::Duration::from_millis(100);

// Per thread by nature: a run's verdict for the VM of its own thread, read by `with_vm`.
thread_local! {
    static DROP_VM: Cell<bool> = const { Cell::new(false) };
}

fn keep_vm_if_busy(vm: &mut Vm) {
    let now = Instant::now();
    let recent = vm
        .last_probe
        .replace(now)
        .is_some_and(|t| now.duration_since(t) < PROBE_KEEP);
    if !recent {
        DROP_VM.with(|d| d.set(true));
    }
}

// ---------------------------------------------------------------------------------------------
// Running scripts, per server

/// The Lua runtime's state shared by every thread of one server: the scripts in execution,
/// DEBUG's switch, and what the server's VMs share (memory lines, math.random's state).
pub struct LuaRuntime {
    /// Scripts and functions in execution, as other threads see them.
    running: Mutex<Vec<Arc<RunInfo>>>,
    /// How many of `running` are past busy-reply-threshold: the one load `busy_error` makes
    /// per command while nothing is slow.
    timed_out: AtomicUsize,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call noscript commands (tests use it).
    pub disable_deny_scripts: AtomicBool,
    /// Held by every VM built for this server (a thread-local VM may outlive a run).
    vms: Arc<VmShared>,
}

impl Default for LuaRuntime {
    fn default() -> Self {
        LuaRuntime {
            running: Mutex::new(Vec::new()),
            timed_out: AtomicUsize::new(0),
            disable_deny_scripts: AtomicBool::new(false),
            vms: Arc::new(VmShared {
                memory: Mutex::new(Vec::new()),
                next_id: AtomicU64::new(1),
                rand48: AtomicU64::new(RAND48_INIT),
            }),
        }
    }
}

/// What one server's VMs share; each VM keeps a handle, taken when it is built.
struct VmShared {
    /// (vm id, is_eval, generation, bytes) of every thread's VMs; each VM updates its own
    /// bytes.
    #[allow(clippy::type_complexity)]
    memory: Mutex<Vec<(u64, bool, u64, Arc<std::sync::atomic::AtomicI64>)>>,
    next_id: AtomicU64,
    /// Redis's rand48 state behind math.random, one for all scripts as in Redis (FUNCTION
    /// LOAD's top-level code may call it too, outside any run).
    rand48: AtomicU64,
}

/// One script or function in execution (FUNCTION STATS, SCRIPT KILL, BUSY replies).
pub struct RunInfo {
    pub is_eval: bool,
    /// The script's sha or the function's name.
    pub name: String,
    /// The EVAL/FCALL command as the client sent it.
    pub command: Vec<Vec<u8>>,
    pub start: Instant,
    /// A write command ran: the script can no longer be killed.
    pub wrote: AtomicBool,
    pub killed: AtomicBool,
    /// Past `busy-reply-threshold`: other clients get BUSY.
    pub timed_out: AtomicBool,
}

/// Generations of the script cache and the function libraries are unique in the process, not
/// per server, so per-thread copies and Lua states keyed by a generation never mix two
/// servers' scripts.
// Stays process-wide on purpose: an id allocator whose ids must not repeat across servers.
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

/// A generation no script cache or library set has had.
pub fn fresh_generation() -> u64 {
    NEXT_GENERATION.fetch_add(1, Relaxed)
}

/// The BUSY error other clients get while a script is past `busy-reply-threshold`, or None.
/// One atomic load when nothing is slow.
pub fn busy_error(srv: &Server) -> Option<&'static str> {
    if srv.lua.timed_out.load(Relaxed) == 0 {
        return None;
    }
    let r = srv.lua.running.lock();
    let slow = r.iter().find(|i| i.timed_out.load(Relaxed))?;
    Some(if slow.is_eval {
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    } else {
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    })
}

/// SCRIPT KILL (`is_eval`) / FUNCTION KILL: Redis's replies, applied to a running script of
/// the right kind that has not written.
pub fn kill(srv: &Server, is_eval: bool) -> Result<(), &'static str> {
    let r = srv.lua.running.lock();
    if r.is_empty() {
        return Err("NOTBUSY No scripts in execution right now.");
    }
    let same: Vec<&Arc<RunInfo>> = r.iter().filter(|i| i.is_eval == is_eval).collect();
    if same.is_empty() {
        return Err(if is_eval {
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
        } else {
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
        });
    }
    match same.iter().find(|i| !i.wrote.load(Relaxed)) {
        Some(i) => {
            i.killed.store(true, Relaxed);
            Ok(())
        }
        None => Err(
            "UNKILLABLE Sorry the script already executed write commands against the \
                     dataset. You can either wait the script termination or kill the server in a \
                     hard way using the SHUTDOWN NOSAVE command.",
        ),
    }
}

/// The running function FUNCTION STATS reports (the oldest), or Err while an EVAL script is
/// past `busy-reply-threshold` (Redis then answers FUNCTION STATS with BUSY).
pub fn running_function(srv: &Server) -> Result<Option<Arc<RunInfo>>, &'static str> {
    let r = srv.lua.running.lock();
    if r.iter().any(|i| i.is_eval && i.timed_out.load(Relaxed)) {
        return Err(
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
        );
    }
    Ok(r.iter().find(|i| !i.is_eval).cloned())
}

// ---------------------------------------------------------------------------------------------
// Memory accounting (INFO memory)

/// Bytes used by the script VMs and the function VMs of every thread, counting only VMs of
/// the current script cache (`eval_gen`) and library set (`function_gen`): a VM left over
/// from before SCRIPT FLUSH is dropped by its thread on its next use.
pub fn vm_memory(srv: &Server, eval_gen: u64, function_gen: u64) -> (u64, u64) {
    let m = srv.lua.vms.memory.lock();
    let sum = |eval: bool, gen: u64| {
        m.iter()
            .filter(|e| e.1 == eval && e.2 == gen)
            .map(|e| e.3.load(Relaxed).max(0) as u64)
            .sum::<u64>()
    };
    (sum(true, eval_gen), sum(false, function_gen))
}

// ---------------------------------------------------------------------------------------------
// rand48, shared by all scripts as in Redis (math.random)

/// rand48's state before any seed.
const RAND48_INIT: u64 = 0x1234_ABCD_330E;

fn lrand48(state: &AtomicU64) -> i64 {
    const A: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;
    let mut next = 0;
    let _ = state.fetch_update(Relaxed, Relaxed, |x| {
        next = (x.wrapping_mul(A).wrapping_add(0xB)) & MASK;
        Some(next)
    });
    (next >> 17) as i64
}

fn srand48(state: &AtomicU64, seed: i64) {
    let s = seed as i32 as u32 as u64;
    state.store((s << 16) | 0x330E, Relaxed);
}

// ---------------------------------------------------------------------------------------------
// The per-run context the raw functions reach through a thread-local pointer

/// What `redis.call` needs while a script runs on this thread.
pub struct RunCtx {
    srv: *const Arc<Server>,
    conn: *mut Conn,
    /// Protocol of `redis.call` replies (redis.setresp).
    resp: u8,
    read_only: bool,
    /// The `allow-oom` flag: growing writes run even over maxmemory.
    allow_oom: bool,
    is_eval: bool,
    /// The script's sha or the function's name, and the EVAL/FCALL command: valid for the
    /// whole run (they live in the caller's frame).
    name: *const str,
    command: *const (),
    start: Instant,
    /// A write command ran.
    wrote: bool,
    /// Cluster mode: the slot the script's keys are in.
    cluster: crate::cluster::redirect::ScriptSlot,
    /// The run as other threads see it (SCRIPT KILL, FUNCTION STATS, BUSY), once registered:
    /// at once on a script thread or without a busy threshold, otherwise at the first look of
    /// the instruction hook (so that a short script on a worker touches no shared state).
    info: Option<Arc<RunInfo>>,
    scratch: Reply,
    /// The time TIME answers inside the script (µs): the start of the run, refreshed at each
    /// look of the hook once the script is past busy-reply-threshold (see `hook_check`).
    time_us: u64,
    /// busy-reply-threshold when the script started (ms).
    threshold: u64,
    kill_logged: bool,
}

impl RunCtx {
    /// Make the run visible to other threads (the server's running list), if it is not yet.
    fn register(&mut self) -> &Arc<RunInfo> {
        if self.info.is_none() {
            // SAFETY: `name` and `command` point into the frame of `run`, which outlives
            // this RunCtx.
            let (name, command) = unsafe { (&*self.name, &*(self.command as *const crate::Args)) };
            let info = Arc::new(RunInfo {
                is_eval: self.is_eval,
                name: name.to_string(),
                command: command.to_vecs(),
                start: self.start,
                wrote: AtomicBool::new(self.wrote),
                killed: AtomicBool::new(false),
                timed_out: AtomicBool::new(false),
            });
            // SAFETY: the run's server outlives it (see `with_run`).
            let srv = unsafe { &*self.srv };
            srv.lua.running.lock().push(info.clone());
            self.info = Some(info);
        }
        self.info.as_ref().expect("just registered")
    }

    fn note_write(&mut self) {
        self.wrote = true;
        if let Some(i) = &self.info {
            i.wrote.store(true, Relaxed);
        }
    }
}

impl Drop for RunCtx {
    fn drop(&mut self) {
        if let Some(info) = self.info.take() {
            // SAFETY: the run's server outlives it (see `with_run`).
            let srv = unsafe { &*self.srv };
            let mut r = srv.lua.running.lock();
            r.retain(|i| !Arc::ptr_eq(i, &info));
            if info.timed_out.load(Relaxed) {
                srv.lua.timed_out.fetch_sub(1, Relaxed);
            }
        }
    }
}

// Per thread by nature: the run (or library load) on this thread, which the raw functions Lua
// calls (fixed C signatures, no server at hand) reach; the run context holds its server.
thread_local! {
    static CURRENT: Cell<*mut RunCtx> = const { Cell::new(std::ptr::null_mut()) };
    /// Functions collected by `redis.register_function` during FUNCTION LOAD, and when the
    /// load began (its timeout).
    static LOADING: RefCell<Option<LoadCtx>> = const { RefCell::new(None) };
}

struct LoadCtx {
    start: Instant,
    timeout_ms: u64,
    timed_out: bool,
    functions: Vec<NewFunction>,
}

/// A function registered while a library loads.
pub struct NewFunction {
    pub name: String,
    pub description: Option<Vec<u8>>,
    pub flags: u32,
    pub callback: Function,
}

fn with_run<R>(f: impl FnOnce(&mut RunCtx) -> R) -> Option<R> {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() {
        return None;
    }
    // SAFETY: set by `run` for the duration of the script on this thread; cleared before the
    // RunCtx goes away. Only the raw functions, called from inside that script, read it.
    Some(f(unsafe { &mut *p }))
}

/// Inside a script, the time TIME answers (µs), as Redis 7.2's cached time: the start of the
/// run until the script passes busy-reply-threshold, then refreshed every time the hook looks.
pub fn script_time_us() -> Option<u64> {
    with_run(|rc| rc.time_us)
}

/// True while a script runs on this thread (its redis.call commands see this).
pub fn in_script() -> bool {
    !CURRENT.with(|c| c.get()).is_null()
}

fn killed() -> bool {
    with_run(|rc| rc.info.as_ref().is_some_and(|i| i.killed.load(Relaxed))).unwrap_or(false)
}

// ---------------------------------------------------------------------------------------------
// VMs

/// A compiled script or a function's callback: the registry reference that keeps it for the
/// VM's life and that `run` pushes it by (no trip through mlua per call).
#[derive(Clone, Copy)]
pub struct Compiled {
    reference: std::ffi::c_int,
}

/// One sandboxed Lua state.
pub struct Vm {
    pub lua: Lua,
    /// The main state scripts run on (where the kill/timeout hook goes), kept so that setting
    /// the hook per run is two stores rather than a protected call through mlua.
    state: *mut mlua::ffi::lua_State,
    /// Registry reference of the C closure (`runner_fn`) every run goes through.
    runner: std::ffi::c_int,
    /// Registry slot a non-scalar result passes through on its way to mlua.
    result_slot: std::ffi::c_int,
    /// Registry reference of `gc_step_fn`.
    gc_fn: std::ffi::c_int,
    compile: Function,
    load_library: Function,
    /// Function VM: function name -> callback.
    pub compiled: std::collections::HashMap<String, Compiled>,
    /// EVAL VM: sha -> compiled script.
    pub scripts: crate::lua::scripts::ShaMap<Compiled>,
    /// Script cache / function library generation this VM matches.
    pub gen: u64,
    is_eval: bool,
    id: u64,
    runs: u32,
    /// This VM's line in its server's VM memory list (INFO memory), once reported.
    mem: Option<Arc<std::sync::atomic::AtomicI64>>,
    /// What the VMs of the server this VM was built for share.
    shared: Arc<VmShared>,
    /// redis.call's reply buffer, reused by every run.
    scratch: Reply,
    /// When this VM, on a script thread, last ran a new script that proved fast.
    last_probe: Option<Instant>,
}

impl Drop for Vm {
    fn drop(&mut self) {
        self.shared.memory.lock().retain(|e| e.0 != self.id);
    }
}

fn lua_err(lua: &Lua, msg: &str) -> mlua::Result<Value> {
    convert::error_table(lua, msg.as_bytes(), true).map(Value::Table)
}

/// Lua arguments of redis.call as command arguments: strings, and numbers as Redis prints
/// them (integers plainly).
fn lua_args(args: &MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err("Please specify at least one argument for this redis lib call");
    }
    let mut out = Vec::with_capacity(args.len());
    for v in args.iter() {
        match v {
            Value::String(s) => out.push(s.as_bytes().to_vec()),
            Value::Integer(i) => out.push(itoa::Buffer::new().format(*i).as_bytes().to_vec()),
            Value::Number(n) => out.push(convert::number_arg(*n)),
            _ => return Err("Lua redis lib command arguments must be strings or integers"),
        }
    }
    Ok(out)
}

/// Argument bytes, then each argument's range in them.
type ArgBuffer = (Vec<u8>, Vec<(usize, usize)>);

// Per-thread scratch buffer.
thread_local! {
    /// redis.call's arguments, read off the Lua stack by `call_trampoline` into one buffer this
    /// thread reuses.
    static CALL_ARGS: RefCell<ArgBuffer> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// Read the arguments at stack slots 1..=n into CALL_ARGS, as redis.call converts them.
unsafe fn stash_call_args(
    state: *mut mlua::ffi::lua_State,
    n: std::ffi::c_int,
) -> Result<(), &'static str> {
    use mlua::ffi;
    if n == 0 {
        return Err("Please specify at least one argument for this redis lib call");
    }
    CALL_ARGS.with(|c| {
        let mut c = c.borrow_mut();
        let (buf, ranges) = &mut *c;
        buf.clear();
        ranges.clear();
        for i in 1..=n {
            let start = buf.len();
            match ffi::lua_type(state, i) {
                ffi::LUA_TNUMBER => {
                    let d = ffi::lua_tonumber(state, i);
                    let lim = (i64::MAX / 2) as f64;
                    if d.fract() == 0.0 && (-lim..=lim).contains(&d) {
                        buf.extend_from_slice(itoa::Buffer::new().format(d as i64).as_bytes());
                    } else {
                        buf.extend_from_slice(&convert::number_arg(d));
                    }
                }
                ffi::LUA_TSTRING => {
                    let mut len = 0usize;
                    let p = ffi::lua_tolstring(state, i, &mut len);
                    buf.extend_from_slice(std::slice::from_raw_parts(p as *const u8, len));
                }
                _ => return Err("Lua redis lib command arguments must be strings or integers"),
            }
            ranges.push((start, buf.len()));
        }
        Ok(())
    })
}

/// redis.call / redis.pcall: the arguments are read off the Lua stack, the command runs, and
/// its reply is pushed straight back as a Lua value; redis.call (upvalue 1 true) raises a
/// failure, redis.pcall returns it.
unsafe extern "C-unwind" fn call_trampoline(state: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
    use mlua::ffi;
    let n = ffi::lua_gettop(state);
    let stashed = stash_call_args(state, n);
    ffi::lua_settop(state, 0);
    let failed = match stashed {
        Err(e) => {
            convert::push_error_table(state, e.as_bytes());
            true
        }
        Ok(()) => run_stashed_call(state),
    };
    if failed && ffi::lua_toboolean(state, ffi::lua_upvalueindex(1)) != 0 {
        // No Rust value is alive in this frame: the longjmp skips nothing that needs dropping.
        ffi::lua_error(state);
    }
    1
}

/// Run the command in CALL_ARGS for the running script and push its reply; true if it
/// failed (an error reply or a script rule refused it).
unsafe fn run_stashed_call(state: *mut mlua::ffi::lua_State) -> bool {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() {
        convert::push_error_table(
            state,
            b"redis.call can only be called inside a script invocation",
        );
        return true;
    }
    if execute_stashed(p) {
        // The refusal's text was left in the run context's scratch buffer.
        let msg: &[u8] = &(*p).scratch.buf;
        convert::push_error_table(state, msg);
        return true;
    }
    // SAFETY: the reply lives in the running script's context (not in this frame) until the
    // next call; the pushes below may raise a Lua memory error, which drops nothing here.
    let reply: &[u8] = &(*p).scratch.buf;
    convert::push_reply(state, reply)
}

/// Execute CALL_ARGS into the run context's scratch reply; true when a script rule refused
/// the command (the scratch buffer then holds the refusal's text).
fn execute_stashed(p: *mut RunCtx) -> bool {
    // SAFETY: see `with_run`. The references live only for this call.
    let rc = unsafe { &mut *p };
    // SAFETY: as `rc`: the run's server and connection outlive it.
    let srv = unsafe { &*rc.srv };
    // SAFETY: as `rc`.
    let conn = unsafe { &mut *rc.conn };
    let mut out = std::mem::take(&mut rc.scratch);
    out.buf.clear();
    out.errors = 0;
    out.error_codes.clear();
    out.resp = rc.resp;
    // Over maxmemory, only a script's first growing write is refused (Redis's
    // scriptVerifyOOM): not once it wrote, nor with allow-oom.
    let oom_exempt = rc.allow_oom || rc.wrote;
    let r = CALL_ARGS.with(|c| {
        let c = c.borrow();
        let args = crate::args::Args::new(&c.0, &c.1);
        crate::dispatch::execute_for_script(
            srv,
            conn,
            &mut out,
            &args,
            rc.read_only,
            oom_exempt,
            &mut rc.cluster,
        )
    });
    rc.scratch = out;
    match r {
        Err(e) => {
            rc.scratch.buf.clear();
            rc.scratch.buf.extend_from_slice(e.as_bytes());
            true
        }
        Ok(f) => {
            if f & flags::WRITE != 0 {
                rc.note_write();
            }
            false
        }
    }
}

fn raw_acl_check(lua: &Lua, args: MultiValue) -> mlua::Result<(Value, bool)> {
    let argv = match lua_args(&args) {
        Ok(a) => a,
        Err(e) => return Ok((lua_err(lua, e)?, true)),
    };
    let verdict = with_run(|rc| {
        // SAFETY: see `with_run`.
        let srv = unsafe { &*rc.srv };
        // SAFETY: see `with_run`.
        let conn = unsafe { &*rc.conn };
        let owned = crate::args::OwnedArgs::new(argv.iter());
        crate::acl::script_check(srv, conn, &owned.args())
    })
    .flatten();
    match verdict {
        None => Ok((
            lua_err(lua, "Invalid command passed to redis.acl_check_cmd()")?,
            true,
        )),
        Some(ok) => Ok((Value::Boolean(ok), false)),
    }
}

fn raw_register(lua: &Lua, args: MultiValue) -> mlua::Result<(Value, bool)> {
    let loading = LOADING.with(|l| l.borrow().is_some());
    if !loading {
        return Ok((
            lua_err(
                lua,
                "redis.register_function can only be called on FUNCTION LOAD command",
            )?,
            true,
        ));
    }
    match read_register_args(args) {
        Err(e) => Ok((lua_err(lua, e)?, true)),
        Ok(f) => {
            if !crate::lua::libraries::valid_name(f.name.as_bytes()) {
                return Ok((
                    lua_err(
                        lua,
                        "Library names can only contain letters, numbers, or underscores(_) and \
                         must be at least one character long",
                    )?,
                    true,
                ));
            }
            let dup = LOADING.with(|l| {
                l.borrow()
                    .as_ref()
                    .is_some_and(|c| c.functions.iter().any(|g| g.name == f.name))
            });
            if dup {
                return Ok((
                    lua_err(lua, "Function already exists in the library")?,
                    true,
                ));
            }
            LOADING.with(|l| {
                if let Some(c) = l.borrow_mut().as_mut() {
                    c.functions.push(f);
                }
            });
            Ok((Value::Nil, false))
        }
    }
}

fn value_string(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(n) => Some(convert::lua_number_string(*n).into_bytes()),
        _ => None,
    }
}

fn read_register_args(args: MultiValue) -> Result<NewFunction, &'static str> {
    let args = args.into_vec();
    match args.len() {
        1 => {
            let Value::Table(t) = &args[0] else {
                return Err(
                    "calling redis.register_function with a single argument is only \
                            applicable to Lua table (representing named arguments).",
                );
            };
            let mut name = None;
            let mut description = None;
            let mut callback = None;
            let mut fl = 0;
            for pair in t.pairs::<Value, Value>() {
                let (k, v) =
                    pair.map_err(|_| "unknown argument given to redis.register_function")?;
                let Some(key) = value_string(&k) else {
                    return Err(
                        "named argument key given to redis.register_function is not a string",
                    );
                };
                let key = String::from_utf8_lossy(&key).to_ascii_lowercase();
                match key.as_str() {
                    "function_name" => name = Some(value_string(&v).ok_or(
                        "function_name argument given to redis.register_function must be a string",
                    )?),
                    "description" => description = Some(value_string(&v).ok_or(
                        "description argument given to redis.register_function must be a string",
                    )?),
                    "callback" => match v {
                        Value::Function(f) => callback = Some(f),
                        _ => return Err(
                            "callback argument given to redis.register_function must be a function",
                        ),
                    },
                    "flags" => {
                        let Value::Table(ft) = v else {
                            return Err("flags argument to redis.register_function must be a table representing function flags");
                        };
                        fl = read_flags(&ft).ok_or("unknown flag given")?;
                    }
                    _ => return Err("unknown argument given to redis.register_function"),
                }
            }
            let name = name.ok_or("redis.register_function must get a function name argument")?;
            let callback =
                callback.ok_or("redis.register_function must get a callback argument")?;
            Ok(NewFunction {
                name: String::from_utf8_lossy(&name).into_owned(),
                description,
                flags: fl,
                callback,
            })
        }
        2 => {
            let name = value_string(&args[0])
                .ok_or("first argument to redis.register_function must be a string")?;
            let Value::Function(f) = &args[1] else {
                return Err("second argument to redis.register_function must be a function");
            };
            Ok(NewFunction {
                name: String::from_utf8_lossy(&name).into_owned(),
                description: None,
                flags: 0,
                callback: f.clone(),
            })
        }
        _ => Err("wrong number of arguments to redis.register_function"),
    }
}

fn read_flags(t: &Table) -> Option<u32> {
    let mut fl = 0;
    let mut j = 1;
    loop {
        let v: Value = t.get(j).ok()?;
        if v.is_nil() {
            break;
        }
        let s = value_string(&v)?;
        let s = String::from_utf8_lossy(&s).to_ascii_lowercase();
        let (bit, _) = sflags::NAMES.iter().find(|(_, n)| *n == s)?;
        fl |= bit;
        j += 1;
    }
    Some(fl)
}

/// Calls its upvalue (a function returning `(value, failed)`) and raises `value` when
/// `failed`. Being a C function, the script's frame stays the one errors point at.
unsafe extern "C-unwind" fn trampoline(state: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
    use mlua::ffi;
    let n = ffi::lua_gettop(state);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, n, 2);
    if ffi::lua_toboolean(state, -1) != 0 {
        ffi::lua_pop(state, 1);
        // No Rust value is alive in this frame: the longjmp skips nothing that needs dropping.
        ffi::lua_error(state);
    }
    ffi::lua_pop(state, 1);
    1
}

/// As `trampoline`, but a string error gets the caller's position first (luaL_error's
/// "user_script:1: " prefix).
unsafe extern "C-unwind" fn trampoline_where(state: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
    use mlua::ffi;
    let n = ffi::lua_gettop(state);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, n, 2);
    if ffi::lua_toboolean(state, -1) != 0 {
        ffi::lua_pop(state, 1);
        if ffi::lua_type(state, -1) == ffi::LUA_TSTRING {
            ffi::luaL_where(state, 1);
            ffi::lua_insert(state, -2);
            ffi::lua_concat(state, 2);
        }
        ffi::lua_error(state);
    }
    ffi::lua_pop(state, 1);
    1
}

fn wrap_with(lua: &Lua, f: Function, t: mlua::ffi::lua_CFunction) -> mlua::Result<Function> {
    // SAFETY: pushes one C closure over `f` (the argument exec_raw pushed) and returns it.
    unsafe {
        lua.exec_raw::<Function>(f, |state| {
            mlua::ffi::lua_pushcclosure(state, t, 1);
        })
    }
}

/// What the instruction hook must do: 0 go on, 1 the script was killed (SCRIPT/FUNCTION
/// KILL), 2 FUNCTION LOAD ran out of time. Also notices a script passing
/// busy-reply-threshold (from then on other clients get BUSY).
fn hook_check() -> u8 {
    if let Some(r) = with_run(|rc| {
        let i = rc.register().clone();
        if i.killed.load(Relaxed) {
            if !rc.kill_logged {
                rc.kill_logged = true;
                crate::log::write(2, "Lua script killed by user with SCRIPT KILL.");
            }
            return 1;
        }
        if !i.timed_out.load(Relaxed) {
            if (i.start.elapsed().as_millis() as u64) < rc.threshold {
                return 0;
            }
            i.timed_out.store(true, Relaxed);
            // SAFETY: see `with_run`.
            let srv = unsafe { &*rc.srv };
            srv.lua.timed_out.fetch_add(1, Relaxed);
            crate::log::write(
                3,
                &format!(
                    "Slow script detected: still in execution after {} milliseconds. You can \
                     try killing the script using the {} command. Script name is: {}.",
                    i.start.elapsed().as_millis(),
                    if i.is_eval {
                        "SCRIPT KILL"
                    } else {
                        "FUNCTION KILL"
                    },
                    i.name
                ),
            );
        }
        // Past the threshold Redis serves other clients at each look of its hook and refreshes
        // its cached time while doing so: from then on TIME moves inside the script. Key
        // expiry keeps the command's time (conn.now_ms), which Redis restores afterwards.
        rc.time_us = tern_engine::clock::now_us();
        0
    }) {
        return r;
    }
    LOADING.with(|l| {
        let mut l = l.borrow_mut();
        match l.as_mut() {
            Some(c)
                if c.timeout_ms > 0
                    && (c.timed_out || c.start.elapsed().as_millis() as u64 > c.timeout_ms) =>
            {
                c.timed_out = true;
                2
            }
            _ => 0,
        }
    })
}

/// The count hook (every HOOK_EVERY instructions) of a running script or library load. On a
/// kill or timeout it raises Redis's error table and switches to a per-line hook, so that a
/// script catching the error with pcall is stopped again at its next line. The prelude's own
/// frames (error handler, pcall wrapper) are let through.
unsafe extern "C-unwind" fn script_hook(
    state: *mut mlua::ffi::lua_State,
    ar: *mut mlua::ffi::lua_Debug,
) {
    use mlua::ffi;
    let what = hook_check();
    if what == 0 {
        return;
    }
    if ffi::lua_getinfo(state, c"S".as_ptr(), ar) != 0
        && !(*ar).source.is_null()
        && std::ffi::CStr::from_ptr((*ar).source).to_bytes() == b"=[tern]"
    {
        return;
    }
    raise_interrupt(state, what);
}

/// Raise the error for `hook_check`'s verdict `what` (1 killed, 2 FUNCTION LOAD timeout), and
/// switch to a per-line hook so that a script catching it with pcall is stopped again at its
/// next line.
///
/// # Safety
/// `state` is the running state; nothing in the caller's frames may need dropping.
unsafe fn raise_interrupt(state: *mut mlua::ffi::lua_State, what: u8) -> ! {
    use mlua::ffi;
    ffi::lua_sethook(state, Some(script_hook), ffi::LUA_MASKLINE, 0);
    ffi::lua_createtable(state, 0, 1);
    ffi::lua_pushstring(
        state,
        if what == 1 {
            c"ERR Script killed by user with SCRIPT KILL...".as_ptr()
        } else {
            c"ERR FUNCTION LOAD timeout".as_ptr()
        },
    );
    ffi::lua_setfield(state, -2, c"err".as_ptr());
    ffi::lua_error(state)
}

/// The poll of the bundled libraries' long-running C functions (string patterns, string.rep),
/// where the instruction hook cannot fire: the same verdict as the hook, when a hook is set
/// (as in Redis, a run without one, busy-reply-threshold 0, cannot be stopped).
unsafe fn c_function_check(state: *mut mlua::ffi::lua_State) -> u8 {
    if mlua::ffi::lua_gethook(state).is_none() {
        return 0;
    }
    hook_check()
}

/// The state `exec_raw` runs on: the one scripts are called on.
fn main_state(lua: &Lua) -> *mut mlua::ffi::lua_State {
    let mut p = std::ptr::null_mut();
    // SAFETY: only reads the state pointer.
    unsafe {
        let _ = lua.exec_raw::<()>((), |state| p = state);
    }
    p
}

/// Install (or remove) `script_hook` on the state scripts run on.
fn set_hook(state: *mut mlua::ffi::lua_State, on: bool) {
    // SAFETY: `state` is a live Vm's main state, used on the Vm's thread; lua_sethook only
    // stores the hook and its mask, it cannot raise an error.
    unsafe {
        if on {
            mlua::ffi::lua_sethook(
                state,
                Some(script_hook),
                mlua::ffi::LUA_MASKCOUNT,
                HOOK_EVERY as std::ffi::c_int,
            );
        } else {
            mlua::ffi::lua_sethook(state, None, 0, 0);
        }
    }
}

fn wrap(lua: &Lua, f: Function) -> mlua::Result<Function> {
    wrap_with(lua, f, trampoline)
}

impl Vm {
    fn new(is_eval: bool, shared: &Arc<VmShared>) -> mlua::Result<Vm> {
        // SAFETY: the debug library is loaded only for the prelude's error handler, which
        // keeps debug.getinfo in a local; scripts never see `debug`.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::new(),
            )
        };
        tern_scripting::register_libs(&lua)?;
        tern_scripting::interrupt::set_handler(c_function_check, raise_interrupt);
        let raw = lua.create_table()?;
        for (name, raise) in [("call", true), ("pcall", false)] {
            // SAFETY: pushes one C closure over (raise) and returns it.
            let f = unsafe {
                lua.exec_raw::<Function>(raise, |state| {
                    mlua::ffi::lua_pushcclosure(state, call_trampoline, 1);
                })?
            };
            raw.set(name, f)?;
        }
        raw.set("acl_check_cmd", lua.create_function(raw_acl_check)?)?;
        raw.set("register_function", lua.create_function(raw_register)?)?;
        raw.set(
            "sha1hex",
            lua.create_function(|_, s: mlua::LuaString| Ok(sha1_hex(&s.as_bytes())))?,
        )?;
        raw.set(
            "log",
            lua.create_function(|_, (level, msg): (u8, mlua::LuaString)| {
                crate::log::write(level, &msg.to_string_lossy());
                Ok(())
            })?,
        )?;
        raw.set(
            "setresp",
            lua.create_function(|_, r: u8| {
                with_run(|rc| rc.resp = r);
                Ok(())
            })?,
        )?;
        let rand = shared.clone();
        raw.set(
            "lrand48",
            lua.create_function(move |_, ()| Ok(lrand48(&rand.rand48)))?,
        )?;
        let rand = shared.clone();
        raw.set(
            "srand48",
            lua.create_function(move |_, s: i64| {
                srand48(&rand.rand48, s);
                Ok(())
            })?,
        )?;
        raw.set("killed", lua.create_function(|_, ()| Ok(killed()))?)?;
        raw.set(
            "wrap",
            lua.create_function(|lua, f: Function| wrap(lua, f))?,
        )?;
        raw.set(
            "wrap_where",
            lua.create_function(|lua, f: Function| wrap_with(lua, f, trampoline_where))?,
        )?;
        raw.set("version", crate::REDIS_VERSION)?;
        raw.set("version_num", VERSION_NUM)?;
        let prelude = lua.load(PRELUDE).set_name("=[tern]").into_function()?;
        let mode = if is_eval { "eval" } else { "function" };
        let env: Table = prelude.call((raw, mode))?;
        let p: Table = env.get("P")?;
        lua.set_globals(p)?;
        let state = main_state(&lua);
        // SAFETY: Lua's allocator is swapped before any script runs; blocks allocated so far
        // came from the same global allocator with the same alignment, so either function
        // frees them.
        unsafe { mlua::ffi::lua_setallocf(state, lean_alloc, std::ptr::null_mut()) };
        let handler: Function = env.get("handler")?;
        let g: Table = env.get("G")?;
        let mut runner = 0;
        let mut result_slot = 0;
        let mut gc_fn = 0;
        // SAFETY: the handler and G are arguments 1 and 2; the closure takes them as its
        // upvalues and goes to the registry, as does a placeholder for the result slot.
        unsafe {
            lua.exec_raw::<()>((handler, g), |state| {
                use mlua::ffi;
                ffi::lua_pushcclosure(state, runner_fn, 2);
                runner = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
                ffi::lua_pushboolean(state, 0);
                result_slot = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
                ffi::lua_pushcclosure(state, gc_step_fn, 0);
                gc_fn = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
            })?
        };
        let vm = Vm {
            state,
            runner,
            result_slot,
            gc_fn,
            compile: env.get("compile")?,
            load_library: env.get("load_library")?,
            lua,
            compiled: Default::default(),
            scripts: Default::default(),
            gen: 0,
            is_eval,
            id: shared.next_id.fetch_add(1, Relaxed),
            runs: 0,
            mem: None,
            shared: shared.clone(),
            scratch: Reply::with_buffer(Vec::new()),
            last_probe: None,
        };
        vm.lua.gc_collect()?;
        Ok(vm)
    }

    /// Bytes allocated by this Lua state (Lua's own count).
    fn used_memory(&self) -> i64 {
        // SAFETY: reading the GC counters of this VM's state cannot raise an error.
        unsafe {
            let kb = mlua::ffi::lua_gc(self.state, mlua::ffi::LUA_GCCOUNT, 0) as i64;
            let rem = mlua::ffi::lua_gc(self.state, mlua::ffi::LUA_GCCOUNTB, 0) as i64;
            kb * 1024 + rem
        }
    }

    /// Publish this VM's size for INFO memory: one relaxed store once its line exists.
    fn report_memory(&mut self) {
        let now = self.used_memory();
        if let Some(m) = &self.mem {
            m.store(now, Relaxed);
            return;
        }
        let m = Arc::new(std::sync::atomic::AtomicI64::new(now));
        self.shared
            .memory
            .lock()
            .push((self.id, self.is_eval, self.gen, m.clone()));
        self.mem = Some(m);
    }

    /// Keep `f` (a compiled script or a callback) for `run`.
    pub fn keep(&self, f: Function) -> Result<Compiled, String> {
        let mut reference = 0;
        // SAFETY: `f` is argument 1; luaL_ref pops the copy pushed on top.
        unsafe {
            self.lua
                .exec_raw::<()>(&f, |state| {
                    mlua::ffi::lua_pushvalue(state, 1);
                    reference = mlua::ffi::luaL_ref(state, mlua::ffi::LUA_REGISTRYINDEX);
                })
                .map_err(|e| e.to_string())?
        };
        Ok(Compiled { reference })
    }

    /// Compile `body` under chunk name `name` ("@user_script"), or Lua's error message.
    pub fn compile(&self, body: &[u8], name: &str) -> Result<Function, String> {
        let r: mlua::Result<(Value, Value)> = self
            .lua
            .create_string(body)
            .and_then(|s| self.compile.call((s, name)));
        match r {
            Ok((Value::Function(f), _)) => Ok(f),
            Ok((_, Value::String(e))) => Err(e.to_string_lossy()),
            Ok(_) => Err("unknown error".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Run a library's top-level code with the load view of the globals (only
    /// `redis.register_function` & co.), within FUNCTION LOAD's time limit. Returns the
    /// functions it registered, or Redis's error text.
    pub fn load_library(
        &self,
        code: &Function,
        timeout_ms: u64,
    ) -> Result<Vec<NewFunction>, String> {
        LOADING.with(|l| {
            *l.borrow_mut() = Some(LoadCtx {
                start: Instant::now(),
                timeout_ms,
                timed_out: false,
                functions: Vec::new(),
            })
        });
        if timeout_ms > 0 {
            set_hook(self.state, true);
        }
        let r: mlua::Result<(bool, Value)> =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.load_library.call(code.clone())
            }))
            .unwrap_or_else(|_| Err(mlua::Error::runtime("panic")));
        set_hook(self.state, false);
        let ctx = LOADING.with(|l| l.borrow_mut().take());
        let ctx = ctx.unwrap_or(LoadCtx {
            start: Instant::now(),
            timeout_ms,
            timed_out: false,
            functions: Vec::new(),
        });
        match r {
            Ok((true, _)) => Ok(ctx.functions),
            Ok((false, e)) => {
                let msg = if ctx.timed_out {
                    "ERR FUNCTION LOAD timeout".to_string()
                } else {
                    convert::error_info(&e).0
                };
                Err(format!("Error registering functions: {msg}"))
            }
            Err(e) => Err(format!("Error registering functions: {e}")),
        }
    }
}

// Per thread by nature (a Lua state is used by one thread at a time). Safe with two servers in
// one process: a VM is tied to a script-cache / library generation, and generations are unique
// in the process, so a VM built for one server is rebuilt before another server's run uses it.
thread_local! {
    static EVAL_VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
    static FUNCTION_VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// Use this thread's script VM (`is_eval`) or function VM, created on first use. `gen` is the
/// generation of the script cache / library set of `srv`: a VM built for another one is
/// rebuilt (SCRIPT FLUSH, FUNCTION LOAD/DELETE/..., or another server in the process: the
/// generations are unique in the process), and `fill` then loads what it needs.
pub fn with_vm<R>(
    srv: &Server,
    is_eval: bool,
    gen: u64,
    fill: impl FnOnce(&mut Vm) -> Result<(), String>,
    f: impl FnOnce(&mut Vm) -> R,
) -> Result<R, String> {
    let cell = if is_eval { &EVAL_VM } else { &FUNCTION_VM };
    cell.with(|c| {
        let Ok(mut slot) = c.try_borrow_mut() else {
            return Err("ERR scripts cannot run scripts".to_string());
        };
        if slot.as_ref().is_some_and(|vm| vm.gen != gen) {
            *slot = None;
        }
        if slot.is_none() {
            let mut vm = Vm::new(is_eval, &srv.lua.vms)
                .map_err(|e| format!("ERR Lua initialization failed: {e}"))?;
            vm.gen = gen;
            fill(&mut vm)?;
            vm.report_memory();
            *slot = Some(vm);
        }
        let vm = slot.as_mut().expect("vm just made");
        let r = f(vm);
        if DROP_VM.with(|d| d.replace(false)) {
            *slot = None;
        }
        Ok(r)
    })
}

pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// How one script or function runs.
pub struct Run<'a> {
    pub is_eval: bool,
    /// The sha (EVAL) or the function's name: what errors and FUNCTION STATS show.
    pub name: &'a str,
    pub read_only: bool,
    /// Declared `allow-oom` (shebang or function flag).
    pub allow_oom: bool,
    /// Cluster mode: `allow-cross-slot-keys`, or an EVAL without a shebang.
    pub allow_cross_slot: bool,
    /// The EVAL/FCALL command as the client sent it: name, script or function, numkeys,
    /// the keys, then the arguments.
    pub command: &'a crate::Args<'a>,
    pub nkeys: usize,
}

impl<'a> Run<'a> {
    /// The declared keys.
    pub fn keys(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let c = self.command;
        (3..3 + self.nkeys).map(move |i| c.get(i))
    }
}

/// What `runner_fn` reads through its light userdata argument.
struct RunnerArgs<'a> {
    is_eval: bool,
    command: &'a crate::Args<'a>,
    nkeys: usize,
}

/// Push a Lua array of the command's arguments `from..to` (KEYS, ARGV).
///
/// # Safety
/// `state` must have room for two more slots; may raise a Lua memory error.
unsafe fn push_args_array(
    state: *mut mlua::ffi::lua_State,
    args: &crate::Args,
    from: usize,
    to: usize,
) {
    use mlua::ffi;
    ffi::lua_createtable(state, (to - from) as std::ffi::c_int, 0);
    for (n, i) in (from..to).enumerate() {
        let a = args.get(i);
        ffi::lua_pushlstring(state, a.as_ptr() as *const std::ffi::c_char, a.len());
        ffi::lua_rawseti(state, -2, n as ffi::lua_Integer + 1);
    }
}

/// The C closure every run goes through (upvalues: the prelude's error handler, the
/// script globals). Arguments: the script or callback, the RunnerArgs. Sets KEYS and ARGV
/// (EVAL: as globals; FCALL: as the callback's two arguments), calls it under the handler
/// and returns (ok, first result or the handler's error value): one protected call, and no
/// Lua closure per run.
unsafe extern "C-unwind" fn runner_fn(state: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
    use mlua::ffi;
    // SAFETY: `run` passes a RunnerArgs that outlives this call.
    let ra = &*(ffi::lua_touserdata(state, 2) as *const RunnerArgs);
    ffi::lua_settop(state, 1);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    let (k0, k1, n) = (3, 3 + ra.nkeys, ra.command.len());
    let nargs = if ra.is_eval {
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(2));
        ffi::lua_pushstring(state, c"KEYS".as_ptr());
        push_args_array(state, ra.command, k0, k1);
        ffi::lua_rawset(state, 3);
        ffi::lua_pushstring(state, c"ARGV".as_ptr());
        push_args_array(state, ra.command, k1, n);
        ffi::lua_rawset(state, 3);
        ffi::lua_settop(state, 2);
        0
    } else {
        push_args_array(state, ra.command, k0, k1);
        push_args_array(state, ra.command, k1, n);
        2
    };
    let status = ffi::lua_pcall(state, nargs, 1, 1);
    ffi::lua_pushboolean(state, (status == 0) as std::ffi::c_int);
    ffi::lua_insert(state, -2);
    2
}

/// A script's result that needs no table walk, written straight from the stack; false for a
/// table (left to `convert::lua_to_reply`).
///
/// # Safety
/// `idx` must be a valid index of `state`.
unsafe fn scalar_reply(
    out: &mut Reply,
    state: *mut mlua::ffi::lua_State,
    idx: std::ffi::c_int,
    script_resp: u8,
) -> bool {
    use mlua::ffi;
    match ffi::lua_type(state, idx) {
        ffi::LUA_TSTRING => {
            let mut len = 0usize;
            let p = ffi::lua_tolstring(state, idx, &mut len);
            out.bulk(std::slice::from_raw_parts(p as *const u8, len));
        }
        // As lua_to_reply: integers as they are, other numbers truncated.
        ffi::LUA_TNUMBER => out.int(ffi::lua_tonumber(state, idx) as i64),
        ffi::LUA_TBOOLEAN => {
            let b = ffi::lua_toboolean(state, idx) != 0;
            if script_resp != 2 {
                out.boolean(b)
            } else if b {
                out.int(1)
            } else {
                out.null()
            }
        }
        ffi::LUA_TTABLE => return false,
        _ => out.null(),
    }
    true
}

/// Lua's allocator for script VMs: the global allocator without mlua's accounting (Lua
/// counts its bytes itself, and no limit is set), same alignment as mlua's.
unsafe extern "C" fn lean_alloc(
    _ud: *mut std::ffi::c_void,
    ptr: *mut std::ffi::c_void,
    osize: usize,
    nsize: usize,
) -> *mut std::ffi::c_void {
    use std::alloc::{alloc, dealloc, handle_alloc_error, realloc, Layout};
    const ALIGN: usize = mlua::ffi::SYS_MIN_ALIGN;
    if nsize == 0 {
        if !ptr.is_null() {
            dealloc(
                ptr as *mut u8,
                Layout::from_size_align_unchecked(osize, ALIGN),
            );
        }
        return std::ptr::null_mut();
    }
    if nsize > isize::MAX as usize - ALIGN {
        return std::ptr::null_mut();
    }
    let p = if ptr.is_null() {
        alloc(Layout::from_size_align_unchecked(nsize, ALIGN))
    } else {
        realloc(
            ptr as *mut u8,
            Layout::from_size_align_unchecked(osize, ALIGN),
            nsize,
        )
    };
    if p.is_null() {
        handle_alloc_error(Layout::from_size_align_unchecked(nsize, ALIGN));
    }
    p as *mut std::ffi::c_void
}

/// Run `f` (a compiled script or a function's callback) on `vm` for the client of `ctx`, and
/// write its result (or error) to the client in the client's protocol. `start`: when the
/// run began (busy-reply-threshold, FUNCTION STATS).
pub fn run(ctx: &mut Ctx, vm: &mut Vm, f: &Compiled, spec: Run, start: Instant) {
    let threshold = ctx.srv.config.hot.busy_reply_threshold.load(Relaxed);
    if threshold > 0 {
        set_hook(vm.state, true);
    }

    let saved_db = ctx.conn.db;
    let saved_deny = ctx.conn.deny_blocking;
    ctx.conn.deny_blocking = true;
    let mut rc = RunCtx {
        srv: ctx.srv as *const Arc<Server>,
        conn: &mut *ctx.conn as *mut Conn,
        resp: 2,
        read_only: spec.read_only,
        allow_oom: spec.allow_oom,
        is_eval: spec.is_eval,
        name: spec.name as *const str,
        // The command outlives the run (see `register`).
        command: spec.command as *const crate::Args as *const (),
        start,
        wrote: false,
        info: None,
        threshold,
        kill_logged: false,
        cluster: crate::cluster::redirect::ScriptSlot::new(spec.keys(), spec.allow_cross_slot),
        time_us: tern_engine::clock::now_us(),
        scratch: std::mem::take(&mut vm.scratch),
    };
    // Without an instruction hook, or on a script thread (new or slow scripts), the run is
    // visible to SCRIPT KILL / FUNCTION STATS from its start.
    if threshold == 0 || ctx.conn.offloaded {
        rc.register();
    }
    let prev = CURRENT.with(|c| c.replace(&mut rc as *mut RunCtx));

    let state = vm.state;
    let ra = RunnerArgs {
        is_eval: spec.is_eval,
        command: spec.command,
        nkeys: spec.nkeys,
    };
    // SAFETY: `state` is this VM's main state, used on its thread; the stack is restored to
    // `top` below. The pushes before the protected call cannot raise (a failed allocation
    // aborts, see lean_alloc).
    let top = unsafe { mlua::ffi::lua_gettop(state) };
    // SAFETY: as above; the protected call catches Lua errors, catch_unwind Rust panics.
    let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        use mlua::ffi;
        ffi::lua_checkstack(state, 4);
        ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, vm.runner as ffi::lua_Integer);
        ffi::lua_rawgeti(
            state,
            ffi::LUA_REGISTRYINDEX,
            f.reference as ffi::lua_Integer,
        );
        ffi::lua_pushlightuserdata(state, &ra as *const RunnerArgs as *mut std::ffi::c_void);
        ffi::lua_pcall(state, 2, 2, 0)
    }));

    CURRENT.with(|c| c.set(prev));
    let script_resp = rc.resp;
    let killed = rc.info.as_ref().is_some_and(|i| i.killed.load(Relaxed));
    vm.scratch = std::mem::take(&mut rc.scratch);
    drop(rc);
    ctx.conn.deny_blocking = saved_deny;
    if ctx.conn.db != saved_db {
        ctx.conn.set_db(saved_db);
    }
    if threshold > 0 {
        set_hook(vm.state, false);
    }

    match status {
        Ok(0) => {
            // SAFETY: the runner left (ok, value) on top of `top`.
            let ok = unsafe { mlua::ffi::lua_toboolean(state, -2) != 0 };
            // SAFETY: the value is at -1 on the same stack.
            if !(ok && unsafe { scalar_reply(ctx.out, state, -1, script_resp) }) {
                let v = take_result(vm);
                if ok {
                    convert::lua_to_reply(ctx.out, &v, script_resp, 0);
                } else {
                    let (mut msg, loc, quiet) = convert::error_info(&v);
                    if killed {
                        msg = "ERR Script killed by user with SCRIPT KILL...".to_string();
                    }
                    let mut text = format!("-{msg}");
                    if let Some((source, line)) = loc {
                        text.push_str(&format!(" script: {}, on {source}:{line}.", spec.name));
                    }
                    convert::write_error(ctx.out, &text, !quiet);
                }
            }
        }
        Ok(_) => {
            // Failed outside the script's own protected call (out of memory building KEYS).
            // SAFETY: the error value is on top.
            let msg = unsafe {
                let mut len = 0usize;
                let p = mlua::ffi::lua_tolstring(state, -1, &mut len);
                if p.is_null() {
                    "unknown error".to_string()
                } else {
                    String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len))
                        .into_owned()
                }
            };
            let msg: String = msg.chars().take(100).collect();
            convert::write_error(
                ctx.out,
                &format!("-ERR Error running script {}, {msg}", spec.name),
                true,
            );
        }
        Err(_) => {
            // A panic unwound through the Lua state: do not trust it any more.
            DROP_VM.with(|d| d.set(true));
            convert::write_error(
                ctx.out,
                &format!(
                    "-ERR Error running script {}, panic while running the script",
                    spec.name
                ),
                true,
            );
        }
    }
    // SAFETY: back to the stack as it was before the run.
    unsafe { mlua::ffi::lua_settop(state, top) };
    vm.runs += 1;
    // Every 50 runs, one GC step as big as 50 KB of allocation (as Redis does): with only
    // Lua's own pacing the heap of a busy VM doubles before each cycle.
    if vm.runs.is_multiple_of(50) {
        // SAFETY: a protected call of gc_step_fn; an error (a __gc that raised) is dropped.
        unsafe {
            use mlua::ffi;
            ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, vm.gc_fn as ffi::lua_Integer);
            if ffi::lua_pcall(state, 0, 0, 0) != 0 {
                ffi::lua_settop(state, top);
            }
        }
    }
    vm.report_memory();
}

/// One incremental GC step of Redis's size (as if 50 KB had been allocated), in a protected
/// call: a userdata's __gc may raise.
unsafe extern "C-unwind" fn gc_step_fn(state: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
    mlua::ffi::lua_gc(state, mlua::ffi::LUA_GCSTEP, 50);
    0
}

/// The value on top of the VM's stack as an mlua value (popped), through the registry slot
/// kept for it.
fn take_result(vm: &Vm) -> Value {
    use mlua::ffi;
    let slot = vm.result_slot as ffi::lua_Integer;
    // SAFETY: moves the top value into the VM's result slot, reads it back through mlua,
    // then clears the slot; none of these allocate.
    unsafe {
        ffi::lua_rawseti(vm.state, ffi::LUA_REGISTRYINDEX, slot);
        let v = vm
            .lua
            .exec_raw::<Value>((), |s| {
                ffi::lua_rawgeti(s, ffi::LUA_REGISTRYINDEX, slot);
            })
            .unwrap_or(Value::Nil);
        ffi::lua_pushboolean(vm.state, 0);
        ffi::lua_rawseti(vm.state, ffi::LUA_REGISTRYINDEX, slot);
        ffi::lua_pushnil(vm.state);
        v
    }
}
