//! FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/STATS/KILL and FCALL/FCALL_RO against the
//! real binary: library header errors, register_function forms and flags, RESP shapes, the
//! library set seen from every thread, FUNCTION KILL from another connection, and a DUMP
//! payload made by redis-server restored into tern.
use crate::common::{fresh_dir, Server};
use std::time::{Duration, Instant};
type Raw = crate::common::Raw<false>;

const LIB: &str = "#!lua name=mylib
redis.register_function('setit', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function{function_name='getit', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads a key'}";

fn load(c: &mut Raw, code: &str) -> String {
    c.qa(&[b"FUNCTION", b"LOAD", code.as_bytes()])
}

#[test]
fn load_call_list_delete() {
    let s = Server::tern(&["--threads", "2"]);
    let mut c = Raw::new(s.port);
    assert_eq!(c.q("PING"), "PONG");
    let mut d = Raw::new(s.port);
    assert_eq!(load(&mut c, LIB), "mylib");
    // FCALL on the other thread, names case-insensitive
    assert_eq!(d.q("FCALL setit 1 k v"), "OK");
    assert_eq!(d.q("FCALL GETIT 1 k"), "v");
    assert_eq!(d.q("FCALL_RO getit 1 k"), "v");
    assert_eq!(
        d.q("FCALL_RO setit 1 k v"),
        "!ERR Can not execute a script with write flag using *_ro command."
    );
    assert_eq!(d.q("FCALL nosuch 0"), "!ERR Function not found");
    assert_eq!(d.q("FCALL setit x"), "!ERR Bad number of keys provided");
    assert_eq!(
        d.q("FCALL setit 3 a"),
        "!ERR Number of keys can't be greater than number of args"
    );
    assert_eq!(
        d.q("FCALL setit -1"),
        "!ERR Number of keys can't be negative"
    );
    assert_eq!(load(&mut c, LIB), "!ERR Library 'mylib' already exists");
    assert_eq!(
        c.qa(&[b"FUNCTION", b"LOAD", b"REPLACE", LIB.as_bytes()]),
        "mylib"
    );
    assert_eq!(
        c.q("FUNCTION LIST"),
        "[[library_name,mylib,engine,LUA,functions,[[name,setit,description,(nil),flags,[]],[name,getit,description,reads a key,flags,[no-writes]]]]]"
    );
    let mut c3 = Raw::resp3(s.port);
    assert_eq!(
        c3.q("FUNCTION LIST LIBRARYNAME my*"),
        "[{library_name:mylib,engine:LUA,functions:[{name:setit,description:(nil),flags:[]},{name:getit,description:reads a key,flags:[no-writes]}]}]"
    );
    assert_eq!(c.q("FUNCTION LIST LIBRARYNAME zz*"), "[]");
    let with_code = c.q("FUNCTION LIST WITHCODE");
    assert!(
        with_code.contains("library_code,#!lua name=mylib"),
        "{with_code}"
    );
    assert_eq!(
        c.q("FUNCTION LIST LIBRARYNAME"),
        "!ERR library name argument was not given"
    );
    assert_eq!(c.q("FUNCTION LIST foo"), "!ERR Unknown argument foo");
    assert_eq!(
        c.q("FUNCTION STATS"),
        "[running_script,(nil),engines,[LUA,[libraries_count,:1,functions_count,:2]]]"
    );
    // a function name used by another library
    assert_eq!(
        load(
            &mut c,
            "#!lua name=other\nredis.register_function('setit', function() return 1 end)"
        ),
        "!ERR Function setit already exists"
    );
    assert_eq!(c.q("FUNCTION DELETE nosuch"), "!ERR Library not found");
    assert_eq!(c.q("FUNCTION DELETE mylib"), "OK");
    assert_eq!(d.q("FCALL setit 1 k v"), "!ERR Function not found");
    let info = c.q("INFO memory");
    assert!(info.contains("number_of_libraries:0"), "{info}");
}

#[test]
fn load_errors() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    for (code, want) in [
        ("return 1", "ERR Missing library metadata"),
        ("#!lua name=x", "ERR Invalid library metadata"),
        ("#!lua\nreturn 1", "ERR Library name was not given"),
        ("#!lua name=a foo=b\n", "ERR Invalid metadata value given: foo=b"),
        (
            "#!lua name=a name=b\n",
            "ERR Invalid metadata value, name argument was given multiple times",
        ),
        ("#!lua name=a-b\n", "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
        ("#!py name=a\n", "ERR Engine 'py' not found"),
        ("#!lua name=a\nlocal x = 1", "ERR No functions registered"),
        (
            "#!lua name=a\nredis.call('ping')",
            "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'",
        ),
        (
            "#!lua name=a\nredis.register_function('f', 1)",
            "ERR Error registering functions: ERR second argument to redis.register_function must be a function",
        ),
        (
            "#!lua name=a\nredis.register_function{function_name='f', callback=function() end, flags={'bad'}}",
            "ERR Error registering functions: ERR unknown flag given",
        ),
        (
            "#!lua name=a\nredis.register_function('f', function() end)\nredis.register_function('f', function() end)",
            "ERR Error registering functions: ERR Function already exists in the library",
        ),
        (
            "#!lua name=a\nwhile true do end",
            "ERR Error registering functions: ERR FUNCTION LOAD timeout",
        ),
    ] {
        assert_eq!(load(&mut c, code), format!("!{want}"), "{code}");
    }
    let r = load(&mut c, "#!lua name=a\nreturn 'x");
    assert!(
        r.starts_with("!ERR Error compiling function: user_function:2:"),
        "{r}"
    );
    assert_eq!(c.q("FUNCTION LOAD FOO x"), "!ERR Unknown option given: FOO");
    // REPLACE alone is taken as the code, as in Redis
    assert_eq!(
        c.q("FUNCTION LOAD REPLACE"),
        "!ERR Missing library metadata"
    );
    assert_eq!(
        c.q("FUNCTION FLUSH bad"),
        "!ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
    );
    assert_eq!(
        c.q("FUNCTION RESTORE x BAD"),
        "!ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
    );
    assert_eq!(
        c.q("FUNCTION RESTORE garbage"),
        "!ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(
        c.q("FUNCTION KILL"),
        "!NOTBUSY No scripts in execution right now."
    );
    // a runtime error names the function and its line
    load(
        &mut c,
        "#!lua name=e\nredis.register_function('boom', function()\n  error('bad')\nend)",
    );
    assert_eq!(
        c.q("FCALL boom 0"),
        "!ERR user_function:3: bad script: boom, on @user_function:3."
    );
    // functions get KEYS and ARGV as arguments, not globals
    load(
        &mut c,
        "#!lua name=k\nredis.register_function('kv', function(keys, args) return {keys[1], args[1], #args} end)",
    );
    assert_eq!(c.q("FCALL kv 1 a b c"), "[a,b,:2]");
}

#[test]
fn dump_restore() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    load(&mut c, LIB);
    c.send(&[b"FUNCTION", b"DUMP"]);
    let raw = c.read_raw();
    // $len\r\n payload \r\n
    let start = raw.iter().position(|&b| b == b'\n').unwrap() + 1;
    let payload = raw[start..raw.len() - 2].to_vec();
    assert_eq!(payload[0], 245);
    assert_eq!(
        c.qa(&[b"FUNCTION", b"RESTORE", &payload]),
        "!ERR Library mylib already exists"
    );
    assert_eq!(c.qa(&[b"FUNCTION", b"RESTORE", &payload, b"REPLACE"]), "OK");
    assert_eq!(c.q("FUNCTION FLUSH"), "OK");
    assert_eq!(c.q("FUNCTION LIST"), "[]");
    assert_eq!(c.qa(&[b"FUNCTION", b"RESTORE", &payload]), "OK");
    assert_eq!(c.q("FCALL setit 1 k v"), "OK");
    let mut bad = payload.clone();
    let n = bad.len();
    bad[n - 1] ^= 1;
    assert_eq!(
        c.qa(&[b"FUNCTION", b"RESTORE", &bad]),
        "!ERR DUMP payload version or checksum are wrong"
    );

    // redis-server's payload (LZF-compressed, its CRC64) restores in tern
    if let Some(r) = Server::redis(&[]) {
        let mut rc = Raw::new(r.port);
        assert_eq!(load(&mut rc, LIB), "mylib");
        rc.send(&[b"FUNCTION", b"DUMP"]);
        let raw = rc.read_raw();
        let start = raw.iter().position(|&b| b == b'\n').unwrap() + 1;
        let theirs = raw[start..raw.len() - 2].to_vec();
        assert_eq!(c.qa(&[b"FUNCTION", b"RESTORE", &theirs, b"FLUSH"]), "OK");
        assert_eq!(c.q("FCALL getit 1 k"), "v");
        // (the other way needs 7.2: Debian's 7.0 refuses RDB version 11)
    }
}

#[test]
fn function_kill_from_another_connection() {
    let s = Server::tern(&["--threads", "2", "--busy-reply-threshold", "50"]);
    let mut a = Raw::new(s.port);
    assert_eq!(a.q("PING"), "PONG");
    let mut b = Raw::new(s.port);
    assert_eq!(b.q("PING"), "PONG");
    load(
        &mut b,
        "#!lua name=spin\nredis.register_function('spin', function() local a = 1 while true do a = a + 1 end end)",
    );
    a.send(&[b"FCALL", b"spin", b"0"]);
    let t0 = Instant::now();
    loop {
        let r = b.q("PING");
        if r.starts_with("!BUSY") {
            assert_eq!(r, "!BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(20));
    }
    let stats = b.q("FUNCTION STATS");
    assert!(
        stats.starts_with("[running_script,[name,spin,command,[FCALL,spin,0],duration_ms,"),
        "{stats}"
    );
    assert_eq!(
        b.q("SCRIPT KILL"),
        "!BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    );
    assert_eq!(b.q("FUNCTION KILL"), "OK");
    let r = a.read();
    assert_eq!(
        r,
        "!ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2."
    );
    assert_eq!(b.q("PING"), "PONG");
}

#[test]
fn help_and_metadata() {
    let s = Server::tern(&[]);
    let mut c = Raw::new(s.port);
    let h = c.q("FUNCTION HELP");
    assert!(h.starts_with("[FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:,LOAD [REPLACE] <FUNCTION CODE>"), "{h}");
    let r = c.q("COMMAND INFO fcall fcall_ro");
    assert!(
        r.contains("[fcall,:-3,[noscript,stale,skip_monitor,no_mandatory_keys,movablekeys]"),
        "{r}"
    );
    assert!(
        r.contains(
            "[fcall_ro,:-3,[readonly,noscript,stale,skip_monitor,no_mandatory_keys,movablekeys]"
        ),
        "{r}"
    );
    assert_eq!(
        c.q("FUNCTION NOSUCH"),
        "!ERR unknown subcommand 'NOSUCH'. Try FUNCTION HELP."
    );
}

/// A long function runs on a script thread: while it spins holding its key's shard, clients
/// on every worker thread using another database are served, and a client that needs the
/// script's shard waits for it (as in Redis) without stalling its worker, then gets its reply.
#[test]
fn long_function_stalls_no_other_database() {
    let s = Server::tern(&["--threads", "2"]);
    let mut admin = Raw::new(s.port);
    load(
        &mut admin,
        "#!lua name=spin\nredis.register_function{function_name='spin', callback=function(keys) redis.call('get', keys[1]) local a = 1 while true do a = a + 1 end end, flags={'no-writes'}}",
    );
    assert_eq!(admin.q("SET hot before"), "OK");
    // Connections are spread over both workers: some share the script's worker.
    let mut others: Vec<Raw> = (0..8).map(|_| Raw::new(s.port)).collect();
    for o in others.iter_mut() {
        assert_eq!(o.q("SELECT 1"), "OK");
    }
    let mut waiter = Raw::new(s.port);
    assert_eq!(waiter.q("PING"), "PONG");
    let mut spinner = Raw::new(s.port);
    spinner.send(&[b"FCALL", b"spin", b"1", b"hot"]);
    let t0 = Instant::now();
    while !admin
        .q("FUNCTION STATS")
        .contains("running_script,[name,spin")
    {
        assert!(t0.elapsed() < Duration::from_secs(5), "spin never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Needs the script's shard: waits, off its worker.
    waiter.send(&[b"GET", b"hot"]);
    for (i, o) in others.iter_mut().enumerate() {
        let k = format!("k{i}");
        assert_eq!(o.q(&format!("SET {k} v{i}")), "OK");
        assert_eq!(o.q(&format!("GET {k}")), format!("v{i}"));
    }
    // The script was still running all along: only now is it killed.
    assert!(admin
        .q("FUNCTION STATS")
        .contains("running_script,[name,spin"));
    assert_eq!(admin.q("FUNCTION KILL"), "OK");
    assert!(spinner.read().starts_with("!ERR Script killed by user"));
    assert_eq!(waiter.read(), "before");
}

#[test]
fn debug_reload_flushes_and_merges_libraries_as_redis() {
    let dir = fresh_dir("functions-reload");
    let s = Server::tern(&[
        "--dir",
        dir.to_str().unwrap(),
        "--enable-debug-command",
        "yes",
    ]);
    let mut c = Raw::new(s.port);
    let lib = |n: &str| {
        format!("#!lua name={n}\nredis.register_function('{n}', function() return '{n}' end)")
    };
    assert_eq!(load(&mut c, &lib("one")), "one");
    assert_eq!(c.q("DEBUG RELOAD"), "OK");
    assert_eq!(c.q("FCALL one 0"), "one");
    // Without a flush the file's library collides with the loaded one.
    assert_eq!(
        c.q("DEBUG RELOAD NOFLUSH"),
        "!ERR Error trying to load the RDB dump, check server logs."
    );
    assert_eq!(c.q("DEBUG RELOAD NOFLUSH MERGE"), "OK");
    assert_eq!(
        c.q("FUNCTION LIST"),
        "[[library_name,one,engine,LUA,functions,[[name,one,description,(nil),flags,[]]]]]"
    );
    // NOSAVE NOFLUSH MERGE keeps a library loaded since the save next to the file's.
    assert_eq!(load(&mut c, &lib("two")), "two");
    assert_eq!(c.q("DEBUG RELOAD NOSAVE NOFLUSH MERGE"), "OK");
    assert_eq!(c.q("FCALL one 0"), "one");
    assert_eq!(c.q("FCALL two 0"), "two");
    // A plain NOSAVE reload flushes functions with the keys: only the file's remain.
    assert_eq!(c.q("DEBUG RELOAD NOSAVE"), "OK");
    assert_eq!(c.q("FCALL one 0"), "one");
    assert_eq!(c.q("FCALL two 0"), "!ERR Function not found");
    assert_eq!(
        c.q("DEBUG RELOAD FOO"),
        "!ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options."
    );
}
