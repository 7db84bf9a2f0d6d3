//! The `cmsgpack` library (lua-cmsgpack 0.4.0 semantics, as bundled by Redis): MessagePack
//! encoding of Lua values (`pack`, variadic) and decoding (`unpack`, `unpack_one`,
//! `unpack_limit`), with the same encoding choices and error messages.

use crate::lapi::{self, lua_cfn, msg, LResult, LuaErr};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// Tables nested deeper than this are encoded as nil (this is what stops cycles).
const MAX_NESTING: c_int = 16;

// ---------------------------------------------------------------------------------------
// Encoding

fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | len as u8);
    } else if len <= 0xff {
        buf.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend_from_slice(&(len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

fn encode_double(buf: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f as f64 {
        buf.push(0xca);
        buf.extend_from_slice(&f.to_bits().to_be_bytes());
    } else {
        buf.push(0xcb);
        buf.extend_from_slice(&d.to_bits().to_be_bytes());
    }
}

fn encode_int(buf: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            buf.push(n as u8);
        } else if n <= 0xff {
            buf.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            buf.push(0xcd);
            buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            buf.push(0xce);
            buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            buf.push(0xcf);
            buf.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        buf.push(n as i8 as u8);
    } else if n >= -128 {
        buf.extend_from_slice(&[0xd0, n as u8]);
    } else if n >= -32768 {
        buf.push(0xd1);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else if n >= -2147483648 {
        buf.push(0xd2);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        buf.push(0xd3);
        buf.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_len(buf: &mut Vec<u8>, n: u64, fix: u8, tag16: u8, tag32: u8) {
    if n <= 15 {
        buf.push(fix | n as u8);
    } else if n <= 0xffff {
        buf.push(tag16);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(tag32);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// Numbers that are exactly a 64-bit integer are encoded as integers, others as float32 when
/// that is lossless, else float64.
fn encode_number(buf: &mut Vec<u8>, n: f64) {
    if !n.is_infinite() && lapi::c_f64_to_i64(n) as f64 == n {
        encode_int(buf, lapi::c_f64_to_i64(n));
    } else {
        encode_double(buf, n);
    }
}

/// A table is encoded as an array when its keys are exactly 1..n (an empty table included).
unsafe fn table_is_an_array(l: *mut lua_State) -> LResult<bool> {
    let top = ffi::lua_gettop(l);
    let mut count: c_int = 0;
    let mut max: c_int = 0;
    lapi::check_stack(l, 2, "in function table_is_an_array")?;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        let n = ffi::lua_tonumber(l, -1);
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER || n <= 0.0 || lapi::c_f64_to_i32(n) as f64 != n
        {
            ffi::lua_settop(l, top);
            return Ok(false);
        }
        if n > max as f64 {
            max = n as c_int;
        }
        count = count.wrapping_add(1);
    }
    ffi::lua_settop(l, top);
    Ok(max == count)
}

/// Encode the value on top of the stack and pop it.
unsafe fn encode_value(l: *mut lua_State, buf: &mut Vec<u8>, level: c_int) -> LResult<()> {
    let mut t = ffi::lua_type(l, -1);
    if t == ffi::LUA_TTABLE && level == MAX_NESTING {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => encode_bytes(buf, lapi::to_bytes(l, -1).unwrap_or_default()),
        ffi::LUA_TBOOLEAN => buf.push(if ffi::lua_toboolean(l, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => encode_number(buf, ffi::lua_tonumber(l, -1)),
        ffi::LUA_TTABLE => {
            if table_is_an_array(l)? {
                let len = ffi::lua_objlen(l, -1);
                encode_len(buf, len as u64, 0x90, 0xdc, 0xdd);
                lapi::check_stack(l, 1, "in function mp_encode_lua_table_as_array")?;
                for i in 1..=len {
                    // The keys are exactly 1..len, so a raw read is what lua_gettable would
                    // give (__index is only consulted for absent keys).
                    ffi::lua_rawgeti_(l, -1, i as c_int);
                    encode_value(l, buf, level + 1)?;
                }
            } else {
                lapi::check_stack(l, 3, "in function mp_encode_lua_table_as_map")?;
                let mut n: u64 = 0;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pop(l, 1);
                    n += 1;
                }
                encode_len(buf, n, 0x80, 0xde, 0xdf);
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pushvalue(l, -2);
                    encode_value(l, buf, level + 1)?;
                    encode_value(l, buf, level + 1)?;
                }
            }
        }
        _ => buf.push(0xc0),
    }
    ffi::lua_pop(l, 1);
    Ok(())
}

unsafe fn mp_pack(l: *mut lua_State) -> LResult<c_int> {
    let nargs = ffi::lua_gettop(l);
    if nargs == 0 {
        return Err(LuaErr::Arg(0, "MessagePack pack needs input.".into()));
    }
    if !lapi::has_stack(l, nargs) {
        return Err(LuaErr::Arg(
            0,
            "Too many arguments for MessagePack pack.".into(),
        ));
    }
    let mut buf = Vec::new();
    for i in 1..=nargs {
        lapi::check_stack(l, 1, "in function mp_check")?;
        ffi::lua_pushvalue(l, i);
        encode_value(l, &mut buf, 0)?;
    }
    lapi::push_bytes(l, &buf);
    Ok(1)
}

lua_cfn!(pack => mp_pack);

// ---------------------------------------------------------------------------------------
// Decoding

enum DecodeErr {
    /// Not enough data to complete the value.
    Eof,
    /// A byte that starts no supported type.
    BadFmt,
    /// A Lua-level error (stack exhausted, invalid table key).
    Lua(LuaErr),
}

impl From<LuaErr> for DecodeErr {
    fn from(e: LuaErr) -> Self {
        DecodeErr::Lua(e)
    }
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    fn need(&self, n: usize) -> Result<(), DecodeErr> {
        if self.left() < n {
            Err(DecodeErr::Eof)
        } else {
            Ok(())
        }
    }

    fn at(&self, i: usize) -> u8 {
        self.data[self.pos + i]
    }

    fn be(&self, from: usize, n: usize) -> u64 {
        (0..n).fold(0u64, |acc, i| (acc << 8) | self.at(from + i) as u64)
    }
}

/// `lua_settable(t, k, v)` for the table below the key and value on top of the stack; a nil or
/// NaN key is the error Lua itself raises.
unsafe fn set_field(l: *mut lua_State) -> Result<(), DecodeErr> {
    match ffi::lua_type(l, -2) {
        ffi::LUA_TNIL => return Err(LuaErr::Plain(b"table index is nil".to_vec()).into()),
        ffi::LUA_TNUMBER if ffi::lua_tonumber(l, -2).is_nan() => {
            return Err(LuaErr::Plain(b"table index is NaN".to_vec()).into())
        }
        _ => {}
    }
    ffi::lua_rawset(l, -3);
    Ok(())
}

unsafe fn decode_array(l: *mut lua_State, c: &mut Cursor, len: usize) -> Result<(), DecodeErr> {
    ffi::lua_createtable(l, 0, 0);
    lapi::check_stack(l, 1, "in function mp_decode_to_lua_array")?;
    for index in 1..=len {
        ffi::lua_pushnumber(l, index as f64);
        decode_value(l, c)?;
        set_field(l)?;
    }
    Ok(())
}

unsafe fn decode_map(l: *mut lua_State, c: &mut Cursor, len: usize) -> Result<(), DecodeErr> {
    ffi::lua_createtable(l, 0, 0);
    for _ in 0..len {
        decode_value(l, c)?;
        decode_value(l, c)?;
        set_field(l)?;
    }
    Ok(())
}

/// Decode one value at the cursor and push it.
unsafe fn decode_value(l: *mut lua_State, c: &mut Cursor) -> Result<(), DecodeErr> {
    c.need(1)?;
    lapi::check_stack(
        l,
        1,
        "too many return values at once; use unpack_one or unpack_limit instead.",
    )?;
    let tag = c.at(0);
    match tag {
        0xcc => {
            c.need(2)?;
            ffi::lua_pushnumber(l, c.at(1) as f64);
            c.pos += 2;
        }
        0xd0 => {
            c.need(2)?;
            ffi::lua_pushnumber(l, c.at(1) as i8 as f64);
            c.pos += 2;
        }
        0xcd => {
            c.need(3)?;
            ffi::lua_pushnumber(l, c.be(1, 2) as f64);
            c.pos += 3;
        }
        0xd1 => {
            c.need(3)?;
            ffi::lua_pushnumber(l, c.be(1, 2) as u16 as i16 as f64);
            c.pos += 3;
        }
        0xce => {
            c.need(5)?;
            ffi::lua_pushnumber(l, c.be(1, 4) as f64);
            c.pos += 5;
        }
        0xd2 => {
            c.need(5)?;
            ffi::lua_pushnumber(l, c.be(1, 4) as u32 as i32 as f64);
            c.pos += 5;
        }
        0xcf | 0xd3 => {
            // Both go through a signed 64-bit integer: uint64 values above 2^63 wrap.
            c.need(9)?;
            ffi::lua_pushnumber(l, c.be(1, 8) as i64 as f64);
            c.pos += 9;
        }
        0xc0 => {
            ffi::lua_pushnil(l);
            c.pos += 1;
        }
        0xc3 | 0xc2 => {
            ffi::lua_pushboolean(l, (tag == 0xc3) as c_int);
            c.pos += 1;
        }
        0xca => {
            c.need(5)?;
            ffi::lua_pushnumber(l, f32::from_bits(c.be(1, 4) as u32) as f64);
            c.pos += 5;
        }
        0xcb => {
            c.need(9)?;
            ffi::lua_pushnumber(l, f64::from_bits(c.be(1, 8)));
            c.pos += 9;
        }
        0xd9..=0xdb => {
            let hdr = match tag {
                0xd9 => 1,
                0xda => 2,
                _ => 4,
            };
            c.need(1 + hdr)?;
            let len = c.be(1, hdr) as usize;
            c.need(1 + hdr + len)?;
            let start = c.pos + 1 + hdr;
            lapi::push_bytes(l, &c.data[start..start + len]);
            c.pos = start + len;
        }
        0xdc..=0xdf => {
            let hdr = if tag == 0xdc || tag == 0xde { 2 } else { 4 };
            c.need(1 + hdr)?;
            let len = c.be(1, hdr) as usize;
            c.pos += 1 + hdr;
            if tag <= 0xdd {
                decode_array(l, c, len)?;
            } else {
                decode_map(l, c, len)?;
            }
        }
        _ if tag & 0x80 == 0 => {
            ffi::lua_pushnumber(l, tag as f64);
            c.pos += 1;
        }
        _ if tag & 0xe0 == 0xe0 => {
            ffi::lua_pushnumber(l, tag as i8 as f64);
            c.pos += 1;
        }
        _ if tag & 0xe0 == 0xa0 => {
            let len = (tag & 0x1f) as usize;
            c.need(1 + len)?;
            lapi::push_bytes(l, &c.data[c.pos + 1..c.pos + 1 + len]);
            c.pos += 1 + len;
        }
        _ if tag & 0xf0 == 0x90 => {
            c.pos += 1;
            decode_array(l, c, (tag & 0xf) as usize)?;
        }
        _ if tag & 0xf0 == 0x80 => {
            c.pos += 1;
            decode_map(l, c, (tag & 0xf) as usize)?;
        }
        _ => return Err(DecodeErr::BadFmt),
    }
    Ok(())
}

/// Decode up to `limit` values starting at byte `offset` of argument 1 (all values when both
/// are 0). With a limit or offset, the next offset (-1 at the end) is returned first.
unsafe fn unpack_full(l: *mut lua_State, limit: i64, offset: i64) -> LResult<c_int> {
    let s = lapi::check_bytes(l, 1)?;
    let len = s.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(msg(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32, len as i32
        )));
    } else if offset as u64 > len as u64 {
        return Err(msg(format!(
            "Start offset {} greater than input length {}.",
            offset as i32, len as i32
        )));
    }
    let limit = if decode_all { c_int::MAX as i64 } else { limit };
    let mut c = Cursor {
        data: s,
        pos: offset as usize,
    };
    let mut cnt: c_int = 0;
    while c.left() > 0 && (cnt as i64) < limit {
        match decode_value(l, &mut c) {
            Ok(()) => {}
            Err(DecodeErr::Eof) => return Err(msg("Missing bytes in input.")),
            Err(DecodeErr::BadFmt) => return Err(msg("Bad data format in input.")),
            Err(DecodeErr::Lua(e)) => return Err(e),
        }
        cnt += 1;
    }
    if !decode_all {
        lapi::check_stack(l, 1, "in function mp_unpack_full")?;
        let next = if c.left() == 0 { -1 } else { c.pos as i64 };
        ffi::lua_pushinteger(l, next as ffi::lua_Integer);
        ffi::lua_insert(l, 2);
        cnt += 1;
    }
    Ok(cnt)
}

unsafe fn mp_unpack(l: *mut lua_State) -> LResult<c_int> {
    unpack_full(l, 0, 0)
}

unsafe fn mp_unpack_one(l: *mut lua_State) -> LResult<c_int> {
    let offset = ffi::luaL_optinteger(l, 2, 0);
    ffi::lua_settop(l, 1);
    unpack_full(l, 1, offset)
}

unsafe fn mp_unpack_limit(l: *mut lua_State) -> LResult<c_int> {
    let limit = ffi::luaL_checkinteger(l, 2);
    let offset = ffi::luaL_optinteger(l, 3, 0);
    ffi::lua_settop(l, 1);
    unpack_full(l, limit, offset)
}

lua_cfn!(unpack => mp_unpack);
lua_cfn!(unpack_one => mp_unpack_one);
lua_cfn!(unpack_limit => mp_unpack_limit);

unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    ffi::lua_createtable(l, 0, 0);
    lapi::set_funcs(
        l,
        &[
            (c"pack", pack),
            (c"unpack", unpack),
            (c"unpack_one", unpack_one),
            (c"unpack_limit", unpack_limit),
        ],
        0,
    );
    lapi::set_str_field(l, c"_NAME", "cmsgpack");
    lapi::set_str_field(l, c"_VERSION", "lua-cmsgpack 0.4.0");
    lapi::set_str_field(l, c"_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo");
    lapi::set_str_field(l, c"_DESCRIPTION", "MessagePack C implementation for Lua");
    1
}

/// Install the global `cmsgpack` table.
pub fn register(lua: &mlua::Lua) -> mlua::Result<()> {
    lapi::register_global(lua, "cmsgpack", open)
}
