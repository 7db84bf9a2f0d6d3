//! CONFIG GET/SET/RESETSTAT/REWRITE, start-up configuration (files, includes, quoting, the
//! command-line convention, FATAL CONFIG FILE ERROR), INFO sections and statistics, TIME and
//! LASTSAVE — against the real binary, and differentially against redis-server when installed.
use crate::common::{err_text, fresh_dir, info_value, Server};
use redis::Value;
use std::collections::HashMap;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn cmd(c: &mut redis::Connection, args: &[&str]) -> redis::RedisResult<Value> {
    crate::common::cmd(args).query(c)
}

/// CONFIG GET as a name -> value map (works for RESP2 arrays and RESP3 maps).
fn config_get(c: &mut redis::Connection, pats: &[&str]) -> HashMap<String, String> {
    let mut q = redis::cmd("CONFIG");
    q.arg("GET");
    for p in pats {
        q.arg(*p);
    }
    q.query(c).unwrap()
}

fn get1(c: &mut redis::Connection, name: &str) -> String {
    config_get(c, &[name])
        .remove(name)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn info(c: &mut redis::Connection, sections: &[&str]) -> String {
    let mut q = redis::cmd("INFO");
    for s in sections {
        q.arg(*s);
    }
    q.query(c).unwrap()
}

/// A tern-server started with a config file as first argument (the harness puts --port first).
struct Proc {
    child: Child,
    port: u16,
}

impl Proc {
    fn start(conf: &Path, extra: &[&str]) -> Proc {
        let port = crate::common::free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_tern-server"))
            .arg(conf)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(extra)
            .current_dir(conf.parent().unwrap())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Proc { child, port }
    }

    fn conn(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run the binary to completion (it must fail at start-up): (exit code, stderr).
fn run_failing(bin: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout),
    )
}

// ------------------------------------------------------------------------------------------------
// CONFIG GET

#[test]
fn config_get_patterns_aliases_and_resp3() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    // Exact names are echoed as typed; aliases work both ways.
    let m = config_get(&mut c, &["MAXMEMORY"]);
    assert_eq!(m.get("MAXMEMORY").map(String::as_str), Some("0"));
    assert_eq!(get1(&mut c, "slave-read-only"), "yes");
    assert_eq!(get1(&mut c, "hash-max-ziplist-entries"), "512");
    assert_eq!(get1(&mut c, "save"), "");
    assert_eq!(get1(&mut c, "bind"), "127.0.0.1");
    assert_eq!(
        get1(&mut c, "client-output-buffer-limit"),
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
    );
    // Several patterns, no duplicates, name and alias both listed.
    let res: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .arg("maxmemory*")
        .arg("bind")
        .arg("*of")
        .query(&mut c)
        .unwrap();
    let keys: Vec<&String> = res.iter().step_by(2).collect();
    let uniq: std::collections::HashSet<&&String> = keys.iter().collect();
    assert_eq!(uniq.len(), keys.len(), "{res:?}");
    for want in [
        "maxmemory",
        "maxmemory-samples",
        "maxmemory-clients",
        "maxmemory-policy",
        "bind",
        "replicaof",
        "slaveof",
    ] {
        assert!(keys.iter().any(|k| *k == want), "{want} missing in {res:?}");
    }
    // Hidden parameters: only by exact name.
    let all = config_get(&mut c, &["*"]);
    assert!(!all.contains_key("key-load-delay"));
    assert!(!all.contains_key("threads"));
    assert!(all.contains_key("appendonly") && all.contains_key("slave-priority"));
    assert_eq!(get1(&mut c, "key-load-delay"), "0");
    assert_eq!(get1(&mut c, "threads"), "0");
    assert!(config_get(&mut c, &["no-such-parameter"]).is_empty());
    // RESP3: a map.
    let mut c3 = s.conn_resp3();
    match cmd(&mut c3, &["CONFIG", "GET", "maxmemory-policy"]).unwrap() {
        Value::Map(kv) => {
            assert_eq!(kv.len(), 1);
            assert_eq!(kv[0].0, Value::BulkString(b"maxmemory-policy".to_vec()));
            assert_eq!(kv[0].1, Value::BulkString(b"noeviction".to_vec()));
        }
        v => panic!("expected a map, got {v:?}"),
    }
}

// ------------------------------------------------------------------------------------------------
// CONFIG SET

#[test]
fn config_set_values_and_canonical_forms() {
    let s = Server::tern(&["--enable-protected-configs", "yes"]);
    let mut c = s.conn();
    let ok = |c: &mut redis::Connection, a: &[&str]| {
        assert_eq!(cmd(c, a).unwrap(), Value::Okay, "{a:?}");
    };
    ok(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "1gb",
            "repl-backlog-size",
            "10000002",
            "save",
            "3000 5 60 100",
        ],
    );
    assert_eq!(get1(&mut c, "maxmemory"), "1073741824");
    assert_eq!(get1(&mut c, "repl-backlog-size"), "10000002");
    assert_eq!(get1(&mut c, "save"), "3000 5 60 100");
    ok(&mut c, &["CONFIG", "SET", "save", ""]);
    assert_eq!(get1(&mut c, "save"), "");
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    assert_eq!(get1(&mut c, "notify-keyspace-events"), "AKE");
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Exg"]);
    assert_eq!(get1(&mut c, "notify-keyspace-events"), "gxE");
    ok(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "replica 1mb 512kb 10 pubsub 0 0 0",
        ],
    );
    assert_eq!(
        get1(&mut c, "client-output-buffer-limit"),
        "normal 0 0 0 slave 1048576 524288 10 pubsub 0 0 0"
    );
    ok(&mut c, &["CONFIG", "SET", "oom-score-adj", "relative"]);
    assert_eq!(get1(&mut c, "oom-score-adj"), "yes");
    ok(
        &mut c,
        &["CONFIG", "SET", "oom-score-adj-values", "0 100 200"],
    );
    assert_eq!(get1(&mut c, "oom-score-adj-values"), "0 100 200");
    ok(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "0.0 50.0 100",
        ],
    );
    assert_eq!(
        get1(&mut c, "latency-tracking-info-percentiles"),
        "0 50 100"
    );
    ok(
        &mut c,
        &["CONFIG", "SET", "shutdown-on-sigterm", "nosave force now"],
    );
    assert_eq!(get1(&mut c, "shutdown-on-sigterm"), "nosave now force");
    ok(&mut c, &["CONFIG", "SET", "hz", "0"]);
    assert_eq!(get1(&mut c, "hz"), "1");
    ok(&mut c, &["CONFIG", "SET", "maxmemory-clients", "10%"]);
    assert_eq!(get1(&mut c, "maxmemory-clients"), "10%");
    ok(&mut c, &["CONFIG", "SET", "slave-read-only", "NO"]);
    assert_eq!(get1(&mut c, "replica-read-only"), "no");
    ok(
        &mut c,
        &["CONFIG", "SET", "MAXMEMORY-POLICY", "AllKeys-LRU"],
    );
    assert_eq!(get1(&mut c, "maxmemory-policy"), "allkeys-lru");
    // dir changes the working directory and reports the absolute path.
    let d = fresh_dir("config_info-dir");
    ok(&mut c, &["CONFIG", "SET", "dir", d.to_str().unwrap()]);
    assert_eq!(
        get1(&mut c, "dir"),
        std::fs::canonicalize(&d).unwrap().display().to_string()
    );
    // Values reach INFO.
    let i = info(&mut c, &["memory"]);
    assert_eq!(info_value(&i, "maxmemory").as_deref(), Some("1073741824"));
    assert_eq!(info_value(&i, "maxmemory_human").as_deref(), Some("1.00G"));
    assert_eq!(
        info_value(&i, "maxmemory_policy").as_deref(),
        Some("allkeys-lru")
    );
}

#[test]
fn config_set_errors_and_rollback() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let e = |c: &mut redis::Connection, a: &[&str]| err_text(cmd(c, a));
    assert_eq!(
        cmd(&mut c, &["CONFIG", "SET", "maxmemory", "10000002"]).unwrap(),
        Value::Okay
    );
    // The first failing pair is named; nothing of the command is kept.
    assert_eq!(
        e(
            &mut c,
            &[
                "CONFIG",
                "SET",
                "maxmemory",
                "10000001",
                "maxmemory-clients",
                "200%",
                "client-query-buffer-limit",
                "invalid"
            ]
        ),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - percentage argument must be less or equal to 100"
    );
    assert_eq!(get1(&mut c, "maxmemory"), "10000002");
    assert_eq!(get1(&mut c, "maxmemory-clients"), "0");
    assert_eq!(get1(&mut c, "client-query-buffer-limit"), "1073741824");
    // Apply failure (port in use) rolls back earlier pairs too.
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    let msg = e(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "5",
            "port",
            &busy_port,
            "timeout",
            "7",
        ],
    );
    assert!(
        msg.starts_with("ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port"),
        "{msg}"
    );
    assert_eq!(get1(&mut c, "maxmemory"), "10000002");
    assert_eq!(get1(&mut c, "timeout"), "0");
    assert_eq!(get1(&mut c, "port"), s.port.to_string());
    assert_eq!(
        e(
            &mut c,
            &["CONFIG", "SET", "maxmemory", "1", "maxmemory", "2"]
        ),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - duplicate parameter"
    );
    assert_eq!(
        e(&mut c, &["CONFIG", "SET", "daemonize", "yes"]),
        "ERR CONFIG SET failed (possibly related to argument 'daemonize') - can't set immutable config"
    );
    assert_eq!(
        e(&mut c, &["CONFIG", "SET", "dir", "/tmp"]),
        "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"
    );
    assert_eq!(
        e(&mut c, &["CONFIG", "SET", "foo", "bar"]),
        "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
    );
    assert_eq!(
        e(&mut c, &["CONFIG", "SET", "maxmemory", "1", "hz"]),
        "ERR syntax error"
    );
    assert_eq!(
        e(&mut c, &["CONFIG", "SET", "maxmemory"]),
        "ERR wrong number of arguments for 'config|set' command"
    );
    let cases: &[(&[&str], &str)] = &[
        (&["hz", "abc"], "'hz') - argument couldn't be parsed into an integer"),
        (&["maxclients", "-1"], "'maxclients') - argument must be between 1 and 4294967295 inclusive"),
        (&["maxmemory", "-1"], "'maxmemory') - argument must be a memory value"),
        (&["appendonly", "maybe"], "'appendonly') - argument must be 'yes' or 'no'"),
        (&["save", "1 2 3"], "'save') - Invalid save parameters"),
        (&["save", "0 1"], "'save') - Invalid save parameters"),
        (&["notify-keyspace-events", "Q"], "'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."),
        (&["loglevel", "loud"], "'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning, nothing"),
        (&["client-output-buffer-limit", "master 1 1 1"], "'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration."),
        (&["client-output-buffer-limit", "normal 1 1"], "'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration."),
        (&["oom-score-adj-values", "1 2 3000"], "'oom-score-adj-values') - Invalid oom-score-adj-values, elements must be between -2000 and 2000."),
        (&["latency-tracking-info-percentiles", "101"], "'latency-tracking-info-percentiles') - latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"),
        (&["shutdown-on-sigint", "save nosave"], "'shutdown-on-sigint') - shutdown options SAVE and NOSAVE can't be used simultaneously"),
        (&["dbfilename", "a/b"], "'dbfilename') - can't set protected config"),
        (&["proto-max-bulk-len", "1000"], "'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive"),
    ];
    for (pair, want) in cases {
        let mut a = vec!["CONFIG", "SET"];
        a.extend_from_slice(pair);
        assert_eq!(
            e(&mut c, &a),
            format!("ERR CONFIG SET failed (possibly related to argument {want}")
        );
    }
    // Errors are counted per code and per command (failed_calls).
    let stats = info(&mut c, &["errorstats", "commandstats"]);
    let n: u64 = info_value(&stats, "errorstat_ERR")
        .unwrap()
        .trim_start_matches("count=")
        .parse()
        .unwrap();
    assert!(n >= 20, "{stats}");
    let cs = info_value(&stats, "cmdstat_config|set").unwrap();
    assert!(cs.ends_with(",failed_calls=22"), "{cs}");
}

#[test]
fn config_set_protected_allowed_when_enabled() {
    let s = Server::tern(&["--enable-protected-configs", "local"]);
    let mut c = s.conn();
    assert_eq!(
        cmd(&mut c, &["CONFIG", "SET", "dbfilename", "x.rdb"]).unwrap(),
        Value::Okay
    );
    assert_eq!(
        err_text(cmd(&mut c, &["CONFIG", "SET", "dbfilename", "a/b"])),
        "ERR CONFIG SET failed (possibly related to argument 'dbfilename') - dbfilename can't be a path, just a filename"
    );
}

// ------------------------------------------------------------------------------------------------
// Start-up: config files, includes, quoting, command line, errors

#[test]
fn startup_from_config_file_with_include_and_quotes() {
    let d = fresh_dir("config_info-startup");
    let inc = d.join("inc.conf");
    std::fs::write(&inc, "maxmemory 2mb\nhash-max-ziplist-entries 21\n").unwrap();
    let conf = d.join("main.conf");
    std::fs::write(
        &conf,
        format!(
            "# a comment\n\n  timeout 42  \nhash-max-listpack-entries 20\ninclude {}\nsave 900 1\nsave 300 10\nrequirepass \"p a\\\"ss\"\nproc-title-template '{{title}} x'\nnotify-keyspace-events \"KEA\"\nclient-output-buffer-limit pubsub 64mb 16mb 90\n",
            inc.display()
        ),
    )
    .unwrap();
    // Command-line options come after the file and win.
    let p = Proc::start(
        &conf,
        &["--timeout", "43", "--maxmemory-policy", "allkeys-lfu"],
    );
    let mut c = p.conn();
    assert_eq!(cmd(&mut c, &["AUTH", "p a\"ss"]).unwrap(), Value::Okay);
    assert_eq!(get1(&mut c, "timeout"), "43");
    assert_eq!(get1(&mut c, "maxmemory"), "2097152");
    assert_eq!(get1(&mut c, "hash-max-listpack-entries"), "21");
    assert_eq!(get1(&mut c, "save"), "900 1 300 10");
    assert_eq!(get1(&mut c, "proc-title-template"), "{title} x");
    assert_eq!(get1(&mut c, "notify-keyspace-events"), "AKE");
    assert_eq!(get1(&mut c, "maxmemory-policy"), "allkeys-lfu");
    assert_eq!(
        get1(&mut c, "client-output-buffer-limit"),
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 67108864 16777216 90"
    );
    let i = info(&mut c, &["server"]);
    assert_eq!(
        info_value(&i, "config_file"),
        Some(std::fs::canonicalize(&conf).unwrap().display().to_string())
    );
}

#[test]
fn startup_errors_name_the_line() {
    let bin = env!("CARGO_BIN_EXE_tern-server");
    let d = fresh_dir("config_info-fatal");
    let conf = d.join("bad.conf");
    std::fs::write(&conf, "port 7\n# comment\nnot-an-option yes\n").unwrap();
    let (code, err) = run_failing(bin, &[conf.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("*** FATAL CONFIG FILE ERROR (Redis 7.2.6) ***\nReading the configuration file, at line 3\n>>> 'not-an-option yes'\nBad directive or wrong number of arguments"),
        "{err}"
    );
    // Command-line options are numbered after the file's lines, values quoted as Redis does.
    let good = d.join("good.conf");
    std::fs::write(&good, "port 7\n# c\n").unwrap();
    let (code, err) = run_failing(bin, &[good.to_str().unwrap(), "--port", "99999"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "at line 4\n>>> 'port \"99999\"'\nargument must be between 0 and 65535 inclusive"
        ),
        "{err}"
    );
    let (code, err) = run_failing(bin, &["--port", "6379", "6380"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("at line 2\n>>> 'port \"6379\" \"6380\"'\nwrong number of arguments"),
        "{err}"
    );
    let (code, err) = run_failing(bin, &["--maxmemory", "1x"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(">>> 'maxmemory \"1x\"'\nargument must be a memory value"),
        "{err}"
    );
    let unbalanced = d.join("quote.conf");
    std::fs::write(&unbalanced, "requirepass \"abc\n").unwrap();
    let (code, err) = run_failing(bin, &[unbalanced.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("at line 1\n>>> 'requirepass \"abc'\nUnbalanced quotes in configuration line"),
        "{err}"
    );
}

#[test]
fn startup_errors_match_redis_server() {
    let Some(redis_bin) = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        return;
    };
    let tern = env!("CARGO_BIN_EXE_tern-server");
    let d = fresh_dir("config_info-fatal-diff");
    let conf = d.join("c.conf");
    std::fs::write(&conf, "port 7\n\nmaxmemory 1x\n").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--foo", "bar"],
        vec!["--port", "6379", "6380"],
        vec!["--port"],
        vec!["--appendonly", "maybe"],
        vec!["--hz", "x"],
        vec![conf.to_str().unwrap()],
    ];
    for args in cases {
        let (tc, te) = run_failing(tern, &args);
        let (rc, re) = run_failing(redis_bin, &args);
        assert_eq!(tc, rc, "{args:?}");
        // Same text but the version banner.
        let strip = |s: &str| {
            s.lines()
                .filter(|l| !l.contains("FATAL CONFIG FILE ERROR"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&te), strip(&re), "{args:?}");
    }
}

// ------------------------------------------------------------------------------------------------
// CONFIG REWRITE

#[test]
fn config_rewrite_keeps_layout_and_restarts() {
    let d = fresh_dir("config_info-rewrite");
    let conf = d.join("redis.conf");
    std::fs::write(
        &conf,
        "# My settings\nmaxmemory 1mb\n\n# unknown below\nsave 900 1\nsave 300 10\nhash-max-ziplist-entries 64\n# tail comment\n",
    )
    .unwrap();
    let p = Proc::start(&conf, &[]);
    let mut c = p.conn();
    let ok = |c: &mut redis::Connection, a: &[&str]| assert_eq!(cmd(c, a).unwrap(), Value::Okay);
    ok(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "2gb",
            "timeout",
            "99",
            "save",
            "60 5",
        ],
    );
    ok(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "hash-max-listpack-entries",
            "100",
            "requirepass",
            "s3 cret",
        ],
    );
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Kx"]);
    ok(&mut c, &["CONFIG", "REWRITE"]);
    let text = std::fs::read_to_string(&conf).unwrap();
    // Comments stay; the existing lines are updated in place (aliases become the real name);
    // a second save line is blanked; new settings follow the signature.
    assert!(text.starts_with("# My settings\nmaxmemory 2gb\n\n# unknown below\nsave 60 5\n\nhash-max-listpack-entries 100\n# tail comment\n"), "{text}");
    assert!(text.contains("# Generated by CONFIG REWRITE\n"), "{text}");
    assert!(text.contains("\ntimeout 99\n"), "{text}");
    assert!(text.contains("\nrequirepass \"s3 cret\"\n"), "{text}");
    assert!(text.contains("\nnotify-keyspace-events \"xK\"\n"), "{text}");
    assert!(text.contains("\nport "), "{text}");
    assert!(text.contains("\ndir \""), "{text}");
    assert!(!text.contains("save 300 10"), "{text}");
    drop(c);
    drop(p);
    // Restart from the rewritten file: the same values come back.
    let p = Proc::start(&conf, &[]);
    let mut c = p.conn();
    ok(&mut c, &["AUTH", "s3 cret"]);
    assert_eq!(get1(&mut c, "maxmemory"), "2147483648");
    assert_eq!(get1(&mut c, "timeout"), "99");
    assert_eq!(get1(&mut c, "save"), "60 5");
    assert_eq!(get1(&mut c, "hash-max-listpack-entries"), "100");
    assert_eq!(get1(&mut c, "notify-keyspace-events"), "xK");
    // save "" survives a rewrite too.
    ok(&mut c, &["CONFIG", "SET", "save", ""]);
    ok(&mut c, &["CONFIG", "REWRITE"]);
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.contains("\nsave \"\"\n"), "{text}");
}

#[test]
fn config_rewrite_without_file_and_help() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(
        err_text(cmd(&mut c, &["CONFIG", "REWRITE"])),
        "ERR The server is running without a config file"
    );
    let help: Vec<String> = redis::cmd("CONFIG").arg("HELP").query(&mut c).unwrap();
    assert_eq!(
        help.first().map(String::as_str),
        Some("CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    );
    assert!(help.iter().any(|l| l == "REWRITE"));
    assert_eq!(
        help.last().map(String::as_str),
        Some("    Print this help.")
    );
    assert_eq!(
        err_text(cmd(&mut c, &["CONFIG", "FOO"])),
        "ERR unknown subcommand 'FOO'. Try CONFIG HELP."
    );
}

// ------------------------------------------------------------------------------------------------
// INFO, TIME, LASTSAVE, RESETSTAT

#[test]
fn info_sections_and_fields() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    // The harness's start-up probe connection may not have been reaped yet on a busy machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut all = info(&mut c, &[]);
    while info_value(&all, "connected_clients").as_deref() != Some("1")
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
        all = info(&mut c, &[]);
    }
    for h in [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "# Stats",
        "# Replication",
        "# CPU",
        "# Modules",
        "# Errorstats",
        "# Cluster",
        "# Keyspace",
    ] {
        assert!(all.contains(&format!("{h}\r\n")), "{h} missing");
    }
    assert!(!all.contains("# Commandstats") && !all.contains("# Latencystats"));
    assert_eq!(info_value(&all, "redis_version").as_deref(), Some("7.2.6"));
    assert_eq!(
        info_value(&all, "redis_mode").as_deref(),
        Some("standalone")
    );
    assert_eq!(info_value(&all, "process_id"), Some(s.pid().to_string()));
    assert_eq!(info_value(&all, "tcp_port"), Some(s.port.to_string()));
    assert_eq!(info_value(&all, "role").as_deref(), Some("master"));
    assert_eq!(info_value(&all, "connected_slaves").as_deref(), Some("0"));
    assert_eq!(info_value(&all, "connected_clients").as_deref(), Some("1"));
    assert_eq!(info_value(&all, "maxclients").as_deref(), Some("10000"));
    assert_eq!(info_value(&all, "aof_enabled").as_deref(), Some("0"));
    assert_eq!(
        info_value(&all, "rdb_bgsave_in_progress").as_deref(),
        Some("0")
    );
    assert_eq!(info_value(&all, "cluster_enabled").as_deref(), Some("0"));
    assert_eq!(info_value(&all, "master_replid").map(|v| v.len()), Some(40));
    assert!(
        info_value(&all, "used_memory")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert!(
        info_value(&all, "used_memory_rss")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert!(info_value(&all, "used_cpu_sys_main_thread")
        .unwrap()
        .contains('.'));
    let uptime: u64 = info_value(&all, "uptime_in_seconds")
        .unwrap()
        .parse()
        .unwrap();
    assert!(uptime < 60);
    // One section only; case-insensitive; several; all/everything/default.
    let cpu = info(&mut c, &["CPU"]);
    assert!(cpu.starts_with("# CPU\r\n") && !cpu.contains("used_memory"));
    let two = info(&mut c, &["cpu", "clients"]);
    assert!(two.contains("# CPU") && two.contains("# Clients") && !two.contains("# Server"));
    for a in ["all", "everything"] {
        let t = info(&mut c, &[a]);
        assert!(
            t.contains("# Commandstats")
                && t.contains("# Latencystats")
                && t.contains("rejected_calls")
        );
    }
    let t = info(&mut c, &["cpu", "all"]);
    assert_eq!(t.matches("used_cpu_user_children").count(), 1);
    let t = info(&mut c, &["default"]);
    assert!(!t.contains("rejected_calls") && t.contains("# Keyspace"));
    assert_eq!(info(&mut c, &["nosuchsection"]), "");
}

#[test]
fn info_counts_commands_keys_and_errors() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(cmd(&mut c, &["CONFIG", "RESETSTAT"]).unwrap(), Value::Okay);
    for i in 0..5 {
        cmd(&mut c, &["SET", &format!("k{i}"), "v"]).unwrap();
    }
    cmd(&mut c, &["SET", "t", "v", "EX", "100"]).unwrap();
    cmd(&mut c, &["GET", "k1"]).unwrap();
    cmd(&mut c, &["GET", "k2"]).unwrap();
    cmd(&mut c, &["GET", "missing"]).unwrap();
    let _ = cmd(&mut c, &["NOSUCHCOMMAND"]);
    let _ = cmd(&mut c, &["GET"]);
    let _ = cmd(&mut c, &["INCR", "k1"]);
    cmd(&mut c, &["SELECT", "3"]).unwrap();
    cmd(&mut c, &["SET", "x", "1"]).unwrap();
    let t = info(&mut c, &["everything"]);
    // INCR looks its key up for writing, which Redis does not count as a hit.
    assert_eq!(info_value(&t, "keyspace_hits").as_deref(), Some("2"), "{t}");
    assert_eq!(info_value(&t, "keyspace_misses").as_deref(), Some("1"));
    // tern's estimate of the database's memory follows Redis's fields.
    let line = info_value(&t, "db0").unwrap();
    assert!(
        line.starts_with("keys=6,expires=1,avg_ttl=0,subexpiry=0,used_memory="),
        "{line}"
    );
    // tern's estimate of the database's memory follows Redis's fields.
    let line = info_value(&t, "db3").unwrap();
    assert!(
        line.starts_with("keys=1,expires=0,avg_ttl=0,subexpiry=0,used_memory="),
        "{line}"
    );
    let set = info_value(&t, "cmdstat_set").unwrap();
    assert!(set.starts_with("calls=7,usec="), "{set}");
    assert!(set.ends_with(",rejected_calls=0,failed_calls=0"), "{set}");
    let get = info_value(&t, "cmdstat_get").unwrap();
    assert!(
        get.starts_with("calls=3,") && get.ends_with("failed_calls=0"),
        "{get}"
    );
    let incr = info_value(&t, "cmdstat_incr").unwrap();
    assert!(
        incr.starts_with("calls=1,") && incr.ends_with("rejected_calls=0,failed_calls=1"),
        "{incr}"
    );
    assert_eq!(info_value(&t, "errorstat_ERR").as_deref(), Some("count=3"));
    assert_eq!(info_value(&t, "total_error_replies").as_deref(), Some("3"));
    assert_eq!(
        info_value(&t, "rdb_changes_since_last_save").as_deref(),
        Some("7")
    );
    let lat = info_value(&t, "latency_percentiles_usec_set").unwrap();
    assert!(
        lat.starts_with("p50=") && lat.contains(",p99=") && lat.contains(",p99.9="),
        "{lat}"
    );
    let processed: u64 = info_value(&t, "total_commands_processed")
        .unwrap()
        .parse()
        .unwrap();
    assert!(processed >= 13, "{processed}");
    // Percentiles follow the configuration; latency-tracking no hides them.
    cmd(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "50 100",
        ],
    )
    .unwrap();
    let lat = info_value(
        &info(&mut c, &["latencystats"]),
        "latency_percentiles_usec_set",
    )
    .unwrap();
    assert!(
        lat.starts_with("p50=") && lat.contains(",p100=") && !lat.contains("p99"),
        "{lat}"
    );
    cmd(&mut c, &["CONFIG", "SET", "latency-tracking", "no"]).unwrap();
    assert_eq!(info(&mut c, &["latencystats"]), "# Latencystats\r\n");
    // RESETSTAT clears command, error and keyspace statistics.
    assert_eq!(cmd(&mut c, &["CONFIG", "RESETSTAT"]).unwrap(), Value::Okay);
    let t = info(&mut c, &["stats", "commandstats", "errorstats"]);
    assert_eq!(info_value(&t, "keyspace_hits").as_deref(), Some("0"));
    assert_eq!(info_value(&t, "errorstat_ERR"), None);
    assert_eq!(info_value(&t, "cmdstat_set"), None);
    assert_eq!(info_value(&t, "total_error_replies").as_deref(), Some("0"));
}

/// Redis counts a wrong-arity call as a rejected call of that command.
#[test]

fn arity_errors_count_as_rejected_calls() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let _ = cmd(&mut c, &["GET"]);
    let _ = cmd(&mut c, &["CONFIG", "SET", "maxmemory"]);
    let t = info(&mut c, &["commandstats"]);
    assert_eq!(
        info_value(&t, "cmdstat_get").as_deref(),
        Some("calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0")
    );
    assert_eq!(
        info_value(&t, "cmdstat_config|set").as_deref(),
        Some("calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0")
    );
}

#[test]
fn time_and_lastsave() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let t: Vec<String> = redis::cmd("TIME").query(&mut c).unwrap();
    assert_eq!(t.len(), 2);
    let secs: u64 = t[0].parse().unwrap();
    let us: u64 = t[1].parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(secs.abs_diff(now) <= 2 && us < 1_000_000);
    let last: u64 = redis::cmd("LASTSAVE").query(&mut c).unwrap();
    assert!(last <= now + 1 && now - last < 60);
    assert_eq!(
        err_text(cmd(&mut c, &["TIME", "x"])),
        "ERR wrong number of arguments for 'time' command"
    );
}

// ------------------------------------------------------------------------------------------------
// Differential: CONFIG errors and values against redis-server

#[test]
fn config_errors_match_redis() {
    let Some(r) = Server::redis(&[]) else {
        return;
    };
    let t = Server::tern(&[]);
    let (mut rc, mut tc) = (r.conn(), t.conn());
    let cases: &[&[&str]] = &[
        &["CONFIG", "SET", "foo", "bar"],
        &["CONFIG", "SET", "maxmemory", "1", "hz"],
        &["CONFIG", "SET", "maxmemory", "1", "maxmemory", "2"],
        &["CONFIG", "SET", "daemonize", "yes"],
        &["CONFIG", "SET", "hz", "abc"],
        &["CONFIG", "SET", "hz", "-1"],
        &["CONFIG", "SET", "maxclients", "-1"],
        &["CONFIG", "SET", "maxmemory", "-1"],
        &["CONFIG", "SET", "maxmemory", "10xb"],
        &["CONFIG", "SET", "appendonly", "maybe"],
        &["CONFIG", "SET", "save", "1 2 3"],
        &["CONFIG", "SET", "save", "a b"],
        &["CONFIG", "SET", "notify-keyspace-events", "KQ"],
        &["CONFIG", "SET", "maxmemory-policy", "lru"],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "master 1 1 1",
        ],
        &["CONFIG", "SET", "client-output-buffer-limit", "normal 1 1"],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 1x 1 1",
        ],
        &["CONFIG", "SET", "oom-score-adj-values", "1 2"],
        &["CONFIG", "SET", "oom-score-adj-values", "1 2 3000"],
        &["CONFIG", "SET", "maxmemory-clients", "200%"],
        &["CONFIG", "SET", "shutdown-on-sigint", "save nosave"],
        &["CONFIG", "SET", "shutdown-on-sigint", "sometimes"],
        &["CONFIG", "SET", "list-max-listpack-size", "99999999999"],
        &["CONFIG", "SET", "dir", "/tmp"],
        &["CONFIG", "SET", "dbfilename", "x.rdb"],
        &["CONFIG", "SET", "unixsocketperm", "777"],
        &["CONFIG", "SET", "replicaof", "no one"],
        &["CONFIG", "SET", "cluster-announce-hostname", "bad_host"],
        &["CONFIG", "SET", "proc-title-template", "{nope}"],
        &["CONFIG", "SET", "maxmemory"],
        &["CONFIG", "GET"],
        &["CONFIG", "REWRITE"],
        &["CONFIG", "NOPE"],
        &["CONFIG", "RESETSTAT", "x"],
    ];
    for a in cases {
        let (rv, tv) = crate::common::both(&mut rc, &mut tc, a);
        match (&rv, &tv) {
            (Err(re), Err(te)) => {
                assert_eq!((re.code(), re.detail()), (te.code(), te.detail()), "{a:?}")
            }
            _ => assert_eq!(format!("{rv:?}"), format!("{tv:?}"), "{a:?}"),
        }
    }
    // Values both servers agree on (defaults that are the same in 7.0 and 7.2, and canonical
    // forms after a set).
    let sets: &[&[&str]] = &[
        &["CONFIG", "SET", "notify-keyspace-events", "KEA"],
        &["CONFIG", "SET", "notify-keyspace-events", "Elg$"],
        &["CONFIG", "SET", "maxmemory", "3mb"],
        &["CONFIG", "SET", "oom-score-adj", "relative"],
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "replica 1mb 2k 3 pubsub 4gb 5 6",
        ],
        &["CONFIG", "SET", "save", "100 10 20 3"],
        &[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "1.50 99 100.0",
        ],
        &["CONFIG", "SET", "hz", "1000"],
        &["CONFIG", "SET", "maxmemory-clients", "7%"],
        &["CONFIG", "SET", "shutdown-on-sigterm", "force now nosave"],
    ];
    for a in sets {
        let (rv, tv) = crate::common::both(&mut rc, &mut tc, a);
        assert_eq!(format!("{rv:?}"), format!("{tv:?}"), "{a:?}");
        let name = a[2];
        assert_eq!(get1(&mut rc, name), get1(&mut tc, name), "{a:?}");
    }
    for name in [
        "maxmemory-policy",
        "appendfsync",
        "loglevel",
        "tcp-keepalive",
        "proto-max-bulk-len",
        "client-query-buffer-limit",
        "slave-read-only",
        "list-max-ziplist-size",
        "zset-max-ziplist-value",
        "stream-node-max-bytes",
        "repl-backlog-size",
        "busy-reply-threshold",
        "lua-time-limit",
        "active-expire-effort",
        "supervised",
        "acl-pubsub-default",
        "oom-score-adj-values",
        "shutdown-on-sigint",
        "databases",
        "syslog-facility",
    ] {
        assert_eq!(get1(&mut rc, name), get1(&mut tc, name), "{name}");
    }
}

/// jemalloc's background purge threads of a running server (named by jemalloc).
fn jemalloc_bg_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
        .filter(|name| name.trim() == "jemalloc_bg_thd")
        .count()
}

/// Wait up to 2 s for the thread count to satisfy `ok` (jemalloc starts and stops them lazily).
fn wait_bg_threads(pid: u32, ok: impl Fn(usize) -> bool) -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let n = jemalloc_bg_threads(pid);
        if ok(n) || Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn jemalloc_bg_thread_starts_and_stops_the_purge_threads() {
    // On by default, as in Redis: freed pages go back to the kernel while the server idles.
    let s = Server::tern(&[]);
    let mut c = s.conn();
    assert_eq!(get1(&mut c, "jemalloc-bg-thread"), "yes");
    assert!(wait_bg_threads(s.pid(), |n| n > 0) > 0);
    let set = |c: &mut redis::Connection, v: &str| {
        assert_eq!(
            cmd(c, &["CONFIG", "SET", "jemalloc-bg-thread", v]).unwrap(),
            Value::Okay
        );
    };
    set(&mut c, "no");
    assert_eq!(wait_bg_threads(s.pid(), |n| n == 0), 0);
    set(&mut c, "yes");
    assert!(wait_bg_threads(s.pid(), |n| n > 0) > 0);

    // Off from the start.
    let s = Server::tern(&["--jemalloc-bg-thread", "no"]);
    let mut c = s.conn();
    assert_eq!(get1(&mut c, "jemalloc-bg-thread"), "no");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(jemalloc_bg_threads(s.pid()), 0);
}
