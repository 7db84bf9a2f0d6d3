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
        // The snapshot's time; kept for callers, though expired keys are written as well.
        _now_ms: u64,
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
            .extend_from_slice(format!("REDIS{:04}", RDB_VERSION).as_bytes());
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
    let mut out = Loaded {
        version,
        ..Default::default()
    };
    let mut db = 0usize;
    let (mut expire_at, mut idle, mut freq) = (0u64, None, None);
    loop {
        let at = r.pos;
        let t = r.byte()?;
        match t {
            OP_EXPIRETIME => {
                expire_at = r.u32_le()? as u64 * 1000;
                continue;
            }
            OP_EXPIRETIME_MS => {
                expire_at = r.millis()? as u64;
                continue;
            }
            OP_FREQ => {
                freq = Some(r.byte()?);
                continue;
            }
            OP_IDLE => {
                idle = Some(r.len()?);
                continue;
            }
            OP_EOF => break,
            OP_SELECTDB => {
                db = r.len()? as usize;
                continue;
            }
            OP_RESIZEDB => {
                let keys = r.len()?;
                r.len()?;
                on_resize(db, keys);
                continue;
            }
            OP_AUX => {
                let k = r.string()?;
                let v = r.string()?;
                out.aux.push((k, v));
                continue;
            }
            OP_MODULE_AUX => return Err(RestoreError::Module),
            OP_FUNCTION_PRE_GA => {
                return Err(RestoreError::Bad(
                    "pre-GA function format not supported".into(),
                    at,
                ))
            }
            OP_FUNCTION2 => {
                out.functions.push(r.string()?);
                continue;
            }
            _ => {}
        }
        if !is_value_type(t) {
            return Err(RestoreError::Bad(format!("unknown RDB type {t}"), at));
        }
        let key = r.string()?;
        let value = match read_value(&mut r, t) {
            Ok(v) => v,
            Err(RestoreError::EmptyKey) => {
                out.empty_keys.push(key);
                (expire_at, idle, freq) = (0, None, None);
                continue;
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
        if drop_expired && expire_at != 0 && expire_at <= now_ms {
            out.expired += 1;
            if opts.name_expired {
                out.expired_keys.push((db, key));
            }
        } else {
            out.keys += 1;
            on_key(LoadedKey {
                db,
                key,
                value,
                expire_at,
                idle,
                freq,
            });
        }
        expire_at = 0;
        idle = None;
        freq = None;
        if out.keys.is_multiple_of(1024) {
            progress(r.pos);
        }
    }
    if version >= 5 {
        let end = r.pos;
        let crc = u64::from_le_bytes(
            r.take(8)
                .map_err(|_| RestoreError::Bad("short read of the checksum".into(), end))?
                .try_into()
                .expect("8"),
        );
        let actual = if opts.verify_crc && crc != 0 {
            crc64::crc64(&data[..end])
        } else {
            crc
        };
        if actual != crc {
            // Redis's wording: operators (and Redis's suite) grep for "CRC error".
            return Err(RestoreError::Bad(
                format!(
                    "Wrong RDB checksum expected: ({crc:x}) but got ({actual:x}). RDB CRC error"
                ),
                end,
            ));
        }
    }
    out.end = r.pos;
    Ok(out)
}
