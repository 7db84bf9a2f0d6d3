//! MODULE: tern has no loaded modules and cannot load Redis modules (shared objects written
//! against Redis's C module API), so LIST answers an empty list and LOAD/LOADEX/UNLOAD fail
//! with the errors Redis gives when loading or unloading fails, after logging why. The commands
//! are `protected` as in Redis (`enable-module-command`, default no).

use tern_runtime::args::Args;
use tern_runtime::ctx::Ctx;
use tern_runtime::table::CommandSpec;

const LOAD_FAILED: &str = "ERR Error loading the extension. Please check the server logs.";

fn help(ctx: &mut Ctx, _args: &Args) {
    tern_runtime::ctx::reply_help(
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
    tern_runtime::log::warning(&format!(
        "Module {path} failed to load: tern cannot load Redis modules"
    ));
    ctx.error(LOAD_FAILED);
}

fn unload(ctx: &mut Ctx, args: &Args) {
    let name = String::from_utf8_lossy(&args[2]);
    tern_runtime::log::warning(&format!(
        "Error unloading module {name}: no such module with that name"
    ));
    ctx.error("ERR Error unloading module: no such module with that name");
}

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("module", -2, [], [], [], _, "4.0.0", "A container for module commands.",
        complexity: "Depends on subcommand.", subcommands: MODULE_SUBCOMMANDS),
};

static MODULE_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("help", 2, [LOADING STALE], [], [], help, "5.0.0",
        "Returns helpful text about the different subcommands."),
    ("list", 2, [ADMIN NOSCRIPT], [], [], list, "4.0.0", "Returns all loaded modules.",
        complexity: "O(N) where N is the number of loaded modules.",
        tips: &["nondeterministic_output_order"]),
    ("load", -3, [ADMIN NOSCRIPT PROTECTED NO_ASYNC_LOADING], [], [], load, "4.0.0",
        "Loads a module."),
    ("loadex", -3, [ADMIN NOSCRIPT PROTECTED NO_ASYNC_LOADING], [], [], load, "7.0.0",
        "Loads a module using extended parameters."),
    ("unload", 3, [ADMIN NOSCRIPT PROTECTED NO_ASYNC_LOADING], [], [], unload, "4.0.0",
        "Unloads a module."),
};
