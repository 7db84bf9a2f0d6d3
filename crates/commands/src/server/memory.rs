//! MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP.

use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_SYNTAX};
use tern_runtime::ctx::Ctx;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("memory", -2, [], [], [], _, "4.0.0", "A container for memory diagnostics commands.",
        complexity: "Depends on subcommand.", subcommands: MEMORY_SUBCOMMANDS),
};

static MEMORY_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("doctor", 2, [], [], [], doctor, "4.0.0", "Outputs a memory problems report.",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    ("help", 2, [LOADING STALE], [], [], help, "4.0.0",
        "Returns helpful text about the different subcommands."),
    ("malloc-stats", 2, [], [], [], malloc_stats, "4.0.0", "Returns the allocator statistics.",
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    ("purge", 2, [], [], [], purge, "4.0.0", "Asks the allocator to release memory.",
        complexity: "Depends on how much memory is allocated, could be slow",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("stats", 2, [], [], [], stats, "4.0.0", "Returns details about memory usage.",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
    ("usage", -3, [READONLY], [], [key(2, RO)], usage, "4.0.0",
        "Estimates the memory usage of a key.",
        complexity: "O(N) where N is the number of samples."),
};

/// Bytes tern spends per key besides its value's heap: the entry allocation (header, chain link
/// and key bytes) and its bucket slot; derived from the layout so it cannot go stale.
fn per_key_bytes(key_len: usize, expiring: bool) -> usize {
    tern_engine::entry::entry_alloc_size(key_len, expiring) + 8
}

/// MEMORY USAGE key [SAMPLES count]: the key, its entry and its value's heap. tern's sizes are
/// exact rather than sampled, so SAMPLES is validated and otherwise has no effect.
fn usage(ctx: &mut Ctx, args: &Args) {
    let mut i = 3;
    while i < args.len() {
        if eq_ic(&args[i], "samples") && i + 1 < args.len() {
            match parse_i64(&args[i + 1]) {
                Some(n) if n >= 0 => {}
                Some(_) => return ctx.error(ERR_SYNTAX),
                None => return ctx.error("ERR value is not an integer or out of range"),
            }
            i += 2;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
    }
    let key = &args[2];
    let (h, shard) = ctx.lock(key);
    // Found even if expired and not yet deleted (a replica's, or with active expiry off), as
    // Redis's MEMORY USAGE looks the key up without an expiry check.
    let size = shard
        .dict()
        .get(h, key)
        .map(|e| per_key_bytes(e.key().len(), e.expire_at() != 0) + e.value.heap_size());
    drop(shard);
    match size {
        Some(n) => ctx.out.int(n as i64),
        None => ctx.out.null(),
    }
}

fn stats(ctx: &mut Ctx, _args: &Args) {
    let m = tern_runtime::info_sections::memory_figures(ctx.srv);
    let keys: usize = (0..ctx.srv.store.databases())
        .map(|db| ctx.srv.store.db_len(db))
        .sum();
    let repl = tern_runtime::replication::buffer_memory(ctx.srv);
    let overhead = m.startup + m.clients_normal + repl.total;
    let dataset = m.used.saturating_sub(overhead);
    let net = m.used.saturating_sub(m.startup);
    let pct = |a: u64, b: u64| {
        if b > 0 {
            a as f64 * 100.0 / b as f64
        } else {
            0.0
        }
    };
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    let ints: [(&str, u64); 9] = [
        ("peak.allocated", m.peak),
        ("total.allocated", m.used),
        ("startup.allocated", m.startup),
        ("replication.backlog", repl.backlog),
        ("clients.slaves", repl.replicas),
        ("clients.normal", m.clients_normal),
        ("cluster.links", 0),
        ("aof.buffer", 0),
        ("overhead.total", overhead),
    ];
    let out = &mut *ctx.out;
    out.map(ints.len() + 12);
    for (name, v) in ints {
        out.bulk(name.as_bytes());
        out.int(v as i64);
    }
    out.bulk(b"keys.count");
    out.int(keys as i64);
    out.bulk(b"keys.bytes-per-key");
    out.int(if keys > 0 {
        (net / keys as u64) as i64
    } else {
        0
    });
    out.bulk(b"dataset.bytes");
    out.int(dataset as i64);
    let doubles: [(&str, f64); 6] = [
        ("dataset.percentage", pct(dataset, net)),
        ("peak.percentage", pct(m.used, m.peak)),
        ("allocator-fragmentation.ratio", ratio(m.active, m.used)),
        ("allocator-rss.ratio", ratio(m.resident, m.active)),
        ("rss-overhead.ratio", ratio(m.rss, m.resident)),
        ("fragmentation", ratio(m.rss, m.used)),
    ];
    for (name, v) in doubles {
        out.bulk(name.as_bytes());
        out.double_str(format!("{v:.17}").trim_end_matches('0').as_bytes());
    }
    out.bulk(b"allocator.allocated");
    out.int(m.used as i64);
    out.bulk(b"allocator.active");
    out.int(m.active as i64);
    out.bulk(b"allocator.resident");
    out.int(m.resident as i64);
}

/// Redis's memory doctor speaks only when something is wrong; tern reports the figures it
/// can judge (an empty instance, or fragmentation).
fn doctor(ctx: &mut Ctx, _args: &Args) {
    let m = tern_runtime::info_sections::memory_figures(ctx.srv);
    let text = if m.used < 5 << 20 {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting."
            .to_string()
    } else if m.rss > m.used * 14 / 10 && m.rss - m.used > 10 << 20 {
        format!(
            "Sam, I detected a few issues in this Redis instance memory implants:\n\n * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). used_memory is {} and rss is {}. Try MEMORY PURGE.\n\nI'm here to keep you safe, Sam. I want to help you.\n",
            m.used, m.rss
        )
    } else {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.".to_string()
    };
    ctx.out.verbatim(text.as_bytes());
}

fn malloc_stats(ctx: &mut Ctx, _args: &Args) {
    let mut buf = Vec::new();
    let options = tikv_jemalloc_ctl::stats_print::Options::default();
    if tikv_jemalloc_ctl::stats_print::stats_print(&mut buf, options).is_err() {
        buf = b"Stats not supported for the current allocator".to_vec();
    }
    ctx.out.verbatim(&buf);
}

/// Ask jemalloc to return dirty pages of every arena to the system.
fn purge(ctx: &mut Ctx, _args: &Args) {
    // MALLCTL_ARENAS_ALL = 4096.
    let name = b"arena.4096.purge\0";
    // SAFETY: a NUL-terminated mallctl name that takes no input and gives no output.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            name.as_ptr() as *const libc::c_char,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        );
    }
    ctx.out.ok();
}

fn help(ctx: &mut Ctx, _args: &Args) {
    tern_runtime::ctx::reply_help(
        ctx,
        "MEMORY",
        &[
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
        ],
    );
}
