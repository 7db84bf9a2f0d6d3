//! CONFIG: GET (several glob patterns, aliases), SET (several pairs, all or nothing), RESETSTAT,
//! REWRITE and HELP, with Redis 7.2's replies and error texts. The parameter table and the
//! set/rewrite semantics live in `config.rs`.

use std::collections::HashSet;
use tern_runtime::args::Args;
use tern_runtime::config::{self, RewriteError};
use tern_runtime::ctx::Ctx;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("config", -2, [], [], [], _, "2.0.0", "A container for server configuration commands.",
        complexity: "Depends on subcommand.", subcommands: CONFIG_SUBCOMMANDS),
};

static CONFIG_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("get", -3, [ADMIN NOSCRIPT LOADING STALE], [], [], get, "2.0.0",
        "Returns the effective values of configuration parameters.",
        complexity: "O(N) when N is the number of configuration parameters provided"),
    ("set", -4, [ADMIN NOSCRIPT LOADING STALE], [], [], set, "2.0.0",
        "Sets configuration parameters in-flight.",
        complexity: "O(N) when N is the number of configuration parameters provided"),
    ("resetstat", 2, [ADMIN NOSCRIPT LOADING STALE], [], [], resetstat, "2.0.0",
        "Resets the server's statistics."),
    ("rewrite", 2, [ADMIN NOSCRIPT LOADING STALE], [], [], rewrite, "2.8.0",
        "Persists the effective configuration to file."),
    ("help", 2, [LOADING STALE], [], [], help, "5.0.0",
        "Returns helpful text about the different subcommands."),
};

const HELP: &[&str] = &[
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
];

fn help(ctx: &mut Ctx, _args: &Args) {
    tern_runtime::ctx::reply_help(ctx, "CONFIG", HELP);
}

/// CONFIG GET pattern [pattern ...]: exact names (hidden ones too, echoed as typed) and glob
/// patterns over every visible name and alias; each parameter at most once.
fn get(ctx: &mut Ctx, args: &Args) {
    let entries = ctx.srv.config.entries();
    let mut seen: HashSet<String> = HashSet::new();
    let mut out: Vec<(String, String)> = Vec::new();
    for i in 2..args.len() {
        let pat = args.str(i);
        if !pat.contains(['[', '*', '?']) {
            if seen.contains(&pat) {
                continue;
            }
            if let Some(p) = config::find(&pat) {
                let canonical = p.name;
                let v = entries
                    .iter()
                    .find(|(n, _)| *n == canonical)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                seen.insert(pat.clone());
                out.push((pat, v));
            }
            continue;
        }
        for (name, v) in &entries {
            let p = config::find(name);
            if p.is_some_and(|p| p.hidden()) || seen.contains(*name) {
                continue;
            }
            if tern_runtime::glob::matches(pat.as_bytes(), name.as_bytes(), true) {
                seen.insert(name.to_string());
                out.push((name.to_string(), v.clone()));
            }
        }
    }
    let o = &mut *ctx.out;
    o.map(out.len());
    for (k, v) in out {
        o.bulk(k.as_bytes());
        o.bulk(v.as_bytes());
    }
}

/// Is the client on a loopback address or a unix socket (enable-protected-configs local)?
fn client_is_local(ctx: &Ctx) -> bool {
    let addr = &ctx.conn.handle.addr;
    if addr.starts_with('/') || addr.is_empty() || addr.starts_with("unix") {
        return true;
    }
    addr.parse::<std::net::SocketAddr>()
        .map(|a| a.ip().is_loopback())
        .unwrap_or(false)
}

fn set(ctx: &mut Ctx, args: &Args) {
    if args.len() % 2 == 1 {
        ctx.error(tern_runtime::args::ERR_SYNTAX);
        return;
    }
    let pairs: Vec<(String, String)> = (2..args.len())
        .step_by(2)
        .map(|i| (args.str(i), args.str(i + 1)))
        .collect();
    let allow_protected = match ctx.srv.config.get("enable-protected-configs").as_deref() {
        Some("yes") => true,
        Some("local") => client_is_local(ctx),
        _ => false,
    };
    // Parameters Redis will not change while a dataset loads (appendonly, dir, ...).
    let loading = ctx
        .srv
        .rdb
        .loading
        .load(std::sync::atomic::Ordering::Relaxed)
        || (ctx.srv.diskless_load.async_loading).load(std::sync::atomic::Ordering::Relaxed);
    if loading
        && pairs.iter().any(|(name, _)| {
            tern_runtime::config::find(name)
                .is_some_and(|p| p.flags & tern_runtime::config::pflags::DENY_LOADING != 0)
        })
    {
        return ctx.error("LOADING Redis is loading the dataset in memory");
    }
    match ctx.srv.config.set_many(&pairs, allow_protected) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(&format!("ERR {}", e.message)),
    }
}

/// What Redis resets: server stats, per-command stats, error stats (not the slow log).
fn resetstat(ctx: &mut Ctx, _args: &Args) {
    let srv = ctx.srv;
    srv.stats.reset();
    srv.store.reset_stats();
    srv.clients
        .rejected_connections
        .store(0, std::sync::atomic::Ordering::Relaxed);
    srv.clients
        .total_connections
        .store(0, std::sync::atomic::Ordering::Relaxed);
    srv.stat_expired_time_cap
        .store(0, std::sync::atomic::Ordering::Relaxed);
    srv.lazyfree
        .freed
        .store(0, std::sync::atomic::Ordering::Relaxed);
    srv.save_children
        .forks
        .store(0, std::sync::atomic::Ordering::Relaxed);
    srv.save_children
        .latest_fork_usec
        .store(0, std::sync::atomic::Ordering::Relaxed);
    tern_runtime::replication::reset_stats(srv);
    tern_runtime::cron_jobs::reset_stats();
    ctx.out.ok();
}

fn rewrite(ctx: &mut Ctx, _args: &Args) {
    match ctx.srv.config.rewrite(false) {
        Ok(()) => ctx.out.ok(),
        Err(RewriteError::NoFile) => ctx.error("ERR The server is running without a config file"),
        Err(RewriteError::Io(e)) => ctx.error(&format!(
            "ERR Rewriting config file: {}",
            config::strerror(&e)
        )),
    }
}
