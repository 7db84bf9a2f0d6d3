//! Cluster mode (`cluster-enabled yes`): the node's [`tern_cluster::state::ClusterState`], driven
//! by the bus (its sockets and cron) and by CLUSTER commands, and the routing table every
//! command consults for its keys' slots (MOVED/ASK/CROSSSLOT/CLUSTERDOWN).
//!
//! The state machine is I/O-free; whoever changes it (a bus message, the cron, a command) then
//! calls [`Cluster::changed`], which publishes a fresh [`routes::Routes`] when slots, nodes or the
//! health moved, and wakes the bus to carry out the actions the change queued.

pub mod bus;
pub mod conf_file;
pub mod routes;
pub mod settings;
pub mod slot_keys;
pub mod start;

/// The protocol crate, for the command families (which depend on the runtime only).
pub use tern_cluster as proto;

use parking_lot::{Mutex, RwLock};
use std::sync::Arc;
use tern_cluster::state::ClusterState;

pub struct Cluster {
    /// The cluster's view from this node. Locked briefly by the bus and by commands; never
    /// held across I/O.
    pub state: Mutex<ClusterState>,
    /// What dispatch reads for every keyed command: replaced whole, so readers never wait on
    /// the state lock.
    routes: RwLock<Arc<routes::Routes>>,
    /// Wakes the bus thread to drain the state's actions (messages, connects, config saves).
    wake: Box<dyn Fn() + Send + Sync>,
    /// The bus's links, message counters and nodes.conf (see `bus`).
    pub io: bus::Io,
}

impl Cluster {
    pub fn new(state: ClusterState, wake: Box<dyn Fn() + Send + Sync>) -> Cluster {
        let routes = routes::Routes::of(&state);
        Cluster {
            state: Mutex::new(state),
            routes: RwLock::new(Arc::new(routes)),
            wake,
            io: bus::Io::default(),
        }
    }

    /// The routing table as of the last change.
    #[inline]
    pub fn routes(&self) -> Arc<routes::Routes> {
        self.routes.read().clone()
    }

    /// After any change to `state`: republish the routing table and let the bus act.
    pub fn changed(&self, state: &ClusterState) {
        self.publish(state);
        (self.wake)();
    }

    /// Republish the routing table if `state` changed it (the bus, which acts itself).
    pub fn publish(&self, state: &ClusterState) {
        let fresh = routes::Routes::of(state);
        if *self.routes.read().as_ref() != fresh {
            *self.routes.write() = Arc::new(fresh);
        }
    }
}
