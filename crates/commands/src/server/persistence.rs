//! SAVE, BGSAVE, LASTSAVE and BGREWRITEAOF. Saving, loading and rewriting are the runtime's
//! (`tern_runtime::persistence`, `tern_runtime::aof`).

use std::sync::atomic::Ordering::Relaxed;
use tern_runtime::aof;
use tern_runtime::args::{eq_ic, Args, ERR_SYNTAX};
use tern_runtime::ctx::Ctx;
use tern_runtime::persistence::{rdb_save, start_bgsave};
use tern_runtime::table::CommandSpec;

fn save(ctx: &mut Ctx, _args: &Args) {
    if ctx.srv.rdb.bgsave_in_progress.load(Relaxed) {
        return ctx.error("ERR Background save already in progress");
    }
    if tern_engine::Store::in_atomic_unit() {
        return ctx.error("ERR SAVE is not allowed inside a transaction or script");
    }
    match rdb_save(ctx.srv) {
        Ok(_) => {
            ctx.srv.rdb.last_bgsave_ok.store(true, Relaxed);
            tern_runtime::log::notice("DB saved on disk");
            ctx.out.ok()
        }
        Err(e) => {
            tern_runtime::log::warning(&e);
            ctx.error("ERR")
        }
    }
}

fn bgsave(ctx: &mut Ctx, args: &Args) {
    let schedule = match args.len() {
        1 => false,
        2 if eq_ic(&args[1], "schedule") => true,
        _ => return ctx.error(ERR_SYNTAX),
    };
    if ctx.srv.rdb.bgsave_in_progress.load(Relaxed) {
        if schedule {
            ctx.srv.rdb.bgsave_scheduled.store(true, Relaxed);
            return ctx.out.simple(b"Background saving scheduled");
        }
        return ctx.error("ERR Background save already in progress");
    }
    if start_bgsave(ctx.srv.clone()) {
        ctx.out.simple(b"Background saving started");
    } else if ctx.srv.rdb.bgsave_in_progress.load(Relaxed) {
        ctx.error("ERR Background save already in progress");
    } else {
        ctx.error("ERR");
    }
}

fn lastsave(ctx: &mut Ctx, _args: &Args) {
    ctx.out.int(ctx.srv.lastsave.load(Relaxed) as i64);
}

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("bgrewriteaof", 1, [ADMIN NOSCRIPT NO_ASYNC_LOADING], [], [], bgrewriteaof, "1.0.0",
        "Asynchronously rewrites the append-only file to disk."),
    ("save", 1, [ADMIN NOSCRIPT NO_ASYNC_LOADING NO_MULTI], [], [], save, "1.0.0",
        "Synchronously saves the database(s) to disk.",
        complexity: "O(N) where N is the total number of keys in all databases"),
    ("bgsave", -1, [ADMIN NOSCRIPT NO_ASYNC_LOADING], [], [], bgsave, "1.0.0",
        "Asynchronously saves the database(s) to disk."),
    ("lastsave", 1, [LOADING STALE FAST], [ADMIN DANGEROUS], [], lastsave, "1.0.0",
        "Returns the Unix timestamp of the last successful save to disk.",
        tips: &["nondeterministic_output"]),
};

fn bgrewriteaof(ctx: &mut Ctx, _args: &Args) {
    if ctx.srv.aof.rewrite_in_progress.load(Relaxed) {
        return ctx.error("ERR Background append only file rewriting already in progress");
    }
    if ctx.srv.rdb.bgsave_in_progress.load(Relaxed) || tern_engine::Store::in_atomic_unit() {
        ctx.srv.aof.rewrite_scheduled.store(true, Relaxed);
        return ctx
            .out
            .simple(b"Background append only file rewriting scheduled");
    }
    if aof::start_rewrite(ctx.srv.clone()) {
        ctx.out
            .simple(b"Background append only file rewriting started");
    } else {
        ctx.error("ERR Can't execute an AOF background rewriting. Please check the server logs for more information.");
    }
}
