//! RESP wire format: the request parser and the reply writer. No I/O, so it can be fuzzed.
#![forbid(unsafe_code)]
pub mod parser;
pub mod writer;

pub use parser::{split_args, Limits, ProtocolError, RequestParser, INLINE_MAX_SIZE};
pub use writer::Reply;
