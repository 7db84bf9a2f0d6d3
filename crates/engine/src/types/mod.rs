//! The collection types, one module each, with their compact and full encodings.
pub mod cron;
pub mod double;
pub mod field_ttl;
pub mod hash;
pub mod intset;
pub mod list;
pub mod set;
pub mod stream;
pub mod zset;
pub mod zskiplist;

pub use cron::CronJob;
pub use field_ttl::FieldTtls;
pub use hash::{ExpiringHash, HashValue};
pub use list::ListValue;
pub use set::SetValue;
pub use stream::StreamValue;
pub use zset::ZSetValue;
