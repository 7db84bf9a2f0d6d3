//! CLUSTER, ASKING, READONLY and READWRITE as a Redis 7.2 server with `cluster-enabled no`
//! answers them: every one is refused with "cluster support disabled". They are in the command
//! table so COMMAND, ACL categories and the script/MULTI flag checks (CLUSTER RESET is
//! `noscript`) see them as Redis does; cluster mode itself is a later piece of work.

use crate::args::Args;
use crate::ctx::Ctx;
use crate::table::{acl, flags as f, CommandSpec};

const DISABLED: &str = "ERR This instance has cluster support disabled";

fn disabled(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

#[allow(clippy::too_many_arguments)]
const fn sub(
    name: &'static str,
    arity: i32,
    flags: u32,
    acl: u64,
    since: &'static str,
    complexity: &'static str,
    summary: &'static str,
    tips: &'static [&'static str],
) -> CommandSpec {
    CommandSpec {
        tips,
        ..CommandSpec::subcommand(
            name, arity, flags, acl, "cluster", disabled, since, complexity, summary,
        )
    }
}

/// A connection-level cluster command (ASKING, READONLY, READWRITE).
const fn conn(name: &'static str, flags: u32, summary: &'static str) -> CommandSpec {
    CommandSpec {
        name,
        arity: 1,
        flags,
        acl: acl::FAST | acl::CONNECTION,
        handler: Some(disabled),
        group: "cluster",
        since: "3.0.0",
        summary,
        ..CommandSpec::DEFAULT
    }
}

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "cluster",
        arity: -2,
        group: "cluster",
        since: "3.0.0",
        complexity: "Depends on subcommand.",
        summary: "A container for Redis Cluster commands.",
        subcommands: &[
            sub("addslots", -3, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(N) where N is the total number of hash slot arguments", "Assigns new hash slots to a node.", &[]),
            sub("addslotsrange", -4, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "7.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments.", "Assigns new hash slot ranges to a node.", &[]),
            sub("bumpepoch", 2, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Advances the cluster config epoch.", &["nondeterministic_output"]),
            sub("count-failure-reports", 3, f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(N) where N is the number of failure reports", "Returns the number of active failure reports active for a node.", &["nondeterministic_output"]),
            sub("countkeysinslot", 3, f::STALE, acl::SLOW, "3.0.0", "O(1)", "Returns the number of keys in a hash slot.", &[]),
            sub("delslots", -3, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(N) where N is the total number of hash slot arguments", "Sets hash slots as unbound for a node.", &[]),
            sub("delslotsrange", -4, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "7.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments.", "Sets hash slot ranges as unbound for a node.", &[]),
            sub("failover", -2, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Forces a replica to perform a manual failover of its master.", &[]),
            sub("flushslots", 2, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Deletes all slots information from a node.", &[]),
            sub("forget", 3, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Removes a node from the nodes table.", &[]),
            sub("getkeysinslot", 4, f::STALE, acl::SLOW, "3.0.0", "O(N) where N is the number of requested keys", "Returns the key names in a hash slot.", &["nondeterministic_output"]),
            sub("help", 2, f::LOADING | f::STALE, acl::SLOW, "5.0.0", "O(1)", "Returns helpful text about the different subcommands.", &[]),
            sub("info", 2, f::STALE, acl::SLOW, "3.0.0", "O(1)", "Returns information about the state of a node.", &["nondeterministic_output"]),
            sub("keyslot", 3, f::STALE, acl::SLOW, "3.0.0", "O(N) where N is the number of bytes in the key", "Returns the hash slot for a key.", &[]),
            sub("links", 2, f::STALE, acl::SLOW, "7.0.0", "O(N) where N is the total number of Cluster nodes", "Returns a list of all TCP links to and from peer nodes.", &["nondeterministic_output"]),
            sub("meet", -4, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Forces a node to handshake with another node.", &[]),
            sub("myid", 2, f::STALE, acl::SLOW, "3.0.0", "O(1)", "Returns the ID of a node.", &[]),
            sub("myshardid", 2, f::STALE, acl::SLOW, "7.2.0", "O(1)", "Returns the shard ID of a node.", &["nondeterministic_output"]),
            sub("nodes", 2, f::STALE, acl::SLOW, "3.0.0", "O(N) where N is the total number of Cluster nodes", "Returns the cluster configuration for a node.", &["nondeterministic_output"]),
            sub("replicas", 3, f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "5.0.0", "O(N) where N is the number of replicas.", "Lists the replica nodes of a master node.", &["nondeterministic_output"]),
            sub("replicate", 3, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Configure a node as replica of a master node.", &[]),
            sub("reset", -2, f::ADMIN | f::STALE | f::NOSCRIPT, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", "Resets a node.", &[]),
            sub("saveconfig", 2, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Forces a node to save the cluster configuration to disk.", &[]),
            sub("set-config-epoch", 3, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Sets the configuration epoch for a new node.", &[]),
            sub("setslot", -4, f::NO_ASYNC_LOADING | f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(1)", "Binds a hash slot to a node.", &[]),
            sub("shards", 2, f::LOADING | f::STALE, acl::SLOW, "7.0.0", "O(N) where N is the total number of cluster nodes", "Returns the mapping of cluster slots to shards.", &["nondeterministic_output"]),
            sub("slaves", 3, f::ADMIN | f::STALE, acl::SLOW | acl::ADMIN | acl::DANGEROUS, "3.0.0", "O(N) where N is the number of replicas.", "Lists the replica nodes of a master node.", &["nondeterministic_output"]),
            sub("slots", 2, f::LOADING | f::STALE, acl::SLOW, "3.0.0", "O(N) where N is the total number of Cluster nodes", "Returns the mapping of cluster slots to nodes.", &["nondeterministic_output"]),
        ],
        ..CommandSpec::DEFAULT
    },
    conn(
        "asking",
        f::FAST,
        "Signals that a cluster client is following an -ASK redirect.",
    ),
    conn(
        "readonly",
        f::FAST | f::LOADING | f::STALE,
        "Enables read-only queries for a connection to a Redis Cluster replica node.",
    ),
    conn(
        "readwrite",
        f::FAST | f::LOADING | f::STALE,
        "Enables read-write queries for a connection to a Reids Cluster replica node.",
    ),
];
