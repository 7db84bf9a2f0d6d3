//! Stream commands and consumer groups.
use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
