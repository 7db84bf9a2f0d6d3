//! WAIT and WAITAOF: block until the connection's earlier writes reached `numreplicas` replicas
//! (and, for WAITAOF, their AOFs and the local AOF's disk). What counts as acknowledged is the
//! runtime's (`tern_runtime::wait`, `tern_runtime::replication::count_acks`).

use tern_runtime::args::{parse_i64, Args};
use tern_runtime::blocking::{BlockSpec, TimeoutReply};
use tern_runtime::ctx::Ctx;
use tern_runtime::replication::{count_acks, request_acks};
use tern_runtime::table::CommandSpec;
use tern_runtime::wait::{waitaof_counts, waitaof_reply, ERR_WAITAOF_NO_AOF};

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "generic";
    ("wait", 3, [], [CONNECTION], [], wait, "3.0.0",
        "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.",
        tips: &["request_policy:all_shards", "response_policy:agg_min"]),
    ("waitaof", 4, [NOSCRIPT], [CONNECTION], [], waitaof, "7.2.0",
        "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.",
        tips: &["request_policy:all_shards", "response_policy:agg_min"]),
};

fn wait(ctx: &mut Ctx, args: &Args) {
    if ctx.srv.master_link.is_replica() {
        return ctx.error("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.");
    }
    let Some(numreplicas) = parse_i64(&args[1]) else {
        return ctx.error(tern_runtime::args::ERR_NOT_INT);
    };
    let deadline_ms = match tern_runtime::blocking::parse_timeout_ms(&args[2], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    let repl_woff = ctx.conn.repl_woff;
    let acked = count_acks(ctx.srv, repl_woff);
    if acked >= numreplicas || ctx.conn.deny_blocking {
        return ctx.out.int(acked);
    }
    ctx.block(BlockSpec {
        keys: Vec::new(),
        deadline_ms,
        timeout_reply: TimeoutReply::Wait {
            repl_woff,
            numreplicas,
        },
        rewritten_args: None,
        unblock_on_nokey: false,
    });
    request_acks(ctx.srv);
}

fn waitaof(ctx: &mut Ctx, args: &Args) {
    let numlocal = match parse_i64(&args[1]) {
        None => return ctx.error(tern_runtime::args::ERR_NOT_INT),
        Some(n) if !(0..=1).contains(&n) => {
            return ctx.error("ERR value is out of range, value must between 0 and 1")
        }
        Some(n) => n,
    };
    let numreplicas = match parse_i64(&args[2]) {
        None => return ctx.error(tern_runtime::args::ERR_NOT_INT),
        Some(n) if n < 0 => return ctx.error("ERR value is out of range, must be positive"),
        Some(n) => n,
    };
    let deadline_ms = match tern_runtime::blocking::parse_timeout_ms(&args[3], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    if ctx.srv.master_link.is_replica() {
        return ctx.error("ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.");
    }
    if numlocal == 1
        && !ctx
            .srv
            .aof
            .enabled
            .load(std::sync::atomic::Ordering::Relaxed)
    {
        return ctx.error(ERR_WAITAOF_NO_AOF);
    }
    let (woff, repl_woff) = (ctx.conn.woff, ctx.conn.repl_woff);
    let (acklocal, ackreplicas) = waitaof_counts(ctx.srv, woff, repl_woff);
    if (ackreplicas >= numreplicas && acklocal >= numlocal) || ctx.conn.deny_blocking {
        return waitaof_reply(ctx.srv, ctx.out, woff, repl_woff);
    }
    ctx.block(BlockSpec {
        keys: Vec::new(),
        deadline_ms,
        timeout_reply: TimeoutReply::WaitAof {
            woff,
            repl_woff,
            numlocal: numlocal == 1,
            numreplicas,
        },
        rewritten_args: None,
        unblock_on_nokey: false,
    });
    request_acks(ctx.srv);
}
