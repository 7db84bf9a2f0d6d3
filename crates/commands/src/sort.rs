//! SORT and SORT_RO.
use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
