//! Values as Redis reads and prints them: numbers with units, memory sizes, percentiles,
//! enums and bit flags, notify-keyspace-events letters, client-output-buffer-limit classes,
//! quoting and splitting of config lines.

use super::*;

// ---------------------------------------------------------------------------------------------
// Parsing helpers

/// Redis's memtoull: digits with an optional unit (b, k, kb, m, mb, g, gb; any case).
pub fn memtoull(s: &str) -> Option<u64> {
    if s.starts_with('-') {
        return None;
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (num, unit) = s.split_at(digits);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1_000_000,
        "mb" => 1 << 20,
        "g" => 1_000_000_000,
        "gb" => 1 << 30,
        _ => return None,
    };
    if num.is_empty() {
        // strtoull("") is 0 without EINVAL on glibc only when digits exist; Redis rejects it.
        return None;
    }
    let v: u64 = num.parse().unwrap_or(u64::MAX);
    Some(v.wrapping_mul(mul))
}

/// Memory value as a signed number (kept for callers of the old API).
pub fn parse_memory(s: &str) -> Option<i64> {
    memtoull(s).map(|v| v as i64)
}

/// C strtoll(s, &end, 10) with `*end == '\0'` required: optional leading spaces and sign.
pub(super) fn strtoll_full(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if t.is_empty() {
        // strtoll of "" stops at once; the end pointer is at '\0' and the value 0.
        return if s.is_empty() { Some(0) } else { None };
    }
    let (neg, digits) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let v: i128 = digits.parse().unwrap_or(i128::MAX);
    let v = if neg { -v } else { v };
    Some(v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// Redis's string2d: a float with no leading space and no trailing garbage, not NaN.
pub(super) fn string2d(s: &str) -> Option<f64> {
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// `%f` followed by Redis's trimDoubleString (drop trailing zeros and a bare point).
pub(super) fn fmt_percentile(v: f64) -> String {
    let mut s = format!("{v:.6}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s
}

/// Redis's sdscatrepr: quoted, escaped.
pub fn repr(s: &str) -> String {
    let mut out = String::from("\"");
    for &c in s.as_bytes() {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

/// Redis's rewriteConfigFormatMemory: the largest exact unit.
pub(super) fn fmt_memory(bytes: u64) -> String {
    const GB: u64 = 1 << 30;
    const MB: u64 = 1 << 20;
    const KB: u64 = 1 << 10;
    if bytes != 0 && bytes.is_multiple_of(GB) {
        format!("{}gb", bytes / GB)
    } else if bytes != 0 && bytes.is_multiple_of(MB) {
        format!("{}mb", bytes / MB)
    } else if bytes != 0 && bytes.is_multiple_of(KB) {
        format!("{}kb", bytes / KB)
    } else {
        bytes.to_string()
    }
}

/// The C library's text for an errno (what Redis prints with strerror).
pub fn strerror(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => {
            // SAFETY: strerror returns a pointer to a static, NUL-terminated message.
            unsafe {
                let p = libc::strerror(code);
                if p.is_null() {
                    return e.to_string();
                }
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
        None => e.to_string(),
    }
}

pub fn sdssplitargs(line: &str) -> Option<Vec<String>> {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    tern_resp::split_args(line.as_bytes(), &mut buf, &mut ranges).ok()?;
    Some(
        ranges
            .iter()
            .map(|&(a, b)| String::from_utf8_lossy(&buf[a..b]).into_owned())
            .collect(),
    )
}

pub fn find(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.eq_ignore_ascii_case(name))
    })
}

// ---------------------------------------------------------------------------------------------
// Numeric, enum and special canonical forms

/// Parse a numeric value as Redis's numericParseString; the result is the stored number
/// (percentages negative).
fn parse_num(fmt: NumFmt, v: &str) -> Result<i64, &'static str> {
    match fmt {
        NumFmt::Mem | NumFmt::MemPct => {
            if let Some(m) = memtoull(v) {
                return Ok(m as i64);
            }
            if fmt == NumFmt::MemPct && v.len() > 1 && v.ends_with('%') {
                if let Some(p) = crate::args::parse_i64(&v.as_bytes()[..v.len() - 1]) {
                    if p >= 0 {
                        return Ok(-p);
                    }
                }
            }
            Err(if fmt == NumFmt::MemPct {
                "argument must be a memory or percent value"
            } else {
                "argument must be a memory value"
            })
        }
        NumFmt::Octal => {
            let t = v.trim_start();
            let (neg, d) = match t.as_bytes().first() {
                Some(b'-') => (true, &t[1..]),
                Some(b'+') => (false, &t[1..]),
                _ => (false, t),
            };
            match i64::from_str_radix(d, 8) {
                Ok(x) if !d.is_empty() && !d.starts_with(['+', '-']) => {
                    Ok(if neg { -x } else { x })
                }
                _ => Err("argument couldn't be parsed as an octal number"),
            }
        }
        NumFmt::Int => crate::args::parse_i64(v.as_bytes())
            .ok_or("argument couldn't be parsed into an integer"),
    }
}

pub(super) fn num_canonical(
    p: &Param,
    min: i128,
    max: i128,
    unsigned: bool,
    fmt: NumFmt,
    v: &str,
) -> Result<String, String> {
    let ll = parse_num(fmt, v).map_err(str::to_string)?;
    if unsigned {
        let ull = ll as u64 as i128;
        if ull > max || ull < min {
            return Err(if fmt == NumFmt::Octal {
                format!("argument must be between {min:o} and {max:o} inclusive")
            } else {
                format!("argument must be between {min} and {max} inclusive")
            });
        }
    } else if fmt == NumFmt::MemPct && ll < 0 {
        if (ll as i128) < min {
            return Err(format!(
                "percentage argument must be less or equal to {}",
                -min
            ));
        }
    } else if (ll as i128) > max || (ll as i128) < min {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    let mut ll = ll;
    if p.name == "hz" {
        // A hint: accepted, then capped to the range the server can honour.
        ll = ll.clamp(1, 500);
    }
    Ok(match fmt {
        NumFmt::MemPct if ll < 0 => format!("{}%", -ll),
        NumFmt::Mem | NumFmt::MemPct => (ll as u64).to_string(),
        NumFmt::Octal => format!("{:o}", ll),
        NumFmt::Int if unsigned => (ll as u64).to_string(),
        NumFmt::Int => ll.to_string(),
    })
}

pub(super) fn enum_error(names: &[(&str, i32)]) -> String {
    let list: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
    format!(
        "argument(s) must be one of the following: {}",
        list.join(", ")
    )
}

/// configEnumGetValue: OR of the named values, None on an unknown name or no names.
pub(super) fn enum_value(names: &[(&str, i32)], argv: &[String], bitflags: bool) -> Option<i32> {
    if argv.is_empty() || (!bitflags && argv.len() != 1) {
        return None;
    }
    let mut v = 0;
    for a in argv {
        let mut matched = false;
        for (n, val) in names {
            if n.eq_ignore_ascii_case(a) {
                v |= val;
                matched = true;
            }
        }
        if !matched {
            return None;
        }
    }
    Some(v)
}

/// configEnumGetName.
pub(super) fn enum_name(names: &[(&str, i32)], value: i32, bitflags: bool) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut unmatched = value;
    for (n, val) in names {
        if value == *val {
            return n.to_string();
        }
        if bitflags && *val != 0 && *val == (unmatched & val) {
            out.push(n);
            unmatched &= !val;
        }
    }
    if out.is_empty() || unmatched != 0 {
        return "unknown".into();
    }
    out.join(" ")
}

pub(super) const NOTIFY_KEYSPACE: u32 = 1 << 0;
pub(super) const NOTIFY_KEYEVENT: u32 = 1 << 1;
pub(super) const NOTIFY_KEY_MISS: u32 = 1 << 11;
pub(super) const NOTIFY_NEW: u32 = 1 << 14;
/// Class flags in the order Redis prints them (`A` covers all but `m` and `n`).
const NOTIFY_CLASSES: &[(char, u32)] = &[
    ('g', 1 << 2),
    ('$', 1 << 3),
    ('l', 1 << 4),
    ('s', 1 << 5),
    ('h', 1 << 6),
    ('z', 1 << 7),
    ('x', 1 << 8),
    ('e', 1 << 9),
    ('t', 1 << 10),
    ('d', 1 << 13),
    ('n', NOTIFY_NEW),
];
pub const NOTIFY_ALL: u32 = (1 << 2)
    | (1 << 3)
    | (1 << 4)
    | (1 << 5)
    | (1 << 6)
    | (1 << 7)
    | (1 << 8)
    | (1 << 9)
    | (1 << 10)
    | (1 << 13);

/// keyspaceEventsStringToFlags; None on an unknown class character.
pub fn notify_flags_from_str(s: &str) -> Option<u32> {
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => NOTIFY_ALL,
            'K' => NOTIFY_KEYSPACE,
            'E' => NOTIFY_KEYEVENT,
            'm' => NOTIFY_KEY_MISS,
            c => NOTIFY_CLASSES.iter().find(|(ch, _)| *ch == c)?.1,
        };
    }
    Some(f)
}

/// keyspaceEventsFlagsToString.
pub fn notify_flags_to_str(f: u32) -> String {
    let mut s = String::new();
    if f & NOTIFY_ALL == NOTIFY_ALL {
        s.push('A');
        if f & NOTIFY_NEW != 0 {
            // Redis prints only 'A' for the class flags when all are set; `n` is outside A.
        }
    } else {
        for (c, bit) in NOTIFY_CLASSES {
            if f & bit != 0 {
                s.push(*c);
            }
        }
    }
    if f & NOTIFY_KEYSPACE != 0 {
        s.push('K');
    }
    if f & NOTIFY_KEYEVENT != 0 {
        s.push('E');
    }
    if f & NOTIFY_KEY_MISS != 0 {
        s.push('m');
    }
    s
}

/// Client classes of client-output-buffer-limit, in the order CONFIG GET prints them.
pub const OBUF_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// (hard, soft, soft_seconds) per class from the canonical string.
pub fn parse_obuf_limits(canon: &str) -> [(u64, u64, i64); 3] {
    let mut out = [(0, 0, 0); 3];
    let parts: Vec<&str> = canon.split(' ').collect();
    for chunk in parts.chunks(4) {
        if let [class, h, s, t] = chunk {
            if let Some(i) = OBUF_CLASSES.iter().position(|c| c == class) {
                out[i] = (
                    h.parse().unwrap_or(0),
                    s.parse().unwrap_or(0),
                    t.parse().unwrap_or(0),
                );
            }
        }
    }
    out
}

pub(super) fn obuf_canonical(v: &[(u64, u64, i64); 3]) -> String {
    OBUF_CLASSES
        .iter()
        .zip(v.iter())
        .map(|(c, (h, s, t))| format!("{c} {h} {s} {t}"))
        .collect::<Vec<_>>()
        .join(" ")
}
