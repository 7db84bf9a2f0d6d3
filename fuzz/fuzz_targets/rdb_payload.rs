//! Fuzz DUMP payload decoding: arbitrary value bytes (type byte and body; RDB version and
//! checksum appended, the checksum not verified, so the value itself is parsed), decoded with
//! shallow and with deep sanitization.
//! Checks: nothing panics; a value accepted with deep sanitization encodes to a payload that
//! decodes again, and encodes the same way the second time.
//! Run: `cd fuzz && cargo +nightly fuzz run rdb_payload`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_persist::rdb::{dump_payload, restore_payload_with};

fuzz_target!(|data: &[u8]| {
    let mut p = data.to_vec();
    p.extend_from_slice(&11u16.to_le_bytes());
    p.extend_from_slice(&[0; 8]);
    let _ = restore_payload_with(&p, false, false);
    if let Ok(v) = restore_payload_with(&p, false, true) {
        let again = dump_payload(&v);
        let back = restore_payload_with(&again, true, true).expect("a re-encoded value decodes");
        assert_eq!(dump_payload(&back), again, "encoding is stable");
    }
});
