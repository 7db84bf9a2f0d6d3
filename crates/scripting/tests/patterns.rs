//! The Rust pattern functions (`string.find/match/gmatch/gsub/rep`, see `pattern.rs`) against
//! Lua 5.1.5's own C string library, which mlua vendors unchanged from the file Redis ships
//! in deps/lua: every call runs in a VM with the C functions and in one with
//! `register_libs`, and the serialized results (values or error messages) must be identical.
//!
//! - `hand_written_cases`: the manual's examples and the corners (anchors, %b, %f, position
//!   captures, back-references, gsub with tables and functions, malformed patterns).
//! - `random_cases`: tens of thousands of random subjects, patterns, positions and
//!   replacements built from pattern tokens, so that every combination gets exercised.
//! - `interrupt_*`: a backtracking pattern and a huge string.rep stop at the server's poll.

use mlua::{Lua, Value};
use std::cell::Cell;

/// Calls `string[fname]` in a protected call and serializes what came back. `rmode` picks
/// gsub's replacement (a string, a number, a table or one of several functions) and `gmatch`
/// collects up to 100 iterations.
const HARNESS: &str = r#"
local fmt, concat, select, type, tostring, pcall = string.format, table.concat, select, type, tostring, pcall
local function ser(...)
  local parts = {}
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    local t = type(v)
    if t == 'string' then parts[i] = 's' .. fmt('%q', v)
    elseif t == 'number' then parts[i] = 'n' .. fmt('%.17g', v)
    else parts[i] = t .. ':' .. tostring(v) end
  end
  return concat(parts, ',')
end
local tables = {
  { a = '<A>', b = false, ab = '<AB>', [''] = '<E>', x = 12, ['1'] = 'one', ['('] = {} },
  {},
}
local funcs = {
  function(...) return (...) end,
  function() return nil end,
  function() return false end,
  function() return 7.5 end,
  function() return {} end,
  function(...) return concat({...}, '|') end,
  function(...) return select('#', ...) end,
  function(c) return string.gsub(c, '.', '%0%0') end,
  function() error('from callback') end,
}
local string = string
function run(fname, s, p, a3, a4, rmode)
  if fname == 'gmatch' then
    local out = {}
    local ok, err = pcall(function()
      local it = string.gmatch(s, p)
      for _ = 1, 100 do
        local r = ser(it())
        if r == '' then break end
        out[#out + 1] = '{' .. r .. '}'
      end
    end)
    if not ok then out[#out + 1] = 'error:' .. tostring(err) end
    return concat(out, ';')
  end
  if fname == 'gsub' and rmode ~= nil then
    if rmode <= #tables then a3 = tables[rmode] else a3 = funcs[rmode - #tables] end
  end
  local f = string[fname]
  return ser(pcall(function() return f(s, p, a3, a4) end))
end
"#;

fn vm(rust_patterns: bool) -> Lua {
    let lua = Lua::new();
    if rust_patterns {
        tern_scripting::register_libs(&lua).expect("register libs");
    }
    lua.load(HARNESS)
        .set_name("=harness")
        .exec()
        .expect("harness");
    lua
}

/// One call: function name, subject, pattern, argument 3, argument 4, gsub replacement mode.
#[derive(Clone, Debug)]
struct Call {
    f: &'static str,
    s: Vec<u8>,
    p: Vec<u8>,
    a3: Arg,
    a4: Arg,
    rmode: Option<i64>,
}

#[derive(Clone, Debug)]
enum Arg {
    None,
    Int(i64),
    Num(f64),
    Str(Vec<u8>),
    Bool(bool),
}

fn to_lua(lua: &Lua, a: &Arg) -> Value {
    match a {
        Arg::None => Value::Nil,
        Arg::Int(i) => Value::Integer(*i),
        Arg::Num(n) => Value::Number(*n),
        Arg::Str(s) => Value::String(lua.create_string(s).unwrap()),
        Arg::Bool(b) => Value::Boolean(*b),
    }
}

fn run(lua: &Lua, c: &Call) -> String {
    let f: mlua::Function = lua.globals().get("run").unwrap();
    let r: mlua::Result<mlua::LuaString> = f.call((
        c.f,
        lua.create_string(&c.s).unwrap(),
        lua.create_string(&c.p).unwrap(),
        to_lua(lua, &c.a3),
        to_lua(lua, &c.a4),
        c.rmode,
    ));
    match r {
        Ok(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        Err(e) => format!("<harness error: {e}>"),
    }
}

fn compare(calls: &[Call]) {
    let (c_vm, rust_vm) = (vm(false), vm(true));
    let mut failures = Vec::new();
    let (mut matched, mut errors) = (0, 0);
    for c in calls {
        let (want, got) = (run(&c_vm, c), run(&rust_vm, c));
        if want != got && failures.len() < 20 {
            failures.push(format!("{c:?}\n  C:    {want}\n  Rust: {got}"));
        }
        matched +=
            (want.starts_with("boolean:true,n") || want.starts_with("boolean:true,s")) as usize;
        errors += (want.starts_with("boolean:false") || want.contains("error:")) as usize;
    }
    // The comparison means something only if both outcomes are common.
    assert!(
        matched * 5 > calls.len(),
        "{matched} of {} matched",
        calls.len()
    );
    assert!(
        errors * 50 > calls.len(),
        "{errors} of {} failed",
        calls.len()
    );
    eprintln!(
        "{} calls: {matched} found something, {errors} raised errors",
        calls.len()
    );
    assert!(
        failures.is_empty(),
        "{} differences (first ones):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn call(f: &'static str, s: &str, p: &str, a3: Arg, a4: Arg) -> Call {
    Call {
        f,
        s: s.as_bytes().to_vec(),
        p: p.as_bytes().to_vec(),
        a3,
        a4,
        rmode: None,
    }
}

#[test]
fn hand_written_cases() {
    use Arg::*;
    let mut calls = Vec::new();
    let subjects = [
        "hello world from Lua",
        "",
        "THE (quick) fox",
        "f(a(b)c)d  (x)",
        "key = value; k2=v2",
        "aaa",
        "a\0b\0c",
        "  trim me \t\x0b",
        "THE (quick) [brown] fox's 123 %jumps%",
        "\u{e9}t\u{e9} \u{2603}",
        "$^.*+?-[]",
    ];
    let patterns = [
        "",
        "o",
        "l+",
        "(o)(r)",
        "()ll()",
        "%a+",
        "%w+%s*=%s*%w+",
        "(%w+)=(%w+)",
        "^hello",
        "^(h)",
        "Lua$",
        "a$b",
        "$",
        "^",
        "^$",
        "%bxy",
        "%b()",
        "%b((",
        "%f[%a]%a+",
        "%f[%A]",
        "%f[%z]",
        "%f[%w]%w+%f[%W]",
        "(a)%1",
        "(a*(.)%w(%s*))",
        "[%a_][%w_]*",
        "[]]",
        "[^]]+",
        "[a-]",
        "[-a]",
        "[%]]",
        "[%w%.]+",
        "[^%s]+",
        "[\u{e9}]",
        ".-",
        ".-b",
        "a-b",
        "a?a?a?aaa",
        "(.-)%s",
        "%",
        "[a",
        "[^",
        "%b",
        "%bx",
        "%f",
        "%fx",
        "(",
        ")",
        "(()",
        "%1",
        "(a)%2",
        "()%1",
        "%0",
        "(%d+)",
        "%z",
        "%Z+",
        "a\0b",
        "\0",
        "[%z]",
        "%q",
        "%Q",
        "%.",
        "%%",
        "^(%s*)(.-)(%s*)$",
        "%s*$",
        "[%d%l]",
        "[a-c-e]",
        "[%a-z]",
        "x*",
        "x-",
        "x?",
        "(h)(e)(l)(l)(o)( )(w)(o)(r)(l)(d)",
        "((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))",
        "(((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))",
    ];
    for s in subjects {
        for p in patterns {
            calls.push(call("find", s, p, None, None));
            calls.push(call("match", s, p, None, None));
            calls.push(call("gmatch", s, p, None, None));
            for init in [
                Int(0),
                Int(3),
                Int(-3),
                Int(100),
                Int(-100),
                Str(b"2".to_vec()),
            ] {
                calls.push(call("find", s, p, init.clone(), None));
                calls.push(call("match", s, p, init.clone(), None));
            }
            calls.push(call("find", s, p, Int(1), Bool(true)));
            calls.push(call("find", s, p, Int(2), Int(1)));
            for r in ["<%0>", "%1-%2", "%%", "x%", "%a%", "[%3]", "", "%9"] {
                calls.push(call("gsub", s, p, Str(r.as_bytes().to_vec()), None));
                calls.push(call("gsub", s, p, Str(r.as_bytes().to_vec()), Int(1)));
            }
            calls.push(call("gsub", s, p, Num(42.5), None));
            for mode in 1..=11 {
                let mut c = call("gsub", s, p, None, None);
                c.rmode = Some(mode);
                calls.push(c);
            }
        }
    }
    // Argument errors and conversions.
    calls.push(call("find", "", "", Str(b"x".to_vec()), None));
    calls.push(call("gsub", "abc", "b", None, None));
    calls.push(call("gsub", "abc", "b", Bool(true), None));
    calls.push(call(
        "gsub",
        "abc",
        "b",
        Str(b"x".to_vec()),
        Str(b"y".to_vec()),
    ));
    calls.push(call("gsub", "abc", "", Str(b"-".to_vec()), Num(1e10)));
    calls.push(call("gsub", "abc", "", Str(b"-".to_vec()), Int(-1)));
    calls.push(call("gsub", "abc", "", Str(b"-".to_vec()), Num(2.9)));
    calls.push(call("find", "abc", "b", Num(1e300), None));
    calls.push(call("find", "abc", "b", Num(-1e300), None));
    calls.push(call("rep", "ab", "", None, None));
    for (s, n) in [
        ("ab", 3.0),
        ("", 1e6),
        ("x", 0.0),
        ("x", -5.0),
        ("xy", 2.7),
        ("z", 4294967299.0),
    ] {
        let mut c = call("rep", s, "", None, None);
        c.p = format!("{n}").into_bytes();
        calls.push(c);
    }
    compare(&calls);
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const PAT_TOKENS: &[&str] = &[
    "a", "b", "x", "1", " ", ".", ".", "%a", "%d", "%s", "%w", "%p", "%x", "%l", "%u", "%c", "%z",
    "%A", "%S", "%W", "%.", "%%", "%(", "%]", "%q", "%", "[ab]", "[^ab]", "[a-c]", "[%a_]", "[]]",
    "[^]]", "[a-]", "[%]", "[", "]", "(", "(", ")", ")", "()", "%b()", "%bab", "%b(", "%f[%w]",
    "%f[^a]", "%f", "%1", "%2", "%0", "^", "$", "-", "*", "+", "?", "\u{e9}", "\0", "(a)", "(.-)",
    "(%w+)",
];
const QUANT: &[&str] = &["", "", "", "*", "+", "-", "?"];
const SUBJ_CHARS: &[&str] = &[
    "a", "a", "b", "b", "x", "X", "1", "9", " ", "(", ")", "(", ")", "[", "]", "%", ".", "^", "$",
    "-", "\0", "\t", "\x0b", "\u{e9}", "z", "_",
];
const REPL_TOKENS: &[&str] = &["%0", "%1", "%2", "%3", "%a", "%%", "x", "<", ">", "%9", "%"];

fn random_call(r: &mut Rng) -> Call {
    let mut s = String::new();
    for _ in 0..r.below(14) {
        s.push_str(r.pick(SUBJ_CHARS));
    }
    let mut p = String::new();
    if r.below(5) == 0 {
        p.push('^');
    }
    for _ in 0..r.below(7) {
        p.push_str(r.pick(PAT_TOKENS));
        p.push_str(r.pick(QUANT));
    }
    if r.below(6) == 0 {
        p.push('$');
    }
    let f = ["find", "find", "match", "gmatch", "gsub", "gsub"][r.below(6)];
    let mut c = call(f, &s, &p, Arg::None, Arg::None);
    match f {
        "find" | "match" => {
            if r.below(2) == 0 {
                c.a3 = Arg::Int(r.below(33) as i64 - 16);
            }
            if f == "find" && r.below(4) == 0 {
                c.a4 = Arg::Bool(true);
            }
        }
        "gsub" => {
            match r.below(3) {
                0 => c.rmode = Some(1 + r.below(11) as i64),
                _ => {
                    let mut repl = String::new();
                    for _ in 0..r.below(5) {
                        repl.push_str(r.pick(REPL_TOKENS));
                    }
                    c.a3 = Arg::Str(repl.into_bytes());
                }
            }
            if r.below(4) == 0 {
                c.a4 = Arg::Int(r.below(5) as i64 - 1);
            }
        }
        _ => {}
    }
    c
}

#[test]
fn random_cases() {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let calls: Vec<Call> = (0..60_000).map(|_| random_call(&mut r)).collect();
    compare(&calls);
}

// ---- the poll ----

thread_local! {
    /// Polls seen on this thread, and after how many the handler stops the script (0: never).
    static POLLS: Cell<u32> = const { Cell::new(0) };
    static STOP_AFTER: Cell<u32> = const { Cell::new(0) };
}

unsafe fn test_check(_: *mut mlua::ffi::lua_State) -> u8 {
    let n = POLLS.with(|p| {
        p.set(p.get() + 1);
        p.get()
    });
    let stop = STOP_AFTER.with(|s| s.get());
    (stop != 0 && n >= stop) as u8
}

unsafe fn test_raise(l: *mut mlua::ffi::lua_State, reason: u8) -> ! {
    assert_eq!(reason, 1);
    mlua::ffi::lua_pushstring(l, c"stopped by the poll".as_ptr());
    mlua::ffi::lua_error(l)
}

fn stop_after(n: u32) {
    tern_scripting::interrupt::set_handler(test_check, test_raise);
    POLLS.with(|p| p.set(0));
    STOP_AFTER.with(|s| s.set(n));
}

#[test]
fn interrupt_stops_backtracking_pattern() {
    stop_after(3);
    let lua = vm(true);
    let t = std::time::Instant::now();
    let r: (bool, String) = lua
        .load("return pcall(string.find, string.rep('a', 60), string.rep('a*', 10) .. 'b')")
        .eval()
        .unwrap();
    assert_eq!(r, (false, "stopped by the poll".to_string()));
    assert_eq!(POLLS.with(|p| p.get()), 3);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        t.elapsed()
    );
    // gsub and gmatch poll too.
    for code in [
        "return pcall(string.gsub, string.rep('a', 60), string.rep('a-', 10) .. 'b', '')",
        "return pcall(function() for x in string.gmatch(string.rep('a', 60), string.rep('(a*)', 10) .. 'b') do end end)",
        "return pcall(string.match, string.rep('a', 60), string.rep('(.-)', 10) .. 'b')",
    ] {
        stop_after(2);
        let r: (bool, String) = lua.load(code).eval().unwrap();
        assert_eq!(r, (false, "stopped by the poll".to_string()), "{code}");
    }
    stop_after(0);
}

#[test]
fn interrupt_stops_string_rep() {
    stop_after(2);
    let lua = vm(true);
    let r: (bool, String) = lua
        .load("return pcall(string.rep, 'x', 100 * 1024 * 1024)")
        .eval()
        .unwrap();
    assert_eq!(r, (false, "stopped by the poll".to_string()));
    // Without a stop, the same completes; an empty string is never built.
    stop_after(0);
    let n: i64 = lua
        .load("return #string.rep('xy', 20 * 1024 * 1024) + #string.rep('', 2^31 - 1)")
        .eval()
        .unwrap();
    assert_eq!(n, 40 * 1024 * 1024);
}

#[test]
fn deep_patterns_fail_instead_of_overflowing() {
    // Each `a?` is one level of recursion: far more than a thread's stack holds.
    let run = || {
        let lua = vm(true);
        lua.load(
            "local n = 1000000 return pcall(string.match, string.rep('a', n), string.rep('a?', n))",
        )
        .eval::<(bool, String)>()
        .unwrap()
    };
    let r = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r, (false, "pattern too complex".to_string()));
    // Moderate depths still work.
    let lua = vm(true);
    let n: i64 = lua
        .load("local n = 2000 return #string.match(string.rep('a', n), string.rep('a?', n))")
        .eval()
        .unwrap();
    assert_eq!(n, 2000);
}
