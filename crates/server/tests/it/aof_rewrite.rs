//! AOF rewrites as Redis's own suite sees them (integration/aof-multi-part, unit/aofrw): the
//! writer process exists when BGREWRITEAOF replies, killing it fails the rewrite and leaves
//! one more incremental file, `appendonly no` gives a running rewrite up at once, history
//! files go when auto gc is turned back on, and a failed first rewrite drops its temp file.

use crate::common::*;
use crate::persist_data::loaded;
use redis::Value as V;
use std::path::Path;
use std::time::Duration;

/// tern in `dir` logging to `dir/log.txt`, with `extra` options.
fn tern_in(dir: &Path, extra: &[&str]) -> Server {
    let log = dir.join("log.txt");
    let mut a = vec![
        "--dir",
        dir.to_str().unwrap(),
        "--logfile",
        log.to_str().unwrap(),
        "--enable-debug-command",
        "yes",
    ];
    a.extend_from_slice(extra);
    Server::tern(&a)
}

fn log_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("log.txt")).unwrap_or_default()
}

#[test]
fn the_writer_process_runs_when_bgrewriteaof_replies_and_killing_it_fails_the_rewrite() {
    let dir = fresh_dir("aof_rewrite-kill");
    let s = tern_in(
        &dir,
        &["--appendonly", "yes", "--aof-use-rdb-preamble", "yes"],
    );
    let mut c = s.conn();
    wait_rewrite(&mut c);
    for i in 0..20 {
        q(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "10000000"]);
    let forks = info_field(&mut c, "all", "total_forks")
        .parse::<u64>()
        .unwrap();
    for round in 0..3u64 {
        assert_eq!(
            q(&mut c, &["BGREWRITEAOF"]),
            V::SimpleString("Background append only file rewriting started".into())
        );
        // Nothing waited for: as after Redis's fork, all of it is visible at once.
        let kids = children_of(s.pid());
        assert_eq!(kids.len(), 1, "one writer process: {kids:?}");
        assert_eq!(info_field(&mut c, "all", "aof_rewrite_in_progress"), "1");
        assert_eq!(
            info_field(&mut c, "all", "total_forks")
                .parse::<u64>()
                .unwrap(),
            forks + round + 1
        );
        assert!(
            info_field(&mut c, "all", "current_save_keys_total")
                .parse::<u64>()
                .unwrap()
                >= 20
        );
        // The new incremental file is listed before the rewrite replies.
        let incrs = listed(&dir).iter().filter(|(_, t)| t == "i").count() as u64;
        assert_eq!(incrs, round + 2);
        let temp = dir.join(format!("temp-rewriteaof-bg-{}.aof", kids[0]));
        wait_for("the temp file", Duration::from_secs(10), || temp.exists());
        send_signal(kids[0], libc::SIGKILL);
        wait_rewrite(&mut c);
        assert!(!temp.exists(), "the dead writer's temp file is removed");
        assert_eq!(
            info_field(&mut c, "all", "aof_last_bgrewrite_status"),
            "err"
        );
    }
    assert!(log_text(&dir).contains("Background AOF rewrite terminated by signal 9"));
    // The delay a rewrite started with stays its own (as the config of Redis's child):
    // setting it back to 0 speeds up the next rewrite, which then succeeds.
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    q(&mut c, &["BGREWRITEAOF"]);
    wait_rewrite(&mut c);
    assert_eq!(info_field(&mut c, "all", "aof_last_bgrewrite_status"), "ok");
    let l = listed(&dir);
    assert_eq!(l.len(), 2, "{l:?}");
    let digest = q(&mut c, &["DEBUG", "DIGEST"]);
    q(&mut c, &["DEBUG", "LOADAOF"]);
    assert_eq!(q(&mut c, &["DEBUG", "DIGEST"]), digest);
    // What was loaded is what the files hold.
    assert_eq!(
        info_field(&mut c, "all", "rdb_changes_since_last_save"),
        "0"
    );
}

#[test]
fn turning_the_aof_off_kills_the_running_rewrite_at_once() {
    let dir = fresh_dir("aof_rewrite-off");
    let s = tern_in(&dir, &["--appendonly", "yes"]);
    let mut c = s.conn();
    wait_rewrite(&mut c);
    q(&mut c, &["SET", "k", "v"]);
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "10000000"]);
    q(&mut c, &["BGREWRITEAOF"]);
    let kids = children_of(s.pid());
    assert_eq!(kids.len(), 1);
    assert_eq!(q(&mut c, &["CONFIG", "SET", "appendonly", "no"]), V::Okay);
    // Nothing of it is left when CONFIG SET replies.
    assert_eq!(info_field(&mut c, "all", "aof_rewrite_in_progress"), "0");
    assert!(children_of(s.pid()).is_empty());
    assert!(!dir
        .join(format!("temp-rewriteaof-bg-{}.aof", kids[0]))
        .exists());
    assert!(log_text(&dir).contains(&format!("Killing running AOF rewrite child: {}", kids[0])));
    // Given up on purpose: not a failure.
    assert_eq!(info_field(&mut c, "all", "aof_last_bgrewrite_status"), "ok");
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    assert_eq!(
        q(&mut c, &["BGREWRITEAOF"]),
        V::SimpleString("Background append only file rewriting started".into())
    );
    wait_rewrite(&mut c);
}

#[test]
fn history_files_go_when_auto_gc_is_turned_back_on() {
    let dir = fresh_dir("aof_rewrite-gc");
    let s = tern_in(
        &dir,
        &["--appendonly", "yes", "--aof-disable-auto-gc", "yes"],
    );
    let mut c = s.conn();
    wait_rewrite(&mut c);
    for _ in 0..2 {
        q(&mut c, &["SET", "k", "v"]);
        q(&mut c, &["BGREWRITEAOF"]);
        wait_rewrite(&mut c);
    }
    let history: Vec<String> = listed(&dir)
        .into_iter()
        .filter(|(_, t)| t == "h")
        .map(|(f, _)| f)
        .collect();
    assert_eq!(history.len(), 4, "two bases and two incremental files");
    for f in &history {
        assert!(dir.join("appendonlydir").join(f).exists());
    }
    q(&mut c, &["CONFIG", "SET", "aof-disable-auto-gc", "no"]);
    // At once, as Redis: the manifest names no history and the files are gone.
    let l = listed(&dir);
    assert!(l.iter().all(|(_, t)| t != "h"), "{l:?}");
    for f in &history {
        assert!(!dir.join("appendonlydir").join(f).exists());
    }
}

#[test]
fn a_failed_first_rewrite_drops_its_temp_incr_file_and_is_retried() {
    let dir = fresh_dir("aof_rewrite-first");
    let s = tern_in(&dir, &["--appendonly", "no"]);
    let mut c = s.conn();
    for i in 0..10 {
        q(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "10000000"]);
    q(&mut c, &["CONFIG", "SET", "appendonly", "yes"]);
    assert_eq!(info_field(&mut c, "all", "aof_rewrite_in_progress"), "1");
    let temp_incr = dir.join("appendonlydir/temp-appendonly.aof.incr");
    assert!(temp_incr.exists());
    let kids = children_of(s.pid());
    assert_eq!(kids.len(), 1);
    send_signal(kids[0], libc::SIGKILL);
    wait_for("the temp incr file to go", Duration::from_secs(10), || {
        log_text(&dir)
            .contains("Removing the temp incr aof file temp-appendonly.aof.incr in the background")
    });
    assert!(!dir.join("appendonlydir/appendonly.aof.manifest").exists());
    // Retried from the cron; with the delay back to 0 the next attempt succeeds.
    q(&mut c, &["SET", "later", "1"]);
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    // The retry may start and, with no delay, finish between two polls.
    wait_for("the retry", Duration::from_secs(10), || {
        info_field(&mut c, "all", "aof_rewrite_in_progress") == "1"
            || info_field(&mut c, "all", "aof_rewrites") != "0"
    });
    for k in children_of(s.pid()) {
        send_signal(k, libc::SIGKILL); // the retry started while the delay was still set
    }
    wait_for(
        "a successful first rewrite",
        Duration::from_secs(20),
        || {
            info_field(&mut c, "all", "aof_rewrites")
                .parse::<u64>()
                .unwrap_or(0)
                >= 1
                && info_field(&mut c, "all", "aof_rewrite_in_progress") == "0"
        },
    );
    assert_eq!(
        listed(&dir),
        vec![
            ("appendonly.aof.1.base.rdb".to_string(), "b".to_string()),
            ("appendonly.aof.1.incr.aof".to_string(), "i".to_string()),
        ]
    );
    q(&mut c, &["SET", "after", "2"]);
    let digest = q(&mut c, &["DEBUG", "DIGEST"]);
    q(&mut c, &["DEBUG", "LOADAOF"]);
    assert_eq!(q(&mut c, &["DEBUG", "DIGEST"]), digest);
    assert_eq!(q(&mut c, &["GET", "later"]), bulk("1"));
}

#[test]
fn ready_to_accept_is_logged_once_the_aof_is_loaded() {
    let dir = fresh_dir("aof_rewrite-ready");
    {
        let s = tern_in(&dir, &["--appendonly", "yes"]);
        // Reachable before it loaded: a command sent too early gets -LOADING.
        let mut c = loaded(&s);
        q(&mut c, &["SET", "k", "v"]);
    }
    let _ = std::fs::remove_file(dir.join("log.txt"));
    let s = tern_in(&dir, &["--appendonly", "yes"]);
    wait_for("the ready line", Duration::from_secs(10), || {
        log_text(&dir).contains("Ready to accept connections")
    });
    let log = log_text(&dir);
    let loaded = log.find("DB loaded from append only file").expect(&log);
    let ready = log.find("Ready to accept connections").unwrap();
    assert!(loaded < ready, "{log}");
    let mut c = s.conn();
    assert_eq!(q(&mut c, &["GET", "k"]), bulk("v"));
}

fn resp(args: &[&str]) -> String {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    out
}

#[test]
fn a_slow_script_replayed_by_debug_loadaof_answers_loading() {
    // An AOF holding a script verbatim (as older servers wrote them) that runs past
    // lua-time-limit when replayed: other clients get -LOADING, not -BUSY, as from Redis.
    let dir = fresh_dir("aof_rewrite-slowscript");
    let aof = dir.join("appendonlydir");
    std::fs::create_dir_all(&aof).unwrap();
    std::fs::write(
        aof.join("appendonly.aof.manifest"),
        "file appendonly.aof.1.incr.aof seq 1 type i\n",
    )
    .unwrap();
    let script =
        "redis.call('set',KEYS[1],'y') for i=1,3000000 do redis.call('ping') end return 'ok'";
    std::fs::write(
        aof.join("appendonly.aof.1.incr.aof"),
        resp(&["select", "9"]) + &resp(&["eval", script, "1", "x"]),
    )
    .unwrap();
    let s = tern_in(
        &dir,
        &[
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            "no",
            "--lua-time-limit",
            "1",
        ],
    );
    let mut c = s.conn();
    wait_for("the start-up load", Duration::from_secs(60), || {
        run(&mut c, &[b"PING"]).is_ok()
    });
    let mut loader = s.conn();
    let t = std::thread::spawn(move || q(&mut loader, &["DEBUG", "LOADAOF"]));
    let mut saw_loading = false;
    while !t.is_finished() {
        if let Err(e) = run(&mut c, &[b"PING"]) {
            assert_eq!(e.kind(), redis::ErrorKind::BusyLoadingError, "{e}");
            saw_loading = true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(t.join().unwrap(), V::Okay);
    assert!(saw_loading, "PING during the replay got no -LOADING");
    q(&mut c, &["SELECT", "9"]);
    assert_eq!(q(&mut c, &["GET", "x"]), bulk("y"));
}
