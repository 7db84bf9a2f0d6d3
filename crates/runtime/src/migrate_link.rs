//! Outgoing connections to MIGRATE targets, cached per "host:port" (closed after 10 s unused,
//! at most 64; INFO's migrate_cached_sockets), over TLS under tls-cluster.

use crate::server::Server;
use parking_lot::Mutex;
use std::io::{BufRead, BufReader};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

const CACHE_ITEMS: usize = 64;
const CACHE_TTL: Duration = Duration::from_secs(10);

/// A connection to a target, with the database it has selected (-1: unknown).
pub struct Cached {
    pub conn: BufReader<crate::tls::SyncStream>,
    pub last_db: i64,
    pub last_use: Instant,
}

/// Cached connections by "host:port" as the client spelled them, owned by the server
/// (`Server::migrate_links`). A MIGRATE takes its entry out while it uses it and puts it back
/// when the connection is still good.
#[derive(Default)]
pub struct MigrateLinks {
    cache: Mutex<Vec<(Vec<u8>, Cached)>>,
}

/// INFO's `migrate_cached_sockets`.
pub fn cached_sockets(srv: &Server) -> usize {
    srv.migrate_links.cache.lock().len()
}

/// Close connections nobody used for 10 seconds (from the server cron, as Redis's).
pub fn cron(srv: &Server) {
    srv.migrate_links
        .cache
        .lock()
        .retain(|(_, c)| c.last_use.elapsed() <= CACHE_TTL);
}

pub fn put_back(srv: &Server, name: Vec<u8>, c: Cached) {
    let mut cache = srv.migrate_links.cache.lock();
    if cache.iter().any(|(n, _)| *n == name) {
        return; // another MIGRATE cached one meanwhile: this one closes
    }
    if cache.len() >= CACHE_ITEMS {
        use rand::Rng;
        let victim = rand::thread_rng().gen_range(0..cache.len());
        cache.swap_remove(victim);
    }
    cache.push((name, c));
}

/// C's atoi (leading digits after an optional sign; 0 when there are none).
fn atoi(s: &[u8]) -> i64 {
    let (neg, rest) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = rest
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .fold(0i64, |a, &d| {
            a.saturating_mul(10).saturating_add((d - b'0') as i64)
        });
    if neg {
        -n
    } else {
        n
    }
}

/// Why no connection could be used.
pub enum ConnectError {
    /// Name resolution failed or the connect timed out: "error or timeout connecting".
    Connect,
    /// The target refused. Redis's non-blocking connect does not notice that, and its first
    /// write fails instead: "error ... writing".
    Refused,
}

pub fn connect(host: &[u8], port: &[u8], timeout: Duration) -> Result<TcpStream, ConnectError> {
    let host = std::str::from_utf8(host).map_err(|_| ConnectError::Connect)?;
    // The port goes through atoi, as in Redis: garbage is port 0 (refused).
    let port = u16::try_from(atoi(port)).map_err(|_| ConnectError::Connect)?;
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|_| ConnectError::Connect)?;
    let deadline = Instant::now() + timeout;
    let mut err = ConnectError::Connect;
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ConnectError::Connect);
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                err = ConnectError::Refused
            }
            Err(_) => return Err(ConnectError::Connect),
        }
    }
    Err(err)
}

/// The cached connection to host:port, or a new one (over TLS under tls-cluster, as Redis
/// connects to a migration target with its cluster's connection type).
pub fn get_socket(
    srv: &crate::Server,
    host: &[u8],
    port: &[u8],
    timeout: Duration,
) -> Result<(Vec<u8>, Cached), ConnectError> {
    let mut name = host.to_vec();
    name.push(b':');
    name.extend_from_slice(port);
    {
        let mut cache = srv.migrate_links.cache.lock();
        if let Some(i) = cache.iter().position(|(n, _)| *n == name) {
            let (name, mut c) = cache.swap_remove(i);
            c.last_use = Instant::now();
            return Ok((name, c));
        }
    }
    let s = connect(host, port, timeout)?;
    let s = if srv.config.get_bool("tls-cluster") {
        let config = srv.tls.client_config().ok_or(ConnectError::Connect)?;
        let host = String::from_utf8_lossy(host);
        crate::tls::SyncStream::tls(config, s, &host, timeout).map_err(|_| ConnectError::Connect)?
    } else {
        crate::tls::SyncStream::Plain(s)
    };
    Ok((
        name,
        Cached {
            conn: BufReader::new(s),
            last_db: -1,
            last_use: Instant::now(),
        },
    ))
}

/// One reply line without its CRLF (Redis reads at most 1023 bytes of it).
pub fn read_line(c: &mut Cached) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let n = c.conn.read_until(b'\n', &mut line)?;
    if n == 0 || line.last() != Some(&b'\n') {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line.truncate(1023);
    Ok(line)
}
