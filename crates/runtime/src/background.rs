//! Work kept off the connection threads: freeing huge values and running commands over huge
//! values. These threads run at the idle CPU priority (SCHED_IDLE), so that on a busy machine the
//! workers serving ordinary commands win the CPU and a big ZINTERSTORE or DEL slows only the
//! client that asked for it.

use crate::server::Server;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send + 'static>;

// Process-wide: a pool of OS threads sized to the machine's cores is a resource of the
// process (servers sharing one would compete for the same CPUs; one pool keeps the thread count
// bounded), and its jobs carry whatever server state they need. Started on first use.
static IDLE_POOL: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
// Process-wide, as IDLE_POOL.
static SCRIPT_POOL: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

/// Which background threads run a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// SCHED_IDLE threads: frees and commands over huge values, which should only use CPU the
    /// workers leave.
    Idle,
    /// Normal-priority threads for scripts known to run long: a script holds shard locks for
    /// its whole run, so it must not wait behind busy workers (priority inversion).
    Script,
}

/// Commands whose input has more elements than this run on a background thread
/// (`Ctx::offload`): below it the hop costs more than it saves.
pub const OFFLOAD_THRESHOLD: usize = 50_000;

/// Values cheaper than this to free are dropped where they are (a thread hop costs more).
pub const LAZYFREE_THRESHOLD: usize = 64;

fn pool(kind: Pool) -> &'static Mutex<Sender<Job>> {
    let cell = match kind {
        Pool::Idle => &IDLE_POOL,
        Pool::Script => &SCRIPT_POOL,
    };
    cell.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .max(2);
        let prefix = match kind {
            Pool::Idle => "tern-bg",
            Pool::Script => "tern-script",
        };
        for i in 0..n {
            let rx = rx.clone();
            let _ = std::thread::Builder::new()
                .name(format!("{prefix}-{i}"))
                .spawn(move || worker(rx, kind));
        }
        Mutex::new(tx)
    })
}

fn worker(rx: Arc<Mutex<Receiver<Job>>>, kind: Pool) {
    // SCHED_IDLE: run only when no worker wants the CPU (a nice value still lets the kernel
    // delay a waking worker). Per thread on Linux; fall back to the lowest nice value.
    if kind == Pool::Idle {
        // SAFETY: plain syscalls on the calling thread with a valid parameter block.
        unsafe {
            let param = libc::sched_param { sched_priority: 0 };
            if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
                let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                libc::setpriority(libc::PRIO_PROCESS, tid, 19);
            }
        }
    }
    loop {
        let job = match rx.lock() {
            Ok(r) => r.recv(),
            Err(_) => return,
        };
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Run `job` on an idle-priority background thread.
pub fn spawn(job: impl FnOnce() + Send + 'static) {
    spawn_on(Pool::Idle, job)
}

fn spawn_on(kind: Pool, job: impl FnOnce() + Send + 'static) {
    let sent = pool(kind)
        .lock()
        .map(|tx| tx.send(Box::new(job)).is_ok())
        .unwrap_or(false);
    debug_assert!(sent, "background pool gone");
}

/// INFO memory's lazyfree counters, owned by the server (`Server::lazyfree`; each background
/// free holds a handle to count itself done).
#[derive(Default)]
pub struct Lazyfree {
    /// Objects handed to the background and not freed yet (`lazyfree_pending_objects`).
    pub pending: AtomicU64,
    /// Objects freed there since the last CONFIG RESETSTAT (`lazyfreed_objects`).
    pub freed: AtomicU64,
}

/// Drop `v` (one object) in the background when freeing it is expensive (`effort` ~
/// allocations to free, Redis's free effort); `srv` counts it.
pub fn drop_later<T: Send + 'static>(srv: &Server, v: T, effort: usize) {
    drop_later_counted(srv, v, effort, 1)
}

/// `drop_later` for a value standing for `objects` objects (a flushed table: its keys).
pub fn drop_later_counted<T: Send + 'static>(srv: &Server, v: T, effort: usize, objects: u64) {
    if effort > LAZYFREE_THRESHOLD {
        let counters = srv.lazyfree.clone();
        counters.pending.fetch_add(objects, Relaxed);
        spawn(move || {
            drop(v);
            counters.pending.fetch_sub(objects, Relaxed);
            counters.freed.fetch_add(objects, Relaxed);
        });
    } else {
        drop(v);
    }
}

/// Run `f` on a background thread of `kind` and wait for its result without blocking the
/// caller's runtime thread.
pub async fn run<R: Send + 'static>(kind: Pool, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = tokio::sync::oneshot::channel();
    spawn_on(kind, move || {
        let _ = tx.send(f());
    });
    rx.await.expect("background job panicked")
}

/// Store `value` under `key` in place of whatever was there (TTL dropped), as the STORE
/// variants do; a big replaced value is freed off this thread.
pub fn replace_value(
    srv: &Server,
    shard: &mut tern_engine::ShardData,
    h: u64,
    key: &[u8],
    value: tern_engine::Value,
    now_ms: u64,
) {
    if let Some(old) = shard.set(h, key, value, false, now_ms) {
        let effort = old.free_effort();
        drop_later(srv, old, effort);
    }
}

/// Delete `key` if it is live (an empty STORE result); a big value is freed off this thread.
/// True if there was a live key (then touched for WATCH by `remove`; an absent key is not).
pub fn delete_live(
    srv: &Server,
    shard: &mut tern_engine::ShardData,
    h: u64,
    key: &[u8],
    now_ms: u64,
) -> bool {
    if shard.get_quiet(h, key, now_ms).is_none() {
        return false;
    }
    match shard.remove(h, key) {
        Some(e) => {
            let effort = e.value.free_effort();
            drop_later(srv, e, effort);
            true
        }
        None => false,
    }
}
