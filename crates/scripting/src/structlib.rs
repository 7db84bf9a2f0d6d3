//! The `struct` library (Roberto Ierusalimschy's struct, as bundled by Redis): `pack`,
//! `unpack` and `size` of binary records described by a format string.
//!
//! Format characters: `>` big endian, `<` little endian, `!n` maximum alignment (default 8),
//! ` ` ignored, `x` one zero byte, `b/B` char, `h/H` short, `l/L` long, `T` size_t, `i/In`
//! int of n bytes (default 4, at most 32), `f` float, `d` double, `s` zero-terminated string,
//! `cn` n characters (`c0`: the whole string when packing, the previously read number as the
//! length when unpacking). Sizes are those of x86-64 Linux, where Redis runs.

use crate::lapi::{self, lua_cfn, msg, LResult, LuaErr};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

const MAXINTSIZE: usize = 32;
/// Alignment of a double in a struct: the default for `!`.
const MAXALIGN: usize = 8;

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Big,
    Little,
}

struct Header {
    endian: Endian,
    align: usize,
}

impl Header {
    fn new() -> Header {
        Header {
            endian: if cfg!(target_endian = "little") {
                Endian::Little
            } else {
                Endian::Big
            },
            align: 1,
        }
    }
}

/// The format string up to its first NUL (the C code sees a C string), with a cursor.
struct Fmt<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Fmt<'_> {
    fn new(s: &[u8]) -> Fmt<'_> {
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        Fmt {
            s: &s[..end],
            pos: 0,
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = self.s.get(self.pos).copied();
        self.pos += c.is_some() as usize;
        c
    }

    /// A decimal number at the cursor, or `default` when there is none.
    fn getnum(&mut self, default: usize) -> LResult<usize> {
        if !self.s.get(self.pos).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut a: i32 = 0;
        while let Some(&d) = self.s.get(self.pos).filter(|d| d.is_ascii_digit()) {
            let d = (d - b'0') as i32;
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(msg("integral size overflow"));
            }
            a = a * 10 + d;
            self.pos += 1;
        }
        Ok(a as usize)
    }

    /// The size of option `opt` (0 for options that take no room or need no alignment).
    fn optsize(&mut self, opt: u8) -> LResult<usize> {
        Ok(match opt {
            b'B' | b'b' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' => 8,
            b'f' => 4,
            b'd' => 8,
            b'x' => 1,
            b'c' => self.getnum(1)?,
            b'i' | b'I' => {
                let sz = self.getnum(4)?;
                if sz > MAXINTSIZE {
                    return Err(msg(format!(
                        "integral size {} is larger than limit of {}",
                        sz as i32, MAXINTSIZE
                    )));
                }
                sz
            }
            _ => 0,
        })
    }

    /// Options that change the header (or are not options at all).
    fn control(&mut self, opt: u8, h: &mut Header) -> LResult<()> {
        match opt {
            b' ' => {}
            b'>' => h.endian = Endian::Big,
            b'<' => h.endian = Endian::Little,
            b'!' => {
                let a = self.getnum(MAXALIGN)?;
                if !(a > 0 && a & (a - 1) == 0) {
                    return Err(msg(format!("alignment {} is not a power of 2", a as i32)));
                }
                h.align = a;
            }
            _ => {
                let mut m = b"invalid format option '".to_vec();
                m.push(opt);
                m.push(b'\'');
                return Err(LuaErr::Arg(1, m));
            }
        }
        Ok(())
    }
}

/// Padding needed before an item of `size` bytes at offset `len`.
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    size.wrapping_sub(len & size.wrapping_sub(1)) & size.wrapping_sub(1)
}

/// Bytes of `v` in the order of `endian`, `size` of them (bytes beyond the 8 of a 64-bit
/// value are zero, as in the C implementation).
fn put_integer(out: &mut Vec<u8>, n: f64, endian: Endian, size: usize) {
    let mut value: u64 = if n < 0.0 {
        lapi::c_f64_to_i64(n) as u64
    } else {
        lapi::c_f64_to_u64(n)
    };
    let start = out.len();
    out.resize(start + size, 0);
    let buf = &mut out[start..];
    for i in 0..size {
        let at = if endian == Endian::Little {
            i
        } else {
            size - 1 - i
        };
        buf[at] = value as u8;
        value = value.checked_shr(8).unwrap_or(0);
    }
}

/// `bytes` (native order) in the order of `endian`.
fn ordered<const N: usize>(mut bytes: [u8; N], endian: Endian) -> [u8; N] {
    let native = if cfg!(target_endian = "little") {
        Endian::Little
    } else {
        Endian::Big
    };
    if endian != native {
        bytes.reverse();
    }
    bytes
}

unsafe fn b_pack(l: *mut lua_State) -> LResult<c_int> {
    let fmt_bytes = lapi::check_bytes(l, 1)?;
    let mut fmt = Fmt::new(fmt_bytes);
    let mut h = Header::new();
    let mut arg: c_int = 2;
    // The C implementation leaves a nil mark above the arguments, so a missing argument just
    // after the last one reads as nil ("got nil", not "got no value").
    ffi::lua_pushnil(l);
    let mut out: Vec<u8> = Vec::new();
    while let Some(opt) = fmt.next() {
        let mut size = fmt.optsize(opt)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = lapi::check_number(l, arg)?;
                arg += 1;
                put_integer(&mut out, n, h.endian, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = lapi::check_number(l, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&ordered(f.to_ne_bytes(), h.endian));
            }
            b'd' => {
                let d = lapi::check_number(l, arg)?;
                arg += 1;
                out.extend_from_slice(&ordered(d.to_ne_bytes(), h.endian));
            }
            b'c' | b's' => {
                let s = lapi::check_bytes(l, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // The C code reports the argument after the string.
                    return Err(LuaErr::Arg(arg, "string too short".into()));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => fmt.control(opt, &mut h)?,
        }
    }
    lapi::push_bytes(l, &out);
    Ok(1)
}

/// An integer of `size` bytes as a Lua number.
fn get_integer(buf: &[u8], endian: Endian, signed: bool, size: usize) -> f64 {
    let mut v: u64 = 0;
    for i in 0..size {
        let b = if endian == Endian::Big {
            buf[i]
        } else {
            buf[size - 1 - i]
        };
        v = (v << 8) | b as u64;
    }
    if !signed {
        return v as f64;
    }
    // The sign bit is that of the last byte read; the C shift count wraps modulo 64.
    let mask = u64::MAX << ((size * 8).wrapping_sub(1) & 63);
    if v & mask != 0 {
        v |= mask;
    }
    v as i64 as f64
}

unsafe fn b_unpack(l: *mut lua_State) -> LResult<c_int> {
    let fmt_bytes = lapi::check_bytes(l, 1)?;
    let data = lapi::check_bytes(l, 2)?;
    let ld = data.len();
    let start = ffi::luaL_optinteger(l, 3, 1) as usize;
    if start == 0 {
        return Err(LuaErr::Arg(3, "offset must be 1 or greater".into()));
    }
    let mut pos = start - 1;
    let mut fmt = Fmt::new(fmt_bytes);
    let mut h = Header::new();
    let mut n: c_int = 0;
    let too_short = || LuaErr::Arg(2, "data string too short".into());
    while let Some(opt) = fmt.next() {
        let mut size = fmt.optsize(opt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return Err(too_short());
        }
        lapi::check_stack(l, 2, "too many results")?;
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let v = get_integer(&data[pos..], h.endian, opt.is_ascii_lowercase(), size);
                ffi::lua_pushnumber(l, v);
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                ffi::lua_pushnumber(l, f32::from_ne_bytes(ordered(b, h.endian)) as f64);
                n += 1;
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                ffi::lua_pushnumber(l, f64::from_ne_bytes(ordered(b, h.endian)));
                n += 1;
            }
            b'c' => {
                if size == 0 {
                    if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                        return Err(msg("format 'c0' needs a previous size"));
                    }
                    size = lapi::c_f64_to_u64(ffi::lua_tonumber(l, -1)) as usize;
                    ffi::lua_pop(l, 1);
                    n -= 1;
                    if !(size <= ld && pos <= ld - size) {
                        return Err(too_short());
                    }
                }
                lapi::push_bytes(l, &data[pos..pos + size]);
                n += 1;
            }
            b's' => {
                let Some(z) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(msg("unfinished string in data"));
                };
                lapi::push_bytes(l, &data[pos..pos + z]);
                size = z + 1;
                n += 1;
            }
            _ => fmt.control(opt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos.wrapping_add(1) as ffi::lua_Integer);
    Ok(n + 1)
}

unsafe fn b_size(l: *mut lua_State) -> LResult<c_int> {
    let fmt_bytes = lapi::check_bytes(l, 1)?;
    let mut fmt = Fmt::new(fmt_bytes);
    let mut h = Header::new();
    let mut pos: usize = 0;
    while let Some(opt) = fmt.next() {
        let size = fmt.optsize(opt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(LuaErr::Arg(1, "option 's' has no fixed size".into()));
        } else if opt == b'c' && size == 0 {
            return Err(LuaErr::Arg(1, "option 'c0' has no fixed size".into()));
        }
        if !opt.is_ascii_alphanumeric() {
            fmt.control(opt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos as ffi::lua_Integer);
    Ok(1)
}

lua_cfn!(pack => b_pack);
lua_cfn!(unpack => b_unpack);
lua_cfn!(size => b_size);

unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    ffi::lua_createtable(l, 0, 3);
    lapi::set_funcs(
        l,
        &[(c"pack", pack), (c"unpack", unpack), (c"size", size)],
        0,
    );
    1
}

/// Install the global `struct` table.
pub fn register(lua: &mlua::Lua) -> mlua::Result<()> {
    lapi::register_global(lua, "struct", open)
}
