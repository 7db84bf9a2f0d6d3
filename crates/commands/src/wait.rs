//! WAIT: block until the connection's earlier writes reached `numreplicas` replicas. tern has
//! no replication yet, so no replica ever acknowledges: WAIT answers 0 at once when 0 replicas
//! are asked for (or it may not block: MULTI, scripts), and otherwise after its timeout
//! (0 = never, until CLIENT UNBLOCK), as Redis does with no replica connected.

use crate::args::{parse_i64, Args};
use crate::blocking::{BlockSpec, TimeoutReply};
use crate::ctx::Ctx;
use crate::table::{acl, CommandSpec};

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "wait",
    arity: 3,
    flags: 0,
    acl: acl::SLOW | acl::CONNECTION,
    handler: Some(wait),
    group: "generic",
    since: "3.0.0",
    complexity: "O(1)",
    summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.",
    tips: &["request_policy:all_shards", "response_policy:agg_min"],
    ..CommandSpec::DEFAULT
}];

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
