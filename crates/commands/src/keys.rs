//! Generic keyspace commands.

use crate::args::Args;
use crate::ctx::Ctx;
use crate::table::{acl, flags as f, kflags as k, CommandSpec, KeySpec};
use tern_engine::key_hash;

const KS: u64 = acl::KEYSPACE;

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "del",
        arity: -2,
        flags: f::WRITE,
        acl: KS | acl::WRITE | acl::SLOW,
        keys: &[KeySpec::range(1, -1, 1, k::RM | k::DELETE)],
        handler: Some(del),
        group: "generic",
        summary: "Deletes one or more keys.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "exists",
        arity: -2,
        flags: f::READONLY | f::FAST,
        acl: KS | acl::READ | acl::FAST,
        keys: &[KeySpec::range(1, -1, 1, k::RO)],
        handler: Some(exists),
        group: "generic",
        since: "1.0.0",
        summary: "Determines whether one or more keys exist.",
        ..CommandSpec::DEFAULT
    },
];

/// Lock the shards of `args[from..]` in the current db, atomically with respect to others.
pub fn lock_args<'a>(
    ctx: &Ctx<'a>,
    args: &Args,
    from: usize,
) -> (Vec<u64>, tern_engine::MultiGuard<'a>) {
    let hashes: Vec<u64> = args.iter().skip(from).map(key_hash).collect();
    let db = ctx.conn.db;
    let srv: &'a crate::Server = ctx.srv;
    let g = srv.store.lock_many(hashes.iter().map(|&h| (db, h)));
    (hashes, g)
}

fn del(ctx: &mut Ctx, args: &Args) {
    let (hashes, mut g) = lock_args(ctx, args, 1);
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    let mut n = 0;
    for (i, &h) in hashes.iter().enumerate() {
        let key = &args[i + 1];
        let shard = g.shard(db, h);
        if shard.get(h, key, now).is_some() {
            shard.remove(h, key);
            n += 1;
        }
    }
    drop(g);
    ctx.dirty(n as u64);
    ctx.out.int(n);
}

fn exists(ctx: &mut Ctx, args: &Args) {
    let (hashes, mut g) = lock_args(ctx, args, 1);
    let db = ctx.conn.db;
    let now = ctx.now_ms;
    let n = hashes
        .iter()
        .enumerate()
        .filter(|(i, &h)| g.shard(db, h).contains(h, &args[i + 1], now))
        .count();
    drop(g);
    ctx.out.int(n as i64);
}
