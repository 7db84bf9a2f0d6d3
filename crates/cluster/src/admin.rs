//! What the server and the CLUSTER commands change on the state besides the bus's events:
//! myself's address and announced settings, slot assignment (DELSLOTS, FLUSHSLOTS, SETSLOT
//! MIGRATING/IMPORTING/STABLE), CLUSTER RESET, and the read-only views the replies need.
//! Each change records what is to be saved and re-evaluated, as the command handlers of
//! Redis do with `clusterDoBeforeSleep`; the caller then runs [`ClusterState::before_sleep`].

use crate::node::{NodeFlags, NodeId};
use crate::state::{ClusterState, LogLevel};

/// Myself's settings that come from the configuration (`cluster-announce-*`,
/// `cluster-replica-no-failover`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Announced {
    pub port: u16,
    pub pport: u16,
    pub cport: u16,
    pub hostname: Vec<u8>,
    pub human_nodename: Vec<u8>,
    pub no_failover: bool,
}

impl ClusterState {
    /// Our address as a peer that met us sees it (the local address of its connection), when
    /// no `cluster-announce-ip` is set. Returns whether it changed.
    pub fn learn_my_ip(&mut self, ip: &str) -> bool {
        if !self.config.announce_ip.is_empty() || ip.is_empty() || self.me().ip == ip {
            return false;
        }
        self.me_mut().ip = ip.to_string();
        self.log(
            LogLevel::Notice,
            format!("IP address for this node updated to {ip}"),
        );
        self.save(false);
        true
    }

    /// Myself's ip is still unknown (it is learned from the first message then).
    pub fn my_ip_unknown(&self) -> bool {
        self.me().ip.is_empty()
    }

    /// Apply the announced ports, hostname, human nodename and the no-failover flag.
    pub fn set_announced(&mut self, a: &Announced) {
        if !self.config.announce_ip.is_empty() && self.me().ip != self.config.announce_ip {
            let ip = self.config.announce_ip.clone();
            self.me_mut().ip = ip;
            self.save(false);
        }
        let me = self.me_mut();
        let mut changed = false;
        if me.port != a.port || me.pport != a.pport || me.cport != a.cport {
            me.port = a.port;
            me.pport = a.pport;
            me.cport = a.cport;
            changed = true;
        }
        if me.hostname != a.hostname || me.human_nodename != a.human_nodename {
            me.hostname = a.hostname.clone();
            me.human_nodename = a.human_nodename.clone();
            changed = true;
        }
        if me.flags.contains(NodeFlags::NOFAILOVER) != a.no_failover {
            if a.no_failover {
                me.flags.insert(NodeFlags::NOFAILOVER);
            } else {
                me.flags.remove(NodeFlags::NOFAILOVER);
            }
            changed = true;
        }
        if changed {
            self.save(false);
        }
    }

    /// CLUSTER DELSLOTS / DELSLOTSRANGE (the caller checked every slot is assigned).
    pub fn del_slots(&mut self, slots: &[u16]) {
        for &s in slots {
            self.importing.remove(&s);
            self.del_slot(s);
        }
        self.save(false);
        self.todo_update_state = true;
    }

    /// CLUSTER FLUSHSLOTS: myself serves no slot any more.
    pub fn flush_my_slots(&mut self) {
        let mine: Vec<u16> = self.me().slots.iter().collect();
        for s in mine {
            self.del_slot(s);
        }
        self.save(false);
        self.todo_update_state = true;
    }

    /// CLUSTER SETSLOT <slot> MIGRATING <node>.
    pub fn set_slot_migrating(&mut self, slot: u16, node: NodeId) {
        self.migrating.insert(slot, node);
        self.save(false);
        self.todo_update_state = true;
    }

    /// CLUSTER SETSLOT <slot> IMPORTING <node>.
    pub fn set_slot_importing(&mut self, slot: u16, node: NodeId) {
        self.importing.insert(slot, node);
        self.save(false);
        self.todo_update_state = true;
    }

    /// CLUSTER SETSLOT <slot> STABLE.
    pub fn set_slot_stable(&mut self, slot: u16) {
        self.migrating.remove(&slot);
        self.importing.remove(&slot);
        self.save(false);
        self.todo_update_state = true;
    }

    /// CLUSTER RESET: back to a master alone with no slots (the caller drops the data of a
    /// replica and stops replicating); HARD also zeroes the epochs and takes a new id.
    pub fn reset(&mut self, hard: bool, now: u64) {
        let me = self.myself();
        if !self.me().is_master() {
            self.set_node_as_master(me);
        }
        self.migrating.clear();
        self.importing.clear();
        self.reset_manual_failover();
        for s in 0..crate::CLUSTER_SLOTS as u16 {
            self.del_slot(s);
        }
        let others: Vec<NodeId> = self.nodes.keys().copied().filter(|&id| id != me).collect();
        for id in others {
            self.del_node(id);
        }
        self.blacklist.clear();
        if hard {
            self.current_epoch = 0;
            self.last_vote_epoch = 0;
            self.me_mut().config_epoch = 0;
            self.log(
                LogLevel::Notice,
                "configEpoch set to 0 via CLUSTER RESET HARD".into(),
            );
            let id = self.rng.node_id();
            let shard = self.rng.node_id();
            let mut n = self.nodes.remove(&me).expect("myself is in the table");
            n.id = id;
            n.shard_id = shard;
            self.nodes.insert(id, n);
            self.myself = id;
            for s in 0..crate::CLUSTER_SLOTS {
                debug_assert!(self.slots[s].is_none());
            }
            self.log(LogLevel::Notice, format!("Node hard reset, now I'm {id}"));
        }
        let _ = now;
        self.save(true);
        self.todo_update_state = true;
    }

    /// The replicas of `id`, in the order they attached.
    pub fn replicas_of(&self, id: &NodeId) -> Vec<NodeId> {
        self.node(id)
            .map(|n| n.replicas.clone())
            .unwrap_or_default()
    }

    /// Whether CLUSTER FORGET of an unknown id is a no-op (the id was just forgotten).
    pub fn recently_forgotten(&mut self, id: &NodeId, now: u64) -> bool {
        self.blacklisted(id, now)
    }

    /// A Redis-style message for the server's log of a CLUSTER command's effect.
    pub fn log_notice(&mut self, line: String) {
        self.log(LogLevel::Notice, line);
    }
}
