//! Cluster mode at start-up (`cluster-enabled yes`): lock and load nodes.conf (or create a
//! new node and save it), bind the bus port, publish the cluster on the server and start the
//! bus. Errors are worded as Redis's and stop the server.

use super::conf_file::{ConfFile, Loaded};
use super::{bus, settings, Cluster};
use crate::server::Server;
use std::path::PathBuf;
use std::sync::Arc;
use tern_cluster::state::ClusterState;
use tokio::sync::Notify;

pub fn init(srv: &Arc<Server>) -> Result<(), String> {
    if !srv.config.get_bool("cluster-enabled") {
        return Ok(());
    }
    let port = srv.config.get_i64("port");
    if srv.config.get_i64("cluster-port") == 0 && port > 55535 {
        return Err("Redis port number too high. Cluster communication port is 10,000 port numbers higher than your Redis port. Your Redis port number must be 55535 or less.".into());
    }
    let name = srv
        .config
        .get("cluster-config-file")
        .unwrap_or_else(|| "nodes.conf".into());
    let conf = ConfFile::lock(&PathBuf::from(&name))?;
    let now = tern_engine::clock::now_ms();
    let seed = rand::random::<u64>();
    let config = settings::state_config(srv);
    let announced = settings::announced(srv);
    let (mut state, fresh) = match conf.load()? {
        Loaded::Conf(c) => (ClusterState::from_conf(config, &c, seed, now), false),
        Loaded::Fresh => (
            ClusterState::new(config, "", announced.port, announced.cport, seed, now),
            true,
        ),
    };
    state.set_announced(&announced);
    if fresh {
        crate::log::notice(&format!(
            "No cluster configuration found, I'm {}",
            state.myself()
        ));
    } else {
        crate::log::notice(&format!(
            "Node configuration loaded, I'm {}",
            state.myself()
        ));
    }
    let listeners = bind(srv, settings::bus_port(srv))?;
    let notify = Arc::new(Notify::new());
    let wake = notify.clone();
    let cluster = Arc::new(Cluster::new(state, Box::new(move || wake.notify_one())));
    let _ = cluster.io.conf.set(conf);
    if fresh {
        let (seq, text) = cluster.io.snapshot(&cluster.state.lock());
        cluster
            .io
            .save(seq, &text, true)
            .map_err(|e| format!("Fatal: can't update cluster config file: {e}"))?;
    }
    let _ = srv.cluster.set(cluster.clone());
    settings::register_hooks(srv);
    bus::start(srv.clone(), cluster, listeners, notify);
    Ok(())
}

/// The bus listeners, on every `bind` address.
fn bind(srv: &Server, port: u16) -> Result<Vec<std::net::TcpListener>, String> {
    let binds = srv.config.get("bind").unwrap_or_else(|| "* -::*".into());
    let backlog = srv.config.get_i64("tcp-backlog").max(1) as i32;
    crate::listen::bind_addresses(&binds, port, backlog, "cluster")
}
