//! Unix sockets (`unixsocket`, `unixsocketperm`) served as TCP is, and `port 0` (no TCP
//! listener at all).

use crate::common::{free_port, fresh_dir, info_value, wait_blocked, Server};
use redis::Commands;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn unix_client(path: &Path) -> redis::Client {
    redis::Client::open(format!("redis+unix://{}", path.display())).unwrap()
}

fn connect(path: &Path) -> redis::Connection {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match unix_client(path).get_connection() {
            Ok(c) => return c,
            Err(e) => {
                assert!(Instant::now() < deadline, "no server on {path:?}: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// A tern-server started with `port 0` (reached through its Unix socket only).
struct UnixOnly {
    child: Child,
}

impl UnixOnly {
    fn start(dir: &Path, path: &Path, extra: &[&str]) -> UnixOnly {
        let child = Command::new(env!("CARGO_BIN_EXE_tern-server"))
            .current_dir(dir)
            .args(["--port", "0", "--save", "", "--unixsocket"])
            .arg(path)
            .args(extra)
            .stdout(std::fs::File::create(dir.join("server.log")).unwrap())
            .spawn()
            .unwrap();
        UnixOnly { child }
    }
}

impl Drop for UnixOnly {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn unix_socket_serves_like_tcp() {
    let dir = fresh_dir("unixsocket-serve");
    let path = dir.join("tern.sock");
    // A stale file where the socket goes is replaced.
    std::fs::write(&path, b"stale").unwrap();
    let p = path.display().to_string();
    let srv = Server::tern(&["--unixsocket", &p, "--unixsocketperm", "700"]);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "unixsocketperm: {mode:o}");

    let mut c = connect(&path);
    let _: () = c.set("k", "v").unwrap();
    assert_eq!(srv.conn().get::<_, String>("k").unwrap(), "v");
    let mut pipe = redis::pipe();
    for _ in 0..1000 {
        pipe.cmd("INCR").arg("n").ignore();
    }
    pipe.cmd("GET").arg("n");
    let (n,): (i64,) = pipe.query(&mut c).unwrap();
    assert_eq!(n, 1000);

    // CLIENT INFO / LIST as Redis shows a Unix client: the path, port 0, flag U.
    let info: String = redis::cmd("CLIENT").arg("INFO").query(&mut c).unwrap();
    assert!(info.contains(&format!("addr={p}:0 laddr={p}:0 ")), "{info}");
    assert!(info.contains(" flags=U "), "{info}");
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query(&mut srv.conn())
        .unwrap();
    assert!(list.contains(&format!("addr={p}:0")), "{list}");
    let sinfo: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    assert_eq!(
        info_value(&sinfo, "listener1").unwrap(),
        format!("name=unix,bind={p}")
    );
    assert_eq!(
        info_value(&sinfo, "tcp_port").unwrap(),
        srv.port.to_string()
    );

    // Blocking: a BLPOP on the Unix socket served by a TCP client's push.
    let client = unix_client(&path);
    let waiter = std::thread::spawn(move || {
        let mut w = client.get_connection().unwrap();
        w.blpop::<_, (String, String)>("q", 5.0).unwrap()
    });
    let mut t = srv.conn();
    wait_blocked(&mut t, 1); // the BLPOP blocks
    let _: () = t.rpush("q", "x").unwrap();
    assert_eq!(waiter.join().unwrap(), ("q".into(), "x".into()));

    // Pub/sub over the socket.
    let mut sc = connect(&path);
    let mut sub = sc.as_pubsub();
    sub.subscribe("ch").unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _: i64 = t.publish("ch", "m").unwrap();
    assert_eq!(
        sub.get_message().unwrap().get_payload::<String>().unwrap(),
        "m"
    );
    drop(sub);

    // MONITOR on the socket sees a TCP client's command, and names a Unix client as Redis
    // does (`unix:<path>`).
    let mut mon = std::os::unix::net::UnixStream::connect(&path).unwrap();
    use std::io::{Read, Write};
    mon.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    mon.write_all(b"MONITOR\r\n").unwrap();
    let mut buf = [0u8; 5];
    mon.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"+OK\r\n");
    let mut read_line = || {
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while !line.ends_with(b"\r\n") {
            mon.read_exact(&mut b).unwrap();
            line.push(b[0]);
        }
        String::from_utf8_lossy(&line).into_owned()
    };
    let _: () = t.set("seen", "1").unwrap();
    let line = read_line();
    assert!(line.contains(" \"seen\" \"1\""), "{line}");
    assert!(line.contains(" [0 127.0.0.1:"), "{line}");
    let _: () = c.set("seen", "2").unwrap();
    let line = read_line();
    assert!(line.contains(&format!(" [0 unix:{p}] ")), "{line}");
}

#[test]
fn port_zero_listens_only_on_the_unix_socket_and_socket_file_goes_at_shutdown() {
    let dir = fresh_dir("unixsocket-port0");
    let path = dir.join("t.sock");
    // Protected mode on, no password, default bind: Unix clients are never refused.
    let mut srv = UnixOnly::start(&dir, &path, &["--protected-mode", "yes"]);
    let mut c = connect(&path);
    let info: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    assert_eq!(info_value(&info, "tcp_port").unwrap(), "0");
    assert!(info_value(&info, "listener0").is_none(), "{info}");
    assert_eq!(
        info_value(&info, "listener1").unwrap(),
        format!("name=unix,bind={}", path.display())
    );
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("port")
        .query(&mut c)
        .unwrap();
    assert_eq!(v[1], "0");
    // The process has no TCP listening socket.
    let pid = srv.child.id();
    assert!(!has_tcp_listener(pid), "port 0 opened a TCP listener");

    // CONFIG SET port opens TCP at run time, and port 0 closes it again.
    let port = free_port();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("port")
        .arg(port)
        .query(&mut c)
        .unwrap();
    let mut t = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(redis::cmd("PING").query::<String>(&mut t).unwrap(), "PONG");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("port")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    assert!(!has_tcp_listener(pid));

    // SHUTDOWN removes the socket file.
    let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<()>(&mut c);
    let status = srv.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!path.exists(), "socket file left behind");
}

#[test]
fn nothing_to_listen_on_refuses_to_start() {
    let dir = fresh_dir("unixsocket-none");
    let out = Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .current_dir(&dir)
        .args(["--port", "0", "--save", ""])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("Configured to not listen anywhere, exiting."));
}

/// Whether process `pid` holds a listening TCP socket (its fds' inodes in /proc/net/tcp*).
fn has_tcp_listener(pid: u32) -> bool {
    let mut inodes = Vec::new();
    if let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for e in rd.flatten() {
            if let Ok(t) = std::fs::read_link(e.path()) {
                let t = t.display().to_string();
                if let Some(i) = t.strip_prefix("socket:[").and_then(|s| s.strip_suffix(']')) {
                    inodes.push(i.to_string());
                }
            }
        }
    }
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .skip(1)
            .any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                // st 0A = LISTEN; column 9 is the inode.
                cols.len() > 9 && cols[3] == "0A" && inodes.iter().any(|i| i == cols[9])
            })
    })
}

#[test]
fn redis_cli_dash_s() {
    let cli = std::env::var("HOME")
        .ok()
        .map(|h| Path::new(&h).join("redis-7.2.6/src/redis-cli"))
        .filter(|p| p.exists())
        .or_else(|| Some(PathBuf::from("/usr/bin/redis-cli")).filter(|p| p.exists()));
    let Some(cli) = cli else {
        eprintln!("skipped: no redis-cli");
        return;
    };
    let dir = fresh_dir("unixsocket-cli");
    let path = dir.join("cli.sock");
    let _srv = UnixOnly::start(&dir, &path, &[]);
    drop(connect(&path));
    let run = |args: &[&str]| {
        let out = Command::new(&cli)
            .arg("-s")
            .arg(&path)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(run(&["SET", "a", "b"]), "OK");
    assert_eq!(run(&["GET", "a"]), "b");
    assert!(run(&["CLIENT", "INFO"]).contains("flags=U"));
}
