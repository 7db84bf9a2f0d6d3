//! Pub/Sub commands: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB SSUBSCRIBE
//! SUNSUBSCRIBE SPUBLISH. The registry and delivery are the runtime's (`tern_runtime::subscriptions`).

use tern_runtime::args::Args;
use tern_runtime::ctx::Ctx;
use tern_runtime::subscriptions::{
    subscribe as subscribe_generic, unsubscribe as unsubscribe_generic, Kind,
};
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "pubsub";
    ("subscribe", -2, [PUBSUB NOSCRIPT LOADING STALE SENTINEL], [], [], subscribe, "2.0.0",
        "Listens for messages published to channels.",
        complexity: "O(N) where N is the number of channels to subscribe to."),
    ("unsubscribe", -1, [PUBSUB NOSCRIPT LOADING STALE SENTINEL], [], [], unsubscribe, "2.0.0",
        "Stops listening to messages posted to channels.",
        complexity: "O(N) where N is the number of channels to unsubscribe."),
    ("psubscribe", -2, [PUBSUB NOSCRIPT LOADING STALE SENTINEL], [], [], psubscribe, "2.0.0",
        "Listens for messages published to channels that match one or more patterns.",
        complexity: "O(N) where N is the number of patterns to subscribe to."),
    ("punsubscribe", -1, [PUBSUB NOSCRIPT LOADING STALE SENTINEL], [], [], punsubscribe, "2.0.0",
        "Stops listening to messages published to channels that match one or more patterns.",
        complexity: "O(N) where N is the number of patterns to unsubscribe."),
    ("publish", 3, [PUBSUB LOADING STALE FAST MAY_REPLICATE SENTINEL], [], [], publish, "2.0.0",
        "Posts a message to a channel.",
        complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client)."),
    ("pubsub", -2, [], [], [], _, "2.8.0", "A container for Pub/Sub commands.",
        complexity: "Depends on subcommand.", subcommands: PUBSUB_SUBCOMMANDS),
    ("ssubscribe", -2, [PUBSUB NOSCRIPT LOADING STALE], [], [range(1, -1, 1, NOT_KEY)], ssubscribe,
        "7.0.0", "Listens for messages published to shard channels.",
        complexity: "O(N) where N is the number of shard channels to subscribe to."),
    ("sunsubscribe", -1, [PUBSUB NOSCRIPT LOADING STALE], [], [range(1, -1, 1, NOT_KEY)],
        sunsubscribe, "7.0.0", "Stops listening to messages posted to shard channels.",
        complexity: "O(N) where N is the number of shard channels to unsubscribe."),
    ("spublish", 3, [PUBSUB LOADING STALE FAST MAY_REPLICATE], [], [key(1, NOT_KEY)], spublish,
        "7.0.0", "Post a message to a shard channel",
        complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel."),
};

static PUBSUB_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "pubsub";
    ("channels", -2, [PUBSUB LOADING STALE], [], [], pubsub_channels, "2.8.0",
        "Returns the active channels.",
        complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)"),
    ("numsub", -2, [PUBSUB LOADING STALE], [], [], pubsub_numsub, "2.8.0",
        "Returns a count of subscribers to channels.",
        complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels"),
    ("numpat", 2, [PUBSUB LOADING STALE], [], [], pubsub_numpat, "2.8.0",
        "Returns a count of unique pattern subscriptions."),
    ("shardchannels", -2, [PUBSUB LOADING STALE], [], [], pubsub_shardchannels, "7.0.0",
        "Returns the active shard channels.",
        complexity: "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels)."),
    ("shardnumsub", -2, [PUBSUB LOADING STALE], [], [], pubsub_shardnumsub, "7.0.0",
        "Returns the count of subscribers of shard channels.",
        complexity: "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels"),
    ("help", 2, [LOADING STALE], [], [], pubsub_help, "6.2.0",
        "Returns helpful text about the different subcommands."),
};

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
    publish_and_propagate(ctx, args, false);
}

fn spublish(ctx: &mut Ctx, args: &Args) {
    publish_and_propagate(ctx, args, true);
}

/// Deliver to this node's subscribers, then to the replicas (or, in cluster mode, to the
/// other nodes over the cluster bus); the reply counts the local receivers, as Redis's.
fn publish_and_propagate(ctx: &mut Ctx, args: &Args, shard: bool) {
    let n = ctx.srv.pubsub.publish(ctx.srv, shard, &args[1], &args[2]);
    match ctx.srv.cluster.get() {
        Some(cluster) => cluster.publish(&args[1], &args[2], shard),
        None => tern_runtime::propagate::propagate_publish(ctx.srv, ctx.conn.db, args),
    }
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
    tern_runtime::ctx::reply_help(
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
