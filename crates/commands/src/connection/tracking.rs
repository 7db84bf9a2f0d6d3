//! CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO: client-side caching's commands (the
//! tracking tables and invalidation are the runtime's, `tern_runtime::tracking`).

use std::sync::atomic::Ordering::Relaxed;
use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_SYNTAX};
use tern_runtime::clients::cflags;
use tern_runtime::ctx::Ctx;
use tern_runtime::tracking::{enable, forget_client, Opts};

/// Two prefixes overlap when one starts with the other.
fn overlaps(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
pub fn client_tracking(ctx: &mut Ctx, args: &Args) {
    let mut redirect: i64 = 0;
    let mut o = Opts {
        bcast: false,
        optin: false,
        optout: false,
        noloop: false,
    };
    let mut prefixes: Vec<Box<[u8]>> = Vec::new();
    let mut j = 3;
    while j < args.len() {
        let a = &args[j];
        let more = j + 1 < args.len();
        if eq_ic(a, "redirect") && more {
            j += 1;
            if redirect != 0 {
                ctx.error("ERR A client can only redirect to a single other client");
                return;
            }
            let Some(id) = parse_i64(&args[j]) else {
                ctx.error("ERR value is not an integer or out of range");
                return;
            };
            redirect = id;
            if id <= 0 || ctx.srv.clients.get(id as u64).is_none() {
                ctx.error("ERR The client ID you want redirect to does not exist");
                return;
            }
        } else if eq_ic(a, "bcast") {
            o.bcast = true;
        } else if eq_ic(a, "optin") {
            o.optin = true;
        } else if eq_ic(a, "optout") {
            o.optout = true;
        } else if eq_ic(a, "noloop") {
            o.noloop = true;
        } else if eq_ic(a, "prefix") && more {
            j += 1;
            prefixes.push(args[j].into());
        } else {
            ctx.error(ERR_SYNTAX);
            return;
        }
        j += 1;
    }
    let mode = &args[2];
    if eq_ic(mode, "on") {
        let cur = ctx.srv.tracking.get(ctx.conn.handle.id);
        if !o.bcast && !prefixes.is_empty() {
            ctx.error("ERR PREFIX option requires BCAST mode to be enabled");
            return;
        }
        if let Some(t) = &cur {
            if t.bcast != o.bcast {
                ctx.error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
                return;
            }
        }
        if o.bcast && (o.optin || o.optout) {
            ctx.error("ERR OPTIN and OPTOUT are not compatible with BCAST");
            return;
        }
        if o.optin && o.optout {
            ctx.error("ERR You can't specify both OPTIN mode and OPTOUT mode");
            return;
        }
        if let Some(t) = &cur {
            if (o.optin && t.optout) || (o.optout && t.optin) {
                ctx.error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.");
                return;
            }
        }
        if o.bcast {
            for (i, p) in prefixes.iter().enumerate() {
                if let Some(t) = &cur {
                    if let Some(old) = t.prefixes.iter().find(|old| overlaps(old, p)) {
                        ctx.error(&format!(
                            "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                            String::from_utf8_lossy(p),
                            String::from_utf8_lossy(old)
                        ));
                        return;
                    }
                }
                if let Some(other) = prefixes[i + 1..].iter().find(|q| overlaps(p, q)) {
                    ctx.error(&format!(
                        "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(other)
                    ));
                    return;
                }
            }
        }
        enable(ctx, redirect as u64, o, prefixes);
    } else if eq_ic(mode, "off") {
        forget_client(ctx.srv, ctx.conn);
    } else {
        ctx.error(ERR_SYNTAX);
        return;
    }
    ctx.out.ok();
}

/// CLIENT CACHING YES|NO
pub fn client_caching(ctx: &mut Ctx, args: &Args) {
    let Some(t) = ctx
        .srv
        .tracking
        .get(ctx.conn.handle.id)
        .filter(|_| ctx.conn.handle.has_flag(cflags::TRACKING))
    else {
        ctx.error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
        return;
    };
    let opt = &args[2];
    if eq_ic(opt, "yes") {
        if !t.optin {
            ctx.error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            );
            return;
        }
    } else if eq_ic(opt, "no") {
        if !t.optout {
            ctx.error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            );
            return;
        }
    } else {
        ctx.error(ERR_SYNTAX);
        return;
    }
    t.caching.store(true, Relaxed);
    ctx.out.ok();
}

/// CLIENT GETREDIR
pub fn client_getredir(ctx: &mut Ctx, _args: &Args) {
    let r = ctx.conn.handle.tracking_redir.load(Relaxed);
    ctx.out.int(r);
}

/// CLIENT TRACKINGINFO
pub fn client_trackinginfo(ctx: &mut Ctx, _args: &Args) {
    let h = ctx.conn.handle.clone();
    let t = ctx
        .srv
        .tracking
        .get(h.id)
        .filter(|_| h.has_flag(cflags::TRACKING));
    let mut fl: Vec<&[u8]> = Vec::new();
    fl.push(if t.is_some() { b"on" } else { b"off" });
    if let Some(t) = &t {
        let caching = t.caching.load(Relaxed);
        if t.bcast {
            fl.push(b"bcast");
        }
        if t.optin {
            fl.push(b"optin");
            if caching {
                fl.push(b"caching-yes");
            }
        }
        if t.optout {
            fl.push(b"optout");
            if caching {
                fl.push(b"caching-no");
            }
        }
        if t.noloop {
            fl.push(b"noloop");
        }
        if h.has_flag(cflags::TRACKING_BROKEN_REDIR) {
            fl.push(b"broken_redirect");
        }
    }
    let out = &mut *ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(fl.len());
    for f in fl {
        out.bulk(f);
    }
    out.bulk(b"redirect");
    out.int(h.tracking_redir.load(Relaxed));
    out.bulk(b"prefixes");
    match &t {
        Some(t) => {
            out.array(t.prefixes.len());
            for p in &t.prefixes {
                out.bulk(p);
            }
        }
        None => out.array(0),
    }
}
