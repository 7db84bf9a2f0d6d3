//! tern's commands: the declarative table (`table`), one module per command family, and the
//! dispatcher that runs them against the engine.
pub mod acl;
pub mod aof;
pub mod args;
pub mod background;
pub mod blocking;
pub mod client_eviction;
pub mod clients;
pub mod clients_cron;
pub mod config;
pub mod ctx;
pub mod dispatch;
pub mod double;
pub mod evict;
pub mod float;
pub mod glob;
pub mod info_sections;
pub mod keyspace_access;
pub mod master_link;
pub mod metrics;
pub mod migrate_link;
pub mod notify;
pub mod output_limits;
pub mod pause;
pub mod propagate;
pub mod push;
pub mod registry;
pub mod replication;
pub mod reply_buffer;
pub mod save_child;
pub mod save_progress;
pub mod scan;
pub mod server;
pub mod shutdown_sequence;
pub mod stats;
pub mod subscriptions;
pub mod table;
pub mod tls;
pub mod tracking;
pub mod txn;
pub mod wait;
pub mod world;

pub mod client_cmd;
pub mod cluster;
pub mod config_cmd;
pub mod connection;
pub mod debug;
pub mod digest;
pub mod functions;
pub mod info;
pub mod introspection;
pub mod keys;
pub mod memory;
pub mod migrate;
pub mod module_cmd;
pub mod multi;
pub mod persistence;
pub mod pubsub;
pub mod shutdown;
pub mod strings;

pub mod bitops;
pub mod geo;
pub mod geohash;
pub mod hashes;
pub mod hll;
pub mod hll_format;
pub mod lists;
pub mod log;
pub mod lolwut;
pub mod sets;
pub mod sort;
pub mod streams;
pub mod zsets;

pub mod lua;
pub mod scripting;

pub use args::Args;
pub use ctx::{Conn, Ctx};
pub use server::Server;

use table::CommandSpec;

/// Every family's table; the registry is built from exactly this list, which the binary
/// hands to the runtime at start-up (`install_command_table`).
pub static FAMILIES: &[&[CommandSpec]] = &[
    acl::COMMANDS,
    cluster::COMMANDS,
    module_cmd::COMMANDS,
    aof::COMMANDS,
    connection::COMMANDS,
    strings::COMMANDS,
    keys::COMMANDS,
    config_cmd::COMMANDS,
    info::COMMANDS,
    client_cmd::COMMANDS,
    introspection::COMMANDS,
    debug::COMMANDS,
    shutdown::COMMANDS,
    functions::COMMANDS,
    scripting::COMMANDS,
    memory::COMMANDS,
    hashes::COMMANDS,
    lists::COMMANDS,
    sets::COMMANDS,
    zsets::COMMANDS,
    streams::COMMANDS,
    bitops::COMMANDS,
    hll::COMMANDS,
    geo::COMMANDS,
    sort::COMMANDS,
    multi::COMMANDS,
    pubsub::COMMANDS,
    wait::COMMANDS,
    persistence::COMMANDS,
    migrate::COMMANDS,
    replication::COMMANDS,
    master_link::COMMANDS,
    lolwut::COMMANDS,
];

/// Hand the command families to the runtime (before the configuration is read: it checks
/// `rename-command` and ACL rules against them).
pub fn install_command_table() {
    table::install(FAMILIES);
}

/// The Redis version tern is compatible with (reported as `redis_version`, HELLO `version`).
pub const REDIS_VERSION: &str = "7.2.6";

/// CLIENT SETNAME / HELLO SETNAME: no spaces, newlines or other special characters.
pub fn validate_client_name(name: &[u8]) -> Result<(), &'static str> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    Ok(())
}
