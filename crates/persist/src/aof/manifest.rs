//! The multi-part AOF manifest (Redis 7): one line per file,
//! `file <name> seq <n> type <b|h|i>`, base first, then history, then incremental files.

/// One file of the AOF set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    pub name: String,
    pub seq: i64,
    /// b (base), h (history), i (incremental).
    pub kind: u8,
}

pub const BASE: u8 = b'b';
pub const HIST: u8 = b'h';
pub const INCR: u8 = b'i';

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<FileInfo>,
    pub history: Vec<FileInfo>,
    pub incrs: Vec<FileInfo>,
    pub base_seq: i64,
    pub incr_seq: i64,
}

/// A manifest that cannot be used, with the line it stopped at (as Redis reports it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    pub msg: &'static str,
    pub line: Option<(usize, String)>,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.line {
            Some((n, l)) => write!(
                f,
                "Reading the manifest file, at line {n}: '{l}': {}",
                self.msg
            ),
            None => write!(f, "{}", self.msg),
        }
    }
}

const MAX_LINE: usize = 1024;

impl Manifest {
    /// Parse a manifest the way Redis's loader does (same checks, same messages).
    pub fn parse(text: &[u8]) -> Result<Manifest, ManifestError> {
        let mut m = Manifest::default();
        let mut maxseq = 0i64;
        let mut linenum = 0;
        let err = |msg, line: Option<(usize, String)>| Err(ManifestError { msg, line });
        if text.is_empty() {
            return err("Found an empty AOF manifest", None);
        }
        let mut rest = text;
        while !rest.is_empty() {
            // fgets reads at most MAX_LINE bytes per call.
            let take = rest
                .iter()
                .take(MAX_LINE)
                .position(|&c| c == b'\n')
                .map(|p| p + 1)
                .unwrap_or(rest.len().min(MAX_LINE));
            let raw = &rest[..take];
            rest = &rest[take..];
            linenum += 1;
            if raw[0] == b'#' {
                continue;
            }
            if !raw.contains(&b'\n') {
                return err("The AOF manifest file contains too long line", None);
            }
            let line = String::from_utf8_lossy(raw)
                .trim_matches(|c| c == ' ' || c == '\t' || c == '\r' || c == '\n')
                .to_string();
            let at = || Some((linenum, line.clone()));
            if line.is_empty() {
                return err("Invalid AOF manifest file format", at());
            }
            let argv = match split_args(line.as_bytes()) {
                Some(a) if a.len() >= 6 && a.len() % 2 == 0 => a,
                _ => return err("Invalid AOF manifest file format", at()),
            };
            let (mut name, mut seq, mut kind) = (None, 0i64, 0u8);
            for pair in argv.chunks(2) {
                let k = String::from_utf8_lossy(&pair[0]).to_ascii_lowercase();
                match k.as_str() {
                    "file" => {
                        let n = String::from_utf8_lossy(&pair[1]).into_owned();
                        if n.contains('/') {
                            return err("File can't be a path, just a filename", at());
                        }
                        name = Some(n);
                    }
                    "seq" => seq = atoll(&pair[1]),
                    "type" => kind = pair[1].first().copied().unwrap_or(0),
                    _ => {}
                }
            }
            let Some(name) = name.filter(|n| !n.is_empty()) else {
                return err("Invalid AOF manifest file format", at());
            };
            if seq == 0 || kind == 0 {
                return err("Invalid AOF manifest file format", at());
            }
            let info = FileInfo { name, seq, kind };
            match kind {
                BASE => {
                    if m.base.is_some() {
                        return err("Found duplicate base file information", at());
                    }
                    m.base_seq = seq;
                    m.base = Some(info);
                }
                HIST => m.history.push(info),
                INCR => {
                    if seq <= maxseq {
                        return err("Found a non-monotonic sequence number", at());
                    }
                    maxseq = seq;
                    m.incr_seq = seq;
                    m.incrs.push(info);
                }
                _ => return err("Unknown AOF file type", at()),
            }
        }
        if linenum == 0 {
            return err("Found an empty AOF manifest", None);
        }
        Ok(m)
    }

    /// The manifest text: base, history, incremental files.
    pub fn format(&self) -> String {
        let mut out = String::new();
        for f in self
            .base
            .iter()
            .chain(self.history.iter())
            .chain(self.incrs.iter())
        {
            let name = if needs_repr(f.name.as_bytes()) {
                repr(f.name.as_bytes())
            } else {
                f.name.clone()
            };
            out.push_str(&format!(
                "file {name} seq {} type {}\n",
                f.seq, f.kind as char
            ));
        }
        out
    }

    /// A new base file name (`<appendfilename>.<seq>.base.<rdb|aof>`); the current base, if
    /// any, becomes history.
    pub fn new_base(&mut self, filename: &str, rdb: bool) -> String {
        if let Some(mut b) = self.base.take() {
            b.kind = HIST;
            self.history.insert(0, b);
        }
        self.base_seq += 1;
        let name = format!(
            "{filename}.{}.base.{}",
            self.base_seq,
            if rdb { "rdb" } else { "aof" }
        );
        self.base = Some(FileInfo {
            name: name.clone(),
            seq: self.base_seq,
            kind: BASE,
        });
        name
    }

    /// A new incremental file name, added last.
    pub fn new_incr(&mut self, filename: &str) -> String {
        self.incr_seq += 1;
        let name = format!("{filename}.{}.incr.aof", self.incr_seq);
        self.incrs.push(FileInfo {
            name: name.clone(),
            seq: self.incr_seq,
            kind: INCR,
        });
        name
    }

    /// After a rewrite: every incremental file but the last one (being written) is history.
    pub fn incrs_to_history(&mut self, keep_last: bool) {
        let keep = if keep_last { self.incrs.pop() } else { None };
        for mut f in self.incrs.drain(..).rev() {
            f.kind = HIST;
            self.history.insert(0, f);
        }
        if let Some(k) = keep {
            self.incrs.push(k);
        }
    }

    /// Files the load reads, in order (base first).
    pub fn load_order(&self) -> Vec<&FileInfo> {
        self.base.iter().chain(self.incrs.iter()).collect()
    }
}

fn atoll(s: &[u8]) -> i64 {
    let s = std::str::from_utf8(s).unwrap_or("").trim_start();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let n: i64 = digits
        .bytes()
        .take_while(|c| c.is_ascii_digit())
        .fold(0i64, |a, c| {
            a.wrapping_mul(10).wrapping_add((c - b'0') as i64)
        });
    if neg {
        -n
    } else {
        n
    }
}

/// Redis's sdsneedsrepr: quoting needed for the manifest.
pub fn needs_repr(s: &[u8]) -> bool {
    s.iter().any(|&c| {
        c == b'\\'
            || c == b'"'
            || c == b'\n'
            || c == b'\r'
            || c == b'\t'
            || c == 7
            || c == 8
            || !(0x20..0x7f).contains(&c)
            || c == b' '
            || c == 0x0b
            || c == 0x0c
    })
}

/// Redis's sdscatrepr.
pub fn repr(s: &[u8]) -> String {
    let mut out = String::from("\"");
    for &c in s {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            c if (0x20..0x7f).contains(&c) => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Redis's sdssplitargs: space-separated words, "double quoted" with escapes, 'single quoted'.
/// None on unbalanced quotes (or a closing quote not followed by a space).
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return Some(out);
        }
        let mut cur = Vec::new();
        let (mut inq, mut insq) = (false, false);
        loop {
            if inq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && hex(line[i + 2]).is_some()
                    && hex(line[i + 3]).is_some()
                {
                    cur.push(hex(line[i + 2])? * 16 + hex(line[i + 3])?);
                    i += 3;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        o => o,
                    });
                } else if c == b'"' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if insq {
                if i >= n {
                    return None;
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => cur.push(c),
                }
            }
            i += 1;
        }
        out.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut m = Manifest::default();
        let b = m.new_base("appendonly.aof", true);
        let i = m.new_incr("appendonly.aof");
        assert_eq!(b, "appendonly.aof.1.base.rdb");
        assert_eq!(i, "appendonly.aof.1.incr.aof");
        let text = m.format();
        assert_eq!(
            text,
            "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
        );
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), m);
        m.new_incr("appendonly.aof");
        m.new_base("appendonly.aof", false);
        m.incrs_to_history(true);
        let text = m.format();
        assert_eq!(
            text,
            "file appendonly.aof.2.base.aof seq 2 type b\n\
             file appendonly.aof.1.incr.aof seq 1 type h\n\
             file appendonly.aof.1.base.rdb seq 1 type h\n\
             file appendonly.aof.2.incr.aof seq 2 type i\n"
        );
        assert_eq!(Manifest::parse(text.as_bytes()).unwrap(), m);
    }

    #[test]
    fn quoted_names_and_errors() {
        let mut m = Manifest::default();
        m.new_base("my file", false);
        let text = m.format();
        assert_eq!(text, "file \"my file.1.base.aof\" seq 1 type b\n");
        assert_eq!(
            Manifest::parse(text.as_bytes()).unwrap().base.unwrap().name,
            "my file.1.base.aof"
        );
        assert_eq!(
            Manifest::parse(b"").unwrap_err().msg,
            "Found an empty AOF manifest"
        );
        assert_eq!(
            Manifest::parse(b"file a seq 1\n").unwrap_err().msg,
            "Invalid AOF manifest file format"
        );
        assert_eq!(
            Manifest::parse(b"file a seq 2 type i\nfile b seq 1 type i\n")
                .unwrap_err()
                .msg,
            "Found a non-monotonic sequence number"
        );
        assert_eq!(
            Manifest::parse(b"file a seq 1 type x\n").unwrap_err().msg,
            "Unknown AOF file type"
        );
        assert_eq!(
            Manifest::parse(b"file a/b seq 1 type b\n").unwrap_err().msg,
            "File can't be a path, just a filename"
        );
        assert!(Manifest::parse(b"# comment\nfile a seq 1 type b\n").is_ok());
    }
}
