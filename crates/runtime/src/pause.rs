//! CLIENT PAUSE / UNPAUSE: hold back clients' commands until a time or until UNPAUSE.
//!
//! As in Redis 7.2: `ALL` holds every command of normal clients; `WRITE` holds the commands
//! that may change the dataset or reach replicas (write and may-replicate commands, EXEC of
//! such a transaction, scripts and functions unless they declare `no-writes`). While paused,
//! keys are not expired (a read sees an expired key as absent but does not delete it) and
//! nothing is evicted. A new pause keeps the later end time of the two, and `WRITE` does not
//! loosen a running `ALL`. The master link and replicas are never paused.
//!
//! A held client waits in its connection task (counted in `blocked_clients`) and runs the
//! command once the pause is over; the pause check comes after the command's own checks
//! (arity, ACL, ...), so a wrong command is answered at once.

use crate::args::Args;
use crate::clients::cflags;
use crate::ctx::Conn;
use crate::server::Server;
use crate::table::{flags, CommandSpec};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

/// The pause's end time lives in the engine (`tern_engine::expire::paused_until`), which holds
/// expiry by it; this adds what only the command layer needs.
#[derive(Default)]
pub struct Pause {
    /// Every command is held, not only writes.
    all: AtomicBool,
    /// Writes are held while a shutdown waits for replicas (Redis's PAUSE_DURING_SHUTDOWN):
    /// apart from CLIENT PAUSE, which UNPAUSE does not end.
    during_shutdown: AtomicBool,
    /// Writes are held while FAILOVER waits for a replica to catch up (Redis's
    /// PAUSE_DURING_FAILOVER), whatever CLIENT PAUSE / UNPAUSE do.
    during_failover: AtomicBool,
    /// Wakes the held clients on UNPAUSE.
    changed: tokio::sync::Notify,
}

impl Pause {
    /// CLIENT PAUSE: until `end_ms` (keeping a later end already set), `all` or writes only
    /// (a running ALL pause stays ALL).
    pub fn pause(&self, end_ms: u64, all: bool) {
        let running = self.active().is_some();
        self.all
            .store(all || (running && self.all.load(Relaxed)), Relaxed);
        tern_engine::expire::extend_pause(end_ms);
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        self.all.store(false, Relaxed);
        tern_engine::expire::end_pause();
        self.changed.notify_waiters();
    }

    /// Hold writes until `end_shutdown_hold` (a shutdown waiting for its replicas).
    pub fn start_shutdown_hold(&self) {
        self.during_shutdown.store(true, Relaxed);
    }

    /// The shutdown was cancelled: writes go on (unless CLIENT PAUSE holds them).
    pub fn end_shutdown_hold(&self) {
        self.during_shutdown.store(false, Relaxed);
        self.changed.notify_waiters();
    }

    /// Hold writes until `end_failover_hold` (FAILOVER waiting for its replica).
    pub fn start_failover_hold(&self) {
        self.during_failover.store(true, Relaxed);
    }

    /// The failover ended (done or aborted).
    pub fn end_failover_hold(&self) {
        self.during_failover.store(false, Relaxed);
        self.changed.notify_waiters();
    }

    /// Writes held until a shutdown or a failover lets them go.
    #[inline]
    fn held_for_handover(&self) -> bool {
        self.during_shutdown.load(Relaxed) || self.during_failover.load(Relaxed)
    }

    /// The pause in force now: None, or Some(all).
    #[inline]
    pub fn active(&self) -> Option<bool> {
        if tern_engine::expire::paused_until() <= tern_engine::clock::now_ms() {
            return self.held_for_handover().then_some(false);
        }
        Some(self.all.load(Relaxed))
    }

    /// Expiry and eviction are held while any pause runs.
    #[inline]
    pub fn holds_expiry(&self) -> bool {
        self.active().is_some()
    }

    /// Traffic to replicas that is not the stream itself (GETACK requests) waits while any
    /// pause runs, as Redis's PAUSE_ACTION_REPLICA.
    #[inline]
    pub fn holds_replicas(&self) -> bool {
        self.active().is_some()
    }

    /// Wait until the pause may have ended or loosened (the caller checks again).
    pub async fn changed(&self) {
        let n = self.changed.notified();
        tokio::pin!(n);
        n.as_mut().enable();
        let end = tern_engine::expire::paused_until();
        let now = tern_engine::clock::now_ms();
        let left = if end > now {
            end - now
        } else if self.held_for_handover() {
            u64::MAX
        } else {
            return;
        };
        // Re-check at least every 100 ms (a killed client, a shutdown).
        let left = Duration::from_millis(left.min(100));
        let _ = tokio::time::timeout(left, n).await;
    }
}

/// Is this command held by the pause in force (`all`: every command)?
pub fn holds(srv: &Server, conn: &Conn, spec: &CommandSpec, args: &Args, all: bool) -> bool {
    let h = &conn.handle;
    if h.id == crate::aof::CLIENT_ID || h.has_flag(cflags::MASTER) || h.has_flag(cflags::REPLICA) {
        return false;
    }
    all || may_replicate(srv, conn, spec, args)
}

/// Redis's is_may_replicate_command with the flags scripts declare (scriptFlagsToCmdFlags):
/// writes, may-replicate commands, EXEC of a transaction holding one, scripts and functions
/// that do not declare `no-writes` (or are unknown).
fn may_replicate(srv: &Server, conn: &Conn, spec: &CommandSpec, args: &Args) -> bool {
    match spec.name {
        "eval" | "evalsha" => {
            crate::lua::scripts::eval_may_write(srv, spec.name == "evalsha", args)
        }
        "fcall" => crate::lua::libraries::fcall_may_write(srv, args),
        "exec" => conn.multi.as_ref().is_some_and(|m| {
            m.commands()
                .any(|(a, e)| may_replicate(srv, conn, e.spec, &a))
        }),
        _ => spec.flags & (flags::WRITE | flags::MAY_REPLICATE) != 0,
    }
}
