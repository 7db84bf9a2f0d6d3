//! tern's server runtime: the machinery every command runs on — connection context and
//! replies, the dispatcher and its checks, the command table's types (the table itself is
//! handed in at start-up by `tern-commands`), clients, configuration, ACL, the write log, AOF,
//! RDB saving, replication, pub/sub, tracking, notifications, the Lua runtime, eviction, pause,
//! blocking, statistics. It does not depend on the command families.
pub mod acl;
pub mod aof;
pub mod aof_fsync;
pub mod args;
pub mod background;
pub mod blocking;
pub mod client_eviction;
pub mod clients;
pub mod clients_cron;
pub mod cluster;
pub mod config;
pub mod cron_jobs;
pub mod ctx;
pub mod db_policy;
pub mod diskless_load;
pub mod diskless_sync;
pub mod dispatch;
pub mod double;
pub mod evict;
pub mod failover;
pub mod float;
pub mod glob;
pub mod info_sections;
pub mod keyspace_access;
pub mod listen;
pub mod load_delay;
pub mod log;
pub mod lua;
pub mod master_link;
pub mod metrics;
pub mod migrate_link;
pub mod notify;
pub mod output_limits;
pub mod pause;
pub mod persistence;
pub mod propagate;
pub mod push;
pub mod registry;
pub mod replica_expiry;
pub mod replica_replies;
pub mod replication;
pub mod reply_buffer;
pub mod save_child;
pub mod save_progress;
pub mod scan;
pub mod server;
pub mod shutdown_sequence;
pub mod stats;
pub mod subscriptions;
pub mod sync_rdb;
pub mod table;
pub mod tls;
pub mod tracking;
pub mod txn;
pub mod wait;
pub mod watchdog;
pub mod world;

pub use args::Args;
pub use ctx::{Conn, Ctx};
pub use server::Server;

/// The Redis version tern is compatible with (reported as `redis_version`, HELLO `version`).
pub const REDIS_VERSION: &str = "7.2.6";

/// CLIENT SETNAME / HELLO SETNAME: no spaces, newlines or other special characters.
pub fn validate_client_name(name: &[u8]) -> Result<(), &'static str> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    Ok(())
}
