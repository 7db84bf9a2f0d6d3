//! Clients blocked on keys follow their slot (Redis's `clusterRedirectBlockedClientIfNeeded`,
//! run from the clients cron): once the cluster is down, or the slot of the keys a client
//! waits on is served by another node, nothing here will ever serve it, so its wait ends
//! with the error a new command on those keys would get, and a cluster client retries
//! where it is told to.

use super::redirect::{message, Refusal};
use super::routes::{Routes, UNASSIGNED};
use crate::clients::cflags;
use crate::server::Server;
use crate::table::flags;
use tern_cluster::key_hash_slot;

/// Called by the clients cron: end the wait of every key-blocked client this node can no
/// longer serve.
pub fn redirect_blocked_clients(srv: &Server) {
    if !srv.blocking.any() {
        return;
    }
    let Some(cluster) = srv.cluster.get() else {
        return;
    };
    let routes = cluster.routes();
    for w in srv.blocking.waiters() {
        // WAIT, WAITAOF and SHUTDOWN wait on no key: they stay.
        let Some(key) = w.keys().first() else {
            continue;
        };
        let write = srv
            .commands
            .get(w.command_name())
            .is_some_and(|e| e.spec.flags & flags::WRITE != 0);
        let readonly = w.client().has_flag(cflags::READONLY);
        if let Some(refusal) = refusal(&routes, key, readonly && !write) {
            srv.blocking.fail(&w, message(srv, &routes, refusal));
        }
    }
}

/// Why a client blocked on `key` (every key of a blocked command is in one slot) can no
/// longer wait here. `replica_read`: a READONLY client blocked in a read command, which a
/// replica serves for its master's slots.
fn refusal(routes: &Routes, key: &[u8], replica_read: bool) -> Option<Refusal> {
    // Even when reads are allowed while down: only a write could serve the client, and no
    // write will come.
    if !routes.ok {
        return Some(Refusal::Down);
    }
    let slot = key_hash_slot(key);
    let owner = routes.owner[slot as usize];
    let me = &routes.nodes[routes.myself as usize];
    if owner == routes.myself || (replica_read && me.master == Some(owner)) {
        return None;
    }
    // A slot being imported here is served to ASKING clients: the client may be one.
    if routes.importing_from(slot).is_some() {
        return None;
    }
    Some(if owner == UNASSIGNED {
        Refusal::Unbound
    } else {
        Refusal::Moved(slot, owner)
    })
}
