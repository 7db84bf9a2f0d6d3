//! A replica's link carries the stream to it and acknowledgements back, never replies: a
//! command a replica sends that would be answered (anything but REPLCONF) gets it
//! disconnected, with Redis's log lines (the suite greps for them), instead of a reply
//! slipping into its stream.

use crate::args::{eq_ic, Args};
use crate::server::Server;
use crate::table::flags;

/// `args` came from the replica `handle` on its link. True (and the replica is being
/// disconnected) when it is a command Redis would have answered.
pub fn refuse(srv: &Server, handle: &crate::clients::ClientHandle, args: &Args) -> bool {
    if args.is_empty() || eq_ic(&args[0], "replconf") {
        return false;
    }
    let entry = srv
        .commands
        .get(args.get(0))
        .map(|e| match (e.subs.is_empty(), args.len() >= 2) {
            (false, true) => e.sub(args.get(1)).unwrap_or(e),
            _ => e,
        });
    let name = entry.map_or("<unknown>".to_string(), |e| e.fullname.to_string());
    // A replica may not touch the keyspace: Redis answers with an error, which a master
    // logs as critical before the reply itself gets the replica dropped.
    let keyspace = flags::WRITE | flags::READONLY | flags::MAY_REPLICATE;
    if entry.is_some_and(|e| e.spec.flags & keyspace != 0) {
        crate::log::warning(&format!(
            "== CRITICAL == This master is sending an error to its replica: 'Replica can't interact with the keyspace' after processing the command '{name}'"
        ));
    }
    crate::log::warning(&format!(
        "Replica generated a reply to command '{name}', disconnecting it: {}",
        handle.info_line(&name, tern_engine::clock::now_ms())
    ));
    handle.kill();
    true
}
