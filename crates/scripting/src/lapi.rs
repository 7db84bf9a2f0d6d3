//! Small helpers over the raw Lua 5.1 C API (`mlua::ffi`) shared by the bundled libraries.
//!
//! The libraries are written as plain Lua C functions so that they behave exactly like the C
//! originals Redis links: errors are raised as Lua strings (what a script's `pcall` sees), and
//! argument errors go through `luaL_argerror`, which names the function the way Lua does.
//!
//! Raising a Lua error unwinds with `longjmp`, which must not skip Rust frames that still own
//! resources. So the functions are split in two: an inner Rust function that returns
//! [`LResult`] (everything it owns is dropped on return), and the exported C function made by
//! [`lua_cfn!`], which turns an `Err` into the Lua error after all Rust values are gone.

use mlua::ffi::{self, lua_State};
use std::ffi::{c_char, c_int, CStr};
use std::ptr;

/// An error to raise in Lua once the Rust side has released everything it owned.
pub(crate) enum LuaErr {
    /// `luaL_error`: the message, after the position of the Lua code that made the call.
    Msg(Vec<u8>),
    /// An error raised by the Lua core itself inside an API call ("table index is nil"):
    /// no position prefix, as the running function is a C function.
    Plain(Vec<u8>),
    /// `luaL_argerror(L, narg, extramsg)`: "bad argument #n to 'f' (extramsg)".
    Arg(c_int, Vec<u8>),
    /// `luaL_typerror(L, narg, tname)`: "bad argument #n to 'f' (tname expected, got t)".
    Type(c_int, &'static CStr),
}

pub(crate) type LResult<T> = Result<T, LuaErr>;

pub(crate) fn msg(s: impl Into<Vec<u8>>) -> LuaErr {
    LuaErr::Msg(s.into())
}

/// Raise `e` as a Lua error. Consumes (and so frees) every Rust allocation in `e` first.
pub(crate) unsafe fn raise(l: *mut lua_State, e: LuaErr) -> ! {
    match e {
        LuaErr::Msg(s) => {
            // Like luaL_error: prefixed with the position of the calling Lua code, if any.
            ffi::luaL_where(l, 1);
            push_bytes(l, &s);
            drop(s);
            ffi::lua_concat(l, 2);
            ffi::lua_error(l)
        }
        LuaErr::Plain(s) => {
            push_bytes(l, &s);
            drop(s);
            ffi::lua_error(l)
        }
        LuaErr::Arg(narg, s) => {
            push_bytes(l, &s);
            drop(s);
            let extra = ffi::lua_tolstring(l, -1, ptr::null_mut());
            ffi::luaL_argerror(l, narg, extra);
            // luaL_argerror never returns.
            std::process::abort()
        }
        LuaErr::Type(narg, tname) => {
            ffi::luaL_typerror(l, narg, tname.as_ptr());
            std::process::abort()
        }
    }
}

/// `luaL_error` with a message that needs no allocation: the caller's position, then `m`.
/// Nothing in the caller's frames may need dropping.
pub(crate) unsafe fn error_where(l: *mut lua_State, m: &[u8]) -> ! {
    error_where_parts(l, &[m])
}

/// As [`error_where`], the message made of `parts`.
pub(crate) unsafe fn error_where_parts(l: *mut lua_State, parts: &[&[u8]]) -> ! {
    ffi::luaL_where(l, 1);
    for p in parts {
        push_bytes(l, p);
    }
    ffi::lua_concat(l, parts.len() as c_int + 1);
    ffi::lua_error(l)
}

/// Define an exported Lua C function from a Rust function `fn(*mut lua_State) -> LResult<c_int>`.
macro_rules! lua_cfn {
    ($name:ident => $body:path) => {
        unsafe extern "C-unwind" fn $name(l: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
            let r = $body(l);
            match r {
                Ok(n) => n,
                Err(e) => $crate::lapi::raise(l, e),
            }
        }
    };
}
pub(crate) use lua_cfn;

/// Push a byte string.
pub(crate) unsafe fn push_bytes(l: *mut lua_State, b: &[u8]) {
    ffi::lua_pushlstring_(l, b.as_ptr() as *const c_char, b.len());
}

/// The bytes of the string (or number, converted in place) at `idx`; None for other types.
/// The slice borrows from the Lua string, which must stay on the stack while it is used.
pub(crate) unsafe fn to_bytes<'a>(l: *mut lua_State, idx: c_int) -> Option<&'a [u8]> {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts(p as *const u8, len))
    }
}

/// `luaL_checknumber` without raising: Lua 5.1 semantics (numeric strings convert).
pub(crate) unsafe fn check_number(l: *mut lua_State, idx: c_int) -> LResult<f64> {
    let d = ffi::lua_tonumber(l, idx);
    if d == 0.0 && ffi::lua_isnumber(l, idx) == 0 {
        return Err(LuaErr::Type(idx, c"number"));
    }
    Ok(d)
}

/// `luaL_checklstring` without raising.
pub(crate) unsafe fn check_bytes<'a>(l: *mut lua_State, idx: c_int) -> LResult<&'a [u8]> {
    to_bytes(l, idx).ok_or(LuaErr::Type(idx, c"string"))
}

/// `lua_checkstack` as Lua 5.1 has it (false when the stack cannot grow by `n`).
pub(crate) unsafe fn has_stack(l: *mut lua_State, n: c_int) -> bool {
    ffi::lua_checkstack(l, n) != 0
}

/// `luaL_checkstack` without raising: "stack overflow (msg)".
pub(crate) unsafe fn check_stack(l: *mut lua_State, n: c_int, what: &str) -> LResult<()> {
    if has_stack(l, n) {
        Ok(())
    } else {
        Err(msg(format!("stack overflow ({what})")))
    }
}

/// Install `funcs` into the table on top of the stack, each a closure sharing the `nup`
/// values just above the table (which are popped), like `luaL_setfuncs`.
pub(crate) unsafe fn set_funcs(
    l: *mut lua_State,
    funcs: &[(&CStr, ffi::lua_CFunction)],
    nup: c_int,
) {
    for (name, f) in funcs {
        for _ in 0..nup {
            ffi::lua_pushvalue(l, -nup);
        }
        ffi::lua_pushcclosure(l, *f, nup);
        ffi::lua_setfield(l, -(nup + 2), name.as_ptr());
    }
    ffi::lua_pop(l, nup);
}

/// Set `t[name] = s` for the table on top of the stack.
pub(crate) unsafe fn set_str_field(l: *mut lua_State, name: &CStr, s: &str) {
    push_bytes(l, s.as_bytes());
    ffi::lua_setfield(l, -2, name.as_ptr());
}

/// Run `open` (a luaopen-style C function returning the module table) and store its result
/// as the global `name`.
pub(crate) fn register_global(
    lua: &mlua::Lua,
    name: &str,
    open: ffi::lua_CFunction,
) -> mlua::Result<()> {
    // SAFETY: `open` is one of this crate's C functions; it only builds a table.
    let f = unsafe { lua.create_c_function(open)? };
    let t: mlua::Table = f.call(())?;
    lua.globals().set(name, t)
}

// ---- C numeric conversions as x86-64 performs them (what Redis' C code relies on) ----

/// `(int32_t)d` / `(int)d`: truncation; out of range or NaN gives INT_MIN (cvttsd2si).
pub(crate) fn c_f64_to_i32(d: f64) -> i32 {
    if d.is_nan() || d >= 2147483648.0 || d <= -2147483649.0 {
        i32::MIN
    } else {
        d as i32
    }
}

/// `(int64_t)d`: truncation; out of range or NaN gives INT64_MIN.
pub(crate) fn c_f64_to_i64(d: f64) -> i64 {
    if !(-9223372036854775808.0..9223372036854775808.0).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// `(uint64_t)d` as gcc compiles it for x86-64: values below 2^63 (and NaN) go through the
/// signed conversion, larger ones are offset by 2^63 first.
pub(crate) fn c_f64_to_u64(d: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    if d >= TWO63 {
        (c_f64_to_i64(d - TWO63) as u64) ^ (1u64 << 63)
    } else {
        c_f64_to_i64(d) as u64
    }
}

// ---- the C library's number formatting and parsing (glibc in Redis' builds) ----

extern "C" {
    fn snprintf(buf: *mut c_char, n: usize, fmt: *const c_char, ...) -> c_int;
    fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64;
}

/// `printf("%.<precision>g", x)`; precision in 1..=99.
pub(crate) fn fmt_g(x: f64, precision: i32, out: &mut Vec<u8>) {
    let fmt = format!("%.{precision}g\0");
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is large enough for %g of a double with precision <= 99 truncated
    // to 64 bytes by snprintf itself; the format is NUL-terminated and takes one double.
    let n = unsafe {
        snprintf(
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
            fmt.as_ptr() as *const c_char,
            x,
        )
    };
    let n = (n.max(0) as usize).min(buf.len() - 1);
    out.extend_from_slice(&buf[..n]);
}

/// C `strtod` on a NUL-terminated byte string: the value and how many bytes it consumed
/// (0 when no conversion was possible).
///
/// # Safety
/// `s` must point into a NUL-terminated buffer.
pub(crate) unsafe fn c_strtod(s: *const u8) -> (f64, usize) {
    let mut end: *mut c_char = ptr::null_mut();
    let v = strtod(s as *const c_char, &mut end);
    (v, (end as usize).saturating_sub(s as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_conversions_match_x86_64() {
        assert_eq!(c_f64_to_i32(2147483647.9), i32::MAX);
        assert_eq!(c_f64_to_i32(2147483648.0), i32::MIN);
        assert_eq!(c_f64_to_i32(-2147483648.9), i32::MIN);
        assert_eq!(c_f64_to_i32(f64::NAN), i32::MIN);
        assert_eq!(c_f64_to_i64(-1.9), -1);
        assert_eq!(c_f64_to_i64(1e19), i64::MIN);
        assert_eq!(c_f64_to_u64(f64::NAN), 1u64 << 63);
        assert_eq!(c_f64_to_u64(18446744073709551616.0), 0);
        assert_eq!(c_f64_to_u64(9223372036854779904.0), (1u64 << 63) | 4096);
        assert_eq!(c_f64_to_u64(-1.0), u64::MAX);
    }

    #[test]
    fn printf_g_and_strtod() {
        let g = |x: f64, p: i32| {
            let mut v = Vec::new();
            fmt_g(x, p, &mut v);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(g(0.1, 14), "0.1");
        assert_eq!(g(1e15, 14), "1e+15");
        assert_eq!(g(123456789012345.0, 14), "1.2345678901234e+14");
        assert_eq!(g(f64::INFINITY, 14), "inf");
        assert_eq!(g(1.23456, 3), "1.23");
        let d = |s: &str| {
            let c = std::ffi::CString::new(s).unwrap();
            // SAFETY: a NUL-terminated string that outlives the call.
            unsafe { c_strtod(c.as_ptr() as *const u8) }
        };
        assert_eq!(d("1.5x"), (1.5, 3));
        assert_eq!(d("0x10"), (16.0, 4));
        assert_eq!(d("-"), (0.0, 0));
        assert!(d("nan").0.is_nan());
    }
}
