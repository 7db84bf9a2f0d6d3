//! The server group: configuration, INFO, introspection, DEBUG, MEMORY, SHUTDOWN, MODULE, LOLWUT.
pub mod acl;
pub mod config;
pub mod debug;
pub mod info;
pub mod introspection;
pub mod lolwut;
pub mod memory;
pub mod module;
pub mod persistence;
pub mod replication;
pub mod shutdown;
