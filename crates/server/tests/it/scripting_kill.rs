//! Scripts stuck inside a Lua C function (a backtracking string pattern), where Lua's
//! instruction hook never fires: other clients get -BUSY past busy-reply-threshold, SCRIPT
//! KILL / FUNCTION KILL end the script within a second with Redis's error, a script that wrote
//! is UNKILLABLE, and the server answers PING afterwards. Also Redis 7.2's script clock: TIME
//! is frozen inside a script until the script passes busy-reply-threshold, then moves (a
//! script polling TIME for half a second finishes), while key expiry stays at the script's
//! start.
use crate::common::Server;
use std::time::{Duration, Instant};
type Raw = crate::common::Raw<false>;

/// `string.rep('a*', 12) .. 'b'` against 60 `a`: about 60^12 backtracking steps, all inside
/// one call of a C function.
const STUCK: [&str; 5] = [
    "return string.find(string.rep('a', 60), string.rep('a*', 12) .. 'b')",
    "return string.match(string.rep('a', 60), string.rep('(.-)', 12) .. 'b')",
    "for x in string.gmatch(string.rep('a', 60), string.rep('a-', 12) .. 'b') do end",
    "return string.gsub(string.rep('a', 60), string.rep('a?a*', 12) .. 'b', function() end)",
    // Catching the kill error does not save the script.
    "local ok, e = pcall(string.find, string.rep('a', 60), string.rep('a*', 12) .. 'b') \
     while true do end",
];

const SCRIPT_BUSY: &str =
    "!BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const FUNCTION_BUSY: &str =
    "!BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const KILLED: &str = "!ERR Script killed by user with SCRIPT KILL...";

/// Wait until `c` gets `busy` for PING (the script is past the threshold).
fn wait_busy(c: &mut Raw, busy: &str) {
    let t0 = Instant::now();
    loop {
        let r = c.q("PING");
        if r == busy {
            return;
        }
        assert_eq!(r, "PONG", "unexpected reply while waiting for BUSY");
        assert!(t0.elapsed() < Duration::from_secs(10), "never BUSY");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kill with `kill` (SCRIPT KILL / FUNCTION KILL) from `other` and check that `caller` gets
/// the kill error within a second and that both connections work afterwards.
fn kill_and_check(caller: &mut Raw, other: &mut Raw, kill: &str, what: &str) {
    assert_eq!(other.q(kill), "OK", "{what}");
    let t0 = Instant::now();
    let reply = caller.read();
    let took = t0.elapsed();
    assert!(reply.starts_with(KILLED), "{what}: {reply}");
    assert!(
        took < Duration::from_secs(1),
        "{what}: killed after {took:?}"
    );
    assert_eq!(other.q("PING"), "PONG");
    assert_eq!(caller.q("PING"), "PONG");
}

#[test]
fn script_kill_stops_a_backtracking_pattern() {
    let s = Server::tern(&["--threads", "2", "--busy-reply-threshold", "100"]);
    let mut a = Raw::new(s.port);
    let mut b = Raw::new(s.port);
    for script in STUCK {
        a.send(&[b"EVAL", script.as_bytes(), b"0"]);
        wait_busy(&mut b, SCRIPT_BUSY);
        // Other commands than PING are refused as well; FUNCTION KILL names the other kind.
        assert_eq!(b.q("GET x"), SCRIPT_BUSY);
        assert_eq!(b.q("FUNCTION KILL"), SCRIPT_BUSY);
        kill_and_check(&mut a, &mut b, "SCRIPT KILL", script);
    }
    assert_eq!(
        b.q("SCRIPT KILL"),
        "!NOTBUSY No scripts in execution right now."
    );
    let log = s.log();
    assert!(log.contains("Slow script detected"), "{log}");
    assert!(
        log.contains("Lua script killed by user with SCRIPT KILL."),
        "{log}"
    );
}

#[test]
fn function_kill_stops_a_backtracking_pattern() {
    let s = Server::tern(&["--busy-reply-threshold", "100"]);
    let mut a = Raw::new(s.port);
    let mut b = Raw::new(s.port);
    let lib = "#!lua name=stuck\n\
        redis.register_function{function_name='stuck', flags={'no-writes'}, callback=function() \
          return string.find(string.rep('a', 60), string.rep('a*', 12) .. 'b') end}\n\
        redis.register_function('stuck_gsub', function() \
          return string.gsub(string.rep('a', 60), string.rep('a-', 12) .. 'b', '') end)";
    assert_eq!(a.qa(&[b"FUNCTION", b"LOAD", lib.as_bytes()]), "stuck");
    for f in ["stuck", "stuck_gsub"] {
        a.send(&[b"FCALL", f.as_bytes(), b"0"]);
        wait_busy(&mut b, FUNCTION_BUSY);
        assert_eq!(b.q("SCRIPT KILL"), FUNCTION_BUSY);
        let stats = b.q("FUNCTION STATS");
        assert!(stats.contains(&format!("name,{f}")), "{stats}");
        kill_and_check(&mut a, &mut b, "FUNCTION KILL", f);
    }
}

#[test]
fn a_script_that_wrote_is_unkillable() {
    let s = Server::tern(&["--busy-reply-threshold", "100"]);
    let mut a = Raw::new(s.port);
    let mut b = Raw::new(s.port);
    a.send(&[
        b"EVAL",
        b"redis.call('set', KEYS[1], 'v') return string.find(string.rep('a', 60), string.rep('a*', 12) .. 'b')",
        b"1",
        b"k",
    ]);
    wait_busy(&mut b, SCRIPT_BUSY);
    let r = b.q("SCRIPT KILL");
    assert!(
        r.starts_with("!UNKILLABLE Sorry the script already executed write commands"),
        "{r}"
    );
    // Only SHUTDOWN NOSAVE ends it, as in Redis.
    b.send_cmd("SHUTDOWN NOSAVE");
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", s.port)).is_ok() {
        assert!(t0.elapsed() < Duration::from_secs(10), "server still up");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls TIME until it has moved by half a second; returns how far it moved.
const POLL_TIME: &str = "local function now() local t = redis.call('TIME') \
    return t[1] + 0.000001 * t[2] end \
    local s = now() while now() < s + 0.5 do end return tostring(now() - s)";

fn moved(reply: &str) -> f64 {
    reply
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {reply}"))
}

#[test]
fn time_moves_once_past_the_busy_threshold() {
    // Default threshold (5 s): TIME is frozen until then, so the script ends after ~5 s (it
    // never ended before Redis 7.2's clock was followed).
    let s = Server::tern(&[]);
    let mut a = s.conn();
    a.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let t0 = Instant::now();
    let r: String = redis::cmd("EVAL")
        .arg(POLL_TIME)
        .arg(0)
        .query(&mut a)
        .unwrap();
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(
        took >= Duration::from_secs(4),
        "took {took:?}: TIME was not frozen"
    );
    assert!(moved(&r) >= 0.5, "{r}");
}

#[test]
fn time_moves_in_functions_too() {
    let s = Server::tern(&["--busy-reply-threshold", "200"]);
    let mut a = Raw::new(s.port);
    let lib = format!(
        "#!lua name=clock\nredis.register_function('poll_time', function() {POLL_TIME} end)"
    );
    assert_eq!(a.qa(&[b"FUNCTION", b"LOAD", lib.as_bytes()]), "clock");
    let t0 = Instant::now();
    let r = a.q("FCALL poll_time 0");
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert!(moved(&r) >= 0.5, "{r}");
}

#[test]
fn time_is_frozen_below_the_threshold_and_expiry_stays_frozen() {
    let s = Server::tern(&["--busy-reply-threshold", "10000"]);
    let mut a = Raw::new(s.port);
    // Below the threshold: TIME calls before and after a busy loop give the same answer.
    let r = a.qa(&[
        b"EVAL",
        b"local a = redis.call('TIME') local t = redis.call('TIME') \
          local x = 0 for i = 1, 3000000 do x = x + i end \
          local b = redis.call('TIME') return {a[1] == b[1] and a[2] == b[2] and 1 or 0, a[1] == t[1] and 1 or 0}",
        b"0",
    ]);
    assert_eq!(r, "[:1,:1]");
    assert_eq!(a.q("CONFIG SET busy-reply-threshold 100"), "OK");
    // Past the threshold TIME moves, but a key expiring meanwhile is still there inside the
    // script (Redis keeps the command's time for expiry), and gone after it.
    assert_eq!(a.q("SET k v PX 300"), "OK");
    let script = format!(
        "{} local r = {{tostring(now() - s), redis.call('EXISTS', KEYS[1])}} return r",
        POLL_TIME
            .replace("return tostring(now() - s)", "")
            .replace("s + 0.5", "s + 0.6")
    );
    let r = a.qa(&[b"EVAL", script.as_bytes(), b"1", b"k"]);
    assert!(r.ends_with(",:1]"), "{r}");
    assert_eq!(a.q("EXISTS k"), ":0");
}

#[test]
fn function_load_times_out_inside_a_pattern() {
    let s = Server::tern(&[]);
    let mut a = Raw::new(s.port);
    let t0 = Instant::now();
    let r = a.qa(&[
        b"FUNCTION",
        b"LOAD",
        // The load view has no `string` global; the string methods are there.
        b"#!lua name=slow\nlocal x = ('a'):rep(60):find(('a*'):rep(12) .. 'b')",
    ]);
    assert_eq!(
        r,
        "!ERR Error registering functions: ERR FUNCTION LOAD timeout"
    );
    // The load limit is 500 ms.
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(a.q("FUNCTION LIST"), "[]");
}

#[test]
fn deep_pattern_is_an_error_and_the_server_stays_up() {
    let s = Server::tern(&[]);
    let mut a = Raw::new(s.port);
    let r = a.qa(&[
        b"EVAL",
        b"local n = 1000000 return string.match(string.rep('a', n), string.rep('a?', n))",
        b"0",
    ]);
    assert!(
        r.starts_with("!ERR user_script:1: pattern too complex"),
        "{r}"
    );
    assert_eq!(a.q("PING"), "PONG");
}
