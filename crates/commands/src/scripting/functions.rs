//! Redis 7 functions: FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/STATS/KILL/HELP, FCALL and
//! FCALL_RO. The library set and the threads' function Lua states are the runtime's
//! (`tern_runtime::lua::libraries`).
//!
//! FUNCTION DUMP produces Redis's payload (one RDB_OPCODE_FUNCTION2 string per library, the
//! RDB version, a CRC64), and FUNCTION RESTORE reads Redis's (LZF-compressed strings too).

use tern_runtime::args::{eq_ic, Args};
use tern_runtime::ctx::Ctx;
use tern_runtime::lua::libraries::{self, Library, RestorePolicy};
use tern_runtime::lua::{self, sflags};
use tern_runtime::table::CommandSpec;

/// FUNCTION LOAD's time limit for a library's top-level code.
const LOAD_TIMEOUT_MS: u64 = 500;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "scripting";
    ("fcall", -3, [NOSCRIPT STALE SKIP_MONITOR MAY_REPLICATE NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RW ACCESS UPDATE)], fcall, "7.0.0", "Invokes a function.",
        complexity: "Depends on the function that is executed."),
    ("fcall_ro", -3, [READONLY NOSCRIPT STALE SKIP_MONITOR NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RO ACCESS)], fcall_ro, "7.0.0",
        "Invokes a read-only function.", complexity: "Depends on the function that is executed."),
    ("function", -2, [], [], [], _, "7.0.0", "A container for function commands.",
        complexity: "Depends on subcommand.", subcommands: FUNCTION_SUBCOMMANDS),
};

static FUNCTION_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "scripting";
    ("delete", 3, [WRITE NOSCRIPT], [SCRIPTING], [], delete, "7.0.0",
        "Deletes a library and its functions.",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("dump", 2, [NOSCRIPT], [SCRIPTING], [], dump, "7.0.0",
        "Dumps all libraries into a serialized binary payload.",
        complexity: "O(N) where N is the number of functions"),
    ("flush", -2, [WRITE NOSCRIPT], [SCRIPTING], [], flush, "7.0.0",
        "Deletes all libraries and functions.",
        complexity: "O(N) where N is the number of functions deleted",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("help", 2, [LOADING STALE], [SCRIPTING], [], help, "7.0.0",
        "Returns helpful text about the different subcommands."),
    ("kill", 2, [NOSCRIPT ALLOW_BUSY], [SCRIPTING], [], kill, "7.0.0",
        "Terminates a function during execution.",
        tips: &["request_policy:all_shards", "response_policy:one_succeeded"]),
    ("list", -2, [NOSCRIPT], [SCRIPTING], [], list, "7.0.0",
        "Returns information about all libraries.",
        complexity: "O(N) where N is the number of functions",
        tips: &["nondeterministic_output_order"]),
    ("load", -3, [WRITE DENYOOM NOSCRIPT], [SCRIPTING], [], load, "7.0.0", "Creates a library.",
        complexity: "O(1) (considering compilation time is redundant)",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("restore", -3, [WRITE DENYOOM NOSCRIPT], [SCRIPTING], [], restore, "7.0.0",
        "Restores all libraries from a payload.",
        complexity: "O(N) where N is the number of functions on the payload",
        tips: &["request_policy:all_shards", "response_policy:all_succeeded"]),
    ("stats", 2, [NOSCRIPT ALLOW_BUSY], [SCRIPTING], [], stats, "7.0.0",
        "Returns information about a function during execution.",
        tips: &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"]),
};

// ---------------------------------------------------------------------------------------------
// Commands

fn fcall(ctx: &mut Ctx, args: &Args) {
    fcall_generic(ctx, args, false)
}
fn fcall_ro(ctx: &mut Ctx, args: &Args) {
    fcall_generic(ctx, args, true)
}

fn fcall_generic(ctx: &mut Ctx, args: &Args, ro: bool) {
    // Function names are case-insensitive for FCALL, as Redis's function dict.
    let Some((name, fl, history)) = libraries::function(ctx.srv, &args[1]) else {
        return ctx.error("ERR Function not found");
    };
    let Some(nk) =
        tern_runtime::lua::scripts::numkeys(ctx, args, "ERR Bad number of keys provided")
    else {
        return;
    };
    if !tern_runtime::lua::scripts::check_flags(ctx, fl, ro) {
        return;
    }
    if history.offload(ctx) {
        return;
    }
    let read_only = ro || fl & sflags::NO_WRITES != 0;
    let r = libraries::with_functions(ctx.srv, |vm| -> Result<(), String> {
        let Some(&cb) = vm.compiled.get(&name) else {
            return Err("ERR Function not found".into());
        };
        let spec = lua::Run {
            is_eval: false,
            name: &name,
            read_only,
            allow_oom: fl & sflags::ALLOW_OOM != 0,
            allow_cross_slot: fl & sflags::ALLOW_CROSS_SLOT != 0,
            command: args,
            nkeys: nk,
        };
        lua::run_atomic(ctx, vm, &cb, spec, &history);
        Ok(())
    });
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) | Err(e) => ctx.error(&e),
    }
}

fn load(ctx: &mut Ctx, args: &Args) {
    let mut replace = false;
    let mut i = 2;
    while i < args.len() - 1 {
        if eq_ic(&args[i], "replace") {
            replace = true;
            i += 1;
            continue;
        }
        return ctx.error(&format!("ERR Unknown option given: {}", args.str(i)));
    }
    if i >= args.len() {
        return ctx.error("ERR Function code is missing");
    }
    let name = match libraries::load(ctx.srv, &args[i], replace, LOAD_TIMEOUT_MS) {
        Ok(name) => name,
        Err(e) => return ctx.error(&e),
    };
    ctx.dirty(1);
    ctx.out.bulk(name.as_bytes());
}

fn delete(ctx: &mut Ctx, args: &Args) {
    if !libraries::delete(ctx.srv, &args.str(2)) {
        return ctx.error("ERR Library not found");
    }
    ctx.dirty(1);
    ctx.out.ok();
}

fn syntax_error(ctx: &mut Ctx, args: &Args) {
    ctx.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
        args.str(1).chars().take(128).collect::<String>()
    ));
}

fn flush(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 {
        return syntax_error(ctx, args);
    }
    if args.len() == 3 && !eq_ic(&args[2], "ASYNC") && !eq_ic(&args[2], "SYNC") {
        return ctx.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    libraries::clear_libraries(ctx.srv);
    ctx.dirty(1);
    ctx.out.ok();
}

fn kill(ctx: &mut Ctx, _args: &Args) {
    match lua::kill(ctx.srv, false) {
        Ok(()) => ctx.out.ok(),
        Err(e) => ctx.error(e),
    }
}

fn list(ctx: &mut Ctx, args: &Args) {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        if !with_code && eq_ic(&args[i], "withcode") {
            with_code = true;
        } else if pattern.is_none() && eq_ic(&args[i], "libraryname") {
            if i >= args.len() - 1 {
                return ctx.error("ERR library name argument was not given");
            }
            i += 1;
            pattern = Some(&args[i]);
        } else {
            return ctx.error(&format!("ERR Unknown argument {}", args.str(i)));
        }
        i += 1;
    }
    let all = libraries::libraries(ctx.srv);
    let libs: Vec<&Library> = all
        .iter()
        .filter(|lib| {
            pattern.is_none_or(|p| tern_runtime::glob::matches(p, lib.name.as_bytes(), true))
        })
        .collect();
    let out = &mut *ctx.out;
    out.array(libs.len());
    for lib in libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(lib.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for fm in &lib.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(fm.name.as_bytes());
            out.bulk(b"description");
            out.opt_bulk(fm.description.as_deref());
            out.bulk(b"flags");
            let names: Vec<&str> = sflags::NAMES
                .iter()
                .filter(|(b, _)| fm.flags & b != 0)
                .map(|(_, n)| *n)
                .collect();
            out.set(names.len());
            for n in names {
                out.simple(n.as_bytes());
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&lib.code);
        }
    }
}

fn stats(ctx: &mut Ctx, _args: &Args) {
    let running = match lua::running_function(ctx.srv) {
        Ok(r) => r,
        Err(e) => return ctx.error(e),
    };
    let (nlib, nfunc) = libraries::counts(ctx.srv);
    let out = &mut *ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    match running {
        None => out.null(),
        Some(r) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(r.name.as_bytes());
            out.bulk(b"command");
            out.array(r.command.len());
            for a in &r.command {
                out.bulk(a);
            }
            out.bulk(b"duration_ms");
            out.int(r.start.elapsed().as_millis() as i64);
        }
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(nlib as i64);
    out.bulk(b"functions_count");
    out.int(nfunc as i64);
}

fn help(ctx: &mut Ctx, _args: &Args) {
    tern_runtime::ctx::reply_help(
        ctx,
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// DUMP / RESTORE payloads (Redis's format)

use tern_persist::rdb::{
    OP_FUNCTION2 as OPCODE_FUNCTION2, OP_FUNCTION_PRE_GA as OPCODE_FUNCTION_PRE_GA, RDB_MAX_VERSION,
};

/// The RDB version in a FUNCTION DUMP payload: Redis 7.2's, which it restores.
const FUNCTION_DUMP_VERSION: u16 = 11;

use tern_persist::crc64::crc64;
use tern_persist::rdb::encode::put_len;
use tern_persist::rdb::Reader;

fn dump(ctx: &mut Ctx, _args: &Args) {
    let mut p = Vec::new();
    for code in libraries::library_codes(ctx.srv) {
        p.push(OPCODE_FUNCTION2);
        put_len(&mut p, code.len() as u64);
        p.extend_from_slice(&code);
    }
    p.extend_from_slice(&FUNCTION_DUMP_VERSION.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    ctx.out.bulk(&p);
}

fn restore(ctx: &mut Ctx, args: &Args) {
    if args.len() > 4 {
        return syntax_error(ctx, args);
    }
    let policy = if args.len() == 4 {
        let p = &args[3];
        if eq_ic(p, "append") {
            RestorePolicy::Append
        } else if eq_ic(p, "replace") {
            RestorePolicy::Replace
        } else if eq_ic(p, "flush") {
            RestorePolicy::Flush
        } else {
            return ctx.error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
        }
    } else {
        RestorePolicy::Append
    };
    let data = &args[2];
    let n = data.len();
    let ok = n >= 10 && {
        let ver = u16::from_le_bytes([data[n - 10], data[n - 9]]);
        let crc = u64::from_le_bytes(data[n - 8..].try_into().unwrap_or([0; 8]));
        ver <= RDB_MAX_VERSION && crc64(&data[..n - 8]) == crc
    };
    if !ok {
        return ctx.error("ERR DUMP payload version or checksum are wrong");
    }
    let mut r = Reader::new(&data[..n - 10]);
    let mut codes = Vec::new();
    while !r.at_end() {
        match r.byte() {
            Ok(OPCODE_FUNCTION2) => match r.string() {
                Ok(code) => codes.push(code),
                Err(_) => return ctx.error("ERR failed loading the given functions payload"),
            },
            Ok(OPCODE_FUNCTION_PRE_GA) => {
                return ctx.error("ERR Pre-GA function format not supported")
            }
            Ok(_) => return ctx.error("ERR given type is not a function"),
            Err(_) => return ctx.error("ERR can not read data type"),
        }
    }
    if let Err(e) = libraries::restore_libraries(ctx.srv, &codes, policy) {
        return ctx.error(&e);
    }
    ctx.dirty(1);
    ctx.out.ok();
}
