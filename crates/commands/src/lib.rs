//! tern's command families: one module (or folder) per Redis command group, as COMMAND DOCS
//! reports the groups. Each holds its table entries and handlers; a family imports nothing from
//! another family — what several need lives in the runtime (`tern-runtime`) or the engine.
//! The binary hands `FAMILIES` to the runtime at start-up (`install_command_table`).
pub mod bitmap;
pub mod cluster;
pub mod connection;
pub mod generic;
pub mod geo;
pub mod hash;
pub mod hash_ttl;
pub mod hyperloglog;
pub mod list;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sorted_set;
pub mod stream;
pub mod string;
pub mod transactions;

use tern_runtime::table::CommandSpec;

/// Every family's table; the registry is built from exactly this list.
pub static FAMILIES: &[&[CommandSpec]] = &[
    server::acl::COMMANDS,
    cluster::COMMANDS,
    server::module::COMMANDS,
    server::persistence::COMMANDS,
    connection::session::COMMANDS,
    string::COMMANDS,
    generic::keys::COMMANDS,
    server::config::COMMANDS,
    server::info::COMMANDS,
    connection::client::COMMANDS,
    server::introspection::COMMANDS,
    server::debug::COMMANDS,
    server::shutdown::COMMANDS,
    scripting::functions::COMMANDS,
    scripting::eval::COMMANDS,
    scripting::cron::COMMANDS,
    server::memory::COMMANDS,
    hash::COMMANDS,
    hash_ttl::COMMANDS,
    list::COMMANDS,
    set::COMMANDS,
    sorted_set::COMMANDS,
    stream::COMMANDS,
    bitmap::COMMANDS,
    hyperloglog::COMMANDS,
    geo::COMMANDS,
    generic::sort::COMMANDS,
    transactions::COMMANDS,
    pubsub::COMMANDS,
    generic::wait::COMMANDS,
    generic::dump::COMMANDS,
    generic::migrate::COMMANDS,
    generic::member_ttl::COMMANDS,
    server::replication::COMMANDS,
    server::lolwut::COMMANDS,
];

/// Hand the command families to the runtime (before the configuration is read: it checks
/// `rename-command` and ACL rules against them).
pub fn install_command_table() {
    tern_runtime::table::install(FAMILIES);
}
