//! The per-command slot check of cluster mode (Redis's `getNodeByQuery` and
//! `clusterRedirectClient`): every key of a command (of every queued command, for EXEC) must
//! hash to one slot this node serves; otherwise the client gets `-MOVED`, `-ASK`,
//! `-CROSSSLOT`, `-TRYAGAIN` or `-CLUSTERDOWN`, which cluster clients act on.

use super::routes::{Routes, UNASSIGNED};
use crate::args::Args;
use crate::clients::cflags;
use crate::ctx::Conn;
use crate::registry::CmdEntry;
use crate::server::Server;
use crate::table::flags;
use tern_cluster::key_hash_slot;

enum Refusal {
    Moved(u16, u16),
    Ask(u16, u16),
    CrossSlot,
    Unstable,
    Down,
    DownReadOnly,
    Unbound,
}

/// Whether the command must be refused here; if so, the error to answer (without the `-`).
pub fn refusal(srv: &Server, conn: &Conn, entry: &CmdEntry, args: &Args) -> Option<String> {
    let spec = entry.spec;
    let exec = spec.name == "exec";
    if spec.keys.is_empty() && spec.getkeys.is_none() && !exec {
        return None;
    }
    let cluster = srv.cluster.get()?;
    cluster.with_routes(|routes| {
        let refused = match (exec, &conn.multi) {
            (true, None) => return None,
            (true, Some(m)) => route(srv, conn, routes, spec.name, m.any_flags(), m.commands()),
            (false, _) => route(
                srv,
                conn,
                routes,
                spec.name,
                spec.flags,
                std::iter::once((*args, entry)),
            ),
        };
        refused.map(|r| message(srv, routes, r))
    })
}

fn route<'a>(
    srv: &Server,
    conn: &Conn,
    routes: &Routes,
    name: &str,
    cmd_flags: u32,
    commands: impl Iterator<Item = (Args<'a>, &'a CmdEntry)>,
) -> Option<Refusal> {
    let pubsub_shard = matches!(name, "ssubscribe" | "sunsubscribe" | "spublish");
    let mut first: Option<&[u8]> = None;
    let mut slot = 0u16;
    let mut owner = UNASSIGNED;
    let (mut migrating, mut importing, mut multiple_keys) = (false, false, false);
    let (mut missing, mut existing) = (0usize, 0usize);
    let mut cross = false;
    let mut unbound = false;
    let now = tern_engine::clock::now_ms();
    for (args, entry) in commands {
        entry.spec.for_each_key(&args, |pos, _| {
            if cross || unbound {
                return;
            }
            let key = args.get(pos);
            let this = key_hash_slot(key);
            match first {
                None => {
                    first = Some(key);
                    slot = this;
                    owner = routes.owner[slot as usize];
                    if owner == UNASSIGNED {
                        unbound = true;
                        return;
                    }
                    if owner == routes.myself && routes.migrating_to(slot).is_some() {
                        migrating = true;
                    } else if routes.importing_from(slot).is_some() {
                        importing = true;
                    }
                }
                Some(f) => {
                    if this != slot {
                        cross = true;
                        return;
                    }
                    if importing && f != key {
                        multiple_keys = true;
                    }
                }
            }
            if (migrating || importing) && !pubsub_shard {
                let (h, shard) = srv.store.lock(0, key);
                if shard.peek(h, key, now).is_some() {
                    existing += 1;
                } else {
                    missing += 1;
                }
            }
        });
    }
    if unbound {
        return Some(Refusal::Unbound);
    }
    if cross {
        return Some(Refusal::CrossSlot);
    }
    first?;
    let write = cmd_flags & flags::WRITE != 0;
    if !routes.ok {
        let allowed = if pubsub_shard {
            srv.config.get_bool("cluster-allow-pubsubshard-when-down")
        } else {
            srv.config.get_bool("cluster-allow-reads-when-down")
        };
        if !allowed {
            return Some(Refusal::Down);
        }
        if !pubsub_shard && write {
            return Some(Refusal::DownReadOnly);
        }
    }
    if (migrating || importing) && name == "migrate" {
        return None;
    }
    if migrating && missing > 0 {
        return Some(if existing > 0 {
            Refusal::Unstable
        } else {
            Refusal::Ask(slot, routes.migrating_to(slot).unwrap_or(UNASSIGNED))
        });
    }
    if importing && (conn.asking || cmd_flags & flags::ASKING != 0) {
        return (multiple_keys && missing > 0).then_some(Refusal::Unstable);
    }
    let me = &routes.nodes[routes.myself as usize];
    if (conn.handle.has_flag(cflags::READONLY) || pubsub_shard)
        && !write
        && me.master == Some(owner)
    {
        return None;
    }
    (owner != routes.myself).then_some(Refusal::Moved(slot, owner))
}

fn message(srv: &Server, routes: &Routes, r: Refusal) -> String {
    let endpoint = |n: u16| {
        routes.nodes.get(n as usize).map_or_else(
            || "?:0".to_string(),
            |node| format!("{}:{}", routes.endpoint(srv, node), node.port),
        )
    };
    match r {
        Refusal::Moved(slot, n) => format!("MOVED {slot} {}", endpoint(n)),
        Refusal::Ask(slot, n) => format!("ASK {slot} {}", endpoint(n)),
        Refusal::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
        Refusal::Unstable => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
        Refusal::Down => "CLUSTERDOWN The cluster is down".into(),
        Refusal::DownReadOnly => {
            "CLUSTERDOWN The cluster is down and only accepts read commands".into()
        }
        Refusal::Unbound => "CLUSTERDOWN Hash slot not served".into(),
    }
}
