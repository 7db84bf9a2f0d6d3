//! MODULE: tern has no loaded modules and cannot load Redis modules (shared objects written
//! against Redis's C module API), so LIST answers an empty list and LOAD/LOADEX/UNLOAD fail
//! with the errors Redis gives when loading or unloading fails, after logging why. The commands
//! are `protected` as in Redis (`enable-module-command`, default no).

use crate::args::Args;
use crate::ctx::Ctx;
use crate::table::{acl, flags as f, CommandSpec};

const LOAD_FAILED: &str = "ERR Error loading the extension. Please check the server logs.";

fn help(ctx: &mut Ctx, _args: &Args) {
    crate::ctx::reply_help(
        ctx,
        "MODULE",
        &[
            "LIST",
            "    Return a list of loaded modules.",
            "LOAD <path> [<arg> ...]",
            "    Load a module library from <path>, passing to it any optional arguments.",
            "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
            "    Load a module library from <path>, while passing it module configurations and optional arguments.",
            "UNLOAD <name>",
            "    Unload a module.",
        ],
    );
}

fn list(ctx: &mut Ctx, _args: &Args) {
    ctx.out.array(0);
}

fn load(ctx: &mut Ctx, args: &Args) {
    let path = String::from_utf8_lossy(&args[2]);
    crate::log::warning(&format!(
        "Module {path} failed to load: tern cannot load Redis modules"
    ));
    ctx.error(LOAD_FAILED);
}

fn unload(ctx: &mut Ctx, args: &Args) {
    let name = String::from_utf8_lossy(&args[2]);
    crate::log::warning(&format!(
        "Error unloading module {name}: no such module with that name"
    ));
    ctx.error("ERR Error unloading module: no such module with that name");
}

const ADMIN_ACL: u64 = acl::SLOW | acl::ADMIN | acl::DANGEROUS;
const LOADING: u32 = f::NO_ASYNC_LOADING | f::ADMIN | f::NOSCRIPT | f::PROTECTED;

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "module",
    arity: -2,
    group: "server",
    since: "4.0.0",
    complexity: "Depends on subcommand.",
    summary: "A container for module commands.",
    subcommands: &[
        CommandSpec::subcommand(
            "help",
            2,
            f::LOADING | f::STALE,
            acl::SLOW,
            "server",
            help,
            "5.0.0",
            "O(1)",
            "Returns helpful text about the different subcommands.",
        ),
        CommandSpec {
            tips: &["nondeterministic_output_order"],
            ..CommandSpec::subcommand(
                "list",
                2,
                f::ADMIN | f::NOSCRIPT,
                ADMIN_ACL,
                "server",
                list,
                "4.0.0",
                "O(N) where N is the number of loaded modules.",
                "Returns all loaded modules.",
            )
        },
        CommandSpec::subcommand(
            "load",
            -3,
            LOADING,
            ADMIN_ACL,
            "server",
            load,
            "4.0.0",
            "O(1)",
            "Loads a module.",
        ),
        CommandSpec::subcommand(
            "loadex",
            -3,
            LOADING,
            ADMIN_ACL,
            "server",
            load,
            "7.0.0",
            "O(1)",
            "Loads a module using extended parameters.",
        ),
        CommandSpec::subcommand(
            "unload",
            3,
            LOADING,
            ADMIN_ACL,
            "server",
            unload,
            "4.0.0",
            "O(1)",
            "Unloads a module.",
        ),
    ],
    ..CommandSpec::DEFAULT
}];
