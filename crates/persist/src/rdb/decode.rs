//! Reading RDB values of every type and encoding up to RDB version 11.

use super::*;
use crate::crc64;
use tern_engine::listpack::{Listpack, LpEntry};
use tern_engine::types::intset::Intset;
use tern_engine::types::stream::{Consumer, ConsumerGroup, Nack, StreamId};
use tern_engine::types::{HashValue, ListValue, SetValue, StreamValue, ZSetValue};
use tern_engine::value::{RString, Value};

/// Why a payload or file could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum RestoreError {
    /// Version too new or checksum mismatch (DUMP payloads).
    VersionOrChecksum,
    /// Malformed data; the text says what and the offset where.
    Bad(String, usize),
    /// A module type: tern has no modules.
    Module,
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestoreError::VersionOrChecksum => {
                write!(f, "DUMP payload version or checksum are wrong")
            }
            RestoreError::Bad(what, off) => write!(f, "{what} at offset {off}"),
            RestoreError::Module => write!(f, "module data types are not supported"),
        }
    }
}

type R<T> = Result<T, RestoreError>;

/// A cursor over RDB bytes.
pub struct Reader<'a> {
    pub b: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, pos: 0 }
    }

    pub fn bad<T>(&self, what: &str) -> R<T> {
        Err(RestoreError::Bad(what.to_string(), self.pos))
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.b.len()
    }

    pub fn byte(&mut self) -> R<u8> {
        match self.b.get(self.pos) {
            Some(&c) => {
                self.pos += 1;
                Ok(c)
            }
            None => self.bad("unexpected end of data"),
        }
    }

    pub fn take(&mut self, n: usize) -> R<&'a [u8]> {
        match self
            .pos
            .checked_add(n)
            .and_then(|e| self.b.get(self.pos..e))
        {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => self.bad("unexpected end of data"),
        }
    }

    fn arr<const N: usize>(&mut self) -> R<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("length checked"))
    }

    /// (length, special-encoding?) as rdbLoadLen reads it.
    pub fn len_enc(&mut self) -> R<(u64, bool)> {
        let c = self.byte()?;
        Ok(match c >> 6 {
            0 => ((c & 0x3f) as u64, false),
            1 => ((((c & 0x3f) as u64) << 8) | self.byte()? as u64, false),
            3 => ((c & 0x3f) as u64, true),
            _ => match c {
                0x80 => (u32::from_be_bytes(self.arr()?) as u64, false),
                0x81 => (u64::from_be_bytes(self.arr()?), false),
                _ => return self.bad("invalid length encoding"),
            },
        })
    }

    #[allow(clippy::len_without_is_empty)]
    pub fn len(&mut self) -> R<u64> {
        match self.len_enc()? {
            (n, false) => Ok(n),
            _ => self.bad("unexpected encoded length"),
        }
    }

    /// A length used to size a collection: bounded by the bytes left so a corrupt length
    /// cannot make us allocate wildly.
    fn count(&mut self) -> R<usize> {
        let n = self.len()?;
        if n > (self.b.len() - self.pos.min(self.b.len())) as u64 {
            return self.bad("collection length larger than the data");
        }
        Ok(n as usize)
    }

    pub fn string(&mut self) -> R<Vec<u8>> {
        let (n, enc) = self.len_enc()?;
        if !enc {
            return Ok(self.take(n as usize)?.to_vec());
        }
        match n {
            ENC_INT8 => Ok((self.byte()? as i8).to_string().into_bytes()),
            ENC_INT16 => Ok(i16::from_le_bytes(self.arr()?).to_string().into_bytes()),
            ENC_INT32 => Ok(i32::from_le_bytes(self.arr()?).to_string().into_bytes()),
            ENC_LZF => {
                let clen = self.len()? as usize;
                let len = self.len()? as usize;
                let data = self.take(clen)?;
                if len > 512 << 20 && len > clen.saturating_mul(300) {
                    return self.bad("implausible LZF length");
                }
                match crate::lzf::decompress(data, len) {
                    Some(v) => Ok(v),
                    None => self.bad("invalid LZF data"),
                }
            }
            _ => self.bad("unknown string encoding"),
        }
    }

    /// A string that may be an int encoding, as a value: int encodings stay integers.
    fn rstring(&mut self) -> R<RString> {
        Ok(RString::from_vec(self.string()?))
    }

    /// The old text double encoding (length byte; 253 NaN, 254 +inf, 255 -inf).
    fn text_double(&mut self) -> R<f64> {
        let n = self.byte()?;
        match n {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            _ => {
                let s = self.take(n as usize)?;
                match std::str::from_utf8(s)
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                {
                    Some(v) => Ok(v),
                    None => self.bad("invalid double"),
                }
            }
        }
    }

    fn binary_double(&mut self) -> R<f64> {
        Ok(f64::from_le_bytes(self.arr()?))
    }

    pub fn millis(&mut self) -> R<i64> {
        Ok(i64::from_le_bytes(self.arr()?))
    }

    pub fn u32_le(&mut self) -> R<u32> {
        Ok(u32::from_le_bytes(self.arr()?))
    }

    fn raw_id(&mut self) -> R<StreamId> {
        let b: [u8; 16] = self.arr()?;
        Ok(StreamId::new(
            u64::from_be_bytes(b[..8].try_into().expect("8")),
            u64::from_be_bytes(b[8..].try_into().expect("8")),
        ))
    }
}

/// Read a value of RDB type `t` (the type byte already consumed).
pub fn read_value(r: &mut Reader, t: u8) -> R<Value> {
    let v = match t {
        TYPE_STRING => Value::Str(r.rstring()?),
        TYPE_LIST => {
            let n = r.count()?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(r.string()?);
            }
            build_list(items.iter().map(|v| v.as_slice()))
        }
        TYPE_LIST_ZIPLIST => {
            let zl = r.string()?;
            let items = parse_ziplist(&zl).map_or_else(|| r.bad("invalid ziplist"), Ok)?;
            build_list(items.iter().map(|v| v.as_slice()))
        }
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            let nodes = r.count()?;
            let mut items: Vec<Vec<u8>> = Vec::new();
            for _ in 0..nodes {
                let container = if t == TYPE_LIST_QUICKLIST_2 {
                    r.len()?
                } else {
                    QUICKLIST_PACKED
                };
                let blob = r.string()?;
                if container == QUICKLIST_PLAIN {
                    items.push(blob);
                    continue;
                }
                if container != QUICKLIST_PACKED {
                    return r.bad("invalid quicklist container");
                }
                let parsed = if t == TYPE_LIST_QUICKLIST {
                    parse_ziplist(&blob)
                } else {
                    parse_listpack(blob)
                };
                match parsed {
                    Some(v) => items.extend(v),
                    None => return r.bad("invalid quicklist node"),
                }
            }
            if items.is_empty() {
                return r.bad("empty list");
            }
            build_list(items.iter().map(|v| v.as_slice()))
        }
        TYPE_SET => {
            let n = r.count()?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(r.string()?);
            }
            build_set(&items).map_or_else(|| r.bad("duplicate set member"), Ok)?
        }
        TYPE_SET_INTSET => {
            let blob = r.string()?;
            let is = Intset::from_bytes(blob).map_or_else(|| r.bad("invalid intset"), Ok)?;
            let items: Vec<Vec<u8>> = is.iter().map(|v| v.to_string().into_bytes()).collect();
            build_set(&items).map_or_else(|| r.bad("duplicate set member"), Ok)?
        }
        TYPE_SET_LISTPACK => {
            let blob = r.string()?;
            let items = parse_listpack(blob).map_or_else(|| r.bad("invalid listpack"), Ok)?;
            build_set(&items).map_or_else(|| r.bad("duplicate set member"), Ok)?
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count()?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?;
                let s = if t == TYPE_ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                if s.is_nan() {
                    return r.bad("NaN score");
                }
                pairs.push((m, s));
            }
            build_zset(pairs).map_or_else(|| r.bad("duplicate zset member"), Ok)?
        }
        TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => {
            let blob = r.string()?;
            let items = if t == TYPE_ZSET_ZIPLIST {
                parse_ziplist(&blob)
            } else {
                parse_listpack(blob)
            };
            let items = items.map_or_else(|| r.bad("invalid zset encoding"), Ok)?;
            if items.len() % 2 != 0 {
                return r.bad("odd zset listpack");
            }
            let mut pairs = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(m), Some(s)) = (it.next(), it.next()) {
                let score = std::str::from_utf8(&s)
                    .ok()
                    .and_then(|t| t.parse::<f64>().ok())
                    .filter(|v| !v.is_nan());
                match score {
                    Some(sc) => pairs.push((m, sc)),
                    None => return r.bad("invalid zset score"),
                }
            }
            build_zset(pairs).map_or_else(|| r.bad("duplicate zset member"), Ok)?
        }
        TYPE_HASH => {
            let n = r.count()?;
            let mut items = Vec::with_capacity(n * 2);
            for _ in 0..n {
                items.push(r.string()?);
                items.push(r.string()?);
            }
            build_hash(items).map_or_else(|| r.bad("duplicate hash field"), Ok)?
        }
        TYPE_HASH_ZIPMAP | TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
            let blob = r.string()?;
            let items = match t {
                TYPE_HASH_ZIPMAP => parse_zipmap(&blob),
                TYPE_HASH_ZIPLIST => parse_ziplist(&blob),
                _ => parse_listpack(blob),
            };
            let items = items.map_or_else(|| r.bad("invalid hash encoding"), Ok)?;
            if items.len() % 2 != 0 || items.is_empty() {
                return r.bad("invalid hash encoding");
            }
            build_hash(items).map_or_else(|| r.bad("duplicate hash field"), Ok)?
        }
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
            read_stream(r, t)?
        }
        TYPE_MODULE_PRE_GA | TYPE_MODULE_2 => return Err(RestoreError::Module),
        _ => return r.bad("unknown value type"),
    };
    Ok(v)
}

fn build_list<'a>(items: impl Iterator<Item = &'a [u8]>) -> Value {
    let mut l = ListValue::new();
    for it in items {
        l.try_grow(it.len(), 1);
        l.push(it, false);
    }
    Value::List(l)
}

fn build_set(items: &[Vec<u8>]) -> Option<Value> {
    let first = items.first()?;
    let mut s = SetValue::create(first, items.len());
    for m in items {
        if !s.add(m) {
            return None;
        }
    }
    Some(Value::Set(s))
}

fn build_zset(pairs: Vec<(Vec<u8>, f64)>) -> Option<Value> {
    if pairs.is_empty() {
        return None;
    }
    let n = pairs.len();
    let mut seen = std::collections::HashSet::with_capacity(n);
    for (m, _) in &pairs {
        if !seen.insert(m.as_slice()) {
            return None;
        }
    }
    drop(seen);
    Some(Value::ZSet(ZSetValue::from_pairs(pairs)))
}

fn build_hash(items: Vec<Vec<u8>>) -> Option<Value> {
    if items.is_empty() {
        return None;
    }
    let mut h = HashValue::new();
    h.prepare_for(items.len() / 2, items.iter().map(|v| v.as_slice()));
    let mut it = items.iter();
    while let (Some(f), Some(v)) = (it.next(), it.next()) {
        if !h.set(f, v) {
            return None;
        }
    }
    Some(Value::Hash(h))
}

fn parse_listpack(blob: Vec<u8>) -> Option<Vec<Vec<u8>>> {
    let lp = Listpack::from_bytes(blob)?;
    Some(lp.iter().map(|e| e.to_vec()).collect())
}

fn lp_int(e: Option<LpEntry>) -> Option<i64> {
    e?.as_i64()
}

/// Ziplist (Redis < 7): header (bytes, tail offset, count), entries (previous length,
/// encoding, data), 0xff.
pub fn parse_ziplist(z: &[u8]) -> Option<Vec<Vec<u8>>> {
    if z.len() < 11 || u32::from_le_bytes(z[..4].try_into().ok()?) as usize != z.len() {
        return None;
    }
    if *z.last()? != 0xff {
        return None;
    }
    let mut p = 10;
    let mut out = Vec::new();
    while z[p] != 0xff {
        p += if z[p] < 254 { 1 } else { 5 };
        let enc = *z.get(p)?;
        p += 1;
        let get = |p: usize, n: usize| z.get(p..p + n);
        match enc >> 6 {
            0 => {
                let n = (enc & 0x3f) as usize;
                out.push(get(p, n)?.to_vec());
                p += n;
            }
            1 => {
                let n = (((enc & 0x3f) as usize) << 8) | *z.get(p)? as usize;
                p += 1;
                out.push(get(p, n)?.to_vec());
                p += n;
            }
            2 => {
                let n = u32::from_be_bytes(get(p, 4)?.try_into().ok()?) as usize;
                p += 4;
                out.push(get(p, n)?.to_vec());
                p += n;
            }
            _ => {
                let (v, n): (i64, usize) = match enc {
                    0xc0 => (i16::from_le_bytes(get(p, 2)?.try_into().ok()?) as i64, 2),
                    0xd0 => (i32::from_le_bytes(get(p, 4)?.try_into().ok()?) as i64, 4),
                    0xe0 => (i64::from_le_bytes(get(p, 8)?.try_into().ok()?), 8),
                    0xf0 => {
                        let b = get(p, 3)?;
                        ((i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8) as i64, 3)
                    }
                    0xfe => (*z.get(p)? as i8 as i64, 1),
                    0xf1..=0xfd => ((enc & 0x0f) as i64 - 1, 0),
                    _ => return None,
                };
                p += n;
                out.push(v.to_string().into_bytes());
            }
        }
        if p >= z.len() {
            return None;
        }
    }
    Some(out)
}

/// Zipmap (Redis < 2.6 hashes): count byte, then length-prefixed key, value (with a free
/// byte count), 0xff.
pub fn parse_zipmap(z: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut p = 1;
    let mut out = Vec::new();
    let rd_len = |p: &mut usize| -> Option<usize> {
        let c = *z.get(*p)?;
        if c < 254 {
            *p += 1;
            Some(c as usize)
        } else if c == 254 {
            let n = u32::from_le_bytes(z.get(*p + 1..*p + 5)?.try_into().ok()?) as usize;
            *p += 5;
            Some(n)
        } else {
            None
        }
    };
    loop {
        if *z.get(p)? == 0xff {
            break;
        }
        let kl = rd_len(&mut p)?;
        out.push(z.get(p..p + kl)?.to_vec());
        p += kl;
        let vl = rd_len(&mut p)?;
        let free = *z.get(p)? as usize;
        p += 1;
        out.push(z.get(p..p + vl)?.to_vec());
        p += vl + free;
    }
    Some(out)
}

fn read_stream(r: &mut Reader, t: u8) -> R<Value> {
    let mut s = StreamValue::new();
    let nodes = r.count()?;
    let mut expected_len = 0u64;
    for _ in 0..nodes {
        let key = r.string()?;
        if key.len() != 16 {
            return r.bad("invalid stream node key");
        }
        let master = StreamId::new(
            u64::from_be_bytes(key[..8].try_into().expect("8")),
            u64::from_be_bytes(key[8..].try_into().expect("8")),
        );
        let blob = r.string()?;
        let Some(lp) = Listpack::from_bytes(blob) else {
            return r.bad("invalid stream listpack");
        };
        if lp.is_empty() {
            return r.bad("empty stream listpack");
        }
        if stream_node(&mut s, master, &lp, &mut expected_len).is_none() {
            return r.bad("invalid stream node");
        }
    }
    let length = r.len()?;
    s.last_id = StreamId::new(r.len()?, r.len()?);
    if t >= TYPE_STREAM_LISTPACKS_2 {
        s.first_id = StreamId::new(r.len()?, r.len()?);
        s.max_deleted_entry_id = StreamId::new(r.len()?, r.len()?);
        s.entries_added = r.len()?;
    } else {
        s.entries_added = length;
        s.first_id = s.first_entry().map(|e| e.id).unwrap_or_default();
    }
    if length != s.len() as u64 {
        return r.bad("stream length mismatch");
    }
    let ngroups = r.count()?;
    for _ in 0..ngroups {
        let name = r.string()?;
        let last = StreamId::new(r.len()?, r.len()?);
        let entries_read = if t >= TYPE_STREAM_LISTPACKS_2 {
            r.len()? as i64
        } else {
            // Older files have no read counter: estimated from the group's last ID, as
            // Redis does when it loads them.
            s.estimate_distance(last)
        };
        let mut g = ConsumerGroup::new(last, entries_read);
        let npel = r.count()?;
        let mut owners: Vec<(StreamId, i64, u64)> = Vec::with_capacity(npel);
        for _ in 0..npel {
            let id = r.raw_id()?;
            let dt = r.millis()?;
            let dc = r.len()?;
            owners.push((id, dt, dc));
        }
        let ncons = r.count()?;
        let mut owner_of = std::collections::HashMap::new();
        for _ in 0..ncons {
            let cname = r.string()?;
            let seen = r.millis()?;
            let active = if t >= TYPE_STREAM_LISTPACKS_3 {
                r.millis()?
            } else {
                seen
            };
            let mut c = Consumer::new(seen);
            c.active_time = active;
            let n = r.count()?;
            for _ in 0..n {
                let id = r.raw_id()?;
                if owner_of.insert(id, cname.clone()).is_some() {
                    return r.bad("pending entry owned twice");
                }
                c.pel.insert(id);
            }
            if g.consumers.insert(cname.into_boxed_slice(), c).is_some() {
                return r.bad("duplicate consumer");
            }
        }
        for (id, dt, dc) in owners {
            let Some(owner) = owner_of.get(&id) else {
                return r.bad("pending entry without consumer");
            };
            g.pel.insert(
                id,
                Nack {
                    consumer: owner.clone().into_boxed_slice(),
                    delivery_time: dt,
                    delivery_count: dc,
                },
            );
        }
        if g.pel.len() != owner_of.len() {
            return r.bad("consumer pending entry missing from the group");
        }
        if s.groups.insert(name.into_boxed_slice(), g).is_some() {
            return r.bad("duplicate consumer group");
        }
    }
    Ok(Value::Stream(Box::new(s)))
}

/// Append the live entries of one stream listpack node.
fn stream_node(s: &mut StreamValue, master: StreamId, lp: &Listpack, _n: &mut u64) -> Option<()> {
    let mut it = lp.iter();
    let _count = lp_int(it.next())?;
    let _deleted = lp_int(it.next())?;
    let nmaster = lp_int(it.next())?;
    if !(0..=u32::MAX as i64).contains(&nmaster) {
        return None;
    }
    let mut master_fields = Vec::with_capacity(nmaster as usize);
    for _ in 0..nmaster {
        master_fields.push(it.next()?.to_vec());
    }
    if lp_int(it.next())? != 0 {
        return None;
    }
    while let Some(flags) = it.next() {
        let flags = flags.as_i64()?;
        let ms = master.ms.wrapping_add(lp_int(it.next())? as u64);
        let seq = master.seq.wrapping_add(lp_int(it.next())? as u64);
        let mut items: Vec<Vec<u8>> = Vec::new();
        if flags & STREAM_ITEM_SAMEFIELDS != 0 {
            for f in &master_fields {
                items.push(f.clone());
                items.push(it.next()?.to_vec());
            }
        } else {
            let nf = lp_int(it.next())?;
            if !(0..=u32::MAX as i64).contains(&nf) {
                return None;
            }
            for _ in 0..nf * 2 {
                items.push(it.next()?.to_vec());
            }
        }
        let _lp_count = lp_int(it.next())?;
        if flags & STREAM_ITEM_DELETED == 0 {
            let id = StreamId::new(ms, seq);
            s.append(Some(id), true, &items, 0).ok()?;
        }
    }
    Some(())
}

/// Check and decode a DUMP payload.
pub fn restore_payload(bytes: &[u8]) -> Result<Value, RestoreError> {
    let n = bytes.len();
    if n < 10 {
        return Err(RestoreError::VersionOrChecksum);
    }
    let ver = u16::from_le_bytes([bytes[n - 10], bytes[n - 9]]);
    let crc = u64::from_le_bytes(bytes[n - 8..].try_into().expect("8 bytes"));
    if ver > RDB_MAX_VERSION || crc64::crc64(&bytes[..n - 8]) != crc {
        return Err(RestoreError::VersionOrChecksum);
    }
    let mut r = Reader::new(&bytes[..n - 10]);
    let t = r.byte()?;
    if !is_value_type(t) {
        return r.bad("not a value type");
    }
    let v = read_value(&mut r, t)?;
    if !r.at_end() {
        return r.bad("trailing data");
    }
    Ok(v)
}
