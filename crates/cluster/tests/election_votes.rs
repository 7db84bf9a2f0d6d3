//! The masters' vote rules for FAILOVER_AUTH_REQUEST, one rule at a time, on a node loaded from
//! a nodes.conf: one vote per epoch, only for a replica whose master is failing, not twice about
//! one master within two node timeouts, and never for slots served at a greater configEpoch.

use tern_cluster::msg::Header;
use tern_cluster::state::{Action, ClusterState, Config, Link};
use tern_cluster::{Body, Msg, NodeFlags, NodeId, NodesConf, SlotSet};

const ME: &str = "aaaa000000000000000000000000000000000001";
const M: &str = "bbbb000000000000000000000000000000000002";
const R: &str = "cccc000000000000000000000000000000000003";
const NOW: u64 = 1_800_000_000_000;

fn id(s: &str) -> NodeId {
    NodeId::parse(s.as_bytes()).unwrap()
}

fn voter(master_flags: &str) -> ClusterState {
    let text = format!(
        "{ME} 127.0.0.1:7701@17701 myself,master - 0 0 3 connected 5461-16383\n\
         {M} 127.0.0.1:7702@17702 {master_flags} - 0 0 2 connected 0-5460\n\
         {R} 127.0.0.1:7703@17703 slave {M} 0 0 2 connected\n\
         vars currentEpoch 3 lastVoteEpoch 0\n"
    );
    let conf = NodesConf::parse(&text).unwrap();
    let config = Config {
        node_timeout: 1000,
        ..Config::default()
    };
    ClusterState::from_conf(config, &conf, 3, NOW)
}

fn request(current_epoch: u64, config_epoch: u64) -> Msg {
    let header = Header {
        current_epoch,
        config_epoch,
        sender: id(R),
        replicaof: Some(id(M)),
        slots: SlotSet::from_ranges(&[(0, 5460)]).unwrap(),
        flags: NodeFlags::REPLICA,
        ..Header::default()
    };
    Msg::new(header, Body::FailoverAuthRequest)
}

fn logs(node: &mut ClusterState) -> Vec<String> {
    node.take_actions()
        .into_iter()
        .filter_map(|a| match a {
            Action::Log { line, .. } => Some(line),
            _ => None,
        })
        .collect()
}

#[test]
fn one_vote_per_epoch_for_a_replica_of_a_failing_master() {
    let mut node = voter("master,fail");
    node.link_connected(id(R), NOW);
    node.take_actions();
    node.handle_message(Link::Inbound(1), "127.0.0.1", &request(4, 2), NOW);
    let actions = node.take_actions();
    assert!(actions.iter().any(|a| matches!(a,
        Action::Send { link: Link::Outbound(to), msg } if *to == id(R) && msg.body == Body::FailoverAuthAck)));
    assert!(actions.iter().any(|a| matches!(a, Action::Log { line, .. }
        if *line == format!("Failover auth granted to {R} () for epoch 4"))));
    assert_eq!(node.last_vote_epoch, 4);

    // Same epoch again: already voted.
    node.handle_message(Link::Inbound(1), "127.0.0.1", &request(4, 2), NOW + 1);
    assert_eq!(
        logs(&mut node),
        vec![format!(
            "Failover auth denied to {R} (): already voted for epoch 4"
        )]
    );
    // A stale epoch.
    node.handle_message(Link::Inbound(1), "127.0.0.1", &request(3, 2), NOW + 2);
    assert_eq!(
        logs(&mut node),
        vec![format!(
            "Failover auth denied to {R} (): reqEpoch (3) < curEpoch(4)"
        )]
    );
    // A new epoch, but the same master voted about less than two node timeouts ago.
    node.handle_message(Link::Inbound(1), "127.0.0.1", &request(5, 2), NOW + 500);
    assert_eq!(
        logs(&mut node),
        vec![format!(
            "Failover auth denied to {R} : can't vote about this master before 1500 milliseconds"
        )]
    );
    // Later it may vote again.
    node.handle_message(Link::Inbound(1), "127.0.0.1", &request(6, 2), NOW + 2500);
    assert_eq!(
        logs(&mut node),
        vec![format!("Failover auth granted to {R} () for epoch 6")]
    );
}

#[test]
fn no_vote_while_the_master_is_up_or_for_stale_slots() {
    let mut node = voter("master");
    node.handle_message(Link::Inbound(1), "127.0.0.1", &request(4, 2), NOW);
    assert_eq!(
        logs(&mut node),
        vec![format!("Failover auth denied to {R} (): its master is up")]
    );
    assert_eq!(node.last_vote_epoch, 0);

    // The replica claims slots 0-5460 at configEpoch 1, but they are served at 2.
    let mut node = voter("master,fail");
    node.handle_message(Link::Inbound(1), "127.0.0.1", &request(4, 1), NOW);
    assert_eq!(
        logs(&mut node),
        vec![format!(
            "Failover auth denied to {R} (): slot 0 epoch (2) > reqEpoch (1)"
        )]
    );
}
