//! (being written)

use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
