//! The routing table: for each hash slot, the node serving it and how to reach that node, plus
//! the slots being migrated or imported. It is a snapshot of the cluster state, rebuilt when the
//! state changes, so the per-command slot check needs no lock of the state.

use tern_cluster::state::{ClusterState, Health};
use tern_cluster::{NodeId, SlotSet, CLUSTER_SLOTS};

/// No node serves the slot.
pub const UNASSIGNED: u16 = u16::MAX;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteNode {
    pub id: NodeId,
    /// How clients reach the node: `ip:port` as MOVED/ASK print it (the announced endpoint).
    pub ip: String,
    pub port: u16,
    /// `cluster-announce-hostname` as the node gossips it.
    pub hostname: Vec<u8>,
    /// The master this node replicates, an index into `nodes`.
    pub master: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routes {
    pub nodes: Vec<RouteNode>,
    /// Index of this node in `nodes`.
    pub myself: u16,
    /// Per slot, the index of the node serving it, or [`UNASSIGNED`].
    pub owner: Vec<u16>,
    /// Slots this node is migrating, with the target (index into `nodes`).
    pub migrating: Vec<(u16, u16)>,
    /// Slots this node is importing, with the source.
    pub importing: Vec<(u16, u16)>,
    /// The cluster state is `ok`.
    pub ok: bool,
    /// One bit per slot: served here with nothing to decide (the state is ok, this node owns
    /// it, it is neither migrating nor importing). The per-command check reads this 2 KB
    /// bitmap rather than `owner`'s 32 KB.
    pub served: SlotSet,
}

impl Routes {
    pub fn of(state: &ClusterState) -> Routes {
        let nodes: Vec<RouteNode> = state
            .nodes()
            .map(|n| RouteNode {
                id: n.id,
                ip: n.ip.clone(),
                port: n.port,
                hostname: n.hostname.clone(),
                master: None,
            })
            .collect();
        let index = |id: &NodeId| {
            nodes
                .binary_search_by(|n| n.id.cmp(id))
                .map_or(UNASSIGNED, |i| i as u16)
        };
        let mut nodes_with_masters = nodes.clone();
        for (n, r) in state.nodes().zip(nodes_with_masters.iter_mut()) {
            r.master = n.master.map(|m| index(&m)).filter(|&i| i != UNASSIGNED);
        }
        // The bus republishes every cron: slots come in runs of one owner, so the index
        // lookup is done once per run, not once per slot.
        let mut last: Option<(NodeId, u16)> = None;
        let owner = (0..CLUSTER_SLOTS as u16)
            .map(|s| match state.slot_owner(s) {
                None => UNASSIGNED,
                Some(id) => match last {
                    Some((l, i)) if l == id => i,
                    _ => {
                        let i = index(&id);
                        last = Some((id, i));
                        i
                    }
                },
            })
            .collect::<Vec<u16>>();
        let myself = index(&state.myself());
        let ok = state.health() == Health::Ok;
        let mut served = SlotSet::new();
        for (slot, &node) in (0..).zip(&owner) {
            let moving = state.migrating.contains_key(&slot) || state.importing.contains_key(&slot);
            if ok && node == myself && !moving {
                served.insert(slot);
            }
        }
        Routes {
            myself,
            owner,
            migrating: state
                .migrating
                .iter()
                .map(|(&s, n)| (s, index(n)))
                .collect(),
            importing: state
                .importing
                .iter()
                .map(|(&s, n)| (s, index(n)))
                .collect(),
            ok,
            served,
            nodes: nodes_with_masters,
        }
    }

    /// The node this node is migrating `slot` to.
    pub fn migrating_to(&self, slot: u16) -> Option<u16> {
        find(&self.migrating, slot)
    }

    /// The node this node is importing `slot` from.
    pub fn importing_from(&self, slot: u16) -> Option<u16> {
        find(&self.importing, slot)
    }

    /// How a redirection names `node` (`cluster-preferred-endpoint-type`): its ip, its
    /// hostname (`?` when it has none), or nothing for `unknown-endpoint` (as Redis's
    /// `getPreferredEndpoint`).
    pub fn endpoint(&self, srv: &crate::server::Server, node: &RouteNode) -> String {
        let kind = srv.config.get("cluster-preferred-endpoint-type");
        match kind.as_deref() {
            Some("hostname") if !node.hostname.is_empty() => {
                String::from_utf8_lossy(&node.hostname).into_owned()
            }
            Some("hostname") => "?".into(),
            Some("unknown-endpoint") => String::new(),
            _ => node.ip.clone(),
        }
    }
}

fn find(pairs: &[(u16, u16)], slot: u16) -> Option<u16> {
    pairs
        .binary_search_by_key(&slot, |&(s, _)| s)
        .ok()
        .map(|i| pairs[i].1)
}
