//! The `cjson` library (lua-cjson 2.1.0 semantics, as Redis builds it): JSON encoding and
//! decoding with the same output formatting (`%.14g` numbers, `\/` escaping, `{}` for empty
//! tables, array detection and sparse-array rules), the same configuration functions and the
//! same error messages.

use crate::lapi::{self, lua_cfn, msg, LResult, LuaErr};
use mlua::ffi::{self, lua_State};
use std::ffi::{c_char, c_int, CStr};
use std::ptr;

/// Per-module settings, stored in a full userdata shared as upvalue 1 by every function of a
/// `cjson` table (`cjson.new()` makes a table with its own settings).
#[repr(C)]
#[derive(Clone, Copy)]
struct Config {
    encode_sparse_convert: c_int,
    encode_sparse_ratio: c_int,
    encode_sparse_safe: c_int,
    encode_max_depth: c_int,
    /// 0 = error, 1 = "nan"/"inf", 2 = "null".
    encode_invalid_numbers: c_int,
    encode_number_precision: c_int,
    encode_keep_buffer: c_int,
    decode_invalid_numbers: c_int,
    decode_max_depth: c_int,
}

const DEFAULT_CONFIG: Config = Config {
    encode_sparse_convert: 0,
    encode_sparse_ratio: 2,
    encode_sparse_safe: 10,
    encode_max_depth: 1000,
    encode_invalid_numbers: 0,
    encode_number_precision: 14,
    encode_keep_buffer: 1,
    decode_invalid_numbers: 1,
    decode_max_depth: 1000,
};

unsafe fn fetch_config(l: *mut lua_State) -> LResult<*mut Config> {
    let cfg = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Config;
    if cfg.is_null() {
        return Err(msg("BUG: Unable to fetch CJSON configuration"));
    }
    Ok(cfg)
}

// ---------------------------------------------------------------------------------------
// Configuration functions. They own no Rust values, so they may raise Lua errors directly.

/// Check there are at most `args` arguments and pad the missing ones with nil.
unsafe fn arg_init(l: *mut lua_State, args: c_int) -> *mut Config {
    if ffi::lua_gettop(l) > args {
        lapi::raise(l, LuaErr::Arg(args + 1, "found too many arguments".into()));
    }
    while ffi::lua_gettop(l) < args {
        ffi::lua_pushnil(l);
    }
    match fetch_config(l) {
        Ok(c) => c,
        Err(e) => lapi::raise(l, e),
    }
}

unsafe fn integer_option(
    l: *mut lua_State,
    idx: c_int,
    setting: *mut c_int,
    min: c_int,
    max: c_int,
) {
    if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
        let value = ffi::luaL_checkinteger(l, idx) as c_int;
        if !(min <= value && value <= max) {
            lapi::raise(
                l,
                LuaErr::Arg(
                    1,
                    format!("expected integer between {min} and {max}").into(),
                ),
            );
        }
        *setting = value;
    }
    ffi::lua_pushinteger(l, *setting as ffi::lua_Integer);
}

/// An on/off style option: a boolean, or one of `options` by name. `bool_true` is the
/// setting a `true` stands for.
unsafe fn enum_option(l: *mut lua_State, idx: c_int, setting: *mut c_int, options: &[&CStr]) {
    let bool_true = 1;
    if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
        if ffi::lua_type(l, idx) == ffi::LUA_TBOOLEAN {
            *setting = ffi::lua_toboolean(l, idx) * bool_true;
        } else {
            let mut list: [*const c_char; 4] = [ptr::null(); 4];
            for (slot, o) in list.iter_mut().zip(options) {
                *slot = o.as_ptr();
            }
            *setting = ffi::luaL_checkoption(l, idx, ptr::null(), list.as_ptr());
        }
    }
    if *setting == 0 || *setting == bool_true {
        ffi::lua_pushboolean(l, *setting);
    } else {
        ffi::lua_pushstring_(l, options[*setting as usize].as_ptr());
    }
}

const ON_OFF: &[&CStr] = &[c"off", c"on"];

unsafe extern "C-unwind" fn cfg_encode_sparse_array(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 3);
    enum_option(l, 1, &mut (*cfg).encode_sparse_convert, ON_OFF);
    integer_option(l, 2, &mut (*cfg).encode_sparse_ratio, 0, c_int::MAX);
    integer_option(l, 3, &mut (*cfg).encode_sparse_safe, 0, c_int::MAX);
    3
}

unsafe extern "C-unwind" fn cfg_encode_max_depth(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    integer_option(l, 1, &mut (*cfg).encode_max_depth, 1, c_int::MAX);
    1
}

unsafe extern "C-unwind" fn cfg_decode_max_depth(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    integer_option(l, 1, &mut (*cfg).decode_max_depth, 1, c_int::MAX);
    1
}

unsafe extern "C-unwind" fn cfg_encode_number_precision(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    integer_option(l, 1, &mut (*cfg).encode_number_precision, 1, 14);
    1
}

unsafe extern "C-unwind" fn cfg_encode_keep_buffer(l: *mut lua_State) -> c_int {
    // Encoding always builds its output in a fresh buffer here; the setting is kept so that
    // scripts reading it back see what they set.
    let cfg = arg_init(l, 1);
    enum_option(l, 1, &mut (*cfg).encode_keep_buffer, ON_OFF);
    1
}

unsafe extern "C-unwind" fn cfg_encode_invalid_numbers(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    enum_option(
        l,
        1,
        &mut (*cfg).encode_invalid_numbers,
        &[c"off", c"on", c"null"],
    );
    1
}

unsafe extern "C-unwind" fn cfg_decode_invalid_numbers(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    enum_option(l, 1, &mut (*cfg).decode_invalid_numbers, ON_OFF);
    1
}

// ---------------------------------------------------------------------------------------
// Encoding

/// The JSON escape for each byte that needs one.
fn escape(b: u8) -> Option<&'static [u8]> {
    const CTRL: [&[u8]; 32] = [
        b"\\u0000", b"\\u0001", b"\\u0002", b"\\u0003", b"\\u0004", b"\\u0005", b"\\u0006",
        b"\\u0007", b"\\b", b"\\t", b"\\n", b"\\u000b", b"\\f", b"\\r", b"\\u000e", b"\\u000f",
        b"\\u0010", b"\\u0011", b"\\u0012", b"\\u0013", b"\\u0014", b"\\u0015", b"\\u0016",
        b"\\u0017", b"\\u0018", b"\\u0019", b"\\u001a", b"\\u001b", b"\\u001c", b"\\u001d",
        b"\\u001e", b"\\u001f",
    ];
    match b {
        0..=31 => Some(CTRL[b as usize]),
        b'"' => Some(b"\\\""),
        b'/' => Some(b"\\/"),
        b'\\' => Some(b"\\\\"),
        127 => Some(b"\\u007f"),
        _ => None,
    }
}

fn append_string(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in s.iter().enumerate() {
        if let Some(e) = escape(b) {
            out.extend_from_slice(&s[start..i]);
            out.extend_from_slice(e);
            start = i + 1;
        }
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

/// "Cannot serialise <type of value at idx>: <reason>".
unsafe fn encode_exception(l: *mut lua_State, idx: c_int, reason: &str) -> LuaErr {
    let tname = CStr::from_ptr(ffi::lua_typename(l, ffi::lua_type(l, idx)));
    msg(format!(
        "Cannot serialise {}: {}",
        tname.to_string_lossy(),
        reason
    ))
}

unsafe fn append_number(
    l: *mut lua_State,
    cfg: &Config,
    out: &mut Vec<u8>,
    idx: c_int,
) -> LResult<()> {
    let num = ffi::lua_tonumber(l, idx);
    match cfg.encode_invalid_numbers {
        0 => {
            if !num.is_finite() {
                return Err(encode_exception(l, idx, "must not be NaN or Inf"));
            }
        }
        1 => {
            if num.is_nan() {
                out.extend_from_slice(b"nan");
                return Ok(());
            }
        }
        _ => {
            if !num.is_finite() {
                out.extend_from_slice(b"null");
                return Ok(());
            }
        }
    }
    format_number(num, cfg.encode_number_precision, out);
    Ok(())
}

/// `%.<precision>g`, with a shortcut for integers that format as themselves.
fn format_number(num: f64, precision: c_int, out: &mut Vec<u8>) {
    if num.fract() == 0.0
        && num.abs() < 1e14
        && precision == 14
        && !(num == 0.0 && num.is_sign_negative())
    {
        out.extend_from_slice((num as i64).to_string().as_bytes());
    } else {
        lapi::fmt_g(num, precision, out);
    }
}

/// The array length of the table on top of the stack, or -1 when it must be encoded as an
/// object (a key that is not a positive integer, or an excessively sparse array when sparse
/// conversion is on).
unsafe fn array_length(l: *mut lua_State, cfg: &Config) -> LResult<c_int> {
    let mut max: c_int = 0;
    let mut items: c_int = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
            let k = ffi::lua_tonumber(l, -2);
            if k != 0.0 && k.floor() == k && k >= 1.0 {
                if k > max as f64 {
                    max = lapi::c_f64_to_i32(k);
                }
                items = items.wrapping_add(1);
                ffi::lua_pop(l, 1);
                continue;
            }
        }
        ffi::lua_pop(l, 2);
        return Ok(-1);
    }
    if cfg.encode_sparse_ratio > 0
        && max > items.wrapping_mul(cfg.encode_sparse_ratio)
        && max > cfg.encode_sparse_safe
    {
        if cfg.encode_sparse_convert == 0 {
            return Err(encode_exception(l, -1, "excessively sparse array"));
        }
        return Ok(-1);
    }
    Ok(max)
}

/// Append the JSON for the value on top of the stack (left in place).
unsafe fn append_data(
    l: *mut lua_State,
    cfg: &Config,
    mut depth: c_int,
    out: &mut Vec<u8>,
) -> LResult<()> {
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => {
            append_string(out, lapi::to_bytes(l, -1).unwrap_or_default());
        }
        ffi::LUA_TNUMBER => append_number(l, cfg, out, -1)?,
        ffi::LUA_TBOOLEAN => {
            if ffi::lua_toboolean(l, -1) != 0 {
                out.extend_from_slice(b"true");
            } else {
                out.extend_from_slice(b"false");
            }
        }
        ffi::LUA_TTABLE => {
            depth += 1;
            if !(depth <= cfg.encode_max_depth && lapi::has_stack(l, 3)) {
                return Err(msg(format!(
                    "Cannot serialise, excessive nesting ({depth})"
                )));
            }
            let len = array_length(l, cfg)?;
            if len > 0 {
                append_array(l, cfg, depth, out, len)?;
            } else {
                append_object(l, cfg, depth, out)?;
            }
        }
        ffi::LUA_TNIL => out.extend_from_slice(b"null"),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => {
            out.extend_from_slice(b"null");
        }
        _ => return Err(encode_exception(l, -1, "type not supported")),
    }
    Ok(())
}

unsafe fn append_array(
    l: *mut lua_State,
    cfg: &Config,
    depth: c_int,
    out: &mut Vec<u8>,
    len: c_int,
) -> LResult<()> {
    out.push(b'[');
    for i in 1..=len {
        if i > 1 {
            out.push(b',');
        }
        ffi::lua_rawgeti_(l, -1, i);
        append_data(l, cfg, depth, out)?;
        ffi::lua_pop(l, 1);
    }
    out.push(b']');
    Ok(())
}

unsafe fn append_object(
    l: *mut lua_State,
    cfg: &Config,
    depth: c_int,
    out: &mut Vec<u8>,
) -> LResult<()> {
    out.push(b'{');
    ffi::lua_pushnil(l);
    let mut comma = false;
    while ffi::lua_next(l, -2) != 0 {
        if comma {
            out.push(b',');
        } else {
            comma = true;
        }
        match ffi::lua_type(l, -2) {
            ffi::LUA_TNUMBER => {
                out.push(b'"');
                append_number(l, cfg, out, -2)?;
                out.extend_from_slice(b"\":");
            }
            ffi::LUA_TSTRING => {
                append_string(out, lapi::to_bytes(l, -2).unwrap_or_default());
                out.push(b':');
            }
            _ => {
                return Err(encode_exception(
                    l,
                    -2,
                    "table key must be a number or string",
                ))
            }
        }
        append_data(l, cfg, depth, out)?;
        ffi::lua_pop(l, 1);
    }
    out.push(b'}');
    Ok(())
}

unsafe fn json_encode(l: *mut lua_State) -> LResult<c_int> {
    let cfg = *fetch_config(l)?;
    if ffi::lua_gettop(l) != 1 {
        return Err(LuaErr::Arg(1, "expected 1 argument".into()));
    }
    let mut out = Vec::new();
    append_data(l, &cfg, 0, &mut out)?;
    lapi::push_bytes(l, &out);
    Ok(1)
}

lua_cfn!(encode => json_encode);

// ---------------------------------------------------------------------------------------
// Decoding

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    /// The decoded bytes are in `Parser::tmp`.
    Str,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Number(_) => "T_NUMBER",
            Tok::Boolean(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(what) => what,
        }
    }
}

#[derive(Clone, Copy)]
struct Token {
    tok: Tok,
    /// 0-based offset where the token (or the error) was found.
    index: usize,
}

struct Parser<'a> {
    l: *mut lua_State,
    /// The JSON text followed by the NUL every Lua string carries; an embedded NUL ends the
    /// input as it does for the C parser.
    data: &'a [u8],
    pos: usize,
    cfg: Config,
    depth: c_int,
    tmp: Vec<u8>,
}

fn hex_digit(b: u8) -> Option<u32> {
    match b {
        b'0'..=b'9' => Some((b - b'0') as u32),
        _ => match b | 0x20 {
            c @ b'a'..=b'f' => Some((c - b'a') as u32 + 10),
            _ => None,
        },
    }
}

fn push_utf8(out: &mut Vec<u8>, cp: u32) {
    if cp <= 0x7f {
        out.push(cp as u8);
    } else if cp <= 0x7ff {
        out.extend_from_slice(&[(cp >> 6) as u8 | 0xc0, (cp & 0x3f) as u8 | 0x80]);
    } else if cp <= 0xffff {
        out.extend_from_slice(&[
            (cp >> 12) as u8 | 0xe0,
            ((cp >> 6) & 0x3f) as u8 | 0x80,
            (cp & 0x3f) as u8 | 0x80,
        ]);
    } else {
        out.extend_from_slice(&[
            (cp >> 18) as u8 | 0xf0,
            ((cp >> 12) & 0x3f) as u8 | 0x80,
            ((cp >> 6) & 0x3f) as u8 | 0x80,
            (cp & 0x3f) as u8 | 0x80,
        ]);
    }
}

impl Parser<'_> {
    fn byte(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0;
        for i in 0..4 {
            v = (v << 4) | hex_digit(self.byte(at + i))?;
        }
        Some(v)
    }

    /// Decode the `\uXXXX` escape (or surrogate pair) at `pos` into `tmp`.
    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xf800 == 0xd800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.byte(self.pos + 6) != b'\\' || self.byte(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xfc00 != 0xdc00 {
                return false;
            }
            cp = (((cp & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            len = 12;
        }
        push_utf8(&mut self.tmp, cp);
        self.pos += len;
        true
    }

    fn error_here(&self, what: &'static str) -> Token {
        Token {
            tok: Tok::Error(what),
            index: self.pos,
        }
    }

    fn string_token(&mut self, index: usize) -> Token {
        self.pos += 1;
        self.tmp.clear();
        loop {
            let mut ch = self.byte(self.pos);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return self.error_here("unexpected end of string");
            }
            if ch == b'\\' {
                ch = match self.byte(self.pos + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'f' => 12,
                    b'r' => b'\r',
                    b'u' => {
                        if self.unicode_escape() {
                            continue;
                        }
                        return self.error_here("invalid unicode escape code");
                    }
                    _ => return self.error_here("invalid escape code"),
                };
                self.pos += 1;
            }
            self.tmp.push(ch);
            self.pos += 1;
        }
        self.pos += 1;
        Token {
            tok: Tok::Str,
            index,
        }
    }

    /// Numbers JSON forbids but strtod() reads: a leading '+', hex, leading zeros, inf, nan.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.byte(p) == b'+' {
            return true;
        }
        if self.byte(p) == b'-' {
            p += 1;
        }
        let c = self.byte(p);
        if c == b'0' {
            let c2 = self.byte(p + 1);
            return c2 | 0x20 == b'x' || c2.is_ascii_digit();
        }
        // The C code compares a (signed) char with '9': bytes >= 0x80 count as "ordinary".
        if (c as i8) <= b'9' as i8 {
            return false;
        }
        let starts = |w: &[u8]| (0..3).all(|i| self.byte(p + i).to_ascii_lowercase() == w[i]);
        starts(b"inf") || starts(b"nan")
    }

    fn number_token(&mut self, index: usize) -> Token {
        // SAFETY: `data` ends with the Lua string's NUL terminator.
        let (v, used) = unsafe { lapi::c_strtod(self.data.as_ptr().add(self.pos)) };
        if used == 0 {
            return self.error_here("invalid number");
        }
        self.pos += used;
        Token {
            tok: Tok::Number(v),
            index,
        }
    }

    fn starts_with(&self, w: &[u8]) -> bool {
        self.data[self.pos..].starts_with(w)
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.byte(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let index = self.pos;
        let ch = self.byte(self.pos);
        let single = |tok| Token { tok, index };
        let simple = match ch {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(tok) = simple {
            self.pos += 1;
            return single(tok);
        }
        match ch {
            0 => single(Tok::End),
            b'"' => self.string_token(index),
            b'-' | b'0'..=b'9' => {
                if self.cfg.decode_invalid_numbers == 0 && self.is_invalid_number() {
                    return self.error_here("invalid number");
                }
                self.number_token(index)
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                if self.starts_with(b"true") {
                    self.pos += 4;
                    single(Tok::Boolean(true))
                } else if self.starts_with(b"false") {
                    self.pos += 5;
                    single(Tok::Boolean(false))
                } else if self.starts_with(b"null") {
                    self.pos += 4;
                    single(Tok::Null)
                } else if self.cfg.decode_invalid_numbers != 0 && self.is_invalid_number() {
                    self.number_token(index)
                } else {
                    self.error_here("invalid token")
                }
            }
            _ => self.error_here("invalid token"),
        }
    }

    fn parse_error(&self, expected: &str, t: Token) -> LuaErr {
        msg(format!(
            "Expected {} but found {} at character {}",
            expected,
            t.tok.name(),
            (t.index + 1) as u32 as i32
        ))
    }

    unsafe fn descend(&mut self, slots: c_int) -> LResult<()> {
        self.depth += 1;
        if self.depth <= self.cfg.decode_max_depth && lapi::has_stack(self.l, slots) {
            return Ok(());
        }
        Err(msg(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth, self.pos as u32 as i32
        )))
    }

    unsafe fn parse_object(&mut self) -> LResult<()> {
        let l = self.l;
        self.descend(3)?;
        ffi::lua_createtable(l, 0, 0);
        let mut t = self.next_token();
        if t.tok == Tok::ObjEnd {
            self.depth -= 1;
            return Ok(());
        }
        loop {
            if t.tok != Tok::Str {
                return Err(self.parse_error("object key string", t));
            }
            lapi::push_bytes(l, &self.tmp);
            t = self.next_token();
            if t.tok != Tok::Colon {
                return Err(self.parse_error("colon", t));
            }
            t = self.next_token();
            self.process_value(t)?;
            ffi::lua_rawset(l, -3);
            t = self.next_token();
            if t.tok == Tok::ObjEnd {
                self.depth -= 1;
                return Ok(());
            }
            if t.tok != Tok::Comma {
                return Err(self.parse_error("comma or object end", t));
            }
            t = self.next_token();
        }
    }

    unsafe fn parse_array(&mut self) -> LResult<()> {
        let l = self.l;
        self.descend(2)?;
        ffi::lua_createtable(l, 0, 0);
        let mut t = self.next_token();
        if t.tok == Tok::ArrEnd {
            self.depth -= 1;
            return Ok(());
        }
        let mut i: c_int = 1;
        loop {
            self.process_value(t)?;
            ffi::lua_rawseti_(l, -2, i);
            i = i.wrapping_add(1);
            t = self.next_token();
            if t.tok == Tok::ArrEnd {
                self.depth -= 1;
                return Ok(());
            }
            if t.tok != Tok::Comma {
                return Err(self.parse_error("comma or array end", t));
            }
            t = self.next_token();
        }
    }

    unsafe fn process_value(&mut self, t: Token) -> LResult<()> {
        let l = self.l;
        match t.tok {
            Tok::Str => lapi::push_bytes(l, &self.tmp),
            Tok::Number(n) => ffi::lua_pushnumber(l, n),
            Tok::Boolean(b) => ffi::lua_pushboolean(l, b as c_int),
            Tok::ObjBegin => self.parse_object()?,
            Tok::ArrBegin => self.parse_array()?,
            Tok::Null => ffi::lua_pushlightuserdata(l, ptr::null_mut()),
            _ => return Err(self.parse_error("value", t)),
        }
        Ok(())
    }
}

unsafe fn json_decode(l: *mut lua_State) -> LResult<c_int> {
    if ffi::lua_gettop(l) != 1 {
        return Err(LuaErr::Arg(1, "expected 1 argument".into()));
    }
    let cfg = *fetch_config(l)?;
    let text = lapi::check_bytes(l, 1)?;
    // Include the terminating NUL Lua keeps after every string.
    let data = std::slice::from_raw_parts(text.as_ptr(), text.len() + 1);
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err(msg("JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut p = Parser {
        l,
        data,
        pos: 0,
        cfg,
        depth: 0,
        tmp: Vec::new(),
    };
    let t = p.next_token();
    p.process_value(t)?;
    let t = p.next_token();
    if t.tok != Tok::End {
        return Err(p.parse_error("the end", t));
    }
    Ok(1)
}

lua_cfn!(decode => json_decode);

// ---------------------------------------------------------------------------------------
// Module table

/// Build a new `cjson` module table (with its own settings) and leave it on the stack.
unsafe extern "C-unwind" fn cjson_new(l: *mut lua_State) -> c_int {
    ffi::lua_createtable(l, 0, 0);
    let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
    cfg.write(DEFAULT_CONFIG);
    lapi::set_funcs(
        l,
        &[
            (c"encode", encode),
            (c"decode", decode),
            (c"encode_sparse_array", cfg_encode_sparse_array),
            (c"encode_max_depth", cfg_encode_max_depth),
            (c"decode_max_depth", cfg_decode_max_depth),
            (c"encode_number_precision", cfg_encode_number_precision),
            (c"encode_keep_buffer", cfg_encode_keep_buffer),
            (c"encode_invalid_numbers", cfg_encode_invalid_numbers),
            (c"decode_invalid_numbers", cfg_decode_invalid_numbers),
            (c"new", cjson_new),
        ],
        1,
    );
    ffi::lua_pushlightuserdata(l, ptr::null_mut());
    ffi::lua_setfield(l, -2, c"null".as_ptr());
    lapi::set_str_field(l, c"_NAME", "cjson");
    lapi::set_str_field(l, c"_VERSION", "2.1.0");
    1
}

/// Install the global `cjson` table.
pub fn register(lua: &mlua::Lua) -> mlua::Result<()> {
    lapi::register_global(lua, "cjson", cjson_new)
}
