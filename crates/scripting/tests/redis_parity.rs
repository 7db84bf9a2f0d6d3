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

fn free_port() -> u16 {
    let base = 20_000 + (std::process::id() % 500) as u16 * 20;
    (base..base + 2000)
        .find(|p| std::net::TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port")
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
