//! WAIT and WAITAOF: block until the connection's earlier writes reached `numreplicas` replicas
//! (and, for WAITAOF, the local AOF's disk). tern has no replication yet, so no replica ever
//! acknowledges: asked for replicas, both answer after their timeout (0 = never, until CLIENT
//! UNBLOCK), as Redis does with no replica connected; at once where they may not block (MULTI,
//! scripts). WAITAOF's local count is real: the AOF writer's fsynced LSN against the LSN of the
//! client's last logged write.

use crate::args::{parse_i64, Args};
use crate::blocking::{BlockSpec, TimeoutReply};
use crate::ctx::Ctx;
use crate::table::CommandSpec;
use tern_resp::Reply;

pub static COMMANDS: &[CommandSpec] = crate::table::commands! { group "generic";
    ("wait", 3, [], [CONNECTION], [], wait, "3.0.0",
        "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.",
        tips: &["request_policy:all_shards", "response_policy:agg_min"]),
    ("waitaof", 4, [NOSCRIPT], [CONNECTION], [], waitaof, "7.2.0",
        "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.",
        tips: &["request_policy:all_shards", "response_policy:agg_min"]),
};

/// Replicas that acknowledged the connection's writes: none can, there are no replicas.
const ACKED_REPLICAS: i64 = 0;

fn wait(ctx: &mut Ctx, args: &Args) {
    let Some(numreplicas) = parse_i64(&args[1]) else {
        return ctx.error(crate::args::ERR_NOT_INT);
    };
    let deadline_ms = match crate::blocking::parse_timeout_ms(&args[2], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    if ACKED_REPLICAS >= numreplicas || ctx.conn.deny_blocking {
        return ctx.out.int(ACKED_REPLICAS);
    }
    ctx.block(BlockSpec {
        keys: Vec::new(),
        deadline_ms,
        timeout_reply: TimeoutReply::Int(ACKED_REPLICAS),
        rewritten_args: None,
        unblock_on_nokey: false,
    });
}

const ERR_WAITAOF_NO_AOF: &str =
    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";

/// WAITAOF's reply: `[1 if the AOF is fsynced up to woff, replicas that acknowledged]`.
pub fn waitaof_reply(out: &mut Reply, woff: u64) {
    out.array(2);
    out.int(crate::aof::fsynced_to(woff) as i64);
    out.int(ACKED_REPLICAS);
}

/// The error a WAITAOF waiting for its local fsync gets when AOF is turned off meanwhile.
pub fn waitaof_aof_off() -> String {
    ERR_WAITAOF_NO_AOF.to_string()
}

fn waitaof(ctx: &mut Ctx, args: &Args) {
    let numlocal = match parse_i64(&args[1]) {
        None => return ctx.error(crate::args::ERR_NOT_INT),
        Some(n) if !(0..=1).contains(&n) => {
            return ctx.error("ERR value is out of range, value must between 0 and 1")
        }
        Some(n) => n,
    };
    let numreplicas = match parse_i64(&args[2]) {
        None => return ctx.error(crate::args::ERR_NOT_INT),
        Some(n) if n < 0 => return ctx.error("ERR value is out of range, must be positive"),
        Some(n) => n,
    };
    let deadline_ms = match crate::blocking::parse_timeout_ms(&args[3], ctx.now_ms) {
        Ok(d) => d,
        Err(e) => return ctx.error(e),
    };
    if numlocal == 1
        && !crate::aof::AOF
            .enabled
            .load(std::sync::atomic::Ordering::Relaxed)
    {
        return ctx.error(ERR_WAITAOF_NO_AOF);
    }
    let woff = ctx.conn.woff;
    let acklocal = crate::aof::fsynced_to(woff) as i64;
    if (ACKED_REPLICAS >= numreplicas && acklocal >= numlocal) || ctx.conn.deny_blocking {
        return waitaof_reply(ctx.out, woff);
    }
    ctx.block(BlockSpec {
        keys: Vec::new(),
        deadline_ms,
        timeout_reply: TimeoutReply::WaitAof {
            woff,
            ends_on_fsync: ACKED_REPLICAS >= numreplicas,
        },
        rewritten_args: None,
        unblock_on_nokey: false,
    });
}
