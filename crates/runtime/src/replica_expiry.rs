//! Expiry on a replica, as Redis 7.2 does it: the master decides when its keys expire and
//! sends a DEL for each; until then a replica's clients see an expired key as absent but
//! nothing on the replica deletes it or logs anything (no active cycle, no lazy deletion), and
//! the master's own stream sees every key as present. A writable replica deletes the expired
//! keys its write commands meet and expires the keys its own clients gave a TTL. The engine
//! applies these rules (`tern_engine::expire::Role`); this module tells it the role, which
//! the replication state owns.

use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};
use tern_engine::expire::Role;

// Process-wide: the engine's role hook is a plain `fn() -> Role` with no server at hand; set
// once at start (`install`).
static SERVER: OnceLock<Arc<Server>> = OnceLock::new();

/// Let the engine ask `srv` for its role (once, at start; first call wins).
pub fn install(srv: &Arc<Server>) {
    let _ = SERVER.set(srv.clone());
    tern_engine::expire::set_role_hook(role);
}

/// The engine's role hook: a promotion (REPLICAOF NO ONE) or a change of
/// `replica-read-only` shows at the next expired key met.
fn role() -> Role {
    match SERVER.get() {
        Some(srv) => role_of(srv),
        None => Role::Master,
    }
}

/// Whether `srv` is a replica as Redis's `iAmMaster` sees it: it follows a master, or, in
/// cluster mode, its node is a replica (from nodes.conf at start-up, before the bus has
/// started the link), so keys already expired stay at load and no cycle expires them.
pub fn is_replica(srv: &Server) -> bool {
    srv.master_link.is_replica()
        || srv.cluster.get().is_some_and(|c| {
            c.with_routes(|r| {
                r.nodes
                    .get(r.myself as usize)
                    .is_some_and(|me| me.master.is_some())
            })
        })
}

/// `srv`'s role for expiry.
pub fn role_of(srv: &Server) -> Role {
    if !is_replica(srv) {
        Role::Master
    } else if srv.config.hot.replica_read_only.load(Relaxed) {
        Role::Replica
    } else {
        Role::WritableReplica
    }
}

/// True when `srv` must not evict for `maxmemory` (a replica under `replica-ignore-maxmemory`,
/// the default: it stays an exact copy of its master, whose DELs free the memory).
pub fn ignores_maxmemory(srv: &Server) -> bool {
    srv.master_link.is_replica() && srv.config.get_bool("replica-ignore-maxmemory")
}
