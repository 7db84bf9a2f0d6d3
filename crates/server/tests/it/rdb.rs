//! RDB files: redis-server 7.0 writes -> tern loads, tern writes -> redis-server loads (every
//! type and encoding, several databases, TTLs, functions); consistent cut under MULTI/EXEC
//! writes during BGSAVE; corrupt and truncated files refused without being touched.
use crate::common::*;
use crate::persist_data::*;
use redis::Value as V;
use std::time::{Duration, Instant};

#[test]
fn redis_writes_tern_loads() {
    let dir = fresh_dir("rdb-r2t");
    let d = dir.to_str().unwrap();
    let Some(redis) = Server::redis(&["--dir", d, "--dbfilename", "r.rdb"]) else {
        return;
    };
    let mut r = redis.conn();
    fill_all(&mut r);
    assert_eq!(q(&mut r, &["SAVE"]), V::Okay);
    let tern = Server::tern(&["--dir", d, "--dbfilename", "r.rdb"]);
    let mut t = loaded(&tern);
    compare(&mut r, &mut t);
    let info = match q(&mut t, &["INFO", "persistence"]) {
        V::BulkString(b) => String::from_utf8(b).unwrap(),
        V::VerbatimString { text, .. } => text,
        v => panic!("{v:?}"),
    };
    assert!(info.contains("rdb_last_load_keys_loaded:"), "{info}");
    assert!(!info.contains("rdb_last_load_keys_loaded:0\r"), "{info}");
}

#[test]
fn tern_writes_redis_loads() {
    let dir = fresh_dir("rdb-t2r");
    let d = dir.to_str().unwrap();
    let tern = Server::tern(&[
        "--dir",
        d,
        "--dbfilename",
        "t.rdb",
        "--enable-debug-command",
        "yes",
    ]);
    let mut t = tern.conn();
    fill_all(&mut t);
    assert_eq!(q(&mut t, &["SAVE"]), V::Okay);
    let Some(redis) = Server::redis(&["--dir", d, "--dbfilename", "t.rdb"]) else {
        return;
    };
    let mut r = redis.conn();
    compare(&mut t, &mut r);
    // without compression and checksum too
    q(&mut t, &["CONFIG", "SET", "rdbcompression", "no"]);
    q(&mut t, &["SAVE"]);
    drop(r);
    drop(redis);
    let redis = Server::redis(&["--dir", d, "--dbfilename", "t.rdb"]).unwrap();
    let mut r = redis.conn();
    compare(&mut t, &mut r);
    // and tern reloads its own file (DEBUG RELOAD: save, flush, load)
    q(&mut t, &["SET", "after", "reload"]);
    assert_eq!(q(&mut t, &["DEBUG", "RELOAD"]), V::Okay);
    assert_eq!(q(&mut t, &["GET", "after"]), bulk("reload"));
    q(&mut t, &["DEL", "after"]);
    compare(&mut t, &mut r);
}

#[test]
fn bgsave_under_multi_exec_writes_is_a_consistent_cut() {
    let dir = fresh_dir("rdb-cut");
    let d = dir.to_str().unwrap();
    let tern = Server::tern(&["--dir", d, "--dbfilename", "cut.rdb"]);
    let mut c = tern.conn();
    let pairs = 2000;
    for i in 0..pairs {
        q(
            &mut c,
            &["MSET", &format!("a{i}"), "0", &format!("b{i}"), "0"],
        );
        // some bulk so the save takes a while
        q(&mut c, &["SET", &format!("pad{i}"), &"p".repeat(2000)]);
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let (mut c, stop) = (tern.conn(), stop.clone());
            std::thread::spawn(move || {
                let mut round = 1u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let i = (round * 7919 + w * 13) % pairs;
                    let v = format!("{w}-{round}");
                    let mut p = redis::pipe();
                    p.atomic()
                        .cmd("SET")
                        .arg(format!("a{i}"))
                        .arg(&v)
                        .cmd("SET")
                        .arg(format!("b{i}"))
                        .arg(&v);
                    let _: () = p.query(&mut c).unwrap();
                    round += 1;
                }
                round
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        q(&mut c, &["BGSAVE"]),
        V::SimpleString("Background saving started".into())
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let V::BulkString(info) = q(&mut c, &["INFO", "persistence"]) else {
            panic!()
        };
        let info = String::from_utf8(info).unwrap();
        if info.contains("rdb_bgsave_in_progress:0") && info.contains("rdb_saves:1") {
            assert!(info.contains("rdb_last_bgsave_status:ok"));
            break;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    assert!(
        rounds > 10,
        "writers made progress during the save ({rounds})"
    );
    let reloaded = Server::tern(&["--dir", d, "--dbfilename", "cut.rdb"]);
    let mut l = loaded(&reloaded);
    let mut changed = 0;
    for i in 0..pairs {
        let a: String = redis::cmd("GET")
            .arg(format!("a{i}"))
            .query(&mut l)
            .unwrap();
        let b: String = redis::cmd("GET")
            .arg(format!("b{i}"))
            .query(&mut l)
            .unwrap();
        assert_eq!(a, b, "pair {i}");
        if a != "0" {
            changed += 1;
        }
    }
    let _ = changed;
    assert_eq!(q(&mut l, &["DBSIZE"]), V::Int(3 * pairs as i64));
}

fn start_fails(dir: &str, file: &str) -> String {
    let port = free_port();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--dir",
            dir,
            "--dbfilename",
            file,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success(), "tern must refuse to start on {file}");
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn corrupt_and_truncated_files_are_refused_and_kept() {
    let dir = fresh_dir("rdb-bad");
    let d = dir.to_str().unwrap();
    {
        let tern = Server::tern(&["--dir", d, "--dbfilename", "good.rdb"]);
        let mut t = tern.conn();
        fill_all(&mut t);
        q(&mut t, &["SAVE"]);
    }
    let good = std::fs::read(dir.join("good.rdb")).unwrap();
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    std::fs::write(dir.join("flipped.rdb"), &flipped).unwrap();
    std::fs::write(dir.join("short.rdb"), &good[..good.len() - 20]).unwrap();
    std::fs::write(dir.join("garbage.rdb"), b"this is not an rdb file at all").unwrap();
    for f in ["flipped.rdb", "short.rdb", "garbage.rdb"] {
        let before = std::fs::read(dir.join(f)).unwrap();
        let log = start_fails(d, f);
        assert!(log.contains(f), "{f}: message names the file: {log}");
        assert!(
            log.contains("offset"),
            "{f}: message names the offset: {log}"
        );
        assert_eq!(std::fs::read(dir.join(f)).unwrap(), before, "{f} untouched");
    }
}

#[test]
fn failed_bgsave_stops_writes_with_misconf() {
    let dir = fresh_dir("rdb-misconf");
    let d = dir.to_str().unwrap();
    // the target name is a directory: the final rename fails
    std::fs::create_dir_all(dir.join("blocked.rdb")).unwrap();
    let tern = Server::tern(&[
        "--dir",
        d,
        "--dbfilename",
        "none.rdb",
        "--enable-protected-configs",
        "yes",
    ]);
    let mut c = tern.conn();
    q(&mut c, &["CONFIG", "SET", "dbfilename", "blocked.rdb"]);
    q(&mut c, &["CONFIG", "SET", "save", "3600 1"]);
    q(&mut c, &["SET", "k", "v"]);
    let before = q(&mut c, &["LASTSAVE"]);
    assert_eq!(
        q(&mut c, &["BGSAVE"]),
        V::SimpleString("Background saving started".into())
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let V::BulkString(info) = q(&mut c, &["INFO", "persistence"]) else {
            panic!()
        };
        let info = String::from_utf8(info).unwrap();
        if info.contains("rdb_last_bgsave_status:err") {
            break;
        }
        assert!(Instant::now() < deadline, "{info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = err(&mut c, &["SET", "k", "v2"]);
    assert!(
        e.starts_with("MISCONF Redis is configured to save RDB snapshots"),
        "{e}"
    );
    assert!(err(&mut c, &["PING"]).starts_with("MISCONF"));
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("v"));
    assert_eq!(q(&mut c, &["LASTSAVE"]), before);
    q(
        &mut c,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"],
    );
    assert_eq!(q(&mut c, &["SET", "k", "v3"]), V::Okay);
    // a successful SAVE clears the error
    std::fs::remove_dir_all(dir.join("blocked.rdb")).unwrap();
    q(
        &mut c,
        &["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"],
    );
    assert_eq!(q(&mut c, &["SAVE"]), V::Okay);
    assert_eq!(q(&mut c, &["SET", "k", "v4"]), V::Okay);
    assert_eq!(err(&mut c, &["BGSAVE", "x"]), "ERR syntax error");
}

fn wait_exit(s: &Server) {
    let pid = s.pid();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim().chars().next();
        if stat.is_empty() || state == Some('Z') {
            return;
        }
        assert!(Instant::now() < deadline, "server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn shutdown_and_sigterm_save_when_save_points_are_set() {
    let dir = fresh_dir("rdb-shutdown");
    let d = dir.to_str().unwrap();
    let s = Server::tern(&["--dir", d, "--dbfilename", "a.rdb", "--save", "3600 1"]);
    let mut c = s.conn();
    q(&mut c, &["SET", "k", "saved-by-shutdown"]);
    let _ = cmd(&["SHUTDOWN"]).query::<V>(&mut c);
    wait_exit(&s);
    let s = Server::tern(&["--dir", d, "--dbfilename", "a.rdb", "--save", "3600 1"]);
    let mut c = loaded(&s);
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("saved-by-shutdown"));
    q(&mut c, &["SET", "k", "saved-by-sigterm"]);
    s.signal(libc::SIGTERM);
    wait_exit(&s);
    let s = Server::tern(&["--dir", d, "--dbfilename", "a.rdb"]);
    let mut c = loaded(&s);
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("saved-by-sigterm"));
    // SHUTDOWN NOSAVE does not save
    q(&mut c, &["CONFIG", "SET", "save", "3600 1"]);
    q(&mut c, &["SET", "k", "lost"]);
    let _ = cmd(&["SHUTDOWN", "NOSAVE"]).query::<V>(&mut c);
    wait_exit(&s);
    let s = Server::tern(&["--dir", d, "--dbfilename", "a.rdb"]);
    let mut c = loaded(&s);
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("saved-by-sigterm"));
}

#[test]
fn rdb_key_save_delay_keeps_a_bgsave_running_without_stalling_clients() {
    let dir = fresh_dir("rdb-keydelay");
    let s = Server::tern(&["--dir", dir.to_str().unwrap()]);
    let mut c = s.conn();
    for i in 0..20 {
        q(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    // 20 keys × 150 ms: the save takes 3 s.
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "150000"]);
    assert_eq!(
        q(&mut c, &["BGSAVE"]),
        V::SimpleString("Background saving started".into())
    );
    let in_progress = |c: &mut redis::Connection| match q(c, &["INFO", "persistence"]) {
        V::BulkString(b) => String::from_utf8(b)
            .unwrap()
            .contains("rdb_bgsave_in_progress:1"),
        v => panic!("{v:?}"),
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(in_progress(&mut c));
    // Clients, writers of those very keys included, are served meanwhile.
    let t0 = Instant::now();
    for i in 0..20 {
        q(&mut c, &["SET", &format!("k{i}"), "new"]);
    }
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "writes waited for the delay"
    );
    assert!(in_progress(&mut c));
    // As Redis's child, the save keeps the delay it started with (back to 0 changes the
    // next save only); it ends on its own and holds the data of its start.
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    let t0 = Instant::now();
    while in_progress(&mut c) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the save did not end"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let t = Server::tern(&["--dir", dir.to_str().unwrap()]);
    let mut t = loaded(&t);
    assert_eq!(q(&mut t, &["GET", "k7"]), V::BulkString(b"v".to_vec()));
}

#[test]
fn flushall_saves_with_save_points_and_gives_up_a_running_bgsave() {
    // Without save points FLUSHALL leaves the changes counter alone.
    let dir = fresh_dir("rdb-flushall-nosave");
    let s = Server::tern(&["--dir", dir.to_str().unwrap()]);
    let mut c = s.conn();
    q(&mut c, &["SET", "key", "value"]);
    q(&mut c, &["FLUSHALL"]);
    assert!(
        info_field(&mut c, "persistence", "rdb_changes_since_last_save")
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert!(!dir.join("dump.rdb").exists());
    drop(s);

    // With save points it saves the empty dataset at once, as Redis.
    let dir = fresh_dir("rdb-flushall-save");
    let d = dir.to_str().unwrap();
    let s = Server::tern(&["--dir", d, "--save", "3600 1 300 100 60 10000"]);
    let mut c = s.conn();
    q(&mut c, &["SET", "key", "value"]);
    q(&mut c, &["SAVE"]);
    q(&mut c, &["SET", "key2", "value"]);
    q(&mut c, &["FLUSHALL"]);
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_changes_since_last_save"),
        "0"
    );
    // A BGSAVE that would take 40 s (rdb-key-save-delay) is given up by FLUSHALL: its
    // data is gone, so it must not later overwrite the empty dump.
    for i in 0..40 {
        q(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
    q(&mut c, &["BGSAVE"]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_bgsave_in_progress"),
        "1"
    );
    let t0 = Instant::now();
    q(&mut c, &["FLUSHALL"]);
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "FLUSHALL waited for the BGSAVE"
    );
    let t0 = Instant::now();
    while info_field(&mut c, "persistence", "rdb_bgsave_in_progress") == "1" {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "BGSAVE not given up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Killed on purpose, not failed.
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_changes_since_last_save"),
        "0"
    );
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    q(&mut c, &["SET", "after", "1"]);
    drop(s);
    // The dump is FLUSHALL's empty one.
    let s = Server::tern(&["--dir", d]);
    let mut c = loaded(&s);
    assert_eq!(q(&mut c, &["DBSIZE"]), int(0));
}
