//! The RDB format: length/string encodings, the value codec (every type and encoding an RDB
//! of version <= 11 can hold) and DUMP payloads.

pub mod decode;
pub mod encode;
pub mod file;

pub use decode::{read_value, restore_payload, restore_payload_with, Reader, RestoreError};
pub use encode::{dump_payload, write_value, Writer};

/// The version tern writes (Redis 7.0), which redis-server 7.0 and 7.2 load.
pub const RDB_VERSION: u16 = 10;
/// The version written when some hash has field times (Redis 7.4's hash types 24 and 25).
pub const RDB_VERSION_FIELD_TTLS: u16 = 12;
/// The newest version tern reads (Redis 7.4).
pub const RDB_MAX_VERSION: u16 = 12;

/// The version a file or payload holding `v` needs.
pub fn version_for(v: &tern_engine::Value) -> u16 {
    if encode::has_field_ttls(v) {
        RDB_VERSION_FIELD_TTLS
    } else {
        RDB_VERSION
    }
}

pub const TYPE_STRING: u8 = 0;
pub const TYPE_LIST: u8 = 1;
pub const TYPE_SET: u8 = 2;
pub const TYPE_ZSET: u8 = 3;
pub const TYPE_HASH: u8 = 4;
pub const TYPE_ZSET_2: u8 = 5;
pub const TYPE_MODULE_PRE_GA: u8 = 6;
pub const TYPE_MODULE_2: u8 = 7;
pub const TYPE_HASH_ZIPMAP: u8 = 9;
pub const TYPE_LIST_ZIPLIST: u8 = 10;
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_ZSET_ZIPLIST: u8 = 12;
pub const TYPE_HASH_ZIPLIST: u8 = 13;
pub const TYPE_LIST_QUICKLIST: u8 = 14;
pub const TYPE_STREAM_LISTPACKS: u8 = 15;
pub const TYPE_HASH_LISTPACK: u8 = 16;
pub const TYPE_ZSET_LISTPACK: u8 = 17;
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;
pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;
pub const TYPE_SET_LISTPACK: u8 = 20;
pub const TYPE_STREAM_LISTPACKS_3: u8 = 21;
/// Redis 7.4 release candidates' hashes with field times (absolute times, no minimum first).
pub const TYPE_HASH_METADATA_PRE_GA: u8 = 22;
pub const TYPE_HASH_LISTPACK_EX_PRE_GA: u8 = 23;
/// Redis 7.4's hash with field times: earliest time, count, then (time, field, value) with
/// each time relative to the earliest (+1; 0 for none).
pub const TYPE_HASH_METADATA: u8 = 24;
/// Redis 7.4's `listpackex`: earliest time, then a listpack of (field, value, time) triplets
/// in time order (0 for none, last).
pub const TYPE_HASH_LISTPACK_EX: u8 = 25;
/// KeyDB's KEYDB.CRON job: script, start and interval (8-byte LE ms), keys, arguments.
pub const TYPE_CRON: u8 = 64;
/// Redis's largest field time (48 bits).
pub const FIELD_TIME_MAX: u64 = (1 << 48) - 1;

pub const OP_FUNCTION2: u8 = 245;
pub const OP_FUNCTION_PRE_GA: u8 = 246;
pub const OP_MODULE_AUX: u8 = 247;
pub const OP_IDLE: u8 = 248;
pub const OP_FREQ: u8 = 249;
pub const OP_AUX: u8 = 250;
pub const OP_RESIZEDB: u8 = 251;
pub const OP_EXPIRETIME_MS: u8 = 252;
pub const OP_EXPIRETIME: u8 = 253;
pub const OP_SELECTDB: u8 = 254;
pub const OP_EOF: u8 = 255;

/// Special string encodings (length byte 0b11xxxxxx).
pub const ENC_INT8: u64 = 0;
pub const ENC_INT16: u64 = 1;
pub const ENC_INT32: u64 = 2;
pub const ENC_LZF: u64 = 3;

/// Quicklist 2 node containers.
pub const QUICKLIST_PLAIN: u64 = 1;
pub const QUICKLIST_PACKED: u64 = 2;

/// Stream listpack entry flags.
pub const STREAM_ITEM_DELETED: i64 = 1;
pub const STREAM_ITEM_SAMEFIELDS: i64 = 2;

/// True for the type bytes that start a key/value pair.
pub fn is_value_type(t: u8) -> bool {
    (t <= TYPE_HASH_LISTPACK_EX && t != 8) || t == TYPE_CRON
}

#[cfg(test)]
mod tests;
