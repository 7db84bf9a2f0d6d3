//! CLIENT: the connection-introspection container (ID, SETNAME, GETNAME, LIST, INFO, KILL,
//! REPLY, NO-EVICT, NO-TOUCH, SETINFO, HELP, and TRACKING, CACHING, GETREDIR, TRACKINGINFO whose
//! handlers are in `tracking.rs` beside this file), PAUSE and UNPAUSE (the pause itself lives in `pause`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_SYNTAX};
use tern_runtime::clients::{cflags, ClientHandle};
use tern_runtime::ctx::{Ctx, ReplyMode};
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "connection";
    ("client", -2, [SENTINEL], [], [], _, "2.4.0", "A container for client connection commands.",
        complexity: "Depends on subcommand.", subcommands: CLIENT_SUBCOMMANDS),
};

static CLIENT_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "connection";
    ("getname", 2, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], getname, "2.6.9",
        "Returns the name of the connection."),
    ("help", 2, [LOADING STALE SENTINEL], [CONNECTION], [], help, "5.0.0",
        "Returns helpful text about the different subcommands."),
    ("tracking", -3, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [],
        super::tracking::client_tracking, "6.0.0",
        "Controls server-assisted client-side caching for the connection.",
        complexity: "O(1). Some options may introduce additional complexity."),
    ("caching", 3, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [],
        super::tracking::client_caching, "6.0.0",
        "Instructs the server whether to track the keys in the next request."),
    ("getredir", 2, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [],
        super::tracking::client_getredir, "6.0.0",
        "Returns the client ID to which the connection's tracking notifications are redirected."),
    ("trackinginfo", 2, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [],
        super::tracking::client_trackinginfo, "6.2.0",
        "Returns information about server-assisted client-side caching for the connection."),
    ("id", 2, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], id, "5.0.0",
        "Returns the unique client ID of the connection."),
    ("info", 2, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], info, "6.2.0",
        "Returns information about the connection."),
    ("kill", -3, [ADMIN NOSCRIPT LOADING STALE SENTINEL OBSERVES_CLIENTS], [CONNECTION], [], kill, "2.4.0",
        "Terminates open connections.",
        complexity: "O(N) where N is the number of client connections"),
    ("list", -2, [ADMIN NOSCRIPT LOADING STALE SENTINEL OBSERVES_CLIENTS], [CONNECTION], [], list, "2.4.0",
        "Lists open connections.", complexity: "O(N) where N is the number of client connections"),
    ("no-evict", 3, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], no_evict, "7.0.0",
        "Sets the client eviction mode of the connection."),
    ("no-touch", 3, [NOSCRIPT LOADING STALE], [CONNECTION], [], no_touch, "7.2.0",
        "Controls whether commands sent by the client affect the LRU/LFU of accessed keys."),
    ("pause", -3, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], pause, "3.0.0",
        "Suspends commands processing."),
    ("reply", 3, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], reply, "3.2.0",
        "Instructs the server whether to reply to commands."),
    ("setinfo", 4, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], setinfo, "7.2.0",
        "Sets information specific to the client or connection."),
    ("setname", 3, [NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], setname, "2.6.9",
        "Sets the connection name."),
    ("unpause", 2, [ADMIN NOSCRIPT LOADING STALE SENTINEL], [CONNECTION], [], unpause, "6.2.0",
        "Resumes processing commands from paused clients.",
        complexity: "O(N) Where N is the number of paused clients"),
    ("unblock", -3, [ADMIN NOSCRIPT LOADING STALE SENTINEL OBSERVES_CLIENTS], [CONNECTION], [], unblock, "5.0.0",
        "Unblocks a client blocked by a blocking command from a different connection.",
        complexity: "O(log N) where N is the number of client connections"),
};

fn id(ctx: &mut Ctx, _args: &Args) {
    ctx.out.int(ctx.conn.handle.id as i64);
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: end another client's blocking wait.
fn unblock(ctx: &mut Ctx, args: &Args) {
    let Some(id) = parse_i64(&args[2]) else {
        return ctx.error("ERR value is not an integer or out of range");
    };
    let error = match args.len() {
        3 => false,
        4 if eq_ic(&args[3], "timeout") => false,
        4 if eq_ic(&args[3], "error") => true,
        4 => return ctx.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
        _ => return ctx.error(ERR_SYNTAX),
    };
    let done = id >= 0 && ctx.srv.blocking.unblock(id as u64, error);
    ctx.out.int(done as i64);
}

fn pause(ctx: &mut Ctx, args: &Args) {
    let all = match args.len() {
        3 => true,
        4 if eq_ic(&args[3], "write") => false,
        4 if eq_ic(&args[3], "all") => true,
        4 => return ctx.error("ERR CLIENT PAUSE mode must be WRITE or ALL"),
        _ => {
            return ctx.error(&format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
                args.str(1)
            ))
        }
    };
    let Some(ms) = parse_i64(&args[2]) else {
        return ctx.error("ERR timeout is not an integer or out of range");
    };
    if ms < 0 {
        return ctx.error("ERR timeout is negative");
    }
    let now = ctx.now_ms as i64;
    if ms > i64::MAX - now {
        return ctx.error("ERR timeout is out of range");
    }
    let end = if ms > 0 { (ms + now) as u64 } else { 0 };
    ctx.srv.pause.pause(end, all);
    ctx.out.ok();
}

fn unpause(ctx: &mut Ctx, _args: &Args) {
    ctx.srv.pause.unpause();
    ctx.out.ok();
}

fn getname(ctx: &mut Ctx, _args: &Args) {
    let name = ctx.conn.handle.meta.lock().name.clone();
    ctx.out.opt_bulk(name.as_deref());
}

fn setname(ctx: &mut Ctx, args: &Args) {
    let name = &args[2];
    if let Err(e) = tern_runtime::validate_client_name(name) {
        ctx.error(e);
        return;
    }
    ctx.conn.handle.meta.lock().name = if name.is_empty() {
        None
    } else {
        Some(name.to_vec())
    };
    ctx.out.ok();
}

fn setinfo(ctx: &mut Ctx, args: &Args) {
    let attr = &args[2];
    let val = &args[3];
    let lib_name = eq_ic(attr, "lib-name");
    if !lib_name && !eq_ic(attr, "lib-ver") {
        ctx.error(&format!("ERR Unrecognized option '{}'", args.str(2)));
        return;
    }
    if val.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        ctx.error(&format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            args.str(2)
        ));
        return;
    }
    let v = if val.is_empty() {
        None
    } else {
        Some(val.to_vec())
    };
    let mut m = ctx.conn.handle.meta.lock();
    if lib_name {
        m.lib_name = v;
    } else {
        m.lib_ver = v;
    }
    drop(m);
    ctx.out.ok();
}

/// Client types as CLIENT LIST TYPE / CLIENT KILL TYPE name them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    Pubsub,
    Master,
}

fn type_by_name(name: &[u8]) -> Option<ClientType> {
    if eq_ic(name, "normal") {
        Some(ClientType::Normal)
    } else if eq_ic(name, "slave") || eq_ic(name, "replica") {
        Some(ClientType::Replica)
    } else if eq_ic(name, "pubsub") {
        Some(ClientType::Pubsub)
    } else if eq_ic(name, "master") {
        Some(ClientType::Master)
    } else {
        None
    }
}

fn type_of(h: &ClientHandle) -> ClientType {
    if h.has_flag(cflags::MASTER) {
        ClientType::Master
    } else if h.has_flag(cflags::REPLICA) && !h.has_flag(cflags::MONITOR) {
        ClientType::Replica
    } else if h.has_flag(cflags::PUBSUB) {
        ClientType::Pubsub
    } else {
        ClientType::Normal
    }
}

/// Full names of every command by id, for the `cmd=` field.
fn names_by_id(ctx: &Ctx) -> Vec<String> {
    let reg = &ctx.srv.commands;
    let mut names = vec![String::new(); reg.len()];
    for e in reg.all() {
        if let Some(slot) = names.get_mut(e.id) {
            slot.clone_from(&e.fullname);
        }
    }
    names
}

/// One client's line. The calling client shows the command it is running now (`current`),
/// the others the last one they ran (`NULL` before their first).
fn line_for(ctx: &Ctx, names: &[String], h: &ClientHandle, current: &str) -> String {
    let name = if h.id == ctx.conn.handle.id {
        current
    } else {
        match h.last_cmd.load(Relaxed) {
            0 => "NULL",
            n => names.get(n - 1).map(String::as_str).unwrap_or("NULL"),
        }
    };
    h.info_line(name, ctx.now_ms)
}

fn info(ctx: &mut Ctx, _args: &Args) {
    let names = names_by_id(ctx);
    let mut s = line_for(ctx, &names, &ctx.conn.handle.clone(), "client|info");
    s.push('\n');
    ctx.out.verbatim(s.as_bytes());
}

fn list(ctx: &mut Ctx, args: &Args) {
    let mut wanted_type = None;
    let mut ids: Option<Vec<u64>> = None;
    if args.len() == 4 && eq_ic(&args[2], "type") {
        match type_by_name(&args[3]) {
            Some(t) => wanted_type = Some(t),
            None => {
                ctx.error(&format!("ERR Unknown client type '{}'", args.str(3)));
                return;
            }
        }
    } else if args.len() > 3 && eq_ic(&args[2], "id") {
        let mut v = Vec::new();
        for i in 3..args.len() {
            match parse_i64(&args[i]) {
                Some(n) => v.push(n as u64),
                None => {
                    ctx.error("ERR Invalid client ID");
                    return;
                }
            }
        }
        ids = Some(v);
    } else if args.len() != 2 {
        ctx.error(ERR_SYNTAX);
        return;
    }
    let names = names_by_id(ctx);
    let clients: Vec<Arc<ClientHandle>> = match &ids {
        Some(v) => v.iter().filter_map(|&id| ctx.srv.clients.get(id)).collect(),
        None => ctx.srv.clients.all(),
    };
    let mut s = String::new();
    for h in clients {
        if wanted_type.is_some_and(|t| type_of(&h) != t) {
            continue;
        }
        s.push_str(&line_for(ctx, &names, &h, "client|list"));
        s.push('\n');
    }
    ctx.out.verbatim(s.as_bytes());
}

fn reply(ctx: &mut Ctx, args: &Args) {
    let a = &args[2];
    if eq_ic(a, "on") {
        ctx.conn.reply_mode = ReplyMode::On;
        ctx.out.ok();
    } else if eq_ic(a, "off") {
        ctx.conn.reply_mode = ReplyMode::Off;
    } else if eq_ic(a, "skip") {
        if ctx.conn.reply_mode != ReplyMode::Off {
            ctx.conn.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        ctx.error(ERR_SYNTAX);
    }
}

/// Parse ON/OFF for NO-EVICT and NO-TOUCH.
fn on_off(a: &[u8]) -> Option<bool> {
    if eq_ic(a, "on") {
        Some(true)
    } else if eq_ic(a, "off") {
        Some(false)
    } else {
        None
    }
}

fn no_evict(ctx: &mut Ctx, args: &Args) {
    let Some(on) = on_off(&args[2]) else {
        ctx.error(ERR_SYNTAX);
        return;
    };
    ctx.conn.no_evict = on;
    ctx.conn.handle.set_flag(cflags::NO_EVICT, on);
    ctx.out.ok();
    if !on {
        tern_runtime::client_eviction::check(ctx.srv, &ctx.conn.handle);
    }
}

fn no_touch(ctx: &mut Ctx, args: &Args) {
    let Some(on) = on_off(&args[2]) else {
        ctx.error(ERR_SYNTAX);
        return;
    };
    ctx.conn.no_touch = on;
    ctx.conn.handle.set_flag(cflags::NO_TOUCH, on);
    ctx.out.ok();
}

/// The filters of CLIENT KILL; every one given must match.
#[derive(Default)]
struct KillFilter {
    addr: Option<Vec<u8>>,
    laddr: Option<Vec<u8>>,
    user: Option<Vec<u8>>,
    ctype: Option<ClientType>,
    id: Option<u64>,
    skipme: bool,
}

fn parse_kill_filter(ctx: &mut Ctx, args: &Args) -> Option<KillFilter> {
    let mut kf = KillFilter {
        skipme: true,
        ..Default::default()
    };
    if args.len() == 3 {
        // The old form: one address, and the caller may kill itself.
        kf.addr = Some(args[2].to_vec());
        kf.skipme = false;
        return Some(kf);
    }
    let mut i = 2;
    while i < args.len() {
        let opt = &args[i];
        let Some(val) = (i + 1 < args.len()).then(|| args.get(i + 1)) else {
            ctx.error(ERR_SYNTAX);
            return None;
        };
        if eq_ic(opt, "id") {
            match parse_i64(val).filter(|&n| n >= 1) {
                Some(n) => kf.id = Some(n as u64),
                None => {
                    ctx.error("ERR client-id should be greater than 0");
                    return None;
                }
            }
        } else if eq_ic(opt, "type") {
            match type_by_name(val) {
                Some(t) => kf.ctype = Some(t),
                None => {
                    ctx.error(&format!(
                        "ERR Unknown client type '{}'",
                        String::from_utf8_lossy(val)
                    ));
                    return None;
                }
            }
        } else if eq_ic(opt, "addr") {
            kf.addr = Some(val.to_vec());
        } else if eq_ic(opt, "laddr") {
            kf.laddr = Some(val.to_vec());
        } else if eq_ic(opt, "user") {
            if ctx.srv.acl.get(val).is_none() {
                ctx.error(&format!(
                    "ERR No such user '{}'",
                    String::from_utf8_lossy(val)
                ));
                return None;
            }
            kf.user = Some(val.to_vec());
        } else if eq_ic(opt, "skipme") {
            if eq_ic(val, "yes") {
                kf.skipme = true;
            } else if eq_ic(val, "no") {
                kf.skipme = false;
            } else {
                ctx.error(ERR_SYNTAX);
                return None;
            }
        } else {
            ctx.error(ERR_SYNTAX);
            return None;
        }
        i += 2;
    }
    Some(kf)
}

fn kill(ctx: &mut Ctx, args: &Args) {
    let Some(kf) = parse_kill_filter(ctx, args) else {
        return;
    };
    let me = ctx.conn.handle.id;
    let mut killed = 0i64;
    let mut kill_me = false;
    for h in ctx.srv.clients.all() {
        if kf.addr.as_deref().is_some_and(|a| a != h.addr.as_bytes())
            || kf.laddr.as_deref().is_some_and(|a| a != h.laddr.as_bytes())
            || kf.ctype.is_some_and(|t| type_of(&h) != t)
            || kf.id.is_some_and(|id| id != h.id)
            || kf
                .user
                .as_deref()
                .is_some_and(|u| u != h.meta.lock().user.as_bytes())
        {
            continue;
        }
        if h.id == me {
            if kf.skipme {
                continue;
            }
            // Closed once this reply is written.
            kill_me = true;
        } else {
            h.kill();
            ctx.srv.clients.unregister(h.id);
        }
        killed += 1;
    }
    if args.len() == 3 {
        if killed == 0 {
            ctx.error("ERR No such client");
        } else {
            ctx.out.ok();
        }
    } else {
        ctx.out.int(killed);
    }
    if kill_me {
        ctx.conn.close_after_reply = true;
        ctx.conn.handle.set_flag(cflags::CLOSE_AFTER_REPLY, true);
    }
}

const HELP: &[&str] = &[
    "GETNAME",
    "    Return the name given to this connection, or nil.",
    "ID",
    "    Return the numeric ID of this connection.",
    "INFO",
    "    Return the CLIENT LIST line describing this connection.",
    "KILL <ip:port>",
    "    Close the connection coming from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Close every connection matching all the given filters:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Connections from this peer address.",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Connections to this local address.",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Connections of this type.",
    "    * USER <username>",
    "      Connections authenticated as <username>.",
    "    * ID <client-id>",
    "      The connection with this ID.",
    "    * SKIPME (YES|NO)",
    "      Whether to spare this connection (default: yes).",
    "LIST [options ...]",
    "    Describe the open connections, one line each. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Only connections of this type.",
    "    * ID <client-id> [<client-id> ...]",
    "      Only the connections with these IDs.",
    "REPLY (ON|OFF|SKIP)",
    "    Turn replies to this connection on or off, or drop the next one only.",
    "SETNAME <name>",
    "    Name this connection <name> (an empty name clears it).",
    "SETINFO <option> <value>",
    "    Record client library details. Options are:",
    "    * LIB-NAME: the name of the client library.",
    "    * LIB-VER: the version of the client library.",
    "NO-EVICT (ON|OFF)",
    "    Exempt this connection from client eviction, or not.",
    "NO-TOUCH (ON|OFF)",
    "    While on, commands from this connection leave keys' LRU/LFU data alone.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Hold back the commands of all clients (or only those that may write) for",
    "    <timeout> milliseconds.",
    "UNPAUSE",
    "    Stop a pause started by CLIENT PAUSE.",
];

fn help(ctx: &mut Ctx, _args: &Args) {
    tern_runtime::ctx::reply_help(ctx, "CLIENT", HELP);
}
