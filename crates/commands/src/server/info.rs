//! INFO and TIME (the sections themselves are the runtime's: `tern_runtime::info_sections`).

use std::collections::HashSet;
use tern_runtime::args::Args;
use tern_runtime::ctx::Ctx;
use tern_runtime::info_sections::gen_info;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("info", -1, [LOADING STALE SENTINEL OBSERVES_CLIENTS], [DANGEROUS], [], info, "1.0.0",
        "Returns information and statistics about the server."),
    ("time", 1, [LOADING STALE FAST], [], [], time, "2.6.0", "Returns the server time."),
};

fn time(ctx: &mut Ctx, _args: &Args) {
    let us = tern_runtime::lua::script_time_us().unwrap_or_else(tern_engine::clock::now_us);
    ctx.out.array(2);
    ctx.out.bulk_int((us / 1_000_000) as i64);
    ctx.out.bulk_int((us % 1_000_000) as i64);
}

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "module_list",
    "errorstats",
    "cluster",
    "keyspace",
];

fn info(ctx: &mut Ctx, args: &Args) {
    let mut sections: HashSet<String> = HashSet::new();
    let mut all = false;
    let mut everything = false;
    if args.len() == 1 {
        sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
    }
    for a in args.iter().skip(1) {
        let s = String::from_utf8_lossy(a).to_ascii_lowercase();
        match s.as_str() {
            "default" => sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string())),
            "all" => all = true,
            "everything" => {
                all = true;
                everything = true;
            }
            _ => {
                sections.insert(s);
            }
        }
    }
    let text = gen_info(ctx.srv, &sections, all, everything);
    ctx.out.verbatim(text.as_bytes());
}
