//! Redis Cluster's protocol layer, as Redis 7.2 speaks it, with no I/O and no server state:
//! - [`msg`]: the cluster bus messages (header, gossip, ping extensions, every message type),
//!   their byte-exact encoding, a decoder that rejects bad input with an error, and
//!   [`msg::MsgReader`] to split a link's byte stream into messages;
//! - [`nodes_conf`]: the `nodes.conf` cluster config file, parsed and written;
//! - [`slots`]: the key hash slot (CRC16 with `{hash tag}` rules) and a slot bitmap;
//! - [`state`]: the cluster state machine (Redis's `clusterState`), I/O-free, and
//!   [`election`], a replica's failover election and the masters' votes, and
//!   [`manual_failover`], CLUSTER FAILOVER's coordination, and [`replica_migration`], a
//!   replica moving to an orphaned master;
//! - [`node`]: what the bus and the config file say about a node (its id and flag bits).
#![forbid(unsafe_code)]

pub mod admin;
pub mod election;
pub mod manual_failover;
pub mod msg;
pub mod node;
pub mod nodes_conf;
pub mod replica_migration;
pub mod slots;
pub mod state;

pub use msg::{Body, DecodeError, Msg};
pub use node::{NodeFlags, NodeId};
pub use nodes_conf::{NodesConf, NodesConfError};
pub use slots::{key_hash_slot, SlotSet, CLUSTER_SLOTS};
