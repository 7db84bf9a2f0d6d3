//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT. The script cache is the runtime's
//! (`tern_runtime::lua::scripts`).

use std::rc::Rc;
use tern_runtime::args::{eq_ic, Args};
use tern_runtime::ctx::Ctx;
use tern_runtime::lua::{self, scripts, sflags};
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "scripting";
    ("eval", -3, [NOSCRIPT STALE SKIP_MONITOR MAY_REPLICATE NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RW ACCESS UPDATE)], eval, "2.6.0",
        "Executes a server-side Lua script.",
        complexity: "Depends on the script that is executed."),
    ("evalsha", -3, [NOSCRIPT STALE SKIP_MONITOR MAY_REPLICATE NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RW ACCESS UPDATE)], evalsha, "2.6.0",
        "Executes a server-side Lua script by SHA1 digest.",
        complexity: "Depends on the script that is executed."),
    ("eval_ro", -3, [READONLY NOSCRIPT STALE SKIP_MONITOR NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RO ACCESS)], eval_ro, "7.0.0",
        "Executes a read-only server-side Lua script.",
        complexity: "Depends on the script that is executed."),
    ("evalsha_ro", -3, [READONLY NOSCRIPT STALE SKIP_MONITOR NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RO ACCESS)], evalsha_ro, "7.0.0",
        "Executes a read-only server-side Lua script by SHA1 digest.",
        complexity: "Depends on the script that is executed."),
    ("script", -2, [], [], [], _, "2.6.0", "A container for Lua scripts management commands.",
        complexity: "Depends on subcommand.", subcommands: SCRIPT_SUBCOMMANDS),
};

static SCRIPT_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "scripting";
    ("debug", 3, [NOSCRIPT], [SCRIPTING], [], script_debug, "3.2.0",
        "Sets the debug mode of server-side Lua scripts."),
    ("exists", -3, [NOSCRIPT], [SCRIPTING], [], script_exists, "2.6.0",
        "Determines whether server-side Lua scripts exist in the script cache.",
        complexity: "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).",
        tips: &["request_policy:all_shards", "response_policy:agg_logical_and"]),
    ("flush", -2, [NOSCRIPT], [SCRIPTING], [], script_flush, "2.6.0",
        "Removes all server-side Lua scripts from the script cache.",
        complexity: "O(N) with N being the number of scripts in cache",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
    ("help", 2, [LOADING STALE], [SCRIPTING], [], script_help, "5.0.0",
        "Returns helpful text about the different subcommands."),
    ("kill", 2, [NOSCRIPT ALLOW_BUSY], [SCRIPTING], [], script_kill, "2.6.0",
        "Terminates a server-side Lua script during execution.",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"]),
    ("load", 3, [NOSCRIPT STALE], [SCRIPTING], [], script_load, "2.6.0",
        "Loads a server-side Lua script to the script cache.",
        complexity: "O(N) with N being the length in bytes of the script body.",
        tips: &["request_policy:all_nodes", "response_policy:all_succeeded"]),
};

fn eval(ctx: &mut Ctx, args: &Args) {
    eval_generic(ctx, args, false, false)
}
fn evalsha(ctx: &mut Ctx, args: &Args) {
    eval_generic(ctx, args, true, false)
}
fn eval_ro(ctx: &mut Ctx, args: &Args) {
    eval_generic(ctx, args, false, true)
}
fn evalsha_ro(ctx: &mut Ctx, args: &Args) {
    eval_generic(ctx, args, true, true)
}

fn eval_generic(ctx: &mut Ctx, args: &Args, by_sha: bool, ro: bool) {
    if by_sha && args[1].len() != 40 {
        return ctx.error("NOSCRIPT No matching script. Please use EVAL.");
    }
    let Some(nk) = scripts::numkeys(ctx, args, tern_runtime::args::ERR_NOT_INT) else {
        return;
    };
    let script = if by_sha {
        match scripts::lookup(ctx.srv, &args[1]) {
            Some(s) => s,
            None => return ctx.error("NOSCRIPT No matching script. Please use EVAL."),
        }
    } else {
        match scripts::create(ctx.srv, &args[1]) {
            Ok(x) => Rc::new(x),
            Err(e) => return ctx.error(&e),
        }
    };
    if !scripts::check_flags(ctx, script.flags, ro) {
        return;
    }
    if script.history.offload(ctx) {
        return;
    }
    let read_only =
        ro || (script.flags & sflags::EVAL_COMPAT == 0 && script.flags & sflags::NO_WRITES != 0);
    let gen = scripts::generation(ctx.srv);
    let r = lua::with_vm(
        ctx.srv,
        true,
        gen,
        |_| Ok(()),
        |vm| -> Result<(), String> {
            let f = scripts::ensure_compiled(vm, &script)?;
            let spec = lua::Run {
                is_eval: true,
                name: &script.sha,
                read_only,
                allow_oom: script.flags & sflags::ALLOW_OOM != 0,
                allow_cross_slot: script.flags & (sflags::EVAL_COMPAT | sflags::ALLOW_CROSS_SLOT)
                    != 0,
                command: args,
                nkeys: nk,
            };
            lua::run_atomic(ctx, vm, &f, spec, &script.history);
            Ok(())
        },
    );
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) | Err(e) => ctx.error(&e),
    }
}

fn script_load(ctx: &mut Ctx, args: &Args) {
    match scripts::create(ctx.srv, &args[2]) {
        Ok(s) => ctx.out.bulk(s.sha.as_bytes()),
        Err(e) => ctx.error(&e),
    }
}

fn script_exists(ctx: &mut Ctx, args: &Args) {
    ctx.out.array(args.len() - 2);
    for i in 2..args.len() {
        ctx.out.int(scripts::exists(ctx.srv, &args[i]) as i64);
    }
}

fn script_flush(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 || (args.len() == 3 && !eq_ic(&args[2], "ASYNC") && !eq_ic(&args[2], "SYNC"))
    {
        return ctx.error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    scripts::flush(ctx.srv);
    ctx.out.ok();
}

fn script_kill(ctx: &mut Ctx, _args: &Args) {
    match lua::kill(ctx.srv, true) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(e),
    }
}

fn script_debug(ctx: &mut Ctx, args: &Args) {
    let a = &args[2];
    if eq_ic(a, "no") {
        ctx.out.ok()
    } else if eq_ic(a, "yes") || eq_ic(a, "sync") {
        ctx.error("ERR SCRIPT DEBUG is not supported by tern")
    } else {
        ctx.error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
    }
}

fn script_help(ctx: &mut Ctx, _args: &Args) {
    tern_runtime::ctx::reply_help(
        ctx,
        "SCRIPT",
        &[
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
}
