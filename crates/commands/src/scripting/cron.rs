//! KEYDB.CRON, as KeyDB has it: `KEYDB.CRON name SINGLE|REPEAT [start-ms] delay-ms script
//! [numkeys key... arg...]` stores a job under `name` (a key of type `cron`: DEL cancels it,
//! it persists, replicates and moves with RENAME like any key). The job first runs at
//! `start + delay` (start defaults to now), then every `delay` ms for REPEAT; a SINGLE job's
//! key goes after its run. `tern_runtime::cron_jobs` runs the scripts, on masters only.

use tern_engine::{CronJob, PackedBox, Value};
use tern_runtime::args::{eq_ic, parse_i64, Args};
use tern_runtime::ctx::Ctx;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "scripting";
    ("keydb.cron", -5, [WRITE DENYOOM NOSCRIPT], [SCRIPTING], [key(1, OW UPDATE)], cron,
        "5.0.0",
        "Runs a Lua script once or repeatedly, stored as a key of type cron. A KeyDB command."),
};

/// The job described by the arguments, or the error to reply.
fn parse(args: &Args, now: u64) -> Result<CronJob, String> {
    let single = match &args[2] {
        m if eq_ic(m, "single") => true,
        m if eq_ic(m, "repeat") => false,
        _ => return Err("ERR syntax error".into()),
    };
    let first = parse_i64(&args[3]).ok_or("ERR missing expire time")?;
    // A second integer makes the first the start time (KeyDB's optional argument).
    let (start, interval, script_at) = match parse_i64(&args[4]) {
        Some(delay) if args.len() > 5 => (first, delay, 5),
        _ => (now as i64, first, 4),
    };
    if interval <= 0 {
        return Err("ERR interval must be positive".into());
    }
    let numkeys_at = script_at + 1;
    let numkeys = if args.len() > numkeys_at {
        match parse_i64(&args[numkeys_at]) {
            Some(n) if n < 0 => return Err("ERR Number of keys can't be negative".into()),
            Some(n) => n as usize,
            None => return Err("ERR value is not an integer or out of range".into()),
        }
    } else {
        0
    };
    let keys_at = numkeys_at + 1;
    if numkeys > args.len().saturating_sub(keys_at) {
        return Err("ERR Missing arguments or numkeys is too big".into());
    }
    let owned = |r: std::ops::Range<usize>| r.map(|i| Box::from(args.get(i))).collect();
    Ok(CronJob {
        script: args.get(script_at).into(),
        start_ms: start.max(0) as u64,
        interval_ms: interval as u64,
        keys: owned(keys_at..keys_at + numkeys),
        args: owned((keys_at + numkeys).min(args.len())..args.len()),
        single,
    })
}

fn cron(ctx: &mut Ctx, args: &Args) {
    let job = match parse(args, ctx.now_ms) {
        Ok(j) => j,
        Err(e) => return ctx.error(&e),
    };
    let key = &args[1];
    let argv = job.command(key);
    let now = ctx.now_ms;
    let (h, mut shard) = ctx.lock(key);
    tern_runtime::background::replace_value(
        ctx.srv,
        &mut shard,
        h,
        key,
        Value::Cron(PackedBox::new(job)),
        now,
    );
    drop(shard);
    ctx.dirty(1);
    ctx.out.ok();
    let refs: Vec<&[u8]> = argv.iter().map(|a| a.as_slice()).collect();
    ctx.propagate_as(&refs);
}
