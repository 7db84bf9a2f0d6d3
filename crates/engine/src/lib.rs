//! tern's keyspace engine: sharded databases, values, expiry. No networking, no protocol.
pub mod clock;
pub mod dict;
pub mod entry;
pub mod events;
pub mod expire;
pub mod field_expire;
pub mod hash;
pub mod limits;
pub mod listpack;
pub mod save_delay;
pub mod shard;
pub mod slot_index;
pub mod snapshot;
pub mod store;
pub mod thin;
pub mod types;
pub use types::field_ttl;
pub mod value;
mod varint;
pub mod watch;

pub use entry::{Entry, EntryBox};
pub use hash::key_hash;
pub use shard::ShardData;
pub use store::{LockPlan, MultiGuard, ShardGuard, Store};
pub use thin::{PackedBox, PackedI64};
pub use types::{
    CronJob, ExpiringHash, FieldTtls, HashValue, ListValue, SetValue, StreamValue, ZSetValue,
};
pub use value::{RString, Value};
