//! COMMAND (INFO, DOCS, COUNT, LIST, GETKEYS, GETKEYSANDFLAGS), SLOWLOG, LATENCY and MONITOR.
//! Everything COMMAND reports is read from the command table; there is no second list.

use std::sync::atomic::Ordering::Relaxed;
use tern_resp::Reply;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_SYNTAX};
use tern_runtime::ctx::reply_help;
use tern_runtime::ctx::Ctx;
use tern_runtime::registry::{CmdEntry, Registry};
use tern_runtime::stats::Histogram;
use tern_runtime::table::{acl, flags as f, kflags, BeginSearch, CommandSpec, FindKeys};

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("command", -1, [LOADING STALE SENTINEL], [CONNECTION], [], command_all, "2.8.13",
        "Returns detailed information about all commands.",
        complexity: "O(N) where N is the total number of Redis commands",
        subcommands: COMMAND_SUBCOMMANDS),
    ("slowlog", -2, [], [], [], _, "2.2.12", "A container for slow log commands.",
        complexity: "Depends on subcommand.", subcommands: SLOWLOG_SUBCOMMANDS),
    ("latency", -2, [], [], [], _, "2.8.13", "A container for latency diagnostics commands.",
        complexity: "Depends on subcommand.", subcommands: LATENCY_SUBCOMMANDS),
    ("monitor", 1, [ADMIN NOSCRIPT LOADING STALE], [], [], monitor, "1.0.0",
        "Listens for all requests received by the server in real-time."),
};

static COMMAND_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("count", 2, [LOADING STALE SENTINEL], [CONNECTION], [], command_count, "2.8.13",
        "Returns a count of commands."),
    ("docs", -2, [LOADING STALE SENTINEL], [CONNECTION], [], command_docs, "7.0.0",
        "Returns documentary information about one, multiple or all commands.",
        complexity: "O(N) where N is the number of commands to look up"),
    ("getkeys", -3, [LOADING STALE SENTINEL], [CONNECTION], [], command_getkeys, "2.8.13",
        "Extracts the key names from an arbitrary command.",
        complexity: "O(N) where N is the number of arguments to the command"),
    ("getkeysandflags", -3, [LOADING STALE SENTINEL], [CONNECTION], [], command_getkeysandflags,
        "7.0.0", "Extracts the key names and access flags for an arbitrary command.",
        complexity: "O(N) where N is the number of arguments to the command"),
    ("help", 2, [LOADING STALE SENTINEL], [CONNECTION], [], command_help, "5.0.0",
        "Returns helpful text about the different subcommands."),
    ("info", -2, [LOADING STALE SENTINEL], [CONNECTION], [], command_info, "2.8.13",
        "Returns information about one, multiple or all commands.",
        complexity: "O(N) where N is the number of commands to look up"),
    ("list", -2, [LOADING STALE SENTINEL], [CONNECTION], [], command_list, "7.0.0",
        "Returns a list of command names.",
        complexity: "O(N) where N is the total number of Redis commands"),
};

static SLOWLOG_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("get", -2, [ADMIN LOADING STALE], [], [], slowlog_get, "2.2.12",
        "Returns the slow log's entries.",
        complexity: "O(N) where N is the number of entries returned"),
    ("help", 2, [LOADING STALE], [], [], slowlog_help, "6.2.0",
        "Show helpful text about the different subcommands"),
    ("len", 2, [ADMIN LOADING STALE], [], [], slowlog_len, "2.2.12",
        "Returns the number of entries in the slow log."),
    ("reset", 2, [ADMIN LOADING STALE], [], [], slowlog_reset, "2.2.12",
        "Clears all entries from the slow log.",
        complexity: "O(N) where N is the number of entries in the slowlog"),
};

static LATENCY_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("doctor", 2, [ADMIN NOSCRIPT LOADING STALE], [], [], latency_doctor, "2.8.13",
        "Returns a human-readable latency analysis report."),
    ("graph", 3, [ADMIN NOSCRIPT LOADING STALE], [], [], latency_graph, "2.8.13",
        "Returns a latency graph for an event."),
    ("help", 2, [LOADING STALE], [], [], latency_help, "2.8.13",
        "Returns helpful text about the different subcommands."),
    ("histogram", -2, [ADMIN NOSCRIPT LOADING STALE], [], [], latency_histogram, "7.0.0",
        "Returns the cumulative distribution of latencies of a subset or all commands.",
        complexity: "O(N) where N is the number of commands with latency information being retrieved."),
    ("history", 3, [ADMIN NOSCRIPT LOADING STALE], [], [], latency_history, "2.8.13",
        "Returns timestamp-latency samples for an event."),
    ("latest", 2, [ADMIN NOSCRIPT LOADING STALE], [], [], latency_latest, "2.8.13",
        "Returns the latest latency samples for all events."),
    ("reset", -2, [ADMIN NOSCRIPT LOADING STALE], [], [], latency_reset, "2.8.13",
        "Resets the latency data for one or more events."),
};

// ---------------------------------------------------------------------------------------------
// Table-derived facts

/// Flags COMMAND INFO shows: the table's, plus movablekeys when derived, minus the ones Redis
/// keeps hidden (may_replicate, sentinel, only_sentinel, protected).
fn reported_flags(spec: &CommandSpec) -> Vec<&'static str> {
    let mut fl = spec.flags;
    if spec.movable_keys() {
        fl |= f::MOVABLE_KEYS;
    }
    f::NAMES
        .iter()
        .filter(|(bit, name)| fl & bit != 0 && *name != "may_replicate")
        .map(|(_, n)| *n)
        .collect()
}

fn key_flag_names(kf: u32) -> Vec<&'static str> {
    kflags::NAMES
        .iter()
        .filter(|(bit, _)| kf & bit != 0)
        .map(|(_, n)| *n)
        .collect()
}

fn status_set(out: &mut Reply, names: &[&str]) {
    out.set(names.len());
    for n in names {
        out.simple(n.as_bytes());
    }
}

/// Subcommand entries in table order (the registry keeps them in a hash map).
fn subs_in_order(e: &CmdEntry) -> Vec<&CmdEntry> {
    e.spec
        .subcommands
        .iter()
        .filter_map(|s| e.subs.get(s.name))
        .collect()
}

/// Top-level entries sorted by name, so replies are stable.
fn top_sorted(reg: &Registry) -> Vec<&CmdEntry> {
    let mut v: Vec<&CmdEntry> = reg.iter().collect();
    v.sort_by(|a, b| a.spec.name.cmp(b.spec.name));
    v
}

fn reply_key_specs(out: &mut Reply, spec: &CommandSpec) {
    out.set(spec.keys.len());
    for ks in spec.keys {
        out.map(3);
        out.bulk(b"flags");
        status_set(out, &key_flag_names(ks.flags));
        out.bulk(b"begin_search");
        out.map(2);
        out.bulk(b"type");
        match ks.begin {
            BeginSearch::Index(i) => {
                out.bulk(b"index");
                out.bulk(b"spec");
                out.map(1);
                out.bulk(b"index");
                out.int(i as i64);
            }
            BeginSearch::Keyword { keyword, startfrom } => {
                out.bulk(b"keyword");
                out.bulk(b"spec");
                out.map(2);
                out.bulk(b"keyword");
                out.bulk(keyword.as_bytes());
                out.bulk(b"startfrom");
                out.int(startfrom as i64);
            }
            BeginSearch::Unknown => {
                out.bulk(b"unknown");
                out.bulk(b"spec");
                out.map(0);
            }
        }
        out.bulk(b"find_keys");
        out.map(2);
        out.bulk(b"type");
        match ks.find {
            FindKeys::Range {
                lastkey,
                step,
                limit,
            } => {
                out.bulk(b"range");
                out.bulk(b"spec");
                out.map(3);
                out.bulk(b"lastkey");
                out.int(lastkey as i64);
                out.bulk(b"keystep");
                out.int(step as i64);
                out.bulk(b"limit");
                out.int(limit as i64);
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                step,
            } => {
                out.bulk(b"keynum");
                out.bulk(b"spec");
                out.map(3);
                out.bulk(b"keynumidx");
                out.int(keynumidx as i64);
                out.bulk(b"firstkey");
                out.int(firstkey as i64);
                out.bulk(b"keystep");
                out.int(step as i64);
            }
            FindKeys::Unknown => {
                out.bulk(b"unknown");
                out.bulk(b"spec");
                out.map(0);
            }
        }
    }
}

/// One COMMAND INFO entry: name, arity, flags, first/last/step, ACL categories, tips, key
/// specs, subcommands.
fn reply_info(out: &mut Reply, e: &CmdEntry) {
    let spec = e.spec;
    let (first, last, step) = spec.legacy_range();
    out.array(10);
    out.bulk(e.fullname.as_bytes());
    out.int(spec.arity as i64);
    status_set(out, &reported_flags(spec));
    out.int(first as i64);
    out.int(last as i64);
    out.int(step as i64);
    let cats = spec.acl;
    let names: Vec<String> = acl::NAMES
        .iter()
        .filter(|(bit, _)| cats & bit != 0)
        .map(|(_, n)| format!("@{n}"))
        .collect();
    out.set(names.len());
    for n in &names {
        out.simple(n.as_bytes());
    }
    out.set(spec.tips.len());
    for t in spec.tips {
        out.simple(t.as_bytes());
    }
    reply_key_specs(out, spec);
    let subs = subs_in_order(e);
    if subs.is_empty() {
        out.set(0);
    } else {
        out.array(subs.len());
        for s in subs {
            reply_info(out, s);
        }
    }
}

/// One COMMAND DOCS entry (a map): summary, since, group, complexity, subcommands.
fn reply_docs(out: &mut Reply, e: &CmdEntry) {
    let spec = e.spec;
    let subs = subs_in_order(e);
    let n = 1
        + usize::from(!spec.summary.is_empty())
        + usize::from(!spec.since.is_empty())
        + usize::from(!spec.complexity.is_empty())
        + usize::from(!subs.is_empty());
    out.map(n);
    if !spec.summary.is_empty() {
        out.bulk(b"summary");
        out.bulk(spec.summary.as_bytes());
    }
    if !spec.since.is_empty() {
        out.bulk(b"since");
        out.bulk(spec.since.as_bytes());
    }
    out.bulk(b"group");
    out.bulk(spec.group.as_bytes());
    if !spec.complexity.is_empty() {
        out.bulk(b"complexity");
        out.bulk(spec.complexity.as_bytes());
    }
    if !subs.is_empty() {
        out.bulk(b"subcommands");
        out.map(subs.len());
        for s in subs {
            out.bulk(s.fullname.as_bytes());
            reply_docs(out, s);
        }
    }
}

/// Look a command up by name as COMMAND INFO/DOCS take it: `get` or `config|get`.
fn lookup_name<'a>(reg: &'a Registry, name: &[u8]) -> Option<&'a CmdEntry> {
    let s = std::str::from_utf8(name).ok()?;
    if s.matches('|').count() > 1 {
        return None;
    }
    reg.by_fullname(s)
}

// ---------------------------------------------------------------------------------------------
// COMMAND

fn command_all(ctx: &mut Ctx, _args: &Args) {
    let reg: &Registry = &ctx.srv.commands;
    let top = top_sorted(reg);
    ctx.out.array(top.len());
    for e in top {
        reply_info(ctx.out, e);
    }
}

fn command_count(ctx: &mut Ctx, _args: &Args) {
    let n = ctx.srv.commands.iter().count();
    ctx.out.int(n as i64);
}

fn command_info(ctx: &mut Ctx, args: &Args) {
    let reg: &Registry = &ctx.srv.commands;
    if args.len() == 2 {
        return command_all(ctx, args);
    }
    ctx.out.array(args.len() - 2);
    for i in 2..args.len() {
        match lookup_name(reg, &args[i]) {
            Some(e) => reply_info(ctx.out, e),
            None => ctx.out.null(),
        }
    }
}

fn command_docs(ctx: &mut Ctx, args: &Args) {
    let reg: &Registry = &ctx.srv.commands;
    let found: Vec<&CmdEntry> = if args.len() == 2 {
        top_sorted(reg)
    } else {
        (2..args.len())
            .filter_map(|i| lookup_name(reg, &args[i]))
            .collect()
    };
    ctx.out.map(found.len());
    for e in found {
        ctx.out.bulk(e.fullname.as_bytes());
        reply_docs(ctx.out, e);
    }
}

fn command_list(ctx: &mut Ctx, args: &Args) {
    let reg: &Registry = &ctx.srv.commands;
    enum Filter {
        None,
        Module,
        AclCat(u64),
        Pattern(Vec<u8>),
    }
    let mut filter = Filter::None;
    let mut i = 2;
    while i < args.len() {
        if eq_ic(&args[i], "filterby") && args.len() - 1 - i == 2 {
            let kind = &args[i + 1];
            let arg = &args[i + 2];
            filter = if eq_ic(kind, "module") {
                Filter::Module
            } else if eq_ic(kind, "aclcat") {
                let cat = acl::NAMES
                    .iter()
                    .find(|(_, n)| eq_ic(arg, n))
                    .map(|(b, _)| *b)
                    .unwrap_or(0);
                Filter::AclCat(cat)
            } else if eq_ic(kind, "pattern") {
                Filter::Pattern(arg.to_vec())
            } else {
                ctx.error(ERR_SYNTAX);
                return;
            };
            i += 3;
        } else {
            ctx.error(ERR_SYNTAX);
            return;
        }
    }
    let mut names = Vec::new();
    for e in top_sorted(reg) {
        for c in std::iter::once(e).chain(subs_in_order(e)) {
            let keep = match &filter {
                Filter::None => true,
                // No modules are ever loaded.
                Filter::Module => false,
                Filter::AclCat(cat) => *cat != 0 && c.spec.acl & cat != 0,
                Filter::Pattern(p) => tern_runtime::glob::matches(p, c.fullname.as_bytes(), true),
            };
            if keep {
                names.push(c.fullname.clone());
            }
        }
    }
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
}

fn getkeys_impl(ctx: &mut Ctx, args: &Args, with_flags: bool) {
    let target = args.tail(2);
    let Some(mut entry) = ctx.srv.commands.get(&target[0]) else {
        ctx.error("ERR Invalid command specified");
        return;
    };
    if !entry.subs.is_empty() && target.len() >= 2 {
        match entry.sub(&target[1]) {
            Some(s) => entry = s,
            None => {
                ctx.error("ERR Invalid command specified");
                return;
            }
        }
    }
    let spec = entry.spec;
    if spec.keys.is_empty() || spec.keys.iter().all(|k| k.flags & kflags::NOT_KEY != 0) {
        ctx.error("ERR The command has no key arguments");
        return;
    }
    let argc = target.len() as i32;
    if (spec.arity > 0 && spec.arity != argc) || argc < -spec.arity {
        ctx.error("ERR Invalid number of arguments specified for command");
        return;
    }
    // As Redis: the key specs when they all apply (none has variable flags), else the
    // command's own key finder.
    let real_keys = spec.keys.iter().any(|k| k.flags & kflags::NOT_KEY == 0);
    let variable = spec
        .keys
        .iter()
        .any(|k| k.flags & kflags::VARIABLE_FLAGS != 0);
    let from_specs = if real_keys && !variable {
        tern_runtime::table::keys_by_specs(spec.keys, &target)
    } else {
        None
    };
    let keys: Vec<(usize, u32)> = match from_specs {
        Some(k) => k,
        None => match numkeys_finder(spec.name) {
            Some((store, count, first)) => numkeys_keys(&target, store, count, first),
            None => spec
                .key_positions(&target)
                .into_iter()
                .filter(|(_, fl)| fl & kflags::NOT_KEY == 0)
                .map(|(pos, fl)| {
                    if fl & kflags::VARIABLE_FLAGS != 0 {
                        (
                            pos,
                            tern_runtime::table::variable_key_flags(spec.name, &target)
                                .unwrap_or(fl),
                        )
                    } else {
                        (pos, fl)
                    }
                })
                .collect(),
        },
    };
    if keys.is_empty() {
        if spec.flags & f::NO_MANDATORY_KEYS != 0 {
            ctx.out.array(0);
        } else {
            ctx.error("ERR Invalid arguments specified for command");
        }
        return;
    }
    ctx.out.array(keys.len());
    for (pos, fl) in keys {
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(&target[pos]);
            status_set(ctx.out, &key_flag_names(fl));
        } else {
            ctx.out.bulk(&target[pos]);
        }
    }
}

/// Redis's key finders for commands whose keys follow a count (its genericGetKeys): the store
/// key's index (0: none), the count's index and the first key's index.
fn numkeys_finder(name: &str) -> Option<(usize, usize, usize)> {
    Some(match name {
        "zunionstore" | "zinterstore" | "zdiffstore" => (1, 2, 3),
        "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" | "lmpop" | "zmpop" => {
            (0, 1, 2)
        }
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" | "blmpop"
        | "bzmpop" => (0, 2, 3),
        _ => return None,
    })
}

/// genericGetKeys: the count read as C's atoi does (digits after an optional sign, wrapping
/// to an int); no keys unless 1..=the arguments left; no flags.
fn numkeys_keys(args: &Args, store: usize, count: usize, first: usize) -> Vec<(usize, u32)> {
    let n = c_atoi(args.get(count));
    let left = args.len().saturating_sub(first) as i64;
    if n < 1 || n as i64 > left {
        return Vec::new();
    }
    let mut keys: Vec<(usize, u32)> = (0..n as usize).map(|i| (first + i, 0)).collect();
    if store != 0 {
        keys.push((store, 0));
    }
    keys
}

/// C's atoi: optional leading blanks and sign, then digits up to the first other byte; the
/// value (saturated to 64 bits, as strtol) cast to a 32-bit int.
fn c_atoi(s: &[u8]) -> i32 {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut v: i64 = 0;
    while let Some(d) = s.get(i).filter(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add((d - b'0') as i64);
        i += 1;
    }
    (if neg { v.saturating_neg() } else { v }) as i32
}

fn command_getkeys(ctx: &mut Ctx, args: &Args) {
    getkeys_impl(ctx, args, false);
}

fn command_getkeysandflags(ctx: &mut Ctx, args: &Args) {
    getkeys_impl(ctx, args, true);
}

fn command_help(ctx: &mut Ctx, _args: &Args) {
    reply_help(
        ctx,
        "COMMAND",
        &[
            "(no subcommand)",
            "    Describe every command of this server.",
            "COUNT",
            "    Return how many commands this server has.",
            "LIST",
            "    Return the names of all commands of this server.",
            "INFO [<command-name> ...]",
            "    Describe the given commands (all of them when none is given).",
            "DOCS [<command-name> ...]",
            "    Return the documentation of the given commands (all of them when none is",
            "    given).",
            "GETKEYS <full-command>",
            "    Return the key names a complete command line refers to.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the key names of a complete command line and how each is accessed.",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// SLOWLOG

fn slowlog_get(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 {
        ctx.error(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try SLOWLOG HELP.",
            args.str(1)
        ));
        return;
    }
    let mut count: Option<usize> = Some(10);
    if args.len() == 3 {
        match parse_i64(&args[2]) {
            Some(-1) => count = None,
            Some(n) if n >= 0 => count = Some(n as usize),
            _ => {
                ctx.error("ERR count should be greater than or equal to -1");
                return;
            }
        }
    }
    let sl = ctx.srv.slowlog.lock();
    let n = count.map_or(sl.entries.len(), |c| c.min(sl.entries.len()));
    let out = &mut *ctx.out;
    out.array(n);
    for e in sl.entries.iter().take(n) {
        out.array(6);
        out.int(e.id as i64);
        out.int(e.time as i64);
        out.int(e.duration_us as i64);
        out.array(e.args.len());
        for a in &e.args {
            out.bulk(a);
        }
        out.bulk(e.peer.as_bytes());
        out.bulk(e.name.as_bytes());
    }
}

fn slowlog_len(ctx: &mut Ctx, _args: &Args) {
    let n = ctx.srv.slowlog.lock().entries.len();
    ctx.out.int(n as i64);
}

fn slowlog_reset(ctx: &mut Ctx, _args: &Args) {
    ctx.srv.slowlog.lock().entries.clear();
    ctx.out.ok();
}

fn slowlog_help(ctx: &mut Ctx, _args: &Args) {
    reply_help(
        ctx,
        "SLOWLOG",
        &[
            "GET [<count>]",
            "    Return the newest <count> slow log entries (default 10; -1 returns all).",
            "    Each entry holds: id, unix time, duration in microseconds, the arguments,",
            "    the client's address and the client's name.",
            "LEN",
            "    Return how many entries the slow log holds.",
            "RESET",
            "    Empty the slow log.",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// LATENCY

fn latency_latest(ctx: &mut Ctx, _args: &Args) {
    let l = ctx.srv.latency.lock();
    let out = &mut *ctx.out;
    out.array(l.len());
    for (name, s) in l.iter() {
        let (t, ms) = s.samples.back().copied().unwrap_or((0, 0));
        out.array(4);
        out.bulk(name.as_bytes());
        out.int(t as i64);
        out.int(ms as i64);
        out.int(s.max as i64);
    }
}

fn latency_history(ctx: &mut Ctx, args: &Args) {
    let l = ctx.srv.latency.lock();
    let Some(s) = l.get(args.str(2).as_str()) else {
        ctx.out.array(0);
        return;
    };
    let out = &mut *ctx.out;
    out.array(s.samples.len());
    for &(t, ms) in &s.samples {
        out.array(2);
        out.int(t as i64);
        out.int(ms as i64);
    }
}

fn latency_reset(ctx: &mut Ctx, args: &Args) {
    let mut l = ctx.srv.latency.lock();
    let n = if args.len() == 2 {
        let n = l.len();
        l.clear();
        n
    } else {
        (2..args.len())
            .filter(|&i| l.remove(args.str(i).as_str()).is_some())
            .count()
    };
    drop(l);
    ctx.out.int(n as i64);
}

fn age_label(secs: u64) -> String {
    if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m", secs / 60)
    } else if secs < 86400 {
        format!("{}h", secs / 3600)
    } else {
        format!("{}d", secs / 86400)
    }
}

fn latency_graph(ctx: &mut Ctx, args: &Args) {
    const COLS: usize = 80;
    const ROWS: u64 = 4;
    let l = ctx.srv.latency.lock();
    let event = args.str(2);
    let Some(s) = l.get(event.as_str()) else {
        drop(l);
        ctx.error(&format!("ERR No samples available for event '{event}'"));
        return;
    };
    let now = ctx.now_ms / 1000;
    let samples: Vec<(u64, u64)> = s
        .samples
        .iter()
        .skip(s.samples.len().saturating_sub(COLS))
        .copied()
        .collect();
    let hi = samples.iter().map(|x| x.1).max().unwrap_or(0);
    let lo = samples.iter().map(|x| x.1).min().unwrap_or(0);
    let mut g = format!(
        "{event} - high {hi} ms, low {lo} ms (all time high {} ms)\n",
        s.max
    );
    g.push_str(&"-".repeat(COLS));
    g.push('\n');
    // Bars: each sample is a column whose height (1..=ROWS) scales between low and high.
    let heights: Vec<u64> = samples
        .iter()
        .map(|&(_, ms)| {
            if hi == lo {
                ROWS
            } else {
                1 + (ms - lo) * (ROWS - 1) / (hi - lo)
            }
        })
        .collect();
    for row in (1..=ROWS).rev() {
        let line: String = heights
            .iter()
            .map(|&h| if h >= row { '#' } else { ' ' })
            .collect();
        g.push_str(line.trim_end());
        g.push('\n');
    }
    // Age labels, written downwards under each column.
    let labels: Vec<Vec<char>> = samples
        .iter()
        .map(|&(t, _)| age_label(now.saturating_sub(t)).chars().collect())
        .collect();
    let depth = labels.iter().map(Vec::len).max().unwrap_or(0);
    for r in 0..depth {
        let line: String = labels
            .iter()
            .map(|lab| lab.get(r).copied().unwrap_or(' '))
            .collect();
        g.push_str(line.trim_end());
        g.push('\n');
    }
    drop(l);
    ctx.out.verbatim(g.as_bytes());
}

fn latency_doctor(ctx: &mut Ctx, _args: &Args) {
    let threshold = ctx.srv.config.hot.latency_threshold.load(Relaxed);
    let l = ctx.srv.latency.lock();
    let mut r = String::new();
    if l.is_empty() && threshold == 0 {
        r.push_str(
            "Latency monitoring is off on this server, so there is nothing to analyse. \
             Turn it on with \"CONFIG SET latency-monitor-threshold <milliseconds>\" and \
             ask again once some events were recorded.\n",
        );
    } else if l.is_empty() {
        r.push_str(&format!(
            "No latency event above the {threshold} ms threshold was recorded so far. \
             Nothing to report.\n"
        ));
    } else {
        r.push_str(&format!(
            "Latency report: {} event class(es) went above the {threshold} ms threshold.\n\n",
            l.len()
        ));
        for (i, (name, s)) in l.iter().enumerate() {
            let n = s.samples.len() as u64;
            let sum: u64 = s.samples.iter().map(|x| x.1).sum();
            let avg = sum.checked_div(n).unwrap_or(0);
            let dev = s
                .samples
                .iter()
                .map(|x| x.1.abs_diff(avg))
                .sum::<u64>()
                .checked_div(n)
                .unwrap_or(0);
            let period = match (s.samples.front(), s.samples.back()) {
                (Some(a), Some(b)) if n > 1 => (b.0 - a.0) / (n - 1),
                _ => 0,
            };
            r.push_str(&format!(
                "{}. {name}: {n} spike(s), average {avg} ms, mean deviation {dev} ms, \
                 one every {period} s on average. Worst ever: {} ms.\n",
                i + 1,
                s.max
            ));
        }
        r.push_str("\nSuggestions:\n");
        if l.contains_key("command") || l.contains_key("fast-command") {
            r.push_str(
                "- Slow commands were seen: check SLOWLOG GET for the offenders and avoid \
                 O(N) commands on large values.\n",
            );
        }
        if l.contains_key("expire-cycle") {
            r.push_str(
                "- The active expire cycle was slow: many keys expiring at the same moment \
                 cause this; spread their expiry times.\n",
            );
        }
        r.push_str(
            "- Compare with the machine's intrinsic latency (redis-cli --intrinsic-latency) \
             to rule out the host.\n",
        );
    }
    drop(l);
    ctx.out.verbatim(r.as_bytes());
}

/// One command's merged latency buckets, or None when it has no samples.
fn merged_histogram(ctx: &Ctx, id: usize) -> Option<Vec<u64>> {
    let mut acc = vec![0u64; Histogram::slots()];
    let mut any = false;
    for t in ctx.srv.stats.threads() {
        if let Some(h) = t.cmds.get(id).and_then(|c| c.latency.get()) {
            h.merge_into(&mut acc);
            any = true;
        }
    }
    (any && acc.iter().any(|&c| c > 0)).then_some(acc)
}

/// `calls` plus the cumulative distribution over power-of-two microsecond buckets.
fn reply_cdf(out: &mut Reply, counts: &[u64]) {
    let total: u64 = counts.iter().sum();
    let mut points = Vec::new();
    let mut limit = 1u64;
    let mut prev = 0;
    loop {
        let cum: u64 = counts
            .iter()
            .enumerate()
            .filter(|(i, _)| Histogram::upper_bound(*i) <= limit)
            .map(|(_, c)| c)
            .sum();
        let cum = if cum >= total || limit >= 1 << 40 {
            total
        } else {
            cum
        };
        if cum > prev {
            points.push((limit, cum));
            prev = cum;
        }
        if cum >= total {
            break;
        }
        limit *= 2;
    }
    out.map(2);
    out.bulk(b"calls");
    out.int(total as i64);
    out.bulk(b"histogram_usec");
    out.map(points.len());
    for (us, c) in points {
        out.int(us as i64);
        out.int(c as i64);
    }
}

fn latency_histogram(ctx: &mut Ctx, args: &Args) {
    let reg: &Registry = &ctx.srv.commands;
    let mut picked: Vec<&CmdEntry> = Vec::new();
    if args.len() == 2 {
        for e in top_sorted(reg) {
            picked.push(e);
            picked.extend(subs_in_order(e));
        }
    } else {
        for i in 2..args.len() {
            if let Some(e) = lookup_name(reg, &args[i]) {
                picked.push(e);
                picked.extend(subs_in_order(e));
            }
        }
    }
    let data: Vec<(String, Vec<u64>)> = picked
        .into_iter()
        .filter_map(|e| merged_histogram(ctx, e.id).map(|h| (e.fullname.clone(), h)))
        .collect();
    ctx.out.map(data.len());
    for (name, h) in data {
        ctx.out.bulk(name.as_bytes());
        reply_cdf(ctx.out, &h);
    }
}

fn latency_help(ctx: &mut Ctx, _args: &Args) {
    reply_help(
        ctx,
        "LATENCY",
        &[
            "DOCTOR",
            "    Return a readable analysis of the recorded latency events.",
            "GRAPH <event>",
            "    Return an ASCII chart of the samples of the <event> class.",
            "HISTORY <event>",
            "    Return the (time, latency) samples of the <event> class.",
            "LATEST",
            "    Return the newest sample of every event class.",
            "RESET [<event> ...]",
            "    Drop the samples of the given event classes (all of them by default).",
            "HISTOGRAM [COMMAND ...]",
            "    Return the cumulative latency distribution of the given commands, or of",
            "    every command that has one when none is given.",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// MONITOR

fn monitor(ctx: &mut Ctx, _args: &Args) {
    // A client already monitoring gets no second OK, as in Redis.
    if ctx.conn.is_monitor() {
        return;
    }
    tern_runtime::dispatch::start_monitor(ctx.srv, ctx.conn);
    ctx.out.ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(tern_runtime::glob::matches(b"config*", b"config|get", true));
        assert!(tern_runtime::glob::matches(
            b"config|*re*",
            b"config|resetstat",
            true
        ));
        assert!(tern_runtime::glob::matches(
            b"cl*help",
            b"client|help",
            true
        ));
        assert!(!tern_runtime::glob::matches(b"set", b"setex", true));
        assert!(tern_runtime::glob::matches(b"h[ae]llo", b"hello", false));
        assert!(!tern_runtime::glob::matches(b"h[^e]llo", b"hello", false));
        assert!(tern_runtime::glob::matches(b"h[a-c]llo", b"hbllo", false));
        assert!(tern_runtime::glob::matches(b"h\\*llo", b"h*llo", false));
        // As in Redis, "*" does not match the empty string (KEYS special-cases a lone "*").
        assert!(!tern_runtime::glob::matches(b"*", b"", false));
        assert!(tern_runtime::glob::matches(b"GET", b"get", true));
        assert!(!tern_runtime::glob::matches(b"GET", b"get", false));
    }

    #[test]
    fn bucket_bounds_are_increasing() {
        let mut last = 0;
        for i in 1..Histogram::slots().min(600) {
            let u = Histogram::upper_bound(i);
            assert!(u > last, "{i}");
            last = u;
        }
    }
}
