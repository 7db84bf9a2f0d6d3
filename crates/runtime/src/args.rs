//! Command arguments (slices of the connection's read buffer) and the argument parsers every
//! family shares, each failing with Redis's exact error text.

use std::ops::Index;

/// A command's arguments: `args[0]` is the command name.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    base: &'a [u8],
    ranges: &'a [(usize, usize)],
}

impl<'a> Args<'a> {
    pub fn new(base: &'a [u8], ranges: &'a [(usize, usize)]) -> Args<'a> {
        Args { base, ranges }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        let (a, b) = self.ranges[i];
        &self.base[a..b]
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// Arguments from index `from` on, as a new view.
    pub fn tail(&self, from: usize) -> Args<'a> {
        Args {
            base: self.base,
            ranges: &self.ranges[from.min(self.ranges.len())..],
        }
    }

    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(|a| a.to_vec()).collect()
    }

    /// Lossy UTF-8 of one argument, for error messages.
    pub fn str(&self, i: usize) -> String {
        String::from_utf8_lossy(self.get(i)).into_owned()
    }
}

impl Index<usize> for Args<'_> {
    type Output = [u8];
    fn index(&self, i: usize) -> &[u8] {
        self.get(i)
    }
}

/// Owned arguments that can be viewed as `Args` (for internal re-dispatch).
pub struct OwnedArgs {
    buf: Vec<u8>,
    ranges: Vec<(usize, usize)>,
}

impl OwnedArgs {
    pub fn new<I: IntoIterator<Item = T>, T: AsRef<[u8]>>(items: I) -> OwnedArgs {
        let mut buf = Vec::new();
        let mut ranges = Vec::new();
        for it in items {
            let s = buf.len();
            buf.extend_from_slice(it.as_ref());
            ranges.push((s, buf.len()));
        }
        OwnedArgs { buf, ranges }
    }

    /// A copy of parsed arguments, allocated at its exact size.
    pub fn from_args(args: &Args) -> OwnedArgs {
        let total = args.iter().map(<[u8]>::len).sum();
        let mut buf = Vec::with_capacity(total);
        let mut ranges = Vec::with_capacity(args.len());
        for a in args.iter() {
            let s = buf.len();
            buf.extend_from_slice(a);
            ranges.push((s, buf.len()));
        }
        OwnedArgs { buf, ranges }
    }

    pub fn args(&self) -> Args<'_> {
        Args::new(&self.buf, &self.ranges)
    }
}

pub const ERR_NOT_INT: &str = "ERR value is not an integer or out of range";
pub const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
pub const ERR_SYNTAX: &str = "ERR syntax error";
pub const ERR_WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
pub const ERR_NO_SUCH_KEY: &str = "ERR no such key";
pub const ERR_DB_RANGE: &str = "ERR DB index is out of range";
/// Redis's getIntFromObjectOrReply past a C int.
pub const ERR_INT_RANGE: &str =
    "ERR value is out of range, value must between -2147483648 and 2147483647";
pub const ERR_STRING_TOO_LONG: &str =
    "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// Redis's string2ll: canonical integers only.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    tern_engine::value::parse_canonical_i64(s)
}

pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty()
        || s.len() > 20
        || !s.iter().all(u8::is_ascii_digit)
        || (s.len() > 1 && s[0] == b'0')
    {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// Redis's strtod-based float parsing: no leading space, no trailing garbage, no NaN.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s[0].is_ascii_whitespace() || s.len() > 5 * 1024 {
        return None;
    }
    let t = std::str::from_utf8(s).ok()?;
    let lower = t.to_ascii_lowercase();
    let v: f64 = match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => {
            if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        _ => {
            // Rust accepts forms strtod rejects and vice versa only at the margins; refuse the
            // spellings Rust invents (e.g. "infinity" handled above, "nan" below).
            t.parse().ok()?
        }
    };
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// Case-insensitive keyword comparison.
#[inline]
pub fn eq_ic(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// C strtod over the whole of `s`: what Redis accepts where it calls strtod/strtold directly
/// (hex floats, "inf", leading blanks unless `no_leading_space`), rejecting trailing bytes,
/// NaN and out-of-range values. Uses the engine's strtod work-alike (the one scores use).
pub fn strtod_exact(s: &[u8], no_leading_space: bool) -> Option<f64> {
    if no_leading_space && s.first().is_some_and(|c| c.is_ascii_whitespace()) {
        return None;
    }
    let (d, consumed, erange) = tern_engine::types::double::strtod(s);
    if consumed != s.len() || erange || d.is_nan() {
        return None;
    }
    Some(d)
}

#[cfg(test)]
mod strtod_tests {
    use super::strtod_exact;

    #[test]
    fn whole_string_strtod() {
        assert_eq!(strtod_exact(b"1.5", false), Some(1.5));
        assert_eq!(strtod_exact(b"", false), Some(0.0));
        assert_eq!(strtod_exact(b" 3", false), Some(3.0));
        assert_eq!(strtod_exact(b" 3", true), None);
        assert_eq!(strtod_exact(b"0x10", false), Some(16.0));
        assert_eq!(strtod_exact(b"inf", false), Some(f64::INFINITY));
        assert_eq!(strtod_exact(b"nan", false), None);
        assert_eq!(strtod_exact(b"1a", false), None);
        assert_eq!(strtod_exact(b"1e400", false), None);
        assert_eq!(strtod_exact(b"1\0", false), None);
    }
}
