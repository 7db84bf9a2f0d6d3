//! The integration tests: one test binary that starts the real `tern-server` (and, for
//! differential tests, redis-server) and talks to it with real clients. One module per
//! command family or subsystem; the shared harness is `common`.
mod common;
mod persist_data;

mod acl;
mod aof;
mod aof_replica;
mod aof_rewrite;
mod bitops;
mod config_info;
mod corrupt_dump;
mod digest;
mod dump;
mod functions;
mod geo;
mod hashes;
mod hll;
mod introspection;
mod keymiss;
mod keys;
mod lists;
mod lists_blocking;
mod logging;
mod maxmemory;
mod migrate;
mod multi;
mod pause;
mod protocol;
mod pubsub;
mod rdb;
mod replication;
mod scripting;
mod scripting_kill;
mod sets;
mod shutdown;
mod smoke;
mod sort;
mod streams;
mod streams_blocking;
mod strings;
mod tls;
mod tracking;
mod unixsocket;
mod watch_exact;
mod zsets;
mod zsets_blocking;
