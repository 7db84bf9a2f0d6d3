//! The server's log and crash report as Redis's tooling reads them, and the background save's
//! writer process (its pid in the temp file's name; killing it fails the save).
use crate::common::*;
use redis::Value as V;
use std::time::Duration;

#[test]
fn debug_segfault_logs_a_crash_report_and_kills_the_server() {
    let dir = fresh_dir("logging-segv");
    let log = dir.join("tern.log");
    let s = Server::tern(&[
        "--enable-debug-command",
        "yes",
        "--logfile",
        log.to_str().unwrap(),
    ]);
    let mut c = s.conn();
    q(&mut c, &["DEBUG", "LOG", "marker-before-crash"]);
    let _ = run(&mut c, &[b"DEBUG", b"SEGFAULT"]);
    wait_for("the whole crash report", Duration::from_secs(30), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("=== REDIS BUG REPORT END"))
    });
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("DEBUG LOG: marker-before-crash"), "{text}");
    assert!(text.contains("=== REDIS BUG REPORT START"), "{text}");
    assert!(text.contains("crashed by signal: 11"), "{text}");
    // The trace is symbolized (it once overflowed the thread's small signal stack and the
    // report stopped before it).
    assert!(text.contains("------ STACK TRACE ------"), "{text}");
    assert!(text.contains("debug"), "{text}");
    // The process dies (of the signal, or of the report's 10 s alarm while the stack trace is
    // symbolized on a busy machine): the port no longer answers.
    wait_for("the server to die", Duration::from_secs(60), || {
        std::net::TcpStream::connect(("127.0.0.1", s.port)).is_err()
    });
}

#[test]
fn sigabrt_from_outside_names_the_sender() {
    let dir = fresh_dir("logging-abrt");
    let log = dir.join("tern.log");
    let s = Server::tern(&[
        "--enable-debug-command",
        "yes",
        "--logfile",
        log.to_str().unwrap(),
    ]);
    let mut c = s.conn();
    q(&mut c, &["PING"]);
    s.signal(libc::SIGABRT);
    wait_for("the crash report", Duration::from_secs(30), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("Crashed in thread"))
    });
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("crashed by signal: 6"), "{text}");
    assert!(
        text.contains(&format!("Killed by PID: {}", std::process::id())),
        "{text}"
    );
}

#[test]
fn killing_the_bgsave_writer_fails_the_save_and_holds_writes() {
    let dir = fresh_dir("logging-child");
    let s = Server::tern(&["--dir", dir.to_str().unwrap(), "--save", "900 1"]);
    let mut c = s.conn();
    for i in 0..50 {
        q(&mut c, &["SET", &format!("k{i}"), "v"]);
    }
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "10000000"]);
    q(&mut c, &["BGSAVE"]);
    let mut child = 0;
    wait_for("the writer process", Duration::from_secs(10), || {
        child = children_of(s.pid()).first().copied().unwrap_or(0);
        child != 0
    });
    let temp = dir.join(format!("temp-{child}.rdb"));
    wait_for("the temp file", Duration::from_secs(10), || temp.exists());
    send_signal(child, libc::SIGKILL);
    wait_for("the save to end", Duration::from_secs(10), || {
        info_field(&mut c, "persistence", "rdb_bgsave_in_progress") == "0"
    });
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_bgsave_status"),
        "err"
    );
    assert!(!temp.exists(), "the dead writer's temp file is removed");
    assert!(err(&mut c, &["SET", "x", "y"]).starts_with("MISCONF"));
    // Inside a script too.
    assert!(err(&mut c, &["EVAL", "return redis.call('set','x',1)", "0"]).contains("MISCONF"));
    assert_eq!(q(&mut c, &["GET", "k1"]), bulk("v"));
    // A save that succeeds lifts it.
    q(&mut c, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    q(&mut c, &["BGSAVE"]);
    wait_for("the second save", Duration::from_secs(20), || {
        info_field(&mut c, "persistence", "rdb_bgsave_in_progress") == "0"
            && info_field(&mut c, "persistence", "rdb_last_bgsave_status") == "ok"
    });
    assert_eq!(q(&mut c, &["SET", "x", "y"]), V::Okay);
    assert!(dir.join("dump.rdb").exists());
}

#[test]
fn expired_keys_are_saved_and_counted_as_expired_on_load() {
    let dir = fresh_dir("logging-expired");
    let s = Server::tern(&[
        "--enable-debug-command",
        "yes",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    let mut c = s.conn();
    q(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    q(&mut c, &["SET", "live", "v"]);
    for i in 0..10 {
        q(&mut c, &["SET", &format!("gone{i}"), "v", "PX", "10"]);
    }
    std::thread::sleep(Duration::from_millis(30));
    q(&mut c, &["SAVE"]);
    q(&mut c, &["DEBUG", "RELOAD", "NOSAVE"]);
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_load_keys_loaded"),
        "1"
    );
    assert_eq!(
        info_field(&mut c, "persistence", "rdb_last_load_keys_expired"),
        "10"
    );
}

const WATCHDOG: &str = "--- WATCHDOG TIMER EXPIRED ---";

#[test]
fn the_watchdog_reports_a_command_stuck_past_its_period_once() {
    let mut s = Server::tern(&["--enable-debug-command", "yes"]);
    let mut c = s.conn();
    q(&mut c, &["CONFIG", "SET", "watchdog-period", "200"]);
    assert_eq!(
        q(&mut c, &["CONFIG", "GET", "watchdog-period"]),
        arr(&["watchdog-period", "200"])
    );
    q(&mut c, &["SET", "k", "v"]);
    // One stretch of 1 s: one report, naming the thread, the command and its stack.
    assert_eq!(q(&mut c, &["DEBUG", "SLEEP", "1"]), ok());
    wait_until("the report", || s.log().contains("\n--------\n"));
    let log = s.log();
    assert_eq!(log.matches(WATCHDOG).count(), 1, "{log}");
    let report = &log[log.find(WATCHDOG).unwrap()..];
    assert!(report.contains("Thread tern-worker-"), "{report}");
    assert!(
        report
            .to_lowercase()
            .contains("(watchdog-period 200 ms): debug"),
        "{report}"
    );
    assert!(report.contains("------ STACK TRACE ------"), "{report}");
    // The interrupted sleep went on: DEBUG SLEEP still slept its second.
    let t = std::time::Instant::now();
    q(&mut c, &["DEBUG", "SLEEP", "0.5"]);
    assert!(t.elapsed() >= Duration::from_millis(450));
    wait_until("the second report", || {
        s.log().matches(WATCHDOG).count() == 2
    });
    // Short commands are never reported; a period of 0 turns the watchdog off.
    for _ in 0..100 {
        q(&mut c, &["GET", "k"]);
    }
    q(&mut c, &["CONFIG", "SET", "watchdog-period", "0"]);
    q(&mut c, &["DEBUG", "SLEEP", "0.5"]);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(s.log().matches(WATCHDOG).count(), 2, "{}", s.log());
    // Back on, a SIGALRM from outside still does what it does without a handler.
    q(&mut c, &["CONFIG", "SET", "watchdog-period", "200"]);
    std::thread::sleep(Duration::from_millis(200));
    s.signal(libc::SIGALRM);
    let status = s
        .wait_exit(Duration::from_secs(10))
        .expect("exit on SIGALRM");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGALRM));
}
