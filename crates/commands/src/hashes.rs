//! Hash commands (HSET, HGET, ...).
use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
