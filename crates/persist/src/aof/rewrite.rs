//! A base file in command form (`aof-use-rdb-preamble no`): the commands that rebuild the
//! dataset, as Redis's rewriteAppendOnlyFileRio emits them: FUNCTION LOAD per library, then
//! per database a SELECT and for each key SET / RPUSH / SADD / ZADD / HSET (at most 64 items
//! per command) or, for streams, XADD + XSETID + XGROUP CREATE + XCLAIM / XGROUP
//! CREATECONSUMER; a key with a time to live is followed by PEXPIREAT.

use crate::wlog::encode_command;
use std::io::Write;
use std::sync::Arc;
use tern_engine::snapshot::{KeyEncoder, SnapshotSink};
use tern_engine::types::stream::StreamId;
use tern_engine::value::Value;
use tern_engine::{Entry, HashValue};

/// Items per variadic command (Redis's AOF_REWRITE_ITEMS_PER_CMD).
pub const ITEMS_PER_CMD: usize = 64;

pub struct CommandWriter<W: Write + Send> {
    out: W,
    buf: Vec<u8>,
    cur_db: Option<usize>,
    now_ms: u64,
    pub keys: u64,
    pub error: Option<std::io::Error>,
}

/// The commands that rebuild one key; keys expired at the snapshot's time are left out.
pub struct KeyCommands {
    now_ms: u64,
}

impl KeyEncoder for KeyCommands {
    fn encode(&self, out: &mut Vec<u8>, e: &Entry) -> bool {
        let exp = e.expire_at();
        if exp != 0 && exp <= self.now_ms {
            return false;
        }
        key_commands(out, e.key(), &e.value, exp);
        true
    }
}

fn fmt_f64(d: f64) -> Vec<u8> {
    // Shortest round-trip form, as Redis's rioWriteBulkDouble (fpconv_dtoa).
    tern_engine::types::double::fmt_double(d).into_bytes()
}

impl<W: Write + Send> CommandWriter<W> {
    /// Start a base: one FUNCTION LOAD per library first.
    pub fn new(out: W, functions: &[Vec<u8>], now_ms: u64) -> Self {
        let mut w = CommandWriter {
            out,
            buf: Vec::with_capacity(64 * 1024),
            cur_db: None,
            now_ms,
            keys: 0,
            error: None,
        };
        for code in functions {
            w.cmd(&[b"FUNCTION", b"LOAD", code]);
        }
        w
    }

    fn cmd(&mut self, argv: &[&[u8]]) {
        encode_command(&mut self.buf, argv.iter().copied());
        if self.buf.len() >= 64 * 1024 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.error.is_none() && !self.buf.is_empty() {
            if let Err(e) = self.out.write_all(&self.buf) {
                self.error = Some(e);
            }
        }
        self.buf.clear();
    }

    /// Write what is buffered and return the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One command into `buf`.
fn cmd(buf: &mut Vec<u8>, argv: &[&[u8]]) {
    encode_command(buf, argv.iter().copied());
}

/// A variadic command `name key item...` in chunks of ITEMS_PER_CMD items (an item may be
/// several arguments, like ZADD's score and member).
fn chunked(buf: &mut Vec<u8>, name: &[u8], key: &[u8], items: &[Vec<Vec<u8>>]) {
    for chunk in items.chunks(ITEMS_PER_CMD) {
        let mut argv: Vec<&[u8]> = vec![name, key];
        for it in chunk {
            for a in it {
                argv.push(a);
            }
        }
        cmd(buf, &argv);
    }
}

/// The commands for one key.
pub fn key_commands(buf: &mut Vec<u8>, key: &[u8], value: &Value, expire_at: u64) {
    match value {
        Value::Str(s) => s.with_bytes(|b| {
            let b = b.to_vec();
            cmd(buf, &[b"SET", key, &b])
        }),
        Value::List(l) => {
            let mut items = Vec::with_capacity(l.len());
            l.for_range(0, l.len(), |e| {
                items.push(vec![e.with_bytes(|b| b.to_vec())])
            });
            chunked(buf, b"RPUSH", key, &items);
        }
        Value::Set(s) => {
            let items: Vec<Vec<Vec<u8>>> = s
                .iter()
                .map(|m| vec![m.with_bytes(|b| b.to_vec())])
                .collect();
            chunked(buf, b"SADD", key, &items);
        }
        Value::ZSet(z) => {
            let mut items = Vec::with_capacity(z.len());
            z.for_each(|m, sc| items.push(vec![fmt_f64(sc), m.to_vec()]));
            chunked(buf, b"ZADD", key, &items);
        }
        Value::Hash(h) => {
            let items = hash_items(h);
            chunked(buf, b"HSET", key, &items);
            // Field times, absolute, as Redis 7.4's rewrite gives them: one HPEXPIREAT each.
            for (f, at) in h.ttls().into_iter().flat_map(|t| t.iter()) {
                let t = at.to_string();
                cmd(buf, &[b"HPEXPIREAT", key, t.as_bytes(), b"FIELDS", b"1", f]);
            }
        }
        Value::Stream(s) => stream(buf, key, s),
        Value::Cron(j) => {
            let argv = j.command(key);
            cmd(buf, &argv.iter().map(|a| a.as_slice()).collect::<Vec<_>>());
        }
    }
    member_times(buf, key, value.member_ttls());
    if expire_at != 0 {
        let t = expire_at.to_string();
        cmd(buf, &[b"PEXPIREAT", key, t.as_bytes()]);
    }
}

/// Member times, absolute: one PEXPIREMEMBERAT each (KeyDB's command).
fn member_times(buf: &mut Vec<u8>, key: &[u8], ttls: Option<&tern_engine::FieldTtls>) {
    for (m, at) in ttls.into_iter().flat_map(|t| t.iter()) {
        let t = at.to_string();
        cmd(buf, &[b"PEXPIREMEMBERAT", key, m, t.as_bytes()]);
    }
}

fn stream(buf: &mut Vec<u8>, key: &[u8], s: &tern_engine::StreamValue) {
    let id = |i: StreamId| i.to_bytes();
    if !s.is_empty() {
        for e in s.range(StreamId::MIN, StreamId::MAX) {
            let eid = id(e.id);
            let mut argv: Vec<&[u8]> = vec![b"XADD", key, &eid];
            argv.extend(e.items());
            cmd(buf, &argv);
        }
    } else {
        // An empty stream: XADD MAXLEN 0 creates the key and leaves nothing in it.
        cmd(buf, &[b"XADD", key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]);
    }
    let last = id(s.last_id);
    let added = s.entries_added.to_string();
    let maxdel = id(s.max_deleted_entry_id);
    cmd(
        buf,
        &[
            b"XSETID",
            key,
            &last,
            b"ENTRIESADDED",
            added.as_bytes(),
            b"MAXDELETEDID",
            &maxdel,
        ],
    );
    for (gname, g) in &s.groups {
        let glast = id(g.last_id);
        let read = g.entries_read.to_string();
        cmd(
            buf,
            &[
                b"XGROUP",
                b"CREATE",
                key,
                gname,
                &glast,
                b"ENTRIESREAD",
                read.as_bytes(),
            ],
        );
        for (cname, c) in &g.consumers {
            if c.pel.is_empty() {
                cmd(buf, &[b"XGROUP", b"CREATECONSUMER", key, gname, cname]);
                continue;
            }
            for pid in &c.pel {
                let Some(nack) = g.pel.get(pid) else {
                    continue;
                };
                let eid = id(*pid);
                let t = nack.delivery_time.to_string();
                let n = nack.delivery_count.to_string();
                cmd(
                    buf,
                    &[
                        b"XCLAIM",
                        key,
                        gname,
                        cname,
                        b"0",
                        &eid,
                        b"TIME",
                        t.as_bytes(),
                        b"RETRYCOUNT",
                        n.as_bytes(),
                        b"JUSTID",
                        b"FORCE",
                    ],
                );
            }
        }
    }
}

fn hash_items(h: &HashValue) -> Vec<Vec<Vec<u8>>> {
    h.iter()
        .map(|(f, v)| vec![f.with_bytes(|b| b.to_vec()), v.with_bytes(|b| b.to_vec())])
        .collect()
}

impl<W: Write + Send> SnapshotSink for CommandWriter<W> {
    fn encoder(&self) -> Arc<dyn KeyEncoder> {
        Arc::new(KeyCommands {
            now_ms: self.now_ms,
        })
    }

    fn records(&mut self, db: usize, bytes: &[u8], keys: u64) {
        if self.error.is_some() {
            return;
        }
        if self.cur_db != Some(db) {
            let d = db.to_string();
            self.cmd(&[b"SELECT", d.as_bytes()]);
            self.cur_db = Some(db);
        }
        self.buf.extend_from_slice(bytes);
        self.keys += keys;
        if self.buf.len() >= 64 * 1024 {
            self.flush();
        }
    }
}
