//! List commands, blocking pops included.
use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
