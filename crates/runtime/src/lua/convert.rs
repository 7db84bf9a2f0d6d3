//! Lua values <-> RESP, as Redis converts them: command replies become Lua values for
//! `redis.call`, and a script's return value becomes the client's reply.

use mlua::{Lua, Table, Value};
use tern_resp::Reply;

/// Nesting beyond this is answered with "reached lua stack limit" (a table that contains
/// itself would otherwise recurse forever).
const MAX_DEPTH: usize = 1000;

/// A Lua number as a command argument: integers plainly, others the way Redis prints doubles.
pub fn number_arg(n: f64) -> Vec<u8> {
    if n == 0.0 {
        return b"0".to_vec();
    }
    crate::double::fmt_double(n).into_bytes()
}

/// Lua's own `tostring` of a number (`%.14g`).
pub fn lua_number_string(n: f64) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: the buffer is large enough for any %.14g rendering and NUL-terminated by snprintf.
    let len = unsafe {
        libc::snprintf(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%.14g".as_ptr(),
            n,
        )
    };
    String::from_utf8_lossy(&buf[..len.clamp(0, 63) as usize]).into_owned()
}

/// Redis's error table `{err="CODE msg"}` from "-CODE msg" or "msg" (which gets ERR). With
/// `quiet`, the table says the error was already counted in the error stats.
pub fn error_table(lua: &Lua, s: &[u8], quiet: bool) -> mlua::Result<Table> {
    let (code, msg): (&[u8], &[u8]) = if s.first() == Some(&b'-') {
        match s.iter().position(|&c| c == b' ') {
            Some(sp) => (&s[1..sp], &s[sp + 1..]),
            None => (b"ERR", &s[1..]),
        }
    } else {
        (b"ERR", s)
    };
    let is_nl = |c: &u8| *c == b'\r' || *c == b'\n';
    let start = msg.iter().position(|c| !is_nl(c)).unwrap_or(msg.len());
    let end = msg.iter().rposition(|c| !is_nl(c)).map_or(start, |e| e + 1);
    let mut text = code.to_vec();
    text.push(b' ');
    text.extend_from_slice(&msg[start..end.max(start)]);
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(&text)?)?;
    if quiet {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(t)
}

/// From an error value: its message ("ERR ..." for plain strings), where it happened
/// (source, line) and whether it was already counted in the error stats.
pub fn error_info(v: &Value) -> (String, Option<(String, i64)>, bool) {
    match v {
        Value::Table(t) => {
            let msg = match t.raw_get::<Value>("err") {
                Ok(Value::String(s)) => s.to_string_lossy(),
                Ok(Value::Integer(i)) => i.to_string(),
                Ok(Value::Number(n)) => lua_number_string(n),
                _ => "(null)".to_string(),
            };
            let source = match t.raw_get::<Value>("source") {
                Ok(Value::String(s)) => Some(s.to_string_lossy()),
                _ => None,
            };
            let line = match t.raw_get::<Value>("line") {
                Ok(Value::Integer(i)) => Some(i),
                Ok(Value::Number(n)) => Some(n as i64),
                _ => None,
            };
            let quiet = matches!(
                t.raw_get::<Value>("ignore_error_stats_update"),
                Ok(Value::Boolean(true))
            );
            (msg, source.zip(line), quiet)
        }
        Value::String(s) => (format!("ERR {}", s.to_string_lossy()), None, false),
        other => (
            format!("ERR {}", other.to_string().unwrap_or_default()),
            None,
            false,
        ),
    }
}

/// Write `-...` as given (no ERR added), line breaks as spaces. `count` adds it to the
/// error statistics (errors raised by commands inside the script were counted already).
pub fn write_error(out: &mut Reply, text: &str, count: bool) {
    let body = text.strip_prefix('-').unwrap_or(text);
    let body = body.trim_end_matches(['\r', '\n']);
    out.buf.push(b'-');
    out.buf.extend(
        body.bytes()
            .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.buf.extend_from_slice(b"\r\n");
    if count {
        out.errors += 1;
        let code = body.split(' ').next().unwrap_or("ERR");
        out.error_codes.push(code.to_string());
    }
}

fn header(out: &mut Reply, p: u8, n: usize) {
    out.buf.push(p);
    out.buf
        .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.buf.extend_from_slice(b"\r\n");
}

fn str_field(t: &Table, k: &str) -> Option<mlua::LuaString> {
    match t.raw_get::<Value>(k) {
        Ok(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// A script's return value as the client's reply (`script_resp`: the protocol the script set
/// with redis.setresp, which decides how booleans come back).
pub fn lua_to_reply(out: &mut Reply, v: &Value, script_resp: u8, depth: usize) {
    if depth > MAX_DEPTH {
        write_error(out, "-ERR reached lua stack limit", true);
        return;
    }
    match v {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) => {
            if script_resp == 2 {
                if *b {
                    out.int(1)
                } else {
                    out.null()
                }
            } else {
                out.boolean(*b)
            }
        }
        Value::Integer(i) => out.int(*i),
        Value::Number(n) => out.int(*n as i64),
        Value::Table(t) => table_to_reply(out, t, script_resp, depth),
        _ => out.null(),
    }
}

fn table_to_reply(out: &mut Reply, t: &Table, script_resp: u8, depth: usize) {
    if let Some(e) = str_field(t, "err") {
        let (msg, _, quiet) = error_info(&Value::Table(t.clone()));
        let _ = e;
        write_error(out, &format!("-{msg}"), !quiet);
        return;
    }
    if let Some(s) = str_field(t, "ok") {
        let s: Vec<u8> = s
            .as_bytes()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        out.simple(&s);
        return;
    }
    match t.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => return crate::double::reply_double(out, d),
        Ok(Value::Integer(i)) => return crate::double::reply_double(out, i as f64),
        _ => {}
    }
    if let Some(s) = str_field(t, "big_number") {
        let s: Vec<u8> = s
            .as_bytes()
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
            .collect();
        if out.is_resp3() {
            out.buf.push(b'(');
            out.buf.extend_from_slice(&s);
            out.buf.extend_from_slice(b"\r\n");
        } else {
            out.bulk(&s);
        }
        return;
    }
    if let Ok(Value::Table(vt)) = t.raw_get::<Value>("verbatim_string") {
        if let (Some(fmt), Some(s)) = (str_field(&vt, "format"), str_field(&vt, "string")) {
            let s = s.as_bytes();
            if out.is_resp3() {
                let fmt = fmt.as_bytes();
                let mut f3 = [b' '; 3];
                for (d, c) in f3.iter_mut().zip(fmt.iter()) {
                    *d = *c;
                }
                header(out, b'=', s.len() + 4);
                out.buf.extend_from_slice(&f3);
                out.buf.push(b':');
                out.buf.extend_from_slice(&s);
                out.buf.extend_from_slice(b"\r\n");
            } else {
                out.bulk(&s);
            }
            return;
        }
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = m.pairs::<Value, Value>().filter_map(|p| p.ok()).collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            lua_to_reply(out, k, script_resp, depth + 1);
            lua_to_reply(out, v, script_resp, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let keys: Vec<Value> = s
            .pairs::<Value, Value>()
            .filter_map(|p| p.ok().map(|(k, _)| k))
            .collect();
        out.set(keys.len());
        for k in &keys {
            lua_to_reply(out, k, script_resp, depth + 1);
        }
        return;
    }
    let mut items = Vec::new();
    let mut j = 1;
    loop {
        match t.raw_get::<Value>(j) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
        j += 1;
    }
    out.array(items.len());
    for v in &items {
        lua_to_reply(out, v, script_resp, depth + 1);
    }
}

// ---------------------------------------------------------------------------------------------
// RESP -> Lua

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn line(&mut self) -> &'a [u8] {
        let start = self.pos;
        let end = self.b[start..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map_or(self.b.len(), |p| start + p);
        self.pos = (end + 2).min(self.b.len());
        &self.b[start..end]
    }

    fn int(s: &[u8]) -> i64 {
        std::str::from_utf8(s)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    fn bulk(&mut self, n: i64) -> &'a [u8] {
        let n = n.max(0) as usize;
        let start = self.pos.min(self.b.len());
        let end = (start + n).min(self.b.len());
        self.pos = (end + 2).min(self.b.len());
        &self.b[start..end]
    }

    fn value(&mut self, lua: &Lua) -> mlua::Result<Value> {
        if self.pos >= self.b.len() {
            return Ok(Value::Nil);
        }
        let t = self.b[self.pos];
        self.pos += 1;
        let line = self.line();
        Ok(match t {
            b'+' => {
                let tb = lua.create_table()?;
                tb.raw_set("ok", lua.create_string(line)?)?;
                Value::Table(tb)
            }
            b'-' => {
                let mut s = b"-".to_vec();
                s.extend_from_slice(line);
                Value::Table(error_table(lua, &s, true)?)
            }
            b':' => Value::Number(Self::int(line) as f64),
            b'$' => {
                let n = Self::int(line);
                if n < 0 {
                    Value::Boolean(false)
                } else {
                    Value::String(lua.create_string(self.bulk(n))?)
                }
            }
            b'*' => {
                let n = Self::int(line);
                if n < 0 {
                    Value::Boolean(false)
                } else {
                    let tb = lua.create_table_with_capacity(n as usize, 0)?;
                    for i in 0..n {
                        let v = self.value(lua)?;
                        tb.raw_set(i + 1, v)?;
                    }
                    Value::Table(tb)
                }
            }
            b'%' => {
                let n = Self::int(line);
                let inner = lua.create_table()?;
                for _ in 0..n {
                    let k = self.value(lua)?;
                    let v = self.value(lua)?;
                    if !k.is_nil() {
                        inner.raw_set(k, v)?;
                    }
                }
                let tb = lua.create_table()?;
                tb.raw_set("map", inner)?;
                Value::Table(tb)
            }
            b'~' => {
                let n = Self::int(line);
                let inner = lua.create_table()?;
                for _ in 0..n {
                    let k = self.value(lua)?;
                    if !k.is_nil() {
                        inner.raw_set(k, true)?;
                    }
                }
                let tb = lua.create_table()?;
                tb.raw_set("set", inner)?;
                Value::Table(tb)
            }
            b'>' => {
                let n = Self::int(line);
                let tb = lua.create_table()?;
                for i in 0..n {
                    let v = self.value(lua)?;
                    tb.raw_set(i + 1, v)?;
                }
                Value::Table(tb)
            }
            b'|' => {
                // Attributes are read and dropped; the value follows.
                let n = Self::int(line);
                for _ in 0..2 * n {
                    self.value(lua)?;
                }
                self.value(lua)?
            }
            b'_' => Value::Nil,
            b'#' => Value::Boolean(line == b"t"),
            b',' => {
                let d = match line {
                    b"inf" => f64::INFINITY,
                    b"-inf" => f64::NEG_INFINITY,
                    b"nan" | b"-nan" => f64::NAN,
                    s => std::str::from_utf8(s)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0.0),
                };
                let tb = lua.create_table()?;
                tb.raw_set("double", d)?;
                Value::Table(tb)
            }
            b'(' => {
                let tb = lua.create_table()?;
                tb.raw_set("big_number", lua.create_string(line)?)?;
                Value::Table(tb)
            }
            b'=' => {
                let s = self.bulk(Self::int(line));
                let (fmt, text) = if s.len() >= 4 {
                    (&s[..3], &s[4..])
                } else {
                    (&b"txt"[..], s)
                };
                let inner = lua.create_table()?;
                inner.raw_set("string", lua.create_string(text)?)?;
                inner.raw_set("format", lua.create_string(fmt)?)?;
                let tb = lua.create_table()?;
                tb.raw_set("verbatim_string", inner)?;
                Value::Table(tb)
            }
            _ => Value::Nil,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The same conversion straight onto a Lua stack (redis.call's hot path: no mlua values, no
// registry references). These functions keep no Rust value that needs dropping in their
// frames, so a Lua memory error raised by a push unwinds nothing.

/// Push `{err = "CODE message", ignore_error_stats_update = true}` for an error text (a
/// leading `-` carries the code; without one the code is ERR), as `error_table` builds it.
///
/// # Safety
/// `state` is a valid Lua state with room for 3 more slots.
pub unsafe fn push_error_table(state: *mut mlua::ffi::lua_State, s: &[u8]) {
    use mlua::ffi;
    let (code, msg): (&[u8], &[u8]) = if s.first() == Some(&b'-') {
        match s.iter().position(|&c| c == b' ') {
            Some(sp) => (&s[1..sp], &s[sp + 1..]),
            None => (b"ERR", &s[1..]),
        }
    } else {
        (b"ERR", s)
    };
    let is_nl = |c: &u8| *c == b'\r' || *c == b'\n';
    let start = msg.iter().position(|c| !is_nl(c)).unwrap_or(msg.len());
    let end = msg.iter().rposition(|c| !is_nl(c)).map_or(start, |e| e + 1);
    let msg = &msg[start..end.max(start)];
    ffi::lua_createtable(state, 0, 2);
    // "CODE message" built on the Lua side (two pushes and a concat: no Rust allocation).
    ffi::lua_pushlstring(state, code.as_ptr() as *const _, code.len());
    ffi::lua_pushlstring(state, b" ".as_ptr() as *const _, 1);
    ffi::lua_pushlstring(state, msg.as_ptr() as *const _, msg.len());
    ffi::lua_concat(state, 3);
    ffi::lua_setfield(state, -2, c"err".as_ptr());
    ffi::lua_pushboolean(state, 1);
    ffi::lua_setfield(state, -2, c"ignore_error_stats_update".as_ptr());
}

/// Push the Lua value of the reply in `buf` (as `reply_to_lua`); true if it is an error.
///
/// # Safety
/// `state` is a valid Lua state.
pub unsafe fn push_reply(state: *mut mlua::ffi::lua_State, buf: &[u8]) -> bool {
    let mut p = Parser { b: buf, pos: 0 };
    p.push(state);
    buf.first() == Some(&b'-')
}

impl Parser<'_> {
    unsafe fn push_bytes(state: *mut mlua::ffi::lua_State, b: &[u8]) {
        mlua::ffi::lua_pushlstring(state, b.as_ptr() as *const _, b.len());
    }

    /// One wrapper table `{name = <value on the stack top>}`.
    unsafe fn wrap_top(state: *mut mlua::ffi::lua_State, name: &std::ffi::CStr) {
        use mlua::ffi;
        ffi::lua_createtable(state, 0, 1);
        ffi::lua_insert(state, -2);
        ffi::lua_setfield(state, -2, name.as_ptr());
    }

    unsafe fn push(&mut self, state: *mut mlua::ffi::lua_State) {
        use mlua::ffi;
        ffi::luaL_checkstack(state, 4, c"reply nested too deeply".as_ptr());
        if self.pos >= self.b.len() {
            ffi::lua_pushnil(state);
            return;
        }
        let t = self.b[self.pos];
        self.pos += 1;
        let line = self.line();
        match t {
            b'+' => {
                Self::push_bytes(state, line);
                Self::wrap_top(state, c"ok");
            }
            b'-' => {
                // The error text with its leading '-' (the code) back in front.
                let start = line.as_ptr() as usize - self.b.as_ptr() as usize - 1;
                push_error_table(state, &self.b[start..start + 1 + line.len()]);
            }
            b':' => ffi::lua_pushnumber(state, Self::int(line) as f64),
            b'$' => {
                let n = Self::int(line);
                if n < 0 {
                    ffi::lua_pushboolean(state, 0);
                } else {
                    let b = self.bulk(n);
                    Self::push_bytes(state, b);
                }
            }
            b'*' | b'>' => {
                let n = Self::int(line);
                if n < 0 && t == b'*' {
                    ffi::lua_pushboolean(state, 0);
                } else {
                    let n = n.max(0);
                    ffi::lua_createtable(state, n.min(1 << 20) as std::ffi::c_int, 0);
                    for i in 0..n {
                        self.push(state);
                        ffi::lua_rawseti(state, -2, (i + 1) as _);
                    }
                }
            }
            b'%' | b'~' => {
                let n = Self::int(line);
                ffi::lua_createtable(state, 0, 0);
                for _ in 0..n {
                    self.push(state);
                    if t == b'%' {
                        self.push(state);
                    } else {
                        ffi::lua_pushboolean(state, 1);
                    }
                    if ffi::lua_isnil(state, -2) != 0 {
                        ffi::lua_pop(state, 2);
                    } else {
                        ffi::lua_rawset(state, -3);
                    }
                }
                Self::wrap_top(state, if t == b'%' { c"map" } else { c"set" });
            }
            b'|' => {
                let n = Self::int(line);
                for _ in 0..2 * n {
                    self.push(state);
                    ffi::lua_pop(state, 1);
                }
                self.push(state);
            }
            b'_' => ffi::lua_pushnil(state),
            b'#' => ffi::lua_pushboolean(state, (line == b"t") as std::ffi::c_int),
            b',' => {
                let d = match line {
                    b"inf" => f64::INFINITY,
                    b"-inf" => f64::NEG_INFINITY,
                    b"nan" | b"-nan" => f64::NAN,
                    s => std::str::from_utf8(s)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0.0),
                };
                ffi::lua_pushnumber(state, d);
                Self::wrap_top(state, c"double");
            }
            b'(' => {
                Self::push_bytes(state, line);
                Self::wrap_top(state, c"big_number");
            }
            b'=' => {
                let s = self.bulk(Self::int(line));
                let (fmt, text) = if s.len() >= 4 {
                    (&s[..3], &s[4..])
                } else {
                    (&b"txt"[..], s)
                };
                ffi::lua_createtable(state, 0, 2);
                Self::push_bytes(state, text);
                ffi::lua_setfield(state, -2, c"string".as_ptr());
                Self::push_bytes(state, fmt);
                ffi::lua_setfield(state, -2, c"format".as_ptr());
                Self::wrap_top(state, c"verbatim_string");
            }
            _ => ffi::lua_pushnil(state),
        }
    }
}

/// A command's reply as the Lua value redis.call returns, and whether it is an error (which
/// redis.call raises and redis.pcall returns).
pub fn reply_to_lua(lua: &Lua, buf: &[u8]) -> mlua::Result<(Value, bool)> {
    let is_err = buf.first() == Some(&b'-');
    let mut p = Parser { b: buf, pos: 0 };
    Ok((p.value(lua)?, is_err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_arguments() {
        assert_eq!(number_arg(3.0), b"3");
        assert_eq!(number_arg(-0.0), b"0");
        assert_eq!(number_arg(1.5), b"1.5");
        assert_eq!(lua_number_string(0.1), "0.1");
        assert_eq!(lua_number_string(1e100), "1e+100");
    }

    #[test]
    fn replies_round_trip() {
        let lua = Lua::new();
        let (v, e) = reply_to_lua(&lua, b"*3\r\n:1\r\n$-1\r\n$2\r\nab\r\n").unwrap();
        assert!(!e);
        let mut out = Reply::new();
        lua_to_reply(&mut out, &v, 2, 0);
        // arrays stop at the first nil (false is not nil: it becomes a null bulk)
        assert_eq!(out.buf, b"*3\r\n:1\r\n$-1\r\n$2\r\nab\r\n");
        let (v, e) = reply_to_lua(&lua, b"-WRONGTYPE bad\r\n").unwrap();
        assert!(e);
        let mut out = Reply::new();
        lua_to_reply(&mut out, &v, 2, 0);
        assert_eq!(out.buf, b"-WRONGTYPE bad\r\n");
        assert_eq!(out.errors, 0);
    }
}
