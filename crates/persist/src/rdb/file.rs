//! Whole RDB files: header, AUX fields, FUNCTION2, SELECTDB/RESIZEDB, expiries, LRU/LFU
//! opcodes, key/value pairs, EOF and CRC-64 trailer.

use super::decode::{read_value, Reader, RestoreError};
use super::encode::{write_value_body, Writer};
use super::*;
use crate::crc64;
use std::io::Write;
use std::sync::Arc;
use tern_engine::snapshot::{KeyEncoder, SnapshotSink};
use tern_engine::value::Value;
use tern_engine::Entry;

/// Streams an RDB file to `out` as a snapshot's records arrive; the CRC covers everything
/// written.
pub struct FileWriter<W: Write + Send> {
    out: W,
    w: Writer,
    crc: u64,
    checksum: bool,
    cur_db: Option<usize>,
    /// Per database: (keys, expires) at the cut, for RESIZEDB, and whether it was announced.
    sizes: Vec<(u64, u64)>,
    resized: Vec<bool>,
    pub keys: u64,
    pub error: Option<std::io::Error>,
    encoder: Arc<KeyRecords>,
}

/// An RDB key record: expiry opcode if any, type, key, value. Keys already expired at the
/// snapshot's time are written too, as Redis does (the loader drops them and counts them in
/// `rdb_last_load_keys_expired`; a replica keeps them until its master's DEL).
///
/// Set and sorted-set member times follow the key as KeyDB writes them: an AUX pair
/// `keydb-subexpire-key` (the member) and `keydb-subexpire-when` (Unix ms in decimal) per
/// member. Redis skips AUX fields it does not know, so such a file still loads there (the
/// members without their times), and KeyDB loads it whole.
pub struct KeyRecords {
    compress: bool,
}

impl KeyRecords {
    fn write(w: &mut Writer, key: &[u8], value: &Value, expire_at: u64) {
        if expire_at != 0 {
            w.byte(OP_EXPIRETIME_MS);
            w.buf.extend_from_slice(&expire_at.to_le_bytes());
        }
        w.byte(super::encode::value_type(value));
        w.string(key);
        write_value_body(w, value);
        let member_ttls = value.member_ttls();
        if matches!(value, Value::Cron(j) if j.single) {
            w.byte(OP_AUX);
            w.string(AUX_CRON_SINGLE);
            w.string(b"1");
        }
        for (member, at) in member_ttls.into_iter().flat_map(|t| t.iter()) {
            w.byte(OP_AUX);
            w.string(AUX_SUBEXPIRE_KEY);
            w.string(member);
            w.byte(OP_AUX);
            w.string(AUX_SUBEXPIRE_WHEN);
            w.string(itoa::Buffer::new().format(at).as_bytes());
        }
    }
}

/// KeyDB's AUX names for a member time of the key just before them.
const AUX_SUBEXPIRE_KEY: &[u8] = b"keydb-subexpire-key";
const AUX_SUBEXPIRE_WHEN: &[u8] = b"keydb-subexpire-when";
/// tern's AUX field after a KEYDB.CRON key that runs once (KeyDB's layout has no place for it).
const AUX_CRON_SINGLE: &[u8] = b"tern-cron-single";

/// Give `member` of `value` the time `at_ms`, when it is there (a KeyDB member time; KeyDB
/// also writes hash fields' this way).
fn apply_member_ttl(value: &mut Value, member: &[u8], at_ms: u64) {
    if value.has_subkey(member) {
        value.set_subkey_ttl(member, at_ms);
    }
}

impl KeyEncoder for KeyRecords {
    fn encode(&self, out: &mut Vec<u8>, e: &Entry) -> bool {
        let exp = e.expire_at();
        let mut w = Writer {
            buf: std::mem::take(out),
            compress: self.compress,
        };
        Self::write(&mut w, e.key(), &e.value, exp);
        *out = w.buf;
        true
    }
}

impl<W: Write + Send> FileWriter<W> {
    /// Start a file: magic, version and AUX fields, then the function libraries.
    pub fn new(
        out: W,
        compress: bool,
        checksum: bool,
        aux: &[(&str, String)],
        functions: &[Vec<u8>],
        // RDB_VERSION, or RDB_VERSION_FIELD_TTLS when some hash has field times.
        version: u16,
    ) -> Self {
        let mut f = FileWriter {
            out,
            w: Writer::new(compress),
            crc: 0,
            checksum,
            cur_db: None,
            sizes: Vec::new(),
            resized: Vec::new(),
            keys: 0,
            error: None,
            encoder: Arc::new(KeyRecords { compress }),
        };
        f.w.buf
            .extend_from_slice(format!("REDIS{:04}", version).as_bytes());
        for (k, v) in aux {
            f.w.byte(OP_AUX);
            f.w.string(k.as_bytes());
            f.w.string(v.as_bytes());
        }
        for code in functions {
            f.w.byte(OP_FUNCTION2);
            f.w.string(code);
        }
        f.flush();
        f
    }

    fn flush(&mut self) {
        if self.error.is_none() && !self.w.buf.is_empty() {
            if self.checksum {
                self.crc = crc64::update(self.crc, &self.w.buf);
            }
            if let Err(e) = self.out.write_all(&self.w.buf) {
                self.error = Some(e);
            }
        }
        self.w.buf.clear();
    }

    /// Switch to database `db` (SELECTDB; RESIZEDB with its size at the cut, once).
    fn select(&mut self, db: usize) {
        if self.cur_db == Some(db) {
            return;
        }
        self.w.byte(OP_SELECTDB);
        self.w.len(db as u64);
        if !self.resized.get(db).copied().unwrap_or(true) {
            self.resized[db] = true;
            let (keys, expires) = self.sizes[db];
            self.w.byte(OP_RESIZEDB);
            self.w.len(keys);
            self.w.len(expires);
        }
        self.cur_db = Some(db);
    }

    /// EOF opcode and checksum (zero when checksums are off); returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.w.byte(OP_EOF);
        self.flush();
        let crc = if self.checksum { self.crc } else { 0 };
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write + Send> SnapshotSink for FileWriter<W> {
    fn encoder(&self) -> Arc<dyn KeyEncoder> {
        self.encoder.clone()
    }

    fn db_sizes(&mut self, sizes: &[(u64, u64)]) {
        self.sizes = sizes.to_vec();
        self.resized = vec![false; sizes.len()];
    }

    fn records(&mut self, db: usize, bytes: &[u8], keys: u64) {
        if self.error.is_some() {
            return;
        }
        self.select(db);
        self.w.buf.extend_from_slice(bytes);
        self.keys += keys;
        if self.w.buf.len() >= 64 * 1024 {
            self.flush();
        }
    }
}

/// What a loaded file held besides keys.
#[derive(Debug, Default)]
pub struct Loaded {
    pub version: u16,
    pub aux: Vec<(Vec<u8>, Vec<u8>)>,
    pub functions: Vec<Vec<u8>>,
    pub keys: u64,
    pub expired: u64,
    /// Offset just past the file's last byte (after the checksum): where the AOF tail of an
    /// RDB-preamble AOF starts.
    pub end: usize,
    /// Keys whose collection had no elements: skipped, as Redis skips them.
    pub empty_keys: Vec<Vec<u8>>,
    /// (database, key) of the keys dropped as expired, with `LoadOptions::name_expired`.
    pub expired_keys: Vec<(usize, Vec<u8>)>,
}

/// How a file is checked.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions {
    /// Deep sanitization of encoded values (`sanitize-dump-payload yes`).
    pub deep: bool,
    /// Verify the CRC-64 trailer (off with DEBUG SET-SKIP-CHECKSUM-VALIDATION 1).
    pub verify_crc: bool,
    /// Keep the names of the keys dropped as expired (`Loaded::expired_keys`): a master
    /// restarting with its replication history sends their DELs to its replicas.
    pub name_expired: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            deep: false,
            verify_crc: true,
            name_expired: false,
        }
    }
}

/// One key as loaded.
pub struct LoadedKey {
    pub db: usize,
    pub key: Vec<u8>,
    pub value: Value,
    pub expire_at: u64,
    pub idle: Option<u64>,
    pub freq: Option<u8>,
}

/// Parse a whole RDB file, handing each key to `on_key` (keys whose expiry is before
/// `now_ms` are skipped when `drop_expired`) and each RESIZEDB hint (database, keys) to
/// `on_resize`. Errors name the offset.
pub fn load(
    data: &[u8],
    now_ms: u64,
    drop_expired: bool,
    opts: LoadOptions,
    mut on_key: impl FnMut(LoadedKey),
    mut on_resize: impl FnMut(usize, u64),
    mut progress: impl FnMut(usize),
) -> Result<Loaded, RestoreError> {
    let mut r = Reader::new(data);
    r.deep = opts.deep;
    let mut p = Parse::new(header(&mut r)?, now_ms, drop_expired, opts.name_expired);
    while !p.record(&mut r, &mut on_key, &mut on_resize)? {
        if p.key_done && p.out.keys.is_multiple_of(1024) {
            progress(r.pos);
        }
    }
    if p.out.version >= 5 {
        let end = r.pos;
        let crc = trailer(&mut r)?;
        let actual = if opts.verify_crc && crc != 0 {
            crc64::crc64(&data[..end])
        } else {
            crc
        };
        check_crc(crc, actual, end)?;
    }
    p.out.end = r.pos;
    Ok(p.out)
}

/// `load` for an RDB that arrives from a reader (a replica's diskless load from its master's
/// socket): only the record being parsed is buffered. The reader must end where the RDB ends
/// (anything after the checksum is left unread or reported as `end`).
pub fn load_from<Rd: std::io::Read>(
    src: &mut Rd,
    now_ms: u64,
    drop_expired: bool,
    opts: LoadOptions,
    mut on_key: impl FnMut(LoadedKey),
    mut on_resize: impl FnMut(usize, u64),
    mut progress: impl FnMut(usize),
) -> Result<Loaded, StreamLoadError> {
    let mut buf = StreamBuf::new(src);
    buf.fill(9)?;
    let version = {
        let mut r = Reader::new(buf.pending());
        let v = header(&mut r)?;
        buf.consume(r.pos, opts.verify_crc);
        v
    };
    let mut p = Parse::new(version, now_ms, drop_expired, opts.name_expired);
    loop {
        let mut r = Reader::new(buf.pending());
        r.deep = opts.deep;
        match p.record(&mut r, &mut on_key, &mut on_resize) {
            Ok(eof) => {
                let used = r.pos;
                let at_key = p.key_done && p.out.keys.is_multiple_of(1024);
                buf.consume(used, opts.verify_crc);
                if at_key {
                    progress(buf.base);
                }
                if eof {
                    break;
                }
            }
            // The record goes on past what arrived: read more and parse it again (each
            // retry at least doubles what is buffered, so a big value costs twice its size).
            Err(e) if is_short(&e) && !buf.eof => buf.more()?,
            Err(e) => return Err(StreamLoadError::Rdb(at_offset(e, buf.base))),
        }
    }
    if p.out.version >= 5 {
        let end = buf.base;
        let crc = match buf.fill(8) {
            Ok(()) => {
                let mut r = Reader::new(buf.pending());
                trailer(&mut r)?
            }
            Err(StreamLoadError::Rdb(_)) => {
                return Err(StreamLoadError::Rdb(RestoreError::Bad(
                    "short read of the checksum".into(),
                    end,
                )))
            }
            Err(e) => return Err(e),
        };
        let actual = if opts.verify_crc && crc != 0 {
            buf.crc
        } else {
            crc
        };
        check_crc(crc, actual, end)?;
        buf.consume(8, false);
    }
    p.out.end = buf.base;
    Ok(p.out)
}

/// Why a streamed load failed: the reader's error, or the RDB's.
#[derive(Debug)]
pub enum StreamLoadError {
    Io(std::io::Error),
    Rdb(RestoreError),
}

impl From<RestoreError> for StreamLoadError {
    fn from(e: RestoreError) -> Self {
        StreamLoadError::Rdb(e)
    }
}

impl std::fmt::Display for StreamLoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamLoadError::Io(e) => write!(f, "{e}"),
            StreamLoadError::Rdb(e) => write!(f, "{e}"),
        }
    }
}

/// The bytes of a streamed RDB read so far and not parsed yet, and the CRC of those parsed.
struct StreamBuf<'a, Rd: std::io::Read> {
    src: &'a mut Rd,
    buf: Vec<u8>,
    start: usize,
    /// Offset in the RDB of `buf[start]`.
    base: usize,
    eof: bool,
    crc: u64,
}

impl<'a, Rd: std::io::Read> StreamBuf<'a, Rd> {
    const CHUNK: usize = 64 * 1024;

    fn new(src: &'a mut Rd) -> Self {
        StreamBuf {
            src,
            buf: Vec::with_capacity(Self::CHUNK),
            start: 0,
            base: 0,
            eof: false,
            crc: 0,
        }
    }

    fn pending(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// `n` bytes parsed: into the CRC, out of the buffer.
    fn consume(&mut self, n: usize, crc: bool) {
        if crc {
            self.crc = crc64::update(self.crc, &self.buf[self.start..self.start + n]);
        }
        self.start += n;
        self.base += n;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Read at least as much again as is pending (one chunk at the least), or to the end.
    fn more(&mut self) -> Result<(), StreamLoadError> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let want = self.buf.len() + self.buf.len().max(Self::CHUNK);
        while self.buf.len() < want && !self.eof {
            let at = self.buf.len();
            self.buf.resize(want, 0);
            match self.src.read(&mut self.buf[at..]) {
                Ok(0) => {
                    self.buf.truncate(at);
                    self.eof = true;
                }
                Ok(n) => self.buf.truncate(at + n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => self.buf.truncate(at),
                Err(e) => {
                    self.buf.truncate(at);
                    return Err(StreamLoadError::Io(e));
                }
            }
        }
        Ok(())
    }

    /// At least `n` bytes pending, or a short-read error.
    fn fill(&mut self, n: usize) -> Result<(), StreamLoadError> {
        while self.pending().len() < n {
            if self.eof {
                return Err(StreamLoadError::Rdb(RestoreError::Bad(
                    "unexpected end of data".into(),
                    self.base + self.pending().len(),
                )));
            }
            self.more()?;
        }
        Ok(())
    }
}

/// The error is the data running out (more may arrive), wherever it happened.
fn is_short(e: &RestoreError) -> bool {
    match e {
        RestoreError::Bad(what, _) => what == "unexpected end of data",
        RestoreError::InKey { cause, .. } => is_short(cause),
        _ => false,
    }
}

/// An error's offset in a buffer made an offset in the whole RDB.
fn at_offset(e: RestoreError, base: usize) -> RestoreError {
    match e {
        RestoreError::Bad(what, off) => RestoreError::Bad(what, off + base),
        RestoreError::InKey {
            cause,
            key,
            offset,
            rdb_type,
        } => RestoreError::InKey {
            cause: Box::new(at_offset(*cause, base)),
            key,
            offset: offset + base,
            rdb_type,
        },
        other => other,
    }
}

/// Magic and version.
fn header(r: &mut Reader) -> Result<u16, RestoreError> {
    let magic = r.take(9)?;
    if &magic[..5] != b"REDIS" {
        return Err(RestoreError::Bad(
            "wrong signature trying to load DB from file".into(),
            0,
        ));
    }
    let version: u16 = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| RestoreError::Bad("bad RDB version".into(), 5))?;
    if !(1..=RDB_MAX_VERSION).contains(&version) {
        return Err(RestoreError::Bad(
            format!("can't handle RDB format version {version}"),
            5,
        ));
    }
    Ok(version)
}

/// The CRC-64 after the EOF opcode.
fn trailer(r: &mut Reader) -> Result<u64, RestoreError> {
    let end = r.pos;
    Ok(u64::from_le_bytes(
        r.take(8)
            .map_err(|_| RestoreError::Bad("short read of the checksum".into(), end))?
            .try_into()
            .expect("8"),
    ))
}

fn check_crc(crc: u64, actual: u64, end: usize) -> Result<(), RestoreError> {
    if actual != crc {
        // Redis's wording: operators (and Redis's suite) grep for "CRC error".
        return Err(RestoreError::Bad(
            format!("Wrong RDB checksum expected: ({crc:x}) but got ({actual:x}). RDB CRC error"),
            end,
        ));
    }
    Ok(())
}

/// The parser's state between records. A record changes it only once read whole, so a
/// streamed load can parse a record again when more of it arrives.
struct Parse {
    out: Loaded,
    now_ms: u64,
    drop_expired: bool,
    /// Keep the names of the keys dropped as expired (`LoadOptions::name_expired`).
    name_expired: bool,
    db: usize,
    expire_at: u64,
    idle: Option<u64>,
    freq: Option<u8>,
    /// The last record was a key (loaded or expired).
    key_done: bool,
    /// The last key loaded, held back until the record after it: member-time AUX fields may
    /// follow it.
    held: Option<LoadedKey>,
    /// The member named by a `keydb-subexpire-key` AUX field, awaiting its time.
    subkey: Option<Vec<u8>>,
}

impl Parse {
    fn new(version: u16, now_ms: u64, drop_expired: bool, name_expired: bool) -> Parse {
        Parse {
            out: Loaded {
                version,
                ..Default::default()
            },
            now_ms,
            drop_expired,
            name_expired,
            db: 0,
            expire_at: 0,
            idle: None,
            freq: None,
            key_done: false,
            held: None,
            subkey: None,
        }
    }

    /// One opcode with its operands, or one key; true at the EOF opcode.
    fn record(
        &mut self,
        r: &mut Reader,
        on_key: &mut impl FnMut(LoadedKey),
        on_resize: &mut impl FnMut(usize, u64),
    ) -> Result<bool, RestoreError> {
        self.key_done = false;
        let at = r.pos;
        let t = r.byte()?;
        if t == OP_AUX {
            let k = r.string()?;
            let v = r.string()?;
            if k == AUX_SUBEXPIRE_KEY {
                self.subkey = Some(v);
                return Ok(false);
            }
            if k == AUX_CRON_SINGLE {
                if let Some(LoadedKey {
                    value: Value::Cron(j),
                    ..
                }) = self.held.as_mut()
                {
                    j.single = true;
                }
                return Ok(false);
            }
            if k == AUX_SUBEXPIRE_WHEN {
                let at_ms = std::str::from_utf8(&v)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok());
                if let (Some(held), Some(m), Some(at_ms)) =
                    (self.held.as_mut(), self.subkey.take(), at_ms)
                {
                    apply_member_ttl(&mut held.value, &m, at_ms);
                }
                return Ok(false);
            }
            if let Some(k) = self.held.take() {
                on_key(k);
            }
            self.out.aux.push((k, v));
            return Ok(false);
        }
        if let Some(k) = self.held.take() {
            on_key(k);
        }
        match t {
            OP_EXPIRETIME => {
                self.expire_at = r.u32_le()? as u64 * 1000;
                return Ok(false);
            }
            OP_EXPIRETIME_MS => {
                self.expire_at = r.millis()? as u64;
                return Ok(false);
            }
            OP_FREQ => {
                self.freq = Some(r.byte()?);
                return Ok(false);
            }
            OP_IDLE => {
                self.idle = Some(r.len()?);
                return Ok(false);
            }
            OP_EOF => return Ok(true),
            OP_SELECTDB => {
                self.db = r.len()? as usize;
                return Ok(false);
            }
            OP_RESIZEDB => {
                let keys = r.len()?;
                r.len()?;
                on_resize(self.db, keys);
                return Ok(false);
            }
            OP_MODULE_AUX => return Err(RestoreError::Module),
            OP_FUNCTION_PRE_GA => {
                return Err(RestoreError::Bad(
                    "pre-GA function format not supported".into(),
                    at,
                ))
            }
            OP_FUNCTION2 => {
                self.out.functions.push(r.string()?);
                return Ok(false);
            }
            _ => {}
        }
        if !is_value_type(t) {
            return Err(RestoreError::Bad(format!("unknown RDB type {t}"), at));
        }
        let key = r.string()?;
        let value = match read_value(r, t) {
            Ok(v) => v,
            Err(RestoreError::EmptyKey) => {
                self.out.empty_keys.push(key);
                (self.expire_at, self.idle, self.freq) = (0, None, None);
                return Ok(false);
            }
            Err(e) => {
                return Err(RestoreError::InKey {
                    cause: Box::new(e),
                    key,
                    offset: at,
                    rdb_type: t,
                })
            }
        };
        let expire_at = self.expire_at;
        if self.drop_expired && expire_at != 0 && expire_at <= self.now_ms {
            self.out.expired += 1;
            if self.name_expired {
                self.out.expired_keys.push((self.db, key));
            }
        } else {
            self.out.keys += 1;
            self.key_done = true;
            self.held = Some(LoadedKey {
                db: self.db,
                key,
                value,
                expire_at,
                idle: self.idle,
                freq: self.freq,
            });
        }
        (self.expire_at, self.idle, self.freq) = (0, None, None);
        Ok(false)
    }
}
