//! Lua 5.1 string patterns: `string.find`, `string.match`, `string.gmatch` and `string.gsub`,
//! in Rust so that a script stuck in a backtracking pattern can be stopped.
//!
//! Lua's count hook never fires inside a C function, and a pattern such as
//! `string.rep('a*', 8) .. 'b'` against a long run of `a` backtracks for hours. The matcher
//! here counts its work (one unit per matching step, one per subject byte scanned in bulk) and
//! polls the server every [`POLL_WORK`] units (see `crate::interrupt`), so SCRIPT KILL and the
//! busy-script replies work as they do for a script looping in Lua code.
//!
//! The behaviour is Lua 5.1's, as specified by its reference manual (§5.4.1), including the
//! corners a script can observe:
//! - a pattern ends at its first NUL byte (use `%z` to match a NUL);
//! - `^` anchors only at the start of the pattern of `find`, `match` and `gsub` (never in
//!   `gmatch`), `$` only as the last character; elsewhere both are plain characters;
//! - `%f[set]` sees a NUL before the first and after the last byte of the subject;
//! - `%x` for a non-alphanumeric x, and for a letter that names no class, matches x itself;
//! - a back-reference to a position capture never matches;
//! - `init` is clamped to the subject (`find('abc', '', 10)` is `4, 3`);
//! - classes use the C locale (ASCII only);
//! - in a `gsub` replacement string, `%` before a non-digit stands for that character, and a
//!   trailing `%` for a NUL byte.
//!
//! Lua 5.1 has no limit on the matcher's recursion (one level per pattern item); the C code
//! overflows the C stack on patterns with tens of thousands of items. Here the recursion stops
//! with "pattern too complex" (Lua 5.2's message) before it reaches the end of the thread's
//! stack.
//!
//! Errors are raised with `lua_error` from inside the recursion, as the C code does: the
//! matcher's frames hold only borrowed slices and a fixed array, so the `longjmp` skips nothing
//! that needs dropping.

use crate::interrupt;
use crate::lapi::{self, LuaErr};
use mlua::ffi::{self, lua_State};
use std::cell::Cell;
use std::ffi::{c_char, c_int};

const MAX_CAPTURES: usize = 32;
const CAP_UNFINISHED: isize = -1;
const CAP_POSITION: isize = -2;
const ESC: u8 = b'%';
/// Characters that make `find` use the matcher rather than a plain search.
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let specials = b"^$*+?.([%-";
    let mut i = 0;
    while i < specials.len() {
        t[specials[i] as usize] = true;
        i += 1;
    }
    t
};

/// Work units between two polls of the server: about a millisecond of matching, the same order
/// as the 100000 instructions between two runs of the server's instruction hook.
pub(crate) const POLL_WORK: i64 = 1 << 18;

/// Stack kept free below the deepest matcher frame (for the error path and the poll).
const STACK_MARGIN: usize = 256 * 1024;

#[derive(Clone, Copy)]
struct Capture {
    init: usize,
    /// Length, or CAP_UNFINISHED / CAP_POSITION.
    len: isize,
}

/// One matching run: the subject, the pattern (up to its first NUL) and the captures.
struct Matcher<'a> {
    l: *mut lua_State,
    src: &'a [u8],
    pat: &'a [u8],
    level: usize,
    capture: [Capture; MAX_CAPTURES],
    /// Work left before the next poll.
    budget: i64,
    /// Lowest stack address the recursion may reach.
    stack_floor: usize,
}

impl<'a> Matcher<'a> {
    fn new(l: *mut lua_State, src: &'a [u8], pat: &'a [u8]) -> Matcher<'a> {
        Matcher {
            l,
            src,
            pat,
            level: 0,
            capture: [Capture { init: 0, len: 0 }; MAX_CAPTURES],
            budget: POLL_WORK,
            stack_floor: stack_floor(),
        }
    }

    /// The pattern byte at `i`, NUL past the end (the C string's terminator).
    #[inline(always)]
    fn p(&self, i: usize) -> u8 {
        self.pat.get(i).copied().unwrap_or(0)
    }

    /// The subject byte at `i`, NUL past the end (Lua strings are NUL-terminated).
    #[inline(always)]
    fn s(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn error(&self, m: &[u8]) -> ! {
        // SAFETY: `l` is the running state; see the module comment on raising from here.
        unsafe { lapi::error_where(self.l, m) }
    }

    /// Count `n` units of work; poll the server when the budget is spent.
    #[inline(always)]
    fn spend(&mut self, n: usize) {
        self.budget -= n as i64;
        if self.budget < 0 {
            self.budget = POLL_WORK;
            // SAFETY: as `error`.
            unsafe { interrupt::poll(self.l) };
        }
    }

    #[inline(always)]
    fn check_stack(&self) {
        let marker = 0u8;
        let here = std::hint::black_box(&marker) as *const u8 as usize;
        if here < self.stack_floor {
            self.error(b"pattern too complex");
        }
    }

    /// Index just past the single-character class starting at `p`.
    fn class_end(&self, mut p: usize) -> usize {
        let c = self.p(p);
        p += 1;
        match c {
            ESC => {
                if p >= self.pat.len() {
                    self.error(b"malformed pattern (ends with '%')");
                }
                p + 1
            }
            b'[' => {
                if self.p(p) == b'^' {
                    p += 1;
                }
                // The first character of a set is never its end: `[]]` is the set of `]`.
                loop {
                    if p >= self.pat.len() {
                        self.error(b"malformed pattern (missing ']')");
                    }
                    let c = self.pat[p];
                    p += 1;
                    if c == ESC && p < self.pat.len() {
                        p += 1;
                    }
                    if self.p(p) == b']' {
                        break;
                    }
                }
                p + 1
            }
            _ => p,
        }
    }

    /// Does `c` match the single-character class at `p..ep`?
    #[inline(always)]
    fn single(&self, c: u8, p: usize, ep: usize) -> bool {
        match self.p(p) {
            b'.' => true,
            ESC => class_match(c, self.p(p + 1)),
            b'[' => self.set_match(c, p, ep - 1),
            pc => pc == c,
        }
    }

    /// Does `c` belong to the set `[...]` starting at `p` and closed at `ec`?
    fn set_match(&self, c: u8, mut p: usize, ec: usize) -> bool {
        let mut found = true;
        if self.p(p + 1) == b'^' {
            found = false;
            p += 1;
        }
        loop {
            p += 1;
            if p >= ec {
                return !found;
            }
            let pc = self.pat[p];
            if pc == ESC {
                p += 1;
                if class_match(c, self.p(p)) {
                    return found;
                }
            } else if self.p(p + 1) == b'-' && p + 2 < ec {
                p += 2;
                if pc <= c && c <= self.pat[p] {
                    return found;
                }
            } else if pc == c {
                return found;
            }
        }
    }

    /// Match the pattern from `p` against the subject from `s`: the end of the match, if any.
    fn do_match(&mut self, mut s: usize, mut p: usize) -> Option<usize> {
        self.check_stack();
        self.spend(1);
        loop {
            if p >= self.pat.len() {
                return Some(s);
            }
            match self.pat[p] {
                b'(' => {
                    return if self.p(p + 1) == b')' {
                        self.start_capture(s, p + 2, CAP_POSITION)
                    } else {
                        self.start_capture(s, p + 1, CAP_UNFINISHED)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == self.pat.len() => {
                    return (s == self.src.len()).then_some(s);
                }
                ESC => match self.p(p + 1) {
                    b'b' => {
                        s = self.balance(s, p + 2)?;
                        p += 4;
                        continue;
                    }
                    b'f' => {
                        p += 2;
                        if self.p(p) != b'[' {
                            self.error(b"missing '[' after '%f' in pattern");
                        }
                        let ep = self.class_end(p);
                        let prev = if s == 0 { 0 } else { self.src[s - 1] };
                        if self.set_match(prev, p, ep - 1) || !self.set_match(self.s(s), p, ep - 1)
                        {
                            return None;
                        }
                        p = ep;
                        continue;
                    }
                    d if d.is_ascii_digit() => {
                        s = self.back_reference(s, d)?;
                        p += 2;
                        continue;
                    }
                    _ => {}
                },
                _ => {}
            }
            // A single-character class, maybe with a quantifier.
            let ep = self.class_end(p);
            let m = s < self.src.len() && self.single(self.src[s], p, ep);
            match self.p(ep) {
                b'?' => {
                    if m {
                        if let Some(r) = self.do_match(s + 1, ep + 1) {
                            return Some(r);
                        }
                    }
                    p = ep + 1;
                }
                b'*' => return self.max_expand(s, p, ep),
                b'+' => {
                    return if m {
                        self.max_expand(s + 1, p, ep)
                    } else {
                        None
                    }
                }
                b'-' => return self.min_expand(s, p, ep),
                _ => {
                    if !m {
                        return None;
                    }
                    s += 1;
                    p = ep;
                }
            }
        }
    }

    /// Greedy repetition: the longest run first, then shorter ones.
    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> Option<usize> {
        let mut i = 0;
        while s + i < self.src.len() && self.single(self.src[s + i], p, ep) {
            i += 1;
        }
        self.spend(i);
        loop {
            if let Some(r) = self.do_match(s + i, ep + 1) {
                return Some(r);
            }
            if i == 0 {
                return None;
            }
            i -= 1;
        }
    }

    /// Lazy repetition: the shortest run first, then longer ones.
    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> Option<usize> {
        loop {
            if let Some(r) = self.do_match(s, ep + 1) {
                return Some(r);
            }
            if s < self.src.len() && self.single(self.src[s], p, ep) {
                s += 1;
            } else {
                return None;
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: isize) -> Option<usize> {
        if self.level >= MAX_CAPTURES {
            self.error(b"too many captures");
        }
        self.capture[self.level] = Capture { init: s, len: what };
        self.level += 1;
        let r = self.do_match(s, p);
        if r.is_none() {
            self.level -= 1;
        }
        r
    }

    fn end_capture(&mut self, s: usize, p: usize) -> Option<usize> {
        let Some(l) = (0..self.level)
            .rev()
            .find(|&i| self.capture[i].len == CAP_UNFINISHED)
        else {
            self.error(b"invalid pattern capture");
        };
        self.capture[l].len = (s - self.capture[l].init) as isize;
        let r = self.do_match(s, p);
        if r.is_none() {
            self.capture[l].len = CAP_UNFINISHED;
        }
        r
    }

    /// `%1`..`%9` in a pattern: the text of that (closed) capture again.
    fn back_reference(&mut self, s: usize, digit: u8) -> Option<usize> {
        let l = digit.wrapping_sub(b'1') as usize;
        if l >= self.level || self.capture[l].len == CAP_UNFINISHED {
            self.error(b"invalid capture index");
        }
        let Capture { init, len } = self.capture[l];
        // A position capture has no text: it never matches (C compares its negative length as
        // a huge size).
        let len = usize::try_from(len).ok()?;
        self.spend(len);
        (self.src.len() - s >= len && self.src[init..init + len] == self.src[s..s + len])
            .then_some(s + len)
    }

    /// `%bxy` (x, y at `p`): a balanced run from `s` opened by x and closed by y.
    fn balance(&mut self, s: usize, p: usize) -> Option<usize> {
        if p + 1 >= self.pat.len() {
            self.error(b"unbalanced pattern");
        }
        let (open, close) = (self.pat[p], self.pat[p + 1]);
        if self.s(s) != open {
            return None;
        }
        let mut depth = 1usize;
        let mut i = s + 1;
        while i < self.src.len() {
            let c = self.src[i];
            if c == close {
                depth -= 1;
                if depth == 0 {
                    self.spend(i - s);
                    return Some(i + 1);
                }
            } else if c == open {
                depth += 1;
            }
            i += 1;
        }
        self.spend(i - s);
        None
    }

    /// Push capture `i` of the match `s..e`: capture 0 is the whole match when the pattern
    /// has no captures.
    unsafe fn push_capture(&self, i: usize, s: usize, e: usize) {
        if i >= self.level {
            if i != 0 {
                self.error(b"invalid capture index");
            }
            lapi::push_bytes(self.l, &self.src[s..e]);
            return;
        }
        let Capture { init, len } = self.capture[i];
        match len {
            CAP_UNFINISHED => self.error(b"unfinished capture"),
            CAP_POSITION => ffi::lua_pushinteger(self.l, init as ffi::lua_Integer + 1),
            len => lapi::push_bytes(self.l, &self.src[init..init + len as usize]),
        }
    }

    /// Push every capture (or the whole match `whole` when there is none): how many.
    unsafe fn push_captures(&self, whole: Option<(usize, usize)>) -> c_int {
        let n = if self.level == 0 && whole.is_some() {
            1
        } else {
            self.level
        };
        let (s, e) = whole.unwrap_or((0, 0));
        if !lapi::has_stack(self.l, n as c_int) {
            self.error(b"stack overflow (too many captures)");
        }
        for i in 0..n {
            self.push_capture(i, s, e);
        }
        n as c_int
    }
}

/// The class letters, in the order of their bits in CLASSES_OF.
const CLASS_LETTERS: &[u8; 10] = b"acdlpsuwxz";

/// Whether byte `c` is in the class of letter `l` (C locale: ASCII only).
const fn in_class(c: u8, l: u8) -> bool {
    match l {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        // C's isspace: also the vertical tab.
        b's' => c == b' ' || (c >= b'\t' && c <= b'\r'),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        _ => c == 0,
    }
}

/// For each byte, the classes it belongs to (bit i: CLASS_LETTERS[i]).
static CLASSES_OF: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut c = 0;
    while c < 256 {
        let mut i = 0;
        while i < CLASS_LETTERS.len() {
            if in_class(c as u8, CLASS_LETTERS[i]) {
                t[c] |= 1 << i;
            }
            i += 1;
        }
        c += 1;
    }
    t
};

/// For each byte after `%`: its class bit, with COMPLEMENT for an upper-case letter; 0 for a
/// character that stands for itself.
const COMPLEMENT: u16 = 1 << 15;
static CLASS_OF_ESCAPE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < CLASS_LETTERS.len() {
        let l = CLASS_LETTERS[i];
        t[l as usize] = 1 << i;
        t[l.to_ascii_uppercase() as usize] = (1 << i) | COMPLEMENT;
        i += 1;
    }
    t
};

/// `%a`, `%d`... (`cl` the letter): C-locale classes; an upper-case letter is the complement;
/// any other character stands for itself.
#[inline(always)]
fn class_match(c: u8, cl: u8) -> bool {
    let class = CLASS_OF_ESCAPE[cl as usize];
    if class == 0 {
        return cl == c;
    }
    let res = CLASSES_OF[c as usize] & class & !COMPLEMENT != 0;
    res != (class & COMPLEMENT != 0)
}

thread_local! {
    /// This thread's lowest usable stack address plus STACK_MARGIN, once known.
    static STACK_FLOOR: Cell<usize> = const { Cell::new(0) };
}

/// The lowest address the matcher's recursion may reach on this thread.
fn stack_floor() -> usize {
    STACK_FLOOR.with(|f| {
        if f.get() == 0 {
            f.set(
                thread_stack_low().unwrap_or_else(|| {
                    // Unknown stack: allow 512 KiB below the first call.
                    let marker = 0u8;
                    (std::hint::black_box(&marker) as *const u8 as usize).saturating_sub(512 * 1024)
                }) + STACK_MARGIN,
            );
        }
        f.get()
    })
}

/// The low end of this thread's stack (glibc's view, which includes the main thread's).
fn thread_stack_low() -> Option<usize> {
    // SAFETY: plain libc calls on this thread's own attributes, destroyed after use.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        (ok && !addr.is_null()).then_some(addr as usize)
    }
}

// ---- argument helpers (luaL_check*/opt* that raise at once: no Rust value is alive) ----

unsafe fn check_str<'a>(l: *mut lua_State, idx: c_int) -> &'a [u8] {
    match lapi::to_bytes(l, idx) {
        Some(b) => b,
        None => lapi::raise(l, LuaErr::Type(idx, c"string")),
    }
}

/// `luaL_checkinteger`: numbers and numeric strings, truncated as C converts a double.
unsafe fn check_integer(l: *mut lua_State, idx: c_int) -> i64 {
    // Lua 5.1's lua_tointeger truncates (mlua's compat version gives 0 for 2.5).
    let d = ffi::lua_tonumber(l, idx);
    if d == 0.0 && ffi::lua_isnumber(l, idx) == 0 {
        lapi::raise(l, LuaErr::Type(idx, c"number"));
    }
    lapi::c_f64_to_i64(d)
}

unsafe fn opt_integer(l: *mut lua_State, idx: c_int, default: i64) -> i64 {
    if ffi::lua_type(l, idx) <= ffi::LUA_TNIL {
        default
    } else {
        check_integer(l, idx)
    }
}

/// The pattern as the matcher sees it: up to its first NUL.
fn c_pattern(p: &[u8]) -> &[u8] {
    match memchr::memchr(0, p) {
        Some(n) => &p[..n],
        None => p,
    }
}

/// Where `needle` first occurs in `hay`: a direct scan for short subjects, a linear-time
/// search for long ones (no quadratic worst case to sit in without polling).
fn plain_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    match needle {
        [] => Some(0),
        [c] => memchr::memchr(*c, hay),
        // The C library's way (its first byte, then the rest): no set-up cost, and its
        // quadratic worst case is small on a short subject.
        [first, rest @ ..] if hay.len() < 4096 => {
            let last_start = hay.len().checked_sub(needle.len())?;
            let mut from = 0;
            while from <= last_start {
                let at = from + memchr::memchr(*first, &hay[from..=last_start])?;
                if &hay[at + 1..at + needle.len()] == rest {
                    return Some(at);
                }
                from = at + 1;
            }
            None
        }
        _ => memchr::memmem::find(hay, needle),
    }
}

/// A negative position counts from the end (-1 is the last byte); below the start is 0.
fn relative_position(pos: i64, len: usize) -> i64 {
    let pos = if pos < 0 { pos + len as i64 + 1 } else { pos };
    pos.max(0)
}

// ---- string.find / string.match ----

unsafe fn find_aux(l: *mut lua_State, find: bool) -> c_int {
    let s = check_str(l, 1);
    let p = check_str(l, 2);
    let init = relative_position(opt_integer(l, 3, 1), s.len()) - 1;
    let init = (init.max(0) as usize).min(s.len());
    let pat = c_pattern(p);
    if find && (ffi::lua_toboolean(l, 4) != 0 || !pat.iter().any(|&c| SPECIAL[c as usize])) {
        // A plain search, for the whole pattern (even past a NUL).
        if let Some(at) = plain_find(&s[init..], p) {
            let start = init + at;
            ffi::lua_pushinteger(l, start as ffi::lua_Integer + 1);
            ffi::lua_pushinteger(l, (start + p.len()) as ffi::lua_Integer);
            return 2;
        }
    } else {
        let (anchor, pat) = match pat.split_first() {
            Some((b'^', rest)) => (true, rest),
            _ => (false, pat),
        };
        let mut m = Matcher::new(l, s, pat);
        let mut start = init;
        loop {
            m.level = 0;
            if let Some(e) = m.do_match(start, 0) {
                if find {
                    ffi::lua_pushinteger(l, start as ffi::lua_Integer + 1);
                    ffi::lua_pushinteger(l, e as ffi::lua_Integer);
                    return m.push_captures(None) + 2;
                }
                return m.push_captures(Some((start, e)));
            }
            if anchor || start >= s.len() {
                break;
            }
            start += 1;
        }
    }
    ffi::lua_pushnil(l);
    1
}

unsafe extern "C-unwind" fn str_find(l: *mut lua_State) -> c_int {
    find_aux(l, true)
}

unsafe extern "C-unwind" fn str_match(l: *mut lua_State) -> c_int {
    find_aux(l, false)
}

// ---- string.gmatch ----

unsafe extern "C-unwind" fn str_gmatch(l: *mut lua_State) -> c_int {
    check_str(l, 1);
    check_str(l, 2);
    ffi::lua_settop(l, 2);
    ffi::lua_pushinteger(l, 0);
    ffi::lua_pushcclosure(l, gmatch_step, 3);
    1
}

/// The iterator gmatch returns (upvalues: subject, pattern, where the next search starts).
unsafe extern "C-unwind" fn gmatch_step(l: *mut lua_State) -> c_int {
    let s = lapi::to_bytes(l, ffi::lua_upvalueindex(1)).unwrap_or_default();
    let p = c_pattern(lapi::to_bytes(l, ffi::lua_upvalueindex(2)).unwrap_or_default());
    let mut start = ffi::lua_tonumber(l, ffi::lua_upvalueindex(3)).max(0.0) as usize;
    let mut m = Matcher::new(l, s, p);
    while start <= s.len() {
        m.level = 0;
        if let Some(e) = m.do_match(start, 0) {
            // After an empty match the next search starts one byte further.
            let next = if e == start { e + 1 } else { e };
            ffi::lua_pushinteger(l, next as ffi::lua_Integer);
            ffi::lua_replace(l, ffi::lua_upvalueindex(3));
            return m.push_captures(Some((start, e)));
        }
        start += 1;
    }
    0
}

// ---- string.gsub ----

/// Append `bytes` to the Lua buffer `b` (one copy; large pieces go through the stack).
unsafe fn buf_add(b: *mut ffi::luaL_Buffer, bytes: &[u8]) {
    let end = (*b).buffer.as_mut_ptr().add(ffi::LUAL_BUFFERSIZE);
    let free = end.offset_from((*b).p) as usize;
    if bytes.len() <= free {
        std::ptr::copy_nonoverlapping(bytes.as_ptr() as *const c_char, (*b).p, bytes.len());
        (*b).p = (*b).p.add(bytes.len());
    } else if bytes.len() < ffi::LUAL_BUFFERSIZE {
        let (head, tail) = bytes.split_at(free);
        std::ptr::copy_nonoverlapping(head.as_ptr() as *const c_char, (*b).p, free);
        (*b).p = end;
        let start = ffi::luaL_prepbuffer(b);
        std::ptr::copy_nonoverlapping(tail.as_ptr() as *const c_char, start, tail.len());
        (*b).p = start.add(tail.len());
    } else {
        lapi::push_bytes((*b).L, bytes);
        ffi::luaL_addvalue(b);
    }
}

impl Matcher<'_> {
    /// gsub's replacement for the match `s..e`, appended to `b`; `kind` the type of argument 3.
    unsafe fn add_value(&self, b: *mut ffi::luaL_Buffer, s: usize, e: usize, kind: c_int) {
        let l = self.l;
        match kind {
            ffi::LUA_TFUNCTION => {
                ffi::lua_pushvalue(l, 3);
                let n = self.push_captures(Some((s, e)));
                ffi::lua_call(l, n, 1);
            }
            ffi::LUA_TTABLE => {
                self.push_capture(0, s, e);
                ffi::lua_gettable(l, 3);
            }
            _ => {
                self.add_string(b, s, e);
                return;
            }
        }
        if ffi::lua_toboolean(l, -1) == 0 {
            // nil or false: the match stays as it was.
            ffi::lua_pop(l, 1);
            lapi::push_bytes(l, &self.src[s..e]);
        } else if ffi::lua_isstring(l, -1) == 0 {
            let tname = std::ffi::CStr::from_ptr(ffi::luaL_typename(l, -1)).to_bytes();
            lapi::error_where_parts(l, &[b"invalid replacement value (a ", tname, b")"]);
        }
        ffi::luaL_addvalue(b);
    }

    /// A replacement string: `%0` the match, `%1`..`%9` captures, `%` before anything else
    /// that character.
    unsafe fn add_string(&self, b: *mut ffi::luaL_Buffer, s: usize, e: usize) {
        let news = lapi::to_bytes(self.l, 3).unwrap_or_default();
        let mut i = 0;
        while i < news.len() {
            let lit_end = memchr::memchr(ESC, &news[i..]).map_or(news.len(), |k| i + k);
            buf_add(b, &news[i..lit_end]);
            if lit_end == news.len() {
                break;
            }
            // After the escape: the string's NUL terminator if it was the last byte.
            let c = news.get(lit_end + 1).copied().unwrap_or(0);
            i = lit_end + 2;
            if !c.is_ascii_digit() {
                buf_add(b, &[c]);
            } else if c == b'0' {
                buf_add(b, &self.src[s..e]);
            } else {
                self.push_capture((c - b'1') as usize, s, e);
                ffi::luaL_addvalue(b);
            }
        }
    }
}

unsafe extern "C-unwind" fn str_gsub(l: *mut lua_State) -> c_int {
    let src = check_str(l, 1);
    let p = check_str(l, 2);
    let kind = ffi::lua_type(l, 3);
    // luaL_optint: an int, as C converts it.
    let max_n = opt_integer(l, 4, src.len() as i64 + 1) as i32;
    if !matches!(
        kind,
        ffi::LUA_TNUMBER | ffi::LUA_TSTRING | ffi::LUA_TFUNCTION | ffi::LUA_TTABLE
    ) {
        lapi::raise(
            l,
            LuaErr::Arg(3, b"string/function/table expected".to_vec()),
        );
    }
    let pat = c_pattern(p);
    let (anchor, pat) = match pat.split_first() {
        Some((b'^', rest)) => (true, rest),
        _ => (false, pat),
    };
    let mut b = std::mem::MaybeUninit::<ffi::luaL_Buffer>::uninit();
    let b = b.as_mut_ptr();
    ffi::luaL_buffinit(l, b);
    let mut m = Matcher::new(l, src, pat);
    let mut n: i32 = 0;
    let mut pos = 0;
    // Subject bytes from `copied` to `pos` are kept as they are, not yet in the buffer.
    let mut copied = 0;
    while n < max_n {
        m.level = 0;
        let e = m.do_match(pos, 0);
        if let Some(e) = e {
            n += 1;
            buf_add(b, &src[copied..pos]);
            m.add_value(b, pos, e, kind);
            copied = e;
        }
        match e {
            Some(e) if e > pos => pos = e,
            _ if pos < src.len() => pos += 1,
            _ => break,
        }
        if anchor {
            break;
        }
    }
    buf_add(b, &src[copied..]);
    ffi::luaL_pushresult(b);
    ffi::lua_pushinteger(l, n as ffi::lua_Integer);
    2
}

// ---- string.rep ----

/// Bytes copied between two polls while `string.rep` builds its result.
const REP_CHUNK: usize = 16 << 20;

unsafe extern "C-unwind" fn str_rep(l: *mut lua_State) -> c_int {
    let s = check_str(l, 1);
    // luaL_checkint: an int, as C converts it.
    let n = check_integer(l, 2) as i32;
    if n <= 0 || s.is_empty() {
        lapi::push_bytes(l, b"");
        return 1;
    }
    match repeat(l, s, n as usize) {
        Ok(v) => {
            lapi::push_bytes(l, &v);
            1
        }
        Err(Stop::Memory) => lapi::raise(l, LuaErr::Plain(b"not enough memory".to_vec())),
        Err(Stop::Interrupt(reason)) => interrupt::raise(l, reason),
    }
}

enum Stop {
    Memory,
    Interrupt(u8),
}

/// `s` repeated `n` times, polling the server every REP_CHUNK bytes. The result is dropped
/// before any error is raised.
unsafe fn repeat(l: *mut lua_State, s: &[u8], n: usize) -> Result<Vec<u8>, Stop> {
    let total = s.len().checked_mul(n).ok_or(Stop::Memory)?;
    let mut v = Vec::new();
    v.try_reserve_exact(total).map_err(|_| Stop::Memory)?;
    v.extend_from_slice(s);
    let mut since_poll = 0;
    while v.len() < total {
        // Doubling copies, in chunks so that a kill is seen soon.
        let k = v.len().min(total - v.len()).min(REP_CHUNK);
        v.extend_from_within(..k);
        since_poll += k;
        if since_poll >= REP_CHUNK && v.len() < total {
            since_poll = 0;
            let reason = interrupt::pending(l);
            if reason != 0 {
                return Err(Stop::Interrupt(reason));
            }
        }
    }
    Ok(v)
}

/// Replace `string.find`, `match`, `gmatch`, `gsub` and `rep` of the `string` library with
/// these interruptible versions.
pub fn register(lua: &mlua::Lua) -> mlua::Result<()> {
    let string: mlua::Table = lua.globals().get("string")?;
    let funcs: [(&str, ffi::lua_CFunction); 5] = [
        ("find", str_find),
        ("match", str_match),
        ("gmatch", str_gmatch),
        ("gsub", str_gsub),
        ("rep", str_rep),
    ];
    for (name, f) in funcs {
        // SAFETY: these are plain Lua C functions of this module.
        string.set(name, unsafe { lua.create_c_function(f)? })?;
    }
    Ok(())
}
