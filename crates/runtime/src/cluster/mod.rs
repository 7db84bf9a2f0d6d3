//! Cluster mode (`cluster-enabled yes`): the node's [`tern_cluster::state::ClusterState`], driven
//! by the bus (its sockets and cron) and by CLUSTER commands, and the routing table every
//! command consults for its keys' slots (MOVED/ASK/CROSSSLOT/CLUSTERDOWN).
//!
//! The state machine is I/O-free; whoever changes it (a bus message, the cron, a command) then
//! calls [`Cluster::changed`], which publishes a fresh [`routes::Routes`] when slots, nodes or the
//! health moved, and wakes the bus to carry out the actions the change queued.

pub mod blocked;
pub mod bus;
pub mod conf_file;
pub mod redirect;
pub mod routes;
pub mod settings;
pub mod slot_keys;
pub mod start;
pub mod verify_data;

/// The protocol crate, for the command families (which depend on the runtime only).
pub use tern_cluster as proto;

use parking_lot::{Mutex, RwLock};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tern_cluster::state::ClusterState;

pub struct Cluster {
    /// The cluster's view from this node. Locked briefly by the bus and by commands; never
    /// held across I/O.
    pub state: Mutex<ClusterState>,
    /// What dispatch reads for every keyed command: replaced whole, so readers never wait on
    /// the state lock.
    routes: RwLock<Arc<routes::Routes>>,
    /// Bumped with every new routing table: threads keep their own copy of the table and only
    /// look at the shared one when this moved (no shared cache line written per command).
    version: AtomicU64,
    /// `state.changes()` when the routing table was last rebuilt.
    seen_changes: AtomicU64,
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
            version: AtomicU64::new(1),
            seen_changes: AtomicU64::new(u64::MAX),
            wake,
            io: bus::Io::default(),
        }
    }

    /// The routing table as of the last change.
    #[inline]
    pub fn routes(&self) -> Arc<routes::Routes> {
        self.routes.read().clone()
    }

    /// Run `f` on the current routing table, through this thread's copy.
    #[inline]
    pub fn with_routes<R>(&self, f: impl FnOnce(&routes::Routes) -> R) -> R {
        thread_local! {
            static CACHED: RefCell<Option<(usize, u64, Arc<routes::Routes>)>> =
                const { RefCell::new(None) };
        }
        let me = self as *const Cluster as usize;
        let version = self.version.load(Ordering::Acquire);
        CACHED.with(|c| {
            // The hit path only reads the thread's copy: no reference count is touched.
            if let Ok(cache) = c.try_borrow() {
                if let Some((who, v, table)) = &*cache {
                    if *who == me && *v == version {
                        return f(table);
                    }
                }
            }
            let table = self.routes();
            if let Ok(mut cache) = c.try_borrow_mut() {
                *cache = Some((me, version, table.clone()));
            }
            f(&table)
        })
    }

    /// PUBLISH (or, `shard`, SPUBLISH) in cluster mode: it travels to the other nodes over
    /// the bus, not in the replication stream (Redis's `clusterPropagatePublish`).
    pub fn publish(&self, channel: &[u8], message: &[u8], shard: bool) {
        self.state.lock().publish(channel, message, shard);
        (self.wake)();
    }

    /// After any change to `state`: republish the routing table and let the bus act.
    pub fn changed(&self, state: &ClusterState) {
        self.rebuild_routes(state);
        (self.wake)();
    }

    /// Republish the routing table if `state` changed it (the bus, which acts itself). The
    /// table is only rebuilt when the state counted a change since the last look: the bus
    /// calls this every cron.
    pub fn publish_routes(&self, state: &ClusterState) {
        if self.seen_changes.swap(state.changes(), Ordering::Relaxed) != state.changes() {
            self.rebuild_routes(state);
        }
    }

    fn rebuild_routes(&self, state: &ClusterState) {
        self.seen_changes.store(state.changes(), Ordering::Relaxed);
        let fresh = routes::Routes::of(state);
        if *self.routes.read().as_ref() != fresh {
            *self.routes.write() = Arc::new(fresh);
            self.version.fetch_add(1, Ordering::Release);
        }
    }
}
