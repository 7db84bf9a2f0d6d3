//! The keys of one hash slot, as the node's own logic needs them: deleting a slot it lost
//! (propagated as DELs, as Redis's `delKeysInSlot`) and counting a slot's keys (SETSLOT NODE
//! refuses to give away a slot that still holds keys).
//!
//! In cluster mode only database 0 holds keys.

use crate::server::Server;

/// Keys of `slot` in db 0, from the dicts' per-slot index.
fn keys_of_slot(srv: &Server, slot: u16, max: usize) -> Vec<Box<[u8]>> {
    srv.store.lock_slot(0, slot).dict().keys_in_slot(slot, max)
}

/// How many keys db 0 holds in `slot`.
pub fn count_slot_keys(srv: &Server, slot: u16) -> usize {
    srv.store.lock_slot(0, slot).dict().count_in_slot(slot)
}

/// Delete every key of `slot`, each reaching replicas and the AOF as a DEL.
pub fn delete_slot_keys(srv: &Server, slot: u16) {
    let keys = keys_of_slot(srv, slot, usize::MAX);
    for k in &keys {
        let (hash, mut g) = srv.store.lock(0, k);
        if g.remove(hash, k).is_some() {
            drop(g);
            crate::propagate::propagate_delete(srv, 0, k, false);
        }
    }
}
