//! Fuzz the cluster bus message decoder: arbitrary bytes, and arbitrary bytes behind a valid
//! signature and matching totlen (so the body decoders are reached quickly).
//! Checks: no panic; decode/encode round trip (see ../cluster_check.rs).
//! Run: `cd fuzz && cargo +nightly fuzz run cluster_msg`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../cluster_check.rs"]
mod cluster_check;

fuzz_target!(|data: &[u8]| {
    let _ = cluster_check::check(data);
    // The same bytes as a body behind a plausible header (version 1, totlen fixed up).
    let mut framed = data.to_vec();
    if framed.len() < tern_cluster::msg::HEADER_LEN {
        framed.resize(tern_cluster::msg::HEADER_LEN, 0);
    }
    framed[0..4].copy_from_slice(b"RCmb");
    let len = framed.len() as u32;
    framed[4..8].copy_from_slice(&len.to_be_bytes());
    framed[8..10].copy_from_slice(&1u16.to_be_bytes());
    let _ = cluster_check::check(&framed);
});
