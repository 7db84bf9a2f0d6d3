//! The io_uring network path (`--io-backend io_uring`) against real clients: many
//! connections, long pipelines, big values both ways, slow readers, closes from either side,
//! blocking commands, pub/sub, transactions; and the `io-backend` setting itself (`auto`, the
//! fallback to epoll, the refusal to start when io_uring is asked for and unavailable).

use crate::common::{free_port, fresh_dir, info_value, wait_blocked, wait_until, Server};
use redis::Commands;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

const FORCE_FAIL: &str = "TERN_IO_URING_PROBE_FAIL";
const FORCE_COOPERATIVE: &str = "TERN_IO_URING_NO_DEFER";

fn uring(extra: &[&str]) -> Server {
    uring_env(extra, &[])
}

fn uring_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
    let mut args = vec!["--io-backend", "io_uring"];
    args.extend_from_slice(extra);
    let s = Server::tern_env(&args, env);
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut s.conn())
        .unwrap();
    assert_eq!(info_value(&info, "io_backend").as_deref(), Some("io_uring"));
    s
}

/// Read from `s` until `want` bytes came or the peer closed.
fn read_n(s: &mut TcpStream, want: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(want);
    let mut buf = vec![0u8; 64 * 1024];
    while out.len() < want {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    out
}

/// Does the server close `s` (EOF or reset) within a few seconds, whatever it sends first?
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

#[test]
fn many_connections_each_see_their_own_replies() {
    let s = uring(&["--threads", "2"]);
    let mut conns: Vec<redis::Connection> = (0..200).map(|_| s.conn()).collect();
    for round in 0..3 {
        for (i, c) in conns.iter_mut().enumerate() {
            let _: () = c.set(format!("k{i}"), format!("v{i}-{round}")).unwrap();
        }
        for (i, c) in conns.iter_mut().enumerate() {
            let v: String = c.get(format!("k{i}")).unwrap();
            assert_eq!(v, format!("v{i}-{round}"));
        }
    }
    let clients: String = redis::cmd("INFO")
        .arg("clients")
        .query(&mut conns[0])
        .unwrap();
    assert_eq!(
        info_value(&clients, "connected_clients").as_deref(),
        Some("200")
    );
}

/// Clients that each wait for every reply before the next request (and then send bursts of
/// 16) keep the worker going to sleep and being woken by their input: a wake-up lost between
/// the ring and the runtime shows as a client waiting for its reply past the read timeout.
fn clients_in_lockstep_are_all_answered(s: &Server) {
    const CLIENTS: usize = 50;
    const ROUNDS: usize = 400;
    let port = s.port;
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            std::thread::spawn(move || {
                let mut t = TcpStream::connect(("127.0.0.1", port)).unwrap();
                t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                t.set_nodelay(true).unwrap();
                let key = format!("lockstep:{c}");
                let incr = format!("*2\r\n$4\r\nINCR\r\n${}\r\n{key}\r\n", key.len());
                for depth in [1usize, 16] {
                    for round in 0..ROUNDS {
                        let before = if depth == 1 {
                            round
                        } else {
                            ROUNDS + round * 16
                        };
                        t.write_all(incr.repeat(depth).as_bytes()).unwrap();
                        let expect: String = (1..=depth)
                            .map(|i| format!(":{}\r\n", before + i))
                            .collect();
                        let got = read_n(&mut t, expect.len());
                        assert_eq!(
                            String::from_utf8_lossy(&got),
                            expect,
                            "client {c}, depth {depth}, round {round}: reply missing or wrong"
                        );
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn clients_in_lockstep_never_wait_for_a_lost_wake_up() {
    clients_in_lockstep_are_all_answered(&uring(&[]));
}

#[test]
fn without_deferred_task_running_completions_run_cooperatively() {
    let s = uring_env(&[], &[(FORCE_COOPERATIVE, "1")]);
    assert!(
        s.log().contains(&format!(
            "io_uring: no deferred task running (disabled by {FORCE_COOPERATIVE}): completions \
             run at the workers' system calls (COOP_TASKRUN)"
        )),
        "{}",
        s.log()
    );
    clients_in_lockstep_are_all_answered(&s);
}

#[test]
fn a_pipeline_of_thousands_of_commands_is_answered_in_order() {
    let s = uring(&[]);
    let mut raw = s.raw();
    let n = 20_000;
    let mut req = Vec::new();
    for _ in 0..n {
        req.extend_from_slice(b"*2\r\n$4\r\nINCR\r\n$7\r\ncounter\r\n*1\r\n$4\r\nPING\r\n");
    }
    // Written from another thread: the replies must be read meanwhile (a client that only
    // writes would fill both directions' buffers).
    let mut writer = raw.try_clone().unwrap();
    let w = std::thread::spawn(move || writer.write_all(&req).unwrap());
    let mut expect = Vec::new();
    for i in 1..=n {
        expect.extend_from_slice(format!(":{i}\r\n+PONG\r\n").as_bytes());
    }
    let got = read_n(&mut raw, expect.len());
    w.join().unwrap();
    assert!(
        got == expect,
        "replies differ ({} vs {} bytes)",
        got.len(),
        expect.len()
    );
}

#[test]
fn values_of_one_byte_and_ten_megabytes_go_both_ways() {
    let s = uring(&[]);
    let mut c = s.conn();
    let _: () = c.set("tiny", b"x".as_slice()).unwrap();
    let v: Vec<u8> = c.get("tiny").unwrap();
    assert_eq!(v, b"x");
    let big: Vec<u8> = (0..10 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let _: () = c.set("big", big.as_slice()).unwrap();
    let v: Vec<u8> = c.get("big").unwrap();
    assert!(
        v == big,
        "10 MB value came back different ({} bytes)",
        v.len()
    );
    // Several at once on one connection, and another client meanwhile.
    let mut other = s.conn();
    let mut p = redis::pipe();
    for _ in 0..3 {
        p.get("big");
    }
    let vs: Vec<Vec<u8>> = p.query(&mut c).unwrap();
    assert!(vs.iter().all(|v| *v == big));
    let t: Vec<u8> = other.get("tiny").unwrap();
    assert_eq!(t, b"x");
}

#[test]
fn a_client_that_does_not_read_is_closed_at_its_output_limit_and_others_go_on() {
    let s = uring(&["--client-output-buffer-limit", "normal 4mb 0 0"]);
    let mut c = s.conn();
    let _: () = c.set("v", vec![7u8; 1024 * 1024]).unwrap();
    let mut slow = s.raw();
    let mut req = Vec::new();
    for _ in 0..200 {
        req.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$1\r\nv\r\n");
    }
    slow.write_all(&req).unwrap();
    wait_until("the slow client closed", || {
        s.log()
            .contains("scheduled to be closed ASAP for overcoming of output buffer limits")
    });
    // It is gone; everybody else is served.
    assert!(closed_by_server(&mut slow));
    let v: Vec<u8> = c.get("v").unwrap();
    assert_eq!(v.len(), 1024 * 1024);
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
}

#[test]
fn quit_answers_then_closes() {
    let s = uring(&[]);
    let mut raw = s.raw();
    raw.write_all(b"PING\r\nQUIT\r\nPING\r\n").unwrap();
    let mut got = Vec::new();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    raw.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"+PONG\r\n+OK\r\n");
}

#[test]
fn client_kill_closes_the_other_connection() {
    let s = uring(&[]);
    let mut victim = s.raw();
    victim.write_all(b"CLIENT ID\r\n").unwrap();
    let mut line = Vec::new();
    while !line.ends_with(b"\r\n") {
        let mut byte = [0u8];
        assert_eq!(victim.read(&mut byte).unwrap(), 1, "no reply to CLIENT ID");
        line.push(byte[0]);
    }
    let id = String::from_utf8(line)
        .unwrap()
        .trim()
        .trim_start_matches(':')
        .to_string();
    let mut c = s.conn();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(&id)
        .query(&mut c)
        .unwrap();
    assert_eq!(killed, 1);
    assert!(closed_by_server(&mut victim));
    let _: () = c.set("after", 1).unwrap();
}

#[test]
fn blpop_is_woken_by_another_client() {
    let s = uring(&[]);
    let mut waiter = s.conn();
    let mut c = s.conn();
    let t = std::thread::spawn(move || {
        let r: (String, String) = waiter.blpop("q", 10.0).unwrap();
        r
    });
    wait_blocked(&mut c, 1);
    let _: () = c.rpush("q", "hello").unwrap();
    assert_eq!(t.join().unwrap(), ("q".to_string(), "hello".to_string()));
}

#[test]
fn pubsub_messages_reach_subscribers() {
    let s = uring(&[]);
    let mut sub_conn = s.conn();
    let mut publisher = s.conn();
    let mut sub = sub_conn.as_pubsub();
    sub.subscribe("news").unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for i in 0..100 {
        let n: i64 = publisher.publish("news", format!("m{i}")).unwrap();
        assert_eq!(n, 1);
    }
    for i in 0..100 {
        let m = sub.get_message().unwrap();
        assert_eq!(m.get_payload::<String>().unwrap(), format!("m{i}"));
    }
}

#[test]
fn multi_exec_runs_the_queued_commands() {
    let s = uring(&[]);
    let mut c = s.conn();
    let (a, b): (i64, i64) = redis::pipe()
        .atomic()
        .incr("n", 1)
        .incr("n", 10)
        .query(&mut c)
        .unwrap();
    assert_eq!((a, b), (1, 11));
}

#[test]
fn a_half_closed_client_gets_its_replies_then_eof() {
    let s = uring(&[]);
    let mut raw = s.raw();
    raw.write_all(b"SET hc 1\r\nINCR hc\r\n").unwrap();
    raw.shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    raw.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"+OK\r\n:2\r\n");
    let v: i64 = s.conn().get("hc").unwrap();
    assert_eq!(v, 2);
}

#[test]
fn unix_socket_clients_are_served_on_the_ring() {
    let dir = fresh_dir("uring-unix");
    let path = dir.join("t.sock");
    let p = path.display().to_string();
    let s = uring(&["--unixsocket", &p]);
    let mut c = redis::Client::open(format!("redis+unix://{p}"))
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = c.set("u", "via unix").unwrap();
    let v: String = s.conn().get("u").unwrap();
    assert_eq!(v, "via unix");
}

#[test]
fn io_backend_is_startup_only_and_shown() {
    let s = uring(&[]);
    let mut c = s.conn();
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("io-backend")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, ["io-backend", "io_uring"]);
    let e = redis::cmd("CONFIG")
        .arg("SET")
        .arg("io-backend")
        .arg("epoll")
        .query::<()>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("immutable"), "{e}");
    // Tools that walk CONFIG GET * see Redis's own parameters only.
    let all: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("*")
        .query(&mut c)
        .unwrap();
    assert!(!all.iter().any(|k| k == "io-backend"));
}

#[test]
fn epoll_is_the_default() {
    let s = Server::tern(&[]);
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut s.conn())
        .unwrap();
    // (A suite run with TERN_TEST_EXTRA may choose another backend.)
    if std::env::var("TERN_TEST_EXTRA").is_err() {
        assert_eq!(info_value(&info, "io_backend").as_deref(), Some("epoll"));
    }
}

#[test]
fn auto_uses_io_uring_where_the_kernel_allows_it() {
    let s = Server::tern(&["--io-backend", "auto"]);
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut s.conn())
        .unwrap();
    let backend = info_value(&info, "io_backend").unwrap();
    // Where the probe fails (an old kernel, a seccomp profile), the log says why.
    if backend == "epoll" {
        assert!(
            s.log().contains("io_uring is not available ("),
            "{}",
            s.log()
        );
    } else {
        assert_eq!(backend, "io_uring");
    }
    let _: () = s.conn().set("k", "v").unwrap();
}

#[test]
fn auto_falls_back_to_epoll_when_the_probe_fails() {
    let s = Server::tern_env(&["--io-backend", "auto"], &[(FORCE_FAIL, "1")]);
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut s.conn())
        .unwrap();
    assert_eq!(info_value(&info, "io_backend").as_deref(), Some("epoll"));
    assert!(
        s.log().contains(&format!(
            "io_uring is not available (disabled by {FORCE_FAIL}): using epoll"
        )),
        "{}",
        s.log()
    );
    let _: () = s.conn().set("k", "v").unwrap();
}

#[test]
fn io_uring_asked_for_and_unavailable_refuses_to_start() {
    let dir = fresh_dir("uring-refuse");
    let port = free_port();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .current_dir(&dir)
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--io-backend",
            "io_uring",
        ])
        .env(FORCE_FAIL, "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("io-backend io_uring is not available: disabled by"),
        "{text}"
    );
}
