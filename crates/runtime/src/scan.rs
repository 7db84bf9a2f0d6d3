//! What every SCAN-family command shares: Redis's cursor parsing, the MATCH/COUNT/TYPE/NOVALUES
//! options, the work budget of one call, the bucket-by-bucket dict walk and the reply shape.

use crate::args::{eq_ic, parse_i64, Args, ERR_NOT_INT, ERR_SYNTAX};
use crate::ctx::Ctx;
use crate::glob;
use tern_engine::dict::Dict;
use tern_engine::Entry;

/// Parse a SCAN-family cursor the way Redis's `strtoul`-based parser does: decimal, optional
/// sign (a minus wraps), no leading space, nothing after the digits, no overflow. An empty
/// string is cursor 0. Errors with "invalid cursor".
pub fn parse_scan_cursor(arg: &[u8]) -> Result<u64, &'static str> {
    const ERR: &str = "ERR invalid cursor";
    if arg.is_empty() {
        return Ok(0);
    }
    let (neg, digits) = match arg[0] {
        b'-' => (true, &arg[1..]),
        b'+' => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(ERR);
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((d - b'0') as u64))
            .ok_or(ERR)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// The options every SCAN-family command accepts.
#[derive(Debug, Clone, Copy)]
pub struct ScanOpts<'a> {
    /// COUNT: how many elements to try to visit per call (a hint).
    pub count: usize,
    /// MATCH pattern; None when absent or exactly `*`.
    pub pattern: Option<&'a [u8]>,
    /// TYPE filter (SCAN only); an unknown type name matches nothing.
    pub type_name: Option<&'a [u8]>,
}

impl<'a> ScanOpts<'a> {
    /// Parse `args[from..]` (COUNT n, MATCH pat, and TYPE t when `allow_type`).
    pub fn parse(args: &Args<'a>, from: usize, allow_type: bool) -> Result<Self, &'static str> {
        let mut o = ScanOpts {
            count: 10,
            pattern: None,
            type_name: None,
        };
        let mut i = from;
        while i < args.len() {
            let left = args.len() - i;
            let a = args.get(i);
            if eq_ic(a, "count") && left >= 2 {
                let n = parse_i64(args.get(i + 1)).ok_or(ERR_NOT_INT)?;
                if n < 1 {
                    return Err(ERR_SYNTAX);
                }
                o.count = n as usize;
            } else if eq_ic(a, "match") && left >= 2 {
                let p = args.get(i + 1);
                o.pattern = if p == b"*" { None } else { Some(p) };
            } else if allow_type && eq_ic(a, "type") && left >= 2 {
                o.type_name = Some(args.get(i + 1));
            } else {
                return Err(ERR_SYNTAX);
            }
            i += 2;
        }
        Ok(o)
    }

    #[inline]
    pub fn matches(&self, item: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob::matches(p, item, false))
    }
}

/// The work limit of one SCAN call, shared by every table it walks: stop once `count`
/// elements were visited, or after `count * 10` extra bucket steps over sparse tables.
#[derive(Debug, Clone, Copy)]
pub struct ScanBudget {
    pub count: usize,
    pub sampled: usize,
    pub steps_left: usize,
}

impl ScanBudget {
    pub fn new(count: usize) -> ScanBudget {
        ScanBudget {
            count,
            sampled: 0,
            steps_left: count.saturating_mul(10),
        }
    }

    pub fn exhausted(&self) -> bool {
        self.sampled >= self.count || self.steps_left == 0
    }
}

/// Walk `dict` from `cursor` bucket by bucket, calling `f` on every entry, until the table is
/// done (returns 0) or the budget runs out (returns the cursor to resume from). This is the
/// building block for SCAN, and for HSCAN/SSCAN/ZSCAN over hash-table encoded values.
pub fn scan_dict(
    dict: &Dict,
    mut cursor: u64,
    budget: &mut ScanBudget,
    mut f: impl FnMut(&Entry),
) -> u64 {
    loop {
        cursor = dict.scan(cursor, |e| {
            budget.sampled += 1;
            f(e)
        });
        if cursor == 0 || budget.sampled >= budget.count || budget.steps_left == 0 {
            return cursor;
        }
        budget.steps_left -= 1;
    }
}

/// Write the `[cursor, [items...]]` reply every SCAN-family command sends.
pub fn reply_scan<T: AsRef<[u8]>>(ctx: &mut Ctx, cursor: u64, items: &[T]) {
    ctx.out.array(2);
    let mut buf = itoa::Buffer::new();
    ctx.out.bulk(buf.format(cursor).as_bytes());
    ctx.out.array(items.len());
    for it in items {
        ctx.out.bulk(it.as_ref());
    }
}
