//! Doubles the way Redis reads and replies them for sorted sets (and GEO, SORT...): parsing
//! with `strtod` rules (`inf`, `+inf`, `-inf`, no NaN) and Redis 7.2's reply text. The
//! conversions themselves live in the engine (`tern_engine::types::double`), which also stores
//! scores in listpacks in this text form.
pub use tern_engine::types::double::{
    fmt_double, fmt_g17, parse_range_double, parse_score, strtod,
};
use tern_resp::Reply;

/// "ERR value is not a valid float": what a bad score argument gets.
pub const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
/// What a bad ZRANGEBYSCORE/ZCOUNT bound gets.
pub const ERR_MINMAX_FLOAT: &str = "ERR min or max is not a float";

/// Redis's addReplyDouble: a RESP3 double (`,1.5`), or a bulk string in RESP2.
#[inline]
pub fn reply_double(out: &mut Reply, d: f64) {
    out.double_str(fmt_double(d).as_bytes());
}
