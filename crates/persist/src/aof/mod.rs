//! Redis 7's append-only file: the multi-part layout (manifest + base + incremental files),
//! reading commands back from a file, and writing a base file in command form.

pub mod manifest;
pub mod rewrite;

pub use manifest::{FileInfo, Manifest, ManifestError};

/// Why reading commands from an AOF stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// The file ends inside a command (a crash while appending): loadable up to the last
    /// complete command when `aof-load-truncated` allows.
    Truncated,
    /// Not the AOF format: never loadable.
    Format,
}

/// Reads commands (`*<argc>` then `$<len>` bulk arguments) from AOF bytes, skipping `#`
/// annotation lines, with the leniency of Redis's loader.
pub struct CommandReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> CommandReader<'a> {
    pub fn new(data: &'a [u8], pos: usize) -> Self {
        CommandReader { data, pos }
    }

    /// Offset of the next unread byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// One line as fgets returns it (through the newline, or up to the end); None at EOF.
    fn line(&mut self) -> Option<&'a [u8]> {
        if self.pos >= self.data.len() {
            return None;
        }
        let rest = &self.data[self.pos..];
        let n = rest
            .iter()
            .position(|&c| c == b'\n')
            .map(|p| p + 1)
            .unwrap_or(rest.len());
        self.pos += n;
        Some(&rest[..n])
    }

    /// The next command, None at the end of the data.
    #[allow(clippy::type_complexity)]
    pub fn next_command(&mut self) -> Result<Option<Vec<&'a [u8]>>, ReadError> {
        let head = loop {
            match self.line() {
                None => return Ok(None),
                Some(l) if l[0] == b'#' => continue,
                Some(l) => break l,
            }
        };
        if head[0] != b'*' {
            return Err(ReadError::Format);
        }
        if head.len() == 1 {
            return Err(ReadError::Truncated);
        }
        let argc = atoi(&head[1..]);
        if argc < 1 {
            return Err(ReadError::Format);
        }
        let mut argv = Vec::with_capacity((argc as usize).min(1024));
        for _ in 0..argc {
            let l = self.line().ok_or(ReadError::Truncated)?;
            if l[0] != b'$' {
                return Err(ReadError::Format);
            }
            let len = atoi(&l[1..]);
            if len < 0 {
                return Err(ReadError::Format);
            }
            let len = len as usize;
            if self.data.len() - self.pos < len {
                self.pos = self.data.len();
                return Err(ReadError::Truncated);
            }
            argv.push(&self.data[self.pos..self.pos + len]);
            self.pos += len;
            if self.data.len() - self.pos < 2 {
                self.pos = self.data.len();
                return Err(ReadError::Truncated);
            }
            self.pos += 2;
        }
        Ok(Some(argv))
    }
}

/// C's atoi/strtol on a line: optional spaces and sign, digits, anything after ignored.
fn atoi(s: &[u8]) -> i64 {
    let mut i = 0;
    while i < s.len() && (s[i] == b' ' || s[i] == b'\t') {
        i += 1;
    }
    let neg = i < s.len() && s[i] == b'-';
    if i < s.len() && (s[i] == b'-' || s[i] == b'+') {
        i += 1;
    }
    let mut n: i64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n.saturating_mul(10).saturating_add((s[i] - b'0') as i64);
        i += 1;
    }
    if neg {
        -n
    } else {
        n
    }
}

/// True when `data` starts like an RDB file (an RDB base, or an old RDB-preamble AOF).
pub fn is_rdb(data: &[u8]) -> bool {
    data.starts_with(b"REDIS")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_commands_and_detects_truncation() {
        let data =
            b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n#TS:1\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nvv\r\n";
        let mut r = CommandReader::new(data, 0);
        assert_eq!(
            r.next_command().unwrap().unwrap(),
            vec![&b"SELECT"[..], b"0"]
        );
        assert_eq!(
            r.next_command().unwrap().unwrap(),
            vec![&b"SET"[..], b"k", b"vv"]
        );
        assert_eq!(r.next_command().unwrap(), None);
        for cut in 1..data.len() {
            let mut r = CommandReader::new(&data[..cut], 0);
            let mut got = 0;
            loop {
                match r.next_command() {
                    Ok(Some(_)) => got += 1,
                    Ok(None) => break,
                    Err(e) => {
                        assert_eq!(e, ReadError::Truncated, "cut {cut}");
                        break;
                    }
                }
            }
            assert!(got <= 2);
        }
        let mut r = CommandReader::new(b"garbage\r\n", 0);
        assert_eq!(r.next_command(), Err(ReadError::Format));
        let mut r = CommandReader::new(b"*1\r\nxx\r\n", 0);
        assert_eq!(r.next_command(), Err(ReadError::Format));
    }
}
