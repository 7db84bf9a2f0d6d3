//! Keyspace notification classes (Redis's NOTIFY_* bits, the letters of
//! `notify-keyspace-events`). Handlers report events through `Ctx::notify`.
pub const KEYSPACE: u32 = 1 << 0;
pub const KEYEVENT: u32 = 1 << 1;
pub const GENERIC: u32 = 1 << 2;
pub const STRING: u32 = 1 << 3;
pub const LIST: u32 = 1 << 4;
pub const SET: u32 = 1 << 5;
pub const HASH: u32 = 1 << 6;
pub const ZSET: u32 = 1 << 7;
pub const EXPIRED: u32 = 1 << 8;
pub const EVICTED: u32 = 1 << 9;
pub const STREAM: u32 = 1 << 10;
pub const KEY_MISS: u32 = 1 << 11;
pub const LOADED: u32 = 1 << 12;
pub const MODULE: u32 = 1 << 13;
pub const NEW: u32 = 1 << 14;
