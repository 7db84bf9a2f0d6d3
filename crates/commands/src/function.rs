//! Redis 7 functions. Libraries arrive with scripting (a later issue); until then the library
//! set is always empty, so FUNCTION FLUSH has nothing to remove and LIST/STATS report nothing.

use crate::args::{eq_ic, Args};
use crate::ctx::Ctx;
use crate::table::{acl, flags as f, CommandSpec};

pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "function",
    arity: -2,
    group: "scripting",
    since: "7.0.0",
    summary: "A container for function commands.",
    subcommands: &[CommandSpec {
        name: "flush",
        arity: -2,
        flags: f::WRITE | f::NOSCRIPT,
        acl: acl::WRITE | acl::SLOW | acl::SCRIPTING,
        handler: Some(flush),
        group: "scripting",
        since: "7.0.0",
        complexity: "O(N) where N is the number of functions deleted",
        summary: "Deletes all library and functions.",
        ..CommandSpec::DEFAULT
    }],
    ..CommandSpec::DEFAULT
}];

fn flush(ctx: &mut Ctx, args: &Args) {
    if args.len() > 3 || (args.len() == 3 && !eq_ic(&args[2], "ASYNC") && !eq_ic(&args[2], "SYNC"))
    {
        return ctx.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    ctx.out.ok();
}
