//! The cluster config file (`cluster-config-file`, nodes.conf) of Redis 7.2: one line per node
//! in the CLUSTER NODES format plus its aux fields, then a `vars` line. Mirrors what Redis's
//! `clusterLoadConfig` accepts and `clusterGenNodeDescription` / `clusterSaveConfig` write:
//!
//! ```text
//! <id> <ip>:<port>@<cport>,<hostname>[,<aux>=<value>]* <flags> <master id|-> <ping sent ms>
//!     <pong received ms> <configEpoch> <connected|disconnected> [<slot>|<from>-<to>]*
//!     [[<slot>->-<id>]|[<slot>-<-<id>]]*
//! vars currentEpoch <n> lastVoteEpoch <n>
//! ```
//!
//! Parsing then writing a file Redis wrote gives the same bytes. Anything Redis refuses to load
//! is an error here (with the line), never a panic.

use std::fmt::{self, Write as _};

use crate::node::{NodeFlags, NodeId};
use crate::slots::{SlotSet, CLUSTER_SLOTS};

/// The offset from a client port to its default cluster bus port.
pub const CLUSTER_PORT_INCR: u32 = 10000;

/// A whole nodes.conf.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct NodesConf {
    /// Node lines in file order.
    pub nodes: Vec<NodeLine>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
}

/// Whether the link to a node is up, as the file (and CLUSTER NODES) says.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum LinkState {
    #[default]
    Connected,
    Disconnected,
}

/// A slot being moved, as listed on the `myself` line.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SlotMigration {
    /// `[slot->-node]`: this node is migrating the slot to `node`.
    Migrating { slot: u16, node: NodeId },
    /// `[slot-<-node]`: this node is importing the slot from `node`.
    Importing { slot: u16, node: NodeId },
}

/// One node line.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct NodeLine {
    pub id: NodeId,
    pub ip: String,
    /// The port of `ip:port`. Redis 7.2 writes nodes.conf with the plain TCP port here and
    /// the TLS port in `tls-port`, even with `tls-cluster yes`; CLUSTER NODES shows the TLS port
    /// here to TLS clients. Files without a `tcp-port`/`tls-port` field (before 7.2) hold the
    /// port of the bus's protocol.
    pub port: u16,
    /// Cluster bus port (`@cport`; files older than 4.0 omit it: then `port` + 10000).
    pub cport: u16,
    /// Announced hostname, empty if none.
    pub hostname: String,
    /// Aux field `shard-id`.
    pub shard_id: Option<NodeId>,
    /// Aux field `nodename` (the announced human-readable node name).
    pub human_nodename: Option<String>,
    /// Aux field `tcp-port`: accepted on load, never written by Redis 7.2 (its file always has
    /// the plain port in the address).
    pub tcp_port: Option<u16>,
    /// Aux field `tls-port` (always written by 7.2; 0 = no TLS port).
    pub tls_port: Option<u16>,
    pub flags: NodeFlags,
    pub master: Option<NodeId>,
    /// Unix time in ms of the PING in flight, 0 if none.
    pub ping_sent: i64,
    /// Unix time in ms of the last PONG.
    pub pong_received: i64,
    pub config_epoch: u64,
    pub link: LinkState,
    pub slots: SlotSet,
    /// Migrating/importing slots, in file order (Redis writes them by slot).
    pub migrations: Vec<SlotMigration>,
}

/// Why a nodes.conf cannot be loaded.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NodesConfError {
    /// 1-based line number (0 for a problem with the whole file).
    pub line_no: usize,
    /// The offending line, as Redis quotes it in "corrupted cluster config file".
    pub line: String,
    pub reason: &'static str,
}

impl fmt::Display for NodesConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line_no == 0 {
            write!(f, "corrupted cluster config file: {}", self.reason)
        } else {
            write!(
                f,
                "corrupted cluster config file, line {}: {} (\"{}\")",
                self.line_no, self.reason, self.line
            )
        }
    }
}

impl std::error::Error for NodesConfError {}

impl NodesConf {
    /// Parse a whole file. It must name exactly one `myself` node.
    pub fn parse(text: &str) -> Result<NodesConf, NodesConfError> {
        let mut conf = NodesConf::default();
        for (i, line) in text.split('\n').enumerate() {
            let err = |reason| NodesConfError {
                line_no: i + 1,
                line: line.trim_end().to_string(),
                reason,
            };
            let args: Vec<&str> = line.split_ascii_whitespace().collect();
            let Some(first) = args.first() else {
                continue; // blank lines are padding left by an interrupted rewrite
            };
            if first.eq_ignore_ascii_case("vars") {
                if args.len().is_multiple_of(2) {
                    return Err(err("vars line without a value for each name"));
                }
                for pair in args[1..].chunks_exact(2) {
                    // Unknown variables are skipped, as Redis does.
                    if pair[0].eq_ignore_ascii_case("currentEpoch") {
                        conf.current_epoch =
                            pair[1].parse().map_err(|_| err("bad currentEpoch"))?;
                    } else if pair[0].eq_ignore_ascii_case("lastVoteEpoch") {
                        conf.last_vote_epoch =
                            pair[1].parse().map_err(|_| err("bad lastVoteEpoch"))?;
                    }
                }
                continue;
            }
            let node = NodeLine::parse(&args).map_err(err)?;
            if node.flags.contains(NodeFlags::MYSELF) && conf.myself().is_some() {
                return Err(err("a second node flagged myself"));
            }
            conf.nodes.push(node);
        }
        if conf.myself().is_none() {
            return Err(NodesConfError {
                line_no: 0,
                line: String::new(),
                reason: "no myself node",
            });
        }
        Ok(conf)
    }

    /// The line of this node.
    pub fn myself(&self) -> Option<&NodeLine> {
        self.nodes
            .iter()
            .find(|n| n.flags.contains(NodeFlags::MYSELF))
    }

    /// The file's text, as Redis writes it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for node in &self.nodes {
            out.push_str(&node.to_line(true));
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "vars currentEpoch {} lastVoteEpoch {}",
            self.current_epoch, self.last_vote_epoch
        );
        out
    }
}

impl NodeLine {
    /// A node line split into its whitespace-separated fields.
    fn parse(args: &[&str]) -> Result<NodeLine, &'static str> {
        if args.len() < 8 {
            return Err("node line with fewer than 8 fields");
        }
        let id = NodeId::parse(args[0].as_bytes()).ok_or("bad node id")?;
        let mut node = NodeLine {
            id,
            ..NodeLine::default()
        };

        // ip:port[@cport][,hostname[,aux=value]*]
        let mut parts = args[1].split(',');
        let address = parts.next().unwrap_or_default();
        node.hostname = parts.next().unwrap_or_default().to_string();
        for aux in parts {
            let (key, value) = aux.split_once('=').ok_or("aux field without '='")?;
            if value.contains('=') {
                return Err("aux field with more than one '='");
            }
            if !is_valid_aux(key) || !is_valid_aux(value) {
                return Err("aux field with an invalid character");
            }
            match key {
                "shard-id" => {
                    node.shard_id = Some(NodeId::parse(value.as_bytes()).ok_or("bad shard-id")?)
                }
                "nodename" => node.human_nodename = Some(value.to_string()),
                "tcp-port" => node.tcp_port = Some(parse_aux_port(value)?),
                "tls-port" => node.tls_port = Some(parse_aux_port(value)?),
                _ => return Err("unknown aux field"),
            }
        }
        let (ip, ports) = address.rsplit_once(':').ok_or("address without ':'")?;
        node.ip = ip.to_string();
        let (port, cport) = match ports.split_once('@') {
            Some((port, cport)) => (port, Some(cport)),
            None => (ports, None),
        };
        node.port = port.parse().map_err(|_| "bad port")?;
        node.cport = match cport {
            Some(c) => c.parse().map_err(|_| "bad cluster bus port")?,
            None => u16::try_from(node.port as u32 + CLUSTER_PORT_INCR)
                .map_err(|_| "port too high for a default cluster bus port")?,
        };

        node.flags = NodeFlags::parse_names(args[2]).ok_or("unknown node flag")?;
        node.master = if args[3].starts_with('-') {
            None
        } else {
            Some(NodeId::parse(args[3].as_bytes()).ok_or("bad master id")?)
        };
        node.ping_sent = args[4].parse().map_err(|_| "bad ping-sent time")?;
        node.pong_received = args[5].parse().map_err(|_| "bad pong-received time")?;
        node.config_epoch = args[6].parse().map_err(|_| "bad configEpoch")?;
        node.link = match args[7] {
            "connected" => LinkState::Connected,
            "disconnected" => LinkState::Disconnected,
            _ => return Err("bad link state"),
        };
        for slot_arg in &args[8..] {
            if let Some(entry) = slot_arg.strip_prefix('[') {
                node.migrations.push(parse_migration(entry)?);
            } else if let Some((start, end)) = slot_arg.split_once('-') {
                let (start, end) = (parse_slot(start)?, parse_slot(end)?);
                // A reversed range adds nothing, as in Redis.
                if start <= end {
                    node.slots.insert_range(start, end);
                }
            } else {
                node.slots.insert(parse_slot(slot_arg)?);
            }
        }
        Ok(node)
    }

    /// The line as nodes.conf holds it (`with_aux`), or as CLUSTER NODES shows it to clients
    /// (no aux fields, no comma when there is no hostname).
    pub fn to_line(&self, with_aux: bool) -> String {
        let mut s = String::with_capacity(128);
        let _ = write!(s, "{} {}:{}@{}", self.id, self.ip, self.port, self.cport);
        if !self.hostname.is_empty() || with_aux {
            s.push(',');
            s.push_str(&self.hostname);
        }
        if with_aux {
            // Redis writes its aux table backwards: tls-port, tcp-port, nodename, shard-id.
            if let Some(p) = self.tls_port {
                let _ = write!(s, ",tls-port={p}");
            }
            if let Some(p) = self.tcp_port {
                let _ = write!(s, ",tcp-port={p}");
            }
            if let Some(name) = self.human_nodename.as_deref().filter(|n| !n.is_empty()) {
                let _ = write!(s, ",nodename={name}");
            }
            if let Some(id) = self.shard_id {
                let _ = write!(s, ",shard-id={id}");
            }
        }
        let master = self
            .master
            .map(|m| m.to_string())
            .unwrap_or_else(|| "-".to_string());
        let link = match self.link {
            LinkState::Connected => "connected",
            LinkState::Disconnected => "disconnected",
        };
        let _ = write!(
            s,
            " {} {} {} {} {} {}",
            self.flags.names(),
            master,
            self.ping_sent,
            self.pong_received,
            self.config_epoch,
            link
        );
        for (start, end) in self.slots.ranges() {
            if start == end {
                let _ = write!(s, " {start}");
            } else {
                let _ = write!(s, " {start}-{end}");
            }
        }
        for m in &self.migrations {
            let _ = match m {
                SlotMigration::Migrating { slot, node } => write!(s, " [{slot}->-{node}]"),
                SlotMigration::Importing { slot, node } => write!(s, " [{slot}-<-{node}]"),
            };
        }
        s
    }
}

/// Redis's `isValidAuxChar`: letters, digits, and anything outside ``!#$%&()*+:;<>?@[]^{|}~``
/// (and not NUL).
fn is_valid_aux(s: &str) -> bool {
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() || (c != 0 && !b"!#$%&()*+:;<>?@[]^{|}~".contains(&c)))
}

/// A `tcp-port`/`tls-port` value: 1 to 5 digits, below 65536.
fn parse_aux_port(v: &str) -> Result<u16, &'static str> {
    if v.is_empty() || v.len() > 5 {
        return Err("bad aux port");
    }
    v.parse().map_err(|_| "bad aux port")
}

fn parse_slot(s: &str) -> Result<u16, &'static str> {
    match s.parse::<u16>() {
        Ok(slot) if (slot as usize) < CLUSTER_SLOTS => Ok(slot),
        _ => Err("bad slot"),
    }
}

/// `<slot>->-<id>]` or `<slot>-<-<id>]` (the `[` already stripped).
fn parse_migration(entry: &str) -> Result<SlotMigration, &'static str> {
    let entry = entry
        .strip_suffix(']')
        .ok_or("slot migration without ']'")?;
    if let Some((slot, node)) = entry.split_once("->-") {
        let node = NodeId::parse(node.as_bytes()).ok_or("bad node id in slot migration")?;
        return Ok(SlotMigration::Migrating {
            slot: parse_slot(slot)?,
            node,
        });
    }
    if let Some((slot, node)) = entry.split_once("-<-") {
        let node = NodeId::parse(node.as_bytes()).ok_or("bad node id in slot migration")?;
        return Ok(SlotMigration::Importing {
            slot: parse_slot(slot)?,
            node,
        });
    }
    Err("bad slot migration")
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca";
    const B: &str = "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1";

    #[test]
    fn old_format_line_gets_default_bus_port_and_comma() {
        let text = format!("{A} 127.0.0.1:30001 myself,master - 0 0 1 connected 0-10 12\n");
        let conf = NodesConf::parse(&text).unwrap();
        let n = &conf.nodes[0];
        assert_eq!(n.cport, 40001);
        assert_eq!(
            n.slots.ranges().collect::<Vec<_>>(),
            vec![(0, 10), (12, 12)]
        );
        assert_eq!(
            conf.to_text(),
            format!(
                "{A} 127.0.0.1:30001@40001, myself,master - 0 0 1 connected 0-10 12\n\
                 vars currentEpoch 0 lastVoteEpoch 0\n"
            )
        );
        assert_eq!(
            n.to_line(false),
            format!("{A} 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-10 12")
        );
    }

    #[test]
    fn ipv6_hostname_aux_and_migrations() {
        let text = format!(
            "{A} ::1:7000@17000,host.example,tcp-port=6379,nodename=n1,shard-id={B} \
             myself,master - 0 1700000000000 3 connected 5 [5->-{B}] [7-<-{B}]\n\
             {B} 10.0.0.2:7001@17001,,tls-port=0 slave,fail? {A} 1 2 3 disconnected\n\
             vars lastVoteEpoch 2 currentEpoch 9 futureVar x\n"
        );
        let conf = NodesConf::parse(&text).unwrap();
        let me = conf.myself().unwrap();
        assert_eq!(me.ip, "::1");
        assert_eq!(me.hostname, "host.example");
        assert_eq!(me.tcp_port, Some(6379));
        assert_eq!(me.human_nodename.as_deref(), Some("n1"));
        assert_eq!(me.shard_id.unwrap().to_string(), B);
        assert_eq!(me.migrations.len(), 2);
        let r = &conf.nodes[1];
        assert_eq!(r.master.unwrap().to_string(), A);
        assert_eq!(r.flags, NodeFlags::REPLICA | NodeFlags::PFAIL);
        assert_eq!(r.link, LinkState::Disconnected);
        assert_eq!((conf.current_epoch, conf.last_vote_epoch), (9, 2));
        let again = NodesConf::parse(&conf.to_text()).unwrap();
        assert_eq!(again, conf);
        assert_eq!(me.to_line(false), format!("{A} ::1:7000@17000,host.example myself,master - 0 1700000000000 3 connected 5 [5->-{B}] [7-<-{B}]"));
    }

    #[test]
    fn rejects_what_redis_refuses() {
        let good =
            format!("{A} 127.0.0.1:7000@17000,,shard-id={B} myself,master - 0 0 0 connected");
        assert!(NodesConf::parse(&good).is_ok());
        let cases = [
            format!("{A} 127.0.0.1:7000@17000 myself,master - 0 0 0"),
            format!("{A} 127.0.0.1:7000@17000 myself,bogus - 0 0 0 connected"),
            format!("{A} 127.0.0.1:7000@17000,,colour=blue myself,master - 0 0 0 connected"),
            format!("{A} 127.0.0.1:7000@17000,,shard-id=xyz myself,master - 0 0 0 connected"),
            format!("{A} 127.0.0.1:7000@17000,,tls-port=123456 myself,master - 0 0 0 connected"),
            format!("{A} 127.0.0.1:7000@17000,,nodename=a{{b myself,master - 0 0 0 connected"),
            format!("{A} 127.0.0.1 myself,master - 0 0 0 connected"),
            format!("{A} 127.0.0.1:7000@17000 myself,master - 0 0 0 connected 16384"),
            format!("{A} 127.0.0.1:7000@17000 myself,master - 0 0 0 connected [1->-zz]"),
            format!("{A} 127.0.0.1:7000@17000 myself,master - 0 0 0 connected [1=>-{B}]"),
            format!("{A} 127.0.0.1:7000@17000 myself,master bad 0 0 0 connected"),
            "ABC 127.0.0.1:7000@17000 myself,master - 0 0 0 connected".to_string(),
            format!("{good}\nvars currentEpoch"),
            format!("{good}\n{good}"),
            format!("{B} 127.0.0.1:7000@17000 master - 0 0 0 connected"),
            String::new(),
        ];
        for case in cases {
            let err = NodesConf::parse(&case).expect_err(&case);
            assert!(!err.to_string().is_empty());
        }
    }
}
