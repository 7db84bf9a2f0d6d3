//! Reply encoder for RESP2 and RESP3. The same calls produce the right bytes for either protocol
//! (a map becomes a flat array in RESP2, a null becomes `$-1`/`*-1`, and so on).

/// A connection's output buffer plus the protocol it speaks.
#[derive(Debug)]
pub struct Reply {
    pub buf: Vec<u8>,
    pub resp: u8,
    /// Error replies written since the counter was last reset (per command).
    pub errors: u32,
    /// Codes (`ERR`, `WRONGTYPE`, ...) of those errors, for INFO errorstats.
    pub error_codes: Vec<String>,
    /// Bytes `buf` may hold (a client's output-buffer hard limit); past it the reply is
    /// dropped and `overflowed` set, so the connection closes instead of writing it.
    limit: usize,
    overflowed: bool,
}

impl Default for Reply {
    fn default() -> Self {
        Self::new()
    }
}

impl Reply {
    pub fn new() -> Self {
        Self::with_buffer(Vec::with_capacity(16 * 1024))
    }

    /// A RESP2 reply writing into `buf`.
    pub fn with_buffer(buf: Vec<u8>) -> Self {
        Reply {
            buf,
            resp: 2,
            errors: 0,
            error_codes: Vec::new(),
            limit: usize::MAX,
            overflowed: false,
        }
    }

    /// Cap what the buffer may hold (`usize::MAX`: no cap).
    pub fn set_limit(&mut self, bytes: usize) {
        self.limit = bytes;
    }

    /// The buffer went past its limit: what it held was dropped, and the client must be
    /// closed without being sent anything more. Loops that produce replies without bound
    /// (HRANDFIELD with a huge negative count, KEYS...) stop when they see it.
    #[inline]
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Forget an overflow (the buffer is reused for another client or command set).
    pub fn clear_overflow(&mut self) {
        self.overflowed = false;
    }

    #[inline]
    fn check_limit(&mut self) {
        if self.buf.len() > self.limit {
            self.overflow();
        }
    }

    #[cold]
    fn overflow(&mut self) {
        self.overflowed = true;
        // Free the memory now: nothing of it will be written.
        self.buf = Vec::new();
    }

    pub fn is_resp3(&self) -> bool {
        self.resp >= 3
    }

    #[inline]
    fn header(&mut self, prefix: u8, n: i64) {
        self.check_limit();
        self.buf.push(prefix);
        self.buf
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// `+status`. Newlines would break the protocol; Redis never sends them here.
    pub fn simple(&mut self, s: &[u8]) {
        self.buf.push(b'+');
        self.buf.extend_from_slice(s);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `-CODE message`. `msg` starts with the error code (`ERR`, `WRONGTYPE`, ...); a missing
    /// code gets `ERR `, and line breaks become spaces, as Redis does.
    pub fn error(&mut self, msg: &str) {
        self.error_bytes(msg.as_bytes());
    }

    /// `error` for a message that echoes the client's own bytes, which go back raw (not
    /// re-encoded as UTF-8), as Redis sends them.
    pub fn error_bytes(&mut self, msg: &[u8]) {
        self.errors += 1;
        self.buf.push(b'-');
        let first = msg.split(|&b| b == b' ').next().unwrap_or(b"");
        let code = std::str::from_utf8(first).ok().filter(|w| is_error_code(w));
        match code {
            Some(code) if msg.len() > first.len() => self.error_codes.push(code.to_string()),
            _ => {
                self.buf.extend_from_slice(b"ERR ");
                self.error_codes.push("ERR".to_string());
            }
        }
        self.buf.extend(
            msg.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    #[inline]
    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    #[inline]
    pub fn bulk(&mut self, s: &[u8]) {
        if self.buf.len().saturating_add(s.len()) > self.limit {
            // It could only overflow: no time spent copying what would be dropped.
            self.overflow();
            return;
        }
        self.header(b'$', s.len() as i64);
        self.buf.extend_from_slice(s);
        self.buf.extend_from_slice(b"\r\n");
        self.check_limit();
    }

    pub fn bulk_int(&mut self, n: i64) {
        self.bulk(itoa::Buffer::new().format(n).as_bytes());
    }

    pub fn opt_bulk(&mut self, s: Option<&[u8]>) {
        match s {
            Some(s) => self.bulk(s),
            None => self.null(),
        }
    }

    /// Null bulk string (`$-1` / `_`).
    #[inline]
    pub fn null(&mut self) {
        if self.is_resp3() {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// Null array (`*-1` / `_`).
    pub fn null_array(&mut self) {
        if self.is_resp3() {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    #[inline]
    pub fn array(&mut self, n: usize) {
        self.header(b'*', n as i64);
    }

    /// A map of `n` pairs: `%n` in RESP3, a flat array of 2n in RESP2.
    pub fn map(&mut self, n: usize) {
        if self.is_resp3() {
            self.header(b'%', n as i64);
        } else {
            self.header(b'*', 2 * n as i64);
        }
    }

    /// A set: `~n` in RESP3, an array in RESP2.
    pub fn set(&mut self, n: usize) {
        let p = if self.is_resp3() { b'~' } else { b'*' };
        self.header(p, n as i64);
    }

    /// An out-of-band push: `>n` in RESP3, an array in RESP2.
    pub fn push(&mut self, n: usize) {
        let p = if self.is_resp3() { b'>' } else { b'*' };
        self.header(p, n as i64);
    }

    pub fn boolean(&mut self, b: bool) {
        if self.is_resp3() {
            self.buf
                .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
        } else {
            self.int(b as i64);
        }
    }

    /// A double already formatted the way Redis prints it: `,` in RESP3, bulk in RESP2.
    pub fn double_str(&mut self, s: &[u8]) {
        if self.is_resp3() {
            self.buf.push(b',');
            self.buf.extend_from_slice(s);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(s);
        }
    }

    /// Verbatim text (`=len\r\ntxt:...`) in RESP3, a bulk string in RESP2.
    pub fn verbatim(&mut self, text: &[u8]) {
        if self.is_resp3() {
            self.header(b'=', text.len() as i64 + 4);
            self.buf.extend_from_slice(b"txt:");
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    /// Raw protocol bytes, already encoded.
    pub fn raw(&mut self, bytes: &[u8]) {
        if self.buf.len().saturating_add(bytes.len()) > self.limit {
            self.overflow();
            return;
        }
        self.buf.extend_from_slice(bytes);
        self.check_limit();
    }
}

fn is_error_code(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_drops_the_reply_and_flags_it() {
        let mut r = Reply::new();
        r.set_limit(100);
        r.array(3);
        r.bulk(&[b'x'; 60]);
        assert!(!r.overflowed());
        r.bulk(&[b'y'; 60]);
        assert!(r.overflowed());
        assert!(r.buf.is_empty());
        // Further output stays bounded by the limit.
        for _ in 0..1000 {
            r.bulk(b"z");
        }
        assert!(r.buf.len() <= 100 + 16);
    }

    #[test]
    fn a_bulk_past_the_limit_is_never_copied() {
        let mut r = Reply::with_buffer(Vec::with_capacity(64));
        r.set_limit(1000);
        r.bulk(&vec![b'x'; 1 << 20]);
        assert!(r.overflowed());
        assert!(r.buf.capacity() < 1000, "{}", r.buf.capacity());
        let mut r = Reply::new();
        r.set_limit(1000);
        r.raw(&[b'y'; 2000]);
        assert!(r.overflowed() && r.buf.is_empty());
    }

    #[test]
    fn resp2_and_resp3_shapes() {
        let mut r = Reply::new();
        r.map(1);
        r.null();
        r.boolean(true);
        assert_eq!(r.buf, b"*2\r\n$-1\r\n:1\r\n");
        let mut r = Reply::new();
        r.resp = 3;
        r.map(1);
        r.null();
        r.boolean(true);
        assert_eq!(r.buf, b"%1\r\n_\r\n#t\r\n");
    }

    #[test]
    fn errors_get_a_code() {
        let mut r = Reply::new();
        r.error("WRONGTYPE Operation against a key holding the wrong kind of value");
        r.error("unknown thing\r\nx");
        assert_eq!(
            r.buf,
            b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n-ERR unknown thing  x\r\n".to_vec()
        );
        assert_eq!(r.errors, 2);
    }
}
