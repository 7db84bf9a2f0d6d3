//! DEBUG DIGEST / DIGEST-VALUE: the dataset fingerprint Redis 7.2 computes, so that tern and
//! redis-server holding the same data report the same 40 hex digits.
//!
//! The scheme (Redis's, rebuilt from its description): every digest is 20 bytes of SHA-1.
//! "xor in" a string = xor its SHA-1 into the digest (order-free, for unordered members);
//! "mix in" a string = xor in, then replace the digest by the SHA-1 of itself (order matters).
//! A value's digest mixes in its type number, then its contents (strings and list elements
//! mixed; set members xored; each hash pair and zset member+score digested on its own from
//! zero, then xored; stream IDs `ms.seq`, fields and values mixed), and xors in `!!expire!!`
//! when the key has a TTL. The dataset digest walks the non-empty databases in order, mixes
//! in the DB number (big-endian u32), and xors in each key's digest's SHA-1 (key mixed in, then its
//! value). Elements are always hashed as text (integers in decimal), so the encoding never
//! shows.

use sha1_smol::Sha1;
use tern_engine::entry::Entry;
use tern_engine::types::double::fpconv_dtoa;
use tern_engine::value::Value;

pub type Digest = [u8; 20];

fn sha1(data: &[u8]) -> Digest {
    Sha1::from(data).digest().bytes()
}

/// Xor the SHA-1 of `data` into `d`.
pub fn xor_in(d: &mut Digest, data: &[u8]) {
    let h = sha1(data);
    for (a, b) in d.iter_mut().zip(h.iter()) {
        *a ^= b;
    }
}

/// Xor in `data`, then replace `d` by the SHA-1 of the result.
pub fn mix_in(d: &mut Digest, data: &[u8]) {
    xor_in(d, data);
    *d = sha1(d);
}

/// Redis's type numbers (string 0, list 1, set 2, zset 3, hash 4, stream 6; a KEYDB.CRON job
/// its RDB type, 64).
fn type_number(v: &Value) -> u32 {
    match v {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
        Value::Stream(_) => 6,
        Value::Cron(_) => 64,
    }
}

/// Mix one value (and its TTL flag) into `d`: what DIGEST-VALUE reports for a key, starting
/// from zeros.
pub fn value_digest(d: &mut Digest, v: &Value, has_ttl: bool) {
    mix_in(d, &type_number(v).to_be_bytes());
    match v {
        Value::Str(s) => s.with_bytes(|b| mix_in(d, b)),
        Value::List(l) => l.for_range(0, l.len(), |e| e.with_bytes(|b| mix_in(d, b))),
        Value::Set(s) => {
            for m in s.iter() {
                m.with_bytes(|b| xor_in(d, b));
            }
        }
        Value::ZSet(z) => z.for_each(|member, score| {
            let mut e = [0u8; 20];
            mix_in(&mut e, member);
            mix_in(&mut e, fpconv_dtoa(score).as_bytes());
            xor_in(d, &e);
        }),
        Value::Hash(h) => {
            for (f, val) in h.iter() {
                let mut e = [0u8; 20];
                f.with_bytes(|b| mix_in(&mut e, b));
                val.with_bytes(|b| mix_in(&mut e, b));
                xor_in(d, &e);
            }
        }
        Value::Stream(s) => {
            use tern_engine::types::stream::StreamId;
            for entry in s.range(StreamId::MIN, StreamId::MAX) {
                mix_in(d, format!("{}.{}", entry.id.ms, entry.id.seq).as_bytes());
                for item in entry.items() {
                    mix_in(d, item);
                }
            }
        }
        // What the job is, not where its schedule stands: a master moves a repeating job's
        // origin at each run without telling its replicas.
        Value::Cron(j) => {
            mix_in(d, &j.script);
            mix_in(d, format!("{} {}", j.interval_ms, j.single).as_bytes());
            for s in j.keys.iter().chain(j.args.iter()) {
                mix_in(d, s);
            }
        }
    }
    if has_ttl {
        xor_in(d, b"!!expire!!");
    }
}

/// The digest of one key/value pair as the dataset digest xors it in.
pub fn entry_digest(e: &Entry) -> Digest {
    let mut d = [0u8; 20];
    mix_in(&mut d, e.key());
    value_digest(&mut d, &e.value, e.expire_at() != 0);
    d
}

/// The WATCH checker's fingerprint of an entry (`tern_engine::watch::enable_check`): its
/// contents as DIGEST-VALUE sees them (so no encoding change shows), its exact expiry, and for
/// a stream the state the digest leaves out (IDs, counters, consumer groups).
pub fn watch_fingerprint(e: &Entry) -> Vec<u8> {
    let mut d = [0u8; 20];
    value_digest(&mut d, &e.value, false);
    let mut out = d.to_vec();
    out.extend_from_slice(&e.expire_at().to_le_bytes());
    if let Value::Stream(s) = &e.value {
        let meta = format!(
            "{:?} {:?} {:?} {} {:?}",
            s.last_id, s.first_id, s.max_deleted_entry_id, s.entries_added, s.groups
        );
        out.extend_from_slice(meta.as_bytes());
    }
    out
}

/// Turn on the WATCH checker in debug builds, or when `TERN_WATCH_CHECK=1` is in the
/// environment (the tests set it for release builds).
pub fn maybe_enable_watch_check() {
    if cfg!(debug_assertions) || std::env::var("TERN_WATCH_CHECK").is_ok_and(|v| v == "1") {
        tern_engine::watch::enable_check(watch_fingerprint);
    }
}

pub fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_depends_on_order_xor_does_not() {
        let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
        mix_in(&mut a, b"x");
        mix_in(&mut a, b"y");
        mix_in(&mut b, b"y");
        mix_in(&mut b, b"x");
        assert_ne!(a, b);
        let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
        xor_in(&mut a, b"x");
        xor_in(&mut a, b"y");
        xor_in(&mut b, b"y");
        xor_in(&mut b, b"x");
        assert_eq!(a, b);
    }
}
