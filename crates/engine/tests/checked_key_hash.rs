//! The slot check's kept key hash (cluster mode): used for the same bytes only while the
//! command runs, never for other bytes that later sit at the same address. A test binary of
//! its own, since slot hashing is a process-wide switch.

use tern_engine::hash::{
    checked_key_slot, forget_checked_key, key_hash, set_slot_hashing, slot_of_hash,
};

#[test]
fn kept_hash_serves_the_checked_bytes_and_is_forgotten_with_the_command() {
    set_slot_hashing(true);
    let mut key = b"user:1000".to_vec();
    let slot = checked_key_slot(&key);
    assert_eq!(slot, tern_cluster::key_hash_slot(b"user:1000"));
    let checked = key_hash(&key);
    assert_eq!(slot_of_hash(checked), slot);
    // The same bytes elsewhere hash the same without the kept value.
    assert_eq!(key_hash(&key.clone()), checked);

    // The command ends; its argument buffer is reused in place for another key.
    forget_checked_key();
    key.copy_from_slice(b"user:2000");
    let fresh = key_hash(&key);
    assert_eq!(fresh, key_hash(b"user:2000"));
    assert_ne!(fresh, checked);
    assert_eq!(
        slot_of_hash(fresh),
        tern_cluster::key_hash_slot(b"user:2000")
    );
}
