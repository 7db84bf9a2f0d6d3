//! Client eviction (`maxmemory-clients`), as Redis 7 does it: every normal and pub/sub
//! client's memory (query buffer, reply buffer and list, queued push output, MULTI queue,
//! watched keys, subscriptions, tracking prefixes) is kept in a running total; once the
//! total reaches the limit, the largest clients not marked `CLIENT NO-EVICT` are closed until
//! it is under again. The limit is bytes, or a percentage of `maxmemory`.
//!
//! Each client's figure is refreshed by its own connection (after reading input, before a
//! big command, after a batch, as waiting output is written), by senders of push output, and
//! by the cron, whether or not eviction is on, so the total is always true (a limit set
//! later acts on it at once); the clients are only walked when it is over the limit.

use crate::clients::{cflags, ClientHandle, ClientRegistry};
use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;

/// Per-entry cost of a subscription in Redis's per-client dicts (entry plus bucket pointer).
const DICT_ENTRY: usize = 24;
/// The client structure itself (Redis's sizeof(client), rounded to its allocation).
pub const CLIENT_STRUCT: usize = 2048;
/// The smallest effective limit, whatever `maxmemory-clients` says.
const MIN_LIMIT: usize = 128 * 1024;

/// Memory a client holds outside what its connection reports as state (see `ClientHandle`).
pub fn client_memory(h: &ClientHandle) -> usize {
    let rbs = h.reply_buffer.size.load(Relaxed);
    let subs = h.sub_count.load(Relaxed) + h.psub_count.load(Relaxed) + h.ssub_count.load(Relaxed);
    let dict = |n: usize| {
        if n == 0 {
            0
        } else {
            n * DICT_ENTRY + n.next_power_of_two() * 8
        }
    };
    h.qbuf.load(Relaxed)
        + h.qbuf_free.load(Relaxed)
        + h.argv_mem.load(Relaxed)
        + rbs
        + crate::clients::counted_reply_bytes(h.reply_pending.load(Relaxed), rbs)
        + h.push_pending.load(Relaxed)
        + h.repl_output_bytes()
        + h.state_mem.load(Relaxed)
        + dict(subs)
        + CLIENT_STRUCT
}

/// The eviction limit in bytes (0: off): `maxmemory-clients` in bytes, or `N%` of
/// `maxmemory`.
pub fn limit_from_config(srv: &Server) -> usize {
    let v = srv.config.get("maxmemory-clients").unwrap_or_default();
    let bytes = match v.strip_suffix('%') {
        Some(pct) => {
            let pct: u128 = pct.parse().unwrap_or(0);
            let maxmemory = srv.config.hot.maxmemory.load(Relaxed) as u128;
            (maxmemory * pct / 100) as usize
        }
        None => v.parse().unwrap_or(0),
    };
    if bytes == 0 {
        0
    } else {
        // As Redis: a limit too small to talk to the server at all is raised to this.
        bytes.max(MIN_LIMIT)
    }
}

/// Replicas and the master link are never evicted nor counted.
fn counted(h: &ClientHandle) -> bool {
    !h.has_flag(cflags::REPLICA | cflags::MASTER)
}

/// Record `h`'s current memory in the running total.
#[inline]
pub fn refresh(reg: &ClientRegistry, h: &ClientHandle) {
    let now = if counted(h) && !h.is_killed() {
        client_memory(h)
    } else {
        0
    };
    // Mostly unchanged since last time: leave the shared total's cache line alone.
    if h.tot_mem.load(Relaxed) == now {
        return;
    }
    let before = h.tot_mem.swap(now, Relaxed);
    if now >= before {
        reg.clients_mem.fetch_add(now - before, Relaxed);
    } else {
        reg.clients_mem.fetch_sub(before - now, Relaxed);
    }
}

/// A client leaves: its memory leaves the total.
pub fn forget(reg: &ClientRegistry, h: &ClientHandle) {
    let before = h.tot_mem.swap(0, Relaxed);
    reg.clients_mem
        .fetch_sub(before.min(reg.clients_mem.load(Relaxed)), Relaxed);
}

/// Refresh `h` and evict clients if the total is over the limit.
#[inline]
pub fn check(srv: &Server, h: &ClientHandle) {
    let reg = &srv.clients;
    refresh(reg, h);
    let limit = reg.eviction_limit.load(Relaxed);
    if limit != 0 && reg.clients_mem.load(Relaxed) >= limit {
        evict(srv);
    }
}

/// Close the largest evictable clients until the total is under the limit.
pub fn evict(srv: &Server) {
    let reg = &srv.clients;
    let limit = reg.eviction_limit.load(Relaxed);
    if limit == 0 || reg.clients_mem.load(Relaxed) < limit {
        return;
    }
    let _one = reg.eviction_lock.lock();
    // The figures recorded after each client's last batch (or by the cron): a client in the
    // middle of a command (the CONFIG SET that lowered the limit) counts as it was before it.
    let mut clients: Vec<_> = reg.all().into_iter().filter(|h| counted(h)).collect();
    clients.sort_by_key(|h| std::cmp::Reverse(h.tot_mem.load(Relaxed)));
    // Clients that already hung up leave first: Redis, serving one socket at a time, notices
    // a closed connection before it runs requests that came after the close, so what such a
    // client held never makes it evict anyone (here its connection may simply not have
    // been scheduled yet).
    for h in &clients {
        if reg.clients_mem.load(Relaxed) < limit {
            return;
        }
        if h.peer_closed() && h.kill() {
            forget(reg, h);
        }
    }
    let now_ms = tern_engine::clock::now_ms();
    for h in clients {
        if reg.clients_mem.load(Relaxed) < limit {
            return;
        }
        if h.has_flag(cflags::NO_EVICT) {
            continue;
        }
        let line = h.info_line("NULL", now_ms);
        // Closed meanwhile (its output limits, CLIENT KILL): its memory is already gone.
        if !h.kill() {
            continue;
        }
        forget(reg, &h);
        crate::log::notice(&format!("Evicting client: {line}"));
        reg.evicted_clients.fetch_add(1, Relaxed);
    }
    if reg.clients_mem.load(Relaxed) >= limit {
        crate::log::warning("Over client maxmemory after evicting all evictable clients");
    }
}

/// `maxmemory-clients` or `maxmemory` changed: take the new limit and evict at once if the
/// clients are over it.
pub fn apply_limit(srv: &Server) {
    srv.clients
        .eviction_limit
        .store(limit_from_config(srv), Relaxed);
    evict(srv);
}
