//! The cluster's logic as Redis 7.2 runs it (`clusterState` and the handling of the bus), with
//! no I/O and no clock of its own: the server feeds it events (a message read from a link, a
//! link that connected or broke, the cron tick, CLUSTER MEET) with the current time, and it
//! answers with [`Action`]s (connect, send, close, save nodes.conf, log...) collected until
//! [`ClusterState::take_actions`].
//!
//! Events only record what is to be saved and re-evaluated: call
//! [`ClusterState::before_sleep`] after a batch of them ([`ClusterState::tick`] does), as Redis
//! does before its event loop sleeps, to get the save/fsync and state-change actions.
//!
//! Links follow Redis: each node we know has at most one outbound link ([`Link::Outbound`],
//! keyed by the node's id: the driver connects to the address in [`Action::Connect`]) on which
//! we send PING/MEET and read PONGs, and peers' inbound links ([`Link::Inbound`], numbered by
//! the driver) on which we answer their PINGs.

use std::collections::BTreeMap;

use crate::msg::{self, Body, ClusterState as WireState, Gossip, Header, Ip, Msg, Ping, PingExt};
use crate::node::{NodeFlags, NodeId, NAME_LEN};
use crate::nodes_conf::{LinkState, NodeLine, NodesConf, SlotMigration};
use crate::slots::{SlotSet, CLUSTER_SLOTS};

/// A failure report is trusted for this many node timeouts.
const FAIL_REPORT_VALIDITY_MULT: u64 = 2;
/// A master with slots back from FAIL gets its FAIL cleared after this many node timeouts.
const FAIL_UNDO_TIME_MULT: u64 = 2;
/// Bounds of the delay a master that was in a minority partition waits before serving again.
const MAX_REJOIN_DELAY: u64 = 5000;
const MIN_REJOIN_DELAY: u64 = 500;
/// After start-up, the state stays `fail` this long so the node learns the configuration first.
const WRITABLE_DELAY: u64 = 2000;
/// Seconds a forgotten node stays out of gossip.
const BLACKLIST_TTL: u64 = 60;
/// The cron runs every 100 ms; one random node is pinged every 10 runs.
pub const CRON_PERIOD_MS: u64 = 100;

/// The settings the logic reads (the `cluster-*` configuration).
#[derive(Clone, Debug)]
pub struct Config {
    /// `cluster-node-timeout`, ms.
    pub node_timeout: u64,
    /// `cluster-require-full-coverage`.
    pub require_full_coverage: bool,
    /// `cluster-allow-replica-migration`.
    pub allow_replica_migration: bool,
    /// `cluster-migration-barrier`: working replicas a master keeps before one may migrate.
    pub migration_barrier: usize,
    /// `cluster-announce-ip` (empty: peers use the address our connection comes from).
    pub announce_ip: String,
    /// `cluster-announce-hostname`.
    pub hostname: Vec<u8>,
    /// `cluster-announce-human-nodename`.
    pub human_nodename: Vec<u8>,
    /// `cluster-replica-validity-factor` (0: a replica always tries to fail over).
    pub replica_validity_factor: u64,
    /// `repl-ping-replica-period`, seconds.
    pub repl_ping_replica_period: u64,
    /// `cluster-replica-no-failover`.
    pub replica_no_failover: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            node_timeout: 15000,
            require_full_coverage: true,
            allow_replica_migration: true,
            migration_barrier: 1,
            announce_ip: String::new(),
            hostname: Vec::new(),
            human_nodename: Vec::new(),
            replica_validity_factor: 10,
            repl_ping_replica_period: 10,
            replica_no_failover: false,
        }
    }
}

/// A bus connection, as the driver and the logic both name it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Link {
    /// The link we opened to a node.
    Outbound(NodeId),
    /// A link a peer opened to us, numbered by the driver.
    Inbound(u64),
}

/// Log levels, as Redis's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LogLevel {
    Debug,
    Verbose,
    Notice,
    Warning,
}

/// Whether the cluster can serve queries (CLUSTER INFO `cluster_state`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Health {
    Ok,
    Fail,
}

/// What the driver must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Open the outbound link of `node` to `ip:cport`, then call
    /// [`ClusterState::link_connected`] or [`ClusterState::link_failed`].
    Connect {
        node: NodeId,
        ip: String,
        cport: u16,
    },
    /// Write a message on a link (dropped by the driver if the link is gone).
    Send {
        link: Link,
        msg: Box<Msg>,
    },
    /// Close a link (the logic already forgot it).
    Close(Link),
    /// The outbound link of a handshake node now belongs to the node's real id.
    RenameLink {
        from: NodeId,
        to: NodeId,
    },
    /// Write nodes.conf ([`ClusterState::to_conf`]), and fsync it when `fsync`.
    SaveConfig {
        fsync: bool,
    },
    /// The cluster state changed (CLUSTER INFO, whether queries are served).
    HealthChanged(Health),
    /// This node must now replicate `master` (it lost its last slot to it).
    ReplicateFrom(NodeId),
    /// This replica won an election: stop replicating and serve as a master.
    PromoteMyself,
    /// A replica's manual failover: hold client writes until `until` (ms) or UnpauseWrites.
    PauseWrites {
        until: u64,
    },
    UnpauseWrites,
    /// This node no longer owns `slot`: its keys there must go.
    DeleteKeysInSlot(u16),
    /// These slots lost their owner in our view (deleted, or moved to another node): the
    /// clients subscribed here to shard channels of them are unsubscribed, each told with a
    /// `sunsubscribe` (Redis's `removeChannelsInSlot`, on masters and replicas alike).
    UnsubscribeShardChannels(Box<SlotSet>),
    /// A PUBLISH (or, `shard`, SPUBLISH) another node propagated: deliver it to this node's
    /// subscribers.
    Deliver {
        channel: Vec<u8>,
        message: Vec<u8>,
        shard: bool,
    },
    Log {
        level: LogLevel,
        line: String,
    },
}

/// Whether we have a link to a node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LinkStatus {
    None,
    /// Connect issued at this time, not yet answered.
    Connecting {
        since: u64,
    },
    /// Connected since this time.
    Up {
        since: u64,
    },
}

/// A master's report that a node is unreachable, and when we last heard it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FailReport {
    pub reporter: NodeId,
    pub time: u64,
}

/// One node of the table.
#[derive(Clone, Debug)]
pub struct Node {
    pub id: NodeId,
    pub flags: NodeFlags,
    pub ip: String,
    pub port: u16,
    pub pport: u16,
    pub cport: u16,
    pub hostname: Vec<u8>,
    pub human_nodename: Vec<u8>,
    pub shard_id: NodeId,
    pub master: Option<NodeId>,
    pub replicas: Vec<NodeId>,
    pub config_epoch: u64,
    /// ms of the PING in flight, 0 if none.
    pub ping_sent: u64,
    pub pong_received: u64,
    pub data_received: u64,
    pub fail_time: u64,
    /// When we last voted for a replica of this master.
    pub voted_time: u64,
    /// When the node was added (handshake nodes expire from here).
    pub ctime: u64,
    pub repl_offset: u64,
    pub slots: SlotSet,
    pub fail_reports: Vec<FailReport>,
    pub link: LinkStatus,
    pub inbound: Option<u64>,
    /// Value of the ping counter when this node was last put in a ping's gossip.
    last_in_ping_gossip: u64,
}

impl Node {
    fn new(id: NodeId, flags: NodeFlags, now: u64) -> Node {
        Node {
            id,
            flags,
            ip: String::new(),
            port: 0,
            pport: 0,
            cport: 0,
            hostname: Vec::new(),
            human_nodename: Vec::new(),
            shard_id: NodeId::NULL,
            master: None,
            replicas: Vec::new(),
            config_epoch: 0,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            fail_time: 0,
            voted_time: 0,
            ctime: now,
            repl_offset: 0,
            slots: SlotSet::new(),
            fail_reports: Vec::new(),
            link: LinkStatus::None,
            inbound: None,
            last_in_ping_gossip: 0,
        }
    }

    pub fn is_master(&self) -> bool {
        self.flags.contains(NodeFlags::MASTER)
    }
    pub fn in_handshake(&self) -> bool {
        self.flags.contains(NodeFlags::HANDSHAKE)
    }
    pub fn timed_out(&self) -> bool {
        self.flags.contains(NodeFlags::PFAIL)
    }
    pub fn failed(&self) -> bool {
        self.flags.contains(NodeFlags::FAIL)
    }
    pub(crate) fn has_link(&self) -> bool {
        matches!(self.link, LinkStatus::Up { .. })
    }
    pub(crate) fn name_for_log(&self) -> String {
        format!(
            "{} ({})",
            self.id,
            String::from_utf8_lossy(&self.human_nodename)
        )
    }
}

/// A small deterministic generator (xorshift64*): node ids and the cron's random choices.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(crate) fn node_id(&mut self) -> NodeId {
        let mut id = [0u8; NAME_LEN];
        for b in id.iter_mut() {
            *b = b"0123456789abcdef"[(self.next() >> 33) as usize & 15];
        }
        NodeId(id)
    }
}

/// The whole cluster state of one node.
#[derive(Debug)]
pub struct ClusterState {
    pub config: Config,
    pub(crate) myself: NodeId,
    pub(crate) nodes: BTreeMap<NodeId, Node>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    /// Owner of each slot.
    pub(crate) slots: Vec<Option<NodeId>>,
    /// Slots whose owner stopped claiming them in its messages (it gave them away, and the
    /// new owner has not told us yet): they stay bound, so clients are redirected rather
    /// than refused, but any claim takes them and UPDATEs do not advertise them (Redis's
    /// `owner_not_claiming_slot`).
    pub(crate) unclaimed: SlotSet,
    /// Slots deleted since the last `before_sleep` (see [`Action::UnsubscribeShardChannels`]).
    slots_deleted: SlotSet,
    pub migrating: BTreeMap<u16, NodeId>,
    pub importing: BTreeMap<u16, NodeId>,
    health: Health,
    /// Masters serving at least one slot.
    pub(crate) size: usize,
    among_minority_time: u64,
    first_update: Option<u64>,
    /// Forgotten nodes and the second their ban ends.
    pub(crate) blacklist: BTreeMap<NodeId, u64>,
    todo_save: bool,
    todo_fsync: bool,
    pub(crate) todo_update_state: bool,
    iteration: u64,
    pings_sent: u64,
    /// Our replication offset, sent in headers.
    pub repl_offset: u64,
    /// How old our copy of the master's data is, ms (the driver keeps it current on a replica).
    pub repl_data_age: u64,
    pub(crate) election: crate::election::Election,
    pub(crate) mf: crate::manual_failover::ManualFailover,
    pub(crate) orphans: crate::replica_migration::Orphans,
    changes: u64,
    pub(crate) rng: Rng,
    pub(crate) actions: Vec<Action>,
}

impl ClusterState {
    /// A fresh node: a master with a random id and shard id, no slots, epoch 0.
    pub fn new(config: Config, ip: &str, port: u16, cport: u16, seed: u64, now: u64) -> Self {
        let mut rng = Rng(seed | 1);
        let id = rng.node_id();
        let mut me = Node::new(id, NodeFlags::MYSELF | NodeFlags::MASTER, now);
        me.ip = ip.to_string();
        me.port = port;
        me.cport = cport;
        me.shard_id = rng.node_id();
        me.hostname = config.hostname.clone();
        me.human_nodename = config.human_nodename.clone();
        let mut state = Self::empty(config, id, rng);
        state.nodes.insert(id, me);
        state.todo_save = true;
        state.todo_update_state = true;
        state
    }

    fn empty(config: Config, myself: NodeId, rng: Rng) -> Self {
        ClusterState {
            config,
            myself,
            nodes: BTreeMap::new(),
            current_epoch: 0,
            last_vote_epoch: 0,
            slots: vec![None; CLUSTER_SLOTS],
            unclaimed: SlotSet::new(),
            slots_deleted: SlotSet::new(),
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            health: Health::Fail,
            size: 0,
            among_minority_time: 0,
            first_update: None,
            blacklist: BTreeMap::new(),
            todo_save: false,
            todo_fsync: false,
            todo_update_state: false,
            iteration: 0,
            pings_sent: 0,
            repl_offset: 0,
            repl_data_age: 0,
            election: Default::default(),
            mf: Default::default(),
            orphans: Default::default(),
            changes: 0,
            rng,
            actions: Vec::new(),
        }
    }

    /// The state a nodes.conf describes (as `clusterLoadConfig`): every link down, a non-zero
    /// ping/pong time read as "now".
    pub fn from_conf(config: Config, conf: &NodesConf, seed: u64, now: u64) -> Self {
        let me = conf.myself().expect("a parsed NodesConf names myself").id;
        let mut state = Self::empty(config, me, Rng(seed | 1));
        state.current_epoch = conf.current_epoch;
        state.last_vote_epoch = conf.last_vote_epoch;
        for line in &conf.nodes {
            let mut n = Node::new(line.id, line.flags, now);
            n.ip = line.ip.clone();
            n.port = line.port;
            n.cport = line.cport;
            n.hostname = line.hostname.clone().into_bytes();
            n.human_nodename = line.human_nodename.clone().unwrap_or_default().into_bytes();
            n.shard_id = line.shard_id.unwrap_or_else(|| state.rng.node_id());
            n.master = line.master;
            n.config_epoch = line.config_epoch;
            n.ping_sent = if line.ping_sent != 0 { now } else { 0 };
            n.pong_received = if line.pong_received != 0 { now } else { 0 };
            state.nodes.insert(n.id, n);
            for slot in line.slots.iter() {
                state.add_slot(line.id, slot);
            }
            if line.id == me {
                for m in &line.migrations {
                    match *m {
                        SlotMigration::Migrating { slot, node } => {
                            state.migrating.insert(slot, node);
                        }
                        SlotMigration::Importing { slot, node } => {
                            state.importing.insert(slot, node);
                        }
                    }
                }
            }
        }
        let links: Vec<(NodeId, NodeId)> = state
            .nodes
            .values()
            .filter_map(|n| n.master.map(|m| (n.id, m)))
            .collect();
        for (replica, master) in links {
            if let Some(m) = state.nodes.get_mut(&master) {
                m.replicas.push(replica);
                // A master that has had a replica is a target for replica migration.
                m.flags.insert(NodeFlags::MIGRATE_TO);
            }
        }
        state.todo_update_state = true;
        state
    }

    /// nodes.conf for this state (myself first, then by id).
    pub fn to_conf(&self) -> NodesConf {
        let mut nodes = vec![self.node_line(self.me())];
        nodes.extend(
            self.nodes
                .values()
                .filter(|n| n.id != self.myself)
                .map(|n| self.node_line(n)),
        );
        NodesConf {
            nodes,
            current_epoch: self.current_epoch,
            last_vote_epoch: self.last_vote_epoch,
        }
    }

    fn node_line(&self, n: &Node) -> NodeLine {
        let is_me = n.id == self.myself;
        let mut migrations = Vec::new();
        if is_me {
            // Redis lists them slot by slot, migrating before importing for the same slot.
            for slot in 0..CLUSTER_SLOTS as u16 {
                if let Some(&node) = self.migrating.get(&slot) {
                    migrations.push(SlotMigration::Migrating { slot, node });
                }
                if let Some(&node) = self.importing.get(&slot) {
                    migrations.push(SlotMigration::Importing { slot, node });
                }
            }
        }
        // A replica shows its master's configEpoch.
        let config_epoch = match n.master.and_then(|m| self.nodes.get(&m)) {
            Some(m) if !n.is_master() => m.config_epoch,
            _ => n.config_epoch,
        };
        NodeLine {
            id: n.id,
            ip: n.ip.clone(),
            port: n.port,
            cport: n.cport,
            hostname: String::from_utf8_lossy(&n.hostname).into_owned(),
            shard_id: Some(n.shard_id),
            human_nodename: Some(String::from_utf8_lossy(&n.human_nodename).into_owned()),
            tcp_port: None,
            tls_port: Some(0),
            flags: n.flags,
            master: if n.is_master() { None } else { n.master },
            ping_sent: n.ping_sent as i64,
            pong_received: n.pong_received as i64,
            config_epoch,
            link: if is_me || n.has_link() {
                LinkState::Connected
            } else {
                LinkState::Disconnected
            },
            slots: if n.is_master() {
                n.slots.clone()
            } else {
                SlotSet::new()
            },
            migrations,
        }
    }

    /// CLUSTER NODES, one line per node as `to_conf` orders them.
    pub fn cluster_nodes(&self) -> String {
        let mut out = String::new();
        for line in self.to_conf().nodes {
            out.push_str(&line.to_line(false));
            out.push('\n');
        }
        out
    }

    pub fn myself(&self) -> NodeId {
        self.myself
    }
    pub(crate) fn me(&self) -> &Node {
        &self.nodes[&self.myself]
    }
    pub(crate) fn me_mut(&mut self) -> &mut Node {
        self.nodes
            .get_mut(&self.myself)
            .expect("myself is in the table")
    }
    pub fn node(&self, id: &NodeId) -> Option<&Node> {
        self.nodes.get(id)
    }
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.values()
    }
    pub fn health(&self) -> Health {
        self.health
    }
    /// Masters serving slots (CLUSTER INFO `cluster_size`).
    pub fn size(&self) -> usize {
        self.size
    }
    /// Free, or bound to a node that no longer claims it: the next claim takes it whatever
    /// its configEpoch (Redis's `isSlotUnclaimed`).
    pub(crate) fn slot_unclaimed(&self, slot: u16) -> bool {
        self.slots[slot as usize].is_none() || self.unclaimed.contains(slot)
    }

    pub fn slot_owner(&self, slot: u16) -> Option<NodeId> {
        self.slots.get(slot as usize).copied().flatten()
    }

    /// The actions decided since the last call.
    pub fn take_actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.actions)
    }

    pub(crate) fn log(&mut self, level: LogLevel, line: String) {
        self.actions.push(Action::Log { level, line });
    }

    pub(crate) fn save(&mut self, fsync: bool) {
        self.todo_save = true;
        self.todo_fsync |= fsync;
        self.changes += 1;
    }

    /// Counts the changes worth saving and of the health: a driver republishing what it derives
    /// from the state (its routing table) looks again only when this moved.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    // ---- slots -------------------------------------------------------------------------

    pub(crate) fn add_slot(&mut self, id: NodeId, slot: u16) -> bool {
        if self.slots[slot as usize].is_some() {
            return false;
        }
        let Some(n) = self.nodes.get_mut(&id) else {
            return false;
        };
        n.slots.insert(slot);
        self.slots[slot as usize] = Some(id);
        true
    }

    pub(crate) fn del_slot(&mut self, slot: u16) -> bool {
        let Some(owner) = self.slots[slot as usize].take() else {
            return false;
        };
        self.unclaimed.remove(slot);
        self.slots_deleted.insert(slot);
        if let Some(n) = self.nodes.get_mut(&owner) {
            n.slots.remove(slot);
        }
        true
    }

    fn del_node_slots(&mut self, id: NodeId) {
        let slots: Vec<u16> = match self.nodes.get(&id) {
            Some(n) => n.slots.iter().collect(),
            None => return,
        };
        for s in slots {
            self.del_slot(s);
        }
    }

    /// CLUSTER ADDSLOTS for this node (the caller checked the slots are free).
    pub fn add_my_slots(&mut self, slots: &[u16]) {
        let me = self.myself;
        for &s in slots {
            self.importing.remove(&s);
            self.add_slot(me, s);
        }
        self.save(false);
        self.todo_update_state = true;
    }

    /// CLUSTER SET-CONFIG-EPOCH / BUMPEPOCH's effect: myself's configEpoch.
    pub fn set_my_config_epoch(&mut self, epoch: u64) {
        self.me_mut().config_epoch = epoch;
        if epoch > self.current_epoch {
            self.current_epoch = epoch;
        }
        self.save(true);
    }

    /// CLUSTER SETSLOT <slot> NODE <node>: `node` serves the slot from now on. When this node
    /// takes a slot it was importing, it bumps its configEpoch without consensus so the rest
    /// of the cluster accepts the new owner.
    pub fn set_slot_node(&mut self, slot: u16, node: NodeId) -> bool {
        if slot as usize >= CLUSTER_SLOTS || !self.nodes.contains_key(&node) {
            return false;
        }
        if self.slots[slot as usize] == Some(self.myself) && node != self.myself {
            self.migrating.remove(&slot);
        }
        self.del_slot(slot);
        self.add_slot(node, slot);
        if node == self.myself && self.importing.remove(&slot).is_some() {
            self.bump_epoch_without_consensus();
        }
        self.save(true);
        self.todo_update_state = true;
        true
    }

    /// CLUSTER BUMPEPOCH: a new configEpoch, the greatest, unless ours already is (and is not
    /// 0). Returns whether it changed.
    pub fn bump_epoch_without_consensus(&mut self) -> bool {
        let max = self
            .nodes
            .values()
            .map(|n| n.config_epoch)
            .max()
            .unwrap_or(0);
        let mine = self.me().config_epoch;
        if mine != 0 && mine == max {
            return false;
        }
        self.current_epoch = self.current_epoch.saturating_add(1);
        let epoch = self.current_epoch;
        self.me_mut().config_epoch = epoch;
        self.save(true);
        self.log(LogLevel::Notice, format!("New configEpoch set to {epoch}"));
        true
    }

    // ---- node table --------------------------------------------------------------------

    /// CLUSTER MEET: start a handshake with `ip:port@cport` unless one is already under way
    /// with that address (then `false`, Redis's "already in handshake").
    pub fn meet(&mut self, ip: &str, port: u16, cport: u16, now: u64) -> bool {
        let busy = self
            .nodes
            .values()
            .any(|n| n.in_handshake() && n.ip == ip && n.port == port && n.cport == cport);
        if busy {
            return false;
        }
        let id = self.rng.node_id();
        let mut n = Node::new(id, NodeFlags::HANDSHAKE | NodeFlags::MEET, now);
        n.shard_id = self.rng.node_id();
        n.ip = ip.to_string();
        n.port = port;
        n.cport = cport;
        self.nodes.insert(id, n);
        true
    }

    pub(crate) fn del_node(&mut self, id: NodeId) {
        // Its reports about others go, and every slot it served (or was moving) is forgotten.
        for n in self.nodes.values_mut() {
            n.fail_reports.retain(|r| r.reporter != id);
        }
        self.migrating.retain(|_, n| *n != id);
        self.importing.retain(|_, n| *n != id);
        self.del_node_slots(id);
        let Some(node) = self.nodes.remove(&id) else {
            return;
        };
        if let Some(m) = node.master.and_then(|m| self.nodes.get_mut(&m)) {
            m.replicas.retain(|r| *r != id);
        }
        for r in &node.replicas {
            if let Some(r) = self.nodes.get_mut(r) {
                r.master = None;
            }
        }
        if node.link != LinkStatus::None {
            self.actions.push(Action::Close(Link::Outbound(id)));
        }
        if let Some(l) = node.inbound {
            self.actions.push(Action::Close(Link::Inbound(l)));
        }
        self.save(false);
        self.todo_update_state = true;
    }

    /// CLUSTER FORGET: drop the node and ignore gossip about it for a minute.
    pub fn forget(&mut self, id: NodeId, now: u64) -> bool {
        if id == self.myself || !self.nodes.contains_key(&id) {
            return false;
        }
        self.blacklist.insert(id, now / 1000 + BLACKLIST_TTL);
        self.del_node(id);
        true
    }

    pub(crate) fn blacklisted(&mut self, id: &NodeId, now: u64) -> bool {
        let secs = now / 1000;
        self.blacklist.retain(|_, until| *until >= secs);
        self.blacklist.contains_key(id)
    }

    fn rename_node(&mut self, from: NodeId, to: NodeId) {
        if let Some(mut n) = self.nodes.remove(&from) {
            self.log(LogLevel::Debug, format!("Renaming node {from} into {to}"));
            n.id = to;
            if n.link != LinkStatus::None {
                self.actions.push(Action::RenameLink { from, to });
            }
            self.nodes.insert(to, n);
            // Every reference to the old name follows.
            let rename = |id: &mut NodeId| {
                if *id == from {
                    *id = to;
                }
            };
            self.slots.iter_mut().flatten().for_each(rename);
            self.migrating.values_mut().for_each(rename);
            self.importing.values_mut().for_each(rename);
            for n in self.nodes.values_mut() {
                n.master.iter_mut().for_each(rename);
                n.replicas.iter_mut().for_each(rename);
                n.fail_reports
                    .iter_mut()
                    .for_each(|r| rename(&mut r.reporter));
            }
        }
    }

    pub(crate) fn set_node_as_master(&mut self, id: NodeId) {
        let Some(n) = self.nodes.get(&id) else { return };
        if n.is_master() {
            return;
        }
        let old_master = n.master;
        if let Some(m) = old_master.and_then(|m| self.nodes.get_mut(&m)) {
            m.replicas.retain(|r| *r != id);
        }
        let is_me = id == self.myself;
        let n = self.nodes.get_mut(&id).expect("checked");
        if old_master.is_some() && !is_me {
            // A promoted replica's master had replicas: a target for replica migration.
            n.flags.insert(NodeFlags::MIGRATE_TO);
        }
        n.flags.remove(NodeFlags::REPLICA);
        n.flags.insert(NodeFlags::MASTER);
        n.master = None;
        self.save(false);
        self.todo_update_state = true;
    }

    // ---- failure reports -----------------------------------------------------------------

    fn add_failure_report(&mut self, failing: NodeId, reporter: NodeId, now: u64) -> bool {
        let Some(n) = self.nodes.get_mut(&failing) else {
            return false;
        };
        if let Some(r) = n.fail_reports.iter_mut().find(|r| r.reporter == reporter) {
            r.time = now;
            return false;
        }
        n.fail_reports.push(FailReport {
            reporter,
            time: now,
        });
        true
    }

    fn del_failure_report(&mut self, failing: NodeId, reporter: NodeId, now: u64) -> bool {
        self.clean_failure_reports(failing, now);
        let Some(n) = self.nodes.get_mut(&failing) else {
            return false;
        };
        let before = n.fail_reports.len();
        n.fail_reports.retain(|r| r.reporter != reporter);
        before != n.fail_reports.len()
    }

    fn clean_failure_reports(&mut self, id: NodeId, now: u64) {
        let max_age = self.config.node_timeout * FAIL_REPORT_VALIDITY_MULT;
        if let Some(n) = self.nodes.get_mut(&id) {
            n.fail_reports.retain(|r| now - r.time.min(now) <= max_age);
        }
    }

    /// Valid failure reports about a node (CLUSTER COUNT-FAILURE-REPORTS).
    pub fn failure_report_count(&mut self, id: NodeId, now: u64) -> usize {
        self.clean_failure_reports(id, now);
        self.nodes.get(&id).map_or(0, |n| n.fail_reports.len())
    }

    /// PFAIL becomes FAIL once a majority of the masters (myself included when a master)
    /// reported it; a master then tells everyone.
    fn mark_failing_if_needed(&mut self, id: NodeId, now: u64) {
        let quorum = self.size / 2 + 1;
        let Some(n) = self.nodes.get(&id) else { return };
        if !n.timed_out() || n.failed() {
            return;
        }
        let mut failures = self.failure_report_count(id, now);
        if self.me().is_master() {
            failures += 1;
        }
        if failures < quorum {
            return;
        }
        let name = self.nodes[&id].name_for_log();
        self.log(
            LogLevel::Notice,
            format!("Marking node {name} as failing (quorum reached)."),
        );
        let n = self.nodes.get_mut(&id).expect("checked");
        n.flags.remove(NodeFlags::PFAIL);
        n.flags.insert(NodeFlags::FAIL);
        n.fail_time = now;
        if self.me().is_master() {
            let msg = Msg::new(self.header(), Body::Fail(id));
            self.broadcast(msg);
        }
        self.save(true);
        self.todo_update_state = true;
    }

    /// A FAIL node that answers again: replicas and slot-less masters at once; a master with
    /// slots only after a while with nobody taking them over.
    fn clear_failure_if_needed(&mut self, id: NodeId, now: u64) {
        let timeout = self.config.node_timeout;
        let Some(n) = self.nodes.get(&id) else { return };
        let name = n.name_for_log();
        if !n.is_master() || n.slots.is_empty() {
            let role = if n.is_master() {
                "master without slots"
            } else {
                "replica"
            };
            self.log(
                LogLevel::Notice,
                format!("Clear FAIL state for node {name}:{role} is reachable again."),
            );
        } else if now.saturating_sub(n.fail_time) > timeout * FAIL_UNDO_TIME_MULT {
            self.log(LogLevel::Notice, format!("Clear FAIL state for node {name}: is reachable again and nobody is serving its slots after some time."));
        } else {
            return;
        }
        self.nodes
            .get_mut(&id)
            .expect("checked")
            .flags
            .remove(NodeFlags::FAIL);
        self.save(false);
        self.todo_update_state = true;
    }

    // ---- outgoing messages ----------------------------------------------------------------

    /// Our header: a replica advertises its master's slots and configEpoch.
    pub(crate) fn header(&self) -> Header {
        let me = self.me();
        let master = me.master.and_then(|m| self.nodes.get(&m));
        let (slots, config_epoch) = match master {
            Some(m) if !me.is_master() => (m.slots.clone(), m.config_epoch),
            _ => (me.slots.clone(), me.config_epoch),
        };
        Header {
            port: me.port,
            current_epoch: self.current_epoch,
            config_epoch,
            offset: self.repl_offset,
            sender: me.id,
            slots,
            replicaof: if me.is_master() { None } else { me.master },
            myip: Ip::new(&self.config.announce_ip).unwrap_or_default(),
            pport: me.pport,
            cport: me.cport,
            flags: me.flags,
            state: match self.health {
                Health::Ok => WireState::Ok,
                Health::Fail => WireState::Fail,
            },
            mflags: msg::MsgFlags([
                if self.paused_for_failover() {
                    msg::MsgFlags::PAUSED
                } else {
                    0
                },
                0,
                0,
            ]),
        }
    }

    fn gossip_entry(n: &Node) -> Gossip {
        Gossip {
            node: n.id,
            ping_sent: (n.ping_sent / 1000) as u32,
            pong_received: (n.pong_received / 1000) as u32,
            ip: Ip::new(&n.ip).unwrap_or_default(),
            port: n.port,
            cport: n.cport,
            flags: n.flags,
            pport: n.pport,
        }
    }

    /// A PING, PONG or MEET with gossip about a few random nodes (a tenth of the table, at
    /// least 3) plus every node in PFAIL, and our ping extensions.
    pub(crate) fn send_ping(&mut self, link: Link, kind: u16, now: u64) {
        self.pings_sent += 1;
        let total = self.nodes.len();
        let mut fresh = total as i64 - 2;
        let wanted = ((total / 10).max(3) as i64).min(fresh).max(0) as usize;
        if let (Link::Outbound(id), msg::msg_type::PING) = (link, kind) {
            if let Some(n) = self.nodes.get_mut(&id) {
                n.ping_sent = now;
            }
        }
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        let mut gossip = Vec::new();
        let mut tries = wanted * 3;
        while fresh > 0 && gossip.len() < wanted && tries > 0 {
            tries -= 1;
            let id = ids[self.rng.below(ids.len())];
            let n = &self.nodes[&id];
            if id == self.myself || n.timed_out() {
                continue;
            }
            if n.flags.contains(NodeFlags::HANDSHAKE)
                || n.flags.contains(NodeFlags::NOADDR)
                || (!n.has_link() && n.slots.is_empty())
            {
                fresh -= 1;
                continue;
            }
            if n.last_in_ping_gossip == self.pings_sent {
                continue;
            }
            gossip.push(Self::gossip_entry(n));
            self.nodes.get_mut(&id).expect("listed").last_in_ping_gossip = self.pings_sent;
            fresh -= 1;
        }
        for n in self.nodes.values() {
            if n.timed_out()
                && !n.flags.contains(NodeFlags::HANDSHAKE)
                && !n.flags.contains(NodeFlags::NOADDR)
            {
                gossip.push(Self::gossip_entry(n));
            }
        }
        let ping = Ping {
            gossip,
            extensions: self.ping_extensions(now),
        };
        let body = match kind {
            msg::msg_type::PING => Body::Ping(ping),
            msg::msg_type::MEET => Body::Meet(ping),
            _ => Body::Pong(ping),
        };
        let msg = Msg::new(self.header(), body);
        self.actions.push(Action::Send {
            link,
            msg: Box::new(msg),
        });
    }

    fn ping_extensions(&self, now: u64) -> Vec<PingExt> {
        let me = self.me();
        let mut exts = Vec::new();
        if !me.hostname.is_empty() {
            exts.push(PingExt::Hostname(me.hostname.clone()));
        }
        if !me.human_nodename.is_empty() {
            exts.push(PingExt::HumanNodename(me.human_nodename.clone()));
        }
        let secs = now / 1000;
        for (&node, &until) in &self.blacklist {
            if until >= secs {
                exts.push(PingExt::ForgottenNode {
                    node,
                    ttl: until - secs,
                });
            }
        }
        exts.push(PingExt::ShardId(me.shard_id));
        exts
    }

    /// A message to every node we have a link to, handshake nodes aside.
    pub(crate) fn broadcast(&mut self, msg: Msg) {
        let targets: Vec<NodeId> = self
            .nodes
            .values()
            .filter(|n| n.id != self.myself && !n.in_handshake() && n.has_link())
            .map(|n| n.id)
            .collect();
        for id in targets {
            self.actions.push(Action::Send {
                link: Link::Outbound(id),
                msg: Box::new(msg.clone()),
            });
        }
    }

    /// Tell `to` the configuration of `about` (its slots and configEpoch).
    fn send_update(&mut self, to: NodeId, about: NodeId) {
        let Some(to_node) = self.nodes.get(&to) else {
            return;
        };
        if !to_node.has_link() {
            return;
        }
        let n = &self.nodes[&about];
        let mut slots = n.slots.clone();
        for s in self.unclaimed.iter() {
            slots.remove(s);
        }
        let body = Body::Update(Box::new(msg::Update {
            config_epoch: n.config_epoch,
            node: about,
            slots,
        }));
        let msg = Msg::new(self.header(), body);
        self.actions.push(Action::Send {
            link: Link::Outbound(to),
            msg: Box::new(msg),
        });
    }

    // ---- links -------------------------------------------------------------------------

    /// The outbound link of `id` is up: greet with MEET if the node was met, else PING,
    /// keeping a pending ping's time so failure detection still counts from it.
    pub fn link_connected(&mut self, id: NodeId, now: u64) {
        let Some(n) = self.nodes.get_mut(&id) else {
            self.actions.push(Action::Close(Link::Outbound(id)));
            return;
        };
        n.link = LinkStatus::Up { since: now };
        let old_ping_sent = n.ping_sent;
        let kind = if n.flags.contains(NodeFlags::MEET) {
            msg::msg_type::MEET
        } else {
            msg::msg_type::PING
        };
        n.flags.remove(NodeFlags::MEET);
        self.send_ping(Link::Outbound(id), kind, now);
        if old_ping_sent != 0 {
            self.nodes.get_mut(&id).expect("present").ping_sent = old_ping_sent;
        }
    }

    /// Connecting failed: as Redis, a node we cannot reach counts as pinged from now.
    pub fn link_failed(&mut self, id: NodeId, now: u64) {
        if let Some(n) = self.nodes.get_mut(&id) {
            n.link = LinkStatus::None;
            if n.ping_sent == 0 {
                n.ping_sent = now;
            }
            let (ip, cport) = (n.ip.clone(), n.cport);
            self.log(
                LogLevel::Verbose,
                format!("Connection with Node {id} at {ip}:{cport} failed"),
            );
        }
    }

    /// A link broke (I/O error, closed by the peer).
    pub fn link_closed(&mut self, link: Link) {
        match link {
            Link::Outbound(id) => {
                if let Some(n) = self.nodes.get_mut(&id) {
                    n.link = LinkStatus::None;
                }
            }
            Link::Inbound(l) => {
                for n in self.nodes.values_mut() {
                    if n.inbound == Some(l) {
                        n.inbound = None;
                    }
                }
            }
        }
    }

    fn free_outbound(&mut self, id: NodeId) {
        if let Some(n) = self.nodes.get_mut(&id) {
            if n.link != LinkStatus::None {
                n.link = LinkStatus::None;
                self.actions.push(Action::Close(Link::Outbound(id)));
            }
        }
    }

    // ---- incoming messages ---------------------------------------------------------------

    /// A message read from `link`; `peer_ip` is the address the connection comes from (used
    /// when the sender announces none).
    pub fn handle_message(&mut self, link: Link, peer_ip: &str, m: &Msg, now: u64) {
        let h = &m.header;
        let kind = m.msg_type();
        // The sender: the node of our outbound link, else whoever the header names.
        let sender = match link {
            Link::Outbound(id) if self.nodes.get(&id).is_some_and(|n| !n.in_handshake()) => {
                Some(id)
            }
            _ => self.nodes.contains_key(&h.sender).then_some(h.sender),
        };
        if let (Some(s), Link::Inbound(l)) = (sender, link) {
            self.nodes.get_mut(&s).expect("known").inbound = Some(l);
        }
        if let Some(s) = sender {
            self.nodes.get_mut(&s).expect("known").data_received = now;
        }
        let sender_ready = sender.filter(|s| !self.nodes[s].in_handshake());
        if let Some(s) = sender_ready {
            if h.current_epoch > self.current_epoch {
                self.current_epoch = h.current_epoch;
                self.save(true);
            }
            let n = self.nodes.get_mut(&s).expect("known");
            if h.config_epoch > n.config_epoch {
                n.config_epoch = h.config_epoch;
                self.save(true);
            }
            self.nodes.get_mut(&s).expect("known").repl_offset = h.offset;
            self.note_paused_master_offset(s, h);
        }

        match &m.body {
            Body::Ping(p) | Body::Meet(p) | Body::Pong(p) => {
                if kind != msg::msg_type::PONG {
                    if sender.is_none() && kind == msg::msg_type::MEET {
                        // Someone met us: learn it under a temporary name until our own
                        // PING gets its PONG.
                        let id = self.rng.node_id();
                        let mut n = Node::new(id, NodeFlags::HANDSHAKE, now);
                        n.shard_id = self.rng.node_id();
                        n.ip = pick_ip(&h.myip, peer_ip);
                        n.port = h.port;
                        n.pport = h.pport;
                        n.cport = h.cport;
                        self.nodes.insert(id, n);
                        self.save(false);
                        self.process_gossip(None, h, p, now);
                    }
                    self.send_ping(link, msg::msg_type::PONG, now);
                }
                self.handle_ping_common(link, sender, peer_ip, m, p, now);
            }
            Body::Fail(about) => {
                let Some(s) = sender else {
                    self.log(
                        LogLevel::Notice,
                        format!(
                            "Ignoring FAIL message from unknown node {} about {about}",
                            h.sender
                        ),
                    );
                    return;
                };
                let Some(failing) = self.nodes.get(about) else {
                    return;
                };
                if failing.flags.contains(NodeFlags::FAIL)
                    || failing.flags.contains(NodeFlags::MYSELF)
                {
                    return;
                }
                let (from, what) = (self.nodes[&s].name_for_log(), failing.name_for_log());
                self.log(
                    LogLevel::Notice,
                    format!("FAIL message received from {from} about {what}"),
                );
                let n = self.nodes.get_mut(about).expect("checked");
                n.flags.insert(NodeFlags::FAIL);
                n.flags.remove(NodeFlags::PFAIL);
                n.fail_time = now;
                self.save(false);
                self.todo_update_state = true;
            }
            Body::Update(u) => {
                if sender.is_none() {
                    return;
                }
                let Some(n) = self.nodes.get(&u.node) else {
                    return;
                };
                if n.config_epoch >= u.config_epoch {
                    return;
                }
                if u.node == self.myself {
                    self.log(
                        LogLevel::Notice,
                        "Discarding UPDATE message about myself.".into(),
                    );
                    return;
                }
                if !n.is_master() {
                    self.set_node_as_master(u.node);
                }
                self.nodes.get_mut(&u.node).expect("checked").config_epoch = u.config_epoch;
                self.save(true);
                self.update_slots_config_with(u.node, u.config_epoch, &u.slots);
            }
            Body::FailoverAuthRequest => {
                if let Some(s) = sender {
                    self.handle_auth_request(s, h, now);
                }
            }
            Body::FailoverAuthAck => {
                if let Some(s) = sender {
                    self.handle_auth_ack(s, h);
                }
            }
            Body::MfStart => {
                if let Some(s) = sender {
                    self.handle_mfstart(s, now);
                }
            }
            Body::Publish(p) | Body::PublishShard(p) if sender.is_some() => {
                self.actions.push(Action::Deliver {
                    channel: p.channel.clone(),
                    message: p.message.clone(),
                    shard: matches!(m.body, Body::PublishShard(_)),
                });
            }
            // Module messages: tern has no modules.
            _ => {}
        }
    }

    /// PUBLISH in cluster mode reaches every node; SPUBLISH the other nodes of this shard (its
    /// master and replicas), as Redis's `clusterPropagatePublish`.
    pub fn publish(&mut self, channel: &[u8], message: &[u8], shard: bool) {
        let publish = msg::Publish {
            channel: channel.to_vec(),
            message: message.to_vec(),
        };
        if !shard {
            let msg = Msg::new(self.header(), Body::Publish(publish));
            self.broadcast(msg);
            return;
        }
        let me = self.me();
        let master = if me.is_master() {
            Some(self.myself)
        } else {
            me.master
        };
        let mut shard_nodes: Vec<NodeId> = Vec::new();
        if let Some(m) = master.and_then(|m| self.nodes.get(&m)) {
            shard_nodes.push(m.id);
            shard_nodes.extend(m.replicas.iter().copied());
        }
        let msg = Msg::new(self.header(), Body::PublishShard(publish));
        for id in shard_nodes {
            let Some(n) = self.nodes.get(&id) else {
                continue;
            };
            if id == self.myself || n.in_handshake() || !n.has_link() {
                continue;
            }
            self.actions.push(Action::Send {
                link: Link::Outbound(id),
                msg: Box::new(msg.clone()),
            });
        }
    }

    /// What PING, PONG and MEET have in common, up to where the message stops.
    fn handle_ping_common(
        &mut self,
        link: Link,
        sender: Option<NodeId>,
        peer_ip: &str,
        m: &Msg,
        p: &Ping,
        now: u64,
    ) {
        let h = &m.header;
        let kind = m.msg_type();
        if let Link::Outbound(lid) = link {
            let Some(ln) = self.nodes.get(&lid) else {
                return;
            };
            if ln.in_handshake() {
                if let Some(s) = sender {
                    let name = self.nodes[&s].name_for_log();
                    self.log(
                        LogLevel::Verbose,
                        format!("Handshake: we already know node {name}, updating the address if needed."),
                    );
                    if self.update_address_if_needed(s, link, peer_ip, h) {
                        self.save(false);
                        self.todo_update_state = true;
                    }
                    self.del_node(lid);
                    return;
                }
                self.rename_node(lid, h.sender);
                self.log(
                    LogLevel::Debug,
                    format!("Handshake with node {} completed.", h.sender),
                );
                let n = self.nodes.get_mut(&h.sender).expect("renamed");
                n.flags.remove(NodeFlags::HANDSHAKE);
                n.flags.insert(NodeFlags(
                    h.flags.bits() & (NodeFlags::MASTER.bits() | NodeFlags::REPLICA.bits()),
                ));
                self.save(false);
            } else if lid != h.sender {
                self.log(LogLevel::Debug, format!("PONG contains mismatching sender ID. About node {lid} added {} ms ago, having flags {}", now.saturating_sub(ln.ctime), ln.flags.bits()));
                let n = self.nodes.get_mut(&lid).expect("checked");
                n.flags.insert(NodeFlags::NOADDR);
                n.ip.clear();
                n.port = 0;
                n.pport = 0;
                n.cport = 0;
                self.free_outbound(lid);
                self.save(false);
                return;
            }
        }
        // The node of an outbound link, under its new name after a handshake. As Redis, the
        // rest of a handshake's first message is not read as coming from a known sender.
        let link_node = match link {
            Link::Outbound(lid) if !self.nodes.contains_key(&lid) => Some(h.sender),
            Link::Outbound(lid) => Some(lid),
            Link::Inbound(_) => None,
        };
        if let Some(s) = sender {
            let n = self.nodes.get_mut(&s).expect("known");
            n.flags.remove(NodeFlags::NOFAILOVER);
            n.flags
                .insert(NodeFlags(h.flags.bits() & NodeFlags::NOFAILOVER.bits()));
        }
        if let Some(s) = sender {
            if kind == msg::msg_type::PING
                && !self.nodes[&s].in_handshake()
                && self.update_address_if_needed(s, link, peer_ip, h)
            {
                self.save(false);
                self.todo_update_state = true;
            }
        }
        if let (Some(lid), msg::msg_type::PONG) = (link_node, kind) {
            let n = self.nodes.get_mut(&lid).expect("present");
            n.pong_received = now;
            n.ping_sent = 0;
            if n.timed_out() {
                n.flags.remove(NodeFlags::PFAIL);
                self.save(false);
                self.todo_update_state = true;
            } else if n.failed() {
                self.clear_failure_if_needed(lid, now);
            }
        }
        let Some(s) = sender else { return };

        // Role.
        match h.replicaof {
            None => self.set_node_as_master(s),
            Some(master_id) => {
                if self.nodes[&s].is_master() {
                    self.del_node_slots(s);
                    let n = self.nodes.get_mut(&s).expect("known");
                    n.flags.remove(NodeFlags::MASTER);
                    n.flags.remove(NodeFlags::MIGRATE_TO);
                    n.flags.insert(NodeFlags::REPLICA);
                    self.save(false);
                    self.todo_update_state = true;
                }
                let old = self.nodes[&s].master;
                if self.nodes.contains_key(&master_id) && old != Some(master_id) {
                    if let Some(o) = old.and_then(|o| self.nodes.get_mut(&o)) {
                        o.replicas.retain(|r| *r != s);
                    }
                    let m = self.nodes.get_mut(&master_id).expect("checked");
                    if !m.replicas.contains(&s) {
                        m.replicas.push(s);
                        m.flags.insert(NodeFlags::MIGRATE_TO);
                    }
                    let shard = m.shard_id;
                    let n = self.nodes.get_mut(&s).expect("known");
                    n.master = Some(master_id);
                    n.shard_id = shard;
                    self.save(false);
                }
            }
        }

        // Slots: the sender's claim, checked against our view.
        if self.nodes[&s].in_handshake() {
            return;
        }
        let sender_master = if self.nodes[&s].is_master() {
            Some(s)
        } else {
            self.nodes[&s].master
        };
        let dirty = sender_master
            .and_then(|m| self.nodes.get(&m))
            .is_some_and(|m| m.slots != h.slots);
        if dirty && self.nodes[&s].is_master() {
            self.update_slots_config_with(s, h.config_epoch, &h.slots);
        }
        if dirty {
            // The sender is behind: tell it who owns one of the slots it claims.
            for slot in h.slots.iter() {
                let Some(owner) = self.slots[slot as usize] else {
                    continue;
                };
                if owner == s || self.slot_unclaimed(slot) {
                    continue;
                }
                if self.nodes[&owner].config_epoch > h.config_epoch {
                    self.log(LogLevel::Verbose, format!("Node {s} has old slots configuration, sending an UPDATE message about {owner}"));
                    self.send_update(s, owner);
                    break;
                }
            }
        }
        if self.me().is_master()
            && self.nodes[&s].is_master()
            && h.config_epoch == self.me().config_epoch
        {
            self.handle_config_epoch_collision(s);
        }
        self.process_gossip(Some(s), h, p, now);
        self.process_extensions(s, p, now);
    }

    /// A sender's address changed (it is not the address of our own link to it).
    fn update_address_if_needed(
        &mut self,
        id: NodeId,
        link: Link,
        peer_ip: &str,
        h: &Header,
    ) -> bool {
        // Our own address is ours to decide; our link to a node has the address we dialed.
        if id == self.myself || link == Link::Outbound(id) {
            return false;
        }
        let ip = pick_ip(&h.myip, peer_ip);
        let n = &self.nodes[&id];
        if n.ip == ip && n.port == h.port && n.pport == h.pport && n.cport == h.cport {
            return false;
        }
        let n = self.nodes.get_mut(&id).expect("known");
        n.ip = ip.clone();
        n.port = h.port;
        n.pport = h.pport;
        n.cport = h.cport;
        n.flags.remove(NodeFlags::NOADDR);
        let name = n.name_for_log();
        self.free_outbound(id);
        self.log(
            LogLevel::Notice,
            format!("Address updated for node {name}, now {ip}:{}", h.port),
        );
        if self.me().master == Some(id) && !self.me().is_master() {
            self.actions.push(Action::ReplicateFrom(id));
        }
        true
    }

    /// Two masters with one configEpoch: the one with the smaller id takes a new epoch.
    fn handle_config_epoch_collision(&mut self, sender: NodeId) {
        if sender.0 <= self.myself.0 {
            return;
        }
        self.current_epoch = self.current_epoch.saturating_add(1);
        let epoch = self.current_epoch;
        self.me_mut().config_epoch = epoch;
        self.save(true);
        let name = self.nodes[&sender].name_for_log();
        self.log(
            LogLevel::Verbose,
            format!("WARNING: configEpoch collision with node {name}. configEpoch set to {epoch}"),
        );
    }

    /// A master claims `slots` at `epoch`: it takes every slot that is unclaimed or owned with
    /// a smaller configEpoch (unless we are importing it). Slots bound to the sender that it
    /// no longer claims stay bound, marked unclaimed (unbinding them would fail the cluster
    /// until the new owner speaks).
    fn update_slots_config_with(&mut self, sender: NodeId, epoch: u64, slots: &SlotSet) {
        if sender == self.myself {
            self.log(
                LogLevel::Notice,
                "Discarding UPDATE message about myself.".into(),
            );
            return;
        }
        let me = self.myself;
        let cur_master = if self.me().is_master() {
            Some(me)
        } else {
            self.me().master
        };
        let mut new_master = None;
        // The sender is the new master of our shard when every slot it claims was taken
        // from our master in this very message (a failover, not a resharding).
        let mut sender_slots = 0usize;
        let mut migrated_our_slots = 0usize;
        let mut lost = Vec::new();
        for slot in 0..CLUSTER_SLOTS as u16 {
            let owner = self.slots[slot as usize];
            if !slots.contains(slot) {
                if owner == Some(sender) {
                    self.unclaimed.insert(slot);
                }
                continue;
            }
            sender_slots += 1;
            if owner == Some(sender) {
                self.unclaimed.remove(slot);
                continue;
            }
            if self.importing.contains_key(&slot) {
                continue;
            }
            let takes = self.slot_unclaimed(slot)
                || owner.is_some_and(|o| self.nodes[&o].config_epoch < epoch);
            if !takes {
                continue;
            }
            if owner == Some(me) {
                lost.push(slot);
            }
            if owner.is_some() && owner == cur_master {
                new_master = Some(sender);
                migrated_our_slots += 1;
            }
            self.del_slot(slot);
            self.add_slot(sender, slot);
            self.save(true);
            self.todo_update_state = true;
        }
        let cur_empty = cur_master.is_some_and(|m| self.nodes[&m].slots.is_empty());
        if let (Some(nm), true) = (new_master, cur_empty) {
            if self.config.allow_replica_migration || sender_slots == migrated_our_slots {
                let name = self.nodes[&nm].name_for_log();
                self.log(
                    LogLevel::Notice,
                    format!("Configuration change detected. Reconfiguring myself as a replica of {name}"),
                );
                self.set_my_master(nm);
                return;
            }
        }
        // Our master turned replica when its last slot went (resharded away): follow the
        // node it follows, as nothing else would move us (unless that is ourselves, after
        // a takeover the admin has to repair).
        let grand = self
            .me()
            .master
            .and_then(|m| self.nodes.get(&m))
            .and_then(|m| m.master);
        if let Some(g) = grand.filter(|&g| g != me && self.nodes.contains_key(&g)) {
            let name = self.nodes[&g].name_for_log();
            self.log(
                LogLevel::Notice,
                format!(
                    "I'm a sub-replica! Reconfiguring myself as a replica of grandmaster {name}"
                ),
            );
            self.set_my_master(g);
            return;
        }
        for slot in lost {
            self.actions.push(Action::DeleteKeysInSlot(slot));
        }
    }

    /// Become a replica of `master` (CLUSTER REPLICATE, or losing every slot to it).
    pub fn set_my_master(&mut self, master: NodeId) {
        let me = self.myself;
        self.reset_manual_failover();
        if self.me().is_master() {
            self.me_mut().flags.remove(NodeFlags::MASTER);
            self.me_mut().flags.remove(NodeFlags::MIGRATE_TO);
            self.me_mut().flags.insert(NodeFlags::REPLICA);
            self.del_node_slots(me);
            self.migrating.clear();
            self.importing.clear();
        } else if let Some(old) = self.me().master.and_then(|o| self.nodes.get_mut(&o)) {
            old.replicas.retain(|r| *r != me);
        }
        let shard = self.nodes.get(&master).map(|m| m.shard_id);
        if let Some(m) = self.nodes.get_mut(&master) {
            if !m.replicas.contains(&me) {
                m.replicas.push(me);
                m.flags.insert(NodeFlags::MIGRATE_TO);
            }
        }
        let n = self.me_mut();
        n.master = Some(master);
        if let Some(s) = shard {
            n.shard_id = s;
        }
        self.actions.push(Action::ReplicateFrom(master));
        self.save(true);
        self.todo_update_state = true;
    }

    fn process_gossip(&mut self, sender: Option<NodeId>, h: &Header, p: &Ping, now: u64) {
        let sender_is_master = sender.is_some_and(|s| self.nodes[&s].is_master());
        for g in &p.gossip {
            let failing = g.flags.contains(NodeFlags::FAIL) || g.flags.contains(NodeFlags::PFAIL);
            if self.nodes.contains_key(&g.node) {
                if let (Some(s), true) = (sender, sender_is_master && g.node != self.myself) {
                    if failing {
                        if self.add_failure_report(g.node, s, now) {
                            let (a, b) = (
                                self.nodes[&s].name_for_log(),
                                self.nodes[&g.node].name_for_log(),
                            );
                            self.log(
                                LogLevel::Verbose,
                                format!("Node {a} reported node {b} as not reachable."),
                            );
                        }
                        self.mark_failing_if_needed(g.node, now);
                    } else if self.del_failure_report(g.node, s, now) {
                        let (a, b) = (
                            self.nodes[&s].name_for_log(),
                            self.nodes[&g.node].name_for_log(),
                        );
                        self.log(
                            LogLevel::Verbose,
                            format!("Node {a} reported node {b} is back online."),
                        );
                    }
                }
                let reports = self.failure_report_count(g.node, now);
                let n = self.nodes.get_mut(&g.node).expect("known");
                if !failing && n.ping_sent == 0 && reports == 0 {
                    let pong = g.pong_received as u64 * 1000;
                    if pong <= now + 500 && pong > n.pong_received {
                        n.pong_received = pong;
                    }
                }
                let ip = g.ip.to_string();
                if (n.timed_out() || n.failed())
                    && !g.flags.contains(NodeFlags::NOADDR)
                    && !failing
                    && (n.ip != ip || n.port != g.port || n.pport != g.pport || n.cport != g.cport)
                {
                    n.ip = ip;
                    n.port = g.port;
                    n.pport = g.pport;
                    n.cport = g.cport;
                    n.flags.remove(NodeFlags::NOADDR);
                    self.free_outbound(g.node);
                }
            } else if sender.is_some()
                && !g.flags.contains(NodeFlags::NOADDR)
                && !self.blacklisted(&g.node, now)
            {
                // Learned under its real id: the sender is a known member of our cluster.
                let mut n = Node::new(g.node, g.flags, now);
                n.shard_id = self.rng.node_id();
                n.flags.remove(NodeFlags::MYSELF);
                n.ip = g.ip.to_string();
                n.port = g.port;
                n.pport = g.pport;
                n.cport = g.cport;
                self.nodes.insert(g.node, n);
                self.save(false);
            }
        }
        let _ = h;
    }

    fn process_extensions(&mut self, sender: NodeId, p: &Ping, now: u64) {
        let mut hostname = Vec::new();
        let mut human = Vec::new();
        for e in &p.extensions {
            match e {
                PingExt::Hostname(h) => hostname = h.clone(),
                PingExt::HumanNodename(h) => human = h.clone(),
                PingExt::ForgottenNode { node, ttl } => {
                    // Never myself, the node we replicate, nor the sender speaking now.
                    let my_master = self.me().master.filter(|_| !self.me().is_master());
                    if *node != self.myself
                        && *node != sender
                        && Some(*node) != my_master
                        && self.nodes.contains_key(node)
                    {
                        self.blacklist
                            .insert(*node, (now / 1000).saturating_add(*ttl));
                        self.del_node(*node);
                    }
                }
                PingExt::ShardId(id) => {
                    if let Some(n) = self.nodes.get_mut(&sender) {
                        if n.shard_id != *id {
                            n.shard_id = *id;
                            self.save(false);
                        }
                    }
                }
                PingExt::Unknown { ext_type, .. } => {
                    self.log(
                        LogLevel::Warning,
                        format!("Received unknown extension type {ext_type}"),
                    );
                }
            }
        }
        // Absent hostname/human nodename extensions mean "none".
        let Some(n) = self.nodes.get_mut(&sender) else {
            return;
        };
        if n.hostname != hostname || n.human_nodename != human {
            n.hostname = hostname;
            n.human_nodename = human;
            self.save(false);
        }
    }

    // ---- cron and state ------------------------------------------------------------------

    /// Redis's cluster cron (call every [`CRON_PERIOD_MS`]): expire handshakes, connect links,
    /// ping a random node each second and every node not pinged for half the timeout, mark
    /// nodes PFAIL past the timeout; then [`Self::before_sleep`].
    pub fn tick(&mut self, now: u64) {
        self.iteration += 1;
        let timeout = self.config.node_timeout;
        let handshake_timeout = timeout.max(1000);
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in &ids {
            let Some(n) = self.nodes.get(id) else {
                continue;
            };
            if n.flags.contains(NodeFlags::MYSELF) || n.flags.contains(NodeFlags::NOADDR) {
                continue;
            }
            if n.in_handshake() && now.saturating_sub(n.ctime) > handshake_timeout {
                self.del_node(*id);
                continue;
            }
            if n.link == LinkStatus::None {
                let (ip, cport) = (n.ip.clone(), n.cport);
                self.nodes.get_mut(id).expect("present").link =
                    LinkStatus::Connecting { since: now };
                self.actions.push(Action::Connect {
                    node: *id,
                    ip,
                    cport,
                });
            }
        }
        if self.iteration.is_multiple_of(10) {
            let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
            let mut best: Option<(NodeId, u64)> = None;
            for _ in 0..5 {
                let id = ids[self.rng.below(ids.len())];
                let n = &self.nodes[&id];
                if !n.has_link()
                    || n.ping_sent != 0
                    || n.flags.contains(NodeFlags::MYSELF)
                    || n.in_handshake()
                {
                    continue;
                }
                if best.is_none_or(|(_, pong)| pong > n.pong_received) {
                    best = Some((id, n.pong_received));
                }
            }
            if let Some((id, _)) = best {
                self.log(LogLevel::Debug, format!("Pinging node {id}"));
                self.send_ping(Link::Outbound(id), msg::msg_type::PING, now);
            }
        }
        let mut update = false;
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            let Some(n) = self.nodes.get(&id) else {
                continue;
            };
            if n.flags.contains(NodeFlags::MYSELF)
                || n.flags.contains(NodeFlags::NOADDR)
                || n.in_handshake()
            {
                continue;
            }
            let ping_delay = now.saturating_sub(n.ping_sent);
            let data_delay = now.saturating_sub(n.data_received);
            if let LinkStatus::Up { since } = n.link {
                if now - since.min(now) > timeout
                    && n.ping_sent != 0
                    && ping_delay > timeout / 2
                    && data_delay > timeout / 2
                {
                    // No traffic at all for a while: reconnect, the link may be the problem.
                    self.free_outbound(id);
                }
            }
            let n = &self.nodes[&id];
            if n.has_link() && n.ping_sent == 0 && now.saturating_sub(n.pong_received) > timeout / 2
            {
                self.send_ping(Link::Outbound(id), msg::msg_type::PING, now);
                continue;
            }
            if n.ping_sent == 0 {
                continue;
            }
            if ping_delay.min(data_delay) > timeout && !n.timed_out() && !n.failed() {
                self.nodes
                    .get_mut(&id)
                    .expect("present")
                    .flags
                    .insert(NodeFlags::PFAIL);
                update = true;
                if self.me().is_master() && self.size == 1 {
                    self.mark_failing_if_needed(id, now);
                } else {
                    self.log(LogLevel::Debug, format!("*** NODE {id} possibly failing"));
                }
            }
        }
        self.manual_failover_cron(now);
        if !self.me().is_master() {
            self.handle_replica_failover(now);
            self.replica_migration_cron(now);
        }
        // A failing cluster is re-evaluated every run: it may be only waiting for a delay.
        if update || self.health == Health::Fail {
            self.todo_update_state = true;
        }
        self.before_sleep(now);
    }

    /// Do what the events asked for: recompute the state, save (and fsync) the config.
    pub fn before_sleep(&mut self, now: u64) {
        if !self.slots_deleted.is_empty() {
            let slots = std::mem::take(&mut self.slots_deleted);
            self.actions
                .push(Action::UnsubscribeShardChannels(Box::new(slots)));
        }
        if std::mem::take(&mut self.todo_update_state) {
            self.update_state(now);
        }
        if std::mem::take(&mut self.todo_save) {
            let fsync = std::mem::take(&mut self.todo_fsync);
            self.actions.push(Action::SaveConfig { fsync });
        }
    }

    /// `ok` when every slot is served by a reachable master (unless full coverage is not
    /// required) and we are in the majority partition of the masters that serve slots.
    pub fn update_state(&mut self, now: u64) {
        let first = *self.first_update.get_or_insert(now);
        // Just started as a master: give the configuration time to arrive.
        if self.health == Health::Fail
            && self.me().is_master()
            && now.saturating_sub(first) < WRITABLE_DELAY
        {
            return;
        }
        let mut new = Health::Ok;
        if self.config.require_full_coverage {
            let uncovered = self
                .slots
                .iter()
                .any(|o| o.is_none_or(|o| self.nodes[&o].failed()));
            if uncovered {
                new = Health::Fail;
            }
        }
        let mut size = 0;
        let mut reachable = 0;
        for n in self.nodes.values() {
            if n.is_master() && !n.slots.is_empty() {
                size += 1;
                if !n.timed_out() && !n.failed() {
                    reachable += 1;
                }
            }
        }
        self.size = size;
        if reachable < size / 2 + 1 {
            new = Health::Fail;
            self.among_minority_time = now;
        }
        if new != self.health {
            let rejoin = self
                .config
                .node_timeout
                .clamp(MIN_REJOIN_DELAY, MAX_REJOIN_DELAY);
            // A master back from a minority partition waits, so its stale view is corrected first.
            if new == Health::Ok
                && self.me().is_master()
                && now.saturating_sub(self.among_minority_time) < rejoin
            {
                return;
            }
            let (level, word) = match new {
                Health::Ok => (LogLevel::Notice, "ok"),
                Health::Fail => (LogLevel::Warning, "fail"),
            };
            self.log(level, format!("Cluster state changed: {word}"));
            self.health = new;
            self.actions.push(Action::HealthChanged(new));
            self.changes += 1;
        }
    }
}

/// The announced IP if the header has one, else the connection's.
fn pick_ip(announced: &Ip, peer_ip: &str) -> String {
    if announced.is_empty() {
        peer_ip.to_string()
    } else {
        announced.to_string()
    }
}
