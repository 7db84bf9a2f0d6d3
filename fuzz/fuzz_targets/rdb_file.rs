//! Fuzz whole-RDB-file parsing: arbitrary bytes after an `REDIS0012` header (the CRC not
//! verified), loaded from one slice and streamed in 7-byte reads.
//! Checks: nothing panics; both ways hand out the same keys (with their member times and
//! KEYDB.CRON jobs) when the slice load succeeds.
//! Run: `cd fuzz && cargo +nightly fuzz run rdb_file`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_persist::rdb::file::{load, load_from, LoadOptions, LoadedKey};

/// Hands out at most 7 bytes per read, as a socket may.
struct Trickle<'a>(&'a [u8]);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(7).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn describe(k: LoadedKey) -> String {
    format!("{} {:?} {} {:?}", k.db, k.key, k.expire_at, k.value)
}

fuzz_target!(|data: &[u8]| {
    let mut file = b"REDIS0012".to_vec();
    file.extend_from_slice(data);
    let opts = LoadOptions {
        deep: true,
        verify_crc: false,
        name_expired: false,
    };
    let mut whole = Vec::new();
    let ok = load(&file, 0, false, opts, |k| whole.push(describe(k)), |_, _| {}, |_| {}).is_ok();
    let mut streamed = Vec::new();
    let r = load_from(
        &mut Trickle(&file),
        0,
        false,
        opts,
        |k| streamed.push(describe(k)),
        |_, _| {},
        |_| {},
    );
    if ok && r.is_ok() {
        assert_eq!(whole, streamed, "slice and streamed loads agree");
    }
});
