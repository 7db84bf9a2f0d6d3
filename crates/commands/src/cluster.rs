//! CLUSTER, ASKING, READONLY and READWRITE as a Redis 7.2 server with `cluster-enabled no`
//! answers them: every one is refused with "cluster support disabled". They are in the command
//! table so COMMAND, ACL categories and the script/MULTI flag checks (CLUSTER RESET is
//! `noscript`) see them as Redis does; cluster mode itself is a later piece of work.

use tern_runtime::args::Args;
use tern_runtime::ctx::Ctx;
use tern_runtime::table::CommandSpec;

const DISABLED: &str = "ERR This instance has cluster support disabled";

fn disabled(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "cluster";
    ("cluster", -2, [], [], [], _, "3.0.0", "A container for Redis Cluster commands.",
        complexity: "Depends on subcommand.", subcommands: CLUSTER_SUBCOMMANDS),
    ("asking", 1, [FAST], [CONNECTION], [], disabled, "3.0.0",
        "Signals that a cluster client is following an -ASK redirect."),
    ("readonly", 1, [LOADING STALE FAST], [CONNECTION], [], disabled, "3.0.0",
        "Enables read-only queries for a connection to a Redis Cluster replica node."),
    ("readwrite", 1, [LOADING STALE FAST], [CONNECTION], [], disabled, "3.0.0",
        "Enables read-write queries for a connection to a Reids Cluster replica node."),
};

static CLUSTER_SUBCOMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "cluster";
    ("addslots", -3, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Assigns new hash slots to a node.",
        complexity: "O(N) where N is the total number of hash slot arguments"),
    ("addslotsrange", -4, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "7.0.0",
        "Assigns new hash slot ranges to a node.",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments."),
    ("bumpepoch", 2, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Advances the cluster config epoch.", tips: &["nondeterministic_output"]),
    ("count-failure-reports", 3, [ADMIN STALE], [], [], disabled, "3.0.0",
        "Returns the number of active failure reports active for a node.",
        complexity: "O(N) where N is the number of failure reports",
        tips: &["nondeterministic_output"]),
    ("countkeysinslot", 3, [STALE], [], [], disabled, "3.0.0",
        "Returns the number of keys in a hash slot."),
    ("delslots", -3, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Sets hash slots as unbound for a node.",
        complexity: "O(N) where N is the total number of hash slot arguments"),
    ("delslotsrange", -4, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "7.0.0",
        "Sets hash slot ranges as unbound for a node.",
        complexity: "O(N) where N is the total number of the slots between the start slot and end slot arguments."),
    ("failover", -2, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Forces a replica to perform a manual failover of its master."),
    ("flushslots", 2, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Deletes all slots information from a node."),
    ("forget", 3, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Removes a node from the nodes table."),
    ("getkeysinslot", 4, [STALE], [], [], disabled, "3.0.0",
        "Returns the key names in a hash slot.",
        complexity: "O(N) where N is the number of requested keys",
        tips: &["nondeterministic_output"]),
    ("help", 2, [LOADING STALE], [], [], disabled, "5.0.0",
        "Returns helpful text about the different subcommands."),
    ("info", 2, [STALE], [], [], disabled, "3.0.0",
        "Returns information about the state of a node.", tips: &["nondeterministic_output"]),
    ("keyslot", 3, [STALE], [], [], disabled, "3.0.0", "Returns the hash slot for a key.",
        complexity: "O(N) where N is the number of bytes in the key"),
    ("links", 2, [STALE], [], [], disabled, "7.0.0",
        "Returns a list of all TCP links to and from peer nodes.",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"]),
    ("meet", -4, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Forces a node to handshake with another node."),
    ("myid", 2, [STALE], [], [], disabled, "3.0.0", "Returns the ID of a node."),
    ("myshardid", 2, [STALE], [], [], disabled, "7.2.0", "Returns the shard ID of a node.",
        tips: &["nondeterministic_output"]),
    ("nodes", 2, [STALE], [], [], disabled, "3.0.0",
        "Returns the cluster configuration for a node.",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"]),
    ("replicas", 3, [ADMIN STALE], [], [], disabled, "5.0.0",
        "Lists the replica nodes of a master node.",
        complexity: "O(N) where N is the number of replicas.", tips: &["nondeterministic_output"]),
    ("replicate", 3, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Configure a node as replica of a master node."),
    ("reset", -2, [ADMIN NOSCRIPT STALE], [], [], disabled, "3.0.0", "Resets a node.",
        complexity: "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect."),
    ("saveconfig", 2, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Forces a node to save the cluster configuration to disk."),
    ("set-config-epoch", 3, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Sets the configuration epoch for a new node."),
    ("setslot", -4, [ADMIN STALE NO_ASYNC_LOADING], [], [], disabled, "3.0.0",
        "Binds a hash slot to a node."),
    ("shards", 2, [LOADING STALE], [], [], disabled, "7.0.0",
        "Returns the mapping of cluster slots to shards.",
        complexity: "O(N) where N is the total number of cluster nodes",
        tips: &["nondeterministic_output"]),
    ("slaves", 3, [ADMIN STALE], [], [], disabled, "3.0.0",
        "Lists the replica nodes of a master node.",
        complexity: "O(N) where N is the number of replicas.", tips: &["nondeterministic_output"]),
    ("slots", 2, [LOADING STALE], [], [], disabled, "3.0.0",
        "Returns the mapping of cluster slots to nodes.",
        complexity: "O(N) where N is the total number of Cluster nodes",
        tips: &["nondeterministic_output"]),
};
