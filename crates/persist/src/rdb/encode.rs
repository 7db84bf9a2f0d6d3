//! Writing RDB values in the encodings redis-server 7.0 (RDB version 10) loads.

use super::*;
use crate::crc64;
use tern_engine::listpack::Listpack;
use tern_engine::types::{CronJob, HashValue, ListValue, SetValue, StreamValue, ZSetValue};
use tern_engine::value::{parse_canonical_i64, RString, Value};

/// An output buffer with RDB's primitive encodings.
pub struct Writer {
    pub buf: Vec<u8>,
    /// Compress strings longer than 20 bytes with LZF (`rdbcompression`).
    pub compress: bool,
}

impl Writer {
    pub fn new(compress: bool) -> Writer {
        Writer {
            buf: Vec::new(),
            compress,
        }
    }

    pub fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    pub fn len(&mut self, n: u64) {
        put_len(&mut self.buf, n);
    }

    /// A string: int-encoded when it is a small canonical integer, LZF-compressed when that
    /// saves room, plain otherwise.
    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= 11 {
            if let Some(v) = parse_canonical_i64(s) {
                if self.int(v) {
                    return;
                }
            }
        }
        if self.compress && s.len() > 20 {
            if let Some(c) = crate::lzf::compress(s, s.len() - 4) {
                self.buf.push(0xc0 | ENC_LZF as u8);
                put_len(&mut self.buf, c.len() as u64);
                put_len(&mut self.buf, s.len() as u64);
                self.buf.extend_from_slice(&c);
                return;
            }
        }
        put_len(&mut self.buf, s.len() as u64);
        self.buf.extend_from_slice(s);
    }

    /// An integer as an int-encoded string when it fits 32 bits (false otherwise).
    fn int(&mut self, v: i64) -> bool {
        if let Ok(x) = i8::try_from(v) {
            self.buf.push(0xc0 | ENC_INT8 as u8);
            self.buf.push(x as u8);
        } else if let Ok(x) = i16::try_from(v) {
            self.buf.push(0xc0 | ENC_INT16 as u8);
            self.buf.extend_from_slice(&x.to_le_bytes());
        } else if let Ok(x) = i32::try_from(v) {
            self.buf.push(0xc0 | ENC_INT32 as u8);
            self.buf.extend_from_slice(&x.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    pub fn int_string(&mut self, v: i64) {
        if !self.int(v) {
            self.string(itoa::Buffer::new().format(v).as_bytes());
        }
    }

    pub fn binary_double(&mut self, d: f64) {
        self.buf.extend_from_slice(&d.to_le_bytes());
    }

    pub fn millis(&mut self, ms: i64) {
        self.buf.extend_from_slice(&ms.to_le_bytes());
    }
}

pub fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if n <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// The RDB type byte `write_value` uses for `v`.
pub fn value_type(v: &Value) -> u8 {
    match v {
        Value::Str(_) => TYPE_STRING,
        Value::List(_) => TYPE_LIST_QUICKLIST_2,
        Value::Set(s) if s.intset_bytes().is_some() => TYPE_SET_INTSET,
        Value::Set(_) => TYPE_SET,
        Value::ZSet(z) if matches!(z.members(), ZSetValue::Listpack(_)) => TYPE_ZSET_LISTPACK,
        Value::ZSet(_) => TYPE_ZSET_2,
        Value::Hash(h) if h.ttls().is_some() => match h.fields() {
            HashValue::Listpack(_) => TYPE_HASH_LISTPACK_EX,
            _ => TYPE_HASH_METADATA,
        },
        Value::Hash(h) => match h.fields() {
            HashValue::Listpack(_) => TYPE_HASH_LISTPACK,
            _ => TYPE_HASH,
        },
        Value::Stream(_) => TYPE_STREAM_LISTPACKS_2,
        Value::Cron(_) => TYPE_CRON,
    }
}

/// Write the type byte and the value.
pub fn write_value(w: &mut Writer, v: &Value) {
    w.byte(value_type(v));
    write_value_body(w, v);
}

/// The value without its type byte (`value_type` gives it).
pub fn write_value_body(w: &mut Writer, v: &Value) {
    match v {
        Value::Str(s) => write_rstring(w, s),
        Value::List(l) => write_list(w, l),
        Value::Set(s) => write_set(w, s),
        Value::ZSet(z) => write_zset(w, z),
        Value::Hash(h) => write_hash(w, h),
        Value::Stream(s) => write_stream(w, s),
        Value::Cron(j) => write_cron(w, j),
    }
}

fn write_cron(w: &mut Writer, j: &CronJob) {
    w.string(&j.script);
    w.millis(j.start_ms as i64);
    w.millis(j.interval_ms as i64);
    for list in [&j.keys, &j.args] {
        w.len(list.len() as u64);
        for s in list.iter() {
            w.string(s);
        }
    }
}

fn write_rstring(w: &mut Writer, s: &RString) {
    match s {
        RString::Int(n) => w.int_string(n.get()),
        _ => s.with_bytes(|b| w.string(b)),
    }
}

fn write_list(w: &mut Writer, l: &ListValue) {
    let nodes: Vec<&Listpack> = l.nodes().filter(|n| !n.is_empty()).collect();
    w.len(nodes.len() as u64);
    for n in nodes {
        w.len(QUICKLIST_PACKED);
        w.string(n.as_bytes());
    }
}

fn write_set(w: &mut Writer, s: &SetValue) {
    if let Some(b) = s.intset_bytes() {
        w.string(b);
        return;
    }
    w.len(s.len() as u64);
    for m in s.iter() {
        m.with_bytes(|b| w.string(b));
    }
}

fn write_zset(w: &mut Writer, z: &ZSetValue) {
    match z.members() {
        ZSetValue::Listpack(lp) => w.string(lp.as_bytes()),
        _ => {
            // Highest score first, as Redis writes it (the loader then inserts at the head).
            let mut items = Vec::with_capacity(z.len());
            z.for_each(|m, s| items.push((m.to_vec(), s)));
            w.len(items.len() as u64);
            for (m, s) in items.iter().rev() {
                w.string(m);
                w.binary_double(*s);
            }
        }
    }
}

/// True when `v` is a hash with field times (written as Redis 7.4's types, in version 12).
pub fn has_field_ttls(v: &Value) -> bool {
    matches!(v, Value::Hash(h) if h.ttls().is_some())
}

fn write_hash(w: &mut Writer, h: &HashValue) {
    if let Some(ttls) = h.ttls() {
        return write_hash_with_times(w, h, ttls);
    }
    match h.fields() {
        HashValue::Listpack(lp) => w.string(lp.as_bytes()),
        _ => {
            w.len(h.len() as u64);
            for (f, v) in h.iter() {
                f.with_bytes(|b| w.string(b));
                v.with_bytes(|b| w.string(b));
            }
        }
    }
}

/// Types 25 (a listpack of triplets, earliest time first, fields without a time last) and 24.
fn write_hash_with_times(w: &mut Writer, h: &HashValue, ttls: &tern_engine::FieldTtls) {
    let min = ttls.min().unwrap_or(0);
    w.buf.extend_from_slice(&min.to_le_bytes());
    if let HashValue::Listpack(_) = h.fields() {
        let mut lp = Listpack::new();
        for (f, at) in ttls.iter() {
            if let Some(v) = h.get(f) {
                v.with_bytes(|vb| lp.push_back_pair(f, vb));
                lp.push_back_int(at as i64);
            }
        }
        for (f, v) in h.iter() {
            if f.with_bytes(|fb| ttls.get(fb).is_none()) {
                f.with_bytes(|fb| v.with_bytes(|vb| lp.push_back_pair(fb, vb)));
                lp.push_back_int(0);
            }
        }
        return w.string(lp.as_bytes());
    }
    w.len(h.len() as u64);
    for (f, v) in h.iter() {
        f.with_bytes(|fb| {
            w.len(ttls.get(fb).map_or(0, |at| at - min + 1));
            w.string(fb);
        });
        v.with_bytes(|b| w.string(b));
    }
}

/// Stream nodes as Redis builds them: each listpack starts with a master entry (count,
/// deleted, the first entry's field names); later entries with the same fields only carry
/// values.
fn write_stream(w: &mut Writer, s: &StreamValue) {
    const NODE_MAX_ENTRIES: usize = 100;
    const NODE_MAX_BYTES: usize = 4096;
    let mut nodes: Vec<(tern_engine::types::stream::StreamId, Listpack)> = Vec::new();
    let mut entries = s.range(StreamId::MIN, StreamId::MAX).peekable();
    while entries.peek().is_some() {
        let mut group = Vec::new();
        let mut bytes = 0;
        while let Some(e) = entries.peek() {
            if group.len() >= NODE_MAX_ENTRIES || (bytes > NODE_MAX_BYTES && !group.is_empty()) {
                break;
            }
            bytes += e.items().map(|i| i.len() + 2).sum::<usize>() + 8;
            group.push(entries.next().expect("peeked"));
        }
        let master = group[0].id;
        let master_fields: Vec<&[u8]> = group[0].items().step_by(2).collect();
        let mut lp = Listpack::new();
        lp.push_back_int(group.len() as i64);
        lp.push_back_int(0);
        lp.push_back_int(master_fields.len() as i64);
        for f in &master_fields {
            lp.push_back(f);
        }
        lp.push_back_int(0);
        for e in &group {
            let items: Vec<&[u8]> = e.items().collect();
            let fields: Vec<&[u8]> = items.iter().step_by(2).copied().collect();
            let same = fields == master_fields;
            lp.push_back_int(if same { STREAM_ITEM_SAMEFIELDS } else { 0 });
            lp.push_back_int(e.id.ms.wrapping_sub(master.ms) as i64);
            lp.push_back_int(e.id.seq.wrapping_sub(master.seq) as i64);
            let nf = fields.len();
            if same {
                for v in items.iter().skip(1).step_by(2) {
                    lp.push_back(v);
                }
                lp.push_back_int(nf as i64 + 3);
            } else {
                lp.push_back_int(nf as i64);
                for it in &items {
                    lp.push_back(it);
                }
                lp.push_back_int(nf as i64 * 2 + 1 + 3);
            }
        }
        nodes.push((master, lp));
    }
    w.len(nodes.len() as u64);
    for (id, lp) in &nodes {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&id.ms.to_be_bytes());
        key[8..].copy_from_slice(&id.seq.to_be_bytes());
        w.string(&key);
        w.string(lp.as_bytes());
    }
    w.len(s.len() as u64);
    w.len(s.last_id.ms);
    w.len(s.last_id.seq);
    w.len(s.first_id.ms);
    w.len(s.first_id.seq);
    w.len(s.max_deleted_entry_id.ms);
    w.len(s.max_deleted_entry_id.seq);
    w.len(s.entries_added);
    w.len(s.groups.len() as u64);
    for (name, g) in &s.groups {
        w.string(name);
        w.len(g.last_id.ms);
        w.len(g.last_id.seq);
        w.len(g.entries_read as u64);
        w.len(g.pel.len() as u64);
        for (id, nack) in &g.pel {
            raw_id(w, *id);
            w.millis(nack.delivery_time);
            w.len(nack.delivery_count);
        }
        w.len(g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            w.string(cname);
            w.millis(c.seen_time);
            w.len(c.pel.len() as u64);
            for id in &c.pel {
                raw_id(w, *id);
            }
        }
    }
}

use tern_engine::types::stream::StreamId;

fn raw_id(w: &mut Writer, id: StreamId) {
    w.buf.extend_from_slice(&id.ms.to_be_bytes());
    w.buf.extend_from_slice(&id.seq.to_be_bytes());
}

/// A DUMP payload: the value, the RDB version (2 bytes LE) and a CRC-64 of all that (8 bytes LE).
pub fn dump_payload(value: &Value) -> Vec<u8> {
    let mut w = Writer::new(true);
    write_value(&mut w, value);
    let mut p = w.buf;
    p.extend_from_slice(&super::version_for(value).to_le_bytes());
    let crc = crc64::crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}
