//! Running KEYDB.CRON jobs. The engine's active cycle finds a job whose time came (it keeps
//! jobs filed by their next run beside the subkey-expiry index) and hands it here with the
//! shard locked; a thread of its own runs each job's script as `EVAL script numkeys keys...
//! args...` on an internal client in the job's database, as KeyDB runs it, so a slow script
//! holds neither the cron nor a connection thread. The script's writes are propagated as any
//! EVAL's are. Only a master runs jobs (the active cycle runs on masters only, and a job
//! queued just before a demotion is dropped here).

use crate::args::OwnedArgs;
use crate::ctx::Conn;
use crate::server::Server;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use tern_engine::CronJob;

/// The id of the internal client that runs the jobs (one below the AOF loader's).
pub const CLIENT_ID: u64 = u64::MAX - 1;

type Due = (usize, Box<[u8]>, CronJob);

// Process-wide: one runner thread for the process, read by INFO.
static EXECUTED: AtomicU64 = AtomicU64::new(0);

/// Jobs run since start or CONFIG RESETSTAT (INFO stats `cron_jobs_executed`).
pub fn executed() -> u64 {
    EXECUTED.load(Relaxed)
}

pub fn reset_stats() {
    EXECUTED.store(0, Relaxed);
}

// Process-wide: the engine's hook is a plain fn with no server at hand, set once at start.
static QUEUE: OnceLock<Mutex<Sender<Due>>> = OnceLock::new();

/// Start the runner thread and install the engine's hook (once, at start).
pub fn install(srv: &Arc<Server>) {
    let (tx, rx) = channel::<Due>();
    if QUEUE.set(Mutex::new(tx)).is_err() {
        return;
    }
    let srv = srv.clone();
    let spawned = std::thread::Builder::new()
        .name("cron-jobs".into())
        .spawn(move || {
            let mut conn = Conn::internal(&srv, CLIENT_ID);
            for (db, key, job) in rx {
                run(&srv, &mut conn, db, &key, &job);
            }
        });
    if let Err(e) = spawned {
        crate::log::warning(&format!("Can't start the KEYDB.CRON thread: {e}"));
    }
    tern_engine::events::set_cron_hook(queue);
}

fn queue(db: usize, key: &[u8], job: CronJob) {
    if let Some(q) = QUEUE.get() {
        let _ = q.lock().map(|tx| tx.send((db, key.into(), job)));
    }
}

fn run(srv: &Arc<Server>, conn: &mut Conn, db: usize, key: &[u8], job: &CronJob) {
    if tern_engine::expire::role() != tern_engine::expire::Role::Master
        || tern_engine::expire::loading()
    {
        return;
    }
    let numkeys = job.keys.len().to_string();
    let mut argv: Vec<&[u8]> = vec![b"EVAL", &job.script, numkeys.as_bytes()];
    argv.extend(job.keys.iter().map(|k| &**k));
    argv.extend(job.args.iter().map(|a| &**a));
    let owned = OwnedArgs::new(argv);
    conn.db = db;
    conn.start_batch();
    let mut out = tern_resp::Reply::new();
    crate::dispatch::execute(srv, conn, &mut out, &owned.args());
    EXECUTED.fetch_add(1, Relaxed);
    if out.buf.first() == Some(&b'-') {
        let line = out.buf.split(|&b| b == b'\r').next().unwrap_or_default();
        crate::log::warning(&format!(
            "KEYDB.CRON job '{}' failed: {}",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(&line[1..])
        ));
    }
    // KeyDB's event, published whenever keyevent notifications are on.
    crate::notify::notify_keyspace(srv, db, crate::notify::KEYEVENT, "CRON Executed", key);
}
