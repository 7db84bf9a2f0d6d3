//! The cluster commands a standalone server still knows (READONLY, READWRITE, ASKING): they
//! exist in the command table (ACL rules and COMMAND name them) and answer as Redis does with
//! cluster support disabled.

use crate::args::Args;
use crate::ctx::Ctx;
use crate::table::{acl, flags as f, CommandSpec};

const ERR_NO_CLUSTER: &str = "ERR This instance has cluster support disabled";

pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "readonly",
        arity: 1,
        flags: f::FAST | f::LOADING | f::STALE,
        acl: acl::CONNECTION | acl::FAST,
        handler: Some(no_cluster),
        group: "cluster",
        since: "3.0.0",
        summary: "Enables read-only queries for a connection to a Redis Cluster replica node.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "readwrite",
        arity: 1,
        flags: f::FAST | f::LOADING | f::STALE,
        acl: acl::CONNECTION | acl::FAST,
        handler: Some(no_cluster),
        group: "cluster",
        since: "3.0.0",
        summary: "Enables read-write queries for a connection to a Reids Cluster replica node.",
        ..CommandSpec::DEFAULT
    },
    CommandSpec {
        name: "asking",
        arity: 1,
        flags: f::FAST,
        acl: acl::CONNECTION | acl::FAST,
        handler: Some(no_cluster),
        group: "cluster",
        since: "3.0.0",
        summary: "Signals that a cluster client is following an -ASK redirect.",
        ..CommandSpec::DEFAULT
    },
];

fn no_cluster(ctx: &mut Ctx, _args: &Args) {
    ctx.error(ERR_NO_CLUSTER);
}
