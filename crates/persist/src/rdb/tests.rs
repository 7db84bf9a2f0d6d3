use super::*;
use tern_engine::types::stream::StreamId;
use tern_engine::types::{HashValue, ListValue, SetValue, StreamValue, ZSetValue};
use tern_engine::value::Value;

fn round_trip(v: &Value) -> Value {
    let p = dump_payload(v);
    restore_payload(&p).expect("restores")
}

#[test]
fn strings() {
    for s in [
        &b"42"[..],
        b"-7",
        b"hello",
        b"",
        b"12345678901234567890",
        &[b'x'; 500][..],
    ] {
        let v = Value::from_bytes(s);
        let back = round_trip(&v);
        assert_eq!(back, v);
    }
}

#[test]
fn collections() {
    for n in [3usize, 300] {
        let mut l = ListValue::new();
        for i in 0..n {
            let s = format!("item{i}");
            l.try_grow(s.len(), 1);
            l.push(s.as_bytes(), false);
        }
        let v = Value::List(l);
        let back = round_trip(&v);
        let (Value::List(a), Value::List(b)) = (&v, &back) else {
            panic!()
        };
        assert_eq!(a.to_vecs(), b.to_vecs());

        for ints in [true, false] {
            let first = if ints {
                "1".to_string()
            } else {
                "a".to_string()
            };
            let mut s = SetValue::create(first.as_bytes(), n);
            for i in 0..n {
                let m = if ints { i.to_string() } else { format!("m{i}") };
                s.add(m.as_bytes());
            }
            let v = Value::Set(s);
            let back = round_trip(&v);
            let (Value::Set(a), Value::Set(b)) = (&v, &back) else {
                panic!()
            };
            assert_eq!(a.len(), b.len());
            assert_eq!(a.encoding(), b.encoding());
            for m in a.iter() {
                assert!(m.with_bytes(|x| b.contains(x)));
            }
        }

        let mut z = ZSetValue::with_hint(n, 5);
        let mut h = HashValue::new();
        for i in 0..n {
            z.insert(format!("m{i}").as_bytes(), i as f64 * 1.5 - 3.0);
            h.set(format!("f{i}").as_bytes(), format!("v{i}").as_bytes());
        }
        let v = Value::ZSet(z);
        let back = round_trip(&v);
        let (Value::ZSet(a), Value::ZSet(b)) = (&v, &back) else {
            panic!()
        };
        assert_eq!(a.to_vec(), b.to_vec());
        assert_eq!(a.encoding(), b.encoding());
        let v = Value::Hash(h);
        let back = round_trip(&v);
        let (Value::Hash(a), Value::Hash(b)) = (&v, &back) else {
            panic!()
        };
        assert_eq!(a.len(), b.len());
        assert_eq!(a.encoding(), b.encoding());
        for (f, x) in a.iter() {
            assert_eq!(
                f.with_bytes(|fb| b.get(fb).map(|e| e.to_vec())),
                Some(x.to_vec())
            );
        }
    }
}

#[test]
fn streams() {
    let mut s = StreamValue::new();
    for i in 0..250u64 {
        let f = if i % 3 == 0 { "other" } else { "f" };
        s.append(
            Some(StreamId::new(1000 + i, i)),
            true,
            &[f, "v", "g", &i.to_string()],
            0,
        )
        .unwrap();
    }
    s.delete(StreamId::new(1005, 5));
    let mut g = tern_engine::types::stream::ConsumerGroup::new(StreamId::new(1010, 10), 10);
    g.consumers.insert(
        b"alice".to_vec().into_boxed_slice(),
        tern_engine::types::stream::Consumer::new(77),
    );
    g.assign(StreamId::new(1001, 1), b"alice", 99);
    s.groups.insert(b"grp".to_vec().into_boxed_slice(), g);
    let v = Value::stream(s);
    let back = round_trip(&v);
    let (Value::Stream(a), Value::Stream(b)) = (&v, &back) else {
        panic!()
    };
    assert_eq!(a.len(), b.len());
    let ea: Vec<_> = a.range(StreamId::MIN, StreamId::MAX).cloned().collect();
    let eb: Vec<_> = b.range(StreamId::MIN, StreamId::MAX).cloned().collect();
    assert_eq!(ea, eb);
    assert_eq!(a.last_id, b.last_id);
    assert_eq!(a.max_deleted_entry_id, b.max_deleted_entry_id);
    assert_eq!(a.entries_added, b.entries_added);
    let (ga, gb) = (&a.groups[&b"grp"[..]], &b.groups[&b"grp"[..]]);
    assert_eq!(ga.pel, gb.pel);
    assert_eq!(ga.last_id, gb.last_id);
    assert_eq!(ga.entries_read, gb.entries_read);
    assert_eq!(
        ga.consumers[&b"alice"[..]].pel,
        gb.consumers[&b"alice"[..]].pel
    );
}

#[test]
fn bad_payloads() {
    let mut p = dump_payload(&Value::from_bytes(b"hello"));
    let n = p.len();
    p[n - 1] ^= 1;
    assert_eq!(restore_payload(&p), Err(RestoreError::VersionOrChecksum));
    assert_eq!(
        restore_payload(b"abc"),
        Err(RestoreError::VersionOrChecksum)
    );
}

fn ziplist_sample() -> Vec<u8> {
    let entries: &[u8] = &[
        0x00, 0x02, b'a', b'b', // "ab"
        0x04, 0xf6, // immediate 5
        0x02, 0xc0, 0xe8, 0x03, // int16 1000
        0x04, 0xfe, 0xfd, // int8 -3
        0x03, 0xf0, 0x60, 0x79, 0xfe, // int24 -100000
    ];
    let total = 10 + entries.len() + 1;
    let mut z = Vec::new();
    z.extend_from_slice(&(total as u32).to_le_bytes());
    z.extend_from_slice(&23u32.to_le_bytes());
    z.extend_from_slice(&5u16.to_le_bytes());
    z.extend_from_slice(entries);
    z.push(0xff);
    z
}

fn payload(t: u8, body: &[u8]) -> Vec<u8> {
    let mut p = vec![t];
    p.extend_from_slice(body);
    p.extend_from_slice(&9u16.to_le_bytes());
    let crc = crate::crc64::crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

fn blob(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode::put_len(&mut out, b.len() as u64);
    out.extend_from_slice(b);
    out
}

#[test]
fn old_encodings_ziplist_quicklist_zipmap() {
    let want: Vec<Vec<u8>> = ["ab", "5", "1000", "-3", "-100000"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    assert_eq!(decode::parse_ziplist(&ziplist_sample()).unwrap(), want);
    // RDB_TYPE_LIST_ZIPLIST
    let Value::List(l) =
        restore_payload(&payload(TYPE_LIST_ZIPLIST, &blob(&ziplist_sample()))).unwrap()
    else {
        panic!()
    };
    assert_eq!(l.to_vecs(), want);
    // RDB_TYPE_LIST_QUICKLIST (version 1): nodes are ziplists
    let mut body = vec![2u8];
    body.extend(blob(&ziplist_sample()));
    body.extend(blob(&ziplist_sample()));
    let Value::List(l) = restore_payload(&payload(TYPE_LIST_QUICKLIST, &body)).unwrap() else {
        panic!()
    };
    assert_eq!(l.len(), 10);
    // zipmap hash: a -> "xy", b -> "z" (with one free byte)
    let zm = [2u8, 1, b'a', 2, 0, b'x', b'y', 1, b'b', 1, 1, b'z', 0, 0xff];
    let Value::Hash(h) = restore_payload(&payload(TYPE_HASH_ZIPMAP, &blob(&zm))).unwrap() else {
        panic!()
    };
    assert_eq!(h.get(b"a").unwrap().to_vec(), b"xy");
    assert_eq!(h.get(b"b").unwrap().to_vec(), b"z");
    // corrupt ziplist: bad total length
    let mut bad = ziplist_sample();
    bad[0] = 99;
    assert_eq!(
        restore_payload(&payload(TYPE_LIST_ZIPLIST, &blob(&bad))),
        Err(RestoreError::Corrupt(
            "List ziplist integrity check failed.".into()
        ))
    );
    // module types are refused
    assert_eq!(
        restore_payload(&payload(TYPE_MODULE_2, &[0])),
        Err(RestoreError::Module)
    );
}

#[test]
fn truncated_payloads_never_panic() {
    let mut s = StreamValue::new();
    s.append(Some(StreamId::new(1, 1)), true, &["a", "b"], 0)
        .unwrap();
    for v in [Value::stream(s), Value::from_bytes(&[b'q'; 300])] {
        let p = dump_payload(&v);
        let body = &p[..p.len() - 10];
        for cut in 0..body.len() {
            let _ = restore_payload(&payload(body[0], &body[1..cut.max(1)]));
        }
    }
}

/// Each header or entry field of a ziplist that disagrees with the entries is refused.
#[test]
fn ziplist_deep_checks() {
    let good = ziplist_sample();
    let bad = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut z = good.clone();
        f(&mut z);
        decode::parse_ziplist(&z)
    };
    assert!(bad(&|_| {}).is_some());
    assert!(bad(&|z| z[8] = 6).is_none(), "count");
    assert!(
        bad(&|z| z[8..10].copy_from_slice(&[0xff, 0xff])).is_some(),
        "count unknown"
    );
    assert!(bad(&|z| z[4] = 19).is_none(), "tail offset");
    assert!(bad(&|z| z[14] = 5).is_none(), "previous length");
    assert!(bad(&|z| z[15] = 0xc1).is_none(), "encoding");
    assert!(bad(&|z| z[10] = 0xff).is_none(), "end byte before the end");
    // An empty ziplist is well formed (the value is then an empty key).
    let empty = [11u8, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0xff];
    assert_eq!(decode::parse_ziplist(&empty), Some(vec![]));
    assert_eq!(
        restore_payload(&payload(TYPE_LIST_ZIPLIST, &blob(&empty))),
        Err(RestoreError::EmptyKey)
    );
}

/// A stream node whose entry back-count is wrong: refused with deep sanitization, rebuilt
/// from its entries with shallow.
#[test]
fn stream_back_count_deep_only() {
    let mut s = StreamValue::new();
    for i in 1..=3u64 {
        s.append(Some(StreamId::new(i, 0)), true, &["f", "v"], 0)
            .unwrap();
    }
    // Uncompressed, so the listpack's bytes can be found and changed.
    let mut w = Writer::new(false);
    write_value(&mut w, &Value::stream(s));
    let body = &w.buf[..];
    // The last entry's lp-count (4 for a same-fields entry with one field) is the entry just
    // before the listpack's end byte: find "04 01 ff" and make it 5.
    let at = body
        .windows(3)
        .position(|w| w == [0x04, 0x01, 0xff])
        .expect("last lp-count");
    let mut b = body.to_vec();
    b[at] = 0x05;
    let bad = payload(b[0], &b[1..]);
    assert_eq!(
        decode::restore_payload_with(&bad, true, true),
        Err(RestoreError::Corrupt(
            "Stream listpack integrity check failed.".into()
        ))
    );
    let Ok(Value::Stream(back)) = decode::restore_payload_with(&bad, true, false) else {
        panic!("shallow accepts")
    };
    assert_eq!(back.len(), 3);
}

/// Random byte changes of payloads of every type and encoding (the in-process twin of the
/// `rdb_payload` fuzz target): decoding never panics in either sanitization mode, and what
/// deep sanitization accepts encodes to a payload that decodes again and encodes the same.
/// TERN_FUZZ_ROUNDS runs a longer campaign.
#[test]
fn flipped_payloads_decode_or_refuse_cleanly() {
    let mut values = Vec::new();
    for n in [3usize, 12] {
        let mut l = ListValue::new();
        let mut h = HashValue::new();
        let mut s = SetValue::create(b"a", n);
        let mut is = SetValue::create(b"1", n);
        let mut pairs = Vec::new();
        let mut st = StreamValue::new();
        for i in 0..n {
            let v = if i % 2 == 0 {
                i.to_string()
            } else {
                format!("_{i}")
            };
            l.try_grow(v.len(), 1);
            l.push(v.as_bytes(), false);
            h.set(i.to_string().as_bytes(), v.as_bytes());
            s.add(v.as_bytes());
            is.add(i.to_string().as_bytes());
            pairs.push((v.clone().into_bytes(), i as f64));
            st.append(
                Some(StreamId::new(1000 + i as u64, 0)),
                true,
                &["item", "1", "value", &v],
                0,
            )
            .unwrap();
        }
        values.push(Value::List(l));
        values.push(Value::Hash(h));
        values.push(Value::Set(s));
        values.push(Value::Set(is));
        values.push(Value::ZSet(ZSetValue::from_pairs(pairs)));
        values.push(Value::stream(st));
    }
    values.push(Value::from_bytes(b"12345"));
    values.push(Value::from_bytes(b"some string"));
    let mut bodies: Vec<Vec<u8>> = values
        .iter()
        .map(|v| {
            let p = dump_payload(v);
            p[..p.len() - 10].to_vec()
        })
        .collect();
    let mut zl = vec![TYPE_LIST_ZIPLIST];
    zl.extend(blob(&ziplist_sample()));
    bodies.push(zl);
    let zm = [2u8, 1, b'a', 2, 0, b'x', b'y', 1, b'b', 1, 1, b'z', 0, 0xff];
    let mut zmb = vec![TYPE_HASH_ZIPMAP];
    zmb.extend(blob(&zm));
    bodies.push(zmb);
    let rounds: u64 = std::env::var("TERN_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..rounds {
        let mut b = bodies[rnd(bodies.len())].clone();
        for _ in 0..1 + rnd(3) / 2 {
            let at = rnd(b.len());
            b[at] = rnd(256) as u8;
        }
        let p = payload(b[0], &b[1..]);
        let _ = decode::restore_payload_with(&p, true, false);
        match decode::restore_payload_with(&p, true, true) {
            Ok(v) => {
                accepted += 1;
                let again = dump_payload(&v);
                let back = restore_payload(&again).expect("a re-encoded value decodes");
                assert_eq!(dump_payload(&back), again, "stable encoding of {p:02x?}");
            }
            Err(_) => refused += 1,
        }
    }
    assert!(accepted > 0 && refused > 0, "{accepted} / {refused}");
}

/// A whole RDB: an AUX field, some keys in two databases (one big list, one expiring string),
/// EOF and checksum.
fn sample_file() -> Vec<u8> {
    let mut w = Writer::new(false);
    w.buf.extend_from_slice(b"REDIS0010");
    w.byte(OP_AUX);
    w.string(b"redis-ver");
    w.string(b"7.2.6");
    w.byte(OP_SELECTDB);
    w.len(0);
    w.byte(OP_RESIZEDB);
    w.len(101);
    w.len(1);
    for i in 0..100 {
        w.byte(TYPE_STRING);
        w.string(format!("k{i}").as_bytes());
        w.string(format!("value-{i}").as_bytes());
    }
    let mut l = ListValue::new();
    for i in 0..20_000 {
        let s = format!("element-{i}");
        l.try_grow(s.len(), 1);
        l.push(s.as_bytes(), false);
    }
    write_value_with_key(&mut w, b"big", &Value::List(l));
    w.byte(OP_SELECTDB);
    w.len(3);
    w.byte(OP_EXPIRETIME_MS);
    w.buf.extend_from_slice(&(i64::MAX as u64).to_le_bytes());
    w.byte(TYPE_STRING);
    w.string(b"later");
    w.string(b"x");
    w.byte(OP_EOF);
    let crc = crate::crc64::crc64(&w.buf);
    w.buf.extend_from_slice(&crc.to_le_bytes());
    w.buf
}

fn write_value_with_key(w: &mut Writer, key: &[u8], v: &Value) {
    w.byte(encode::value_type(v));
    w.string(key);
    encode::write_value_body(w, v);
}

/// Hands out at most `step` bytes per read, as a socket may.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

type Keys = Vec<(usize, Vec<u8>, u64)>;

fn load_slice(data: &[u8]) -> (Result<file::Loaded, RestoreError>, Keys) {
    let mut keys = Vec::new();
    let r = file::load(
        data,
        0,
        true,
        Default::default(),
        |k| keys.push((k.db, k.key, k.expire_at)),
        |_, _| {},
        |_| {},
    );
    (r, keys)
}

fn load_stream(data: &[u8], step: usize) -> (Result<file::Loaded, file::StreamLoadError>, Keys) {
    let mut keys = Vec::new();
    let mut src = Trickle { data, step };
    let r = file::load_from(
        &mut src,
        0,
        true,
        Default::default(),
        |k| keys.push((k.db, k.key, k.expire_at)),
        |_, _| {},
        |_| {},
    );
    (r, keys)
}

#[test]
fn streamed_load_matches_slice_load() {
    let data = sample_file();
    let (whole, keys) = load_slice(&data);
    let whole = whole.expect("slice load");
    assert_eq!(whole.keys, 102);
    assert_eq!(whole.end, data.len());
    for step in [1, 7, 4096, 1 << 20] {
        let (streamed, skeys) = load_stream(&data, step);
        let streamed = streamed.expect("streamed load");
        assert_eq!(streamed.keys, whole.keys, "step {step}");
        assert_eq!(streamed.aux, whole.aux);
        assert_eq!(streamed.end, data.len());
        assert_eq!(skeys, keys);
    }
}

#[test]
fn streamed_load_refuses_truncated_and_corrupt_files() {
    let data = sample_file();
    for cut in [5, 100, data.len() / 2, data.len() - 8, data.len() - 1] {
        let (r, _) = load_stream(&data[..cut], 4096);
        assert!(
            matches!(r, Err(file::StreamLoadError::Rdb(_))),
            "cut at {cut} loaded"
        );
    }
    let mut bad = data.clone();
    let n = bad.len();
    bad[n - 3] ^= 0xff;
    let (r, _) = load_stream(&bad, 4096);
    let e = r.expect_err("bad checksum").to_string();
    assert!(e.contains("RDB CRC error"), "{e}");
    let mut bad_type = data.clone();
    bad_type[9] = 200;
    let (r, _) = load_stream(&bad_type, 4096);
    assert!(r
        .expect_err("bad type")
        .to_string()
        .contains("unknown RDB type 200"));
}

/// KeyDB's layout for member times: AUX `keydb-subexpire-key` / `keydb-subexpire-when` after
/// the key they belong to, applied to it whether the file arrives whole or in pieces.
#[test]
fn keydb_member_time_aux_fields_apply_to_the_key_before_them() {
    let mut w = Writer::new(false);
    w.buf.extend_from_slice(b"REDIS0009");
    w.byte(OP_SELECTDB);
    w.len(0);
    let mut s = SetValue::default();
    for m in ["a", "b", "c"] {
        s.add(m.as_bytes());
    }
    write_value_with_key(&mut w, b"s", &Value::Set(s));
    for (m, at) in [("a", "2524600800123"), ("zz", "5"), ("c", "not-a-time")] {
        w.byte(OP_AUX);
        w.string(b"keydb-subexpire-key");
        w.string(m.as_bytes());
        w.byte(OP_AUX);
        w.string(b"keydb-subexpire-when");
        w.string(at.as_bytes());
    }
    let mut z = ZSetValue::default();
    z.insert(b"x", 1.0);
    write_value_with_key(&mut w, b"z", &Value::ZSet(z));
    w.byte(OP_AUX);
    w.string(b"keydb-subexpire-key");
    w.string(b"x");
    w.byte(OP_AUX);
    w.string(b"keydb-subexpire-when");
    w.string(b"2524600800456");
    w.byte(OP_EOF);
    let crc = crate::crc64::crc64(&w.buf);
    w.buf.extend_from_slice(&crc.to_le_bytes());
    let data = w.buf;

    type Times = Vec<(Vec<u8>, Vec<(Vec<u8>, u64)>)>;
    let times_of = |k: file::LoadedKey| {
        let ttls = k.value.member_ttls();
        let t: Vec<(Vec<u8>, u64)> = ttls
            .into_iter()
            .flat_map(|t| t.iter())
            .map(|(m, at)| (m.to_vec(), at))
            .collect();
        (k.key, t)
    };
    let expected: Times = vec![
        (b"s".to_vec(), vec![(b"a".to_vec(), 2524600800123)]),
        (b"z".to_vec(), vec![(b"x".to_vec(), 2524600800456)]),
    ];
    let mut got: Times = Vec::new();
    let loaded = file::load(
        &data[..],
        0,
        true,
        Default::default(),
        |k| got.push(times_of(k)),
        |_, _| {},
        |_| {},
    )
    .expect("KeyDB-layout file loads");
    assert_eq!(got, expected);
    assert!(
        loaded.aux.is_empty(),
        "member times are not file AUX fields"
    );
    for step in [1, 7, 4096] {
        let mut got: Times = Vec::new();
        let mut src = Trickle { data: &data, step };
        file::load_from(
            &mut src,
            0,
            true,
            Default::default(),
            |k| got.push(times_of(k)),
            |_, _| {},
            |_| {},
        )
        .expect("streamed");
        assert_eq!(got, expected, "step {step}");
    }
}
