//! CLUSTER FAILOVER [FORCE|TAKEOVER] as Redis 7.2 runs it. Default: the replica sends MFSTART;
//! its master pauses writes and pings it with the PAUSED flag and its replication offset; once
//! the replica has processed up to that offset it runs an election at once (no delay, rank 0)
//! whose vote requests carry FORCEACK so masters vote though its master is up. FORCE skips the
//! offset agreement, TAKEOVER the election too (a new epoch without consensus). Either side
//! gives up after 5 seconds.

use crate::msg::{msg_type, Body, Header, Msg};
use crate::node::NodeId;
use crate::state::{Action, ClusterState, Link, LogLevel};

/// Milliseconds a manual failover may take.
pub const MF_TIMEOUT: u64 = 5000;
/// The master pauses writes for this many timeouts.
const MF_PAUSE_MULT: u64 = 2;

/// CLUSTER FAILOVER's option.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FailoverMode {
    /// Agree on the offset with the master first.
    Default,
    /// Do not wait for the master.
    Force,
    /// No election either.
    Takeover,
}

/// The manual failover in progress, on either side (Redis's `mf_*` fields).
#[derive(Clone, Debug, Default)]
pub(crate) struct ManualFailover {
    /// Deadline; 0 when none is in progress.
    pub(crate) end: u64,
    /// Replica side: the election may start.
    pub(crate) can_start: bool,
    /// Master side: the replica taking over.
    pub(crate) replica: Option<NodeId>,
    /// Replica side: the paused master's offset, once received.
    pub(crate) master_offset: Option<u64>,
}

impl ClusterState {
    /// Whether this replica runs a manual failover that may start its election now.
    pub(crate) fn manual_failover_ready(&self) -> bool {
        self.mf.end != 0 && self.mf.can_start
    }

    /// Whether a manual failover is under way on this master (its headers say PAUSED).
    pub(crate) fn paused_for_failover(&self) -> bool {
        self.mf.end != 0 && self.myself_is_master()
    }

    fn myself_is_master(&self) -> bool {
        self.node(&self.myself()).is_some_and(|n| n.is_master())
    }

    pub(crate) fn reset_manual_failover(&mut self) {
        if self.mf.replica.is_some() {
            self.actions.push(Action::UnpauseWrites);
        }
        self.mf = ManualFailover::default();
    }

    /// CLUSTER FAILOVER: `Err` holds Redis's error message.
    pub fn manual_failover(&mut self, mode: FailoverMode, now: u64) -> Result<(), &'static str> {
        let me = self.myself();
        if self.myself_is_master() {
            return Err("You should send CLUSTER FAILOVER to a replica");
        }
        let Some(master) = self
            .node(&me)
            .and_then(|n| n.master)
            .filter(|m| self.node(m).is_some())
        else {
            return Err("I'm a replica but my master is unknown to me");
        };
        let m = self.node(&master).expect("checked");
        if mode == FailoverMode::Default && (m.failed() || !m.has_link()) {
            return Err("Master is down or failed, please use CLUSTER FAILOVER FORCE");
        }
        self.reset_manual_failover();
        self.mf.end = now + MF_TIMEOUT;
        match mode {
            FailoverMode::Takeover => {
                self.log(
                    LogLevel::Notice,
                    "Taking over the master (user request).".into(),
                );
                self.bump_epoch_without_consensus();
                self.replace_my_master(master, now);
            }
            FailoverMode::Force => {
                self.log(
                    LogLevel::Notice,
                    "Forced failover user request accepted.".into(),
                );
                self.mf.can_start = true;
            }
            FailoverMode::Default => {
                self.log(
                    LogLevel::Notice,
                    "Manual failover user request accepted.".into(),
                );
                if self.node(&master).is_some_and(|m| m.has_link()) {
                    let msg = Msg::new(self.header(), Body::MfStart);
                    self.actions.push(Action::Send {
                        link: Link::Outbound(master),
                        msg: Box::new(msg),
                    });
                }
            }
        }
        Ok(())
    }

    /// MFSTART from one of our replicas: pause writes and ping it with our offset.
    pub(crate) fn handle_mfstart(&mut self, from: NodeId, now: u64) {
        let me = self.myself();
        if self.node(&from).and_then(|n| n.master) != Some(me) || !self.myself_is_master() {
            return;
        }
        self.reset_manual_failover();
        self.mf.end = now + MF_TIMEOUT;
        self.mf.replica = Some(from);
        self.actions.push(Action::PauseWrites {
            until: now + MF_TIMEOUT * MF_PAUSE_MULT,
        });
        let name = self.node(&from).expect("checked").name_for_log();
        self.log(
            LogLevel::Notice,
            format!("Manual failover requested by replica {name}."),
        );
        if self.node(&from).is_some_and(|n| n.has_link()) {
            self.send_ping(Link::Outbound(from), msg_type::PING, now);
        }
    }

    /// A header from our master with the PAUSED flag: the offset to reach.
    pub(crate) fn note_paused_master_offset(&mut self, from: NodeId, h: &Header) {
        let me = self.myself();
        if self.mf.end != 0
            && !self.myself_is_master()
            && self.node(&me).and_then(|n| n.master) == Some(from)
            && h.mflags.paused()
            && self.mf.master_offset.is_none()
        {
            self.mf.master_offset = Some(h.offset);
            self.log(
                LogLevel::Notice,
                format!(
                    "Received replication offset for paused master manual failover: {}",
                    h.offset
                ),
            );
        }
    }

    /// The cron's part: time out, keep pinging the replica (master), start once caught up
    /// (replica).
    pub(crate) fn manual_failover_cron(&mut self, now: u64) {
        if self.mf.end != 0 && self.mf.end < now {
            self.log(LogLevel::Warning, "Manual failover timed out.".into());
            self.reset_manual_failover();
            return;
        }
        if self.mf.end == 0 {
            return;
        }
        if self.myself_is_master() {
            if let Some(r) = self
                .mf
                .replica
                .filter(|r| self.node(r).is_some_and(|n| n.has_link()))
            {
                self.send_ping(Link::Outbound(r), msg_type::PING, now);
            }
            return;
        }
        if self.mf.can_start {
            return;
        }
        if self.mf.master_offset == Some(self.repl_offset) {
            self.mf.can_start = true;
            self.log(
                LogLevel::Notice,
                "All master replication stream processed, manual failover can start.".into(),
            );
        }
    }
}
