//! Lua snippets using the bundled libraries (bit, cjson, cmsgpack, struct), each with the
//! output real Redis gives for it (recorded from `redis-server` EVAL into `cases.txt`).
//!
//! - `recorded_outputs_match`: every snippet run through mlua with `register_libs` gives the
//!   recorded output.
//! - `redis_server_agrees`: when `redis-server` is installed, every snippet is also sent to a
//!   freshly started one with EVAL and must give the recorded output (so the expectations
//!   cannot drift from Redis). Skipped with a message when it is not installed.
//! - With `TERN_LUALIBS_RECORD=1`, `redis_server_agrees` rewrites `cases.txt` with what
//!   redis-server answered instead of comparing (review the diff before committing).
//!
//! `cases.txt` format: `=== name`, the snippet's lines, a line `---`, then one line with the
//! expected output. `prelude.lua` (helpers `R`, `E`, `ser`, `hex`) is prepended to every
//! snippet.

use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PRELUDE: &str = include_str!("prelude.lua");
const CASES_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases.txt");

struct Case {
    name: String,
    body: String,
    expected: String,
}

fn load_cases() -> Vec<Case> {
    let text = std::fs::read_to_string(CASES_PATH).expect("read cases.txt");
    let mut cases = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("=== ") else {
            assert!(line.trim().is_empty(), "stray line in cases.txt: {line}");
            continue;
        };
        let mut body = String::new();
        loop {
            let l = lines
                .next()
                .unwrap_or_else(|| panic!("case {name}: no ---"));
            if l == "---" {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        let expected = lines.next().unwrap_or_default().to_string();
        cases.push(Case {
            name: name.to_string(),
            body,
            expected,
        });
    }
    cases
}

fn save_cases(cases: &[Case]) {
    let mut out = String::new();
    for c in cases {
        out.push_str(&format!(
            "=== {}\n{}---\n{}\n\n",
            c.name, c.body, c.expected
        ));
    }
    std::fs::write(CASES_PATH, out).expect("write cases.txt");
}

fn script(c: &Case) -> String {
    format!("{PRELUDE}{}", c.body)
}

fn run_mlua(lua: &mlua::Lua, c: &Case) -> String {
    match lua
        .load(script(c))
        .set_name("@user_script")
        .eval::<mlua::Value>()
    {
        Ok(mlua::Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        Ok(other) => format!("<non-string result: {other:?}>"),
        Err(e) => format!("<error: {e}>"),
    }
}

fn new_lua() -> mlua::Lua {
    let lua = mlua::Lua::new();
    tern_scripting::register_libs(&lua).expect("register libs");
    lua
}

#[test]
fn recorded_outputs_match() {
    let cases = load_cases();
    assert!(cases.len() >= 60, "expected the full case list");
    let mut failures = Vec::new();
    for c in &cases {
        // A fresh VM per case: some cases change cjson settings, as scripts may.
        let lua = new_lua();
        let got = run_mlua(&lua, c);
        if got != c.expected {
            failures.push(format!(
                "case {}:\n{}  expected: {}\n  got:      {}",
                c.name, c.body, c.expected, got
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

// ---- differential run against redis-server ----

struct Redis {
    child: Child,
    conn: BufReader<TcpStream>,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port no other test of this process was given (tests run in parallel threads).
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let base = 20_000 + (std::process::id() % 500) as u16 * 20;
    loop {
        let p = base + NEXT.fetch_add(1, Ordering::SeqCst) % 2000;
        if std::net::TcpListener::bind(("127.0.0.1", p)).is_ok() {
            return p;
        }
    }
}

fn start_redis() -> Option<Redis> {
    let path = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())?;
    let port = free_port();
    let child = Command::new(path)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let stream = loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            break s;
        }
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    Some(Redis {
        child,
        conn: BufReader::new(stream),
    })
}

impl Redis {
    fn command(&mut self, args: &[&[u8]]) -> String {
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.conn.get_mut().write_all(&req).expect("send");
        self.reply()
    }

    fn reply(&mut self) -> String {
        let mut line = String::new();
        self.conn.read_line(&mut line).expect("read reply");
        let line = line.trim_end();
        let (kind, rest) = line.split_at(1);
        match kind {
            "$" => {
                let n: i64 = rest.parse().expect("bulk length");
                if n < 0 {
                    return "<nil>".into();
                }
                let mut buf = vec![0; n as usize + 2];
                self.conn.read_exact(&mut buf).expect("bulk body");
                buf.truncate(n as usize);
                String::from_utf8_lossy(&buf).into_owned()
            }
            "-" => format!("<error: {rest}>"),
            "+" | ":" => format!("<{kind}{rest}>"),
            "*" => {
                let n: i64 = rest.parse().expect("array length");
                let items: Vec<String> = (0..n.max(0)).map(|_| self.reply()).collect();
                format!("<array: {}>", items.join(", "))
            }
            _ => panic!("unexpected reply line {line}"),
        }
    }
}

#[test]
fn redis_server_agrees() {
    let Some(mut redis) = start_redis() else {
        eprintln!("redis-server not installed: skipping the differential check");
        return;
    };
    let record = std::env::var_os("TERN_LUALIBS_RECORD").is_some();
    let mut cases = load_cases();
    let mut failures = Vec::new();
    for c in cases.iter_mut() {
        // Undo settings earlier cases may have changed on the shared cjson table.
        redis.command(&[b"SCRIPT", b"FLUSH"]);
        let got = redis.command(&[b"EVAL", script(c).as_bytes(), b"0"]);
        if record {
            c.expected = got;
        } else if got != c.expected {
            failures.push(format!(
                "case {}: redis-server says {}, recorded {}",
                c.name, got, c.expected
            ));
        }
    }
    if record {
        save_cases(&cases);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---- randomised differential run ----

/// A Lua string literal holding `bytes`.
fn lua_bytes(bytes: &[u8]) -> String {
    let mut s = String::from("\"");
    for b in bytes {
        s.push_str(&format!("\\{b}"));
    }
    s.push('"');
    s
}

/// One of `items`, uniformly.
fn pick<'a>(r: &mut SmallRng, items: &[&'a str]) -> &'a str {
    items[r.gen_range(0..items.len())]
}

fn random_json(r: &mut SmallRng) -> Vec<u8> {
    const PIECES: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "\"a\"",
        "\"k\":",
        "1",
        "-",
        "0",
        "12.5",
        "e5",
        "E-3",
        "true",
        "false",
        "null",
        "nul",
        " ",
        "\n",
        "\\",
        "\\u00e9",
        "\\ud83d\\ude00",
        "\\ud800",
        "\\n",
        "\\/",
        "0x1f",
        "inf",
        "nan",
        "+1",
        ".",
        "x",
        "\"\\u",
        "[1,2]",
        "{\"a\":[]}",
        "1e400",
        "\u{e9}",
        "\t",
    ];
    let n = 1 + r.gen_range(0..10);
    let mut out = Vec::new();
    for _ in 0..n {
        out.extend_from_slice(pick(r, PIECES).as_bytes());
    }
    if r.gen_range(0..20) == 0 {
        out.insert(r.gen_range(0..out.len() + 1), 0);
    }
    out
}

fn random_msgpack(r: &mut SmallRng) -> Vec<u8> {
    const TAGS: &[u8] = &[
        0x00, 0x7f, 0x80, 0x81, 0x82, 0x8f, 0x90, 0x91, 0x92, 0x9f, 0xa0, 0xa1, 0xa3, 0xbf, 0xc0,
        0xc1, 0xc2, 0xc3, 0xc4, 0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4,
        0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff,
    ];
    let n = 1 + r.gen_range(0..14);
    (0..n)
        .map(|_| {
            if r.gen_range(0..3) == 0 {
                r.gen::<u64>() as u8
            } else if r.gen_range(0..2) == 0 {
                r.gen_range(0..4) as u8
            } else {
                TAGS[r.gen_range(0..TAGS.len())]
            }
        })
        .collect()
}

fn random_format(r: &mut SmallRng) -> String {
    const OPTS: &[&str] = &[
        "b", "B", "h", "H", "l", "L", "T", "i", "I", "i3", "I5", "i12", "f", "d", "c", "c2", "c0",
        "s", "x", " ", ">", "<", "!", "!2", "!4", "!3", "z", "i40",
    ];
    let n = 1 + r.gen_range(0..5);
    (0..n).map(|_| pick(r, OPTS)).collect()
}

fn random_number(r: &mut SmallRng) -> String {
    const NUMS: &[&str] = &[
        "0",
        "1",
        "-1",
        "0.5",
        "1.5",
        "2.5",
        "-2.5",
        "2^31",
        "2^32",
        "-2^31",
        "2^52",
        "2^53+1",
        "2^63",
        "2^64",
        "-2^63",
        "1e20",
        "-1e300",
        "0/0",
        "1/0",
        "-1/0",
        "255",
        "65536",
        "4294967295",
        "-129",
        "0.1",
        "3.4e38",
        "1e-310",
        "123456.789",
    ];
    if r.gen_range(0..3) == 0 {
        format!("{}", (r.gen::<u64>() as i64) >> r.gen_range(0..64))
    } else {
        pick(r, NUMS).to_string()
    }
}

fn random_value(r: &mut SmallRng, depth: usize) -> String {
    match r.gen_range(0..if depth > 2 { 6 } else { 9 }) {
        0 | 1 => random_number(r),
        2 => pick(
            r,
            &[
                "'s'",
                "'a/b'",
                "'\\0\\1'",
                "''",
                "string.rep('x', 40)",
                "'\\255'",
            ],
        )
        .into(),
        3 => pick(r, &["true", "false", "cjson.null"]).into(),
        4 => "nil".into(),
        5 => pick(r, &["{}", "{1}", "{{}}"]).into(),
        _ => {
            let n = r.gen_range(0..6);
            let mut parts = Vec::new();
            for _ in 0..n {
                let v = random_value(r, depth + 1);
                match r.gen_range(0..4) {
                    0 => parts.push(v),
                    1 => parts.push(format!("[{}] = {v}", 1 + r.gen_range(0..30))),
                    2 => parts.push(format!("k{} = {v}", r.gen_range(0..5))),
                    _ => parts.push(format!("[{}] = {v}", random_number(r))),
                }
            }
            format!("{{{}}}", parts.join(", "))
        }
    }
}

fn random_snippet(r: &mut SmallRng) -> String {
    match r.gen_range(0..8) {
        0 => format!("return E(cjson.decode, {})", lua_bytes(&random_json(r))),
        1 => format!(
            "local ok, t = pcall(function() return {} end) if not ok then return 'bad' end local ok2, s = pcall(cjson.encode, t) if not ok2 then return R(ok2, s) end return s .. ' ' .. E(cjson.decode, s)",
            random_value(r, 0)
        ),
        2 => {
            let data = lua_bytes(&random_msgpack(r));
            match r.gen_range(0..3) {
                0 => format!("return E(cmsgpack.unpack, {data})"),
                1 => format!("return E(cmsgpack.unpack_one, {data}, {})", r.gen_range(0..5)),
                _ => format!(
                    "return E(cmsgpack.unpack_limit, {data}, {}, {})",
                    r.gen_range(0..3),
                    r.gen_range(0..4)
                ),
            }
        }
        3 => format!(
            "local ok, t = pcall(function() return {} end) if not ok then return 'bad' end local ok2, p = pcall(cmsgpack.pack, t) if not ok2 then return R(ok2, p) end return hex(p) .. ' ' .. E(cmsgpack.unpack, p)",
            random_value(r, 0)
        ),
        4 => {
            let data: Vec<u8> = (0..r.gen_range(0..24)).map(|_| r.gen::<u64>() as u8).collect();
            format!(
                "return E(struct.unpack, '{}', {}, {})",
                random_format(r),
                lua_bytes(&data),
                1 + r.gen_range(0..3)
            )
        }
        5 => {
            let args: Vec<String> = (0..r.gen_range(0..5))
                .map(|_| {
                    if r.gen_range(0..3) == 0 {
                        pick(r, &["'abc'", "'x'", "''", "'12'"]).to_string()
                    } else {
                        random_number(r)
                    }
                })
                .collect();
            let mut call = format!("'{}'", random_format(r));
            for a in args {
                call.push_str(", ");
                call.push_str(&a);
            }
            format!("local ok, p = pcall(struct.pack, {call}) if not ok then return R(ok, p) end return hex(p)")
        }
        6 => format!("return E(struct.size, '{}')", random_format(r)),
        _ => {
            let f = pick(r, &[
                "tobit", "bnot", "band", "bor", "bxor", "lshift", "rshift", "arshift", "rol",
                "ror", "bswap", "tohex",
            ]);
            let args: Vec<String> = (0..1 + r.gen_range(0..3)).map(|_| random_number(r)).collect();
            format!("return E(bit.{f}, {})", args.join(", "))
        }
    }
}

#[test]
fn redis_server_agrees_on_random_snippets() {
    let Some(mut redis) = start_redis() else {
        eprintln!("redis-server not installed: skipping the randomised differential check");
        return;
    };
    let seed: u64 = std::env::var("TERN_LUALIBS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_abcd);
    let count: usize = std::env::var("TERN_LUALIBS_FUZZ")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let show = std::env::var_os("TERN_LUALIBS_SHOW").is_some();
    let mut r = SmallRng::seed_from_u64(seed);
    let mut failures = Vec::new();
    for i in 0..count {
        let body = random_snippet(&mut r);
        let c = Case {
            name: format!("random #{i}"),
            body,
            expected: String::new(),
        };
        let want = redis.command(&[b"EVAL", script(&c).as_bytes(), b"0"]);
        let got = run_mlua(&new_lua(), &c);
        if show {
            eprintln!("{}\n  => {}", c.body, got);
        }
        if got != want {
            failures.push(format!(
                "{}: {}\n  redis: {}\n  tern:  {}",
                c.name, c.body, want, got
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} random snippets differ (seed {seed}):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
