//! What WAIT and WAITAOF wait for (their handlers are the generic family's): replicas that
//! acknowledged the connection's last write (REPLCONF ACK offsets, and FACK for what they
//! fsynced to their AOF), and for WAITAOF the local AOF: the writer's fsynced LSN against the
//! LSN of the client's last logged write.

use crate::server::Server;
use tern_resp::Reply;

pub const ERR_WAITAOF_NO_AOF: &str =
    "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";

/// `[1 if the AOF is fsynced up to woff, replicas whose AOF holds repl_woff]`.
pub fn waitaof_counts(srv: &Server, woff: u64, repl_woff: u64) -> (i64, i64) {
    (
        crate::aof::fsynced_to(srv, woff) as i64,
        crate::replication::count_aof_acks(srv, repl_woff),
    )
}

/// WAITAOF's reply as it stands now.
pub fn waitaof_reply(srv: &Server, out: &mut Reply, woff: u64, repl_woff: u64) {
    let (local, replicas) = waitaof_counts(srv, woff, repl_woff);
    out.array(2);
    out.int(local);
    out.int(replicas);
}

/// The error a WAITAOF waiting for its local fsync gets when AOF is turned off meanwhile.
pub fn waitaof_aof_off() -> String {
    ERR_WAITAOF_NO_AOF.to_string()
}

/// Wait (asynchronously) until the blocked WAIT / WAITAOF `reply` describes is satisfied;
/// returns its reply, or an error (WAITAOF for a local fsync while AOF was turned off). Never
/// returns for other kinds of waits.
pub async fn satisfied(
    srv: &Server,
    reply: crate::blocking::TimeoutReply,
) -> Result<Vec<u8>, String> {
    use crate::blocking::TimeoutReply;
    loop {
        let acked = srv.replicas.acked.notified();
        tokio::pin!(acked);
        acked.as_mut().enable();
        match reply {
            TimeoutReply::Wait {
                repl_woff,
                numreplicas,
            } => {
                let n = crate::replication::count_acks(srv, repl_woff);
                if n >= numreplicas {
                    return Ok(format!(":{n}\r\n").into_bytes());
                }
                acked.await;
            }
            TimeoutReply::WaitAof {
                woff,
                repl_woff,
                numlocal,
                numreplicas,
            } => {
                let (local, replicas) = waitaof_counts(srv, woff, repl_woff);
                if local >= numlocal as i64 && replicas >= numreplicas {
                    // The same bytes in RESP2 and RESP3.
                    return Ok(format!("*2\r\n:{local}\r\n:{replicas}\r\n").into_bytes());
                }
                if numlocal && local == 0 {
                    tokio::select! {
                        synced = crate::aof::wait_fsynced(srv, woff) => {
                            if !synced {
                                return Err(waitaof_aof_off());
                            }
                        }
                        _ = acked => {}
                    }
                } else {
                    acked.await;
                }
            }
            _ => std::future::pending::<()>().await,
        }
    }
}
