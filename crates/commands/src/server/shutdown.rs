//! SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]; the sequence itself is the runtime's
//! (`tern_runtime::shutdown_sequence`).

use tern_runtime::args::{eq_ic, Args, ERR_SYNTAX};
use tern_runtime::blocking::BlockSpec;
use tern_runtime::ctx::Ctx;
use tern_runtime::shutdown_sequence::{
    abort_shutdown, prepare, Prepared, ERR_FAILED, FORCE, NOSAVE, NOW, SAVE, WAITER_REPLY,
};
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("shutdown", -1, [ADMIN NOSCRIPT LOADING STALE SENTINEL NO_MULTI ALLOW_BUSY OBSERVES_CLIENTS], [], [], shutdown,
        "1.0.0", "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)"),
};

fn shutdown(ctx: &mut Ctx, args: &Args) {
    let mut flags = 0;
    let mut abort = false;
    for a in args.iter().skip(1) {
        if eq_ic(a, "nosave") {
            flags |= NOSAVE;
        } else if eq_ic(a, "save") {
            flags |= SAVE;
        } else if eq_ic(a, "now") {
            flags |= NOW;
        } else if eq_ic(a, "force") {
            flags |= FORCE;
        } else if eq_ic(a, "abort") {
            abort = true;
        } else {
            return ctx.error(ERR_SYNTAX);
        }
    }
    if (abort && flags != 0) || (flags & NOSAVE != 0 && flags & SAVE != 0) {
        return ctx.error(ERR_SYNTAX);
    }
    if abort {
        if abort_shutdown(ctx.srv) {
            return ctx.out.ok();
        }
        return ctx.error("ERR No shutdown in progress.");
    }
    if flags & NOW == 0 && ctx.conn.deny_blocking {
        return ctx
            .error("ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client");
    }
    // A script past busy-reply-threshold: only SHUTDOWN NOSAVE may stop the server.
    if flags & NOSAVE == 0 {
        if let Some(busy) = tern_runtime::lua::busy_error(ctx.srv) {
            return ctx.error(busy);
        }
    }
    match prepare(ctx.srv, flags) {
        // The caller waits for the replicas (and for the end: an exit, or an error).
        Prepared::Waiting => ctx.block(BlockSpec {
            keys: Vec::new(),
            deadline_ms: 0,
            timeout_reply: WAITER_REPLY,
            rewritten_args: None,
            unblock_on_nokey: false,
        }),
        Prepared::Failed => ctx.error(ERR_FAILED),
    }
}
