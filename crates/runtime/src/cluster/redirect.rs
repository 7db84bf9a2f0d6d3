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
use crate::table::{flags, KeyShape};
use tern_cluster::key_hash_slot;
use tern_engine::hash::checked_key_slot;

/// Why a command (or a blocked client, see `blocked`) cannot be served here.
pub(super) enum Refusal {
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
    let cluster = srv.cluster.get()?;
    // The common case first, with no walk of the key specs: one key, in a slot served here as
    // is. Its hash is kept for the command's own lookup of the key.
    if let KeyShape::One(at) = entry.key_shape {
        if at < args.len() {
            let slot = checked_key_slot(args.get(at));
            if cluster.with_routes(|routes| routes.served.contains(slot)) {
                return None;
            }
        }
    }
    let spec = entry.spec;
    let exec = spec.name == "exec";
    if entry.key_shape == KeyShape::NoKeys && !exec {
        return None;
    }
    cluster.with_routes(|routes| {
        if !exec && served_here(routes, entry, args) {
            return None;
        }
        let refused = match (exec, &conn.multi) {
            (true, None) => return None,
            (true, Some(m)) => route(srv, conn, routes, spec.name, m.any_flags(), m.commands()),
            (false, _) => route(
                srv,
                conn,
                routes,
                spec.name,
                command_flags(srv, entry, args),
                std::iter::once((*args, entry)),
            ),
        };
        refused.err().map(|r| message(srv, routes, r))
    })
}

/// The command's flags as the slot check weighs them (Redis's getCommandFlags): a script with
/// a shebang, or a function, is a write unless it declares `no-writes`, so a READONLY replica
/// redirects it to the master; an EVAL without a shebang keeps EVAL's own flags.
fn command_flags(srv: &Server, entry: &CmdEntry, args: &Args) -> u32 {
    let declared = match entry.spec.name {
        "eval" | "eval_ro" => crate::lua::scripts::eval_declared_flags(srv, false, args),
        "evalsha" | "evalsha_ro" => crate::lua::scripts::eval_declared_flags(srv, true, args),
        "fcall" | "fcall_ro" => crate::lua::libraries::fcall_declared_flags(srv, args),
        _ => None,
    };
    match declared {
        Some(fl) if fl & crate::lua::sflags::NO_WRITES == 0 => entry.spec.flags | flags::WRITE,
        Some(_) => entry.spec.flags & !flags::WRITE,
        None => entry.spec.flags,
    }
}

/// A script's slot: the slot of its declared keys, then of the first key it used.
pub struct ScriptSlot {
    pub slot: Option<u16>,
    /// `allow-cross-slot-keys`, or an EVAL without flags: keys of other slots this node
    /// serves are allowed.
    pub allow_cross_slot: bool,
}

impl ScriptSlot {
    pub fn new<'k>(keys: impl Iterator<Item = &'k [u8]>, allow_cross_slot: bool) -> ScriptSlot {
        let mut keys = keys;
        ScriptSlot {
            slot: keys.next().map(key_hash_slot),
            allow_cross_slot,
        }
    }
}

/// Cluster mode: whether a script's `redis.call` may run here (Redis's
/// `scriptVerifyClusterState`): its keys are served by this node, and in the script's slot.
pub fn script_refusal(
    srv: &Server,
    conn: &Conn,
    entry: &CmdEntry,
    args: &Args,
    script: &mut ScriptSlot,
) -> Option<&'static str> {
    let cluster = srv.cluster.get()?;
    if crate::master_link::obeys(&conn.handle) {
        return None;
    }
    let routed = cluster.with_routes(|routes| {
        let one = std::iter::once((*args, entry));
        route(srv, conn, routes, entry.spec.name, entry.spec.flags, one)
    });
    match routed {
        Err(Refusal::DownReadOnly) => Some(
            "Script attempted to execute a write command while the cluster is down and readonly",
        ),
        Err(Refusal::Down) => {
            Some("Script attempted to execute a command while the cluster is down")
        }
        Err(_) => Some("Script attempted to access a non local key in a cluster node"),
        Ok(Some(slot)) if !script.allow_cross_slot => match script.slot {
            None => {
                script.slot = Some(slot);
                None
            }
            Some(s) if s != slot => {
                Some("Script attempted to access keys that do not hash to the same slot")
            }
            Some(_) => None,
        },
        Ok(_) => None,
    }
}

/// A common case, decided cheaply: every key of the command in one slot served here as is
/// (the state ok, the slot neither migrating nor importing).
#[inline]
fn served_here(routes: &Routes, entry: &CmdEntry, args: &Args) -> bool {
    let mut slot = None;
    let mut one_slot = true;
    entry.spec.for_each_key(args, |pos, _| match slot {
        // The first key's full hash is kept for the command's own lookup of it.
        None => slot = Some(checked_key_slot(args.get(pos))),
        Some(first) => one_slot &= first == key_hash_slot(args.get(pos)),
    });
    one_slot && slot.is_none_or(|s| routes.served.contains(s))
}

fn route<'a>(
    srv: &Server,
    conn: &Conn,
    routes: &Routes,
    name: &str,
    cmd_flags: u32,
    commands: impl Iterator<Item = (Args<'a>, &'a CmdEntry)>,
) -> Result<Option<u16>, Refusal> {
    let pubsub_shard = matches!(name, "ssubscribe" | "sunsubscribe" | "spublish");
    let mut first: Option<&[u8]> = None;
    let mut slot = 0u16;
    let mut owner = UNASSIGNED;
    let (mut migrating, mut importing, mut multiple_keys) = (false, false, false);
    let (mut missing, mut existing) = (0usize, 0usize);
    let mut cross = false;
    let mut unbound = false;
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
                if shard.peek(h, key, tern_engine::clock::now_ms()).is_some() {
                    existing += 1;
                } else {
                    missing += 1;
                }
            }
        });
    }
    if unbound {
        return Err(Refusal::Unbound);
    }
    if cross {
        return Err(Refusal::CrossSlot);
    }
    if first.is_none() {
        return Ok(None);
    }
    let write = cmd_flags & flags::WRITE != 0;
    if !routes.ok {
        let allowed = if pubsub_shard {
            srv.config.get_bool("cluster-allow-pubsubshard-when-down")
        } else {
            srv.config.get_bool("cluster-allow-reads-when-down")
        };
        if !allowed {
            return Err(Refusal::Down);
        }
        if !pubsub_shard && write {
            return Err(Refusal::DownReadOnly);
        }
    }
    if (migrating || importing) && name == "migrate" {
        return Ok(Some(slot));
    }
    if migrating && missing > 0 {
        return Err(if existing > 0 {
            Refusal::Unstable
        } else {
            Refusal::Ask(slot, routes.migrating_to(slot).unwrap_or(UNASSIGNED))
        });
    }
    if importing && (conn.asking || cmd_flags & flags::ASKING != 0) {
        if multiple_keys && missing > 0 {
            return Err(Refusal::Unstable);
        }
        return Ok(Some(slot));
    }
    let me = &routes.nodes[routes.myself as usize];
    if (conn.handle.has_flag(cflags::READONLY) || pubsub_shard)
        && !write
        && me.master == Some(owner)
    {
        return Ok(Some(slot));
    }
    if owner != routes.myself {
        return Err(Refusal::Moved(slot, owner));
    }
    Ok(Some(slot))
}

/// The error a refused client gets (without the `-`).
pub(super) fn message(srv: &Server, routes: &Routes, r: Refusal) -> String {
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
