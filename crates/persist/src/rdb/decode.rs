//! Reading RDB values of every type and encoding up to RDB version 11.

use super::*;
use crate::crc64;
use tern_engine::listpack::{Listpack, LpEntry};
use tern_engine::types::intset::Intset;
use tern_engine::types::stream::{Consumer, ConsumerGroup, Nack, StreamId};
use tern_engine::types::{CronJob, HashValue, ListValue, SetValue, StreamValue, ZSetValue};
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
    /// A value that fails an integrity check; the text is the reason as Redis's log words it
    /// (the suite and operators grep for it).
    Corrupt(String),
    /// A collection with no elements: skipped when loading a file, refused by RESTORE.
    EmptyKey,
    /// A file's key/value record that could not be read: what, which key, where.
    InKey {
        cause: Box<RestoreError>,
        key: Vec<u8>,
        offset: usize,
        rdb_type: u8,
    },
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestoreError::VersionOrChecksum => {
                write!(f, "DUMP payload version or checksum are wrong")
            }
            RestoreError::Bad(what, off) => write!(f, "{what} at offset {off}"),
            RestoreError::Module => write!(f, "module data types are not supported"),
            RestoreError::Corrupt(why) => f.write_str(why),
            RestoreError::EmptyKey => write!(f, "empty key"),
            RestoreError::InKey { cause, .. } => write!(f, "{cause}"),
        }
    }
}

type R<T> = Result<T, RestoreError>;

fn corrupt<T>(why: &str) -> R<T> {
    Err(RestoreError::Corrupt(why.to_string()))
}

/// A cursor over RDB bytes.
pub struct Reader<'a> {
    pub b: &'a [u8],
    pub pos: usize,
    /// Deep sanitization (`sanitize-dump-payload`): every check Redis runs only in its deep
    /// mode. tern decodes every entry of every encoding anyway, so the structural checks
    /// always run; what deep adds is refusing what a shallow Redis keeps as it is (a set
    /// listpack with a repeated member).
    pub deep: bool,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader {
            b,
            pos: 0,
            deep: true,
        }
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

/// A KEYDB.CRON job in KeyDB's layout (always a repeating one: KeyDB keeps SINGLE in memory
/// only; tern's files say it in an AUX field after the key).
fn read_cron(r: &mut Reader) -> R<Value> {
    let script = r.string()?.into_boxed_slice();
    let start_ms = r.millis()? as u64;
    let interval_ms = r.millis()? as u64;
    if interval_ms == 0 || interval_ms > i64::MAX as u64 {
        return r.bad("cron job with a bad interval");
    }
    let strings = |r: &mut Reader| -> R<Vec<Box<[u8]>>> {
        let n = r.count()?;
        (0..n).map(|_| Ok(r.string()?.into_boxed_slice())).collect()
    };
    let keys = strings(r)?;
    let args = strings(r)?;
    Ok(Value::Cron(tern_engine::PackedBox::new(CronJob {
        script,
        start_ms,
        interval_ms,
        keys,
        args,
        single: false,
    })))
}

/// Read a value of RDB type `t` (the type byte already consumed).
///
/// Every encoded blob is walked entry by entry as it is converted, so a value that is
/// accepted is made of well-formed entries whatever `deep` says; refusals carry Redis's
/// reason (`Ziplist integrity check failed.` ...).
pub fn read_value(r: &mut Reader, t: u8) -> R<Value> {
    let v = match t {
        TYPE_STRING => Value::Str(r.rstring()?),
        TYPE_LIST => {
            let n = r.count()?;
            if n == 0 {
                return Err(RestoreError::EmptyKey);
            }
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(r.string()?);
            }
            build_list(items.iter().map(|v| v.as_slice()))
        }
        TYPE_LIST_ZIPLIST => {
            let zl = r.string()?;
            let Some(items) = parse_ziplist(&zl) else {
                return corrupt("List ziplist integrity check failed.");
            };
            if items.is_empty() {
                return Err(RestoreError::EmptyKey);
            }
            build_list(items.iter().map(|v| v.as_slice()))
        }
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            let nodes = r.count()?;
            if nodes == 0 {
                return Err(RestoreError::EmptyKey);
            }
            let mut items: Vec<Vec<u8>> = Vec::new();
            for _ in 0..nodes {
                let container = if t == TYPE_LIST_QUICKLIST_2 {
                    r.len()?
                } else {
                    QUICKLIST_PACKED
                };
                if container != QUICKLIST_PACKED && container != QUICKLIST_PLAIN {
                    return corrupt("Quicklist integrity check failed.");
                }
                let blob = r.string()?;
                if blob.is_empty() {
                    return r.bad("empty quicklist node");
                }
                if container == QUICKLIST_PLAIN {
                    items.push(blob);
                    continue;
                }
                // Empty nodes are skipped; an empty list in the end is an empty key.
                if t == TYPE_LIST_QUICKLIST {
                    match parse_ziplist(&blob) {
                        Some(v) => items.extend(v),
                        None => return corrupt("Ziplist integrity check failed."),
                    }
                } else {
                    match parse_listpack(blob) {
                        Some(v) => items.extend(v),
                        None => return corrupt("Listpack integrity check failed."),
                    }
                }
            }
            if items.is_empty() {
                return Err(RestoreError::EmptyKey);
            }
            build_list(items.iter().map(|v| v.as_slice()))
        }
        TYPE_SET => {
            let n = r.count()?;
            if n == 0 {
                return Err(RestoreError::EmptyKey);
            }
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(r.string()?);
            }
            match build_set(&items) {
                Some(v) => v,
                None => return corrupt("Duplicate set members detected"),
            }
        }
        TYPE_SET_INTSET => {
            let blob = r.string()?;
            // Sorted, unique and non-empty, checked in every mode: lookups bisect it.
            let Some(is) = Intset::from_bytes(blob).filter(|is| !is.is_empty()) else {
                return corrupt("Intset integrity check failed.");
            };
            let items: Vec<Vec<u8>> = is.iter().map(|v| v.to_string().into_bytes()).collect();
            match build_set(&items) {
                Some(v) => v,
                None => return corrupt("Intset integrity check failed."),
            }
        }
        TYPE_SET_LISTPACK => {
            let blob = r.string()?;
            let Some(lp) = Listpack::from_bytes(blob) else {
                return corrupt("Set listpack integrity check failed.");
            };
            if lp.is_empty() {
                return Err(RestoreError::EmptyKey);
            }
            let items: Vec<Vec<u8>> = lp.iter().map(|e| e.to_vec()).collect();
            match build_set(&items) {
                Some(v) => v,
                // Shallow sanitization keeps a listpack with a repeated member as it is
                // (as Redis does); the set commands cope with it.
                None if !r.deep && items.len() <= set_listpack_max_entries() => {
                    Value::Set(SetValue::Listpack(lp))
                }
                None => return corrupt("Set listpack integrity check failed."),
            }
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count()?;
            if n == 0 {
                return Err(RestoreError::EmptyKey);
            }
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?;
                let s = if t == TYPE_ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                if s.is_nan() {
                    return corrupt("Zset with NAN score detected");
                }
                pairs.push((m, s));
            }
            match build_zset(pairs) {
                Some(v) => v,
                None => return corrupt("Duplicate zset fields detected"),
            }
        }
        TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => {
            let why = if t == TYPE_ZSET_ZIPLIST {
                "Zset ziplist integrity check failed."
            } else {
                "Zset listpack integrity check failed."
            };
            let blob = r.string()?;
            let items = if t == TYPE_ZSET_ZIPLIST {
                parse_ziplist(&blob)
            } else {
                parse_listpack(blob)
            };
            let Some(items) = items.filter(|v| v.len() % 2 == 0) else {
                return corrupt(why);
            };
            if items.is_empty() {
                return Err(RestoreError::EmptyKey);
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
                    None => return corrupt(why),
                }
            }
            match build_zset(pairs) {
                Some(v) => v,
                None => return corrupt(why),
            }
        }
        TYPE_HASH => {
            let n = r.count()?;
            if n == 0 {
                return Err(RestoreError::EmptyKey);
            }
            let mut items = Vec::with_capacity(n * 2);
            for _ in 0..n {
                items.push(r.string()?);
                items.push(r.string()?);
            }
            match build_hash(items) {
                Some(v) => v,
                None => return corrupt("Duplicate hash fields detected"),
            }
        }
        TYPE_HASH_METADATA | TYPE_HASH_METADATA_PRE_GA => {
            // Times relative to the earliest (+1), or absolute in the release candidates.
            let min = if t == TYPE_HASH_METADATA {
                r.millis()? as u64
            } else {
                1
            };
            let n = r.count()?;
            if n == 0 {
                return Err(RestoreError::EmptyKey);
            }
            let mut items = Vec::with_capacity(n * 2);
            let mut times = Vec::with_capacity(n);
            for _ in 0..n {
                let rel = r.len()?;
                let at = if rel == 0 {
                    0
                } else {
                    rel.checked_add(min).map_or(u64::MAX, |x| x - 1)
                };
                if at > FIELD_TIME_MAX {
                    return corrupt(&format!("invalid expireAt time: {at}"));
                }
                items.push(r.string()?);
                items.push(r.string()?);
                times.push(at);
            }
            match build_hash_with_times(items, times) {
                Some(v) => v,
                None => return corrupt("Hash with dup elements"),
            }
        }
        TYPE_HASH_LISTPACK_EX | TYPE_HASH_LISTPACK_EX_PRE_GA => {
            if t == TYPE_HASH_LISTPACK_EX {
                r.millis()?;
            }
            let why = "Hash listpack integrity check failed.";
            let Some(triplets) = parse_listpack(r.string()?).filter(|v| v.len() % 3 == 0) else {
                return corrupt(why);
            };
            if triplets.is_empty() {
                return Err(RestoreError::EmptyKey);
            }
            let mut items = Vec::with_capacity(triplets.len() / 3 * 2);
            let mut times = Vec::with_capacity(triplets.len() / 3);
            let mut it = triplets.into_iter();
            while let (Some(f), Some(v), Some(at)) = (it.next(), it.next(), it.next()) {
                let at = std::str::from_utf8(&at)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                    .filter(|&at| at <= FIELD_TIME_MAX);
                let Some(at) = at else {
                    return corrupt(why);
                };
                items.push(f);
                items.push(v);
                times.push(at);
            }
            match build_hash_with_times(items, times) {
                Some(v) => v,
                None => return corrupt(why),
            }
        }
        TYPE_HASH_ZIPMAP => {
            let blob = r.string()?;
            let Some(items) = parse_zipmap(&blob) else {
                return corrupt("Zipmap integrity check failed.");
            };
            let flen = items.first().map_or(0, |f| f.len());
            match build_hash(items) {
                Some(v) => v,
                None => {
                    return corrupt(&format!(
                        "Hash zipmap with dup elements, or big length ({flen})"
                    ))
                }
            }
        }
        TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
            let blob = r.string()?;
            let items = if t == TYPE_HASH_ZIPLIST {
                parse_ziplist(&blob)
            } else {
                parse_listpack(blob)
            };
            let why = if t == TYPE_HASH_ZIPLIST {
                "Hash ziplist integrity check failed."
            } else {
                "Hash listpack integrity check failed."
            };
            let Some(items) = items.filter(|v| v.len() % 2 == 0) else {
                return corrupt(why);
            };
            if items.is_empty() {
                return Err(RestoreError::EmptyKey);
            }
            match build_hash(items) {
                Some(v) => v,
                // A shallow Redis keeps the listpack and panics when it later meets the
                // repeated field (converting it, "listpack with dup elements"); tern refuses
                // it at once, naming the same cause.
                None if t == TYPE_HASH_LISTPACK && !r.deep => {
                    return corrupt("Hash listpack with dup elements")
                }
                None => return corrupt(why),
            }
        }
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
            read_stream(r, t)?
        }
        TYPE_MODULE_PRE_GA | TYPE_MODULE_2 => return Err(RestoreError::Module),
        TYPE_CRON => read_cron(r)?,
        _ => return r.bad("unknown value type"),
    };
    Ok(v)
}

fn set_listpack_max_entries() -> usize {
    tern_engine::types::set::listpack_max_entries()
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

/// A hash whose field `i` expires at `times[i]` (0: never). A hash whose every time was taken
/// away still loads in the expiring form, as Redis keeps its `listpackex`.
fn build_hash_with_times(items: Vec<Vec<u8>>, times: Vec<u64>) -> Option<Value> {
    let fields: Vec<Vec<u8>> = items.iter().step_by(2).cloned().collect();
    let Some(Value::Hash(mut h)) = build_hash(items) else {
        return None;
    };
    for (f, at) in fields.iter().zip(times) {
        if at != 0 {
            h.set_field_ttl(f, at);
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

/// Ziplist (Redis < 7): header (total bytes, tail offset, count), entries (previous
/// entry's length, encoding, data), 0xff. Checked as Redis's deep validation checks it:
/// every entry inside the blob, each previous-length equal to the previous entry's real
/// size, the tail offset naming the last entry, the count (unless 0xffff) equal to the
/// entries, the end byte last and only last.
pub fn parse_ziplist(z: &[u8]) -> Option<Vec<Vec<u8>>> {
    const HDR: usize = 10;
    if z.len() < HDR + 1 || u32::from_le_bytes(z[..4].try_into().ok()?) as usize != z.len() {
        return None;
    }
    let end = z.len() - 1;
    let tail = u32::from_le_bytes(z[4..8].try_into().ok()?) as usize;
    let count = u16::from_le_bytes([z[8], z[9]]);
    if z[end] != 0xff || tail > end {
        return None;
    }
    let mut p = HDR;
    let (mut prev_size, mut last) = (0usize, None);
    let mut out = Vec::new();
    let get = |p: usize, n: usize| {
        z.get(p..p.checked_add(n)?.min(end + 1))
            .filter(|s| s.len() == n)
    };
    while p < end {
        let start = p;
        let prevlen = match z[p] {
            0xff => return None,
            0xfe => {
                p += 5;
                u32::from_le_bytes(get(start + 1, 4)?.try_into().ok()?) as usize
            }
            c => {
                p += 1;
                c as usize
            }
        };
        if prevlen != prev_size {
            return None;
        }
        let enc = *get(p, 1)?.first()?;
        p += 1;
        match enc >> 6 {
            0 => {
                let n = (enc & 0x3f) as usize;
                out.push(get(p, n)?.to_vec());
                p += n;
            }
            1 => {
                let n = (((enc & 0x3f) as usize) << 8) | *get(p, 1)?.first()? as usize;
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
                    0xfe => (*get(p, 1)?.first()? as i8 as i64, 1),
                    0xf1..=0xfd => ((enc & 0x0f) as i64 - 1, 0),
                    _ => return None,
                };
                p += n;
                out.push(v.to_string().into_bytes());
            }
        }
        if p > end {
            return None;
        }
        prev_size = p - start;
        last = Some(start);
    }
    if let Some(last) = last {
        if tail != last {
            return None;
        }
    }
    if count != u16::MAX && count as usize != out.len() {
        return None;
    }
    Some(out)
}

/// Zipmap (Redis < 2.6 hashes): count byte (254: unknown), then length-prefixed key, value
/// (with a count of free bytes after it), 0xff last. Never empty.
pub fn parse_zipmap(z: &[u8]) -> Option<Vec<Vec<u8>>> {
    if z.len() < 2 || *z.last()? != 0xff {
        return None;
    }
    let end = z.len() - 1;
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
    let take = |p: &mut usize, n: usize| -> Option<Vec<u8>> {
        let e = p.checked_add(n).filter(|&e| e <= end)?;
        let v = z[*p..e].to_vec();
        *p = e;
        Some(v)
    };
    while p < end {
        let kl = rd_len(&mut p)?;
        out.push(take(&mut p, kl)?);
        let vl = rd_len(&mut p)?;
        let free = *z.get(p)? as usize;
        p += 1;
        out.push(take(&mut p, vl)?);
        take(&mut p, free)?;
    }
    let pairs = out.len() / 2;
    if p != end || pairs == 0 || (z[0] != 254 && z[0] as usize != pairs) {
        return None;
    }
    Some(out)
}

fn read_stream(r: &mut Reader, t: u8) -> R<Value> {
    let mut s = StreamValue::new();
    let nodes = r.count()?;
    for _ in 0..nodes {
        let key = r.string()?;
        if key.len() != 16 {
            return corrupt("Stream node key entry is not the size of a stream ID");
        }
        let master = StreamId::new(
            u64::from_be_bytes(key[..8].try_into().expect("8")),
            u64::from_be_bytes(key[8..].try_into().expect("8")),
        );
        let blob = r.string()?;
        let Some(lp) = Listpack::from_bytes(blob) else {
            return corrupt("Stream listpack integrity check failed.");
        };
        if lp.is_empty() {
            return corrupt("Empty listpack inside stream");
        }
        if stream_node(&mut s, master, &lp, r.deep).is_none() {
            return corrupt("Stream listpack integrity check failed.");
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
    // The header's length is redundant (tern counts the entries it rebuilt): deep mode
    // wants it exact, shallow only refuses a length over no entries at all, as Redis.
    if (r.deep && length != s.len() as u64) || (length != 0 && s.node_count() == 0) {
        return corrupt("Stream length inconsistent with rax entries");
    }
    // New IDs are made after the last one: a last ID behind the entries would put the next
    // XADD in the middle of the stream.
    if s.last_entry().is_some_and(|e| e.id > s.last_id) {
        return corrupt("Stream last ID smaller than its last entry");
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
        let mut global: std::collections::HashMap<StreamId, (i64, u64)> =
            std::collections::HashMap::with_capacity(npel);
        for _ in 0..npel {
            let id = r.raw_id()?;
            let dt = r.millis()?;
            let dc = r.len()?;
            if global.insert(id, (dt, dc)).is_some() {
                return corrupt("Duplicated global PEL entry loading stream consumer group");
            }
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
                if !global.contains_key(&id) {
                    return corrupt("Consumer entry not found in group global PEL");
                }
                if owner_of.insert(id, cname.clone()).is_some() {
                    return corrupt(
                        "Duplicated consumer PEL entry  loading a stream consumer group",
                    );
                }
                c.pel.insert(id);
            }
            if g.consumers.contains_key(cname.as_slice()) {
                return corrupt("Duplicate stream consumer detected.");
            }
            g.consumers.insert(cname.into_boxed_slice(), c);
        }
        // Every pending entry needs its owner (Redis checks it in deep mode; tern's group
        // keeps the owner in the entry, so always).
        for (id, (dt, dc)) in global {
            let Some(owner) = owner_of.get(&id) else {
                return corrupt("Stream CG PEL entry without consumer");
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
        if s.groups.contains_key(name.as_slice()) {
            return corrupt(&format!(
                "Duplicated consumer group name {}",
                String::from_utf8_lossy(&name)
            ));
        }
        s.groups.insert(name.into_boxed_slice(), g);
    }
    Ok(Value::stream(s))
}

/// Append the live entries of one stream listpack node: master entry (counts, field names,
/// zero terminator), then every entry with its flags, ID deltas, fields and values. Deep
/// mode also checks the redundant counters as Redis's deep validation does: each entry's
/// back-count equal to the items it spans, the entries walked equal to the node's live plus
/// deleted counts. (Shallow mode does without: tern rebuilds the node from its entries, so
/// a wrong counter cannot mislead it later.)
fn stream_node(s: &mut StreamValue, master: StreamId, lp: &Listpack, deep: bool) -> Option<()> {
    let mut it = lp.iter();
    let count = lp_int(it.next())?;
    let deleted = lp_int(it.next())?;
    let nmaster = lp_int(it.next())?;
    if count < 0 || deleted < 0 || !(0..=u32::MAX as i64).contains(&nmaster) {
        return None;
    }
    let mut master_fields = Vec::with_capacity(nmaster.min(1024) as usize);
    for _ in 0..nmaster {
        master_fields.push(it.next()?.to_vec());
    }
    if lp_int(it.next())? != 0 {
        return None;
    }
    let mut walked = 0i64;
    while let Some(flags) = it.next() {
        let flags = flags.as_i64()?;
        let ms = master.ms.wrapping_add(lp_int(it.next())? as u64);
        let seq = master.seq.wrapping_add(lp_int(it.next())? as u64);
        let mut items: Vec<Vec<u8>> = Vec::new();
        let spans = if flags & STREAM_ITEM_SAMEFIELDS != 0 {
            for f in &master_fields {
                items.push(f.clone());
                items.push(it.next()?.to_vec());
            }
            master_fields.len() as i64 + 3
        } else {
            let nf = lp_int(it.next())?;
            if !(0..=u32::MAX as i64).contains(&nf) {
                return None;
            }
            for _ in 0..nf * 2 {
                items.push(it.next()?.to_vec());
            }
            nf * 2 + 4
        };
        if lp_int(it.next())? != spans && deep {
            return None;
        }
        walked += 1;
        if flags & STREAM_ITEM_DELETED == 0 {
            let id = StreamId::new(ms, seq);
            s.append(Some(id), true, &items, 0).ok()?;
        }
    }
    (!deep || walked == count.checked_add(deleted)?).then_some(())
}

/// Check and decode a DUMP payload (checksum verified, deep sanitization).
pub fn restore_payload(bytes: &[u8]) -> Result<Value, RestoreError> {
    restore_payload_with(bytes, true, true)
}

/// Check and decode a DUMP payload: the RDB version always, the CRC-64 unless
/// `verify_crc` is off (DEBUG SET-SKIP-CHECKSUM-VALIDATION), with deep sanitization or not.
pub fn restore_payload_with(
    bytes: &[u8],
    verify_crc: bool,
    deep: bool,
) -> Result<Value, RestoreError> {
    let n = bytes.len();
    if n < 10 {
        return Err(RestoreError::VersionOrChecksum);
    }
    let ver = u16::from_le_bytes([bytes[n - 10], bytes[n - 9]]);
    if ver > RDB_MAX_VERSION {
        return Err(RestoreError::VersionOrChecksum);
    }
    let crc = u64::from_le_bytes(bytes[n - 8..].try_into().expect("8 bytes"));
    if verify_crc && crc64::crc64(&bytes[..n - 8]) != crc {
        return Err(RestoreError::VersionOrChecksum);
    }
    let mut r = Reader::new(&bytes[..n - 10]);
    r.deep = deep;
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
