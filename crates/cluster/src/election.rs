//! A replica's automatic failover, as Redis 7.2 runs it: once its master is FAIL, the replica
//! waits a delay that grows with its rank (replicas with a greater replication offset go
//! first), asks the masters for their vote at a new epoch (FAILOVER_AUTH_REQUEST), and takes
//! over its master's slots with that epoch when a majority of the masters serving slots
//! granted it (FAILOVER_AUTH_ACK). On the masters' side: the vote rules (one vote per epoch,
//! `lastVoteEpoch`; the master must be failing; no second vote about one master within two
//! node timeouts; the claimed slots must not be served with a greater configEpoch).

use crate::msg::{msg_type, Body, Header, Msg, MsgFlags};
use crate::node::{NodeFlags, NodeId};
use crate::state::{Action, ClusterState, Link, LogLevel};

/// The election of this replica in progress (Redis's `failover_auth_*` fields).
#[derive(Clone, Debug, Default)]
pub(crate) struct Election {
    /// When the election starts (or started); 0 when none was scheduled.
    time: u64,
    /// Votes received.
    count: usize,
    /// Whether the vote request went out.
    sent: bool,
    rank: usize,
    /// The epoch the request asked votes for.
    epoch: u64,
    /// Last reason logged for not failing over, so it is logged once.
    last_reason: Option<&'static str>,
}

impl ClusterState {
    /// Replicas of our master with a greater replication offset than ours.
    fn replica_rank(&self) -> usize {
        let me = self.myself();
        let Some(master) = self.node(&me).and_then(|n| n.master) else {
            return 0;
        };
        let Some(m) = self.node(&master) else {
            return 0;
        };
        m.replicas
            .iter()
            .filter(|r| **r != me)
            .filter_map(|r| self.node(r))
            .filter(|r| {
                !r.flags.contains(NodeFlags::NOFAILOVER) && r.repl_offset > self.repl_offset
            })
            .count()
    }

    fn cant_failover(&mut self, reason: &'static str) {
        if self.election.last_reason != Some(reason) {
            self.election.last_reason = Some(reason);
            self.log(
                LogLevel::Notice,
                format!("Currently unable to failover: {reason}"),
            );
        }
    }

    /// The replica side, run from the cron.
    pub(crate) fn handle_replica_failover(&mut self, now: u64) {
        let timeout = self.config.node_timeout;
        let auth_timeout = (timeout * 2).max(2000);
        let auth_retry_time = auth_timeout * 2;
        let me = self.myself();
        let Some(master) = self.node(&me).and_then(|n| n.master) else {
            return;
        };
        let Some(m) = self.node(&master) else { return };
        // A manual failover runs while the master is up, and even with no-failover set.
        let manual = self.manual_failover_ready();
        if (!m.failed() && !manual)
            || m.slots.is_empty()
            || (self.config.replica_no_failover && !manual)
        {
            self.election.last_reason = None;
            return;
        }
        // A replica whose data is too old must not win.
        let mut data_age = self.repl_data_age;
        if data_age > timeout {
            data_age -= timeout;
        }
        let factor = self.config.replica_validity_factor;
        if factor != 0
            && data_age > self.config.repl_ping_replica_period * 1000 + timeout * factor
            && !manual
        {
            self.cant_failover("Disconnected from master for longer than allowed. Please check the 'cluster-replica-validity-factor' configuration option.");
            return;
        }
        if now.saturating_sub(self.election.time) > auth_retry_time {
            // A fixed delay so the FAIL spreads, a random one so replicas do not start
            // together, and a second per rank so the most up-to-date replica goes first.
            let rank = self.replica_rank();
            self.election = Election {
                time: now + 500 + self.rng.below(500) as u64 + rank as u64 * 1000,
                rank,
                ..Election::default()
            };
            // Any manual failover under way, ready or not (its master may have failed before
            // telling its offset): no reason to wait, as in Redis.
            if self.mf.end != 0 {
                self.election.time = now;
                self.election.rank = 0;
            }
            let rank = self.election.rank;
            let delay = self.election.time - now;
            let offset = self.repl_offset;
            self.log(
                LogLevel::Notice,
                format!("Start of election delayed for {delay} milliseconds (rank #{rank}, offset {offset})."),
            );
            // Our offset goes to the other replicas of our master, so their ranks are right.
            let peers: Vec<NodeId> = self
                .node(&master)
                .map(|m| m.replicas.clone())
                .unwrap_or_default()
                .into_iter()
                .filter(|r| *r != me && self.node(r).is_some_and(|n| n.has_link()))
                .collect();
            for p in peers {
                self.send_ping(Link::Outbound(p), msg_type::PONG, now);
            }
            return;
        }
        if !self.election.sent && self.mf.end == 0 {
            let rank = self.replica_rank();
            if rank > self.election.rank {
                let added = (rank - self.election.rank) as u64 * 1000;
                self.election.time += added;
                self.election.rank = rank;
                self.log(
                    LogLevel::Notice,
                    format!(
                        "Replica rank updated to #{rank}, added {added} milliseconds of delay."
                    ),
                );
            }
        }
        if now < self.election.time {
            self.cant_failover("Waiting the delay before I can start a new failover.");
            return;
        }
        if now - self.election.time > auth_timeout {
            self.cant_failover("Failover attempt expired.");
            return;
        }
        if !self.election.sent {
            self.current_epoch = self.current_epoch.saturating_add(1);
            self.election.epoch = self.current_epoch;
            self.election.sent = true;
            let epoch = self.election.epoch;
            self.log(
                LogLevel::Notice,
                format!("Starting a failover election for epoch {epoch}."),
            );
            let mut header = self.header();
            if self.mf.end != 0 {
                // Masters vote though our master is up (to them), manual failover ready or not.
                header.mflags.0[0] |= MsgFlags::FORCEACK;
            }
            let msg = Msg::new(header, Body::FailoverAuthRequest);
            self.broadcast(msg);
            self.save(true);
            return;
        }
        let quorum = self.size / 2 + 1;
        if self.election.count < quorum {
            self.cant_failover("Waiting for votes, but majority still not reached.");
            return;
        }
        self.log(
            LogLevel::Notice,
            "Failover election won: I'm the new master.".into(),
        );
        if self
            .node(&me)
            .is_some_and(|n| n.config_epoch < self.election.epoch)
        {
            let epoch = self.election.epoch;
            self.me_mut().config_epoch = epoch;
            self.log(
                LogLevel::Notice,
                format!("configEpoch set to {epoch} after successful failover"),
            );
        }
        self.replace_my_master(master, now);
    }

    /// Become a master serving every slot of the old one, and tell everyone.
    pub(crate) fn replace_my_master(&mut self, old: NodeId, now: u64) {
        let me = self.myself();
        self.set_node_as_master(me);
        let slots: Vec<u16> = self
            .node(&old)
            .map(|n| n.slots.iter().collect())
            .unwrap_or_default();
        for s in slots {
            self.del_slot(s);
            self.add_slot(me, s);
        }
        self.election = Election::default();
        self.reset_manual_failover();
        self.actions.push(Action::PromoteMyself);
        self.todo_update_state = true;
        self.save(true);
        let targets: Vec<NodeId> = self
            .nodes()
            .filter(|n| n.id != me && !n.in_handshake() && n.has_link())
            .map(|n| n.id)
            .collect();
        for t in targets {
            self.send_ping(Link::Outbound(t), msg_type::PONG, now);
        }
    }

    /// A vote request from a replica.
    pub(crate) fn handle_auth_request(&mut self, from: NodeId, h: &Header, now: u64) {
        let me = self.myself();
        if !self
            .node(&me)
            .is_some_and(|n| n.is_master() && !n.slots.is_empty())
        {
            return;
        }
        let timeout = self.config.node_timeout;
        let Some(n) = self.node(&from) else { return };
        let name = n.name_for_log();
        let deny = |s: &mut Self, why: String| {
            s.log(
                LogLevel::Warning,
                format!("Failover auth denied to {name}: {why}"),
            );
        };
        if h.current_epoch < self.current_epoch {
            let cur = self.current_epoch;
            deny(
                self,
                format!("reqEpoch ({}) < curEpoch({cur})", h.current_epoch),
            );
            return;
        }
        if self.last_vote_epoch == self.current_epoch {
            let cur = self.current_epoch;
            deny(self, format!("already voted for epoch {cur}"));
            return;
        }
        let master = n.master.filter(|_| !n.is_master());
        if n.is_master() {
            deny(self, "it is a master node".into());
            return;
        }
        let Some(master) = master.filter(|m| self.node(m).is_some()) else {
            deny(self, "I don't know its master".into());
            return;
        };
        if !self.node(&master).is_some_and(|m| m.failed()) && !h.mflags.force_ack() {
            deny(self, "its master is up".into());
            return;
        }
        let voted_time = self.node(&master).map_or(0, |m| m.voted_time);
        if now.saturating_sub(voted_time) < timeout * 2 {
            let wait = timeout * 2 - now.saturating_sub(voted_time);
            // Redis prints this one without parentheses around the human nodename.
            self.log(
                LogLevel::Warning,
                format!("Failover auth denied to {from} {}: can't vote about this master before {wait} milliseconds", String::from_utf8_lossy(&self.node(&from).map(|n| n.human_nodename.clone()).unwrap_or_default())),
            );
            return;
        }
        for slot in h.slots.iter() {
            let Some(owner) = self.slot_owner(slot).filter(|_| !self.slot_unclaimed(slot)) else {
                continue;
            };
            let epoch = self.node(&owner).map_or(0, |o| o.config_epoch);
            if epoch <= h.config_epoch {
                continue;
            }
            deny(
                self,
                format!(
                    "slot {slot} epoch ({epoch}) > reqEpoch ({})",
                    h.config_epoch
                ),
            );
            return;
        }
        self.last_vote_epoch = self.current_epoch;
        if let Some(m) = self.nodes.get_mut(&master) {
            m.voted_time = now;
        }
        self.save(true);
        if self.node(&from).is_some_and(|n| n.has_link()) {
            let msg = Msg::new(self.header(), Body::FailoverAuthAck);
            self.actions.push(Action::Send {
                link: Link::Outbound(from),
                msg: Box::new(msg),
            });
        }
        let epoch = self.current_epoch;
        self.log(
            LogLevel::Notice,
            format!("Failover auth granted to {name} for epoch {epoch}"),
        );
    }

    /// A vote: counted when it comes from a master serving slots, for this election's epoch.
    pub(crate) fn handle_auth_ack(&mut self, from: NodeId, h: &Header) {
        if self
            .node(&from)
            .is_some_and(|n| n.is_master() && !n.slots.is_empty())
            && h.current_epoch >= self.election.epoch
        {
            self.election.count += 1;
        }
    }
}
