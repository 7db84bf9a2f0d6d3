//! The atomic-unit entry point the command layer uses (EXEC, scripts, functions): hold the
//! planned shards for the whole unit. The mechanism lives in `tern_engine::Store::run_locked`.

use crate::args::Args;
use crate::ctx::Conn;
use crate::server::Server;
use crate::table::{flags, CommandSpec};
use tern_engine::hash::key_hash;
pub use tern_engine::LockPlan;

/// Run `f` as one atomic unit holding `plan`'s shards (see `Store::run_locked`).
/// The outermost unit appends what its commands propagated before its locks are released.
pub fn run_locked<R>(srv: &Server, plan: LockPlan, f: impl FnOnce() -> R) -> R {
    if tern_engine::Store::in_atomic_unit() {
        return f();
    }
    srv.store.run_locked(&plan, || {
        let r = f();
        crate::propagate::flush();
        r
    })
}

/// Commands whose keys the key specs do not give (other databases, patterns, the whole
/// keyspace): a unit running one of them locks every shard.
pub fn needs_every_shard(spec: &CommandSpec, args: &Args) -> bool {
    match spec.name {
        "flushall" | "flushdb" | "swapdb" | "keys" | "scan" | "randomkey" | "dbsize" | "move"
        | "copy" | "sort" | "sort_ro" | "debug" | "info" | "memory" | "migrate" => true,
        // Scripts may touch undeclared keys; their declared ones are known.
        _ => spec.keys.is_empty() && spec.flags & flags::WRITE != 0 && !args.is_empty(),
    }
}

/// Add the shards command `args` needs when run in database `db` to `keys`; false when it
/// needs every shard.
pub fn add_command_keys(
    keys: &mut Vec<(usize, u64)>,
    db: usize,
    spec: &CommandSpec,
    args: &Args,
) -> bool {
    if needs_every_shard(spec, args) {
        return false;
    }
    spec.for_each_key(args, |pos, _| keys.push((db, key_hash(args.get(pos)))));
    true
}

/// Would this command, about to run for `conn`, wait for a shard a long-running unit (a
/// script on a script thread) holds? Only asked while such a unit exists.
pub fn meets_long_unit(srv: &Server, conn: &Conn, spec: &CommandSpec, args: &Args) -> bool {
    let plan = if spec.name == "exec" {
        match &conn.multi {
            Some(m) => crate::multi::plan(conn, m),
            None => return false,
        }
    } else {
        let mut keys = Vec::new();
        if add_command_keys(&mut keys, conn.db, spec, args) {
            LockPlan::Keys(keys)
        } else {
            LockPlan::AllShards
        }
    };
    srv.store.plan_meets_long(&plan)
}
