//! Incremental request parser: RESP multibulk and inline commands, with Redis's exact protocol
//! errors and limits. Arguments are byte ranges into the caller's buffer (no copy), except for
//! inline commands, whose quoting/escapes are decoded into a side buffer.

/// Longest inline request, or multibulk/bulk length line, Redis accepts without a newline.
pub const INLINE_MAX_SIZE: usize = 64 * 1024;
/// Argument count / bulk length limits for connections that still have to authenticate.
const UNAUTH_MAX_MULTIBULK: i64 = 10;
const UNAUTH_MAX_BULK: i64 = 16384;

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `proto-max-bulk-len`.
    pub max_bulk_len: i64,
    /// True while the connection must still AUTH (tighter limits, as in Redis).
    pub auth_required: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            auth_required: false,
        }
    }
}

/// A protocol violation: the reply text (without the leading `-`) to send before closing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl ProtocolError {
    fn new(s: &str) -> Self {
        ProtocolError(format!("ERR Protocol error: {s}"))
    }
}

/// Where the current command's arguments live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgSource {
    /// Ranges index the caller's input buffer.
    Input,
    /// Ranges index the parser's own copy of a decoded inline command.
    Inline,
}

#[derive(Debug, Default)]
struct MultibulkState {
    /// Arguments still to read.
    remaining: usize,
    /// Length of the bulk being read, once its header was parsed.
    bulk_len: Option<usize>,
    /// Offset (from the start of the command) of the next unparsed byte.
    pos: usize,
}

/// Parses one command at a time from the front of a buffer. When a command is incomplete the
/// parser keeps its progress, so a large request arriving in many reads is scanned only once; the
/// caller must keep the incomplete command at the start of the buffer it passes next time.
#[derive(Debug)]
pub struct RequestParser {
    state: Option<MultibulkState>,
    ranges: Vec<(usize, usize)>,
    inline_buf: Vec<u8>,
    source: ArgSource,
}

impl Default for RequestParser {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestParser {
    pub fn new() -> Self {
        RequestParser {
            state: None,
            ranges: Vec::with_capacity(8),
            inline_buf: Vec::new(),
            source: ArgSource::Input,
        }
    }

    /// Try to parse one command from `buf`. `Ok(Some(n))`: a command (possibly with zero
    /// arguments, which callers skip) occupying the first `n` bytes; its arguments are in
    /// `ranges()`, over the bytes `arg_base` gives. `Ok(None)`: more input is needed.
    pub fn parse(&mut self, buf: &[u8], limits: &Limits) -> Result<Option<usize>, ProtocolError> {
        if self.state.is_none() {
            if buf.is_empty() {
                return Ok(None);
            }
            self.ranges.clear();
            if buf[0] != b'*' {
                return self.parse_inline(buf);
            }
        }
        self.parse_multibulk(buf, limits)
    }

    /// Give back the memory a command with very many arguments left behind (Redis frees a
    /// client's argv after each command); call between commands.
    pub fn shrink(&mut self) {
        if self.state.is_none() {
            if self.ranges.capacity() > 1024 {
                self.ranges = Vec::with_capacity(8);
            }
            if self.inline_buf.capacity() > 64 * 1024 {
                self.inline_buf = Vec::new();
            }
        }
    }

    /// The bytes the last command's `ranges()` index: `input` (what was passed to `parse`) or
    /// the parser's own copy of an inline command.
    pub fn arg_base<'a>(&'a self, input: &'a [u8]) -> &'a [u8] {
        match self.source {
            ArgSource::Input => input,
            ArgSource::Inline => &self.inline_buf,
        }
    }

    pub fn ranges(&self) -> &[(usize, usize)] {
        &self.ranges
    }

    /// Bytes the pending bulk argument still needs beyond what `have` holds, to size reads.
    pub fn pending_bulk_need(&self, have: usize) -> usize {
        match &self.state {
            Some(MultibulkState {
                bulk_len: Some(len),
                pos,
                ..
            }) => (pos + len + 2).saturating_sub(have),
            _ => 0,
        }
    }

    /// Bytes of the pending request already parsed (its header and complete arguments);
    /// 0 between requests.
    pub fn parsed_len(&self) -> usize {
        self.state.as_ref().map_or(0, |s| s.pos)
    }

    /// True while a multibulk request is partially parsed.
    pub fn in_progress(&self) -> bool {
        self.state.is_some()
    }

    fn parse_inline(&mut self, buf: &[u8]) -> Result<Option<usize>, ProtocolError> {
        let Some(nl) = memchr(b'\n', buf) else {
            if buf.len() > INLINE_MAX_SIZE {
                return Err(ProtocolError::new("too big inline request"));
            }
            return Ok(None);
        };
        let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        self.source = ArgSource::Inline;
        self.inline_buf.clear();
        split_args(&buf[..line_end], &mut self.inline_buf, &mut self.ranges)
            .map_err(|_| ProtocolError::new("unbalanced quotes in request"))?;
        Ok(Some(nl + 1))
    }

    fn parse_multibulk(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<usize>, ProtocolError> {
        self.source = ArgSource::Input;
        if self.state.is_none() {
            let (n, next) = match length_line(buf, 0) {
                LengthLine::Incomplete => {
                    if buf.len() > INLINE_MAX_SIZE {
                        return Err(ProtocolError::new("too big mbulk count string"));
                    }
                    return Ok(None);
                }
                LengthLine::Invalid => return Err(ProtocolError::new("invalid multibulk length")),
                LengthLine::Value(n, next) => (n, next),
            };
            if n > i32::MAX as i64 {
                return Err(ProtocolError::new("invalid multibulk length"));
            }
            if n > UNAUTH_MAX_MULTIBULK && limits.auth_required {
                return Err(ProtocolError::new("unauthenticated multibulk length"));
            }
            if n <= 0 {
                return Ok(Some(next));
            }
            self.ranges.reserve((n as usize).min(1024));
            self.state = Some(MultibulkState {
                remaining: n as usize,
                bulk_len: None,
                pos: next,
            });
        }
        let st = self.state.as_mut().expect("multibulk state");
        while st.remaining > 0 {
            let len = match st.bulk_len {
                Some(len) => len,
                None => {
                    let at = st.pos.min(buf.len());
                    let line = length_line(buf, at);
                    if let LengthLine::Incomplete = line {
                        if buf.len() - at > INLINE_MAX_SIZE {
                            return Err(self.fail("too big bulk count string"));
                        }
                        return Ok(None);
                    }
                    if buf[at] != b'$' {
                        let got = buf[at] as char;
                        self.state = None;
                        return Err(ProtocolError(format!(
                            "ERR Protocol error: expected '$', got '{got}'"
                        )));
                    }
                    let (len, next) = match line {
                        LengthLine::Value(l, next) if l >= 0 && l <= limits.max_bulk_len => {
                            (l, next)
                        }
                        _ => return Err(self.fail("invalid bulk length")),
                    };
                    if len > UNAUTH_MAX_BULK && limits.auth_required {
                        return Err(self.fail("unauthenticated bulk length"));
                    }
                    st.pos = next;
                    st.bulk_len = Some(len as usize);
                    len as usize
                }
            };
            // Like Redis, the two bytes after the payload are skipped, not checked.
            if buf.len() < st.pos + len + 2 {
                return Ok(None);
            }
            self.ranges.push((st.pos, st.pos + len));
            st.pos += len + 2;
            st.bulk_len = None;
            st.remaining -= 1;
        }
        let end = st.pos;
        self.state = None;
        Ok(Some(end))
    }

    fn fail(&mut self, msg: &str) -> ProtocolError {
        self.state = None;
        ProtocolError::new(msg)
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

enum LengthLine {
    /// No `\r` followed by one more byte yet.
    Incomplete,
    /// The line is complete but is not a valid number (Redis's string2ll failed).
    Invalid,
    /// The number and the offset just past `\r\n`.
    Value(i64, usize),
}

/// Parse a `*N\r\n` / `$N\r\n` header starting at `at` (the type byte) in one pass: find the
/// `\r` and convert the digits on the way, with Redis's string2ll rules (optional '-', no '+',
/// no leading zeros except "0", fits in i64).
#[inline]
fn length_line(buf: &[u8], at: usize) -> LengthLine {
    let mut i = at + 1;
    let mut neg = false;
    if buf.get(i) == Some(&b'-') {
        neg = true;
        i += 1;
    }
    let digits_start = i;
    // Magnitude as u64 so that i64::MIN (whose magnitude i64 cannot hold) parses, as
    // Redis's string2ll accepts it.
    let mut v: u64 = 0;
    let mut ok = true;
    while i < buf.len() {
        let c = buf[i];
        if c == b'\r' {
            if i + 1 >= buf.len() {
                return LengthLine::Incomplete;
            }
            let ndig = i - digits_start;
            let leading_zero = ndig > 1 && buf[digits_start] == b'0';
            if !ok || ndig == 0 || leading_zero || (neg && buf[digits_start] == b'0') {
                return LengthLine::Invalid;
            }
            let value = if neg {
                0i64.checked_sub_unsigned(v)
            } else {
                i64::try_from(v).ok()
            };
            return match value {
                Some(n) => LengthLine::Value(n, i + 2),
                None => LengthLine::Invalid,
            };
        }
        if ok {
            if c.is_ascii_digit() {
                match v
                    .checked_mul(10)
                    .and_then(|x| x.checked_add((c - b'0') as u64))
                {
                    Some(x) => v = x,
                    None => ok = false,
                }
            } else {
                ok = false;
            }
        }
        i += 1;
    }
    LengthLine::Incomplete
}

/// A quoted argument that is not closed, or a closing quote followed by something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnbalancedQuotes;

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c)
}

fn hex_val(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Split a line into arguments the way redis-cli and inline commands do (Redis's
/// `sdssplitargs`): whitespace separated, "double quotes" with C escapes and \xHH, 'single
/// quotes' with only \' escaped; a closing quote must be followed by space or end of line.
pub fn split_args(
    line: &[u8],
    out: &mut Vec<u8>,
    ranges: &mut Vec<(usize, usize)>,
) -> Result<(), UnbalancedQuotes> {
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Ok(());
        }
        let start = out.len();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            if in_dq {
                if i >= n {
                    return Err(UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\' && i + 3 < n && line[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(line[i + 2]), hex_val(line[i + 3])) {
                        out.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < n {
                    i += 1;
                    out.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return Err(UnbalancedQuotes);
                    }

                    i += 1;
                    break;
                } else {
                    out.push(c);
                }
                i += 1;
            } else if in_sq {
                if i >= n {
                    return Err(UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    out.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return Err(UnbalancedQuotes);
                    }

                    i += 1;
                    break;
                } else {
                    out.push(c);
                }
                i += 1;
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    c if is_space(c) => break,
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    c => out.push(c),
                }
                i += 1;
            }
        }
        ranges.push((start, out.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut p = RequestParser::new();
        let mut pos = 0;
        let mut cmds = Vec::new();
        while let Some(n) = p.parse(&input[pos..], &Limits::default())? {
            let base = p.arg_base(&input[pos..]);
            cmds.push(
                p.ranges()
                    .iter()
                    .map(|&(a, b)| base[a..b].to_vec())
                    .collect(),
            );
            pos += n;
        }
        Ok(cmds)
    }

    #[test]
    fn multibulk_pipeline() {
        let cmds = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n").unwrap();
        assert_eq!(
            cmds,
            vec![vec![b"GET".to_vec(), b"k".to_vec()], vec![b"PING".to_vec()]]
        );
    }

    #[test]
    fn resumes_across_reads() {
        let full = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
        let mut p = RequestParser::new();
        for cut in 0..full.len() {
            assert_eq!(
                p.parse(&full[..cut], &Limits::default()).unwrap(),
                None,
                "cut {cut}"
            );
        }
        assert_eq!(p.parse(full, &Limits::default()).unwrap(), Some(full.len()));
        assert_eq!(p.ranges().len(), 3);
    }

    #[test]
    fn inline_quoting() {
        let cmds = parse_all(b"set \"a b\" 'c\\'d' \"\\x41\\n\"\r\n").unwrap();
        assert_eq!(
            cmds,
            vec![vec![
                b"set".to_vec(),
                b"a b".to_vec(),
                b"c'd".to_vec(),
                b"A\n".to_vec()
            ]]
        );
        assert!(parse_all(b"set \"\"\"x\"\"\" y\r\n").is_err());
        assert_eq!(parse_all(b"\r\n").unwrap(), vec![Vec::<Vec<u8>>::new()]);
    }

    #[test]
    fn protocol_errors() {
        let e = |s: &[u8]| parse_all(s).unwrap_err().0;
        assert_eq!(
            e(b"*3000000000\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            e(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n"),
            "ERR Protocol error: expected '$', got 'f'"
        );
        assert_eq!(
            e(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            e(b"*1\r\n$blabla\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        let big = vec![b'a'; INLINE_MAX_SIZE + 1];
        assert_eq!(e(&big), "ERR Protocol error: too big inline request");
        assert_eq!(parse_all(b"*-10\r\n").unwrap(), vec![Vec::<Vec<u8>>::new()]);
        // The most negative 64-bit count is an empty command too (string2ll takes it).
        assert_eq!(
            parse_all(b"*-9223372036854775808\r\n").unwrap(),
            vec![Vec::<Vec<u8>>::new()]
        );
        assert_eq!(
            e(b"*-9223372036854775809\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            e(b"*9223372036854775808\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            e(b"*1\r\n$-9223372036854775808\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            e(b"*01\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            e(b"*+1\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(e(b"*\r\n"), "ERR Protocol error: invalid multibulk length");
        assert_eq!(
            e(b"*1\r\n$-0\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            e(b"*1\r\n$99999999999999999999\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            parse_all(b"*1\r\n$0\r\n\r\n").unwrap(),
            vec![vec![Vec::new()]]
        );
    }
}
