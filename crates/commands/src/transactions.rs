//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH (the queue, WATCH and the atomic unit
//! are the runtime's: `tern_runtime::txn`).

use std::sync::Arc;
use tern_runtime::args::Args;
use tern_runtime::ctx::Ctx;
use tern_runtime::server::Server;
use tern_runtime::table::{flags as f, CommandSpec};
use tern_runtime::txn::{end_multi, plan, recycle, unwatch_all, watch_failed};

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "transactions";
    ("multi", 1, [NOSCRIPT LOADING STALE FAST ALLOW_BUSY], [TRANSACTION], [], multi, "1.2.0",
        "Starts a transaction."),
    ("exec", 1, [NOSCRIPT LOADING STALE SKIP_SLOWLOG], [TRANSACTION], [], exec, "1.2.0",
        "Executes all commands in a transaction.",
        complexity: "Depends on commands in the transaction"),
    ("discard", 1, [NOSCRIPT LOADING STALE FAST ALLOW_BUSY], [TRANSACTION], [], discard, "2.0.0",
        "Discards a transaction.", complexity: "O(N), when N is the number of queued commands"),
    ("watch", -2, [NOSCRIPT LOADING STALE FAST ALLOW_BUSY], [TRANSACTION], [range(1, -1, 1, RO)],
        watch, "2.2.0", "Monitors changes to keys to determine the execution of a transaction.",
        complexity: "O(1) for every key."),
    ("unwatch", 1, [NOSCRIPT LOADING STALE FAST ALLOW_BUSY], [TRANSACTION], [], unwatch, "2.2.0",
        "Forgets about watched keys of a transaction."),
};

fn multi(ctx: &mut Ctx, _args: &Args) {
    if ctx.conn.multi.is_some() {
        return ctx.error("ERR MULTI calls can not be nested");
    }
    tern_runtime::txn::begin(ctx.conn);
    ctx.out.ok();
}

fn discard(ctx: &mut Ctx, _args: &Args) {
    let Some(state) = end_multi(ctx.conn) else {
        return ctx.error("ERR DISCARD without MULTI");
    };
    recycle(ctx.conn, state);
    unwatch_all(ctx.srv, ctx.conn);
    ctx.out.ok();
}

fn watch(ctx: &mut Ctx, args: &Args) {
    if ctx.conn.multi.is_some() {
        return ctx.error("ERR WATCH inside MULTI is not allowed");
    }
    for key in args.iter().skip(1) {
        tern_runtime::txn::watch_key(ctx.srv, ctx.conn, key, ctx.now_ms);
    }
    ctx.out.ok();
}

fn unwatch(ctx: &mut Ctx, _args: &Args) {
    unwatch_all(ctx.srv, ctx.conn);
    ctx.out.ok();
}

fn exec(ctx: &mut Ctx, _args: &Args) {
    let Some(state) = end_multi(ctx.conn) else {
        return ctx.error("ERR EXEC without MULTI");
    };
    let srv: &Arc<Server> = ctx.srv;
    if state.is_aborted() {
        unwatch_all(srv, ctx.conn);
        recycle(ctx.conn, state);
        return ctx.error("EXECABORT Transaction discarded because of previous errors.");
    }
    // The server's state may have changed since queueing (Redis checks EXEC as the sum of
    // its commands): a replica now, its link down, too few replicas for writes.
    if !state.is_empty() && !tern_runtime::master_link::obeys(&ctx.conn.handle) {
        let write = state.any_flags() & f::WRITE != 0;
        let stale_ok = state.all_flags() & f::STALE != 0;
        let denied = tern_runtime::master_link::deny_reason(srv, write, stale_ok)
            .or_else(|| {
                write
                    .then(|| tern_runtime::replication::deny_write(srv))
                    .flatten()
            })
            .or_else(|| {
                tern_runtime::persistence::deny_loading(srv, state.all_flags(), state.any_flags())
            });
        if let Some(e) = denied {
            unwatch_all(srv, ctx.conn);
            recycle(ctx.conn, state);
            return ctx.error(&format!("EXECABORT Transaction discarded because of: {e}"));
        }
    }
    let plan = plan(ctx.conn, &state);
    tern_runtime::txn::run_locked(srv, plan, || {
        if watch_failed(srv, ctx.conn, ctx.now_ms) {
            ctx.out.null_array();
            return;
        }
        // Blocking commands time out at once and nothing moves to another thread, as in Redis.
        let deny = std::mem::replace(&mut ctx.conn.deny_blocking, true);
        ctx.out.array(state.len());
        for (args, entry) in state.commands() {
            tern_runtime::dispatch::execute_queued(srv, ctx.conn, ctx.out, &args, entry);
        }
        ctx.conn.deny_blocking = deny;
        // Errors inside the transaction were counted for their own commands, not for EXEC.
        ctx.out.errors = 0;
    });
    unwatch_all(srv, ctx.conn);
    recycle(ctx.conn, state);
}
