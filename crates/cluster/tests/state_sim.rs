//! Several [`ClusterState`] nodes wired through a simulated network and a fake clock: every
//! message is encoded and decoded with the real codec on its way. They meet and converge on one
//! view, slot ownership spreads by configEpoch, a node that stops answering becomes PFAIL then
//! FAIL everywhere, and configEpoch collisions resolve to distinct epochs.

use std::collections::{BTreeMap, HashSet, VecDeque};

use tern_cluster::state::{Action, ClusterState, Config, Health, Link, CRON_PERIOD_MS};
use tern_cluster::{Msg, NodeFlags, NodeId, NodesConf};

const START: u64 = 1_700_000_000_000;

/// One open TCP connection of the simulation: `from`'s outbound link to a node id, arriving
/// at `to` as inbound link `inbound`.
struct Conn {
    to: usize,
    inbound: u64,
}

struct Sim {
    nodes: Vec<ClusterState>,
    /// Nodes that stopped answering: they neither tick nor receive.
    down: HashSet<usize>,
    conns: BTreeMap<(usize, NodeId), Conn>,
    next_inbound: u64,
    now: u64,
    logs: Vec<Vec<String>>,
    saves: Vec<usize>,
    deleted_slots: Vec<Vec<u16>>,
    /// Pauses, unpauses and promotions the node asked its server for.
    events: Vec<Vec<&'static str>>,
    /// (channel, message, sharded) the node was asked to deliver to its subscribers.
    delivered: Vec<Vec<(String, String, bool)>>,
    queue: VecDeque<(usize, Link, String, Vec<u8>)>,
}

fn ip(i: usize) -> String {
    format!("127.0.0.{}", i + 1)
}

impl Sim {
    fn new(n: usize, node_timeout: u64) -> Sim {
        let nodes = (0..n)
            .map(|i| {
                let config = Config {
                    node_timeout,
                    ..Config::default()
                };
                ClusterState::new(
                    config,
                    &ip(i),
                    7700 + i as u16,
                    17700 + i as u16,
                    0x9e37_79b9 * (i as u64 + 1),
                    START,
                )
            })
            .collect();
        Sim {
            nodes,
            down: HashSet::new(),
            conns: BTreeMap::new(),
            next_inbound: 1,
            now: START,
            logs: vec![Vec::new(); n],
            saves: vec![0; n],
            deleted_slots: vec![Vec::new(); n],
            events: vec![Vec::new(); n],
            delivered: vec![Vec::new(); n],
            queue: VecDeque::new(),
        }
    }

    fn id(&self, i: usize) -> NodeId {
        self.nodes[i].myself()
    }

    fn index_of_addr(&self, ip: &str, cport: u16) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| {
            let me = self.nodes[i].node(&self.id(i)).unwrap();
            me.ip == ip && me.cport == cport
        })
    }

    /// Run every pending action and deliver every message until the network is quiet.
    fn pump(&mut self) {
        loop {
            let mut busy = false;
            for i in 0..self.nodes.len() {
                let actions = self.nodes[i].take_actions();
                busy |= !actions.is_empty();
                for a in actions {
                    self.apply(i, a);
                }
            }
            if let Some((to, link, peer, bytes)) = self.queue.pop_front() {
                busy = true;
                if !self.down.contains(&to) {
                    let msg = Msg::decode(&bytes).expect("a message the codec wrote decodes");
                    self.nodes[to].handle_message(link, &peer, &msg, self.now);
                    self.nodes[to].before_sleep(self.now);
                }
            }
            if !busy {
                return;
            }
        }
    }

    fn apply(&mut self, i: usize, a: Action) {
        match a {
            Action::Connect { node, ip, cport } => match self.index_of_addr(&ip, cport) {
                Some(to) if !self.down.contains(&to) => {
                    let inbound = self.next_inbound;
                    self.next_inbound += 1;
                    self.conns.insert((i, node), Conn { to, inbound });
                    self.nodes[i].link_connected(node, self.now);
                }
                _ => self.nodes[i].link_failed(node, self.now),
            },
            Action::Send { link, msg } => {
                let bytes = msg.encode();
                match link {
                    Link::Outbound(id) => {
                        if let Some(c) = self.conns.get(&(i, id)) {
                            let l = Link::Inbound(c.inbound);
                            self.queue.push_back((c.to, l, ip(i), bytes));
                        }
                    }
                    Link::Inbound(l) => {
                        let back = self
                            .conns
                            .iter()
                            .find(|(_, c)| c.to == i && c.inbound == l)
                            .map(|((from, id), _)| (*from, *id));
                        if let Some((from, id)) = back {
                            self.queue
                                .push_back((from, Link::Outbound(id), ip(i), bytes));
                        }
                    }
                }
            }
            Action::Close(Link::Outbound(id)) => {
                if let Some(c) = self.conns.remove(&(i, id)) {
                    self.nodes[c.to].link_closed(Link::Inbound(c.inbound));
                }
            }
            Action::Close(Link::Inbound(l)) => {
                let key = self
                    .conns
                    .iter()
                    .find(|(_, c)| c.to == i && c.inbound == l)
                    .map(|(k, _)| *k);
                if let Some((from, id)) = key {
                    self.conns.remove(&(from, id));
                    self.nodes[from].link_closed(Link::Outbound(id));
                }
            }
            Action::RenameLink { from, to } => {
                if let Some(c) = self.conns.remove(&(i, from)) {
                    self.conns.insert((i, to), c);
                }
            }
            Action::SaveConfig { .. } => {
                // What would be written must load back to the same file.
                let text = self.nodes[i].to_conf().to_text();
                let again = NodesConf::parse(&text).expect("a saved nodes.conf loads");
                assert_eq!(again.to_text(), text);
                self.saves[i] += 1;
            }
            Action::DeleteKeysInSlot(slot) => self.deleted_slots[i].push(slot),
            Action::Log { line, .. } => self.logs[i].push(line),
            Action::PauseWrites { .. } => self.events[i].push("pause"),
            Action::UnpauseWrites => self.events[i].push("unpause"),
            Action::PromoteMyself => self.events[i].push("promote"),
            Action::Deliver {
                channel,
                message,
                shard,
            } => self.delivered[i].push((
                String::from_utf8(channel).unwrap(),
                String::from_utf8(message).unwrap(),
                shard,
            )),
            Action::HealthChanged(_)
            | Action::ReplicateFrom(_)
            | Action::UnsubscribeShardChannels(_) => {}
        }
    }

    /// Let `ms` of simulated time pass, the cron of every live node running every 100 ms.
    fn advance(&mut self, ms: u64) {
        let end = self.now + ms;
        while self.now < end {
            self.now += CRON_PERIOD_MS;
            for i in 0..self.nodes.len() {
                if !self.down.contains(&i) {
                    self.nodes[i].tick(self.now);
                }
            }
            self.pump();
        }
    }

    fn meet_all(&mut self) {
        for i in 1..self.nodes.len() {
            let (ip, port, cport) = (ip(i), 7700 + i as u16, 17700 + i as u16);
            assert!(self.nodes[0].meet(&ip, port, cport, self.now));
        }
        self.pump();
    }

    /// Node `i`'s view with what differs by observer removed (myself flag, times, link).
    fn view(&self, i: usize) -> Vec<String> {
        let mut lines: Vec<String> = self.nodes[i]
            .to_conf()
            .nodes
            .into_iter()
            .map(|mut l| {
                l.flags.remove(NodeFlags::MYSELF);
                l.ping_sent = 0;
                l.pong_received = 0;
                l.link = Default::default();
                l.migrations.clear();
                l.to_line(false)
            })
            .collect();
        lines.sort();
        lines
    }

    fn flags_of(&self, observer: usize, about: usize) -> NodeFlags {
        self.nodes[observer].node(&self.id(about)).unwrap().flags
    }
}

fn three_masters_with_slots(node_timeout: u64) -> Sim {
    let mut sim = Sim::new(3, node_timeout);
    sim.meet_all();
    sim.advance(3000);
    let ranges = [(0u16, 5460u16), (5461, 10922), (10923, 16383)];
    for (i, (a, b)) in ranges.iter().enumerate() {
        let slots: Vec<u16> = (*a..=*b).collect();
        sim.nodes[i].add_my_slots(&slots);
    }
    sim.advance(5000);
    sim
}

#[test]
fn nodes_meet_and_converge_on_one_view() {
    let mut sim = Sim::new(5, 2000);
    // Node 0 meets only node 1; the others are met by node 1 and node 0 learns them by gossip.
    assert!(sim.nodes[0].meet(&ip(1), 7701, 17701, sim.now));
    assert!(
        !sim.nodes[0].meet(&ip(1), 7701, 17701, sim.now),
        "a second MEET of an address in handshake is refused"
    );
    for i in 2..5 {
        assert!(sim.nodes[1].meet(&ip(i), 7700 + i as u16, 17700 + i as u16, sim.now));
    }
    sim.advance(6000);
    let reference = sim.view(0);
    assert_eq!(reference.len(), 5, "{reference:#?}");
    for i in 0..5 {
        assert_eq!(sim.view(i), reference, "node {i} disagrees");
        let text = sim.nodes[i].cluster_nodes();
        assert_eq!(text.lines().count(), 5);
        assert!(!text.contains("handshake"), "{text}");
        assert!(!text.contains("disconnected"), "{text}");
        assert_eq!(text.matches("myself").count(), 1);
        assert!(sim.saves[i] > 0);
    }
    for l in &reference {
        assert!(l.contains(" master - "), "{l}");
    }
}

#[test]
fn slots_propagate_and_cluster_becomes_ok() {
    let sim = three_masters_with_slots(2000);
    for i in 0..3 {
        assert_eq!(sim.nodes[i].health(), Health::Ok, "node {i}");
        assert_eq!(sim.nodes[i].size(), 3);
        assert_eq!(sim.nodes[i].slot_owner(0), Some(sim.id(0)));
        assert_eq!(sim.nodes[i].slot_owner(5461), Some(sim.id(1)));
        assert_eq!(sim.nodes[i].slot_owner(16383), Some(sim.id(2)));
        assert!(sim.logs[i].iter().any(|l| l == "Cluster state changed: ok"));
    }
    let v = sim.view(0);
    for i in 1..3 {
        assert_eq!(sim.view(i), v);
    }
    // Without full coverage, one uncovered slot does not fail the cluster; with it, it does.
    let mut sim = Sim::new(2, 2000);
    sim.nodes[1].config.require_full_coverage = false;
    sim.meet_all();
    sim.nodes[0].add_my_slots(&[1, 2, 3]);
    sim.advance(5000);
    assert_eq!(sim.nodes[0].health(), Health::Fail);
    assert_eq!(sim.nodes[1].health(), Health::Ok);
    assert_eq!(sim.nodes[1].slot_owner(2), Some(sim.id(0)));
}

#[test]
fn config_epoch_collisions_resolve_to_distinct_epochs() {
    let sim = three_masters_with_slots(2000);
    let mut epochs: Vec<u64> = (0..3)
        .map(|i| sim.nodes[0].node(&sim.id(i)).unwrap().config_epoch)
        .collect();
    epochs.sort();
    epochs.dedup();
    assert_eq!(epochs.len(), 3, "epochs {epochs:?}");
    // Every node agrees on them, and currentEpoch is at least the largest.
    for i in 0..3 {
        for j in 0..3 {
            assert_eq!(
                sim.nodes[i].node(&sim.id(j)).unwrap().config_epoch,
                sim.nodes[j].node(&sim.id(j)).unwrap().config_epoch
            );
        }
        assert!(sim.nodes[i].current_epoch >= *epochs.last().unwrap());
    }
    assert!(sim
        .logs
        .iter()
        .flatten()
        .any(|l| l.starts_with("WARNING: configEpoch collision with node ")));
}

#[test]
fn silent_node_becomes_pfail_then_fail_everywhere_and_recovers() {
    let timeout = 2000;
    let mut sim = Sim::new(4, timeout);
    sim.meet_all();
    sim.advance(3000);
    let ranges = [(0u16, 5460u16), (5461, 10922), (10923, 16383)];
    for (i, (a, b)) in ranges.iter().enumerate() {
        sim.nodes[i].add_my_slots(&(*a..=*b).collect::<Vec<_>>());
    }
    sim.advance(5000);
    assert!((0..4).all(|i| sim.nodes[i].health() == Health::Ok));

    sim.down.insert(2);
    // Past the node timeout every node sees it PFAIL or, once a majority of the masters said
    // so, FAIL.
    sim.advance(timeout + 1500);
    for i in [0, 1, 3] {
        let f = sim.flags_of(i, 2);
        assert!(
            f.contains(NodeFlags::PFAIL) || f.contains(NodeFlags::FAIL),
            "{i}: {f:?}"
        );
    }
    sim.advance(3000);
    for i in [0, 1, 3] {
        let f = sim.flags_of(i, 2);
        assert!(f.contains(NodeFlags::FAIL), "{i}: {f:?}");
        assert!(!f.contains(NodeFlags::PFAIL));
        assert_eq!(
            sim.nodes[i].health(),
            Health::Fail,
            "slots of a failed master"
        );
        assert!(sim.nodes[i].cluster_nodes().contains("master,fail "));
    }
    let marked = format!("Marking node {} () as failing (quorum reached).", sim.id(2));
    assert!(sim.logs.iter().flatten().any(|l| *l == marked));
    // Each observer reached the quorum itself or heard a master's FAIL broadcast.
    let heard = format!("about {} () ", sim.id(2));
    for i in [0, 1, 3] {
        assert!(
            sim.logs[i].iter().any(|l| *l == marked
                || (l.starts_with("FAIL message received from ") && l.ends_with(heard.trim_end()))),
            "{i}: {:#?}",
            sim.logs[i]
        );
    }

    // Back: a master with slots is cleared once nobody took them over for 2 node timeouts.
    sim.down.remove(&2);
    sim.advance(2 * timeout + 3000);
    for i in [0, 1, 3] {
        let f = sim.flags_of(i, 2);
        assert!(
            !f.contains(NodeFlags::FAIL) && !f.contains(NodeFlags::PFAIL),
            "{i}: {f:?}"
        );
        assert_eq!(sim.nodes[i].health(), Health::Ok);
    }
    assert!(sim
        .logs
        .iter()
        .flatten()
        .any(|l| l.contains("is reachable again")));
}

#[test]
fn greater_config_epoch_takes_slots_and_update_fixes_a_stale_node() {
    let mut sim = three_masters_with_slots(2000);
    let old_owner = sim.id(0);
    // Node 0 stops answering; node 2 claims slot 0 with an epoch above everyone's.
    sim.down.insert(0);
    let top = (0..3)
        .map(|i| sim.nodes[1].node(&sim.id(i)).unwrap().config_epoch)
        .max()
        .unwrap();
    sim.nodes[2].set_my_config_epoch(top + 10);
    let me2 = sim.id(2);
    assert!(sim.nodes[2].set_slot_node(0, me2));
    sim.advance(3000);
    assert_eq!(sim.nodes[1].slot_owner(0), Some(sim.id(2)));
    // Node 0 comes back still claiming slot 0 with its old epoch: the others answer with an
    // UPDATE and it gives the slot up (and drops its keys there).
    sim.down.remove(&0);
    sim.advance(6000);
    assert_eq!(sim.nodes[0].slot_owner(0), Some(sim.id(2)));
    assert_eq!(sim.nodes[0].slot_owner(1), Some(old_owner));
    assert!(
        sim.deleted_slots[0].contains(&0),
        "{:?}",
        sim.deleted_slots[0]
    );
    assert!(sim
        .logs
        .iter()
        .flatten()
        .any(|l| l.contains("has old slots configuration, sending an UPDATE message about")));
    let v = sim.view(1);
    for i in [0, 2] {
        assert_eq!(sim.view(i), v);
    }
}

#[test]
fn master_losing_all_slots_becomes_a_replica_and_forget_spreads() {
    let mut sim = Sim::new(3, 2000);
    sim.meet_all();
    sim.advance(3000);
    sim.nodes[0].add_my_slots(&[7, 8]);
    sim.advance(3000);
    let top = sim.nodes[1].current_epoch;
    sim.nodes[1].set_my_config_epoch(top + 5);
    let me1 = sim.id(1);
    assert!(sim.nodes[1].set_slot_node(7, me1));
    assert!(sim.nodes[1].set_slot_node(8, me1));
    sim.advance(3000);
    let me0 = sim.nodes[0].node(&sim.id(0)).unwrap();
    assert!(me0.flags.contains(NodeFlags::REPLICA), "{:?}", me0.flags);
    assert_eq!(me0.master, Some(sim.id(1)));
    assert!(sim.logs[0]
        .iter()
        .any(|l| l
            .starts_with("Configuration change detected. Reconfiguring myself as a replica of ")));
    // Everyone sees node 0 as node 1's replica.
    sim.advance(2000);
    for i in 1..3 {
        let n = sim.nodes[i].node(&sim.id(0)).unwrap();
        assert_eq!(n.master, Some(sim.id(1)), "observer {i}");
    }
    // CLUSTER FORGET on node 1 travels in its pings: node 2 drops node 0 too... as long as
    // node 0 does not re-add itself, which it does by pinging: the ban only lasts 60 s.
    let gone = sim.id(2);
    assert!(sim.nodes[1].forget(gone, sim.now));
    assert!(sim.nodes[1].node(&gone).is_none());
    sim.advance(2500);
    assert!(
        sim.nodes[1].node(&gone).is_none(),
        "gossip must not bring it back"
    );
    assert!(
        sim.nodes[0].node(&gone).is_none(),
        "the forgotten-node extension spreads"
    );
}

#[test]
fn replica_of_a_failed_master_wins_the_election_and_takes_its_slots() {
    let timeout = 2000;
    let mut sim = Sim::new(5, timeout);
    sim.meet_all();
    sim.advance(3000);
    let ranges = [(0u16, 5460u16), (5461, 10922), (10923, 16383)];
    for (i, (a, b)) in ranges.iter().enumerate() {
        sim.nodes[i].add_my_slots(&(*a..=*b).collect::<Vec<_>>());
    }
    // Two replicas of node 0; node 4 is further behind in replication, so node 3 ranks first.
    let m0 = sim.id(0);
    sim.nodes[3].set_my_master(m0);
    sim.nodes[4].set_my_master(m0);
    sim.nodes[3].repl_offset = 1000;
    sim.nodes[4].repl_offset = 400;
    sim.advance(5000);
    assert!((0..5).all(|i| sim.nodes[i].health() == Health::Ok));
    assert_eq!(sim.nodes[1].node(&m0).unwrap().replicas.len(), 2);
    let epoch_before = (0..3)
        .map(|i| sim.nodes[1].node(&sim.id(i)).unwrap().config_epoch)
        .max()
        .unwrap();

    sim.down.insert(0);
    sim.advance(3 * timeout + 5000);
    let winner = sim.id(3);
    for i in 1..5 {
        let n = sim.nodes[i].node(&winner).unwrap();
        assert!(n.is_master(), "observer {i}: {:?}", n.flags);
        assert!(n.config_epoch > epoch_before);
        assert_eq!(sim.nodes[i].slot_owner(0), Some(winner), "observer {i}");
        assert_eq!(sim.nodes[i].slot_owner(5460), Some(winner));
        assert_eq!(sim.nodes[i].health(), Health::Ok, "observer {i}");
    }
    assert!(sim.logs[3]
        .iter()
        .any(|l| l == "Failover election won: I'm the new master."));
    assert!(sim.logs[3]
        .iter()
        .any(|l| l.starts_with("Start of election delayed for ")
            && l.contains("(rank #0, offset 1000).")));
    for i in [1, 2] {
        assert!(
            sim.logs[i]
                .iter()
                .any(|l| l.starts_with(&format!("Failover auth granted to {winner} ()"))),
            "{i}"
        );
        // One vote per epoch.
        assert_eq!(
            sim.nodes[i].last_vote_epoch,
            sim.nodes[3].node(&winner).unwrap().config_epoch
        );
    }
    // The other replica follows the new master once it sees the slots move.
    let n4 = sim.nodes[4].node(&sim.id(4)).unwrap();
    assert!(n4.flags.contains(NodeFlags::REPLICA));
    assert_eq!(n4.master, Some(winner));
    assert!(!sim.logs[4]
        .iter()
        .any(|l| l == "Failover election won: I'm the new master."));

    // The old master comes back, sees its slots served at a greater epoch and replicates the
    // winner.
    sim.down.remove(&0);
    sim.advance(3 * timeout + 3000);
    let old = sim.nodes[0].node(&m0).unwrap();
    assert!(old.flags.contains(NodeFlags::REPLICA), "{:?}", old.flags);
    assert_eq!(old.master, Some(winner));
    for i in 1..5 {
        assert!(
            !sim.flags_of(i, 0).contains(NodeFlags::FAIL),
            "observer {i}"
        );
    }
}

/// Three masters with slots, node 3 replicating node 0 and node 4 replicating node 1.
fn masters_and_replicas(timeout: u64) -> Sim {
    three_masters_with_replicas(5, timeout, &[(3, 0), (4, 1)], |_| {})
}

/// Nodes 0-2 masters of a third of the slots each, the others replicas as `replicas` says
/// (replica, master), every node `configure`d first; all met and healthy.
fn three_masters_with_replicas(
    nodes: usize,
    timeout: u64,
    replicas: &[(usize, usize)],
    configure: impl Fn(&mut ClusterState),
) -> Sim {
    let mut sim = Sim::new(nodes, timeout);
    sim.nodes.iter_mut().for_each(configure);
    sim.meet_all();
    sim.advance(3000);
    let ranges = [(0u16, 5460u16), (5461, 10922), (10923, 16383)];
    for (i, (a, b)) in ranges.iter().enumerate() {
        sim.nodes[i].add_my_slots(&(*a..=*b).collect::<Vec<_>>());
    }
    for &(replica, master) in replicas {
        let m = sim.id(master);
        sim.nodes[replica].set_my_master(m);
    }
    sim.advance(5000);
    assert!((0..nodes).all(|i| sim.nodes[i].health() == Health::Ok));
    sim
}

#[test]
fn manual_failover_waits_for_the_paused_offset_then_switches_roles() {
    use tern_cluster::manual_failover::FailoverMode;
    let mut sim = masters_and_replicas(2000);
    let (m0, r3) = (sim.id(0), sim.id(3));
    assert_eq!(
        sim.nodes[0].manual_failover(FailoverMode::Default, sim.now),
        Err("You should send CLUSTER FAILOVER to a replica")
    );
    sim.nodes[0].repl_offset = 5000;
    sim.nodes[3].repl_offset = 4000;
    sim.nodes[3]
        .manual_failover(FailoverMode::Default, sim.now)
        .unwrap();
    sim.advance(400);
    // The master paused and told its offset; the replica is not there yet.
    assert_eq!(sim.events[0], vec!["pause"]);
    assert!(sim.logs[0]
        .iter()
        .any(|l| *l == format!("Manual failover requested by replica {r3} ().")));
    assert!(sim.logs[3]
        .iter()
        .any(|l| l == "Received replication offset for paused master manual failover: 5000"));
    assert!(sim.nodes[3]
        .node(&r3)
        .unwrap()
        .flags
        .contains(NodeFlags::REPLICA));
    // Caught up: the election runs at once, masters vote though node 0 is up.
    sim.nodes[3].repl_offset = 5000;
    sim.advance(1500);
    assert!(sim.logs[3]
        .iter()
        .any(|l| l == "All master replication stream processed, manual failover can start."));
    assert!(sim.logs[3]
        .iter()
        .any(|l| l == "Failover election won: I'm the new master."));
    assert_eq!(sim.events[3], vec!["promote"]);
    sim.advance(2000);
    for i in 0..5 {
        assert_eq!(sim.nodes[i].slot_owner(0), Some(r3), "observer {i}");
        assert!(sim.nodes[i].node(&r3).unwrap().is_master());
    }
    // The old master follows the winner and lifts its pause.
    let old = sim.nodes[0].node(&m0).unwrap();
    assert_eq!(old.master, Some(r3));
    assert_eq!(sim.events[0], vec!["pause", "unpause"]);
}

#[test]
fn takeover_needs_no_votes_and_manual_failover_times_out() {
    use tern_cluster::manual_failover::FailoverMode;
    let mut sim = masters_and_replicas(2000);
    let r4 = sim.id(4);
    let top = sim.nodes[4].current_epoch;
    sim.nodes[4]
        .manual_failover(FailoverMode::Takeover, sim.now)
        .unwrap();
    assert!(sim.nodes[4].node(&r4).unwrap().config_epoch > top);
    sim.advance(2000);
    for i in 0..5 {
        assert_eq!(sim.nodes[i].slot_owner(5461), Some(r4), "observer {i}");
    }
    assert!(!sim.logs[4]
        .iter()
        .any(|l| l.starts_with("Starting a failover election")));

    // A replica that never catches up gives up after 5 seconds, and its master unpauses.
    sim.nodes[0].repl_offset = 10;
    sim.nodes[3].repl_offset = 5;
    sim.nodes[3]
        .manual_failover(FailoverMode::Default, sim.now)
        .unwrap();
    sim.advance(6000);
    assert!(sim.logs[3]
        .iter()
        .any(|l| l == "Manual failover timed out."));
    assert!(sim.logs[0]
        .iter()
        .any(|l| l == "Manual failover timed out."));
    assert_eq!(sim.events[0], vec!["pause", "unpause"]);
    assert!(sim.nodes[3]
        .node(&sim.id(3))
        .unwrap()
        .flags
        .contains(NodeFlags::REPLICA));
}

#[test]
fn master_failing_during_a_manual_failover_is_replaced_without_delay() {
    use tern_cluster::manual_failover::FailoverMode;
    let mut sim = masters_and_replicas(2000);
    let r3 = sim.id(3);
    // The master stops (DEBUG SLEEP, say) just as its replica asks for a manual failover:
    // it never tells its offset, and once it is FAIL the replica's election starts at once.
    sim.down.insert(0);
    sim.nodes[3]
        .manual_failover(FailoverMode::Default, sim.now)
        .unwrap();
    sim.advance(4900);
    assert!(
        sim.logs[3]
            .iter()
            .any(|l| l.starts_with("Start of election delayed for 0 milliseconds (rank #0")),
        "{:?}",
        sim.logs[3]
    );
    assert!(
        sim.logs[3]
            .iter()
            .any(|l| l == "Failover election won: I'm the new master."),
        "{:?}",
        sim.logs[3]
    );
    assert_eq!(sim.nodes[1].slot_owner(0), Some(r3));
}

#[test]
fn publish_reaches_every_node_and_spublish_only_the_shard() {
    let mut sim = masters_and_replicas(2000);
    sim.nodes[0].publish(b"news", b"hello", false);
    sim.pump();
    for i in 1..5 {
        assert_eq!(
            sim.delivered[i],
            vec![("news".into(), "hello".into(), false)],
            "node {i}"
        );
    }
    assert!(
        sim.delivered[0].is_empty(),
        "the publisher delivers locally itself"
    );
    // Node 3 replicates node 0: a shard message from either reaches only the other.
    sim.nodes[3].publish(b"orders", b"o1", true);
    sim.pump();
    assert_eq!(
        sim.delivered[0].last().unwrap(),
        &("orders".into(), "o1".into(), true)
    );
    for i in [1, 2, 4] {
        assert!(
            !sim.delivered[i].iter().any(|d| d.2),
            "node {i} is in another shard"
        );
    }
}

#[test]
fn a_replica_migrates_to_a_master_orphaned_by_its_replicas_failure() {
    let timeout = 2000;
    let mut sim = three_masters_with_replicas(6, timeout, &[(3, 0), (4, 0), (5, 1)], |_| {});
    let (m0, m1) = (sim.id(0), sim.id(1));

    // Master 1's only replica dies: one replica of master 0 (the one with the smaller id)
    // moves over once the orphan has waited 5 s; the other stays.
    sim.down.insert(5);
    sim.advance(3 * timeout + 7000);
    let (mover, stayer) = if sim.id(3) < sim.id(4) {
        (3, 4)
    } else {
        (4, 3)
    };
    assert_eq!(
        sim.nodes[mover].node(&sim.id(mover)).unwrap().master,
        Some(m1)
    );
    assert_eq!(
        sim.nodes[stayer].node(&sim.id(stayer)).unwrap().master,
        Some(m0)
    );
    assert!(sim.logs[mover]
        .iter()
        .any(|l| l == &format!("Migrating to orphaned master {m1}")));
    // The rest of the cluster learns the new replica.
    sim.advance(3000);
    assert!(sim.nodes[2]
        .node(&m1)
        .unwrap()
        .replicas
        .contains(&sim.id(mover)));
}

/// Reshard every slot of master 0 to masters 1 and 2 as `redis-cli --cluster rebalance` does
/// (IMPORTING on the target, NODE on the target, which bumps its epoch, then on the source).
fn reshard_away_from_node_0(sim: &mut Sim) {
    let (m0, m1, m2) = (sim.id(0), sim.id(1), sim.id(2));
    for slot in 0..=5460u16 {
        let (to, target) = if slot <= 2730 { (1, m1) } else { (2, m2) };
        sim.nodes[to].set_slot_importing(slot, m0);
        sim.nodes[0].set_slot_migrating(slot, target);
        assert!(sim.nodes[to].set_slot_node(slot, target));
        assert!(sim.nodes[0].set_slot_node(slot, target));
        if slot % 512 == 0 {
            sim.advance(100);
        }
    }
    sim.advance(5000);
}

#[test]
fn without_replica_migration_replicas_stay_with_a_master_resharded_empty() {
    let mut sim = three_masters_with_replicas(6, 2000, &[(3, 0), (4, 0), (5, 1)], |n| {
        n.config.allow_replica_migration = false
    });
    let m0 = sim.id(0);

    reshard_away_from_node_0(&mut sim);
    assert!(sim.nodes[3].node(&m0).unwrap().slots.is_empty());
    // The senders claim slots of their own besides master 0's: a resharding, not a
    // failover, so the replicas keep their (now empty) master.
    for r in [3, 4] {
        assert_eq!(sim.nodes[r].node(&sim.id(r)).unwrap().master, Some(m0));
    }
    assert!((0..6).all(|i| sim.nodes[i].health() == Health::Ok));
}

#[test]
fn with_replica_migration_replicas_follow_the_taker_of_their_masters_last_slot() {
    let mut sim = masters_and_replicas(2000);
    let m0 = sim.id(0);
    reshard_away_from_node_0(&mut sim);
    let master_of_3 = sim.nodes[3].node(&sim.id(3)).unwrap().master;
    assert_ne!(master_of_3, Some(m0));
    assert!(master_of_3 == Some(sim.id(1)) || master_of_3 == Some(sim.id(2)));
}

#[test]
fn a_slot_its_owner_stopped_claiming_goes_to_a_claimant_with_a_smaller_epoch() {
    let mut sim = three_masters_with_slots(2000);
    let (m0, m1) = (sim.id(0), sim.id(1));
    let top = (0..3)
        .map(|i| sim.nodes[2].node(&sim.id(i)).unwrap().config_epoch)
        .max()
        .unwrap();
    sim.nodes[0].set_my_config_epoch(top + 10);
    sim.advance(2000);
    // Node 0 gives slot 5 to node 1, whose epoch stays smaller (no IMPORTING, no bump). The
    // others keep the slot bound to node 0 meanwhile (no CLUSTERDOWN), then node 1's claim
    // takes it whatever the epochs.
    assert!(sim.nodes[0].set_slot_node(5, m1));
    sim.advance(2000);
    assert_eq!(sim.nodes[2].slot_owner(5), Some(m0));
    assert!((0..3).all(|i| sim.nodes[i].health() == Health::Ok));
    assert!(sim.nodes[1].set_slot_node(5, m1));
    sim.advance(3000);
    for i in 0..3 {
        assert_eq!(sim.nodes[i].slot_owner(5), Some(m1), "observer {i}");
    }
    assert!(
        sim.deleted_slots[1].is_empty(),
        "{:?}",
        sim.deleted_slots[1]
    );
}
