//! FAILOVER: a coordinated hand-over from this master to one of its replicas, as Redis 7.2.
//!
//! `FAILOVER [TO host port [FORCE]] [TIMEOUT ms]` holds writes (the stream stops growing),
//! waits until the target replica (or, without TO, any replica) has acknowledged the whole
//! stream, then turns this server into that replica's replica, sending `PSYNC <id> <offset>
//! FAILOVER`: the target promotes itself on receiving it and answers `+CONTINUE`, after
//! which writes resume (they are now refused: this server is a replica). A timeout aborts,
//! or with FORCE fails over anyway; `FAILOVER ABORT` gives up, and a rejected PSYNC makes
//! this server a master again. INFO replication shows the state as `master_failover_state`.

use crate::server::Server;
use parking_lot::Mutex;
use std::sync::Arc;
use tern_engine::clock;

#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
enum Phase {
    #[default]
    None,
    /// Writes held; waiting for a replica to acknowledge our whole stream.
    WaitForSync,
    /// We became the target's replica and asked it to take over.
    InProgress,
}

#[derive(Default)]
struct State {
    phase: Phase,
    target: Option<(String, u16)>,
    /// When the wait for sync times out (0: never).
    end_ms: u64,
    force: bool,
}

/// The failover in progress, owned by the server (`Replicas::failover`).
#[derive(Default)]
pub struct Failover {
    state: Mutex<State>,
}

/// What FAILOVER asks for.
pub struct Request {
    pub target: Option<(String, u16)>,
    pub timeout_ms: u64,
    pub force: bool,
}

/// INFO's `master_failover_state`.
pub fn state_name(srv: &Server) -> &'static str {
    match srv.replicas.failover.state.lock().phase {
        Phase::None => "no-failover",
        Phase::WaitForSync => "waiting-for-sync",
        Phase::InProgress => "failover-in-progress",
    }
}

/// A failover is running (REPLICAOF and SYNC are refused meanwhile).
pub fn running(srv: &Server) -> bool {
    srv.replicas.failover.state.lock().phase != Phase::None
}

/// We are asking the target to take over: our PSYNC carries FAILOVER.
pub fn in_progress(srv: &Server) -> bool {
    srv.replicas.failover.state.lock().phase == Phase::InProgress
}

/// FAILOVER: start waiting for a replica to catch up (writes held). Errors are Redis's.
pub fn begin(srv: &Server, req: Request) -> Result<(), &'static str> {
    let mut st = srv.replicas.failover.state.lock();
    if st.phase != Phase::None {
        return Err("ERR FAILOVER already in progress.");
    }
    if srv.master_link.is_replica() {
        return Err("ERR FAILOVER is not valid when server is a replica.");
    }
    let replicas = crate::replication::replica_rows(srv);
    if replicas.is_empty() {
        return Err("ERR FAILOVER requires connected replicas.");
    }
    if req.force && (req.timeout_ms == 0 || req.target.is_none()) {
        return Err(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        );
    }
    match &req.target {
        Some((host, port)) => {
            let Some(r) = replicas
                .iter()
                .find(|r| r.ip.eq_ignore_ascii_case(host) && r.port == *port)
            else {
                return Err("ERR FAILOVER target HOST and PORT is not a replica.");
            };
            if r.state != "online" {
                return Err("ERR FAILOVER target replica is not online.");
            }
            crate::log::notice(&format!("FAILOVER requested to {host}:{port}."));
        }
        None => crate::log::notice("FAILOVER requested to any replica."),
    }
    *st = State {
        phase: Phase::WaitForSync,
        target: req.target,
        end_ms: if req.timeout_ms > 0 {
            clock::now_ms() + req.timeout_ms
        } else {
            0
        },
        force: req.force,
    };
    drop(st);
    srv.pause.start_failover_hold();
    Ok(())
}

/// FAILOVER ABORT; Err when none runs.
pub fn abort_command(srv: &Server) -> Result<(), &'static str> {
    if !running(srv) {
        return Err("ERR No failover in progress.");
    }
    abort(srv, "Failover manually aborted");
    Ok(())
}

/// Give up: a failover already handed over makes this server a master again.
pub fn abort(srv: &Server, why: &str) {
    let mut st = srv.replicas.failover.state.lock();
    let phase = st.phase;
    if phase == Phase::None {
        return;
    }
    match &st.target {
        Some((h, p)) => crate::log::notice(&format!("FAILOVER to {h}:{p} aborted: {why}")),
        None => crate::log::notice(&format!("FAILOVER to any replica aborted: {why}")),
    }
    *st = State::default();
    drop(st);
    if phase == Phase::InProgress {
        crate::master_link::become_master(srv);
    }
    srv.pause.end_failover_hold();
}

/// The target answered our PSYNC FAILOVER: with `+CONTINUE` or `+FULLRESYNC` it took over
/// and the failover is done; anything else aborts it.
pub fn psync_answered(srv: &Server, accepted: bool) {
    if !in_progress(srv) {
        return;
    }
    if accepted {
        *srv.replicas.failover.state.lock() = State::default();
        srv.pause.end_failover_hold();
    } else {
        abort(srv, "Failover target rejected psync request");
    }
}

/// Every cron tick: time out, or hand over to a replica that acknowledged our whole stream.
pub fn cron(srv: &Arc<Server>) {
    let mut st = srv.replicas.failover.state.lock();
    if st.phase != Phase::WaitForSync {
        return;
    }
    if st.end_ms != 0 && st.end_ms <= clock::now_ms() {
        if st.force {
            let (host, port) = st.target.clone().expect("FORCE has a target");
            crate::log::notice(&format!(
                "FAILOVER to {host}:{port} time out exceeded, failing over."
            ));
            st.phase = Phase::InProgress;
            drop(st);
            crate::master_link::start(srv.clone(), host, port);
        } else {
            drop(st);
            abort(srv, "Replica never caught up before timeout");
        }
        return;
    }
    let offset = srv.propagation.log.repl_offset();
    let replicas = crate::replication::replica_rows(srv);
    let synced = match &st.target {
        Some((host, port)) => replicas
            .iter()
            .find(|r| r.ip.eq_ignore_ascii_case(host) && r.port == *port)
            .filter(|r| r.offset == offset),
        None => replicas.iter().find(|r| r.offset == offset),
    };
    let Some(r) = synced else {
        return;
    };
    let (host, port) = (r.ip.clone(), r.port);
    crate::log::notice(&format!(
        "Failover target {host}:{port} is synced, failing over."
    ));
    st.target = Some((host.clone(), port));
    st.phase = Phase::InProgress;
    drop(st);
    crate::master_link::start(srv.clone(), host, port);
}
