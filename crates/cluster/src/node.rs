//! What the bus and nodes.conf say about a node: its 40-character id (Redis's
//! `char name[CLUSTER_NAMELEN]`) and its flag bits (`CLUSTER_NODE_*`, carried as a 16-bit field
//! in message headers and gossip sections, spelled out by name in nodes.conf).

use std::fmt;

/// Length of a node id (and of a shard id): 40 hex characters, a SHA-1 in hex.
pub const NAME_LEN: usize = 40;

/// A node (or shard) id as it travels on the bus: 40 raw bytes. Redis generates lowercase hex,
/// but the bus does not check, so any bytes are kept as they came.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub [u8; NAME_LEN]);

impl NodeId {
    /// All zero bytes: on the bus, "no node" (e.g. the replicaof field of a master).
    pub const NULL: NodeId = NodeId([0; NAME_LEN]);

    /// An id from its text form; it must be 40 characters of `0-9 a-z` (Redis's
    /// `verifyClusterNodeId` accepts lowercase letters and digits).
    pub fn parse(s: &[u8]) -> Option<NodeId> {
        if s.len() != NAME_LEN || !s.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'z')) {
            return None;
        }
        let mut id = [0; NAME_LEN];
        id.copy_from_slice(s);
        Some(NodeId(id))
    }

    pub fn as_bytes(&self) -> &[u8; NAME_LEN] {
        &self.0
    }

    pub fn is_null(&self) -> bool {
        self.0 == [0; NAME_LEN]
    }
}

impl Default for NodeId {
    fn default() -> Self {
        NodeId::NULL
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({:?})", String::from_utf8_lossy(&self.0))
    }
}

/// Node flag bits, with Redis's values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NodeFlags(pub u16);

impl NodeFlags {
    pub const MASTER: NodeFlags = NodeFlags(1);
    pub const REPLICA: NodeFlags = NodeFlags(2);
    /// Not reachable for longer than the node timeout, from one node's point of view (`fail?`).
    pub const PFAIL: NodeFlags = NodeFlags(4);
    /// Failing, agreed by a majority of masters (`fail`).
    pub const FAIL: NodeFlags = NodeFlags(8);
    pub const MYSELF: NodeFlags = NodeFlags(16);
    /// Met but the first PING/PONG exchange is not over.
    pub const HANDSHAKE: NodeFlags = NodeFlags(32);
    /// Address unknown.
    pub const NOADDR: NodeFlags = NodeFlags(64);
    /// A MEET is to be sent to this node.
    pub const MEET: NodeFlags = NodeFlags(128);
    /// Master eligible for replica migration.
    pub const MIGRATE_TO: NodeFlags = NodeFlags(256);
    /// Replica that will not try to fail over.
    pub const NOFAILOVER: NodeFlags = NodeFlags(512);

    /// Flags that have a name in CLUSTER NODES / nodes.conf, in the order Redis prints them.
    pub const NAMED: [(NodeFlags, &'static str); 8] = [
        (NodeFlags::MYSELF, "myself"),
        (NodeFlags::MASTER, "master"),
        (NodeFlags::REPLICA, "slave"),
        (NodeFlags::PFAIL, "fail?"),
        (NodeFlags::FAIL, "fail"),
        (NodeFlags::HANDSHAKE, "handshake"),
        (NodeFlags::NOADDR, "noaddr"),
        (NodeFlags::NOFAILOVER, "nofailover"),
    ];

    pub fn empty() -> Self {
        NodeFlags(0)
    }

    pub fn bits(self) -> u16 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: NodeFlags) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn insert(&mut self, other: NodeFlags) {
        self.0 |= other.0;
    }

    pub fn remove(&mut self, other: NodeFlags) {
        self.0 &= !other.0;
    }

    /// The comma-separated names as CLUSTER NODES prints them (`noflags` when none is named).
    pub fn names(self) -> String {
        let names: Vec<&str> = Self::NAMED
            .iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .collect();
        if names.is_empty() {
            "noflags".to_string()
        } else {
            names.join(",")
        }
    }

    /// Flags from their comma-separated names, case-insensitive as Redis reads them; `noflags`
    /// adds nothing. `None` on an unknown name (Redis refuses to start on one).
    pub fn parse_names(s: &str) -> Option<NodeFlags> {
        let mut flags = NodeFlags::empty();
        for name in s.split(',') {
            if name.eq_ignore_ascii_case("noflags") {
                continue;
            }
            let (flag, _) = Self::NAMED
                .iter()
                .find(|(_, n)| n.eq_ignore_ascii_case(name))?;
            flags.insert(*flag);
        }
        Some(flags)
    }
}

impl std::ops::BitOr for NodeFlags {
    type Output = NodeFlags;
    fn bitor(self, rhs: NodeFlags) -> NodeFlags {
        NodeFlags(self.0 | rhs.0)
    }
}

impl fmt::Debug for NodeFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeFlags({:#x}: {})", self.0, self.names())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_names_round_trip() {
        let f = NodeFlags::MYSELF | NodeFlags::MASTER;
        assert_eq!(f.names(), "myself,master");
        assert_eq!(NodeFlags::parse_names("myself,master"), Some(f));
        assert_eq!(
            NodeFlags::parse_names("MASTER,Fail?"),
            Some(NodeFlags(1 | 4))
        );
        assert_eq!(NodeFlags::empty().names(), "noflags");
        assert_eq!(NodeFlags::parse_names("noflags"), Some(NodeFlags::empty()));
        assert_eq!(NodeFlags::parse_names("master,bogus"), None);
        assert_eq!(NodeFlags(NodeFlags::MEET.0).names(), "noflags");
    }

    #[test]
    fn node_ids() {
        let id = NodeId::parse(b"07c37dfeb235213a872192d90877d0cd55635b91").unwrap();
        assert_eq!(id.to_string(), "07c37dfeb235213a872192d90877d0cd55635b91");
        assert!(NodeId::parse(b"07C37DFEB235213A872192D90877D0CD55635B91").is_none());
        assert!(NodeId::parse(b"07c37d").is_none());
        assert!(NodeId::NULL.is_null());
    }
}
