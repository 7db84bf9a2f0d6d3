//! Persistence in Redis's formats: CRC-64, LZF, and the RDB value/file codec.
#![forbid(unsafe_code)]
pub mod aof;
pub mod crc64;
pub mod lzf;
pub mod rdb;
pub mod repl_buffer;
pub mod wlog;
