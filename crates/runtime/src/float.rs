//! Extended-precision floats for INCRBYFLOAT and HINCRBYFLOAT.
//!
//! Redis does this arithmetic in C `long double` (80-bit on x86-64) and prints it with a fixed
//! 17-decimal format, so `0.1 + 0.2` is `0.3` there while f64 would say `0.30000000000000004`.
//! The value lives in an opaque, suitably aligned 16-byte slot; every operation goes through the
//! C helper in `csrc/longdouble.c`.

use std::os::raw::{c_char, c_int, c_long};

/// A C `long double`, opaque to Rust.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct LongDouble([u8; 16]);

extern "C" {
    fn tern_ld_parse(s: *const c_char, len: usize, out: *mut LongDouble) -> c_int;
    fn tern_ld_from_i64(n: i64, out: *mut LongDouble);
    fn tern_ld_from_f64(d: f64, out: *mut LongDouble);
    fn tern_ld_to_f64(v: *const LongDouble) -> f64;
    fn tern_ld_add(a: *const LongDouble, b: *const LongDouble, out: *mut LongDouble) -> c_int;
    fn tern_ld_format(v: *const LongDouble, human: c_int, buf: *mut c_char, cap: usize) -> c_long;
}

/// Room for the longest fixed-notation long double (about 4950 characters) plus slack.
const FORMAT_CAP: usize = 5 * 1024;

/// Why an increment could not be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncrError {
    /// The stored value is not a valid float.
    BadValue,
    /// The increment argument is not a valid float.
    BadIncrement,
    /// The sum is NaN or infinite.
    NotFinite,
}

impl LongDouble {
    const ZERO_SLOT: LongDouble = LongDouble([0; 16]);

    /// Parse with Redis's rules: the whole input, no leading whitespace, no NaN, no overflow,
    /// no underflow to zero, shorter than 5 KiB.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        let mut out = Self::ZERO_SLOT;
        // SAFETY: `s` is valid for `s.len()` bytes and `out` is a writable, aligned slot of
        // the size the C side checks statically.
        let ok = unsafe { tern_ld_parse(s.as_ptr().cast(), s.len(), &mut out) };
        (ok != 0).then_some(out)
    }

    pub fn from_i64(n: i64) -> LongDouble {
        let mut out = Self::ZERO_SLOT;
        // SAFETY: `out` is a writable, aligned long double slot.
        unsafe { tern_ld_from_i64(n, &mut out) };
        out
    }

    pub fn from_f64(d: f64) -> LongDouble {
        let mut out = Self::ZERO_SLOT;
        // SAFETY: `out` is a writable, aligned long double slot.
        unsafe { tern_ld_from_f64(d, &mut out) };
        out
    }

    pub fn to_f64(&self) -> f64 {
        // SAFETY: `self` holds a long double written by the C side.
        unsafe { tern_ld_to_f64(self) }
    }

    /// The sum, or None when it is NaN or infinite.
    pub fn checked_add(&self, other: &LongDouble) -> Option<LongDouble> {
        let mut out = Self::ZERO_SLOT;
        // SAFETY: both inputs hold long doubles written by the C side; `out` is writable.
        let finite = unsafe { tern_ld_add(self, other, &mut out) };
        (finite != 0).then_some(out)
    }

    fn format(&self, human: bool) -> Vec<u8> {
        let mut buf = vec![0u8; FORMAT_CAP];
        // SAFETY: `buf` is writable for FORMAT_CAP bytes; the C side never writes past `cap`.
        let n = unsafe { tern_ld_format(self, human as c_int, buf.as_mut_ptr().cast(), buf.len()) };
        // Redis stores an empty string if formatting ever fails; the buffer is large enough
        // for any finite long double, so that does not happen in practice.
        buf.truncate(n.max(0) as usize);
        buf
    }

    /// Redis's "human friendly" form: `%.17Lf` without trailing zeros (`10.6`, `3`, `-0.5`).
    pub fn to_human(&self) -> Vec<u8> {
        self.format(true)
    }

    /// `%.17Lg`, Redis's automatic form.
    pub fn to_auto(&self) -> Vec<u8> {
        self.format(false)
    }
}

/// The stored value as a long double: integers convert exactly, other strings are parsed.
pub fn value_of(stored: &[u8]) -> Option<LongDouble> {
    match crate::args::parse_i64(stored) {
        Some(n) => Some(LongDouble::from_i64(n)),
        None => LongDouble::parse(stored),
    }
}

/// `stored + incr` printed the way INCRBYFLOAT replies. A missing value counts as 0.
pub fn incr_by_float(stored: Option<&[u8]>, incr: &[u8]) -> Result<Vec<u8>, IncrError> {
    let base = match stored {
        Some(s) => value_of(s).ok_or(IncrError::BadValue)?,
        None => LongDouble::from_i64(0),
    };
    let by = LongDouble::parse(incr).ok_or(IncrError::BadIncrement)?;
    let sum = base.checked_add(&by).ok_or(IncrError::NotFinite)?;
    Ok(sum.to_human())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> Result<String, IncrError> {
        incr_by_float(Some(a.as_bytes()), b.as_bytes()).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn long_double_sums_print_like_redis() {
        assert_eq!(incr("0.1", "0.2").unwrap(), "0.3");
        assert_eq!(incr("10.5", "0.1").unwrap(), "10.6");
        assert_eq!(incr("10", "-10").unwrap(), "0");
        assert_eq!(incr("-0.5", "0").unwrap(), "-0.5");
        assert_eq!(incr("1", "2").unwrap(), "3");
        assert_eq!(incr("5.0e3", "2.0e2").unwrap(), "5200");
        assert_eq!(incr("17179869184", "1.5").unwrap(), "17179869185.5");
        assert_eq!(
            incr_by_float(None, b"1.5").map(|v| String::from_utf8(v).unwrap()),
            Ok("1.5".to_string())
        );
    }

    #[test]
    fn rejects_what_redis_rejects() {
        for bad in [
            "",
            " 1",
            "1 ",
            "nan",
            "NaN",
            "1x",
            "1e999999",
            "1e-999999",
            "1\0",
        ] {
            assert!(LongDouble::parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
        assert!(LongDouble::parse(&vec![b'1'; 5 * 1024]).is_none());
        assert!(LongDouble::parse(b"inf").is_some());
        assert!(LongDouble::parse(b"0x10").is_some());
        assert_eq!(incr("1", "inf"), Err(IncrError::NotFinite));
        assert_eq!(incr("abc", "1"), Err(IncrError::BadValue));
        assert_eq!(incr("1", "abc"), Err(IncrError::BadIncrement));
    }

    #[test]
    fn conversions() {
        assert_eq!(LongDouble::from_f64(1.25).to_human(), b"1.25");
        assert_eq!(
            LongDouble::from_i64(i64::MIN).to_human(),
            b"-9223372036854775808"
        );
        assert_eq!(LongDouble::parse(b"2.5").unwrap().to_f64(), 2.5);
        assert_eq!(LongDouble::parse(b"0.1").unwrap().to_auto(), b"0.1");
        assert_eq!(LongDouble::parse(b"1e20").unwrap().to_auto(), b"1e+20");
    }
}
