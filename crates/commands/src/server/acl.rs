//! The ACL command (SETUSER, DELUSER, GETUSER, LIST, USERS, WHOAMI, LOAD, SAVE, CAT, GENPASS,
//! LOG, DRYRUN, HELP). Users, rules, the checks and the ACL log are the runtime's
//! (`tern_runtime::acl`).

use tern_runtime::acl::rules::Selector;
use tern_runtime::acl::*;
use tern_runtime::args::{eq_ic, parse_i64, Args};
use tern_runtime::ctx::Ctx;
use tern_runtime::table::{acl as cat, CommandSpec};

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("acl", -2, [SENTINEL], [], [], _, "6.0.0", "A container for Access List Control commands.",
        complexity: "Depends on subcommand.", subcommands: ACL_SUBCOMMANDS),
};

static ACL_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("cat", -2, [NOSCRIPT LOADING STALE SENTINEL], [], [], acl_cat, "6.0.0",
        "Lists the ACL categories, or the commands inside a category.",
        complexity: "O(1) since the categories and commands are a fixed set."),
    ("deluser", -3, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_deluser, "6.0.0",
        "Deletes ACL users, and terminates their connections.",
        complexity: "O(1) amortized time considering the typical user.",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("dryrun", -4, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_dryrun, "7.0.0",
        "Simulates the execution of a command by a user, without executing the command.",
        complexity: "O(1)."),
    ("genpass", -2, [NOSCRIPT LOADING STALE SENTINEL], [], [], acl_genpass, "6.0.0",
        "Generates a pseudorandom, secure password that can be used to identify ACL users."),
    ("getuser", 3, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_getuser, "6.0.0",
        "Lists the ACL rules of a user.",
        complexity: "O(N). Where N is the number of password, command and pattern rules that the user has."),
    ("help", 2, [LOADING STALE SENTINEL], [], [], acl_help, "6.0.0",
        "Returns helpful text about the different subcommands."),
    ("list", 2, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_list, "6.0.0",
        "Dumps the effective rules in ACL file format.",
        complexity: "O(N). Where N is the number of configured users."),
    ("load", 2, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_load, "6.0.0",
        "Reloads the rules from the configured ACL file.",
        complexity: "O(N). Where N is the number of configured users."),
    ("log", -2, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_log, "6.0.0",
        "Lists recent security events generated due to ACL rules.",
        complexity: "O(N) with N being the number of entries shown."),
    ("save", 2, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_save, "6.0.0",
        "Saves the effective ACL rules in the configured ACL file.",
        complexity: "O(N). Where N is the number of configured users.",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("setuser", -3, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_setuser, "6.0.0",
        "Creates and modifies an ACL user and its rules.",
        complexity: "O(N). Where N is the number of rules provided.",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("users", 2, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [], [], acl_users, "6.0.0",
        "Lists all ACL users.", complexity: "O(N). Where N is the number of configured users."),
    ("whoami", 2, [NOSCRIPT LOADING STALE SENTINEL], [], [], acl_whoami, "6.0.0",
        "Returns the authenticated username of the current connection."),
};

fn syntax_error(ctx: &mut Ctx, args: &Args) {
    let sub: String = String::from_utf8_lossy(args.get(1))
        .chars()
        .take(128)
        .collect();
    ctx.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try ACL HELP."
    ));
}

fn acl_setuser(ctx: &mut Ctx, args: &Args) {
    let name = args.get(2);
    if rules::has_spaces(name) {
        ctx.error("ERR Usernames can't contain spaces or null characters");
        return;
    }
    let ops: Vec<Vec<u8>> = (3..args.len()).map(|i| args.get(i).to_vec()).collect();
    match set_user(ctx.srv, ctx.conn, name, &ops) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(&e),
    }
}

fn acl_deluser(ctx: &mut Ctx, args: &Args) {
    if (2..args.len()).any(|i| args.get(i) == b"default") {
        ctx.error("ERR The 'default' user cannot be removed");
        return;
    }
    let srv = ctx.srv;
    let removed = delete_users(srv, ctx.conn, (2..args.len()).map(|i| args.get(i)));
    ctx.out.int(removed as i64);
}

fn describe_selector(ctx: &mut Ctx, s: &Selector) {
    let out = &mut *ctx.out;
    out.bulk(b"commands");
    out.bulk(s.describe_commands().as_bytes());
    out.bulk(b"keys");
    out.bulk(&s.describe_keys());
    out.bulk(b"channels");
    out.bulk(&s.describe_channels());
}

fn acl_getuser(ctx: &mut Ctx, args: &Args) {
    let Some(u) = ctx.srv.acl.get(args.get(2)) else {
        ctx.out.null();
        return;
    };
    let r = u.rules();
    ctx.out.map(6);
    ctx.out.bulk(b"flags");
    let flags = r.flag_names();
    ctx.out.set(flags.len());
    for fl in flags {
        ctx.out.bulk(fl.as_bytes());
    }
    ctx.out.bulk(b"passwords");
    ctx.out.array(r.passwords.len());
    for p in &r.passwords {
        ctx.out.bulk(p.as_bytes());
    }
    describe_selector(ctx, r.root());
    ctx.out.bulk(b"selectors");
    ctx.out.array(r.selectors.len() - 1);
    for s in &r.selectors[1..] {
        ctx.out.map(3);
        describe_selector(ctx, s);
    }
}

fn acl_list(ctx: &mut Ctx, _args: &Args) {
    let lines = user_lines(&ctx.srv.acl);
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.bulk(&l);
    }
}

fn acl_users(ctx: &mut Ctx, _args: &Args) {
    let names = ctx.srv.acl.user_names();
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
}

fn acl_whoami(ctx: &mut Ctx, _args: &Args) {
    match &ctx.conn.user {
        Some(u) => {
            let name = u.name.clone();
            ctx.out.bulk(name.as_bytes());
        }
        None => ctx.out.null(),
    }
}

const ERR_NO_ACLFILE: &str = "ERR This Redis instance is not configured to use an ACL file. You \
     may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE \
     (assuming you have a Redis configuration file set) in order to store users in the Redis \
     configuration.";

fn acl_load(ctx: &mut Ctx, _args: &Args) {
    if ctx.srv.config.get("aclfile").unwrap_or_default().is_empty() {
        ctx.error(ERR_NO_ACLFILE);
        return;
    }
    let srv = ctx.srv;
    match load_file(srv, Some(ctx.conn)) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(&format!("ERR {}", e.replace(['\r', '\n'], " "))),
    }
}

fn acl_save(ctx: &mut Ctx, _args: &Args) {
    if ctx.srv.config.get("aclfile").unwrap_or_default().is_empty() {
        ctx.error(ERR_NO_ACLFILE);
        return;
    }
    match save_file(ctx.srv) {
        Ok(()) => ctx.out.ok(),
        Err(_) => ctx.error(
            "ERR There was an error trying to save the ACLs. Please check the server logs for \
             more information",
        ),
    }
}

fn acl_cat(ctx: &mut Ctx, args: &Args) {
    match args.len() {
        2 => {
            ctx.out.array(cat::NAMES.len());
            for (_, n) in cat::NAMES {
                ctx.out.bulk(n.as_bytes());
            }
        }
        3 => {
            let name = lossy(args.get(2));
            let Some(flag) = rules::category_flag(&name) else {
                let shown: String = name.chars().take(128).collect();
                ctx.error(&format!("ERR Unknown category '{shown}'"));
                return;
            };
            let mut names = Vec::new();
            for e in ctx.srv.commands.iter() {
                if e.spec.acl & flag != 0 {
                    names.push(e.fullname.clone());
                }
                for s in e.subs.values() {
                    if s.spec.acl & flag != 0 {
                        names.push(s.fullname.clone());
                    }
                }
            }
            ctx.out.array(names.len());
            for n in names {
                ctx.out.bulk(n.as_bytes());
            }
        }
        _ => syntax_error(ctx, args),
    }
}

fn acl_genpass(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 {
        return syntax_error(ctx, args);
    }
    let mut bits = 256i64;
    if args.len() == 3 {
        match parse_i64(args.get(2)) {
            Some(b) => bits = b,
            None => {
                ctx.error(tern_runtime::args::ERR_NOT_INT);
                return;
            }
        }
    }
    if bits <= 0 || bits > 4096 {
        ctx.error(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a \
             positive number up to 4096",
        );
        return;
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut raw = vec![0u8; chars.div_ceil(2)];
    fill_random(&mut raw);
    let mut hex = String::with_capacity(raw.len() * 2);
    for b in raw {
        hex.push_str(&format!("{b:02x}"));
    }
    hex.truncate(chars);
    ctx.out.bulk(hex.as_bytes());
}

/// Random bytes from the kernel (falling back to the thread RNG, a CSPRNG).
fn fill_random(buf: &mut [u8]) {
    use std::io::Read;
    if let Ok(mut fh) = std::fs::File::open("/dev/urandom") {
        if fh.read_exact(buf).is_ok() {
            return;
        }
    }
    use rand::RngCore;
    rand::thread_rng().fill_bytes(buf);
}

fn acl_log(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 {
        return syntax_error(ctx, args);
    }
    let mut count = 10i64;
    if args.len() == 3 {
        if eq_ic(args.get(2), "reset") {
            ctx.srv.acl.log().entries.clear();
            ctx.out.ok();
            return;
        }
        match parse_i64(args.get(2)) {
            Some(n) => count = n.max(0),
            None => {
                ctx.error(tern_runtime::args::ERR_NOT_INT);
                return;
            }
        }
    }
    let now = tern_engine::clock::now_ms();
    let log = ctx.srv.acl.log();
    let n = (count as usize).min(log.entries.len());
    let out = &mut *ctx.out;
    out.array(n);
    for e in log.entries.iter().take(n) {
        out.map(10);
        out.bulk(b"count");
        out.int(e.count as i64);
        out.bulk(b"reason");
        out.bulk(match e.reason {
            Denied::Cmd => b"command".as_slice(),
            Denied::Key => b"key",
            Denied::Channel => b"channel",
            Denied::Auth => b"auth",
        });
        out.bulk(b"context");
        out.bulk(match e.context {
            LogContext::Toplevel => b"toplevel".as_slice(),
            LogContext::Multi => b"multi",
            LogContext::Lua => b"lua",
        });
        out.bulk(b"object");
        out.bulk(&e.object);
        out.bulk(b"username");
        out.bulk(e.username.as_bytes());
        out.bulk(b"age-seconds");
        tern_runtime::double::reply_double(out, now.saturating_sub(e.ctime) as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(e.cinfo.as_bytes());
        out.bulk(b"entry-id");
        out.int(e.entry_id as i64);
        out.bulk(b"timestamp-created");
        out.int(e.created as i64);
        out.bulk(b"timestamp-last-updated");
        out.int(e.ctime as i64);
    }
}

fn acl_dryrun(ctx: &mut Ctx, args: &Args) {
    let Some(u) = ctx.srv.acl.get(args.get(2)) else {
        ctx.error(&format!("ERR User '{}' not found", args.str(2)));
        return;
    };
    let target = args.tail(3);
    let srv = ctx.srv;
    let base = srv.commands.get(target.get(0));
    let entry = match base {
        Some(b) if target.len() == 1 || b.subs.is_empty() => Some(b),
        Some(b) => b.sub(target.get(1)),
        None => None,
    };
    let Some(entry) = entry else {
        ctx.error(&format!("ERR Command '{}' not found", args.str(3)));
        return;
    };
    let arity = entry.spec.arity;
    let argc = target.len() as i32;
    if (arity > 0 && arity != argc) || argc < -arity {
        ctx.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            entry.fullname
        ));
        return;
    }
    match check_rules(&u.rules(), entry, &target) {
        Ok(()) => ctx.out.ok(),
        Err((reason, idx)) => {
            let msg = denial_message(reason, &u.name, &entry.fullname, target.get(idx), true);
            ctx.out.bulk(msg.as_bytes());
        }
    }
}

const HELP: &[&str] = &[
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
];

fn acl_help(ctx: &mut Ctx, _args: &Args) {
    tern_runtime::ctx::reply_help(ctx, "ACL", HELP);
}
