//! Bitmap commands: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD.
use crate::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = &[];
