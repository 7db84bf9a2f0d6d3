//! Geo commands over sorted sets with Redis's 52-bit geohash.
use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
