//! Pub/Sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB SSUBSCRIBE
//! SUNSUBSCRIBE SPUBLISH. The registry and delivery are the runtime's (`crate::subscriptions`).

use crate::args::Args;
use crate::ctx::Ctx;
use crate::subscriptions::{
    subscribe as subscribe_generic, unsubscribe as unsubscribe_generic, Kind,
};
use crate::table::{flags as f, kflags, CommandSpec, KeySpec};

const PS_FLAGS: u32 = f::PUBSUB | f::NOSCRIPT | f::LOADING | f::STALE | f::SENTINEL;
const NOT_KEYS: &[KeySpec] = &[KeySpec::range(1, -1, 1, kflags::NOT_KEY)];

#[allow(clippy::too_many_arguments)]
const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: &'static [KeySpec],
    handler: crate::table::Handler,
    since: &'static str,
    complexity: &'static str,
    summary: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        handler: Some(handler),
        group: "pubsub",
        since,
        complexity,
        summary,
        ..CommandSpec::DEFAULT
    }
}

const fn sub(
    name: &'static str,
    arity: i32,
    flags: u32,
    handler: crate::table::Handler,
    since: &'static str,
    complexity: &'static str,
    summary: &'static str,
) -> CommandSpec {
    CommandSpec::subcommand(
        name, arity, flags, 0, "pubsub", handler, since, complexity, summary,
    )
}

const PSUB_FLAGS: u32 = f::PUBSUB | f::LOADING | f::STALE;

pub static COMMANDS: &[CommandSpec] = &[
    cmd(
        "subscribe",
        -2,
        PS_FLAGS,
        &[],
        subscribe,
        "2.0.0",
        "O(N) where N is the number of channels to subscribe to.",
        "Listens for messages published to channels.",
    ),
    cmd(
        "unsubscribe",
        -1,
        PS_FLAGS,
        &[],
        unsubscribe,
        "2.0.0",
        "O(N) where N is the number of channels to unsubscribe.",
        "Stops listening to messages posted to channels.",
    ),
    cmd(
        "psubscribe",
        -2,
        PS_FLAGS,
        &[],
        psubscribe,
        "2.0.0",
        "O(N) where N is the number of patterns to subscribe to.",
        "Listens for messages published to channels that match one or more patterns.",
    ),
    cmd(
        "punsubscribe",
        -1,
        PS_FLAGS,
        &[],
        punsubscribe,
        "2.0.0",
        "O(N) where N is the number of patterns to unsubscribe.",
        "Stops listening to messages published to channels that match one or more patterns.",
    ),
    cmd(
        "publish",
        3,
        f::PUBSUB | f::LOADING | f::STALE | f::FAST | f::MAY_REPLICATE | f::SENTINEL,
        &[],
        publish,
        "2.0.0",
        "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
        "Posts a message to a channel.",
    ),
    CommandSpec {
        name: "pubsub",
        arity: -2,
        flags: 0,
        group: "pubsub",
        since: "2.8.0",
        complexity: "Depends on subcommand.",
        summary: "A container for Pub/Sub commands.",
        subcommands: &[
            sub(
                "channels",
                -2,
                PSUB_FLAGS,
                pubsub_channels,
                "2.8.0",
                "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
                "Returns the active channels.",
            ),
            sub(
                "numsub",
                -2,
                PSUB_FLAGS,
                pubsub_numsub,
                "2.8.0",
                "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
                "Returns a count of subscribers to channels.",
            ),
            sub(
                "numpat",
                2,
                PSUB_FLAGS,
                pubsub_numpat,
                "2.8.0",
                "O(1)",
                "Returns a count of unique pattern subscriptions.",
            ),
            sub(
                "shardchannels",
                -2,
                PSUB_FLAGS,
                pubsub_shardchannels,
                "7.0.0",
                "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
                "Returns the active shard channels.",
            ),
            sub(
                "shardnumsub",
                -2,
                PSUB_FLAGS,
                pubsub_shardnumsub,
                "7.0.0",
                "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
                "Returns the count of subscribers of shard channels.",
            ),
            sub(
                "help",
                2,
                f::LOADING | f::STALE,
                pubsub_help,
                "6.2.0",
                "O(1)",
                "Returns helpful text about the different subcommands.",
            ),
        ],
        ..CommandSpec::DEFAULT
    },
    cmd(
        "ssubscribe",
        -2,
        f::PUBSUB | f::NOSCRIPT | f::LOADING | f::STALE,
        NOT_KEYS,
        ssubscribe,
        "7.0.0",
        "O(N) where N is the number of shard channels to subscribe to.",
        "Listens for messages published to shard channels.",
    ),
    cmd(
        "sunsubscribe",
        -1,
        f::PUBSUB | f::NOSCRIPT | f::LOADING | f::STALE,
        NOT_KEYS,
        sunsubscribe,
        "7.0.0",
        "O(N) where N is the number of shard channels to unsubscribe.",
        "Stops listening to messages posted to shard channels.",
    ),
    cmd(
        "spublish",
        3,
        f::PUBSUB | f::LOADING | f::STALE | f::FAST | f::MAY_REPLICATE,
        &[KeySpec::single(1, kflags::NOT_KEY)],
        spublish,
        "7.0.0",
        "O(N) where N is the number of clients subscribed to the receiving shard channel.",
        "Post a message to a shard channel",
    ),
];

fn subscribe(ctx: &mut Ctx, args: &Args) {
    subscribe_generic(ctx, args, Kind::Channel);
}

fn psubscribe(ctx: &mut Ctx, args: &Args) {
    subscribe_generic(ctx, args, Kind::Pattern);
}

fn ssubscribe(ctx: &mut Ctx, args: &Args) {
    subscribe_generic(ctx, args, Kind::Shard);
}

fn unsubscribe(ctx: &mut Ctx, args: &Args) {
    unsubscribe_generic(ctx, args, Kind::Channel);
}

fn punsubscribe(ctx: &mut Ctx, args: &Args) {
    unsubscribe_generic(ctx, args, Kind::Pattern);
}

fn sunsubscribe(ctx: &mut Ctx, args: &Args) {
    unsubscribe_generic(ctx, args, Kind::Shard);
}

fn publish(ctx: &mut Ctx, args: &Args) {
    let n = ctx.srv.pubsub.publish(ctx.srv, false, &args[1], &args[2]);
    crate::propagate::propagate_publish(ctx.conn.db, args);
    ctx.out.int(n as i64);
}

fn spublish(ctx: &mut Ctx, args: &Args) {
    let n = ctx.srv.pubsub.publish(ctx.srv, true, &args[1], &args[2]);
    crate::propagate::propagate_publish(ctx.conn.db, args);
    ctx.out.int(n as i64);
}

fn channel_list(ctx: &mut Ctx, args: &Args, kind: Kind) {
    if args.len() > 3 {
        syntax_error(ctx, args);
        return;
    }
    let pat = (args.len() == 3).then(|| &args[2]);
    let names = ctx.srv.pubsub.names(kind, pat);
    ctx.out.array(names.len());
    for n in &names {
        ctx.out.bulk(n);
    }
}

fn numsub(ctx: &mut Ctx, args: &Args, kind: Kind) {
    let counts = ctx.srv.pubsub.subscriber_counts(kind, args.iter().skip(2));
    ctx.out.array(counts.len() * 2);
    for (c, n) in args.iter().skip(2).zip(counts) {
        ctx.out.bulk(c);
        ctx.out.int(n as i64);
    }
}

fn pubsub_channels(ctx: &mut Ctx, args: &Args) {
    channel_list(ctx, args, Kind::Channel);
}

fn pubsub_shardchannels(ctx: &mut Ctx, args: &Args) {
    channel_list(ctx, args, Kind::Shard);
}

fn pubsub_numsub(ctx: &mut Ctx, args: &Args) {
    numsub(ctx, args, Kind::Channel);
}

fn pubsub_shardnumsub(ctx: &mut Ctx, args: &Args) {
    numsub(ctx, args, Kind::Shard);
}

fn pubsub_numpat(ctx: &mut Ctx, _args: &Args) {
    let n = ctx.srv.pubsub.pattern_count();
    ctx.out.int(n as i64);
}

/// Redis's addReplySubcommandSyntaxError.
fn syntax_error(ctx: &mut Ctx, args: &Args) {
    let sub: String = String::from_utf8_lossy(&args[1])
        .chars()
        .take(128)
        .collect();
    ctx.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try PUBSUB HELP."
    ));
}

fn pubsub_help(ctx: &mut Ctx, _args: &Args) {
    crate::ctx::reply_help(
        ctx,
        "PUBSUB",
        &[
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
        ],
    );
}
