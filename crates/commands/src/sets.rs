//! Set commands.
use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
