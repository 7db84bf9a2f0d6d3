//! Blocking commands (BLPOP, BZPOPMIN, XREAD BLOCK, ...): what a handler asks for when it has
//! nothing to return yet, and the shared timeout parsing.
//!
//! A blocking handler first tries to serve itself. When there is nothing to pop it calls
//! `ctx.block(BlockSpec { .. })` and writes no reply. The connection then waits; when a write
//! touches one of the keys, the waiting command is run again, on the writer's thread, with
//! `ctx.serving_blocked()` true: if it calls `ctx.block` again it keeps its place in the queue,
//! otherwise whatever it replied is sent to the waiting client. So in serving mode a handler
//! that finds the key of the wrong type must call `ctx.block` again (Redis keeps such clients
//! blocked) instead of replying WRONGTYPE.

/// What a timed-out client receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutReply {
    /// `*-1` (RESP2) / `_` (RESP3): BLPOP, BRPOP, BLMPOP, BZPOPMIN/MAX, BZMPOP, XREAD.
    NullArray,
    /// `$-1` / `_`: BLMOVE, BRPOPLPUSH.
    NullBulk,
}

#[derive(Debug, Clone)]
pub struct BlockSpec {
    /// Keys of the client's current database to wait on (duplicates allowed).
    pub keys: Vec<Vec<u8>>,
    /// Absolute unix time in ms at which to give up; 0 waits forever.
    pub deadline_ms: u64,
    pub timeout_reply: TimeoutReply,
    /// The arguments to run again when a key is ready, when they differ from the original
    /// (XREAD replaces `$` with the stream's last ID at the time it blocked).
    pub rewritten_args: Option<Vec<Vec<u8>>>,
    /// Wake with the command's own reply when a key is deleted or changes type (XREADGROUP),
    /// instead of waiting on.
    pub unblock_on_nokey: bool,
}

/// A blocking timeout in seconds (decimals allowed), as Redis's getTimeoutFromObjectOrReply
/// parses it for BLPOP & co. Returns the absolute deadline in ms (0 = forever).
pub fn parse_timeout_secs(arg: &[u8], now_ms: u64) -> Result<u64, &'static str> {
    const ERR: &str = "ERR timeout is not a float or out of range";
    let s = std::str::from_utf8(arg).map_err(|_| ERR)?;
    if s.is_empty() || s.trim() != s {
        return Err(ERR);
    }
    let secs: f64 = s.parse().map_err(|_| ERR)?;
    if !secs.is_finite() {
        return Err(ERR);
    }
    if secs < 0.0 {
        return Err("ERR timeout is negative");
    }
    let ms = secs * 1000.0;
    if ms >= (i64::MAX / 2) as f64 {
        return Err("ERR timeout is out of range");
    }
    deadline_from_ms(ms.ceil() as u64, now_ms)
}

/// A blocking timeout in integer milliseconds (XREAD/XREADGROUP BLOCK).
pub fn parse_timeout_ms(arg: &[u8], now_ms: u64) -> Result<u64, &'static str> {
    let ms = crate::args::parse_i64(arg).ok_or("ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative");
    }
    deadline_from_ms(ms as u64, now_ms)
}

fn deadline_from_ms(ms: u64, now_ms: u64) -> Result<u64, &'static str> {
    if ms == 0 {
        return Ok(0);
    }
    now_ms
        .checked_add(ms)
        .filter(|d| *d < i64::MAX as u64)
        .ok_or("ERR timeout is out of range")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout_secs(b"0", 1000), Ok(0));
        assert_eq!(parse_timeout_secs(b"0.1", 1000), Ok(1100));
        assert_eq!(parse_timeout_secs(b"1", 1000), Ok(2000));
        assert_eq!(
            parse_timeout_secs(b"-1", 1000),
            Err("ERR timeout is negative")
        );
        assert!(parse_timeout_secs(b"abc", 1000).is_err());
        assert!(parse_timeout_secs(b"inf", 1000).is_err());
        assert_eq!(parse_timeout_ms(b"10", 1000), Ok(1010));
        assert!(parse_timeout_ms(b"1.5", 1000).is_err());
    }
}
