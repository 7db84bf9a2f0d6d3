//! The append-only file: the propagated form of writes (read back from the incremental file),
//! restart and rewrite (RDB and command bases), crash safety with `appendfsync always`,
//! truncated and corrupt files, CONFIG SET appendonly at run time, the old single-file layout,
//! and AOF directories moving between redis-server 7.0 and tern in both directions.
use crate::common::*;
use crate::persist_data::*;
use redis::Value as V;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// tern with the AOF on in `dir`; `appendfsync always` unless `extra` says otherwise, so that
/// what was acknowledged is in the file when the test kills the server.
fn tern_in(dir: &Path, extra: &[&str]) -> Server {
    tern_in_env(dir, extra, &[])
}

/// `tern_in` with extra environment variables for the server process.
fn tern_in_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let mut a = vec![
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--enable-debug-command",
        "yes",
    ];
    a.extend_from_slice(extra);
    Server::tern_env(&a, env)
}

/// The commands of an AOF file (from `from` on), as strings.
fn parse_aof(data: &[u8]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    let line = |i: &mut usize| -> String {
        let end = data[*i..].windows(2).position(|w| w == b"\r\n").unwrap() + *i;
        let s = String::from_utf8_lossy(&data[*i..end]).to_string();
        *i = end + 2;
        s
    };
    while i < data.len() {
        let head = line(&mut i);
        let n: usize = head[1..].parse().unwrap();
        let mut args = Vec::new();
        for _ in 0..n {
            let l: usize = line(&mut i)[1..].parse().unwrap();
            args.push(String::from_utf8_lossy(&data[i..i + l]).to_string());
            i += l + 2;
        }
        out.push(args);
    }
    out
}

/// Every command of the incremental files, in order.
fn incr_commands(dir: &Path) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (name, t) in listed(dir) {
        if t == "i" {
            out.extend(parse_aof(
                &std::fs::read(dir.join("appendonlydir").join(name)).unwrap(),
            ));
        }
    }
    out
}

fn upper(cmds: &[Vec<String>]) -> Vec<String> {
    cmds.iter()
        .map(|c| {
            let mut c = c.clone();
            c[0] = c[0].to_uppercase();
            c.join(" ")
        })
        .collect()
}

#[test]
fn writes_are_logged_in_their_propagated_form() {
    let dir = fresh_dir("aof-forms");
    let s = tern_in(&dir, &["--appendfsync", "always"]);
    let mut c = loaded(&s);
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };
    let t0 = now_ms();
    q(&mut c, &["SET", "a", "1", "EX", "100"]);
    q(&mut c, &["SETEX", "b", "100", "x"]);
    q(&mut c, &["PSETEX", "b2", "100000", "x"]);
    q(&mut c, &["SET", "c", "v", "GET"]);
    q(&mut c, &["SET", "c", "w", "NX"]); // changed nothing: not logged
    q(&mut c, &["EXPIRE", "a", "200"]);
    q(&mut c, &["EXPIRE", "nosuchkey", "200"]); // nothing
    q(&mut c, &["SADD", "s", "1", "2", "3", "4", "5"]);
    q(&mut c, &["SPOP", "s"]);
    q(&mut c, &["SPOP", "s", "2"]);
    q(&mut c, &["SPOP", "s", "10"]);
    q(&mut c, &["RPUSH", "l", "a", "b", "c"]);
    q(&mut c, &["BLPOP", "l", "0"]);
    q(&mut c, &["LMPOP", "1", "l", "RIGHT", "COUNT", "5"]);
    q(
        &mut c,
        &[
            "EVAL",
            "redis.call('set',KEYS[1],'1'); redis.call('incr',KEYS[1]); return 1",
            "1",
            "x",
        ],
    );
    q(
        &mut c,
        &["EVAL", "return redis.call('get',KEYS[1])", "1", "x"],
    ); // read-only: nothing
    q(&mut c, &["INCRBYFLOAT", "f", "2.5"]);
    q(&mut c, &["HINCRBYFLOAT", "h", "fld", "1.5"]);
    q(&mut c, &["GETEX", "b", "PERSIST"]);
    q(&mut c, &["GETDEL", "b2"]);
    q(&mut c, &["GETSET", "c", "z"]);
    q(&mut c, &["MULTI"]);
    q(&mut c, &["INCR", "m1"]);
    q(&mut c, &["INCR", "m2"]);
    q(&mut c, &["EXEC"]);
    q(&mut c, &["SELECT", "3"]);
    q(&mut c, &["SET", "k3", "v"]);
    q(&mut c, &["SELECT", "0"]);
    q(&mut c, &["PEXPIREAT", "k0", "1"]); // absent key
    q(&mut c, &["SET", "gone", "v"]);
    q(&mut c, &["PEXPIREAT", "gone", "1"]); // in the past: deleted, logged as DEL
    q(&mut c, &["ZADD", "z", "1", "a", "2", "b"]);
    q(&mut c, &["BZPOPMIN", "z", "0"]);
    let V::BulkString(id) = q(&mut c, &["XADD", "st", "*", "f", "v"]) else {
        panic!()
    };
    let id = String::from_utf8(id).unwrap();
    q(&mut c, &["XGROUP", "CREATE", "st", "g", "0"]);
    q(
        &mut c,
        &["XREADGROUP", "GROUP", "g", "c1", "STREAMS", "st", ">"],
    );
    q(&mut c, &["FLUSHDB"]);
    let t1 = now_ms();
    let cmds = incr_commands(&dir);
    let got = upper(&cmds);
    // Absolute times: check they are within the run, then mask them.
    let abs = |i: usize, arg: usize, rel: i64| {
        let t: i64 = cmds[i][arg].parse().unwrap();
        assert!(t >= t0 + rel && t <= t1 + rel, "{:?}", cmds[i]);
    };
    let mut i = 0;
    let mut expect = |line: &str| {
        assert_eq!(got[i], line, "command {i}: {got:#?}");
        i += 1;
        i - 1
    };
    expect("SELECT 0");
    let k = expect(&format!("SET a 1 PXAT {}", cmds[1][4]));
    abs(k, 4, 100_000);
    let k = expect(&format!("SET b x PXAT {}", cmds[2][4]));
    abs(k, 4, 100_000);
    let k = expect(&format!("SET b2 x PXAT {}", cmds[3][4]));
    abs(k, 4, 100_000);
    expect("SET c v");
    let k = expect(&format!("PEXPIREAT a {}", cmds[5][2]));
    abs(k, 2, 200_000);
    expect("SADD s 1 2 3 4 5");
    assert!(
        got[i].starts_with("SREM s ") && cmds[i].len() == 3,
        "{}",
        got[i]
    );
    i += 1;
    assert!(
        got[i].starts_with("SREM s ") && cmds[i].len() == 4,
        "{}",
        got[i]
    );
    i += 1;
    let mut expect = |line: &str| {
        assert_eq!(got[i], line, "command {i}: {got:#?}");
        i += 1;
    };
    expect("DEL s");
    expect("RPUSH l a b c");
    expect("LPOP l");
    expect("RPOP l 2");
    expect("MULTI");
    expect("SET x 1");
    expect("INCR x");
    expect("EXEC");
    expect("SET f 2.5 KEEPTTL");
    expect("HSET h fld 1.5");
    expect("PERSIST b");
    expect("DEL b2");
    expect("SET c z");
    expect("MULTI");
    expect("INCR m1");
    expect("INCR m2");
    expect("EXEC");
    expect("SELECT 3");
    expect("SET k3 v");
    expect("SELECT 0");
    expect("SET gone v");
    expect("DEL gone");
    expect("ZADD z 1 a 2 b");
    expect("ZPOPMIN z");
    expect(&format!("XADD st {id} f v"));
    expect("XGROUP CREATE st g 0");
    assert!(
        got[i].starts_with(&format!("XCLAIM st g c1 0 {id} TIME "))
            && got[i].ends_with(&format!("RETRYCOUNT 1 FORCE JUSTID LASTID {id}")),
        "{}",
        got[i]
    );
    i += 1;
    let mut expect = |line: &str| {
        assert_eq!(got[i], line, "command {i}: {got:#?}");
        i += 1;
    };
    expect("FLUSHDB");
    assert_eq!(i, got.len(), "{got:#?}");
}

#[test]
fn expired_keys_are_logged_as_del() {
    let dir = fresh_dir("aof-expdel");
    let s = tern_in(&dir, &[]);
    let mut c = loaded(&s);
    q(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    q(&mut c, &["SET", "lazy", "v", "PX", "50"]);
    q(&mut c, &["SET", "active", "v", "PX", "50"]);
    q(&mut c, &["SET", "inwrite", "v", "PX", "50"]);
    std::thread::sleep(Duration::from_millis(120));
    // Lazily on a read; inside a write (with the write, as one unit); the other actively.
    assert_eq!(q(&mut c, &["GET", "lazy"]), V::Nil);
    q(&mut c, &["SET", "inwrite", "new"]);
    q(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = upper(&incr_commands(&dir));
        if got.contains(&"DEL active".to_string()) {
            assert!(got.contains(&"DEL lazy".to_string()), "{got:?}");
            let at = got.iter().position(|l| l == "DEL inwrite").unwrap();
            assert_eq!(got[at - 1], "MULTI");
            assert_eq!(got[at + 1], "SET inwrite new");
            assert_eq!(got[at + 2], "EXEC");
            break;
        }
        assert!(Instant::now() < deadline, "{got:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // lazyfree-lazy-expire: UNLINK instead.
    q(&mut c, &["CONFIG", "SET", "lazyfree-lazy-expire", "yes"]);
    q(&mut c, &["SET", "lz", "v", "PX", "20"]);
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(q(&mut c, &["EXISTS", "lz"]), V::Int(0));
    let got = upper(&incr_commands(&dir));
    assert!(got.contains(&"UNLINK lz".to_string()), "{got:?}");
}

/// Fill every type, TTLs, several databases, a function library, and some history (deleted
/// keys, overwritten values) so that the log is more than the final state.
fn fill(c: &mut redis::Connection) {
    fill_all(c);
    q(c, &["SET", "tmp", "x"]);
    q(c, &["DEL", "tmp"]);
    q(c, &["INCRBYFLOAT", "fl", "1.1"]);
    q(c, &["INCRBYFLOAT", "fl", "2.2"]);
    q(c, &["SET", "soon", "x", "PX", "1"]);
}

/// Everything a client can see: every key of dbs 0, 1, 5 described, plus the functions.
fn state(c: &mut redis::Connection) -> Vec<String> {
    let mut out = Vec::new();
    for db in ["0", "1", "5"] {
        q(c, &["SELECT", db]);
        for k in all_keys(c) {
            out.push(format!("{db} {k} {}", describe(c, &k)));
        }
    }
    q(c, &["SELECT", "0"]);
    out.push(format!("{:?}", q(c, &["FUNCTION", "LIST"])));
    out
}

#[test]
fn restart_and_rewrite_keep_everything() {
    for preamble in ["yes", "no"] {
        let dir = fresh_dir(&format!("aof-restart-{preamble}"));
        let opts = ["--aof-use-rdb-preamble", preamble];
        let before = {
            let s = tern_in(&dir, &opts);
            let mut c = loaded(&s);
            fill(&mut c);
            // Half the history goes into a new base, the rest into the new incremental file.
            assert_eq!(
                q(&mut c, &["BGREWRITEAOF"]),
                V::SimpleString("Background append only file rewriting started".into())
            );
            wait_rewrite(&mut c);
            q(&mut c, &["SET", "after-rewrite", "1"]);
            q(&mut c, &["LPUSH", "l:small", "pushed"]);
            q(&mut c, &["XADD", "x:s", "*", "late", "entry"]);
            let st = state(&mut c);
            let i = c.info_text("persistence");
            assert_eq!(info_value(&i, "aof_enabled").unwrap(), "1");
            assert_eq!(info_value(&i, "aof_rewrites").unwrap(), "1");
            assert_eq!(info_value(&i, "aof_last_bgrewrite_status").unwrap(), "ok");
            st
            // dropped: SIGKILL, nothing flushed at exit
        };
        let files = listed(&dir);
        assert_eq!(files.len(), 2, "{files:?}");
        let ext = if preamble == "yes" { "rdb" } else { "aof" };
        assert_eq!(
            files[0],
            (format!("appendonly.aof.2.base.{ext}"), "b".into())
        );
        assert_eq!(files[1], ("appendonly.aof.2.incr.aof".into(), "i".into()));
        let names: Vec<String> = std::fs::read_dir(dir.join("appendonlydir"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(names.len(), 3, "history files are deleted: {names:?}");
        let base = std::fs::read(dir.join("appendonlydir").join(&files[0].0)).unwrap();
        if preamble == "yes" {
            assert!(base.starts_with(b"REDIS"));
        } else {
            let cmds = upper(&parse_aof(&base));
            assert!(cmds[0].starts_with("FUNCTION LOAD"), "{:?}", cmds[0]);
            assert!(cmds.iter().any(|l| l.starts_with("XSETID x:s ")));
            assert!(cmds.iter().any(|l| l.starts_with("XGROUP CREATE x:s g1 ")));
            assert!(cmds.iter().any(|l| l.starts_with("XCLAIM x:s g1 alice 0 ")));
            assert!(cmds
                .iter()
                .any(|l| l == "XGROUP CREATECONSUMER x:s g2 carol"));
            assert!(cmds.iter().any(|l| l.starts_with("PEXPIREAT ttl:s ")));
        }
        let s = tern_in(&dir, &opts);
        let mut c = loaded(&s);
        assert_eq!(state(&mut c), before, "preamble {preamble}");
        // And once more after a restart that appended nothing.
        q(&mut c, &["SET", "third", "run"]);
        let after = state(&mut c);
        drop(c);
        drop(s);
        let s = tern_in(&dir, &opts);
        let mut c = loaded(&s);
        assert_eq!(state(&mut c), after, "preamble {preamble}, second restart");
    }
}

/// One acknowledged write: key, value, when the reply arrived.
type Acked = (String, u64, Instant);

/// Eight clients run INCR counter:t / SET k:t:n n in a loop under `appendfsync policy` until
/// the server is killed with SIGKILL; returns every acknowledged write and when the kill came.
fn kill9_under_load(dir: &Path, policy: &str, run: Duration) -> (Vec<Acked>, Instant) {
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::new(Mutex::new(Vec::new()));
    let s = tern_in(dir, &["--appendfsync", policy, "--threads", "2"]);
    let _ = loaded(&s);
    let stop = Arc::new(AtomicBool::new(false));
    let mut hs = Vec::new();
    for t in 0..8 {
        let (url, stop, acked) = (s.url(), stop.clone(), acked.clone());
        hs.push(std::thread::spawn(move || {
            let Ok(mut c) = redis::Client::open(url).unwrap().get_connection() else {
                return;
            };
            let key = format!("counter:{t}");
            while !stop.load(Ordering::Relaxed) {
                // Each acknowledged INCR and SET is recorded; the server dies mid-way.
                let r: redis::RedisResult<u64> = redis::cmd("INCR").arg(&key).query(&mut c);
                let Ok(n) = r else { break };
                acked.lock().unwrap().push((key.clone(), n, Instant::now()));
                let k = format!("k:{t}:{n}");
                let r: redis::RedisResult<()> = redis::cmd("SET").arg(&k).arg(n).query(&mut c);
                if r.is_err() {
                    break;
                }
                acked.lock().unwrap().push((k, n, Instant::now()));
            }
        }));
    }
    // Readers: every value a client was shown counts as acknowledged too (under `always` a
    // reply may reveal only what is durable: no client sees data a crash could lose).
    for r in 0..4 {
        let (url, stop, acked) = (s.url(), stop.clone(), acked.clone());
        hs.push(std::thread::spawn(move || {
            let Ok(mut c) = redis::Client::open(url).unwrap().get_connection() else {
                return;
            };
            let mut i = r;
            while !stop.load(Ordering::Relaxed) {
                let (a, b) = (
                    format!("counter:{}", i % 8),
                    format!("counter:{}", (i + 3) % 8),
                );
                i += 1;
                let seen: redis::RedisResult<Vec<Option<u64>>> =
                    redis::cmd("MGET").arg(&a).arg(&b).query(&mut c);
                let Ok(seen) = seen else { break };
                let single: redis::RedisResult<Option<u64>> =
                    redis::cmd("GET").arg(&a).query(&mut c);
                let Ok(single) = single else { break };
                let now = Instant::now();
                let mut l = acked.lock().unwrap();
                for (k, v) in [(&a, seen[0]), (&b, seen[1]), (&a, single)] {
                    if let Some(v) = v {
                        l.push((k.clone(), v, now));
                    }
                }
            }
        }));
    }
    std::thread::sleep(run);
    // SIGKILL while the writers are busy.
    s.signal(libc::SIGKILL);
    let killed = Instant::now();
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 100, "too few writes: {}", acked.len());
    (acked, killed)
}

/// After the restart: every acknowledged write older than `window` before the kill is there,
/// and what was loaded is a prefix of each client's writes (k:t:n for every n below the
/// loaded counter:t), so nothing in the file is corrupt or out of order.
fn check_after_crash(dir: &Path, acked: &[Acked], killed: Instant, window: Duration) {
    let s = tern_in(dir, &[]);
    let mut c = loaded(&s);
    let mut max: std::collections::HashMap<String, u64> = Default::default();
    for (k, v, at) in acked {
        if killed.duration_since(*at) < window {
            continue;
        }
        if k.starts_with("counter:") {
            let e = max.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        } else {
            let got: Option<u64> = redis::cmd("GET").arg(k).query(&mut c).unwrap();
            assert_eq!(got, Some(*v), "acknowledged {k} lost");
        }
    }
    for (k, v) in max {
        let got: u64 = redis::cmd("GET").arg(&k).query(&mut c).unwrap();
        assert!(got >= v, "{k}: acknowledged {v}, after restart {got}");
    }
    for t in 0..8 {
        let n: Option<u64> = redis::cmd("GET")
            .arg(format!("counter:{t}"))
            .query(&mut c)
            .unwrap();
        for i in 1..n.unwrap_or(0) {
            let got: Option<u64> = redis::cmd("GET")
                .arg(format!("k:{t}:{i}"))
                .query(&mut c)
                .unwrap();
            assert_eq!(got, Some(i), "k:{t}:{i} missing below counter:{t}={n:?}");
        }
    }
}

#[test]
fn kill9_under_load_loses_no_acknowledged_write() {
    let dir = fresh_dir("aof-crash");
    let (acked, killed) = kill9_under_load(&dir, "always", Duration::from_millis(1500));
    check_after_crash(&dir, &acked, killed, Duration::ZERO);
}

#[test]
fn kill9_with_everysec_or_no_loses_no_acknowledged_write() {
    // A killed process (unlike a power loss) loses nothing acknowledged under any policy: the
    // log reaches the file before the replies that reveal it go out; only the fsync waits.
    // Several short rounds: the loss this guards against showed in about 2 runs of 5.
    for policy in ["everysec", "no"] {
        for round in 0..4 {
            let dir = fresh_dir(&format!("aof-crash-{policy}-{round}"));
            let (acked, killed) = kill9_under_load(&dir, policy, Duration::from_millis(700));
            check_after_crash(&dir, &acked, killed, Duration::ZERO);
        }
    }
}

fn run_to_exit(dir: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let port = free_port();
    let log = dir.join("tern.log");
    let _ = std::fs::remove_file(&log);
    let mut child = Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            dir.to_str().unwrap(),
            "--appendonly",
            "yes",
            "--logfile",
            log.to_str().unwrap(),
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Either it exits (refused) or it finishes loading.
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        let up = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .and_then(|c| c.get_connection())
            .ok()
            .and_then(|mut c| cmd(&["INFO", "persistence"]).query::<V>(&mut c).ok())
            .is_some_and(|v| matches!(&v, V::BulkString(b) if String::from_utf8_lossy(b).lines().any(|l| l == "loading:0")));
        if up {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, std::fs::read_to_string(&log).unwrap_or_default())
}

#[test]
fn truncated_and_corrupt_files() {
    let dir = fresh_dir("aof-trunc");
    {
        let s = tern_in(&dir, &[]);
        let mut c = loaded(&s);
        for i in 0..50 {
            q(&mut c, &["SET", &format!("k{i}"), &format!("v{i}")]);
        }
        q(&mut c, &["CONFIG", "SET", "appendfsync", "always"]);
        q(&mut c, &["SET", "last", "complete"]);
    }
    let incr = dir.join("appendonlydir/appendonly.aof.1.incr.aof");
    let full = std::fs::read(&incr).unwrap();
    // A torn last command: what a crash in the middle of a write leaves.
    let partial = b"*3\r\n$3\r\nSET\r\n$4\r\ntorn\r\n$5\r\nva";
    let mut torn = full.clone();
    torn.extend_from_slice(partial);
    std::fs::write(&incr, &torn).unwrap();

    // aof-load-truncated no: refused, with the file and offset, file untouched.
    let (code, log) = run_to_exit(&dir, &["--aof-load-truncated", "no"]);
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains(
            "Unexpected end of file reading the append only file appendonly.aof.1.incr.aof"
        ),
        "{log}"
    );
    assert!(log.contains(&format!("offset {}", full.len())), "{log}");
    assert_eq!(std::fs::read(&incr).unwrap(), torn);

    // yes (the default): loaded up to the last complete command, with a warning.
    let (code, log) = run_to_exit(&dir, &[]);
    assert_eq!(code, None, "{log}");
    assert!(
        log.contains(
            "!!! Warning: short read while loading the AOF file appendonly.aof.1.incr.aof!!!"
        ),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "Truncating the AOF appendonly.aof.1.incr.aof at offset {}",
            full.len()
        )),
        "{log}"
    );
    assert_eq!(std::fs::read(&incr).unwrap(), full);
    {
        let s = tern_in(&dir, &[]);
        let mut c = loaded(&s);
        assert_eq!(q(&mut c, &["GET", "last"]), bulk("complete"));
        assert_eq!(q(&mut c, &["GET", "torn"]), V::Nil);
        assert_eq!(q(&mut c, &["DBSIZE"]), V::Int(51));
    }

    // An unterminated MULTI at the end counts as truncated too.
    let full = std::fs::read(&incr).unwrap();
    let mut open_multi = full.clone();
    open_multi.extend_from_slice(b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$1\r\n1\r\n");
    std::fs::write(&incr, &open_multi).unwrap();
    let (code, log) = run_to_exit(&dir, &[]);
    assert_eq!(code, None, "{log}");
    assert!(
        log.contains(
            "Revert incomplete MULTI/EXEC transaction in AOF file appendonly.aof.1.incr.aof"
        ),
        "{log}"
    );
    assert_eq!(std::fs::read(&incr).unwrap(), full);

    // Garbage: refused whatever aof-load-truncated says, and never modified.
    let mut bad = full.clone();
    bad.extend_from_slice(b"this is not RESP\r\n*1\r\n$4\r\nPING\r\n");
    std::fs::write(&incr, &bad).unwrap();
    let (code, log) = run_to_exit(&dir, &[]);
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains("Bad file format reading the append only file appendonly.aof.1.incr.aof"),
        "{log}"
    );
    assert_eq!(std::fs::read(&incr).unwrap(), bad);

    // An unknown command is fatal too; so is a broken manifest.
    let mut unk = full.clone();
    unk.extend_from_slice(b"*1\r\n$7\r\nNOSUCHX\r\n");
    std::fs::write(&incr, &unk).unwrap();
    let (code, log) = run_to_exit(&dir, &[]);
    assert_eq!(code, Some(1));
    assert!(
        log.contains(
            "Unknown command 'NOSUCHX' reading the append only file appendonly.aof.1.incr.aof"
        ),
        "{log}"
    );
    std::fs::write(&incr, &full).unwrap();
    let m = dir.join("appendonlydir/appendonly.aof.manifest");
    let good = std::fs::read(&m).unwrap();
    std::fs::write(&m, b"file appendonly.aof.1.base.rdb seq 1 type x\n").unwrap();
    let (code, log) = run_to_exit(&dir, &[]);
    assert_eq!(code, Some(1));
    assert!(log.contains("Unknown AOF file type"), "{log}");
    std::fs::write(&m, &good).unwrap();
    let (code, _) = run_to_exit(&dir, &[]);
    assert_eq!(code, None);
}

#[test]
fn config_set_appendonly_at_run_time() {
    let dir = fresh_dir("aof-runtime");
    let s = Server::tern(&["--dir", dir.to_str().unwrap()]);
    let mut c = s.conn();
    for i in 0..100 {
        q(&mut c, &["SET", &format!("pre{i}"), "x"]);
    }
    // Writers keep going while the AOF is turned on: nothing may fall between base and log.
    let stop = Arc::new(AtomicBool::new(false));
    let url = s.url();
    let w = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let _: () = redis::cmd("SET")
                    .arg("during")
                    .arg(n)
                    .query(&mut c)
                    .unwrap();
                let _: i64 = redis::cmd("INCR").arg("ctr").query(&mut c).unwrap();
            }
            n
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    q(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
    let i = c.info_text("persistence");
    assert_eq!(info_value(&i, "aof_enabled").unwrap(), "1");
    wait_rewrite(&mut c);
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let n = w.join().unwrap();
    q(&mut c, &["SET", "post", "y"]);
    let before = state(&mut c);
    assert_eq!(q(&mut c, &["GET", "ctr"]), bulk(&n.to_string()));
    drop(c);
    drop(s);
    let s = tern_in(&dir, &[]);
    let mut c = loaded(&s);
    assert_eq!(state(&mut c), before);
    // appendonly no: logging stops (the files stay as they were).
    q(&mut c, &["CONFIG", "SET", "appendonly", "no"]);
    assert_eq!(
        info_value(&c.info_text("persistence"), "aof_enabled").unwrap(),
        "0"
    );
    let size = std::fs::metadata(dir.join("appendonlydir/appendonly.aof.2.incr.aof"))
        .map(|m| m.len())
        .unwrap_or(0);
    q(&mut c, &["SET", "unlogged", "1"]);
    assert_eq!(
        std::fs::metadata(dir.join("appendonlydir/appendonly.aof.2.incr.aof"))
            .map(|m| m.len())
            .unwrap_or(0),
        size
    );
}

#[test]
fn old_single_file_aof_is_migrated() {
    let dir = fresh_dir("aof-upgrade");
    let mut data = Vec::new();
    for a in [
        &["SELECT", "0"][..],
        &["SET", "old", "style"],
        &["RPUSH", "ol", "a", "b"],
        &["SELECT", "2"],
        &["SET", "in2", "x"],
    ] {
        data.extend_from_slice(format!("*{}\r\n", a.len()).as_bytes());
        for x in a {
            data.extend_from_slice(format!("${}\r\n{x}\r\n", x.len()).as_bytes());
        }
    }
    std::fs::write(dir.join("appendonly.aof"), &data).unwrap();
    let s = tern_in(&dir, &[]);
    let mut c = loaded(&s);
    assert_eq!(q(&mut c, &["GET", "old"]), bulk("style"));
    assert_eq!(
        q(&mut c, &["LRANGE", "ol", "0", "-1"]),
        V::Array(vec![bulk("a"), bulk("b")])
    );
    q(&mut c, &["SELECT", "2"]);
    assert_eq!(q(&mut c, &["GET", "in2"]), bulk("x"));
    assert!(!dir.join("appendonly.aof").exists());
    assert_eq!(
        listed(&dir),
        vec![
            ("appendonly.aof".to_string(), "b".to_string()),
            ("appendonly.aof.1.incr.aof".to_string(), "i".to_string())
        ]
    );
    q(&mut c, &["SELECT", "0"]);
    q(&mut c, &["SET", "new", "1"]);
    drop(c);
    drop(s);
    let s = tern_in(&dir, &[]);
    let mut c = loaded(&s);
    assert_eq!(q(&mut c, &["GET", "new"]), bulk("1"));
    assert_eq!(q(&mut c, &["GET", "old"]), bulk("style"));
}

#[test]
fn bgrewriteaof_info_and_automatic_rewrite() {
    let dir = fresh_dir("aof-auto");
    let s = tern_in(
        &dir,
        &[
            "--auto-aof-rewrite-min-size",
            "20kb",
            "--auto-aof-rewrite-percentage",
            "100",
        ],
    );
    let mut c = loaded(&s);
    let i = c.info_text("persistence");
    for f in [
        "aof_enabled:1",
        "aof_rewrite_in_progress:0",
        "aof_rewrite_scheduled:0",
        "aof_last_rewrite_time_sec:-1",
        "aof_current_rewrite_time_sec:-1",
        "aof_last_bgrewrite_status:ok",
        "aof_rewrites:0",
        "aof_rewrites_consecutive_failures:0",
        "aof_last_write_status:ok",
        "aof_last_cow_size:0",
        "aof_pending_rewrite:0",
        "aof_buffer_length:",
        "aof_pending_bio_fsync:0",
        "aof_delayed_fsync:0",
        "aof_current_size:",
        "aof_base_size:",
    ] {
        assert!(i.contains(f), "{f} missing in {i}");
    }
    // Grow the log past the minimum: the cron rewrites it on its own.
    let v = "x".repeat(200);
    for i in 0..200 {
        q(&mut c, &["SET", "same", &format!("{v}{i}")]);
    }
    // Generous: the cron checks every 100 ms, but a loaded CI machine can be slow. A slow
    // machine can also run the SETs across two cron passes, and so rewrite twice.
    let deadline = Instant::now() + Duration::from_secs(30);
    let automatic = loop {
        let i = c.info_text("persistence");
        let rewrites: u64 = info_value(&i, "aof_rewrites").unwrap().parse().unwrap();
        let cur: u64 = info_value(&i, "aof_current_size").unwrap().parse().unwrap();
        // Below the minimum size no further automatic rewrite can start.
        if rewrites >= 1
            && info_value(&i, "aof_rewrite_in_progress").unwrap() == "0"
            && cur < 20 * 1024
        {
            // The cron may start the rewrite before the loop ends: SETs after the cut go to
            // the new incremental file, so only the base is known exactly (one key).
            let base: u64 = info_value(&i, "aof_base_size").unwrap().parse().unwrap();
            // The base holds the current state (a few small keys, expired ones included as
            // Redis saves them), far less than the 200 SETs' history.
            assert!(base < 8192 && base <= cur, "{i}");
            assert!(cur < 200 * 250, "{i}");
            break rewrites;
        }
        assert!(Instant::now() < deadline, "no automatic rewrite: {i}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // Inside MULTI it is scheduled, then run by the cron.
    q(&mut c, &["MULTI"]);
    q(&mut c, &["BGREWRITEAOF"]);
    assert_eq!(
        q(&mut c, &["EXEC"]),
        V::Array(vec![V::SimpleString(
            "Background append only file rewriting scheduled".into()
        )])
    );
    wait_rewrite(&mut c);
    assert_eq!(
        info_value(&c.info_text("persistence"), "aof_rewrites").unwrap(),
        (automatic + 1).to_string()
    );
    assert_eq!(q(&mut c, &["GET", "same"]), bulk(&format!("{v}199")));
    // Off: BGREWRITEAOF still writes a base (and no incremental file).
    q(&mut c, &["CONFIG", "SET", "appendonly", "no"]);
    let i = c.info_text("persistence");
    assert_eq!(info_value(&i, "aof_enabled").unwrap(), "0");
    assert!(!i.contains("aof_current_size"));
    q(&mut c, &["BGREWRITEAOF"]);
    wait_rewrite(&mut c);
    let files = listed(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].1, "b");
}

#[test]
fn rewrite_under_concurrent_transactions_is_a_consistent_cut() {
    let dir = fresh_dir("aof-cut");
    let s = tern_in(&dir, &["--threads", "2"]);
    let _ = loaded(&s);
    let stop = Arc::new(AtomicBool::new(false));
    let mut ws = Vec::new();
    for t in 0..3 {
        let (url, stop) = (s.url(), stop.clone());
        ws.push(std::thread::spawn(move || {
            let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                round += 1;
                let j = round % 50;
                let _: () = redis::pipe()
                    .atomic()
                    .cmd("SET")
                    .arg(format!("a{t}:{j}"))
                    .arg(round)
                    .ignore()
                    .cmd("SET")
                    .arg(format!("b{t}:{j}"))
                    .arg(round)
                    .ignore()
                    .cmd("INCR")
                    .arg(format!("n{t}"))
                    .ignore()
                    .query(&mut c)
                    .unwrap();
            }
            round
        }));
    }
    let mut c = s.conn();
    for _ in 0..5 {
        q(&mut c, &["BGREWRITEAOF"]);
        wait_rewrite(&mut c);
    }
    stop.store(true, Ordering::Relaxed);
    let rounds: Vec<u64> = ws.into_iter().map(|w| w.join().unwrap()).collect();
    drop(c);
    drop(s);
    let s = tern_in(&dir, &[]);
    let mut c = loaded(&s);
    for (t, r) in rounds.iter().enumerate() {
        assert_eq!(q(&mut c, &["GET", &format!("n{t}")]), bulk(&r.to_string()));
        for j in 0..50 {
            let a = q(&mut c, &["GET", &format!("a{t}:{j}")]);
            let b = q(&mut c, &["GET", &format!("b{t}:{j}")]);
            assert_eq!(a, b, "pair {t}:{j}");
        }
    }
}

/// redis-server 7.0 (`appendonly yes`, `aof-use-rdb-preamble no`) writes an AOF directory that
/// tern loads, and the other way round.
#[test]
fn aof_directories_move_between_redis_and_tern() {
    let rdir = fresh_dir("aof-from-redis");
    let Some(r) = Server::redis(&[
        "--dir",
        rdir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        "no",
        "--appendfsync",
        "always",
    ]) else {
        eprintln!("redis-server not installed: skipped");
        return;
    };
    let mut rc = r.conn();
    fill(&mut rc);
    q(&mut rc, &["BGREWRITEAOF"]);
    std::thread::sleep(Duration::from_millis(500));
    q(&mut rc, &["SET", "after-rewrite", "1"]);
    q(&mut rc, &["EXPIRE", "after-rewrite", "1000"]);
    q(&mut rc, &["SPOP", "set:ht"]);
    let expected = state(&mut rc);
    drop(rc);
    drop(r);
    let t = tern_in(&rdir, &[]);
    let mut tc = loaded(&t);
    assert_eq!(state(&mut tc), expected, "tern loading redis-server's AOF");
    drop(tc);
    drop(t);

    for preamble in ["no", "yes"] {
        let tdir = fresh_dir(&format!("aof-from-tern-{preamble}"));
        let expected = {
            let t = tern_in(&tdir, &["--aof-use-rdb-preamble", preamble]);
            let mut tc = loaded(&t);
            fill(&mut tc);
            q(&mut tc, &["BGREWRITEAOF"]);
            wait_rewrite(&mut tc);
            q(&mut tc, &["SET", "after-rewrite", "1", "EX", "1000"]);
            q(&mut tc, &["SPOP", "set:ht", "3"]);
            q(&mut tc, &["INCRBYFLOAT", "fl", "0.5"]);
            state(&mut tc)
        };
        let r = Server::redis(&["--dir", tdir.to_str().unwrap(), "--appendonly", "yes"]).unwrap();
        let mut rc = loaded(&r);
        assert_eq!(
            state(&mut rc),
            expected,
            "redis-server loading tern's AOF (preamble {preamble})"
        );
    }
}

fn waitaof(c: &mut redis::Connection, args: &[&str]) -> Vec<i64> {
    let mut a = vec!["WAITAOF"];
    a.extend_from_slice(args);
    cmd(&a).query(c).unwrap()
}

#[test]
fn waitaof_counts_the_local_fsync_of_the_clients_writes() {
    let dir = fresh_dir("aof-waitaof");
    let s = tern_in(&dir, &["--appendfsync", "no"]);
    let mut c = loaded(&s);
    // No write yet: nothing to wait for.
    assert_eq!(waitaof(&mut c, &["1", "0", "0"]), [1, 0]);
    // appendfsync no never fsyncs: the wait ends by its timeout with 0 local copies.
    q(&mut c, &["INCR", "foo"]);
    let t = Instant::now();
    assert_eq!(waitaof(&mut c, &["1", "0", "50"]), [0, 0]);
    assert!(t.elapsed() >= Duration::from_millis(45));
    // everysec: the writer's next fsync releases it; always: fsynced before the reply.
    q(&mut c, &["CONFIG", "SET", "appendfsync", "everysec"]);
    q(&mut c, &["INCR", "foo"]);
    assert_eq!(waitaof(&mut c, &["1", "0", "0"]), [1, 0]);
    q(&mut c, &["CONFIG", "SET", "appendfsync", "always"]);
    q(&mut c, &["INCR", "foo"]);
    assert_eq!(waitaof(&mut c, &["1", "0", "0"]), [1, 0]);
    // No replica ever acknowledges: the timeout answers, or MULTI at once.
    assert_eq!(waitaof(&mut c, &["0", "1", "30"]), [1, 0]);
    let r: (i64, Vec<i64>) = redis::pipe()
        .atomic()
        .cmd("INCR")
        .arg("foo")
        .cmd("WAITAOF")
        .arg(0)
        .arg(1)
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(r.1, [1, 0]);
    // Argument errors as Redis words them.
    assert_eq!(
        err(&mut c, &["WAITAOF", "2", "0", "0"]),
        "ERR value is out of range, value must between 0 and 1"
    );
    assert_eq!(
        err(&mut c, &["WAITAOF", "0", "-1", "0"]),
        "ERR value is out of range, must be positive"
    );
    assert_eq!(
        err(&mut c, &["WAITAOF", "0", "0", "-1"]),
        "ERR timeout is negative"
    );
    // A client blocked for its local fsync gets an error when AOF is turned off.
    q(&mut c, &["CONFIG", "SET", "appendfsync", "no"]);
    let mut w = s.conn();
    q(&mut w, &["INCR", "foo"]);
    let waiter = std::thread::spawn(move || err(&mut w, &["WAITAOF", "1", "0", "0"]));
    wait_blocked(&mut c, 1); // WAITAOF blocks
    q(&mut c, &["CONFIG", "SET", "appendonly", "no"]);
    assert_eq!(
        waiter.join().unwrap(),
        "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."
    );
    assert_eq!(
        err(&mut c, &["WAITAOF", "1", "0", "0"]),
        "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."
    );
    assert_eq!(waitaof(&mut c, &["0", "0", "0"]), [0, 0]);
}

/// With `always`, a worker wakes the AOF writer when it goes idle (or a waiting reply's relay
/// does after 1 ms). Writes on a worker kept busy by another client's endless pipeline are
/// still made durable and answered.
#[test]
fn always_answers_writes_while_the_worker_never_idles() {
    use std::io::{Read, Write};
    let dir = fresh_dir("aof-busy-worker");
    let s = tern_in(&dir, &["--threads", "1"]);
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let (port, stop) = (s.port, stop.clone());
        std::thread::spawn(move || {
            let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            let batch = b"PING\r\n".repeat(2000);
            let mut sink = vec![0u8; 1 << 16];
            c.set_nonblocking(true).unwrap();
            while !stop.load(Ordering::Relaxed) {
                // Keep the server's input full: write what fits, drain what came back.
                let _ = c.write(&batch);
                while let Ok(n) = c.read(&mut sink) {
                    if n == 0 {
                        break;
                    }
                }
            }
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    let mut c = s.conn();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for i in 0..50 {
        assert_eq!(q(&mut c, &["SET", "k", &i.to_string()]), V::Okay);
    }
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
    assert!(incr_commands(&dir)
        .iter()
        .any(|cmd| cmd == &["SET", "k", "49"]));
}

/// The LD_PRELOAD shim that makes every fsync slower (crate tern-fsync-delay), built beside
/// the server by `cargo test --workspace`.
fn fsync_delay_shim() -> std::path::PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_tern-server"));
    let shim = bin.with_file_name("libtern_fsync_delay.so");
    assert!(
        shim.exists(),
        "{} missing: build it with `cargo build --release -p tern-fsync-delay` (make test does)",
        shim.display()
    );
    shim
}

/// Under `always` fsyncs overlap (`aof_fsync`): a write made while another client's fsync is
/// in flight must not be answered when that fsync ends, but only after one that began after
/// it. With every fsync 400 ms slow, a reply can never come sooner than 400 ms after its
/// write was sent, and a GET that shows the value must wait as long as the write did.
#[test]
fn always_replies_wait_for_an_fsync_that_began_after_their_write() {
    const DELAY: Duration = Duration::from_millis(400);
    let dir = fresh_dir("aof-overlapping-fsyncs");
    let shim = fsync_delay_shim();
    let s = tern_in_env(
        &dir,
        &["--threads", "2"],
        &[
            ("LD_PRELOAD", shim.to_str().unwrap()),
            ("FSYNC_DELAY_US", &DELAY.as_micros().to_string()),
        ],
    );
    // Its start-up writes the AOF base (fsyncs included) before it serves commands.
    drop(loaded(&s));
    // One command on its own connection, sent `after` from now: (sent, answered, reply).
    let timed = |args: Vec<String>, after: Duration| {
        let url = s.url();
        std::thread::spawn(move || {
            let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
            std::thread::sleep(after);
            let sent = Instant::now();
            let v: V = redis::cmd(&args[0]).arg(&args[1..]).query(&mut c).unwrap();
            (sent, Instant::now(), v)
        })
    };
    let cmd = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    for round in 0..3 {
        let (ka, kb) = (format!("a{round}"), format!("b{round}"));
        let first = timed(cmd(&["SET", &ka, "1"]), Duration::ZERO);
        let second = timed(cmd(&["SET", &kb, "1"]), Duration::from_millis(150));
        let reader = timed(cmd(&["GET", &kb]), Duration::from_millis(250));
        let mut second_sent = None;
        for (what, h) in [("first SET", first), ("second SET", second)] {
            let (sent, answered, v) = h.join().unwrap();
            assert_eq!(v, V::Okay, "{what}");
            assert!(
                answered - sent >= DELAY,
                "round {round}: {what} answered after {:?}, before an fsync begun after it could end",
                answered - sent
            );
            second_sent = Some(sent);
        }
        let (_, answered, v) = reader.join().unwrap();
        if v != V::Nil {
            // It shows the second SET, which cannot be durable sooner than DELAY after it was
            // sent (the GET may have been sent later than planned on a loaded machine).
            let since = answered - second_sent.unwrap();
            assert!(
                since >= DELAY,
                "round {round}: a GET showed the value {since:?} after the SET was sent, before it could be durable"
            );
        }
    }
}
