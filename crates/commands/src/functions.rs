//! Redis 7 functions: FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/STATS/KILL/HELP, FCALL and
//! FCALL_RO. The set of libraries (their code and what they registered) is process-wide; each
//! worker thread runs the libraries' code in its own function Lua state the first time it
//! needs them after a change, so FCALLs on different threads run at the same time.
//!
//! FUNCTION DUMP produces Redis's payload (one RDB_OPCODE_FUNCTION2 string per library, the
//! RDB version, a CRC64), and FUNCTION RESTORE reads Redis's (LZF-compressed strings too).

use crate::args::{eq_ic, Args};
use crate::ctx::Ctx;
use crate::lua::{self, sflags, NewFunction};
use crate::table::CommandSpec;
use parking_lot::RwLock;
use std::sync::{Arc, LazyLock};

/// FUNCTION LOAD's time limit for a library's top-level code.
const LOAD_TIMEOUT_MS: u64 = 500;

pub static COMMANDS: &[CommandSpec] = crate::table::commands! { group "scripting";
    ("fcall", -3, [NOSCRIPT STALE SKIP_MONITOR MAY_REPLICATE NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RW ACCESS UPDATE)], fcall, "7.0.0", "Invokes a function.",
        complexity: "Depends on the function that is executed."),
    ("fcall_ro", -3, [READONLY NOSCRIPT STALE SKIP_MONITOR NO_MANDATORY_KEYS SCRIPT_CALLER],
        [SCRIPTING], [keynum(2, 0, 1, 1, RO ACCESS)], fcall_ro, "7.0.0",
        "Invokes a read-only function.", complexity: "Depends on the function that is executed."),
    ("function", -2, [], [], [], _, "7.0.0", "A container for function commands.",
        complexity: "Depends on subcommand.", subcommands: FUNCTION_SUBCOMMANDS),
};

static FUNCTION_SUBCOMMANDS: &[CommandSpec] = crate::table::commands! { group "scripting";
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
// The library set

#[derive(Clone)]
pub struct FuncMeta {
    pub name: String,
    pub description: Option<Vec<u8>>,
    pub flags: u32,
    /// Slow last time: run on a script thread (shared by the library's clones).
    pub history: Arc<lua::RunHistory>,
}

#[derive(Clone)]
pub struct Library {
    pub name: String,
    /// The code as loaded, shebang included.
    pub code: Vec<u8>,
    pub functions: Vec<FuncMeta>,
}

#[derive(Default, Clone)]
struct Libs {
    libs: Vec<Library>,
    /// Bumped on every change; thread VMs built for an older one are rebuilt.
    gen: u64,
}

impl Libs {
    fn lib(&self, name: &str) -> Option<&Library> {
        self.libs.iter().find(|l| l.name == name)
    }

    fn function(&self, name: &[u8]) -> Option<(&Library, &FuncMeta)> {
        self.libs.iter().find_map(|l| {
            l.functions
                .iter()
                .find(|f| f.name.as_bytes().eq_ignore_ascii_case(name))
                .map(|f| (l, f))
        })
    }

    fn function_count(&self) -> usize {
        self.libs.iter().map(|l| l.functions.len()).sum()
    }

    /// Add `new` libraries; with `replace` a library of the same name goes, otherwise that is
    /// an error, as is a function name another library has.
    fn join(&mut self, new: Vec<Library>, replace: bool) -> Result<(), String> {
        let mut next = self.clone();
        for l in &new {
            if next.lib(&l.name).is_some() {
                if !replace {
                    return Err(format!("ERR Library {} already exists", l.name));
                }
                next.libs.retain(|o| o.name != l.name);
            }
        }
        for l in &new {
            for f in &l.functions {
                if next.function(f.name.as_bytes()).is_some() {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
            }
            next.libs.push(l.clone());
        }
        next.gen += 1;
        *self = next;
        Ok(())
    }
}

static LIBS: LazyLock<RwLock<Libs>> = LazyLock::new(Default::default);

/// (libraries, functions) for INFO and FUNCTION STATS.
pub fn counts() -> (usize, usize) {
    let l = LIBS.read();
    (l.libs.len(), l.function_count())
}

/// The library set's generation (every change bumps it).
pub fn generation() -> u64 {
    LIBS.read().gen
}

/// Bytes the library set keeps outside the Lua states (code, names, descriptions).
pub fn memory_overhead() -> u64 {
    let l = LIBS.read();
    l.libs
        .iter()
        .map(|lib| {
            lib.code.len()
                + lib.name.len()
                + lib
                    .functions
                    .iter()
                    .map(|f| f.name.len() + f.description.as_ref().map_or(0, |d| d.len()) + 48)
                    .sum::<usize>()
                + 64
        })
        .sum::<usize>() as u64
}

/// Function and library names: letters, digits and underscores, at least one.
pub fn valid_name(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `#!<engine> name=<lib>`: (engine, name, code after the shebang line, newline kept).
fn metadata(code: &[u8]) -> Result<(Vec<u8>, String, &[u8]), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&c| c == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    if tern_resp::split_args(&code[..end], &mut buf, &mut ranges).is_err() || ranges.is_empty() {
        return Err("ERR Invalid library metadata".into());
    }
    let part = |i: usize| &buf[ranges[i].0..ranges[i].1];
    let engine = part(0)[2..].to_vec();
    let mut name = None;
    for i in 1..ranges.len() {
        let p = part(i);
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&p[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "ERR Invalid metadata value given: {}",
            String::from_utf8_lossy(p)
        ));
    }
    let name = name.ok_or("ERR Library name was not given")?;
    Ok((engine, name, &code[end..]))
}

/// Check a library's header and name; (name, code to compile).
fn check_library(code: &[u8]) -> Result<(String, &[u8]), String> {
    let (engine, name, body) = metadata(code)?;
    if !valid_name(name.as_bytes()) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(format!(
            "ERR Engine '{}' not found",
            String::from_utf8_lossy(&engine)
        ));
    }
    Ok((name, body))
}

/// Compile and run a library's code on `vm`: the functions it registers.
fn run_library(vm: &lua::Vm, body: &[u8], timeout_ms: u64) -> Result<Vec<NewFunction>, String> {
    let chunk = vm
        .compile(body, "@user_function")
        .map_err(|e| format!("ERR Error compiling function: {e}"))?;
    let fs = vm
        .load_library(&chunk, timeout_ms)
        .map_err(|e| format!("ERR {e}"))?;
    if fs.is_empty() {
        return Err("ERR No functions registered".into());
    }
    Ok(fs)
}

/// Build a library from its code on this thread's function VM (validating it).
fn build(vm: &lua::Vm, code: &[u8], timeout_ms: u64) -> Result<Library, String> {
    let (name, body) = check_library(code)?;
    let fs = run_library(vm, body, timeout_ms)?;
    Ok(Library {
        name,
        code: code.to_vec(),
        functions: fs
            .into_iter()
            .map(|f| FuncMeta {
                name: f.name,
                description: f.description,
                flags: f.flags,
                history: Default::default(),
            })
            .collect(),
    })
}

/// Load every library of `libs` into a fresh function VM.
fn fill(vm: &mut lua::Vm, libs: &[Library]) -> Result<(), String> {
    for l in libs {
        let (_, body) = check_library(&l.code)?;
        for f in run_library(vm, body, 0)? {
            let c = vm.keep(f.callback)?;
            vm.compiled.insert(f.name, c);
        }
    }
    Ok(())
}

/// Run `f` on this thread's function VM, built for the current library set.
fn with_functions<R>(f: impl FnOnce(&mut lua::Vm) -> R) -> Result<R, String> {
    let gen = LIBS.read().gen;
    // The libraries are copied only when this thread's VM is (re)built; one newer than `gen`
    // makes the VM be rebuilt once more on its next use, which is harmless.
    lua::with_vm(
        false,
        gen,
        |vm| {
            let libs = LIBS.read().libs.clone();
            fill(vm, &libs)
        },
        f,
    )
}

// ---------------------------------------------------------------------------------------------
// Commands

/// Is this FCALL/FCALL_RO refused while memory is over `maxmemory`?
pub fn fcall_denies_oom(args: &Args) -> bool {
    args.len() >= 2
        && LIBS
            .read()
            .function(&args[1])
            .is_some_and(|(_, f)| crate::scripting::flags_deny_oom(f.flags))
}

/// May this FCALL write (CLIENT PAUSE WRITE holds it)? Unless its function says `no-writes`.
pub fn fcall_may_write(args: &Args) -> bool {
    args.len() < 2
        || LIBS
            .read()
            .function(&args[1])
            .is_none_or(|(_, f)| f.flags & sflags::NO_WRITES == 0)
}

fn fcall(ctx: &mut Ctx, args: &Args) {
    fcall_generic(ctx, args, false)
}
fn fcall_ro(ctx: &mut Ctx, args: &Args) {
    fcall_generic(ctx, args, true)
}

fn fcall_generic(ctx: &mut Ctx, args: &Args, ro: bool) {
    // Function names are case-insensitive for FCALL, as Redis's function dict.
    let Some((name, fl, history)) = LIBS
        .read()
        .function(&args[1])
        .map(|(_, f)| (f.name.clone(), f.flags, f.history.clone()))
    else {
        return ctx.error("ERR Function not found");
    };
    let Some(nk) = crate::scripting::numkeys(ctx, args, "ERR Bad number of keys provided") else {
        return;
    };
    if !crate::scripting::check_flags(ctx, fl, ro) {
        return;
    }
    if history.offload(ctx) {
        return;
    }
    let read_only = ro || fl & sflags::NO_WRITES != 0;
    let r = with_functions(|vm| -> Result<(), String> {
        let Some(&cb) = vm.compiled.get(&name) else {
            return Err("ERR Function not found".into());
        };
        let spec = lua::Run {
            is_eval: false,
            name: &name,
            read_only,
            allow_oom: fl & sflags::ALLOW_OOM != 0,
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
    let code = &args[i];
    if let Ok((name, _)) = check_library(code) {
        if !replace && LIBS.read().lib(&name).is_some() {
            return ctx.error(&format!("ERR Library '{name}' already exists"));
        }
    }
    let built = with_functions(|vm| build(vm, code, LOAD_TIMEOUT_MS));
    let lib = match built {
        Ok(Ok(l)) => l,
        Ok(Err(e)) | Err(e) => return ctx.error(&e),
    };
    let name = lib.name.clone();
    let mut libs = LIBS.write();
    if !replace && libs.lib(&name).is_some() {
        return ctx.error(&format!("ERR Library '{name}' already exists"));
    }
    if let Err(e) = libs.join(vec![lib], true) {
        return ctx.error(&e);
    }
    drop(libs);
    ctx.dirty(1);
    ctx.out.bulk(name.as_bytes());
}

fn delete(ctx: &mut Ctx, args: &Args) {
    let name = args.str(2);
    let mut l = LIBS.write();
    if l.lib(&name).is_none() {
        return ctx.error("ERR Library not found");
    }
    l.libs.retain(|x| x.name != name);
    l.gen += 1;
    drop(l);
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
    clear_libraries();
    ctx.dirty(1);
    ctx.out.ok();
}

fn kill(ctx: &mut Ctx, _args: &Args) {
    match lua::kill(false) {
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
    let l = LIBS.read();
    let libs: Vec<&Library> = l
        .libs
        .iter()
        .filter(|lib| pattern.is_none_or(|p| crate::glob::matches(p, lib.name.as_bytes(), true)))
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
    let running = match lua::running_function() {
        Ok(r) => r,
        Err(e) => return ctx.error(e),
    };
    let (nlib, nfunc) = counts();
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
    crate::client_cmd::reply_help(
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
    OP_FUNCTION2 as OPCODE_FUNCTION2, OP_FUNCTION_PRE_GA as OPCODE_FUNCTION_PRE_GA,
    RDB_MAX_VERSION as RDB_VERSION,
};

use tern_persist::crc64::crc64;
use tern_persist::rdb::encode::put_len;
use tern_persist::rdb::Reader;

fn dump(ctx: &mut Ctx, _args: &Args) {
    let mut p = Vec::new();
    for lib in &LIBS.read().libs {
        p.push(OPCODE_FUNCTION2);
        put_len(&mut p, lib.code.len() as u64);
        p.extend_from_slice(&lib.code);
    }
    p.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&p);
    p.extend_from_slice(&crc.to_le_bytes());
    ctx.out.bulk(&p);
}

fn restore(ctx: &mut Ctx, args: &Args) {
    if args.len() > 4 {
        return syntax_error(ctx, args);
    }
    #[derive(PartialEq)]
    enum Policy {
        Append,
        Replace,
        Flush,
    }
    let policy = if args.len() == 4 {
        let p = &args[3];
        if eq_ic(p, "append") {
            Policy::Append
        } else if eq_ic(p, "replace") {
            Policy::Replace
        } else if eq_ic(p, "flush") {
            Policy::Flush
        } else {
            return ctx.error(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
        }
    } else {
        Policy::Append
    };
    let data = &args[2];
    let n = data.len();
    let ok = n >= 10 && {
        let ver = u16::from_le_bytes([data[n - 10], data[n - 9]]);
        let crc = u64::from_le_bytes(data[n - 8..].try_into().unwrap_or([0; 8]));
        ver <= RDB_VERSION && crc64(&data[..n - 8]) == crc
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
    let built = with_functions(|vm| -> Result<Vec<Library>, String> {
        let mut libs: Vec<Library> = Vec::new();
        for code in &codes {
            let lib = build(vm, code, 0)?;
            if libs.iter().any(|l| l.name == lib.name) {
                return Err(format!("ERR Library {} already exists", lib.name));
            }
            libs.push(lib);
        }
        Ok(libs)
    });
    let new = match built {
        Ok(Ok(l)) => l,
        Ok(Err(e)) | Err(e) => return ctx.error(&e),
    };
    {
        let mut l = LIBS.write();
        if policy == Policy::Flush {
            let mut fresh = Libs {
                libs: Vec::new(),
                gen: l.gen,
            };
            if let Err(e) = fresh.join(new, false) {
                return ctx.error(&e);
            }
            *l = fresh;
        } else if let Err(e) = l.join(new, policy == Policy::Replace) {
            return ctx.error(&e);
        }
    }
    ctx.dirty(1);
    ctx.out.ok();
}

/// The code of every loaded library (what an RDB file's FUNCTION2 records hold).
pub fn library_codes() -> Vec<Vec<u8>> {
    LIBS.read().libs.iter().map(|l| l.code.clone()).collect()
}

/// Add the libraries of a loaded dataset to the current ones; `replace` lets one replace a
/// library of the same name (otherwise that fails the load and nothing changes).
pub fn load_libraries(codes: &[Vec<u8>], replace: bool) -> Result<(), String> {
    let built = with_functions(|vm| -> Result<Vec<Library>, String> {
        let mut libs: Vec<Library> = Vec::new();
        for code in codes {
            let lib = build(vm, code, 0)?;
            if libs.iter().any(|l| l.name == lib.name) {
                return Err(format!("ERR Library {} already exists", lib.name));
            }
            libs.push(lib);
        }
        Ok(libs)
    });
    let new = match built {
        Ok(Ok(l)) => l,
        Ok(Err(e)) | Err(e) => return Err(e),
    };
    LIBS.write().join(new, replace)
}

/// Forget every library (FUNCTION FLUSH, and before a dataset is loaded in its place).
pub fn clear_libraries() {
    let mut l = LIBS.write();
    l.libs.clear();
    l.gen += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_errors() {
        assert!(metadata(b"return 1").is_err());
        assert_eq!(metadata(b"#!lua name=x\nbody").unwrap().1, "x");
        assert!(metadata(b"#!lua name=x foo=y\n").is_err());
    }
}
