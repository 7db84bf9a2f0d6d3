//! Work kept off the connection threads: freeing huge values and running commands over huge
//! values. These threads run at the idle CPU priority (SCHED_IDLE), so that on a busy machine the
//! workers serving ordinary commands win the CPU and a big ZINTERSTORE or DEL slows only the
//! client that asked for it.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send + 'static>;

static POOL: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

/// Commands whose input has more elements than this run on a background thread
/// (`Ctx::offload`): below it the hop costs more than it saves.
pub const OFFLOAD_THRESHOLD: usize = 50_000;

/// Values cheaper than this to free are dropped where they are (a thread hop costs more).
pub const LAZYFREE_THRESHOLD: usize = 64;

fn pool() -> &'static Mutex<Sender<Job>> {
    POOL.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .max(2);
        for i in 0..n {
            let rx = rx.clone();
            let _ = std::thread::Builder::new()
                .name(format!("tern-bg-{i}"))
                .spawn(move || worker(rx));
        }
        Mutex::new(tx)
    })
}

fn worker(rx: Arc<Mutex<Receiver<Job>>>) {
    // SCHED_IDLE: run only when no worker wants the CPU (a nice value still lets the kernel
    // delay a waking worker). Per thread on Linux; fall back to the lowest nice value.
    // SAFETY: plain syscalls on the calling thread with a valid parameter block.
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        if libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, 19);
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

/// Run `job` on a background thread.
pub fn spawn(job: impl FnOnce() + Send + 'static) {
    let sent = pool()
        .lock()
        .map(|tx| tx.send(Box::new(job)).is_ok())
        .unwrap_or(false);
    debug_assert!(sent, "background pool gone");
}

/// Drop `v` in the background when freeing it is expensive (`effort` ~ allocations to free).
pub fn drop_later<T: Send + 'static>(v: T, effort: usize) {
    if effort > LAZYFREE_THRESHOLD {
        spawn(move || drop(v));
    } else {
        drop(v);
    }
}

/// Run `f` on a background thread and wait for its result without blocking the caller's
/// runtime thread.
pub async fn run<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = tokio::sync::oneshot::channel();
    spawn(move || {
        let _ = tx.send(f());
    });
    rx.await.expect("background job panicked")
}

/// Store `value` under `key` in place of whatever was there (TTL dropped), as the STORE
/// variants do; a big replaced value is freed off this thread.
pub fn replace_value(
    shard: &mut tern_engine::ShardData,
    h: u64,
    key: &[u8],
    value: tern_engine::Value,
    now_ms: u64,
) {
    if let Some(old) = shard.set(h, key, value, false, now_ms) {
        let effort = old.free_effort();
        drop_later(old, effort);
    }
}

/// Delete `key` if it is live (an empty STORE result); a big value is freed off this thread.
/// True if there was a live key.
pub fn delete_live(shard: &mut tern_engine::ShardData, h: u64, key: &[u8], now_ms: u64) -> bool {
    if shard.get(h, key, now_ms).is_none() {
        return false;
    }
    match shard.remove(h, key) {
        Some(e) => {
            let effort = e.value.free_effort();
            drop_later(e, effort);
            true
        }
        None => false,
    }
}
