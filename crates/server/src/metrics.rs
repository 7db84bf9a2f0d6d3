//! `metrics-port`: a minimal HTTP/1.1 responder serving `GET /metrics` (the Prometheus text
//! exposition rendered by tern_runtime::metrics) on the `bind` addresses. One request per
//! connection; anything else gets 404 or 405. CONFIG SET metrics-port rebinds (0 stops it).

use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use tern_runtime::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The running listeners' tasks, aborted when the port changes.
struct Running {
    runtime: tokio::runtime::Handle,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// Start serving on `metrics-port` (if set) and follow CONFIG SET metrics-port.
pub fn start(srv: &Arc<Server>) -> Result<(), String> {
    let running = Arc::new(Running {
        runtime: tokio::runtime::Handle::current(),
        tasks: Mutex::new(Vec::new()),
    });
    let port = srv.config.get_i64("metrics-port") as u16;
    rebind(&running, srv, port)?;
    let weak: Weak<Server> = Arc::downgrade(srv);
    srv.config.set_apply_hook(
        "metrics-port",
        Box::new(move |v| {
            let srv = weak.upgrade().ok_or("shutting down")?;
            let port: u16 = v
                .parse()
                .map_err(|_| "Unable to listen on this port".to_string())?;
            rebind(&running, &srv, port)
        }),
    );
    Ok(())
}

fn rebind(running: &Running, srv: &Arc<Server>, port: u16) -> Result<(), String> {
    let mut listeners = Vec::new();
    if port != 0 {
        let binds = srv.config.get("bind").unwrap_or_default();
        for addr in binds.split_whitespace() {
            let addr = addr.trim_start_matches('-');
            let addr = if addr == "*" { "0.0.0.0" } else { addr };
            let host = if addr.contains(':') {
                format!("[{addr}]:{port}")
            } else {
                format!("{addr}:{port}")
            };
            match std::net::TcpListener::bind(&host) {
                Ok(l) => listeners.push(l),
                // `bind * -::*` style lists: an IPv6 address the host lacks is skipped.
                Err(_) if addr.contains(':') && !listeners.is_empty() => {}
                Err(e) => return Err(format!("Unable to listen on {host} for metrics: {e}")),
            }
        }
    }
    let mut tasks = running.tasks.lock();
    for t in tasks.drain(..) {
        crate::listeners::abort_and_wait(t);
    }
    for l in listeners {
        l.set_nonblocking(true).map_err(|e| e.to_string())?;
        let srv = Arc::downgrade(srv);
        let _guard = running.runtime.enter();
        let l = tokio::net::TcpListener::from_std(l).map_err(|e| e.to_string())?;
        tasks.push(running.runtime.spawn(accept(l, srv)));
    }
    Ok(())
}

async fn accept(l: tokio::net::TcpListener, srv: Weak<Server>) {
    loop {
        let Ok((stream, _)) = l.accept().await else {
            // Out of descriptors and the like: back off instead of spinning.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            continue;
        };
        let Some(srv) = srv.upgrade() else { return };
        tokio::spawn(serve(stream, srv));
    }
}

/// Read one request head (up to 8 KiB, 10 s) and answer it.
async fn serve(mut stream: tokio::net::TcpStream, srv: Arc<Server>) {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        true
    };
    match tokio::time::timeout(std::time::Duration::from_secs(10), read).await {
        Ok(true) => {}
        _ => return,
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or(b"");
    let mut parts = line.split(|&b| b == b' ');
    let method = parts.next().unwrap_or(b"");
    let target = parts.next().unwrap_or(b"");
    let path = target.split(|&b| b == b'?').next().unwrap_or(b"");
    let (status, body, ctype) = match (method, path) {
        (b"GET" | b"HEAD", b"/metrics") => (
            "200 OK",
            tern_runtime::metrics::render(&srv),
            tern_runtime::metrics::CONTENT_TYPE,
        ),
        (_, b"/metrics") => (
            "405 Method Not Allowed",
            "method not allowed\n".to_string(),
            "text/plain",
        ),
        _ => ("404 Not Found", "not found\n".to_string(), "text/plain"),
    };
    let mut reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != b"HEAD" {
        reply.extend_from_slice(body.as_bytes());
    }
    let _ = stream.write_all(&reply).await;
    let _ = stream.shutdown().await;
}
