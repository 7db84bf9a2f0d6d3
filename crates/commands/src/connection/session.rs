//! Connection commands: PING ECHO SELECT QUIT RESET HELLO AUTH.

use std::sync::atomic::Ordering::Relaxed;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_DB_RANGE, ERR_NOT_INT};
use tern_runtime::clients::cflags;
use tern_runtime::ctx::{Ctx, ReplyMode};
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "connection";
    ("ping", -1, [FAST SENTINEL], [CONNECTION], [], ping, "1.0.0",
        "Returns the server's liveliness response.",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("echo", 2, [LOADING STALE FAST], [CONNECTION], [], echo, "1.0.0", "Returns the given string."),
    ("select", 2, [LOADING STALE FAST], [CONNECTION], [], select, "1.0.0",
        "Changes the selected database."),
    ("quit", -1, [NOSCRIPT LOADING STALE FAST NO_AUTH ALLOW_BUSY], [CONNECTION], [], quit, "1.0.0",
        "Closes the connection."),
    ("reset", 1, [NOSCRIPT LOADING STALE FAST NO_AUTH ALLOW_BUSY], [CONNECTION], [], reset, "6.2.0",
        "Resets the connection."),
    ("hello", -1, [NOSCRIPT LOADING STALE FAST NO_AUTH SENTINEL ALLOW_BUSY], [CONNECTION], [],
        hello, "6.0.0", "Handshakes with the Redis server."),
    ("auth", -2, [NOSCRIPT LOADING STALE FAST NO_AUTH SENTINEL ALLOW_BUSY], [CONNECTION], [], auth,
        "1.0.0", "Authenticates the connection."),
};

fn ping(ctx: &mut Ctx, args: &Args) {
    if args.len() > 2 {
        ctx.error("ERR wrong number of arguments for 'ping' command");
        return;
    }
    let subscribed = ctx.conn.subscribed() && !ctx.out.is_resp3();
    match (args.len(), subscribed) {
        (1, false) => ctx.out.simple(b"PONG"),
        (2, false) => ctx.out.bulk(&args[1]),
        (n, true) => {
            ctx.out.array(2);
            ctx.out.bulk(b"pong");
            ctx.out.bulk(if n == 2 { &args[1] } else { b"" });
        }
        _ => unreachable!("arity checked"),
    }
}

fn echo(ctx: &mut Ctx, args: &Args) {
    ctx.out.bulk(&args[1]);
}

fn select(ctx: &mut Ctx, args: &Args) {
    let Some(db) = parse_i64(&args[1]) else {
        ctx.error(ERR_NOT_INT);
        return;
    };
    if i32::try_from(db).is_err() {
        return ctx.error(tern_runtime::args::ERR_INT_RANGE);
    }
    if db != 0 && ctx.srv.cluster.get().is_some() {
        return ctx.error("ERR SELECT is not allowed in cluster mode");
    }
    if db < 0 || db as usize >= ctx.srv.store.databases() {
        ctx.error(ERR_DB_RANGE);
        return;
    }
    ctx.conn.set_db(db as usize);
    ctx.out.ok();
}

fn quit(ctx: &mut Ctx, _args: &Args) {
    ctx.out.ok();
    ctx.conn.close_after_reply = true;
}

fn reset(ctx: &mut Ctx, _args: &Args) {
    tern_runtime::txn::reset(ctx.srv, ctx.conn);
    let c = &mut *ctx.conn;
    c.set_db(0);
    c.reply_mode = ReplyMode::On;
    c.no_touch = false;
    c.no_evict = false;
    tern_runtime::acl::set_default_auth(ctx.srv, c);
    if c.is_monitor() {
        ctx.srv.remove_monitor(c.handle.id);
    }
    tern_runtime::subscriptions::forget_client(ctx.srv, c);
    tern_runtime::tracking::forget_client(ctx.srv, c);
    c.handle.set_flag(
        cflags::MONITOR | cflags::NO_EVICT | cflags::NO_TOUCH | cflags::MULTI,
        false,
    );
    c.handle.meta.lock().name = None;
    ctx.out.resp = 2;
    c.handle.resp.store(2, Relaxed);
    ctx.out.simple(b"RESET");
}

const ERR_WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

fn auth(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 {
        ctx.error("ERR syntax error");
        return;
    }
    if args.len() == 2 && ctx.srv.acl.default_user().rules().nopass {
        ctx.error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        return;
    }
    let (user, pass): (&[u8], &[u8]) = if args.len() == 3 {
        (&args[1], &args[2])
    } else {
        (b"default", &args[1])
    };
    if tern_runtime::acl::auth(ctx.srv, ctx.conn, user, pass, &args[0]) {
        ctx.out.ok();
    } else {
        ctx.error(ERR_WRONGPASS);
    }
}

fn hello(ctx: &mut Ctx, args: &Args) {
    let mut i = 1;
    let mut ver = None;
    if args.len() >= 2 {
        match parse_i64(&args[1]) {
            Some(v) => ver = Some(v),
            None => {
                ctx.error("ERR Protocol version is not an integer or out of range");
                return;
            }
        }
        i = 2;
    }
    if let Some(v) = ver {
        if !(2..=3).contains(&v) {
            ctx.error("NOPROTO unsupported protocol version");
            return;
        }
    }
    let mut setname = None;
    let mut creds = None;
    while i < args.len() {
        let more = args.len() - i - 1;
        if eq_ic(&args[i], "AUTH") && more >= 2 {
            creds = Some((args[i + 1].to_vec(), args[i + 2].to_vec()));
            i += 3;
        } else if eq_ic(&args[i], "SETNAME") && more >= 1 {
            if let Err(e) = tern_runtime::validate_client_name(&args[i + 1]) {
                ctx.error(e);
                return;
            }
            setname = Some(args[i + 1].to_vec());
            i += 2;
        } else {
            ctx.error(&format!(
                "ERR Syntax error in HELLO option '{}'",
                args.str(i)
            ));
            return;
        }
    }
    if let Some((u, p)) = creds {
        if !tern_runtime::acl::auth(ctx.srv, ctx.conn, &u, &p, &args[0]) {
            ctx.error(ERR_WRONGPASS);
            return;
        }
    }
    if !ctx.conn.authenticated {
        ctx.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
        return;
    }
    if let Some(name) = setname {
        ctx.conn.handle.meta.lock().name = if name.is_empty() { None } else { Some(name) };
    }
    if let Some(v) = ver {
        ctx.out.resp = v as u8;
        ctx.conn.handle.resp.store(v as u32, Relaxed);
        if v == 3 {
            // A RESP3 client can be sent pushes at any time (it may be another client's
            // tracking REDIRECT target), so it gets its queue now.
            ctx.conn.push_sender();
        }
    }
    let out = &mut *ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(tern_runtime::REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(out.resp as i64);
    out.bulk(b"id");
    out.int(ctx.conn.handle.id as i64);
    out.bulk(b"mode");
    out.bulk(b"standalone");
    out.bulk(b"role");
    out.bulk(b"master");
    out.bulk(b"modules");
    out.array(0);
}
