//! SHUTDOWN and the shutdown sequence, as Redis 7.2 runs it (server.c prepareForShutdown /
//! finishShutdown / abortShutdown).
//!
//! A shutdown starts from the SHUTDOWN command or from SIGTERM/SIGINT. A signal only marks it
//! wanted (`on_signal`); the cron starts it, with the flags of `shutdown-on-sigterm` /
//! `shutdown-on-sigint`, so `DEBUG PAUSE-CRON` and `SHUTDOWN ABORT` can hold or cancel it.
//! Unless NOW is given or `shutdown-timeout` is 0, a master with lagging replicas first holds
//! writes, asks its replicas for their offsets (REPLCONF GETACK) and waits until every one has
//! acknowledged the master's offset or the timeout passed; SHUTDOWN callers wait meanwhile
//! (blocked clients). Then the final steps run: lagging replicas are logged, background save
//! writers are killed, the final RDB is saved, the AOF flushed, and the process exits. When a
//! step fails and FORCE was not given, the shutdown is cancelled: the callers get
//! `-ERR Errors trying to SHUTDOWN. Check logs.` and the server goes on serving.

use crate::blocking::TimeoutReply;
use crate::log;
use crate::server::Server;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use tern_engine::clock;

/// Shutdown flags, with the values of `shutdown-on-sigterm` / `shutdown-on-sigint`.
pub const SAVE: u32 = 1;
pub const NOSAVE: u32 = 2;
pub const NOW: u32 = 4;
pub const FORCE: u32 = 8;

pub const ERR_FAILED: &str = "ERR Errors trying to SHUTDOWN. Check logs.";
/// What the SHUTDOWN callers waiting for replicas get when the shutdown is given up.
pub const WAITER_REPLY: TimeoutReply = TimeoutReply::Error(ERR_FAILED);

/// The shutdown's state (one per server).
#[derive(Default)]
pub struct Shutdown {
    /// A signal asked for a shutdown the cron has not started yet (Redis's shutdown_asap).
    asap: AtomicBool,
    /// The signal that asked (SIGTERM or SIGINT), 0 for none.
    last_signal: AtomicI32,
    /// Flags of the shutdown in progress.
    flags: AtomicU32,
    /// While waiting for replicas: the unix time in ms at which the wait ends (0: no wait).
    deadline_ms: AtomicU64,
    /// One shutdown step at a time (the command, the cron, ABORT).
    steps: Mutex<()>,
    /// Run just before exiting (the server removes its unix socket file).
    before_exit: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl Shutdown {
    /// The server's last words before a clean exit (close the listeners).
    pub fn set_before_exit(&self, f: Box<dyn Fn() + Send + Sync>) {
        let _ = self.before_exit.set(f);
    }

    /// Waiting for replicas (Redis's isShutdownInitiated).
    pub fn initiated(&self) -> bool {
        self.deadline_ms.load(Relaxed) != 0
    }

    /// INFO server's shutdown_in_milliseconds while waiting for replicas.
    pub fn ms_left(&self) -> Option<i64> {
        match self.deadline_ms.load(Relaxed) {
            0 => None,
            d => Some(d as i64 - clock::now_ms() as i64),
        }
    }
}

/// How a shutdown attempt ended that did not exit.
#[derive(Debug, PartialEq, Eq)]
pub enum Prepared {
    /// Waiting for replicas to catch up (the cron finishes it).
    Waiting,
    /// A step failed: the shutdown was cancelled (logged).
    Failed,
}

/// Start a shutdown with `flags` (Redis's prepareForShutdown): exits, waits for replicas, or
/// fails. A shutdown already waiting for replicas is joined.
pub fn prepare(srv: &Arc<Server>, mut flags: u32) -> Prepared {
    let _one = srv.shutdown_state.steps.lock();
    let st = &srv.shutdown_state;
    if st.initiated() {
        return Prepared::Waiting;
    }
    // A dataset half loaded must not overwrite the file it comes from.
    if srv.rdb.loading.load(Relaxed) {
        flags = (flags & !SAVE) | NOSAVE;
    }
    st.flags.store(flags, Relaxed);
    log::notice("User requested shutdown...");
    let timeout_secs = srv.config.get_i64("shutdown-timeout").max(0) as u64;
    if flags & NOW == 0 && timeout_secs != 0 && !replicas_in_sync(srv) {
        st.deadline_ms
            .store(clock::now_ms() + timeout_secs * 1000, Relaxed);
        srv.propagation.log.getack_subs();
        srv.pause.start_shutdown_hold();
        log::notice("Waiting for replicas before shutting down.");
        return Prepared::Waiting;
    }
    finish(srv)
}

/// Every replica acknowledged the master's offset (Redis's isReadyToShutdown).
fn replicas_in_sync(srv: &Server) -> bool {
    let offset = srv.propagation.log.repl_offset();
    crate::replication::replica_rows(srv)
        .iter()
        .all(|r| r.offset == offset)
}

/// The final steps (Redis's finishShutdown): exits the process, or returns `Failed` with the
/// shutdown cancelled. Called with `steps` held.
fn finish(srv: &Arc<Server>) -> Prepared {
    let st = &srv.shutdown_state;
    let flags = st.flags.load(Relaxed);
    let force = flags & FORCE != 0;
    // No write may be acknowledged after the final save: they wait (and die with the process,
    // or go on if the shutdown fails).
    srv.pause.start_shutdown_hold();
    log_replicas(srv);
    // A first AOF rewrite in progress is the only copy of the dataset the AOF will have.
    let aof = &srv.aof;
    if aof.rewrite_in_progress.load(Relaxed) && aof.wait_rewrite.load(Relaxed) {
        if force {
            log::warning("Writing initial AOF. Exit anyway.");
        } else {
            log::warning("Writing initial AOF, can't exit.");
            return fail(srv);
        }
    }
    // Background writers would race the final save; their temp files go with them.
    if srv
        .save_children
        .running_pid("temp-rewriteaof-bg-")
        .is_some()
    {
        log::warning("There is a child rewriting the AOF. Killing it!");
    }
    if srv.rdb.bgsave_in_progress.load(Relaxed) {
        log::warning("There is a child saving an .rdb. Killing it!");
    }
    srv.save_children.kill_all();
    let has_save_points = crate::persistence::has_save_points(srv);
    if (has_save_points && flags & NOSAVE == 0) || flags & SAVE != 0 {
        log::notice("Saving the final RDB snapshot before exiting.");
        match crate::persistence::rdb_save(srv) {
            Ok(_) => log::notice("DB saved on disk"),
            Err(e) => {
                log::warning(&e);
                if force {
                    log::warning("Error trying to save the DB. Exit anyway.");
                } else {
                    log::warning("Error trying to save the DB, can't exit.");
                    return fail(srv);
                }
            }
        }
    }
    // After the save (not before it, as Redis): stopping the AOF writer cannot be undone if
    // the save fails and the server has to go on.
    crate::aof::shutdown(srv);
    let pidfile = srv.config.get("pidfile").unwrap_or_default();
    if !pidfile.is_empty() {
        log::notice("Removing the pid file.");
        let _ = std::fs::remove_file(&pidfile);
    }
    if let Some(f) = st.before_exit.get() {
        f();
    }
    log::warning("Redis is now ready to exit, bye bye...");
    std::process::exit(0)
}

/// The lagging replicas, then how many are in sync (only with replicas).
fn log_replicas(srv: &Server) {
    let offset = srv.propagation.log.repl_offset();
    let rows = crate::replication::replica_rows(srv);
    let mut lagging = 0;
    for r in &rows {
        if r.offset != offset {
            lagging += 1;
            let lag = if r.state == "online" { r.lag } else { 0 };
            log::notice(&format!(
                "Lagging replica {}:{} reported offset {} behind master, lag={lag}, state={}.",
                r.ip,
                r.port,
                offset as i64 - r.offset as i64,
                r.state
            ));
        }
    }
    if !rows.is_empty() {
        log::notice(&format!(
            "{} of {} replicas are in sync when shutting down.",
            rows.len() - lagging,
            rows.len()
        ));
    }
}

fn fail(srv: &Server) -> Prepared {
    log::warning("Errors trying to shut down the server. Check the logs for more information.");
    cancel(srv);
    Prepared::Failed
}

/// Back to serving (Redis's cancelShutdown): callers waiting get their error, writes resume.
fn cancel(srv: &Server) {
    let st = &srv.shutdown_state;
    st.asap.store(false, Relaxed);
    st.flags.store(0, Relaxed);
    st.deadline_ms.store(0, Relaxed);
    st.last_signal.store(0, Relaxed);
    srv.blocking.time_out_all(WAITER_REPLY);
    srv.pause.end_shutdown_hold();
}

/// SHUTDOWN ABORT: true if a shutdown was waiting or a signal had asked for one.
pub fn abort_shutdown(srv: &Server) -> bool {
    let _one = srv.shutdown_state.steps.lock();
    let st = &srv.shutdown_state;
    if st.initiated() {
        cancel(srv);
    } else if !st.asap.swap(false, Relaxed) {
        return false;
    }
    log::notice("Shutdown manually aborted.");
    true
}

/// SIGTERM / SIGINT (called from the server's signal loop, never from a signal handler).
/// A second SIGINT while one is pending exits at once, as Redis.
pub fn on_signal(srv: &Server, sig: i32) {
    let st = &srv.shutdown_state;
    if sig == libc::SIGINT && st.asap.load(Relaxed) {
        log::warning("You insist... exiting now.");
        // The final save's temp file, and the background writers' with them.
        let _ = std::fs::remove_file(format!("temp-{}.rdb", std::process::id()));
        srv.save_children.kill_all();
        std::process::exit(1);
    }
    let msg = if srv.rdb.loading.load(Relaxed) {
        "Received shutdown signal during loading, scheduling shutdown."
    } else if sig == libc::SIGINT {
        "Received SIGINT scheduling shutdown..."
    } else {
        "Received SIGTERM scheduling shutdown..."
    };
    log::warning(msg);
    st.last_signal.store(sig, Relaxed);
    st.asap.store(true, Relaxed);
}

/// The flags a signal's shutdown runs with (`shutdown-on-sigterm` / `shutdown-on-sigint`).
fn signal_flags(srv: &Server, sig: i32) -> u32 {
    let name = match sig {
        libc::SIGINT => "shutdown-on-sigint",
        libc::SIGTERM => "shutdown-on-sigterm",
        _ => return 0,
    };
    let value = srv.config.get(name).unwrap_or_default();
    value
        .split_whitespace()
        .map(|w| match w.to_ascii_lowercase().as_str() {
            "save" => SAVE,
            "nosave" => NOSAVE,
            "now" => NOW,
            "force" => FORCE,
            _ => 0,
        })
        .fold(0, |a, b| a | b)
}

/// The cron's part (Redis's serverCron): start a shutdown a signal asked for; finish one
/// whose replicas caught up or whose time is up.
pub fn cron(srv: &Arc<Server>) {
    let st = &srv.shutdown_state;
    if st.asap.load(Relaxed) && !st.initiated() {
        let flags = signal_flags(srv, st.last_signal.load(Relaxed));
        prepare(srv, flags);
    } else if st.initiated() {
        let _one = st.steps.lock();
        if st.initiated()
            && (clock::now_ms() >= st.deadline_ms.load(Relaxed) || replicas_in_sync(srv))
        {
            finish(srv);
        }
    } else if srv.blocking.any_waiting(WAITER_REPLY) {
        // A SHUTDOWN caller that started waiting just after its shutdown was cancelled.
        srv.blocking.time_out_all(WAITER_REPLY);
    }
}
