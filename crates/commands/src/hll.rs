//! HyperLogLog commands over Redis-format HLL strings.
use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
