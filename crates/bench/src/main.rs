//! tern-bench: a closed-loop RESP load generator for the workloads redis-benchmark cannot
//! drive. Each client connection sends one unit of work, waits for all its replies, records
//! the unit's latency, and repeats until the time is up. Prints one JSON line.
//!
//!   tern-bench --port P --workload multi-incr5|evalsha|publish|setget|set [--clients 50]
//!              [--seconds 5] [--keys 10000] [--subscribers 100] [--pipeline 1] [--size 100]
//!
//! multi-incr5  MULTI, INCR of 5 random keys, EXEC (one op = one transaction)
//! evalsha      EVALSHA of a 2-key read-modify-write script on 2 random keys
//! publish      PUBLISH of a 16-byte message to one channel that `--subscribers` connections
//!              subscribe to (one op = one PUBLISH; deliveries are counted too)
//! setget       SET of a `--size`-byte value and GET, alternating 1:1, random keys `key:<n>`
//!              (DEBUG POPULATE's names); one op = one command, one unit = `--pipeline` ops
//! set          the same with SETs only
//!
//! Latencies are per unit (a pipeline's round trip, as redis-benchmark -P counts them).
//! `--seconds 0` runs until standard input is closed (a caller that stops the load at an event).
#![forbid(unsafe_code)]

use rand::{Rng, SeedableRng};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCRIPT: &str = "local a = tonumber(redis.call('GET', KEYS[1]) or 0) \
local b = tonumber(redis.call('GET', KEYS[2]) or 0) \
redis.call('SET', KEYS[1], a + 1) redis.call('SET', KEYS[2], b + a) return a + b";

struct Opts {
    port: u16,
    workload: String,
    clients: usize,
    seconds: f64,
    keys: u64,
    subscribers: usize,
    pipeline: usize,
    size: usize,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        port: 6379,
        workload: "multi-incr5".into(),
        clients: 50,
        seconds: 5.0,
        keys: 10_000,
        subscribers: 100,
        pipeline: 1,
        size: 100,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i + 1 < args.len() {
        let v = &args[i + 1];
        match args[i].as_str() {
            "--port" => o.port = v.parse().expect("--port"),
            "--workload" => o.workload = v.clone(),
            "--clients" => o.clients = v.parse().expect("--clients"),
            "--seconds" => o.seconds = v.parse().expect("--seconds"),
            "--keys" => o.keys = v.parse().expect("--keys"),
            "--subscribers" => o.subscribers = v.parse().expect("--subscribers"),
            "--pipeline" => o.pipeline = v.parse().expect("--pipeline"),
            "--size" => o.size = v.parse().expect("--size"),
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    o
}

fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// The end of the complete RESP2/RESP3 reply starting at `pos`, or None if more bytes are
/// needed.
fn skip_reply(buf: &[u8], pos: usize) -> Option<usize> {
    let line_end = pos + buf.get(pos..)?.windows(2).position(|w| w == b"\r\n")?;
    let after = line_end + 2;
    let head = *buf.get(pos)?;
    let num = || -> i64 {
        std::str::from_utf8(&buf[pos + 1..line_end])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    };
    match head {
        b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => Some(after),
        b'$' | b'!' | b'=' => {
            let n = num();
            if n < 0 {
                Some(after)
            } else {
                let end = after + n as usize + 2;
                (buf.len() >= end).then_some(end)
            }
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let mut n = num();
            if n < 0 {
                return Some(after);
            }
            if head == b'%' || head == b'|' {
                n *= 2;
            }
            let mut p = after;
            for _ in 0..n {
                p = skip_reply(buf, p)?;
            }
            Some(p)
        }
        _ => panic!("unexpected reply byte {head:?}"),
    }
}

/// Read until `n` complete replies arrived; returns whether any was an error.
fn read_replies(s: &mut TcpStream, buf: &mut Vec<u8>, n: usize) -> bool {
    let mut got = 0;
    let mut pos = 0;
    let mut error = false;
    let mut chunk = [0u8; 64 * 1024];
    loop {
        while got < n {
            match skip_reply(buf, pos) {
                Some(end) => {
                    error |= buf[pos] == b'-' || buf[pos] == b'!';
                    pos = end;
                    got += 1;
                }
                None => break,
            }
        }
        if got == n {
            buf.drain(..pos);
            return error;
        }
        let r = s.read(&mut chunk).expect("read");
        assert!(r > 0, "server closed the connection");
        buf.extend_from_slice(&chunk[..r]);
    }
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_nodelay(true).ok();
    s
}

/// Send one command and return its whole reply.
fn request(s: &mut TcpStream, args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&mut out, args);
    s.write_all(&out).expect("write");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = skip_reply(&buf, 0) {
            buf.truncate(end);
            return buf;
        }
        let r = s.read(&mut chunk).expect("read");
        assert!(r > 0, "server closed the connection");
        buf.extend_from_slice(&chunk[..r]);
    }
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64 / 1000.0
}

fn main() {
    let o = parse_opts();
    let sha = (o.workload == "evalsha").then(|| {
        let reply = request(
            &mut connect(o.port),
            &[b"SCRIPT", b"LOAD", SCRIPT.as_bytes()],
        );
        let text = String::from_utf8_lossy(&reply).to_string();
        match text.lines().find(|l| l.len() == 40) {
            Some(sha) => sha.to_string(),
            None => panic!("SCRIPT LOAD failed: {text}"),
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    let delivered = Arc::new(AtomicU64::new(0));
    let mut subscriber_threads = Vec::new();
    if o.workload == "publish" {
        let ready = Arc::new(AtomicU64::new(0));
        for _ in 0..o.subscribers {
            let mut s = connect(o.port);
            request(&mut s, &[b"SUBSCRIBE", b"bench-channel"]);
            let mut buf = Vec::new();
            ready.fetch_add(1, Ordering::Relaxed);
            let delivered = delivered.clone();
            let stop = stop.clone();
            s.set_read_timeout(Some(Duration::from_millis(200))).ok();
            subscriber_threads.push(std::thread::spawn(move || {
                let mut chunk = [0u8; 64 * 1024];
                let mut pos = 0;
                while !stop.load(Ordering::Relaxed) {
                    match s.read(&mut chunk) {
                        Ok(0) => break,
                        Ok(r) => buf.extend_from_slice(&chunk[..r]),
                        Err(_) => continue,
                    }
                    while let Some(end) = skip_reply(&buf, pos) {
                        pos = end;
                        delivered.fetch_add(1, Ordering::Relaxed);
                    }
                    buf.drain(..pos);
                    pos = 0;
                }
            }));
        }
    }
    let start = Instant::now();
    if o.seconds <= 0.0 {
        let stop = stop.clone();
        std::thread::spawn(move || {
            std::io::copy(&mut std::io::stdin(), &mut std::io::sink()).ok();
            stop.store(true, Ordering::Relaxed);
        });
    }
    let deadline = start + Duration::from_secs_f64(if o.seconds > 0.0 { o.seconds } else { 1e9 });
    // Ops per unit: a pipeline of SET/GETs or EVALSHAs counts each command.
    let per_unit = if matches!(o.workload.as_str(), "setget" | "set" | "evalsha") {
        o.pipeline.max(1)
    } else {
        1
    };
    let workers: Vec<_> = (0..o.clients)
        .map(|c| {
            let o_port = o.port;
            let workload = o.workload.clone();
            let keys = o.keys;
            let sha = sha.clone();
            let stop = stop.clone();
            let size = o.size;
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(c as u64 + 1);
                // One random printable value per connection: not compressible, cheap to send.
                let value: Vec<u8> = (0..size).map(|_| rng.gen_range(b'!'..=b'~')).collect();
                let mut n_cmd = 0u64;
                let mut s = connect(o_port);
                let mut buf = Vec::new();
                let mut out = Vec::new();
                let mut lat = Vec::with_capacity(1 << 16);
                let mut errors = 0u64;
                while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
                    out.clear();
                    let replies = match workload.as_str() {
                        "multi-incr5" => {
                            encode(&mut out, &[b"MULTI"]);
                            for _ in 0..5 {
                                let k = format!("key:{}", rng.gen_range(0..keys));
                                encode(&mut out, &[b"INCR", k.as_bytes()]);
                            }
                            encode(&mut out, &[b"EXEC"]);
                            7
                        }
                        "evalsha" => {
                            let sha = sha.as_deref().unwrap().as_bytes();
                            for _ in 0..per_unit {
                                let k1 = format!("key:{}", rng.gen_range(0..keys));
                                let k2 = format!("key:{}", rng.gen_range(0..keys));
                                encode(
                                    &mut out,
                                    &[b"EVALSHA", sha, b"2", k1.as_bytes(), k2.as_bytes()],
                                );
                            }
                            per_unit
                        }
                        "publish" => {
                            encode(
                                &mut out,
                                &[b"PUBLISH", b"bench-channel", b"0123456789abcdef"],
                            );
                            1
                        }
                        w @ ("setget" | "set") => {
                            for _ in 0..per_unit {
                                let k = format!("key:{}", rng.gen_range(0..keys));
                                if w == "set" || n_cmd.is_multiple_of(2) {
                                    encode(&mut out, &[b"SET", k.as_bytes(), &value]);
                                } else {
                                    encode(&mut out, &[b"GET", k.as_bytes()]);
                                }
                                n_cmd += 1;
                            }
                            per_unit
                        }
                        w => panic!("unknown workload {w}"),
                    };
                    let t = Instant::now();
                    s.write_all(&out).expect("write");
                    if read_replies(&mut s, &mut buf, replies) {
                        errors += 1;
                    }
                    lat.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
                }
                (lat, errors)
            })
        })
        .collect();
    let mut lat = Vec::new();
    let mut errors = 0;
    for w in workers {
        let (l, e) = w.join().expect("worker");
        lat.extend(l);
        errors += e;
    }
    let secs = start.elapsed().as_secs_f64();
    // Let the subscribers drain what is still in flight before counting deliveries.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for t in subscriber_threads {
        t.join().ok();
    }
    lat.sort_unstable();
    println!(
        "{{\"workload\":\"{}\",\"ops\":{},\"secs\":{:.3},\"ops_per_sec\":{:.0},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"p999_ms\":{:.3},\"errors\":{},\"delivered\":{}}}",
        o.workload,
        lat.len() * per_unit,
        secs,
        (lat.len() * per_unit) as f64 / secs,
        percentile(&lat, 0.50),
        percentile(&lat, 0.99),
        percentile(&lat, 0.999),
        errors,
        delivered.load(Ordering::Relaxed)
    );
}
