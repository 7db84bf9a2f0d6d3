//! The keys of one hash slot, as the node's own logic needs them: deleting a slot it lost
//! (propagated as DELs, as Redis's `delKeysInSlot`) and counting a slot's keys (SETSLOT NODE
//! refuses to give away a slot that still holds keys).
//!
//! In cluster mode only database 0 holds keys.

use crate::server::Server;
use tern_cluster::key_hash_slot;

/// Keys of `slot` in db 0 (a walk of the keyspace until the engine's per-slot index lands).
fn keys_of_slot(srv: &Server, slot: u16, max: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..srv.store.shards_per_db() {
        let g = srv.store.lock_shard(0, i);
        for e in g.dict().iter() {
            if key_hash_slot(e.key()) == slot {
                out.push(e.key().to_vec());
                if out.len() >= max {
                    return out;
                }
            }
        }
    }
    out
}

/// How many keys db 0 holds in `slot`.
pub fn count_slot_keys(srv: &Server, slot: u16) -> usize {
    keys_of_slot(srv, slot, usize::MAX).len()
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
