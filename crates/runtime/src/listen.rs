//! Binding the configured `bind` addresses (Redis's syntax: `*` for every IPv4 address, `::*`
//! for every IPv6 one, a leading `-` for an address whose failure is tolerated), for the client
//! listeners and the cluster bus alike.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

/// Bind every address of `binds` on `port` with a listen `backlog`; `what` names the listener
/// in the messages (`tcp`, `tls`, `cluster`). The sockets are non-blocking.
pub fn bind_addresses(
    binds: &str,
    port: u16,
    backlog: i32,
    what: &str,
) -> Result<Vec<TcpListener>, String> {
    let mut out = Vec::new();
    for spec in binds.split_whitespace() {
        let (optional, addr) = match spec.strip_prefix('-') {
            Some(a) => (true, a),
            None => (false, spec),
        };
        let host = match addr {
            "*" => "0.0.0.0",
            "::*" => "::",
            a => a,
        };
        match bind_one(host, port, backlog) {
            Ok(l) => out.push(l),
            Err(e) if optional => {
                crate::log::notice(&format!("Skipping optional bind {spec} ({what}): {e}"))
            }
            Err(e) => {
                return Err(format!(
                    "Failed listening on port {port} ({what}), aborting: {host}: {e}"
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(format!(
            "Failed listening on port {port} ({what}): no address bound"
        ));
    }
    Ok(out)
}

fn bind_one(host: &str, port: u16, backlog: i32) -> Result<TcpListener, String> {
    let sa: SocketAddr = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut i| i.next())
        .ok_or_else(|| format!("bad address {host}"))?;
    let domain = if sa.is_ipv6() {
        socket2::Domain::IPV6
    } else {
        socket2::Domain::IPV4
    };
    let s = socket2::Socket::new(domain, socket2::Type::STREAM, None).map_err(|e| e.to_string())?;
    if sa.is_ipv6() {
        // `*` and `::*` on one port: the IPv6 socket must not claim the IPv4 addresses too.
        let _ = s.set_only_v6(true);
    }
    s.set_reuse_address(true).map_err(|e| e.to_string())?;
    s.bind(&sa.into()).map_err(|e| e.to_string())?;
    s.listen(backlog).map_err(|e| e.to_string())?;
    s.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(TcpListener::from(s))
}
