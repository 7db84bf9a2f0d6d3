//! The `bit` library (LuaBitOp 1.0.2 semantics, as bundled by Redis): 32-bit bitwise
//! operations on Lua numbers. Results are signed 32-bit values returned as Lua numbers.

use crate::lapi::{self, LuaErr};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// Normalise argument `idx` to 32 bits the way LuaBitOp does for doubles: add 2^52 + 2^51 and
/// keep the low 32 bits of the IEEE representation (this rounds non-integers to nearest-even
/// and wraps large values modulo 2^32). Non-numbers raise "number expected".
unsafe fn barg(l: *mut lua_State, idx: c_int) -> u32 {
    let n = ffi::lua_tonumber(l, idx);
    let b = (n + 6755399441055744.0).to_bits() as u32;
    if b == 0 && ffi::lua_isnumber(l, idx) == 0 {
        lapi::raise(l, LuaErr::Type(idx, c"number"));
    }
    b
}

unsafe fn ret(l: *mut lua_State, b: u32) -> c_int {
    ffi::lua_pushnumber(l, b as i32 as f64);
    1
}

unsafe extern "C-unwind" fn tobit(l: *mut lua_State) -> c_int {
    ret(l, barg(l, 1))
}

unsafe extern "C-unwind" fn bnot(l: *mut lua_State) -> c_int {
    ret(l, !barg(l, 1))
}

/// The variadic operators fold the arguments from the last one down to the second.
unsafe fn fold(l: *mut lua_State, op: fn(u32, u32) -> u32) -> c_int {
    let mut b = barg(l, 1);
    let mut i = ffi::lua_gettop(l);
    while i > 1 {
        b = op(b, barg(l, i));
        i -= 1;
    }
    ret(l, b)
}

unsafe extern "C-unwind" fn band(l: *mut lua_State) -> c_int {
    fold(l, |a, b| a & b)
}

unsafe extern "C-unwind" fn bor(l: *mut lua_State) -> c_int {
    fold(l, |a, b| a | b)
}

unsafe extern "C-unwind" fn bxor(l: *mut lua_State) -> c_int {
    fold(l, |a, b| a ^ b)
}

/// Shifts and rotations use the low 5 bits of the count.
unsafe fn shift(l: *mut lua_State, op: fn(u32, u32) -> u32) -> c_int {
    let b = barg(l, 1);
    let n = barg(l, 2) & 31;
    ret(l, op(b, n))
}

unsafe extern "C-unwind" fn lshift(l: *mut lua_State) -> c_int {
    shift(l, |b, n| b << n)
}

unsafe extern "C-unwind" fn rshift(l: *mut lua_State) -> c_int {
    shift(l, |b, n| b >> n)
}

unsafe extern "C-unwind" fn arshift(l: *mut lua_State) -> c_int {
    shift(l, |b, n| ((b as i32) >> n) as u32)
}

unsafe extern "C-unwind" fn rol(l: *mut lua_State) -> c_int {
    shift(l, |b, n| b.rotate_left(n))
}

unsafe extern "C-unwind" fn ror(l: *mut lua_State) -> c_int {
    shift(l, |b, n| b.rotate_right(n))
}

unsafe extern "C-unwind" fn bswap(l: *mut lua_State) -> c_int {
    ret(l, barg(l, 1).swap_bytes())
}

/// `bit.tohex(x [, n])`: the low |n| hex digits of x (default 8, at most 8); a negative n
/// selects upper-case digits.
unsafe extern "C-unwind" fn tohex(l: *mut lua_State) -> c_int {
    let mut b = barg(l, 1);
    let mut n: i32 = if ffi::lua_type(l, 2) == ffi::LUA_TNONE {
        8
    } else {
        barg(l, 2) as i32
    };
    let digits: &[u8; 16] = if n < 0 {
        n = n.saturating_neg();
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let n = n.min(8) as usize;
    let mut buf = [0u8; 8];
    for i in (0..n).rev() {
        buf[i] = digits[(b & 15) as usize];
        b >>= 4;
    }
    lapi::push_bytes(l, &buf[..n]);
    1
}

unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    ffi::lua_createtable(l, 0, 12);
    lapi::set_funcs(
        l,
        &[
            (c"tobit", tobit),
            (c"bnot", bnot),
            (c"band", band),
            (c"bor", bor),
            (c"bxor", bxor),
            (c"lshift", lshift),
            (c"rshift", rshift),
            (c"arshift", arshift),
            (c"rol", rol),
            (c"ror", ror),
            (c"bswap", bswap),
            (c"tohex", tohex),
        ],
        0,
    );
    1
}

/// Install the global `bit` table.
pub fn register(lua: &mlua::Lua) -> mlua::Result<()> {
    lapi::register_global(lua, "bit", open)
}
