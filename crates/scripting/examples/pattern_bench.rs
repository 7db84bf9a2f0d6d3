//! Side by side: Lua 5.1's C string library (what Redis runs) against tern's Rust pattern
//! functions, on pattern-heavy loops, in one process. Prints ns per call for each and the
//! ratio; the best of several interleaved rounds is kept (the machine may be busy).
//!
//! `cargo run --release -p tern-scripting --example pattern_bench [ROUNDS [FILTER]]`

use std::time::Instant;

const SETUP: &str = r#"
local words = {}
for i = 1, 40 do words[#words + 1] = 'word' .. i end
line = table.concat(words, '  \t ')                       -- ~330 bytes
kv = 'session_user_name=alice_in_wonderland'
csv = string.rep('12345,abcde,', 20) .. 'needle,' .. string.rep('x,', 10)
long_digits = string.rep('abcdefghij', 100) .. '42'
"#;

const WORKLOADS: &[(&str, &str)] = &[
    (
        "gsub %s+ (330 B)",
        "local r = string.gsub(line, '%s+', ' ')",
    ),
    (
        "gsub %w+ -> fn",
        "local r = string.gsub(kv, '%w+', function(w) return w end)",
    ),
    (
        "gsub table repl",
        "local r = string.gsub(kv, '(%w+)=(%w+)', {session_user_name = 'x'})",
    ),
    (
        "match ^(%w+)=(%w+)$",
        "local a, b = string.match(kv, '^([%w_]+)=([%w_]+)$')",
    ),
    (
        "find plain",
        "local a = string.find(csv, 'needle', 1, true)",
    ),
    (
        "find %d+ (1 KB)",
        "local a = string.find(long_digits, '%d+')",
    ),
    (
        "gmatch %a+ (40 words)",
        "for w in string.gmatch(line, '%a+') do end",
    ),
    ("find short", "local a = string.find('hello world', 'o w')"),
    ("rep 'ab' x100", "local r = string.rep('ab', 100)"),
];

fn vm(rust: bool) -> mlua::Lua {
    let lua = mlua::Lua::new();
    if rust {
        tern_scripting::register_libs(&lua).unwrap();
    }
    lua.load(SETUP).exec().unwrap();
    lua
}

fn time_per_call(lua: &mlua::Lua, body: &str, n: u32) -> f64 {
    let f = lua
        .load(format!("local n = ... for i = 1, n do {body} end"))
        .into_function()
        .unwrap();
    let t = Instant::now();
    f.call::<()>(n).unwrap();
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let filter = std::env::args().nth(2).unwrap_or_default();
    println!(
        "{:<24} {:>10} {:>10} {:>7}",
        "workload", "C ns", "Rust ns", "Rust/C"
    );
    let (mut sum_c, mut sum_r) = (0.0, 0.0);
    for (name, body) in WORKLOADS
        .iter()
        .filter(|(n, _)| n.contains(filter.as_str()))
    {
        // Fresh VMs per workload: no garbage from the previous one.
        let (c, rust) = (vm(false), vm(true));
        // Calibrate to ~50 ms per round.
        let probe = time_per_call(&c, body, 1000).max(1.0);
        let n = ((50e6 / probe) as u32).max(100);
        let (mut best_c, mut best_r) = (f64::MAX, f64::MAX);
        for _ in 0..rounds {
            best_c = best_c.min(time_per_call(&c, body, n));
            best_r = best_r.min(time_per_call(&rust, body, n));
        }
        sum_c += best_c.ln();
        sum_r += best_r.ln();
        println!(
            "{:<24} {:>10.0} {:>10.0} {:>7.2}",
            name,
            best_c,
            best_r,
            best_r / best_c
        );
    }
    let k = WORKLOADS.len() as f64;
    println!("geometric mean Rust/C: {:.2}", ((sum_r - sum_c) / k).exp());
}
