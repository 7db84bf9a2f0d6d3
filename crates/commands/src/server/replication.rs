//! Replication commands: the master side (SYNC, PSYNC, REPLCONF) and the replica side
//! (REPLICAOF/SLAVEOF, ROLE). The machinery is the runtime's: `tern_runtime::replication`
//! (attached replicas) and `tern_runtime::master_link` (the link to our master).

use tern_runtime::args::{eq_ic, parse_i64, Args};
use tern_runtime::ctx::Ctx;
use tern_runtime::master_link;
use tern_runtime::replication::{self, SyncKind};
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("sync", 1, [ADMIN NOSCRIPT NO_ASYNC_LOADING NO_MULTI], [], [], sync, "1.0.0",
        "An internal command used in replication.", complexity: ""),
    ("psync", -3, [ADMIN NOSCRIPT NO_ASYNC_LOADING NO_MULTI], [], [], psync, "2.8.0",
        "An internal command used in replication.", complexity: ""),
    ("replconf", -1, [ADMIN NOSCRIPT LOADING STALE ALLOW_BUSY], [], [], replconf, "3.0.0",
        "An internal command for configuring the replication stream."),
    ("replicaof", 3, [ADMIN NOSCRIPT STALE NO_ASYNC_LOADING], [], [], replicaof, "5.0.0",
        "Configures a server as replica of another, or promotes it to a master."),
    ("slaveof", 3, [ADMIN NOSCRIPT STALE NO_ASYNC_LOADING], [], [], replicaof, "1.0.0",
        "Sets a Redis server as a replica of another, or promotes it to being a master."),
    ("role", 1, [NOSCRIPT LOADING STALE FAST], [ADMIN DANGEROUS], [], role, "2.8.12",
        "Returns the replication role."),
    ("failover", -1, [ADMIN NOSCRIPT STALE], [], [], failover, "6.2.0",
        "Starts a coordinated failover from a server to one of its replicas."),
};

fn sync(ctx: &mut Ctx, _args: &Args) {
    replication::start_sync(ctx, SyncKind::Sync);
}

/// PSYNC <replid> <offset>: a partial resynchronization from the backlog when possible,
/// else a full one (decided when the connection turns into a replica).
fn psync(ctx: &mut Ctx, args: &Args) {
    let Some(offset) = parse_i64(&args[2]) else {
        tern_runtime::log::warning(&format!(
            "Replica {} asks for synchronization but with a wrong offset",
            ctx.conn.handle.addr
        ));
        return ctx.error(tern_runtime::args::ERR_NOT_INT);
    };
    let replid = String::from_utf8_lossy(&args[1]).into_owned();
    // PSYNC <our replid> <offset> FAILOVER: our master hands over to us (its FAILOVER).
    if args.len() > 3 && eq_ic(&args[3], "failover") {
        tern_runtime::log::notice(&format!("Failover request received for replid {replid}."));
        if !ctx.srv.master_link.is_replica() {
            return ctx.error("ERR PSYNC FAILOVER can't be sent to a master.");
        }
        if !replid.eq_ignore_ascii_case(&replication::replid(ctx.srv)) {
            return ctx.error("ERR PSYNC FAILOVER replid must match my replid.");
        }
        // The old master dropped our link before asking: what it had sent on it is applied
        // first (Redis reads it before the new connection's PSYNC), so our history covers
        // everything the old master holds.
        master_link::wait_link_down(ctx.srv, std::time::Duration::from_secs(1));
        master_link::become_master(ctx.srv);
        tern_runtime::log::notice(&format!(
            "MASTER MODE enabled (failover request from 'id={} addr={}')",
            ctx.conn.handle.id, ctx.conn.handle.addr
        ));
    }
    replication::start_sync(ctx, SyncKind::Psync { replid, offset });
}

/// REPLCONF option value pairs. A replica's own announcements are recorded for INFO;
/// ACK offsets update its entry.
fn replconf(ctx: &mut Ctx, args: &Args) {
    if args.len().is_multiple_of(2) {
        return ctx.error("ERR syntax error");
    }
    let id = ctx.conn.handle.id;
    let mut i = 1;
    while i < args.len() {
        let (opt, val) = (&args[i], &args[i + 1]);
        if eq_ic(opt, "listening-port") {
            let Some(port) = parse_i64(val).filter(|p| (0..=65535).contains(p)) else {
                return ctx.error("ERR value is not an integer or out of range");
            };
            replication::announce_listening_port(ctx.srv, id, port as u16);
        } else if eq_ic(opt, "ip-address") {
            replication::announce_ip(ctx.srv, id, String::from_utf8_lossy(val).into_owned());
        } else if eq_ic(opt, "ack") || eq_ic(opt, "fack") {
            // Sent by replicas on the stream itself (read there): never answered.
            if let Some(off) = parse_i64(val) {
                let fack = (eq_ic(opt, "ack") && args.len() > i + 3 && eq_ic(&args[i + 2], "fack"))
                    .then(|| parse_i64(&args[i + 3]))
                    .flatten();
                replication::record_ack(ctx.srv, id, off, fack);
            }
            return;
        } else if eq_ic(opt, "capa") {
            if eq_ic(val, "psync2") {
                replication::announce_psync2(ctx.srv, id);
            } else if eq_ic(val, "eof") {
                ctx.conn
                    .handle
                    .set_flag(tern_runtime::clients::cflags::CAPA_EOF, true);
            }
        } else if eq_ic(opt, "getack") || eq_ic(opt, "rdb-only") || eq_ic(opt, "rdb-filter-only") {
            // Accepted: the sync is always disk-based (unfiltered); GETACK is for replicas.
        } else {
            return ctx.error(&format!(
                "ERR Unrecognized REPLCONF option: {}",
                String::from_utf8_lossy(opt)
            ));
        }
        i += 2;
    }
    ctx.out.ok();
}

fn replicaof(ctx: &mut Ctx, args: &Args) {
    // A cluster node's master is the cluster's business (CLUSTER REPLICATE, failovers).
    if ctx.srv.cluster.get().is_some() {
        return ctx.error("ERR REPLICAOF not allowed in cluster mode.");
    }
    if tern_runtime::failover::running(ctx.srv) {
        return ctx.error("ERR REPLICAOF not allowed while failing over.");
    }
    if eq_ic(&args[1], "no") && eq_ic(&args[2], "one") {
        if master_link::become_master(ctx.srv) {
            tern_runtime::log::notice(&format!(
                "MASTER MODE enabled (user request from 'id={} addr={}')",
                ctx.conn.handle.id, ctx.conn.handle.addr
            ));
        }
        return ctx.out.ok();
    }
    if ctx
        .conn
        .handle
        .has_flag(tern_runtime::clients::cflags::REPLICA)
    {
        return ctx.error("ERR Command is not valid when client is a replica.");
    }
    let Some(port) = parse_i64(&args[2]).filter(|p| (0..=65535).contains(p)) else {
        return ctx.error("ERR Invalid master port");
    };
    let host = args.str(1);
    if master_link::follows(ctx.srv, &host, port as u16) {
        tern_runtime::log::notice(
            "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.",
        );
        return ctx.out.simple(b"OK Already connected to specified master");
    }
    master_link::start(ctx.srv.clone(), host.clone(), port as u16);
    tern_runtime::log::notice(&format!(
        "REPLICAOF {host}:{port} enabled (user request from 'id={} addr={}')",
        ctx.conn.handle.id, ctx.conn.handle.addr
    ));
    ctx.out.ok();
}

fn role(ctx: &mut Ctx, _args: &Args) {
    if let Some((host, port, state, offset)) = master_link::link_role(ctx.srv) {
        ctx.out.array(5);
        ctx.out.bulk(b"slave");
        ctx.out.bulk(host.as_bytes());
        ctx.out.int(port as i64);
        ctx.out.bulk(state.as_bytes());
        ctx.out.int(offset);
        return;
    }
    let replicas = replication::replica_rows(ctx.srv);
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.int(ctx.srv.propagation.log.repl_offset() as i64);
    ctx.out.array(replicas.len());
    for r in replicas {
        ctx.out.array(3);
        ctx.out.bulk(r.ip.as_bytes());
        ctx.out.bulk(r.port.to_string().as_bytes());
        ctx.out.bulk(r.offset.to_string().as_bytes());
    }
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms].
fn failover(ctx: &mut Ctx, args: &Args) {
    use tern_runtime::failover;
    if ctx.srv.cluster.get().is_some() {
        return ctx.error(
            "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.",
        );
    }
    if args.len() == 2 && eq_ic(&args[1], "abort") {
        return match failover::abort_command(ctx.srv) {
            Ok(()) => ctx.out.ok(),
            Err(e) => ctx.error(e),
        };
    }
    let mut req = failover::Request {
        target: None,
        timeout_ms: 0,
        force: false,
    };
    let mut j = 1;
    while j < args.len() {
        if eq_ic(&args[j], "timeout") && j + 1 < args.len() && req.timeout_ms == 0 {
            let Some(ms) = parse_i64(&args[j + 1]) else {
                return ctx.error(tern_runtime::args::ERR_NOT_INT);
            };
            if ms <= 0 {
                return ctx.error("ERR FAILOVER timeout must be greater than 0");
            }
            req.timeout_ms = ms as u64;
            j += 2;
        } else if eq_ic(&args[j], "to") && j + 2 < args.len() && req.target.is_none() {
            let Some(port) = parse_i64(&args[j + 2]) else {
                return ctx.error(tern_runtime::args::ERR_NOT_INT);
            };
            req.target = Some((args.str(j + 1), port.clamp(0, u16::MAX as i64) as u16));
            j += 3;
        } else if eq_ic(&args[j], "force") && !req.force {
            req.force = true;
            j += 1;
        } else {
            return ctx.error("ERR syntax error");
        }
    }
    match failover::begin(ctx.srv, req) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(e),
    }
}
