//! The `cluster-*` configuration as the state machine reads it, re-applied whenever CONFIG SET
//! changes one of them (Redis reads most of them live; the announced address and flags of
//! myself are re-sent with the next ping).

use super::Cluster;
use crate::server::Server;
use std::sync::{Arc, Weak};
use tern_cluster::admin::Announced;
use tern_cluster::state::Config;

/// The bus port: `cluster-port`, or the client port + 10000 when 0.
pub fn bus_port(srv: &Server) -> u16 {
    match srv.config.get_i64("cluster-port") {
        0 => (srv.config.get_i64("port") + 10000).clamp(0, 65535) as u16,
        p => p as u16,
    }
}

pub fn state_config(srv: &Server) -> Config {
    let c = &srv.config;
    Config {
        node_timeout: c.get_i64("cluster-node-timeout").max(0) as u64,
        require_full_coverage: c.get_bool("cluster-require-full-coverage"),
        allow_replica_migration: c.get_bool("cluster-allow-replica-migration"),
        migration_barrier: c.get_i64("cluster-migration-barrier").max(0) as usize,
        announce_ip: c.get("cluster-announce-ip").unwrap_or_default(),
        hostname: bytes_of(srv, "cluster-announce-hostname"),
        human_nodename: bytes_of(srv, "cluster-announce-human-nodename"),
        replica_validity_factor: c.get_i64("cluster-replica-validity-factor").max(0) as u64,
        repl_ping_replica_period: c.get_i64("repl-ping-replica-period").max(1) as u64,
        replica_no_failover: c.get_bool("cluster-replica-no-failover"),
    }
}

/// A string setting as the bus carries it (empty when unset).
fn bytes_of(srv: &Server, name: &str) -> Vec<u8> {
    srv.config.get(name).unwrap_or_default().into_bytes()
}

/// Myself's announced ports, names and flags (Redis's `clusterUpdateMyself*`).
pub fn announced(srv: &Server) -> Announced {
    let c = &srv.config;
    let or = |announced: &str, actual: i64| match c.get_i64(announced) {
        0 => actual as u16,
        p => p as u16,
    };
    let tcp = or("cluster-announce-port", c.get_i64("port"));
    let tls = or("cluster-announce-tls-port", c.get_i64("tls-port"));
    let tls_cluster = c.get_bool("tls-cluster");
    Announced {
        port: if tls_cluster { tls } else { tcp },
        pport: if tls_cluster { tcp } else { tls },
        cport: or("cluster-announce-bus-port", bus_port(srv) as i64),
        hostname: bytes_of(srv, "cluster-announce-hostname"),
        human_nodename: bytes_of(srv, "cluster-announce-human-nodename"),
        no_failover: c.get_bool("cluster-replica-no-failover"),
    }
}

/// Read every setting into the state.
pub fn apply(srv: &Server, cluster: &Cluster) {
    let config = state_config(srv);
    let announced = announced(srv);
    let mut st = cluster.state.lock();
    st.config = config;
    st.set_announced(&announced);
    st.before_sleep(tern_engine::clock::now_ms());
    cluster.changed(&st);
}

/// Parameters whose CONFIG SET reaches the state at once (the others it reads, such as
/// `port`, have hooks of their own: the bus's cron re-reads everything every run).
const LIVE: &[&str] = &[
    "cluster-node-timeout",
    "cluster-require-full-coverage",
    "cluster-allow-replica-migration",
    "cluster-announce-ip",
    "cluster-announce-hostname",
    "cluster-announce-human-nodename",
    "cluster-announce-port",
    "cluster-announce-bus-port",
    "cluster-announce-tls-port",
    "cluster-replica-validity-factor",
    "cluster-replica-no-failover",
];

pub fn register_hooks(srv: &Arc<Server>) {
    for &name in LIVE {
        let weak: Weak<Server> = Arc::downgrade(srv);
        srv.config.set_apply_hook(
            name,
            Box::new(move |_| {
                let srv = weak.upgrade().ok_or("shutting down")?;
                if let Some(c) = srv.cluster.get() {
                    apply(&srv, c);
                }
                Ok(())
            }),
        );
    }
}
