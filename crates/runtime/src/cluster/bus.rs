//! The cluster bus's I/O: a thread of its own running a small tokio runtime that listens on
//! the bus port, opens the outbound links the state asks for, reads messages off every link
//! into the state, runs its cron every 100 ms, and carries out the actions the state queues
//! (sends, closes, nodes.conf saves, replication changes, write pauses, log lines).
//!
//! The state lock is taken to feed one event and take the actions, never across I/O: the
//! actions are carried out after it is released (what they need from the state — the text
//! of nodes.conf, a master's address — is read while it is held).

use super::conf_file::ConfFile;
use super::Cluster;
use crate::server::Server;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tern_cluster::msg::{msg_type, MsgReader};
use tern_cluster::state::{Action, ClusterState, Link, LinkStatus, LogLevel, CRON_PERIOD_MS};
use tern_cluster::NodeId;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Notify};

/// Messages longer than this close the link (Redis has no bound; a publish of a huge message
/// is the only legitimate big one).
const MAX_MSG_LEN: usize = 512 * 1024 * 1024;

/// The bus's side of the cluster that commands read (CLUSTER LINKS, CLUSTER INFO's counters).
#[derive(Default)]
pub struct Io {
    pub links: Mutex<HashMap<Link, LinkInfo>>,
    /// Messages sent / received per type (CLUSTER INFO `cluster_stats_messages_*`).
    pub sent: [AtomicU64; msg_type::COUNT as usize],
    pub received: [AtomicU64; msg_type::COUNT as usize],
    /// Links freed because their send buffer passed `cluster-link-sendbuf-limit`.
    pub buffer_limit_exceeded: AtomicU64,
    pub conf: OnceLock<ConfFile>,
    save_seq: AtomicU64,
    next_inbound: AtomicU64,
    /// Connect attempts under way: attempt number → the node (renames follow).
    pending: Mutex<HashMap<u64, NodeId>>,
    next_attempt: AtomicU64,
    /// DEBUG DROP-CLUSTER-PACKET-FILTER's message type plus one (0: drop nothing, so that the
    /// default is none).
    drop_filter: AtomicI64,
}

/// One open link.
pub struct LinkInfo {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    /// Bytes queued and not yet written (CLUSTER LINKS send-buffer-*).
    pub queued: Arc<AtomicUsize>,
    /// ms when the link was created.
    pub ctime: u64,
    /// The link's current name (an outbound link of a handshake node is renamed).
    name: Arc<Mutex<Link>>,
    reader: tokio::task::AbortHandle,
}

impl Io {
    /// The text and sequence number of a save of `state` (taken under the state lock).
    pub fn snapshot(&self, state: &ClusterState) -> (u64, String) {
        let seq = self.save_seq.fetch_add(1, Relaxed) + 1;
        (seq, ConfFile::snapshot(state))
    }

    /// Write nodes.conf (CLUSTER SAVECONFIG, and the state's SaveConfig action).
    pub fn save(&self, seq: u64, text: &str, fsync: bool) -> std::io::Result<()> {
        match self.conf.get() {
            Some(c) => c.save(seq, text, fsync),
            None => Ok(()),
        }
    }

    /// DEBUG DROP-CLUSTER-PACKET-FILTER: drop received messages of `kind` (-1: none).
    pub fn set_drop_filter(&self, kind: i64) {
        self.drop_filter.store(kind.saturating_add(1), Relaxed);
    }

    fn dropped(&self, kind: u16) -> bool {
        self.drop_filter.load(Relaxed) == kind as i64 + 1
    }

    /// Total bytes queued on every link (INFO's mem_cluster_links).
    pub fn links_memory(&self) -> usize {
        self.links
            .lock()
            .values()
            .map(|l| l.queued.load(Relaxed) + std::mem::size_of::<LinkInfo>())
            .sum()
    }
}

/// What one action needs, read from the state while it is locked.
enum Todo {
    Act(Action),
    Save { seq: u64, text: String, fsync: bool },
    Replicate { ip: String, port: u16 },
}

struct Bus {
    srv: Arc<Server>,
    cluster: Arc<Cluster>,
}

/// Start the bus thread on `listeners` (already bound, so start-up can fail on them).
pub fn start(
    srv: Arc<Server>,
    cluster: Arc<Cluster>,
    listeners: Vec<std::net::TcpListener>,
    notify: Arc<Notify>,
) {
    std::thread::Builder::new()
        .name("cluster-bus".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("cluster bus runtime");
            rt.block_on(async move {
                let bus = Arc::new(Bus { srv, cluster });
                for l in listeners {
                    let _ = l.set_nonblocking(true);
                    match TcpListener::from_std(l) {
                        Ok(l) => {
                            tokio::spawn(accept_loop(bus.clone(), l));
                        }
                        Err(e) => crate::log::warning(&format!("Cluster bus listener: {e}")),
                    }
                }
                let mut cron = tokio::time::interval(Duration::from_millis(CRON_PERIOD_MS));
                cron.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = cron.tick() => bus.cron(),
                        _ = notify.notified() => bus.drive(),
                    }
                }
            });
        })
        .expect("spawn cluster bus thread");
}

fn now_ms() -> u64 {
    tern_engine::clock::now_ms()
}

impl Bus {
    /// Lock the state, run `f`, publish the change and carry out what it queued.
    fn with_state(&self, f: impl FnOnce(&mut ClusterState, u64)) {
        self.wait_while_server_sleeps();
        let now = now_ms();
        {
            let mut st = self.cluster.state.lock();
            self.refresh_offsets(&mut st);
            f(&mut st, now);
            st.before_sleep(now);
            self.cluster.publish_routes(&st);
        }
        self.drive();
    }

    /// What elections read of the replication: our offset, and on a replica how old its data
    /// is.
    fn refresh_offsets(&self, st: &mut ClusterState) {
        let srv = &self.srv;
        match crate::master_link::processed_offset(srv) {
            Some(offset) => {
                st.repl_offset = offset;
                st.repl_data_age = crate::master_link::data_age_ms(srv);
            }
            None => st.repl_offset = srv.propagation.log.repl_offset(),
        }
    }

    /// DEBUG SLEEP stops the whole server, as single-threaded Redis is stopped, the bus
    /// included: this blocks the bus thread, so no message is read, answered or sent and no
    /// cron runs until the sleep is over; the other nodes see the node time out (PFAIL,
    /// then FAIL), which tests of failure detection and failover rely on.
    fn wait_while_server_sleeps(&self) {
        self.srv.world.wait_while_stopped();
    }

    /// Carry out every queued action, until none is left.
    fn drive(&self) {
        self.wait_while_server_sleeps();
        loop {
            let todo: Vec<Todo> = {
                let mut st = self.cluster.state.lock();
                let actions = st.take_actions();
                if actions.is_empty() {
                    return;
                }
                actions
                    .into_iter()
                    .map(|a| match a {
                        Action::SaveConfig { fsync } => {
                            let (seq, text) = self.cluster.io.snapshot(&st);
                            Todo::Save { seq, text, fsync }
                        }
                        Action::ReplicateFrom(id) => match st.node(&id) {
                            Some(n) => Todo::Replicate {
                                ip: n.ip.clone(),
                                port: n.port,
                            },
                            None => Todo::Act(Action::ReplicateFrom(id)),
                        },
                        a => Todo::Act(a),
                    })
                    .collect()
            };
            for t in todo {
                self.execute(t);
            }
        }
    }

    fn execute(&self, t: Todo) {
        let io = &self.cluster.io;
        match t {
            Todo::Save { seq, text, fsync } => {
                if let Err(e) = io.save(seq, &text, fsync) {
                    // As Redis: a node that cannot record its configuration must not go on.
                    crate::log::warning(&format!("Could not save the cluster config file: {e}"));
                    crate::log::warning("Fatal: can't update cluster config file.");
                    std::process::exit(1);
                }
            }
            Todo::Replicate { ip, port } => {
                if !crate::master_link::follows(&self.srv, &ip, port) {
                    crate::master_link::start(self.srv.clone(), ip, port);
                }
            }
            Todo::Act(a) => match a {
                Action::Connect { node, ip, cport } => self.connect(node, ip, cport),
                Action::Send { link, msg } => {
                    let bytes = msg.encode();
                    let links = io.links.lock();
                    if let Some(l) = links.get(&link) {
                        let t = msg.msg_type() as usize;
                        if t < io.sent.len() {
                            io.sent[t].fetch_add(1, Relaxed);
                        }
                        l.queued.fetch_add(bytes.len(), Relaxed);
                        let _ = l.tx.send(bytes);
                    }
                }
                Action::Close(link) => {
                    if let Link::Outbound(id) = link {
                        io.pending.lock().retain(|_, n| *n != id);
                    }
                    if let Some(l) = io.links.lock().remove(&link) {
                        l.reader.abort();
                    }
                }
                Action::RenameLink { from, to } => {
                    for n in io.pending.lock().values_mut() {
                        if *n == from {
                            *n = to;
                        }
                    }
                    let mut links = io.links.lock();
                    if let Some(l) = links.remove(&Link::Outbound(from)) {
                        *l.name.lock() = Link::Outbound(to);
                        links.insert(Link::Outbound(to), l);
                    }
                }
                // Read from the state while it was locked (see `drive`); the routing table
                // already follows the health.
                Action::HealthChanged(_) | Action::ReplicateFrom(_) | Action::SaveConfig { .. } => {
                }
                Action::PromoteMyself => {
                    crate::master_link::become_master(&self.srv);
                }
                Action::PauseWrites { .. } => self.srv.pause.start_failover_hold(),
                Action::UnpauseWrites => self.srv.pause.end_failover_hold(),
                Action::Deliver {
                    channel,
                    message,
                    shard,
                } => {
                    self.srv
                        .pubsub
                        .publish(&self.srv, shard, &channel, &message);
                }
                Action::DeleteKeysInSlot(slot) => {
                    super::slot_keys::delete_slot_keys(&self.srv, slot)
                }
                Action::UnsubscribeShardChannels(slots) => self
                    .srv
                    .pubsub
                    .unsubscribe_shard_channels(&self.srv, |channel| {
                        slots.contains(tern_cluster::key_hash_slot(channel))
                    }),
                Action::Log { level, line } => crate::log::write(
                    match level {
                        LogLevel::Debug => 0,
                        LogLevel::Verbose => crate::log::VERBOSE,
                        LogLevel::Notice => crate::log::NOTICE,
                        LogLevel::Warning => crate::log::WARNING,
                    },
                    &line,
                ),
            },
        }
    }

    /// The cron: the state's tick, the settings re-read, links over their send-buffer limit
    /// dropped, and a replica's master link kept pointing at its master.
    fn cron(self: &Arc<Self>) {
        let config = super::settings::state_config(&self.srv);
        let announced = super::settings::announced(&self.srv);
        let limit = self.srv.config.get_i64("cluster-link-sendbuf-limit").max(0) as usize;
        let over: Vec<Link> = if limit > 0 {
            self.cluster
                .io
                .links
                .lock()
                .iter()
                .filter(|(_, l)| l.queued.load(Relaxed) > limit)
                .map(|(k, _)| *k)
                .collect()
        } else {
            Vec::new()
        };
        for link in &over {
            if let Some(l) = self.cluster.io.links.lock().remove(link) {
                l.reader.abort();
                self.cluster.io.buffer_limit_exceeded.fetch_add(1, Relaxed);
            }
        }
        let mut follow = None;
        self.with_state(|st, now| {
            st.config = config;
            st.set_announced(&announced);
            for link in over {
                st.link_closed(link);
            }
            st.tick(now);
            // A replica (from nodes.conf, say) not yet replicating follows its master.
            let me = st.node(&st.myself()).expect("myself");
            if !me.is_master() {
                if let Some(m) = me.master.and_then(|m| st.node(&m)) {
                    if !m.ip.is_empty() && m.port != 0 {
                        follow = Some((m.ip.clone(), m.port));
                    }
                }
            }
        });
        if let Some((ip, port)) = follow {
            if !self.srv.master_link.is_replica() {
                crate::master_link::start(self.srv.clone(), ip, port);
            }
        }
    }

    fn connect(&self, node: NodeId, ip: String, cport: u16) {
        let io = &self.cluster.io;
        let attempt = io.next_attempt.fetch_add(1, Relaxed);
        io.pending.lock().insert(attempt, node);
        let timeout = self.cluster.state.lock().config.node_timeout.max(1000);
        let bus = Bus {
            srv: self.srv.clone(),
            cluster: self.cluster.clone(),
        };
        tokio::spawn(async move {
            let res = tokio::time::timeout(
                Duration::from_millis(timeout),
                TcpStream::connect((ip.as_str(), cport)),
            )
            .await;
            let Some(node) = bus.cluster.io.pending.lock().remove(&attempt) else {
                return; // closed or forgotten meanwhile
            };
            match res {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    let bus = Arc::new(bus);
                    bus.open_link(Link::Outbound(node), stream);
                    bus.with_state(|st, now| st.link_connected(node, now));
                }
                _ => bus.with_state(|st, now| st.link_failed(node, now)),
            }
        });
    }

    /// Register a connected link and start its reader and writer.
    fn open_link(self: &Arc<Self>, link: Link, stream: TcpStream) {
        let peer_ip = stream
            .peer_addr()
            .map(|a| a.ip().to_canonical().to_string())
            .unwrap_or_default();
        let local_ip = stream
            .local_addr()
            .map(|a| a.ip().to_canonical().to_string())
            .unwrap_or_default();
        let (mut r, mut w) = stream.into_split();
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let queued = Arc::new(AtomicUsize::new(0));
        let name = Arc::new(Mutex::new(link));
        let q = queued.clone();
        tokio::spawn(async move {
            while let Some(buf) = rx.recv().await {
                if w.write_all(&buf).await.is_err() {
                    break;
                }
                q.fetch_sub(buf.len(), Relaxed);
            }
        });
        let bus = self.clone();
        let reader_name = name.clone();
        let reader = tokio::spawn(async move {
            let mut framer = MsgReader::new();
            let mut buf = vec![0u8; 16 * 1024];
            'read: loop {
                let n = match r.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                framer.feed(&buf[..n]);
                loop {
                    match framer.next_frame(MAX_MSG_LEN) {
                        Ok(None) => break,
                        Ok(Some(Ok(msg))) => {
                            let link = *reader_name.lock();
                            bus.received(link, &peer_ip, &local_ip, msg);
                        }
                        Ok(Some(Err(e))) => {
                            crate::log::write(
                                crate::log::VERBOSE,
                                &format!("Dropping a cluster bus message: {e}"),
                            );
                        }
                        Err(e) => {
                            crate::log::write(
                                crate::log::WARNING,
                                &format!("Closing a cluster bus link: {e}"),
                            );
                            break 'read;
                        }
                    }
                }
            }
            let link = *reader_name.lock();
            bus.broken(link);
        });
        self.cluster.io.links.lock().insert(
            link,
            LinkInfo {
                tx,
                queued,
                ctime: now_ms(),
                name,
                reader: reader.abort_handle(),
            },
        );
    }

    /// A message off `link`.
    fn received(&self, link: Link, peer_ip: &str, local_ip: &str, msg: tern_cluster::Msg) {
        let t = msg.msg_type() as usize;
        if t < self.cluster.io.received.len() {
            self.cluster.io.received[t].fetch_add(1, Relaxed);
        }
        if self.cluster.io.dropped(msg.msg_type()) {
            crate::log::warning("Dropping packet that matches debug drop filter");
            return;
        }
        self.with_state(|st, now| {
            // Peers reach us at the address they met us on: ours, unless announced.
            let kind = msg.msg_type();
            if matches!(link, Link::Inbound(_))
                && (kind == msg_type::MEET || (st.my_ip_unknown() && kind == msg_type::PING))
            {
                st.learn_my_ip(local_ip);
            }
            st.handle_message(link, peer_ip, &msg, now);
        });
    }

    /// The peer closed the link, or reading it failed.
    fn broken(&self, link: Link) {
        let removed = self.cluster.io.links.lock().remove(&link).is_some();
        if removed {
            self.with_state(|st, _| {
                // Only if the state still thinks the link is up (a close it asked for is
                // already forgotten).
                st.link_closed(link);
            });
        }
    }
}

async fn accept_loop(bus: Arc<Bus>, listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let id = bus.cluster.io.next_inbound.fetch_add(1, Relaxed) + 1;
        bus.open_link(Link::Inbound(id), stream);
    }
}

/// Whether the node's outbound link is up (CLUSTER LINKS lists only links bound to a node).
pub fn link_up(status: LinkStatus) -> bool {
    matches!(status, LinkStatus::Up { .. })
}

/// DEBUG CLUSTERLINK KILL: free the node's outbound link (`to`), inbound link (`from`), or
/// both, as a broken link is freed.
pub fn kill_links(cluster: &Cluster, node: NodeId, to: bool, from: bool) {
    let mut st = cluster.state.lock();
    let Some(n) = st.node(&node) else { return };
    let mut links = Vec::new();
    if to && link_up(n.link) {
        links.push(Link::Outbound(node));
    }
    if from {
        if let Some(i) = n.inbound {
            links.push(Link::Inbound(i));
        }
    }
    for link in links {
        if let Some(l) = cluster.io.links.lock().remove(&link) {
            l.reader.abort();
        }
        st.link_closed(link);
    }
    cluster.changed(&st);
}
