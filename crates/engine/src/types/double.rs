//! Doubles as Redis reads and writes them for sorted-set scores: a `strtod` work-alike (what
//! the score and range parsers accept) and the text form Redis 7.2 stores in listpacks and
//! replies with (integers plainly, others as the shortest round-trip digits laid out the way
//! its `fpconv_dtoa` lays them out, "inf"/"-inf").

/// C `isspace` in the "C" locale.
#[inline]
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Parse the longest prefix of `s` that C's `strtod` would convert. Returns the value, the
/// number of bytes consumed (0 when nothing converts, like `endptr == s`) and whether the
/// conversion over- or underflowed (strtod's ERANGE).
pub fn strtod(s: &[u8]) -> (f64, usize, bool) {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let start_num = i;
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let rest = &s[i..];
    let starts_ic =
        |p: &[u8], w: &str| p.len() >= w.len() && p[..w.len()].eq_ignore_ascii_case(w.as_bytes());
    let sign = if neg { -1.0 } else { 1.0 };
    // inf / infinity
    if starts_ic(rest, "inf") {
        let n = if starts_ic(rest, "infinity") { 8 } else { 3 };
        return (sign * f64::INFINITY, i + n, false);
    }
    // nan, nan(n-char-sequence)
    if starts_ic(rest, "nan") {
        let mut n = 3;
        if rest.len() > 3 && rest[3] == b'(' {
            let mut j = 4;
            while j < rest.len() && (rest[j].is_ascii_alphanumeric() || rest[j] == b'_') {
                j += 1;
            }
            if j < rest.len() && rest[j] == b')' {
                n = j + 1;
            }
        }
        return (f64::NAN, i + n, false);
    }
    // hexadecimal
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        if let Some((v, n)) = parse_hex(&rest[2..]) {
            let v = sign * v;
            let erange = v.is_infinite();
            return (v, i + 2 + n, erange);
        }
        // only the "0" converts
        return (sign * 0.0, i + 1, false);
    }
    // decimal
    let mut j = 0;
    let mut mant_digits = 0;
    let mut nonzero = false;
    while j < rest.len() && rest[j].is_ascii_digit() {
        nonzero |= rest[j] != b'0';
        j += 1;
        mant_digits += 1;
    }
    if j < rest.len() && rest[j] == b'.' {
        j += 1;
        while j < rest.len() && rest[j].is_ascii_digit() {
            nonzero |= rest[j] != b'0';
            j += 1;
            mant_digits += 1;
        }
    }
    if mant_digits == 0 {
        return (0.0, 0, false);
    }
    let mant_end = j;
    if j < rest.len() && (rest[j] | 0x20) == b'e' {
        let mut k = j + 1;
        if k < rest.len() && (rest[k] == b'+' || rest[k] == b'-') {
            k += 1;
        }
        if k < rest.len() && rest[k].is_ascii_digit() {
            while k < rest.len() && rest[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    let _ = mant_end;
    let text = std::str::from_utf8(&s[start_num..i + j]).unwrap_or("0");
    let v: f64 = text.parse().unwrap_or(0.0);
    let erange = v.is_infinite() || (v == 0.0 && nonzero);
    let _ = start_num;
    (v, i + j, erange)
}

fn parse_hex(s: &[u8]) -> Option<(f64, usize)> {
    let mut j = 0;
    let mut mant: f64 = 0.0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    while j < s.len() && s[j].is_ascii_hexdigit() {
        mant = mant * 16.0 + (s[j] as char).to_digit(16)? as f64;
        j += 1;
        digits += 1;
    }
    if j < s.len() && s[j] == b'.' {
        j += 1;
        while j < s.len() && s[j].is_ascii_hexdigit() {
            mant = mant * 16.0 + (s[j] as char).to_digit(16)? as f64;
            exp -= 4;
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if j < s.len() && (s[j] | 0x20) == b'p' {
        let mut k = j + 1;
        let mut eneg = false;
        if k < s.len() && (s[k] == b'+' || s[k] == b'-') {
            eneg = s[k] == b'-';
            k += 1;
        }
        if k < s.len() && s[k].is_ascii_digit() {
            let mut e: i64 = 0;
            while k < s.len() && s[k].is_ascii_digit() {
                e = (e * 10 + (s[k] - b'0') as i64).min(100_000);
                k += 1;
            }
            exp += if eneg { -e } else { e };
            j = k;
        }
    }
    Some((mant * 2f64.powi(exp.clamp(-2000, 2000) as i32), j))
}

/// Redis's getDoubleFromObject for scores: the whole string must convert, no leading space,
/// no overflow/underflow to zero, no NaN.
pub fn parse_score(s: &[u8]) -> Option<f64> {
    if s.is_empty() || is_c_space(s[0]) {
        return None;
    }
    let (v, n, erange) = strtod(s);
    if n != s.len() || v.is_nan() {
        return None;
    }
    if erange && (v.is_infinite() || v == 0.0) {
        return None;
    }
    Some(v)
}

/// Redis's range-item parser (zslParseRange): strtod over the whole string, NaN refused, no
/// other check (leading spaces and the empty string are accepted, overflow gives inf).
pub fn parse_range_double(s: &[u8]) -> Option<f64> {
    let (v, n, _) = strtod(s);
    if n != s.len() || v.is_nan() {
        return None;
    }
    Some(v)
}

/// Redis 7.2's d2string: how a score is printed (and stored in a listpack).
pub fn fmt_double(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Integral values in +-LLONG_MAX/2 print as integers.
    let lim = (i64::MAX / 2) as f64;
    if (-lim..=lim).contains(&d) {
        let ll = d as i64;
        if ll as f64 == d {
            return itoa::Buffer::new().format(ll).to_string();
        }
    }
    fpconv(d)
}

/// Redis 7.2's fpconv_dtoa on its own (no integer shortcut): "0"/"-0", "inf"/"-inf", "nan",
/// else the shortest round-trip digits in fpconv's layout (DEBUG DIGEST hashes scores so).
pub fn fpconv_dtoa(d: f64) -> String {
    if d == 0.0 || !d.is_finite() {
        return fmt_double(d);
    }
    fpconv(d)
}

/// The fpconv_dtoa layout of the shortest round-trip digits of a finite nonzero `d`.
fn fpconv(d: f64) -> String {
    let neg = d < 0.0;
    let sci = format!("{:e}", d.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mant.bytes().filter(|b| b.is_ascii_digit()).collect();
    let nd = digits.len() as i32;
    let k = e - (nd - 1);
    let aexp = e.abs();
    let mut out = String::with_capacity(24);
    if neg {
        out.push('-');
    }
    let push = |out: &mut String, b: &[u8]| out.push_str(std::str::from_utf8(b).unwrap_or(""));
    if k >= 0 && aexp < nd + 7 {
        push(&mut out, &digits);
        for _ in 0..k {
            out.push('0');
        }
        return out;
    }
    if k < 0 && (k > -7 || aexp < 4) {
        let offset = nd - k.abs();
        if offset <= 0 {
            out.push_str("0.");
            for _ in 0..(-offset) {
                out.push('0');
            }
            push(&mut out, &digits);
        } else {
            let o = offset as usize;
            push(&mut out, &digits[..o]);
            out.push('.');
            push(&mut out, &digits[o..]);
        }
        return out;
    }
    let nd = (nd as usize).min(18 - neg as usize);
    out.push(digits[0] as char);
    if nd > 1 {
        out.push('.');
        push(&mut out, &digits[1..nd]);
    }
    out.push('e');
    out.push(if e < 0 { '-' } else { '+' });
    out.push_str(&aexp.to_string());
    out
}

/// C's `%.17g` (what Redis's ld2string AUTO mode prints, e.g. ZSCAN over a skiplist, and
/// what Redis before 7.2 replied): 17 significant digits, trailing zeros dropped, exponent
/// form below 1e-4 or from 1e17 on. "inf"/"-inf"/"nan" spelled as Redis does.
pub fn fmt_g17(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if d == 0.0 {
        return if d.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{:.16e}", d.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mant.bytes().filter(|b| b.is_ascii_digit()).collect();
    let mut out = String::with_capacity(26);
    if d < 0.0 {
        out.push('-');
    }
    let trim = |s: &mut String| {
        if s.contains('.') {
            while s.ends_with('0') {
                s.pop();
            }
            if s.ends_with('.') {
                s.pop();
            }
        }
    };
    if !(-4..17).contains(&x) {
        let mut m = String::new();
        m.push(digits[0] as char);
        m.push('.');
        m.push_str(std::str::from_utf8(&digits[1..]).unwrap_or(""));
        trim(&mut m);
        out.push_str(&m);
        out.push('e');
        out.push(if x < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", x.abs()));
    } else {
        let mut m = String::new();
        if x >= 0 {
            let int_len = x as usize + 1;
            m.push_str(std::str::from_utf8(&digits[..int_len]).unwrap_or(""));
            m.push('.');
            m.push_str(std::str::from_utf8(&digits[int_len..]).unwrap_or(""));
        } else {
            m.push_str("0.");
            for _ in 0..(-x - 1) {
                m.push('0');
            }
            m.push_str(std::str::from_utf8(&digits).unwrap_or(""));
        }
        trim(&mut m);
        out.push_str(&m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(fmt_double(1.0), "1");
        assert_eq!(fmt_double(-0.0), "-0");
        assert_eq!(fmt_double(1.5), "1.5");
        assert_eq!(fmt_double(0.1), "0.1");
        assert_eq!(fmt_double(1.1), "1.1");
        assert_eq!(fmt_double(1e20), "1e+20");
        assert_eq!(fmt_double(1e-7), "1e-7");
        assert_eq!(fmt_double(0.000001), "0.000001");
        assert_eq!(fmt_double(123456.789), "123456.789");
        assert_eq!(fmt_double(f64::INFINITY), "inf");
        assert_eq!(fmt_double(f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_double(-1.5e300), "-1.5e+300");
        assert_eq!(fmt_double(4611686018427387904.0), "4611686018427387904");
        assert_eq!(fmt_double(9223372036854775808.0), "9223372036854776000");
        assert_eq!(fmt_double(3.0e18), "3000000000000000000");
    }

    #[test]
    fn g17() {
        assert_eq!(fmt_g17(1.1), "1.1000000000000001");
        assert_eq!(fmt_g17(1.0), "1");
        assert_eq!(fmt_g17(1.5), "1.5");
        assert_eq!(fmt_g17(1e17), "1e+17");
        assert_eq!(fmt_g17(12345678901234567.0), "12345678901234568");
        assert_eq!(fmt_g17(0.0001), "0.0001");
        assert_eq!(fmt_g17(0.00001), "1.0000000000000001e-05");
        assert_eq!(fmt_g17(-2.5e-300), "-2.5e-300");
        assert_eq!(fmt_g17(1.0 / 3.0), "0.33333333333333331");
        assert_eq!(fmt_g17(9223372036854775808.0), "9.2233720368547758e+18");
        assert_eq!(fmt_g17(5e-324), "4.9406564584124654e-324");
        assert_eq!(fmt_g17(123.456), "123.456");
    }

    #[test]
    fn parsing() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"-INF"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"nan"), None);
        assert_eq!(parse_score(b" 1"), None);
        assert_eq!(parse_score(b"1 "), None);
        assert_eq!(parse_score(b"1e400"), None);
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b".5"), Some(0.5));
        assert_eq!(parse_score(b"5."), Some(5.0));
        assert_eq!(parse_score(b""), None);
        assert_eq!(parse_range_double(b""), Some(0.0));
        assert_eq!(parse_range_double(b" 3"), Some(3.0));
        assert_eq!(parse_range_double(b"1e400"), Some(f64::INFINITY));
        assert_eq!(parse_range_double(b"abc"), None);
    }
}

#[cfg(test)]
mod more_tests {
    use super::*;

    #[test]
    fn strtod_forms() {
        for (s, v) in [
            ("+.5", Some(0.5)),
            ("-.5e1", Some(-5.0)),
            ("5.e3", Some(5000.0)),
            ("infinity", Some(f64::INFINITY)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("0x1p-2", Some(0.25)),
            ("0x.8", Some(0.5)),
            ("0X1P+4", Some(16.0)),
            ("1e-320", Some(1e-320)),
        ] {
            assert_eq!(parse_score(s.as_bytes()), v, "{s}");
        }
        for s in [
            ".", "+", "e5", "-nan", "nan(123)", "1_000", "1e", "1e+", "0x", "--1", "1.2.3",
        ] {
            assert_eq!(parse_score(s.as_bytes()), None, "{s}");
        }
        assert_eq!(parse_range_double(b"0x"), None);
        assert_eq!(strtod(b"0x").1, 1);
        assert_eq!(strtod(b"1e+").1, 1);
    }
}
