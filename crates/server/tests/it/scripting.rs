//! EVAL / EVALSHA / EVAL_RO / SCRIPT against the real binary: Lua <-> RESP2/RESP3 conversions,
//! Redis's error texts, the sandbox, the script cache shared by every thread, SCRIPT KILL from
//! another connection, and two scripts progressing at once on two worker threads.
use crate::common::Server;
type Raw = crate::common::Raw<false>;
use std::time::{Duration, Instant};

fn eval(c: &mut Raw, script: &str, keys: &[&str], args: &[&str]) -> String {
    let nk = keys.len().to_string();
    let mut a: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), nk.as_bytes()];
    a.extend(keys.iter().map(|k| k.as_bytes()));
    a.extend(args.iter().map(|k| k.as_bytes()));
    c.qa(&a)
}

fn eval_raw(c: &mut Raw, script: &str) -> Vec<u8> {
    c.send(&[b"EVAL", script.as_bytes(), b"0"]);
    c.read_raw()
}

#[test]
fn lua_to_resp2() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    assert_eq!(eval_raw(&mut c, "return 100.5"), b":100\r\n");
    assert_eq!(eval_raw(&mut c, "return -3.9"), b":-3\r\n");
    assert_eq!(eval_raw(&mut c, "return 'hi'"), b"$2\r\nhi\r\n");
    assert_eq!(eval_raw(&mut c, "return true"), b":1\r\n");
    assert_eq!(eval_raw(&mut c, "return false"), b"$-1\r\n");
    assert_eq!(eval_raw(&mut c, "return nil"), b"$-1\r\n");
    assert_eq!(eval_raw(&mut c, "return {ok='fine'}"), b"+fine\r\n");
    assert_eq!(
        eval_raw(&mut c, "return {err='My Error'}"),
        b"-My Error\r\n"
    );
    assert_eq!(
        eval_raw(&mut c, "return redis.error_reply('MY err')"),
        b"-MY err\r\n"
    );
    assert_eq!(
        eval_raw(&mut c, "return redis.status_reply('OK')"),
        b"+OK\r\n"
    );
    // arrays stop at the first nil
    assert_eq!(
        eval_raw(&mut c, "return {1,2,3,'ciao',{1,2},nil,7}"),
        b"*5\r\n:1\r\n:2\r\n:3\r\n$4\r\nciao\r\n*2\r\n:1\r\n:2\r\n"
    );
    assert_eq!(eval_raw(&mut c, "return {double=3.5}"), b"$3\r\n3.5\r\n");
    assert_eq!(
        eval_raw(&mut c, "return {big_number='123'}"),
        b"$3\r\n123\r\n"
    );
    assert_eq!(
        eval_raw(&mut c, "return {map={a=1}}"),
        b"*2\r\n$1\r\na\r\n:1\r\n"
    );
    // a table that contains itself ends in an error element, not a crash
    let mut r = Raw::new(s.port);
    r.send(&[
        b"EVAL",
        b"local a = {}; local b = {a}; a[1] = b; return a",
        b"0",
    ]);
    let reply = r.read_raw();
    assert!(reply.ends_with(b"-ERR reached lua stack limit\r\n"));
    assert_eq!(r.q("PING"), "PONG");
}

#[test]
fn redis_to_lua_and_resp3() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    assert_eq!(c.q("SET x 10"), "OK");
    assert_eq!(
        eval(&mut c, "return redis.call('incr', KEYS[1])", &["x"], &[]),
        ":11"
    );
    assert_eq!(
        eval(&mut c, "return type(redis.call('get','nokey'))", &[], &[]),
        "boolean"
    );
    assert_eq!(
        eval(&mut c, "return redis.call('ping').ok", &[], &[]),
        "PONG"
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('incr','h','x').err", &[], &[]),
        "ERR Wrong number of args calling Redis command from script"
    );
    assert_eq!(
        eval(&mut c, "return redis.pcall('lpush','x','a').err", &[], &[]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(
        eval(
            &mut c,
            "redis.call('hset','h','a','1'); redis.setresp(3); return redis.call('hgetall','h')",
            &[],
            &[]
        ),
        "[a,1]"
    );
    // setresp(3) results reach a RESP3 client in RESP3
    let mut c3 = Raw::resp3(s.port);
    assert_eq!(
        eval(
            &mut c3,
            "redis.setresp(3); return redis.call('hgetall','h')",
            &[],
            &[]
        ),
        "{a:1}"
    );
    assert_eq!(eval(&mut c3, "return {double=1.5}", &[], &[]), ",1.5");
    assert_eq!(
        eval(&mut c3, "redis.setresp(3); return true", &[], &[]),
        "#t"
    );
    assert_eq!(eval(&mut c3, "return false", &[], &[]), "(nil)");
    assert_eq!(
        eval(&mut c3, "redis.setresp(3); return false", &[], &[]),
        "#f"
    );
    c3.send(&[b"EVAL", b"return {big_number='12345678901234567890'}", b"0"]);
    assert_eq!(c3.read_raw(), b"(12345678901234567890\r\n");
    c3.send(&[
        b"EVAL",
        b"return {verbatim_string={format='txt', string='hi'}}",
        b"0",
    ]);
    assert_eq!(c3.read_raw(), b"=6\r\ntxt:hi\r\n");
    assert_eq!(
        eval(
            &mut c3,
            "redis.setresp(3); return redis.call('get','nokey') == nil",
            &[],
            &[]
        ),
        "#t"
    );
    // numbers as arguments: integers plainly
    eval(&mut c, "redis.call('set', KEYS[1], 3.0)", &["n"], &[]);
    assert_eq!(c.q("GET n"), "3");
    eval(&mut c, "redis.call('set', KEYS[1], 0.5)", &["n"], &[]);
    assert_eq!(c.q("GET n"), "0.5");
    // SELECT inside a script stays inside it
    eval(
        &mut c,
        "redis.call('select', 9); redis.call('set','indb9','1')",
        &[],
        &[],
    );
    assert_eq!(c.q("EXISTS indb9"), ":0");
    assert_eq!(c.q("SELECT 9"), "OK");
    assert_eq!(c.q("EXISTS indb9"), ":1");
}

#[test]
fn errors_as_redis_words_them() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    assert_eq!(
        c.q("EVAL return 2 1"),
        "!ERR Number of keys can't be greater than number of args"
    );
    assert_eq!(
        c.q("EVAL return -1"),
        "!ERR Number of keys can't be negative"
    );
    assert_eq!(
        c.q("EVAL return x"),
        "!ERR value is not an integer or out of range"
    );
    assert_eq!(
        c.q("EVALSHA ffffffffffffffffffffffffffffffffffffffff 0"),
        "!NOSCRIPT No matching script. Please use EVAL."
    );
    assert_eq!(
        c.q("EVALSHA abc 0"),
        "!NOSCRIPT No matching script. Please use EVAL."
    );
    let sha = "82903a0434f1503e152f89c03c9acd881a0e8150";
    assert_eq!(
        eval(&mut c, "error('boom')", &[], &[]),
        format!("!ERR user_script:1: boom script: {sha}, on @user_script:1.")
    );
    let r = eval(&mut c, "return redis.call('nosuch')", &[], &[]);
    assert!(
        r.starts_with("!ERR Unknown Redis command called from script script: "),
        "{r}"
    );
    assert!(r.ends_with(", on @user_script:1."), "{r}");
    let r = eval(&mut c, "\n\nreturn redis.call('incr','a','b')", &[], &[]);
    assert!(
        r.starts_with("!ERR Wrong number of args calling Redis command from script script: ")
            && r.ends_with("on @user_script:3."),
        "{r}"
    );
    let r = eval(&mut c, "return redis.call('eval','return 1','0')", &[], &[]);
    assert!(
        r.starts_with("!ERR This Redis command is not allowed from script script: "),
        "{r}"
    );
    let r = eval(&mut c, "return redis.call()", &[], &[]);
    assert!(
        r.starts_with("!ERR Please specify at least one argument for this redis lib call"),
        "{r}"
    );
    let r = eval(&mut c, "return redis.call('get', {})", &[], &[]);
    assert!(
        r.starts_with("!ERR Lua redis lib command arguments must be strings or integers"),
        "{r}"
    );
    let r = eval(&mut c, "return 'unterminated", &[], &[]);
    assert!(
        r.starts_with(
            "!ERR Error compiling script (new function): user_script:1: unfinished string"
        ),
        "{r}"
    );
    // the failed compile is not cached
    assert_eq!(
        c.q("SCRIPT EXISTS 6f4bdf1fb3c1b2fb12ebd6e5b9cbc7e1a1b0b1a1"),
        "[:0]"
    );
    // read-only scripts
    let r = c.qa(&[b"EVAL_RO", b"return redis.call('set','k','v')", b"1", b"k"]);
    assert!(
        r.starts_with("!ERR Write commands are not allowed from read-only scripts. script: "),
        "{r}"
    );
    assert_eq!(
        c.qa(&[b"EVAL_RO", b"return redis.call('get','k')", b"1", b"k"]),
        "(nil)"
    );
    let r = eval(
        &mut c,
        "#!lua flags=no-writes\nreturn redis.call('set','k','v')",
        &[],
        &[],
    );
    assert!(
        r.starts_with("!ERR Write commands are not allowed from read-only scripts."),
        "{r}"
    );
    assert_eq!(
        c.qa(&[b"EVAL_RO", b"#!lua\nreturn 1", b"0"]),
        "!ERR Can not execute a script with write flag using *_ro command."
    );
    assert_eq!(
        eval(&mut c, "#!lua flags=bad\nreturn 1", &[], &[]),
        "!ERR Unexpected flag in script shebang: bad"
    );
    assert_eq!(
        eval(&mut c, "#!lua foo=bar\nreturn 1", &[], &[]),
        "!ERR Unknown lua shebang option: foo=bar"
    );
    assert_eq!(
        eval(&mut c, "#!python\nreturn 1", &[], &[]),
        "!ERR Unexpected engine in script shebang: #!python"
    );
    assert_eq!(eval(&mut c, "#!lua\nreturn 1", &[], &[]), ":1");
    // blocking commands never block inside a script
    assert_eq!(
        eval(&mut c, "return redis.pcall('blpop','empty',0)", &[], &[]),
        "(nil)"
    );
    // errors inside are counted, the server goes on
    assert_eq!(c.q("PING"), "PONG");
}

#[test]
fn sandbox() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    for (script, want) in [
        (
            "return a",
            "Script attempted to access nonexistent global variable 'a'",
        ),
        ("a = 10", "Attempt to modify a readonly table"),
        (
            "redis.call = function() return 1 end",
            "Attempt to modify a readonly table",
        ),
        ("string.upper = nil", "Attempt to modify a readonly table"),
        ("setmetatable(_G, {})", "Attempt to modify a readonly table"),
        ("rawset(_G, 'x', 1)", "Attempt to modify a readonly table"),
        (
            "local g = getmetatable(_G); g.__index = {}",
            "Attempt to modify a readonly table",
        ),
        ("_G = {}", "Attempt to modify a readonly table"),
        ("loadfile('x')", "nonexistent global variable 'loadfile'"),
        ("dofile('x')", "nonexistent global variable 'dofile'"),
        ("print('x')", "nonexistent global variable 'print'"),
        ("os.exit()", "nonexistent global variable 'os'"),
        ("io.write('x')", "nonexistent global variable 'io'"),
        (
            "return debug.getinfo(1)",
            "nonexistent global variable 'debug'",
        ),
        (
            "return loadstring(string.dump(function() return 1 end))()",
            "attempt to call a nil value",
        ),
    ] {
        let r = eval(&mut c, script, &[], &[]);
        assert!(r.starts_with("!ERR ") && r.contains(want), "{script}: {r}");
    }
    assert_eq!(
        eval(&mut c, "return loadstring('return 7')()", &[], &[]),
        ":7"
    );
    assert_eq!(eval(&mut c, "return ('abc'):upper()", &[], &[]), "ABC");
    assert_eq!(
        eval(
            &mut c,
            "local ok, e = pcall(function() return nope end) return e",
            &[],
            &[]
        ),
        "user_script:1: Script attempted to access nonexistent global variable 'nope'"
    );
    assert_eq!(
        eval(
            &mut c,
            "local ok, e = pcall(redis.call, 'nosuch') return e",
            &[],
            &[]
        ),
        "ERR Unknown Redis command called from script"
    );
    assert_eq!(
        eval(&mut c, "return redis.REDIS_VERSION", &[], &[]),
        "7.2.6"
    );
    assert_eq!(
        eval(&mut c, "return redis.REDIS_VERSION_NUM", &[], &[]),
        ":459270"
    );
    assert_eq!(
        eval(&mut c, "return redis.sha1hex('')", &[], &[]),
        "da39a3ee5e6b4b0d3255bfef95601890afd80709"
    );
    assert_eq!(
        eval(&mut c, "return redis.replicate_commands()", &[], &[]),
        ":1"
    );
    assert_eq!(
        eval(&mut c, "redis.set_repl(redis.REPL_ALL) return 1", &[], &[]),
        ":1"
    );
    assert_eq!(
        eval(
            &mut c,
            "return {KEYS[1], ARGV[1], #KEYS, #ARGV}",
            &["k"],
            &["a", "b"]
        ),
        "[k,a,:1,:2]"
    );
    // math.random is Redis's rand48: the same sequence after the same seed
    let a = eval(
        &mut c,
        "math.randomseed(42) return tostring(math.random())",
        &[],
        &[],
    );
    let b = eval(
        &mut c,
        "math.randomseed(42) return tostring(math.random())",
        &[],
        &[],
    );
    assert_eq!(a, b);
}

#[test]
fn script_cache_on_every_thread() {
    let s = Server::tern(&["--threads", "2"]);
    let mut a = Raw::new(s.port);
    let mut b = Raw::new(s.port);
    let sha = a.qa(&[b"SCRIPT", b"LOAD", b"return 'hello'"]);
    assert_eq!(sha, "1b936e3fe509bcbc9cd0664897bbe8fd0cac101b");
    assert_eq!(b.q(&format!("EVALSHA {sha} 0")), "hello");
    assert_eq!(b.q(&format!("EVALSHA {} 0", sha.to_uppercase())), "hello");
    assert_eq!(b.q(&format!("SCRIPT EXISTS {sha} abc")), "[:1,:0]");
    // EVAL caches too
    eval(&mut a, "return 2", &[], &[]);
    assert_eq!(
        b.q("SCRIPT EXISTS 7f923f79fe76194c868d7e1d0820de36700eb649"),
        "[:1]"
    );
    assert_eq!(a.q("SCRIPT FLUSH ASYNC"), "OK");
    assert_eq!(
        b.q(&format!("EVALSHA {sha} 0")),
        "!NOSCRIPT No matching script. Please use EVAL."
    );
    assert_eq!(
        a.q("SCRIPT FLUSH bad"),
        "!ERR SCRIPT FLUSH only support SYNC|ASYNC option"
    );
    assert_eq!(
        a.q("SCRIPT KILL"),
        "!NOTBUSY No scripts in execution right now."
    );
    let info = a.q("INFO memory");
    assert!(info.contains("number_of_cached_scripts:0"), "{info}");
}

/// Script A spins on one worker thread; script B, on a connection of the other thread, runs
/// to completion meanwhile; then B's connection kills A.
#[test]
fn scripts_on_two_threads_and_script_kill() {
    let s = Server::tern(&["--threads", "2", "--busy-reply-threshold", "100"]);
    // a PING before the next connect: the two land on different worker threads
    let mut a = Raw::new(s.port);
    assert_eq!(a.q("PING"), "PONG");
    let mut b = Raw::new(s.port);
    assert_eq!(b.q("PING"), "PONG");
    a.send(&[
        b"EVAL",
        b"redis.call('set', KEYS[1], 'started') while true do end",
        b"1",
        b"ka",
    ]);
    // not killable: it wrote
    let t0 = Instant::now();
    loop {
        if b.q("SCRIPT KILL").starts_with("!UNKILLABLE") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(a);
    drop(b);
    drop(s);

    let s = Server::tern(&["--threads", "2", "--busy-reply-threshold", "60000"]);
    let mut a = Raw::new(s.port);
    assert_eq!(a.q("PING"), "PONG");
    let mut b = Raw::new(s.port);
    assert_eq!(b.q("PING"), "PONG");
    a.send(&[
        b"EVAL",
        b"local i = 0 while true do i = i + 1 end",
        b"1",
        b"ka",
    ]);
    std::thread::sleep(Duration::from_millis(100));
    // B progresses while A runs
    assert_eq!(
        eval(&mut b, "return redis.call('incr', KEYS[1])", &["kb"], &[]),
        ":1"
    );
    assert_eq!(
        eval(&mut b, "return redis.call('incr', KEYS[1])", &["kb"], &[]),
        ":2"
    );
    assert_eq!(
        b.q("FUNCTION KILL"),
        "!BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    assert_eq!(b.q("SCRIPT KILL"), "OK");
    let r = a.read();
    assert!(
        r.starts_with("!ERR Script killed by user with SCRIPT KILL... script: ")
            && r.ends_with("on @user_script:1."),
        "{r}"
    );
    assert_eq!(a.q("PING"), "PONG");

    // past busy-reply-threshold other clients get BUSY; pcall cannot swallow the kill
    assert_eq!(b.q("CONFIG SET busy-reply-threshold 50"), "OK");
    a.send(&[
        b"EVAL",
        b"while true do pcall(function() while true do end end) end",
        b"0",
    ]);
    let t0 = Instant::now();
    loop {
        let r = b.q("GET x");
        if r.starts_with("!BUSY") {
            assert_eq!(r, "!BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(b.q("SCRIPT KILL"), "OK");
    assert!(a.read().contains("Script killed by user"));
    assert_eq!(b.q("GET x"), "(nil)");
}

#[test]
fn command_info_metadata() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let r = c.q("COMMAND INFO eval");
    assert!(
        r.starts_with(
            "[[eval,:-3,[noscript,stale,skip_monitor,no_mandatory_keys,movablekeys],:0,:0,:0,[@slow,@scripting]"
        ),
        "{r}"
    );
    assert!(r.contains("RW,access,update"), "{r}");
    assert!(r.contains("keynum"), "{r}");
    let r = c.q("COMMAND INFO eval_ro");
    assert!(r.contains("readonly"), "{r}");
    let r = c.q("COMMAND INFO script");
    for sub in [
        "script|load",
        "script|exists",
        "script|flush",
        "script|kill",
        "script|help",
    ] {
        assert!(r.contains(sub), "{sub}: {r}");
    }
    let r = c.q("SCRIPT HELP");
    assert!(
        r.starts_with("[SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
        "{r}"
    );
}
