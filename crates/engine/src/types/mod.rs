//! The collection types, one module each, with their compact and full encodings.
pub mod double;
pub mod hash;
pub mod list;
pub mod set;
pub mod stream;
pub mod zset;
pub mod zskiplist;

pub use hash::HashValue;
pub use list::ListValue;
pub use set::SetValue;
pub use stream::StreamValue;
pub use zset::ZSetValue;
