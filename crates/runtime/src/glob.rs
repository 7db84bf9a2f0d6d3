//! Glob-style matching with the exact semantics of Redis's `stringmatchlen`: `*`, `?`,
//! `[...]` classes (ranges, `^` negation, `\` escapes inside), `\` escapes, optional
//! ASCII case folding, and the same defences against pathological patterns (a recursion
//! depth cap and the "skip longer matches" short cut after a failed `*` expansion).
//!
//! Byte-level quirks are kept on purpose so results are identical to Redis: an unterminated
//! class ends at the end of the pattern, range endpoints may come in either order, and range
//! endpoints compare as C `char`s (signed), so bytes >= 0x80 sort below ASCII in ranges.

/// Deepest `*` nesting explored before a match attempt gives up (reports no match).
const MAX_NESTING: usize = 1000;

/// True when `string` matches the glob `pattern`. `nocase` folds ASCII letters.
pub fn matches(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let mut give_up = false;
    match_at(pattern, string, nocase, &mut give_up, 0)
}

/// ASCII-only lower-casing (the C library's `tolower` in the "C" locale).
#[inline]
fn fold(c: u8, nocase: bool) -> u8 {
    if nocase {
        c.to_ascii_lowercase()
    } else {
        c
    }
}

/// A byte as the C code's range test sees it: a signed `char`.
#[inline]
fn signed(c: u8) -> i32 {
    (c as i8) as i32
}

/// glibc's `tolower` on a signed char value in the "C" locale: ASCII letters fold, and
/// negative values other than -1 (EOF) come back as their unsigned equivalent.
#[inline]
fn c_tolower(v: i32) -> i32 {
    match v {
        65..=90 => v + 32,
        -128..=-2 => v + 256,
        _ => v,
    }
}

fn match_at(pat: &[u8], s: &[u8], nocase: bool, give_up: &mut bool, nesting: usize) -> bool {
    if nesting > MAX_NESTING {
        return false;
    }
    // Bytes past the end read as NUL, like the terminator the C code relies on.
    let at = |i: usize| -> u8 { pat.get(i).copied().unwrap_or(0) };
    let mut p = 0usize;
    let mut si = 0usize;
    while p < pat.len() && si < s.len() {
        match pat[p] {
            b'*' => {
                while p < pat.len() && at(p + 1) == b'*' {
                    p += 1;
                }
                if pat.len() - p == 1 {
                    return true;
                }
                while si < s.len() {
                    if match_at(&pat[p + 1..], &s[si..], nocase, give_up, nesting + 1) {
                        return true;
                    }
                    if *give_up {
                        return false;
                    }
                    si += 1;
                }
                // The rest of the pattern matches nowhere in the rest of the string, so no
                // earlier `*` can help by consuming more: stop every pending expansion.
                *give_up = true;
                return false;
            }
            b'?' => si += 1,
            b'[' => {
                p += 1;
                let negate = p < pat.len() && pat[p] == b'^';
                if negate {
                    p += 1;
                }
                let c = s[si];
                let mut hit = false;
                loop {
                    let left = pat.len().saturating_sub(p);
                    if at(p) == b'\\' && left >= 2 {
                        p += 1;
                        if pat[p] == c {
                            hit = true;
                        }
                    } else if at(p) == b']' && left >= 1 {
                        break;
                    } else if left == 0 {
                        // Unterminated class: step back so the shared advance below lands
                        // exactly on the end of the pattern.
                        p -= 1;
                        break;
                    } else if left >= 3 && pat[p + 1] == b'-' {
                        // Endpoints are ordered first, then folded (so folding can leave
                        // an empty range), exactly as Redis does.
                        let mut lo = signed(pat[p]);
                        let mut hi = signed(pat[p + 2]);
                        let mut v = signed(c);
                        if lo > hi {
                            std::mem::swap(&mut lo, &mut hi);
                        }
                        if nocase {
                            lo = c_tolower(lo);
                            hi = c_tolower(hi);
                            v = c_tolower(v);
                        }
                        p += 2;
                        if v >= lo && v <= hi {
                            hit = true;
                        }
                    } else if fold(pat[p], nocase) == fold(c, nocase) {
                        hit = true;
                    }
                    p += 1;
                }
                if negate {
                    hit = !hit;
                }
                if !hit {
                    return false;
                }
                si += 1;
            }
            b => {
                let lit = if b == b'\\' && pat.len() - p >= 2 {
                    p += 1;
                    pat[p]
                } else {
                    b
                };
                if fold(lit, nocase) != fold(s[si], nocase) {
                    return false;
                }
                si += 1;
            }
        }
        p += 1;
        if si == s.len() {
            while p < pat.len() && pat[p] == b'*' {
                p += 1;
            }
            break;
        }
    }
    p == pat.len() && si == s.len()
}

#[cfg(test)]
mod tests {
    use super::matches;

    fn m(p: &str, s: &str) -> bool {
        matches(p.as_bytes(), s.as_bytes(), false)
    }

    #[test]
    fn literals_and_wildcards() {
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(!m("a", ""));
        // Redis quirk: a pattern is never matched against an empty string, even "*".
        assert!(!m("*", ""));
        assert!(!m("**", ""));
        assert!(m("*", "anything"));
        assert!(m("foo", "foo"));
        assert!(!m("foo", "fo"));
        assert!(!m("foo", "fooo"));
        assert!(m("f*o", "fo"));
        assert!(m("f*o", "fxxxo"));
        assert!(!m("f*o", "fxxxp"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("*o*", "foo"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXcYYb"));
        assert!(!m("?", ""));
        assert!(m("a**", "a"));
        assert!(m("a*", "a"));
    }

    #[test]
    fn classes() {
        assert!(m("h[ae]llo", "hello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(!m("h[a-b]llo", "hcllo"));
        // reversed range
        assert!(m("h[b-a]llo", "hallo"));
        // escaped characters in a class
        assert!(m("[\\]]", "]"));
        assert!(m("[\\-]", "-"));
        assert!(!m("[\\-]", "a"));
        // unterminated class: everything to the end is the class
        assert!(m("[abc", "a"));
        assert!(m("[abc", "c"));
        assert!(!m("[abc", "d"));
        assert!(!m("x[", "x["));
        assert!(!m("x[", "x"));
        assert!(!m("x[", "xa"));
        assert!(m("[^", "a"));
        // "a-]" is a range from 'a' down to ']' (the class stays unterminated)
        assert!(!m("[a-]", "-"));
        assert!(m("[a-]", "^"));
        assert!(!m("[]", "]"));
        // high bytes compare as signed chars in ranges
        assert!(!matches(b"[a-\xff]", b"b", false));
        assert!(!matches(b"[a-\xff]", b"\x80", false));
        assert!(matches(b"[a-\xff]", b"A", false));
        assert!(matches(b"[\x80-\xff]", b"\x90", false));
    }

    #[test]
    fn escapes() {
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "a"));
        assert!(m("\\?", "?"));
        assert!(m("a\\", "a\\"));
        assert!(m("\\\\", "\\"));
        assert!(m("h\\[llo", "h[llo"));
    }

    #[test]
    fn nocase() {
        assert!(matches(b"HeLLo", b"hello", true));
        assert!(!matches(b"HeLLo", b"hello", false));
        assert!(matches(b"[A-C]x", b"bX", true));
        assert!(matches(b"[B]", b"b", true));
        assert!(!matches(b"[B]", b"b", false));
    }

    #[test]
    fn binary_and_nul() {
        assert!(matches(b"a\0*", b"a\0bc", false));
        assert!(!matches(b"a\0", b"a", false));
        assert!(matches(b"?\0", b"x\0", false));
    }

    #[test]
    fn pathological_patterns_finish() {
        let pat = "a*".repeat(40) + "b";
        let s = "a".repeat(100);
        let t = std::time::Instant::now();
        assert!(!m(&pat, &s));
        assert!(t.elapsed().as_secs() < 2);
        let pat = "*".repeat(100_000) + "x";
        assert!(!m(&pat, "abc"));
        // deep nesting is cut off and reports no match
        let mut pat = String::new();
        for _ in 0..1500 {
            pat.push_str("*a");
        }
        let s = "a".repeat(1500);
        assert!(!m(&pat, &s));
    }

    fn unhex(h: &str) -> Vec<u8> {
        if h == "-" {
            return Vec::new();
        }
        (0..h.len() / 2)
            .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).expect("hex"))
            .collect()
    }

    /// Differential check against golden results produced by Redis's own matcher: a file of
    /// `nocase pattern-hex string-hex expected` lines named by `GLOB_GOLDEN`.
    #[test]
    #[ignore]
    fn golden_against_redis() {
        let path = std::env::var("GLOB_GOLDEN").expect("set GLOB_GOLDEN");
        let text = std::fs::read_to_string(path).expect("read golden file");
        let mut n = 0;
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let (nc, p, s, want) = (f[0] == "1", unhex(f[1]), unhex(f[2]), f[3] == "1");
            assert_eq!(
                matches(&p, &s, nc),
                want,
                "pattern {:?} string {:?} nocase {nc}",
                p,
                s
            );
            n += 1;
        }
        assert!(n > 0);
    }
}
