//! MIGRATE: move (or copy) keys to another Redis-protocol server with RESTORE and the DUMP
//! payload, over a connection cached per target (`tern_runtime::migrate_link`).
//!
//! As in Redis, the command blocks its caller for the round trip. The keys' shards stay locked
//! from the moment the values are serialized until the target acknowledged them and the local
//! copies are deleted, so MIGRATE is atomic for other clients as it is in Redis.

use std::io::Write;
use std::time::Duration;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX};
use tern_runtime::ctx::Ctx;
use tern_runtime::migrate_link::{get_socket, put_back, read_line, ConnectError};
use tern_runtime::notify;
use tern_runtime::table::{kflags as k, CommandSpec};

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "generic";
    ("migrate", -6, [WRITE], [KEYSPACE DANGEROUS],
        [key(3, RW ACCESS DELETE), keyword("KEYS", -2, -1, 1, 0, RW ACCESS DELETE INCOMPLETE)],
        migrate, "2.6.0", "Atomically transfers a key from one Redis instance to another.",
        complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
        tips: &["nondeterministic_output"], getkeys: Some(migrate_keys)),
};

/// Redis's migrateGetKeys: the key at 3, or everything after KEYS (skipping the options'
/// arguments on the way); nothing when KEYS comes with a non-empty key argument.
fn migrate_keys(args: &Args) -> Vec<(usize, u32)> {
    let flags = k::RW | k::ACCESS | k::DELETE;
    let mut i = 6;
    while i < args.len() {
        let a = &args[i];
        if eq_ic(a, "keys") {
            if !args[3].is_empty() {
                return Vec::new();
            }
            return (i + 1..args.len()).map(|j| (j, flags)).collect();
        }
        if eq_ic(a, "auth") {
            i += 1;
        } else if eq_ic(a, "auth2") {
            i += 2;
        }
        i += 1;
    }
    vec![(3, flags)]
}

fn bulk(buf: &mut Vec<u8>, s: &[u8]) {
    buf.push(b'$');
    buf.extend_from_slice(itoa::Buffer::new().format(s.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(s);
    buf.extend_from_slice(b"\r\n");
}

fn count(buf: &mut Vec<u8>, n: usize) {
    buf.push(b'*');
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    buf.extend_from_slice(b"\r\n");
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

fn migrate(ctx: &mut Ctx, args: &Args) {
    let (mut copy, mut replace) = (false, false);
    let mut username: Option<&[u8]> = None;
    let mut password: Option<&[u8]> = None;
    let mut first_key = 3;
    let mut num_keys = 1;
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let a = &args[j];
        if eq_ic(a, "copy") {
            copy = true;
        } else if eq_ic(a, "replace") {
            replace = true;
        } else if eq_ic(a, "auth") {
            if more == 0 {
                return ctx.error(ERR_SYNTAX);
            }
            j += 1;
            password = Some(&args[j]);
        } else if eq_ic(a, "auth2") {
            if more < 2 {
                return ctx.error(ERR_SYNTAX);
            }
            username = Some(&args[j + 1]);
            password = Some(&args[j + 2]);
            j += 2;
        } else if eq_ic(a, "keys") {
            if !args[3].is_empty() {
                return ctx.error(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                );
            }
            first_key = j + 1;
            num_keys = args.len() - j - 1;
            break;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let Some(timeout) = parse_i64(&args[5]) else {
        return ctx.error(ERR_NOT_INT);
    };
    let Some(dbid) = parse_i64(&args[4]) else {
        return ctx.error(ERR_NOT_INT);
    };
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });

    // Lock the keys' shards for the whole command, then find the keys that exist.
    let keys: Vec<&[u8]> = (first_key..first_key + num_keys)
        .map(|i| &args[i][..])
        .collect();
    let (hashes, mut g) = ctx.lock_keys(keys.iter().copied());
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    // (key index, ttl, payload) of each key to send.
    let mut found: Vec<usize> = Vec::new();
    for (i, (&h, key)) in hashes.iter().zip(&keys).enumerate() {
        // Only read here: the keys change (and are touched for WATCH) only when MIGRATE
        // deletes them after a successful transfer without COPY.
        let hit = match ctx.read_key(g.shard(db, h), h, key) {
            Some(e) => {
                ctx.touch(e);
                true
            }
            None => false,
        };
        // A read lookup in Redis (hit or miss, keymiss, access clock).
        ctx.hit(hit, key);
        if hit {
            found.push(i);
        }
    }
    if found.is_empty() {
        drop(g);
        return ctx.out.simple(b"NOKEY");
    }
    let mut items: Vec<(usize, i64, Vec<u8>)> = Vec::with_capacity(found.len());
    for &i in &found {
        let (h, key) = (hashes[i], keys[i]);
        let Some(e) = ctx.read_key(g.shard(db, h), h, key) else {
            continue;
        };
        let at = e.expire_at();
        let ttl = if at == 0 {
            0
        } else {
            (at as i64 - now as i64).max(1)
        };
        items.push((i, ttl, tern_persist::rdb::dump_payload(&e.value)));
    }

    let (host, port) = (&args[1][..], &args[2][..]);
    let srv: &tern_runtime::Server = ctx.srv;
    let mut may_retry = true;
    loop {
        let (name, mut cs) = match get_socket(srv, host, port, timeout) {
            Ok(c) => c,
            Err(ConnectError::Connect) => {
                drop(g);
                return ctx.error("IOERR error or timeout connecting to the client");
            }
            Err(ConnectError::Refused) => {
                if may_retry {
                    may_retry = false;
                    continue;
                }
                drop(g);
                return ctx.error("IOERR error or timeout writing to target instance");
            }
        };
        let mut cmd = Vec::new();
        if let Some(pw) = password {
            count(&mut cmd, if username.is_some() { 3 } else { 2 });
            bulk(&mut cmd, b"AUTH");
            if let Some(u) = username {
                bulk(&mut cmd, u);
            }
            bulk(&mut cmd, pw);
        }
        let select = cs.last_db != dbid;
        if select {
            count(&mut cmd, 2);
            bulk(&mut cmd, b"SELECT");
            bulk(&mut cmd, itoa::Buffer::new().format(dbid).as_bytes());
        }
        // In cluster mode the target is importing the slot: RESTORE-ASKING gets past its
        // slot check.
        let restore: &[u8] = if ctx.srv.cluster.get().is_some() {
            b"RESTORE-ASKING"
        } else {
            b"RESTORE"
        };
        for (i, ttl, payload) in &items {
            count(&mut cmd, if replace { 5 } else { 4 });
            bulk(&mut cmd, restore);
            bulk(&mut cmd, keys[*i]);
            bulk(&mut cmd, itoa::Buffer::new().format(*ttl).as_bytes());
            bulk(&mut cmd, payload);
            if replace {
                bulk(&mut cmd, b"REPLACE");
            }
        }

        let s = cs.conn.get_mut();
        let _ = s.tcp().set_write_timeout(Some(timeout));
        let _ = s.tcp().set_read_timeout(Some(timeout));
        if let Err(e) = s.write_all(&cmd).and_then(|_| s.flush()) {
            drop(cs); // closes the connection: the next attempt connects afresh
            if !is_timeout(&e) && may_retry {
                may_retry = false;
                continue;
            }
            drop(g);
            return ctx.error("IOERR error or timeout writing to target instance");
        }
        let head = (|| -> std::io::Result<(Vec<u8>, Vec<u8>)> {
            let auth = if password.is_some() {
                read_line(&mut cs)?
            } else {
                Vec::new()
            };
            let sel = if select {
                read_line(&mut cs)?
            } else {
                Vec::new()
            };
            Ok((auth, sel))
        })();
        let (auth_reply, select_reply) = match head {
            Ok(r) => r,
            Err(e) => {
                drop(cs);
                if !is_timeout(&e) && may_retry {
                    may_retry = false;
                    continue;
                }
                drop(g);
                return ctx.error("IOERR error or timeout reading to target instance");
            }
        };

        let mut error_from_target = false;
        let mut socket_error: Option<std::io::Error> = None;
        let mut read = 0;
        let mut deleted: Vec<usize> = Vec::new();
        for (i, _, _) in &items {
            let line = match read_line(&mut cs) {
                Ok(l) => l,
                Err(e) => {
                    socket_error = Some(e);
                    break;
                }
            };
            read += 1;
            let err = if auth_reply.first() == Some(&b'-') {
                Some(&auth_reply)
            } else if select_reply.first() == Some(&b'-') {
                Some(&select_reply)
            } else if line.first() == Some(&b'-') {
                Some(&line)
            } else {
                None
            };
            if let Some(err) = err {
                if !error_from_target {
                    cs.last_db = -1;
                    error_from_target = true;
                    ctx.error(&format!(
                        "ERR Target instance replied with error: {}",
                        String::from_utf8_lossy(&err[1..])
                    ));
                }
            } else if !copy {
                let (h, key) = (hashes[*i], keys[*i]);
                if g.shard(db, h).remove(h, key).is_some() {
                    deleted.push(*i);
                }
            }
        }
        if !error_from_target {
            if let Some(e) = &socket_error {
                if read == 0 && may_retry && !is_timeout(e) {
                    drop(cs);
                    may_retry = false;
                    continue;
                }
            }
        }
        drop(g);
        for &i in &deleted {
            ctx.notify(notify::GENERIC, "del", keys[i]);
        }
        ctx.dirty(deleted.len() as u64);
        // The log gets the keys' removal, never the MIGRATE itself.
        if deleted.is_empty() {
            ctx.prevent_propagation();
        } else {
            let mut del: Vec<&[u8]> = vec![b"DEL"];
            del.extend(deleted.iter().map(|&i| keys[i]));
            ctx.propagate_as(&del);
        }
        if socket_error.is_some() {
            drop(cs);
            if !error_from_target {
                ctx.error("IOERR error or timeout reading to target instance");
            }
            return;
        }
        if !error_from_target {
            cs.last_db = dbid;
            ctx.out.ok();
        }
        put_back(srv, name, cs);
        return;
    }
}
