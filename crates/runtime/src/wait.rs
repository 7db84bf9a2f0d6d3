//! What WAIT and WAITAOF wait for (their handlers are the generic family's). Replicas do not
//! send acknowledgements WAIT counts yet, so asked for replicas both commands answer after their
//! timeout (0 = never, until CLIENT UNBLOCK), as Redis does with no replica connected; at once
//! where they may not block (MULTI, scripts). WAITAOF's local count is real: the AOF writer's
//! fsynced LSN against the LSN of the client's last logged write.

use crate::server::Server;
use tern_resp::Reply;

/// Replicas that acknowledged the connection's writes: none can, there are no replicas.
pub const ACKED_REPLICAS: i64 = 0;

pub const ERR_WAITAOF_NO_AOF: &str =
    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";

/// WAITAOF's reply: `[1 if the AOF is fsynced up to woff, replicas that acknowledged]`.
pub fn waitaof_reply(srv: &Server, out: &mut Reply, woff: u64) {
    out.array(2);
    out.int(crate::aof::fsynced_to(srv, woff) as i64);
    out.int(ACKED_REPLICAS);
}

/// The error a WAITAOF waiting for its local fsync gets when AOF is turned off meanwhile.
pub fn waitaof_aof_off() -> String {
    ERR_WAITAOF_NO_AOF.to_string()
}
