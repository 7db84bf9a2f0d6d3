//! The CLUSTER subcommands about the node and the cluster's configuration: MEET, FORGET,
//! ADDSLOTS[RANGE], DELSLOTS[RANGE], FLUSHSLOTS, SETSLOT, REPLICATE, FAILOVER, RESET, the
//! epochs, SAVECONFIG, and the views (INFO, NODES, SLOTS, SHARDS, LINKS, REPLICAS...). Replies
//! and errors are Redis 7.2's.
//!
//! Each handler changes the state under its lock, runs `before_sleep` (Redis's
//! `clusterDoBeforeSleep`: save nodes.conf, update the cluster state) and calls
//! `Cluster::changed`, which republishes the routing table and wakes the bus to act.

use std::sync::Arc;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX};
use tern_runtime::cluster::proto::manual_failover::FailoverMode;
use tern_runtime::cluster::proto::msg::msg_type;
use tern_runtime::cluster::proto::state::{ClusterState, Health, Link, Node};
use tern_runtime::cluster::proto::{NodeId, CLUSTER_SLOTS};
use tern_runtime::cluster::{slot_keys, Cluster};
use tern_runtime::ctx::Ctx;
use tern_runtime::Server;

const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The cluster, or the "disabled" error (cluster-enabled no).
fn cluster(ctx: &mut Ctx) -> Option<Arc<Cluster>> {
    let c = ctx.srv.cluster.get().cloned();
    if c.is_none() {
        ctx.error(DISABLED);
    }
    c
}

fn now() -> u64 {
    tern_engine::clock::now_ms()
}

/// After a change: save/update as the state asked, republish, wake the bus.
fn done(c: &Cluster, st: &mut ClusterState) {
    st.before_sleep(now());
    c.changed(st);
}

fn subcommand_syntax_error(ctx: &mut Ctx, args: &Args) {
    let sub: String = String::from_utf8_lossy(&args[1])
        .chars()
        .take(128)
        .collect();
    ctx.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try CLUSTER HELP."
    ));
}

fn arity_error(ctx: &mut Ctx, args: &Args) {
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    ctx.error(&format!(
        "ERR wrong number of arguments for 'cluster|{sub}' command"
    ));
}

/// A slot number argument ("Invalid or out of range slot" otherwise).
fn slot_arg(ctx: &mut Ctx, a: &[u8]) -> Option<u16> {
    match parse_i64(a) {
        Some(s) if (0..CLUSTER_SLOTS as i64).contains(&s) => Some(s as u16),
        _ => {
            ctx.error("ERR Invalid or out of range slot");
            None
        }
    }
}

/// A node of the table by its id as typed.
fn lookup(st: &ClusterState, a: &[u8]) -> Option<NodeId> {
    let id = NodeId::parse(a)?;
    st.node(&id).map(|n| n.id)
}

fn db0_keys(srv: &Server) -> usize {
    srv.store.db_len(0)
}

// ---- MEET / FORGET ------------------------------------------------------------------------

pub fn meet(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    if args.len() != 4 && args.len() != 5 {
        return subcommand_syntax_error(ctx, args);
    }
    let Some(port) = parse_i64(&args[3]) else {
        return ctx.error(&format!("ERR Invalid base port specified: {}", args.str(3)));
    };
    let cport = if args.len() == 5 {
        match parse_i64(&args[4]) {
            Some(p) => p,
            None => return ctx.error(&format!("ERR Invalid bus port specified: {}", args.str(4))),
        }
    } else {
        port + 10000
    };
    let ip: Option<std::net::IpAddr> = args.str(2).parse().ok();
    let valid_port = |p: i64| (1..=65535).contains(&p);
    let Some(ip) = ip.filter(|_| valid_port(port) && valid_port(cport)) else {
        return ctx.error(&format!(
            "ERR Invalid node address specified: {}:{}",
            args.str(2),
            args.str(3)
        ));
    };
    let mut st = c.state.lock();
    // Already in handshake with that address: nothing to do, as Redis (still OK).
    st.meet(
        &ip.to_canonical().to_string(),
        port as u16,
        cport as u16,
        now(),
    );
    done(&c, &mut st);
    ctx.out.ok();
}

pub fn forget(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let mut st = c.state.lock();
    let t = now();
    let Some(id) = lookup(&st, &args[2]) else {
        let known = NodeId::parse(&args[2]).is_some_and(|id| st.recently_forgotten(&id, t));
        drop(st);
        if known {
            return ctx.out.ok();
        }
        return ctx.error(&format!("ERR Unknown node {}", args.str(2)));
    };
    let me = st.myself();
    if id == me {
        return ctx.error("ERR I tried hard but I can't forget myself...");
    }
    let my = st.node(&me).expect("myself");
    if !my.is_master() && my.master == Some(id) {
        return ctx.error("ERR Can't forget my master!");
    }
    st.forget(id, t);
    done(&c, &mut st);
    ctx.out.ok();
}

// ---- slots ----------------------------------------------------------------------------------

/// Check `start..=end` can be added (free) or deleted (assigned), each slot once.
fn check_slots(
    ctx: &mut Ctx,
    st: &ClusterState,
    seen: &mut [bool],
    del: bool,
    start: u16,
    end: u16,
) -> bool {
    for s in start..=end {
        let owner = st.slot_owner(s);
        if del && owner.is_none() {
            ctx.error(&format!("ERR Slot {s} is already unassigned"));
            return false;
        }
        if !del && owner.is_some() {
            ctx.error(&format!("ERR Slot {s} is already busy"));
            return false;
        }
        if std::mem::replace(&mut seen[s as usize], true) {
            ctx.error(&format!("ERR Slot {s} specified multiple times"));
            return false;
        }
    }
    true
}

fn update_slots(c: &Cluster, st: &mut ClusterState, seen: &[bool], del: bool) {
    let slots: Vec<u16> = (0..CLUSTER_SLOTS as u16)
        .filter(|&s| seen[s as usize])
        .collect();
    if del {
        st.del_slots(&slots);
    } else {
        st.add_my_slots(&slots);
    }
    done(c, st);
}

fn slots_cmd(ctx: &mut Ctx, args: &Args, del: bool) {
    let Some(c) = cluster(ctx) else { return };
    let mut slots = Vec::with_capacity(args.len() - 2);
    for a in args.iter().skip(2) {
        let Some(s) = slot_arg(ctx, a) else { return };
        slots.push(s);
    }
    let mut st = c.state.lock();
    let mut seen = vec![false; CLUSTER_SLOTS];
    for s in slots {
        if !check_slots(ctx, &st, &mut seen, del, s, s) {
            return;
        }
    }
    update_slots(&c, &mut st, &seen, del);
    ctx.out.ok();
}

fn slots_range_cmd(ctx: &mut Ctx, args: &Args, del: bool) {
    let Some(c) = cluster(ctx) else { return };
    if args.len() % 2 == 1 {
        return arity_error(ctx, args);
    }
    let mut st = c.state.lock();
    let mut seen = vec![false; CLUSTER_SLOTS];
    let mut j = 2;
    while j < args.len() {
        let Some(start) = slot_arg(ctx, &args[j]) else {
            return;
        };
        let Some(end) = slot_arg(ctx, &args[j + 1]) else {
            return;
        };
        if start > end {
            return ctx.error(&format!(
                "ERR start slot number {start} is greater than end slot number {end}"
            ));
        }
        if !check_slots(ctx, &st, &mut seen, del, start, end) {
            return;
        }
        j += 2;
    }
    update_slots(&c, &mut st, &seen, del);
    ctx.out.ok();
}

pub fn addslots(ctx: &mut Ctx, args: &Args) {
    slots_cmd(ctx, args, false);
}

pub fn delslots(ctx: &mut Ctx, args: &Args) {
    slots_cmd(ctx, args, true);
}

pub fn addslotsrange(ctx: &mut Ctx, args: &Args) {
    slots_range_cmd(ctx, args, false);
}

pub fn delslotsrange(ctx: &mut Ctx, args: &Args) {
    slots_range_cmd(ctx, args, true);
}

pub fn flushslots(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    if db0_keys(ctx.srv) != 0 {
        return ctx.error("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.");
    }
    let mut st = c.state.lock();
    st.flush_my_slots();
    done(&c, &mut st);
    ctx.out.ok();
}

pub fn setslot(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let mut st = c.state.lock();
    let me = st.myself();
    if !st.node(&me).expect("myself").is_master() {
        return ctx.error("ERR Please use SETSLOT only with masters.");
    }
    let Some(slot) = slot_arg(ctx, &args[2]) else {
        return;
    };
    let action = &args[3];
    let target = |st: &ClusterState, ctx: &mut Ctx, unknown: &str| -> Option<NodeId> {
        let Some(n) = lookup(st, &args[4]) else {
            ctx.error(&format!("ERR {unknown} {}", args.str(4)));
            return None;
        };
        if !st.node(&n).expect("found").is_master() {
            ctx.error("ERR Target node is not a master");
            return None;
        }
        Some(n)
    };
    if eq_ic(action, "migrating") && args.len() == 5 {
        if st.slot_owner(slot) != Some(me) {
            return ctx.error(&format!("ERR I'm not the owner of hash slot {slot}"));
        }
        let Some(n) = target(&st, ctx, "I don't know about node") else {
            return;
        };
        st.set_slot_migrating(slot, n);
    } else if eq_ic(action, "importing") && args.len() == 5 {
        if st.slot_owner(slot) == Some(me) {
            return ctx.error(&format!("ERR I'm already the owner of hash slot {slot}"));
        }
        let Some(n) = target(&st, ctx, "I don't know about node") else {
            return;
        };
        st.set_slot_importing(slot, n);
    } else if eq_ic(action, "stable") && args.len() == 4 {
        st.set_slot_stable(slot);
    } else if eq_ic(action, "node") && args.len() == 5 {
        let Some(n) = target(&st, ctx, "Unknown node") else {
            return;
        };
        let was_mine = st.slot_owner(slot) == Some(me);
        // Counted with the state locked: the lock order is state, then the keyspace.
        let keys = slot_keys::count_slot_keys(ctx.srv, slot);
        if was_mine && n != me && keys != 0 {
            return ctx.error(&format!(
                "ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
            ));
        }
        if keys == 0 {
            st.migrating.remove(&slot);
        }
        let importing = n == me && st.importing.contains_key(&slot);
        st.set_slot_node(slot, n);
        if importing {
            st.log_notice(format!("configEpoch updated after importing slot {slot}"));
        }
        let my_slots_left = st.node(&me).is_some_and(|m| !m.slots.is_empty());
        if was_mine && n != me && !my_slots_left && st.config.allow_replica_migration {
            let name = st.node(&n).map(node_name).unwrap_or_default();
            st.log_notice(format!(
                "Configuration change detected. Reconfiguring myself as a replica of {name}"
            ));
            st.set_my_master(n);
        }
    } else {
        return ctx
            .error("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP");
    }
    done(&c, &mut st);
    ctx.out.ok();
}

fn node_name(n: &Node) -> String {
    format!("{} ({})", n.id, String::from_utf8_lossy(&n.human_nodename))
}

// ---- roles ----------------------------------------------------------------------------------

pub fn replicate(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let mut st = c.state.lock();
    let Some(n) = lookup(&st, &args[2]) else {
        return ctx.error(&format!("ERR Unknown node {}", args.str(2)));
    };
    let me = st.myself();
    if n == me {
        return ctx.error("ERR Can't replicate myself");
    }
    if !st.node(&n).expect("found").is_master() {
        return ctx.error("ERR I can only replicate a master, not a replica.");
    }
    let my = st.node(&me).expect("myself");
    if my.is_master() && (!my.slots.is_empty() || db0_keys(ctx.srv) != 0) {
        return ctx.error("ERR To set a master the node must be empty and without assigned slots.");
    }
    st.set_my_master(n);
    done(&c, &mut st);
    ctx.out.ok();
}

pub fn failover(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    if args.len() > 3 {
        return subcommand_syntax_error(ctx, args);
    }
    let mode = if args.len() == 3 {
        if eq_ic(&args[2], "force") {
            FailoverMode::Force
        } else if eq_ic(&args[2], "takeover") {
            FailoverMode::Takeover
        } else {
            return ctx.error(ERR_SYNTAX);
        }
    } else {
        FailoverMode::Default
    };
    let mut st = c.state.lock();
    match st.manual_failover(mode, now()) {
        Ok(()) => {
            done(&c, &mut st);
            ctx.out.ok();
        }
        Err(e) => ctx.error(&format!("ERR {e}")),
    }
}

pub fn reset(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    if args.len() > 3 {
        return subcommand_syntax_error(ctx, args);
    }
    let hard = if args.len() == 3 {
        if eq_ic(&args[2], "hard") {
            true
        } else if eq_ic(&args[2], "soft") {
            false
        } else {
            return ctx.error(ERR_SYNTAX);
        }
    } else {
        false
    };
    let is_master = {
        let st = c.state.lock();
        st.node(&st.myself()).expect("myself").is_master()
    };
    if is_master && ctx.srv.store.db_len(ctx.conn.db) != 0 {
        return ctx.error("ERR CLUSTER RESET can't be called with master nodes containing keys");
    }
    if !is_master {
        // A replica stops replicating and drops its copy of the master's data.
        tern_runtime::master_link::become_master(ctx.srv);
        let all: Vec<usize> = (0..ctx.srv.store.databases()).collect();
        let mut g = ctx.srv.store.lock_dbs(&all);
        let mut old = Vec::new();
        let mut removed = 0;
        for shard in g.guards_mut() {
            if !shard.is_empty() {
                removed += shard.len();
                old.push(shard.clear());
            }
        }
        drop(g);
        tern_runtime::background::drop_later_counted(ctx.srv, old, removed, removed as u64);
    }
    let mut st = c.state.lock();
    st.reset(hard, now());
    done(&c, &mut st);
    ctx.out.ok();
}

// ---- epochs and the config file ------------------------------------------------------------

pub fn bumpepoch(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let mut st = c.state.lock();
    let bumped = st.bump_epoch_without_consensus();
    let me = st.myself();
    let epoch = st.node(&me).expect("myself").config_epoch;
    done(&c, &mut st);
    let word = if bumped { "BUMPED" } else { "STILL" };
    ctx.out.simple(format!("{word} {epoch}").as_bytes());
}

pub fn set_config_epoch(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let Some(epoch) = parse_i64(&args[2]) else {
        return ctx.error(ERR_NOT_INT);
    };
    if epoch < 0 {
        return ctx.error(&format!("ERR Invalid config epoch specified: {epoch}"));
    }
    let mut st = c.state.lock();
    if st.nodes().count() > 1 {
        return ctx.error(
            "ERR The user can assign a config epoch only when the node does not know any other node.",
        );
    }
    let me = st.myself();
    if st.node(&me).expect("myself").config_epoch != 0 {
        return ctx.error("ERR Node config epoch is already non-zero");
    }
    st.set_my_config_epoch(epoch as u64);
    st.log_notice(format!(
        "configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH"
    ));
    done(&c, &mut st);
    ctx.out.ok();
}

pub fn saveconfig(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let (seq, text) = c.io.snapshot(&c.state.lock());
    match c.io.save(seq, &text, true) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(&format!(
            "ERR error saving the cluster node config: {}",
            tern_runtime::config::strerror(&e)
        )),
    }
}

// ---- views ----------------------------------------------------------------------------------

pub fn myid(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let id = c.state.lock().myself();
    ctx.out.bulk(id.as_bytes());
}

pub fn myshardid(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let st = c.state.lock();
    let shard = st.node(&st.myself()).expect("myself").shard_id;
    drop(st);
    ctx.out.bulk(shard.as_bytes());
}

pub fn nodes(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let text = c.state.lock().cluster_nodes();
    ctx.out.verbatim(text.as_bytes());
}

pub fn info(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let text = info_text(&c);
    ctx.out.verbatim(text.as_bytes());
}

fn info_text(c: &Cluster) -> String {
    use std::fmt::Write;
    use std::sync::atomic::Ordering::Relaxed;
    let st = c.state.lock();
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for s in 0..CLUSTER_SLOTS as u16 {
        let Some(o) = st.slot_owner(s).and_then(|o| st.node(&o)) else {
            continue;
        };
        assigned += 1;
        if o.failed() {
            fail += 1;
        } else if o.timed_out() {
            pfail += 1;
        } else {
            ok += 1;
        }
    }
    let me = st.node(&st.myself()).expect("myself");
    let my_epoch = match me.master.and_then(|m| st.node(&m)) {
        Some(m) if !me.is_master() => m.config_epoch,
        _ => me.config_epoch,
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\n\
         cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\n",
        if st.health() == Health::Ok {
            "ok"
        } else {
            "fail"
        },
        st.nodes().count(),
        st.size(),
        st.current_epoch,
    );
    drop(st);
    for (counters, dir) in [(&c.io.sent, "sent"), (&c.io.received, "received")] {
        let mut total = 0;
        for (t, n) in counters.iter().enumerate() {
            let n = n.load(Relaxed);
            if n == 0 {
                continue;
            }
            total += n;
            let _ = write!(
                out,
                "cluster_stats_messages_{}_{dir}:{n}\r\n",
                msg_type::name(t as u16)
            );
        }
        let _ = write!(out, "cluster_stats_messages_{dir}:{total}\r\n");
    }
    let _ = write!(
        out,
        "total_cluster_links_buffer_limit_exceeded:{}\r\n",
        c.io.buffer_limit_exceeded.load(Relaxed)
    );
    out
}

/// `cluster-preferred-endpoint-type`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Ip,
    Hostname,
    Unknown,
}

fn endpoint_type(srv: &Server) -> Endpoint {
    match srv
        .config
        .get("cluster-preferred-endpoint-type")
        .unwrap_or_default()
        .as_str()
    {
        "hostname" => Endpoint::Hostname,
        "unknown-endpoint" => Endpoint::Unknown,
        _ => Endpoint::Ip,
    }
}

/// The replication offset CLUSTER SLOTS / SHARDS show for a node (ours for myself).
fn node_offset(srv: &Server, st: &ClusterState, n: &Node) -> u64 {
    if n.id != st.myself() {
        return n.repl_offset;
    }
    match tern_runtime::master_link::link_role(srv) {
        Some((_, _, _, off)) => off.max(0) as u64,
        None => srv.propagation.log.repl_offset(),
    }
}

/// One node of a CLUSTER SLOTS range: endpoint, port, id, then the other known endpoints.
fn slots_node(ctx: &mut Ctx, kind: Endpoint, n: &Node) {
    let out = &mut *ctx.out;
    out.array(4);
    match kind {
        Endpoint::Ip => out.bulk(n.ip.as_bytes()),
        Endpoint::Hostname if n.hostname.is_empty() => out.bulk(b"?"),
        Endpoint::Hostname => out.bulk(&n.hostname),
        Endpoint::Unknown => out.null(),
    }
    out.int(n.port as i64);
    out.bulk(n.id.as_bytes());
    let with_ip = kind != Endpoint::Ip;
    let with_host = kind != Endpoint::Hostname && !n.hostname.is_empty();
    out.map(with_ip as usize + with_host as usize);
    if with_ip {
        out.bulk(b"ip");
        out.bulk(n.ip.as_bytes());
    }
    if with_host {
        out.bulk(b"hostname");
        out.bulk(&n.hostname);
    }
}

pub fn slots(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let kind = endpoint_type(ctx.srv);
    let st = c.state.lock();
    let mut ranges: Vec<(u16, u16, NodeId)> = Vec::new();
    for s in 0..CLUSTER_SLOTS as u16 {
        let Some(o) = st.slot_owner(s) else { continue };
        match ranges.last_mut() {
            Some((_, end, id)) if *id == o && *end + 1 == s => *end = s,
            _ => ranges.push((s, s, o)),
        }
    }
    ctx.out.array(ranges.len());
    for (start, end, id) in ranges {
        let m = st.node(&id).expect("slot owner is known");
        let replicas: Vec<&Node> = m
            .replicas
            .iter()
            .filter_map(|r| st.node(r))
            .filter(|r| !r.failed() && node_offset(ctx.srv, &st, r) != 0)
            .collect();
        ctx.out.array(3 + replicas.len());
        ctx.out.int(start as i64);
        ctx.out.int(end as i64);
        slots_node(ctx, kind, m);
        for r in replicas {
            slots_node(ctx, kind, r);
        }
    }
}

pub fn shards(ctx: &mut Ctx, _args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let kind = endpoint_type(ctx.srv);
    let tls_cluster = ctx.srv.config.get_bool("tls-cluster");
    let st = c.state.lock();
    // Shards in the order their first node appears; handshakes are not members yet.
    let mut shards: Vec<(NodeId, Vec<&Node>)> = Vec::new();
    for n in st.nodes().filter(|n| !n.in_handshake()) {
        match shards.iter_mut().find(|(s, _)| *s == n.shard_id) {
            Some((_, v)) => v.push(n),
            None => shards.push((n.shard_id, vec![n])),
        }
    }
    ctx.out.array(shards.len());
    for (_, members) in shards {
        let first = members[0];
        let master = match first.master.and_then(|m| st.node(&m)) {
            Some(m) if !first.is_master() => m,
            _ => first,
        };
        ctx.out.map(2);
        ctx.out.bulk(b"slots");
        let ranges: Vec<(u16, u16)> = master.slots.ranges().collect();
        ctx.out.array(ranges.len() * 2);
        for (a, b) in ranges {
            ctx.out.int(a as i64);
            ctx.out.int(b as i64);
        }
        ctx.out.bulk(b"nodes");
        ctx.out.array(members.len());
        for n in members {
            let (tcp, tls) = if tls_cluster {
                (n.pport, n.port)
            } else {
                (n.port, n.pport)
            };
            let offset = node_offset(ctx.srv, &st, n);
            let fields =
                7 + (tcp != 0) as usize + (tls != 0) as usize - (n.hostname.is_empty()) as usize;
            let out = &mut *ctx.out;
            out.map(fields);
            out.bulk(b"id");
            out.bulk(n.id.as_bytes());
            if tcp != 0 {
                out.bulk(b"port");
                out.int(tcp as i64);
            }
            if tls != 0 {
                out.bulk(b"tls-port");
                out.int(tls as i64);
            }
            out.bulk(b"ip");
            out.bulk(n.ip.as_bytes());
            out.bulk(b"endpoint");
            match kind {
                Endpoint::Ip => out.bulk(n.ip.as_bytes()),
                Endpoint::Hostname if n.hostname.is_empty() => out.bulk(b"?"),
                Endpoint::Hostname => out.bulk(&n.hostname),
                Endpoint::Unknown => out.bulk(b""),
            }
            if !n.hostname.is_empty() {
                out.bulk(b"hostname");
                out.bulk(&n.hostname);
            }
            out.bulk(b"role");
            out.bulk(if n.is_master() {
                b"master" as &[u8]
            } else {
                b"replica"
            });
            out.bulk(b"replication-offset");
            out.int(offset as i64);
            out.bulk(b"health");
            out.bulk(if n.failed() {
                b"fail" as &[u8]
            } else if !n.is_master() && offset == 0 {
                b"loading"
            } else {
                b"online"
            });
        }
    }
}

pub fn links(ctx: &mut Ctx, _args: &Args) {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(c) = cluster(ctx) else { return };
    let st = c.state.lock();
    let links = c.io.links.lock();
    let mut rows: Vec<(&'static str, NodeId, u64, usize)> = Vec::new();
    for n in st.nodes() {
        let mut add = |link: Link, dir: &'static str| {
            if let Some(l) = links.get(&link) {
                rows.push((dir, n.id, l.ctime, l.queued.load(Relaxed)));
            }
        };
        if tern_runtime::cluster::bus::link_up(n.link) {
            add(Link::Outbound(n.id), "to");
        }
        if let Some(i) = n.inbound {
            add(Link::Inbound(i), "from");
        }
    }
    drop(links);
    drop(st);
    ctx.out.array(rows.len());
    for (dir, id, ctime, queued) in rows {
        let out = &mut *ctx.out;
        out.map(6);
        out.bulk(b"direction");
        out.bulk(dir.as_bytes());
        out.bulk(b"node");
        out.bulk(id.as_bytes());
        out.bulk(b"create-time");
        out.int(ctime as i64);
        out.bulk(b"events");
        out.bulk(if queued > 0 { b"rw" as &[u8] } else { b"r" });
        out.bulk(b"send-buffer-allocated");
        out.int(queued as i64);
        out.bulk(b"send-buffer-used");
        out.int(queued as i64);
    }
}

fn replicas_cmd(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let st = c.state.lock();
    let Some(n) = lookup(&st, &args[2]) else {
        return ctx.error(&format!("ERR Unknown node {}", args.str(2)));
    };
    if !st.node(&n).expect("found").is_master() {
        return ctx.error("ERR The specified node is not a master");
    }
    let replicas = st.replicas_of(&n);
    let lines: Vec<String> = st
        .to_conf()
        .nodes
        .into_iter()
        .filter(|l| replicas.contains(&l.id))
        .map(|l| l.to_line(false))
        .collect();
    drop(st);
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.bulk(l.as_bytes());
    }
}

pub fn replicas(ctx: &mut Ctx, args: &Args) {
    replicas_cmd(ctx, args);
}

pub fn slaves(ctx: &mut Ctx, args: &Args) {
    replicas_cmd(ctx, args);
}

pub fn count_failure_reports(ctx: &mut Ctx, args: &Args) {
    let Some(c) = cluster(ctx) else { return };
    let mut st = c.state.lock();
    let Some(n) = lookup(&st, &args[2]) else {
        return ctx.error(&format!("ERR Unknown node {}", args.str(2)));
    };
    let count = st.failure_report_count(n, now());
    drop(st);
    ctx.out.int(count as i64);
}

const HELP: &[&str] = &[
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "MYSHARDID",
    "    Return the node's shard id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port@bus-port[,hostname]> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
];

pub fn help(ctx: &mut Ctx, _args: &Args) {
    if cluster(ctx).is_none() {
        return;
    }
    tern_runtime::ctx::reply_help(ctx, "CLUSTER", HELP);
}
