//! The generic group: commands on keys of any type.
pub mod dump;
pub mod keys;
pub mod member_ttl;
pub mod migrate;
pub mod sort;
pub mod wait;
