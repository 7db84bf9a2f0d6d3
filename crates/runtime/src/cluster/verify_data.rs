//! Start-up, once the dataset is loaded (Redis's `verifyClusterConfigWithData`): a master that
//! finds keys of slots nodes.conf does not give it keeps them reachable instead of leaving them
//! stranded. A slot nobody serves becomes its own; a slot another node serves is marked as
//! being imported from that node, so ASKING clients reach the keys and a reshard can move them.
//! A replica is left alone: its data is its master's.

use super::slot_keys::count_slot_keys;
use crate::server::Server;
use tern_cluster::CLUSTER_SLOTS;

pub fn claim_slots_of_loaded_keys(srv: &Server) {
    let Some(cluster) = srv.cluster.get() else {
        return;
    };
    let mut st = cluster.state.lock();
    let me = st.myself();
    if !st.node(&me).is_some_and(|n| n.is_master()) {
        return;
    }
    let mut unassigned = Vec::new();
    let mut elsewhere = Vec::new();
    for slot in 0..CLUSTER_SLOTS as u16 {
        if count_slot_keys(srv, slot) == 0 || st.importing.contains_key(&slot) {
            continue;
        }
        match st.slot_owner(slot) {
            Some(owner) if owner == me => {}
            Some(owner) => elsewhere.push((slot, owner)),
            None => unassigned.push(slot),
        }
    }
    if unassigned.is_empty() && elsewhere.is_empty() {
        return;
    }
    for &slot in &unassigned {
        crate::log::notice(&format!(
            "I have keys for unassigned slot {slot}. Taking responsibility for it."
        ));
    }
    if !unassigned.is_empty() {
        st.add_my_slots(&unassigned);
    }
    for (slot, owner) in elsewhere {
        crate::log::notice(&format!(
            "I have keys for slot {slot}, but the slot is assigned to another node. Setting it to importing state."
        ));
        st.set_slot_importing(slot, owner);
    }
    // Saved (and fsynced) before anything else happens, as Redis: a node that cannot record
    // its configuration does not go on.
    let (seq, text) = cluster.io.snapshot(&st);
    if let Err(e) = cluster.io.save(seq, &text, true) {
        crate::log::warning(&format!("Fatal: can't update cluster config file: {e}"));
        std::process::exit(1);
    }
    cluster.changed(&st);
}
