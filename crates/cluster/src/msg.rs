//! Cluster bus messages as Redis 7.2 sends them: the fixed header (Redis's `clusterMsg` up to
//! its `data` union), then a body that depends on the type: gossip sections
//! (`clusterMsgDataGossip`) and ping extensions (`clusterMsgPingExt`) for PING/PONG/MEET,
//! `clusterMsgDataFail`, `clusterMsgDataPublish`, `clusterMsgDataUpdate`, `clusterMsgModule`,
//! or nothing (FAILOVER_AUTH_REQUEST/ACK, MFSTART).
//!
//! Integers are big-endian except a MODULE message's module id, which Redis copies in its own
//! byte order (little-endian on every platform it runs on). Reserved bytes are written as zero
//! and ignored when read. [`Msg::encode`] reproduces a message Redis wrote byte for byte;
//! [`Msg::decode`] accepts what Redis accepts and returns an error, never panics, on anything
//! else. [`frame_len`] splits a TCP stream into messages.

use std::fmt;

use crate::node::{NodeFlags, NodeId, NAME_LEN};
use crate::slots::{SlotSet, SLOT_BITMAP_LEN};

/// First four bytes of every message ("Redis Cluster message bus").
pub const SIGNATURE: [u8; 4] = *b"RCmb";
/// The only protocol version Redis 7.2 accepts.
pub const PROTOCOL_VERSION: u16 = 1;
/// Size of the fixed header (Redis's `CLUSTERMSG_MIN_LEN`); no valid message is shorter.
pub const HEADER_LEN: usize = 2256;
/// Size of one gossip section.
pub const GOSSIP_LEN: usize = 104;
/// Size of an IP address field (`NET_IP_STR_LEN`), NUL-terminated.
pub const IP_LEN: usize = 46;
/// Size of Redis's whole `clusterMsg` struct (header plus the largest body, UPDATE's).
pub const CLUSTER_MSG_SIZE: usize = 4352;
/// Size of a ping extension's own header (length, type, 2 unused bytes).
pub const EXT_HEADER_LEN: usize = 8;

/// Byte offsets of the header fields.
mod off {
    pub const SIG: usize = 0;
    pub const TOTLEN: usize = 4;
    pub const VER: usize = 8;
    pub const PORT: usize = 10;
    pub const TYPE: usize = 12;
    pub const COUNT: usize = 14;
    pub const CURRENT_EPOCH: usize = 16;
    pub const CONFIG_EPOCH: usize = 24;
    pub const OFFSET: usize = 32;
    pub const SENDER: usize = 40;
    pub const SLOTS: usize = 80;
    pub const REPLICAOF: usize = 2128;
    pub const MYIP: usize = 2168;
    pub const EXTENSIONS: usize = 2214;
    pub const PPORT: usize = 2246;
    pub const CPORT: usize = 2248;
    pub const FLAGS: usize = 2250;
    pub const STATE: usize = 2252;
    pub const MFLAGS: usize = 2253;
}

/// Message type numbers.
pub mod msg_type {
    pub const PING: u16 = 0;
    pub const PONG: u16 = 1;
    pub const MEET: u16 = 2;
    pub const FAIL: u16 = 3;
    pub const PUBLISH: u16 = 4;
    pub const FAILOVER_AUTH_REQUEST: u16 = 5;
    pub const FAILOVER_AUTH_ACK: u16 = 6;
    pub const UPDATE: u16 = 7;
    pub const MFSTART: u16 = 8;
    pub const MODULE: u16 = 9;
    pub const PUBLISHSHARD: u16 = 10;
    /// Number of known types (the size of Redis's per-type message counters).
    pub const COUNT: u16 = 11;

    /// The name CLUSTER INFO uses in `cluster_stats_messages_<name>_sent`.
    pub fn name(t: u16) -> &'static str {
        match t {
            PING => "ping",
            PONG => "pong",
            MEET => "meet",
            FAIL => "fail",
            PUBLISH => "publish",
            PUBLISHSHARD => "publishshard",
            FAILOVER_AUTH_REQUEST => "auth-req",
            FAILOVER_AUTH_ACK => "auth-ack",
            UPDATE => "update",
            MFSTART => "mfstart",
            MODULE => "module",
            _ => "unknown",
        }
    }
}

/// Ping extension type numbers.
pub mod ext_type {
    pub const HOSTNAME: u16 = 0;
    pub const HUMAN_NODENAME: u16 = 1;
    pub const FORGOTTEN_NODE: u16 = 2;
    pub const SHARD_ID: u16 = 3;
}

/// Why bytes are not a cluster bus message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Fewer bytes than the message needs (`needed` is known once 8 bytes are there).
    Truncated {
        needed: usize,
        got: usize,
    },
    /// The buffer holds more than the one message its header announces.
    TrailingBytes {
        totlen: usize,
        got: usize,
    },
    /// The first four bytes are not "RCmb".
    BadSignature([u8; 4]),
    /// The announced total length is below the header size.
    LengthTooSmall(u32),
    /// The announced total length is above the reader's bound.
    TooLong {
        totlen: usize,
        max: usize,
    },
    UnsupportedVersion(u16),
    /// The total length does not match what the type and its own length fields say.
    LengthMismatch {
        msg_type: u16,
        totlen: usize,
        expected: usize,
    },
    /// A ping extension is malformed.
    BadExtension {
        index: usize,
        reason: &'static str,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { needed, got } => {
                write!(f, "truncated message: {got} bytes of {needed}")
            }
            DecodeError::TrailingBytes { totlen, got } => {
                write!(f, "{got} bytes for a message of {totlen}")
            }
            DecodeError::BadSignature(sig) => write!(f, "bad message signature {sig:?}"),
            DecodeError::LengthTooSmall(n) => write!(f, "message length {n} below the header"),
            DecodeError::TooLong { totlen, max } => {
                write!(f, "message length {totlen} above the limit {max}")
            }
            DecodeError::UnsupportedVersion(v) => write!(f, "unsupported bus protocol version {v}"),
            DecodeError::LengthMismatch {
                msg_type: t,
                totlen,
                expected,
            } => write!(
                f,
                "invalid {} message of length {totlen} but expected length {expected}",
                msg_type::name(*t)
            ),
            DecodeError::BadExtension { index, reason } => {
                write!(f, "ping extension {index}: {reason}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// How many bytes the message at the front of `buf` takes, from its header's totlen, so a reader
/// can split a stream: `Ok(None)` until 8 bytes are there; an error when the signature is wrong
/// or the length is below the header size (Redis then closes the link). Redis sets no upper
/// bound; a reader should apply its own before buffering.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let sig: [u8; 4] = buf[0..4].try_into().expect("4 bytes");
    if sig != SIGNATURE {
        return Err(DecodeError::BadSignature(sig));
    }
    let totlen = be_u32(buf, off::TOTLEN);
    if (totlen as usize) < HEADER_LEN {
        return Err(DecodeError::LengthTooSmall(totlen));
    }
    Ok(Some(totlen as usize))
}

/// One message off a link: decoded, or the reason its body was refused.
pub type Frame = Result<Msg, DecodeError>;

/// Splits the bytes read from a bus link into messages. Redis closes a link on a bad signature
/// or length (the `Err` of [`MsgReader::next_frame`]) but only drops a message whose body does
/// not decode (the inner `Err`), keeping the link.
#[derive(Debug, Default)]
pub struct MsgReader {
    buf: Vec<u8>,
}

impl MsgReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Append bytes read from the link.
    pub fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// Bytes buffered and not yet returned as a message.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next whole message, if one is buffered. Frames longer than `max_len` are refused as
    /// a framing error before they are buffered whole (Redis sets no bound; a reader should).
    pub fn next_frame(&mut self, max_len: usize) -> Result<Option<Frame>, DecodeError> {
        let Some(len) = frame_len(&self.buf)? else {
            return Ok(None);
        };
        if len > max_len {
            return Err(DecodeError::TooLong {
                totlen: len,
                max: max_len,
            });
        }
        if self.buf.len() < len {
            return Ok(None);
        }
        let msg = Msg::decode(&self.buf[..len]);
        self.buf.drain(..len);
        Ok(Some(msg))
    }
}

/// A NUL-padded IP address field (46 bytes). Empty (first byte zero) in a header means "use the
/// address the connection comes from".
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ip(pub [u8; IP_LEN]);

impl Default for Ip {
    fn default() -> Self {
        Ip([0; IP_LEN])
    }
}

impl Ip {
    /// The field for `ip`; `None` if it does not fit with its terminating NUL.
    pub fn new(ip: &str) -> Option<Ip> {
        if ip.len() >= IP_LEN || ip.as_bytes().contains(&0) {
            return None;
        }
        let mut raw = [0; IP_LEN];
        raw[..ip.len()].copy_from_slice(ip.as_bytes());
        Some(Ip(raw))
    }

    /// The address bytes, up to the first NUL.
    pub fn as_bytes(&self) -> &[u8] {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(IP_LEN);
        &self.0[..end]
    }

    pub fn is_empty(&self) -> bool {
        self.0[0] == 0
    }
}

impl fmt::Display for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

impl fmt::Debug for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ip({:?})", self.to_string())
    }
}

/// The three message-flag bytes (`mflags`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct MsgFlags(pub [u8; 3]);

impl MsgFlags {
    /// Byte 0: the master is paused for a manual failover.
    pub const PAUSED: u8 = 1;
    /// Byte 0: vote for this FAILOVER_AUTH_REQUEST even though the master is up.
    pub const FORCEACK: u8 = 2;
    /// Byte 0: the message carries ping extensions.
    pub const EXT_DATA: u8 = 4;

    pub fn paused(self) -> bool {
        self.0[0] & Self::PAUSED != 0
    }
    pub fn force_ack(self) -> bool {
        self.0[0] & Self::FORCEACK != 0
    }
    pub fn ext_data(self) -> bool {
        self.0[0] & Self::EXT_DATA != 0
    }
}

/// The cluster state a node reports in its header.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum ClusterState {
    #[default]
    Ok,
    Fail,
    /// Any other byte, kept as it came.
    Other(u8),
}

impl ClusterState {
    pub fn from_byte(b: u8) -> Self {
        match b {
            0 => ClusterState::Ok,
            1 => ClusterState::Fail,
            b => ClusterState::Other(b),
        }
    }
    pub fn to_byte(self) -> u8 {
        match self {
            ClusterState::Ok => 0,
            ClusterState::Fail => 1,
            ClusterState::Other(b) => b,
        }
    }
}

/// The fields of the fixed header that are not derived from the body (signature, totlen,
/// version, type, count and the extension count are).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Header {
    /// Client port (the TLS port when the bus runs over TLS).
    pub port: u16,
    pub current_epoch: u64,
    /// The sender's configEpoch, or its master's when it is a replica.
    pub config_epoch: u64,
    /// Replication offset.
    pub offset: u64,
    pub sender: NodeId,
    /// Slots the sender (or its master, for a replica) serves.
    pub slots: SlotSet,
    /// The sender's master; `None` is sent as 40 zero bytes.
    pub replicaof: Option<NodeId>,
    /// `cluster-announce-ip`, or empty.
    pub myip: Ip,
    /// The other client port (plain TCP when `port` is the TLS one and vice versa), 0 if none.
    pub pport: u16,
    /// Cluster bus port.
    pub cport: u16,
    pub flags: NodeFlags,
    pub state: ClusterState,
    pub mflags: MsgFlags,
}

/// One gossip section: what the sender knows about another node.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Gossip {
    pub node: NodeId,
    /// Seconds (Unix time) of the last PING sent to it, 0 if none pending.
    pub ping_sent: u32,
    /// Seconds (Unix time) of the last PONG received from it.
    pub pong_received: u32,
    pub ip: Ip,
    pub port: u16,
    pub cport: u16,
    pub flags: NodeFlags,
    pub pport: u16,
}

/// A ping extension.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum PingExt {
    /// `cluster-announce-hostname` (sent only when set).
    Hostname(Vec<u8>),
    /// `cluster-announce-human-nodename` (sent only when set).
    HumanNodename(Vec<u8>),
    /// A node the sender forgot (CLUSTER FORGET) and will not re-add for `ttl` more seconds.
    ForgottenNode { node: NodeId, ttl: u64 },
    /// The sender's shard id (always sent).
    ShardId(NodeId),
    /// A type this version does not know: its bytes after the extension header, padding included.
    Unknown { ext_type: u16, data: Vec<u8> },
}

impl PingExt {
    pub fn ext_type(&self) -> u16 {
        match self {
            PingExt::Hostname(_) => ext_type::HOSTNAME,
            PingExt::HumanNodename(_) => ext_type::HUMAN_NODENAME,
            PingExt::ForgottenNode { .. } => ext_type::FORGOTTEN_NODE,
            PingExt::ShardId(_) => ext_type::SHARD_ID,
            PingExt::Unknown { ext_type, .. } => *ext_type,
        }
    }
}

/// The body of PING, PONG and MEET.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Ping {
    pub gossip: Vec<Gossip>,
    pub extensions: Vec<PingExt>,
}

/// The body of PUBLISH and PUBLISHSHARD.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Publish {
    pub channel: Vec<u8>,
    pub message: Vec<u8>,
}

/// The body of UPDATE: the configuration of a node the receiver has out of date.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Update {
    pub config_epoch: u64,
    pub node: NodeId,
    pub slots: SlotSet,
}

/// The body of MODULE.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Module {
    /// The sending module's id, in the byte order Redis copies it in (read as little-endian).
    pub module_id: u64,
    pub msg_type: u8,
    pub payload: Vec<u8>,
}

/// A message of a type this version does not know; Redis accepts (and ignores) those.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct UnknownMsg {
    pub msg_type: u16,
    pub count: u16,
    pub extensions: u16,
    pub data: Vec<u8>,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Body {
    Ping(Ping),
    Pong(Ping),
    Meet(Ping),
    /// The named node is failing.
    Fail(NodeId),
    Publish(Publish),
    PublishShard(Publish),
    FailoverAuthRequest,
    FailoverAuthAck,
    MfStart,
    Update(Box<Update>),
    Module(Module),
    Unknown(UnknownMsg),
}

impl Body {
    pub fn msg_type(&self) -> u16 {
        match self {
            Body::Ping(_) => msg_type::PING,
            Body::Pong(_) => msg_type::PONG,
            Body::Meet(_) => msg_type::MEET,
            Body::Fail(_) => msg_type::FAIL,
            Body::Publish(_) => msg_type::PUBLISH,
            Body::PublishShard(_) => msg_type::PUBLISHSHARD,
            Body::FailoverAuthRequest => msg_type::FAILOVER_AUTH_REQUEST,
            Body::FailoverAuthAck => msg_type::FAILOVER_AUTH_ACK,
            Body::MfStart => msg_type::MFSTART,
            Body::Update(_) => msg_type::UPDATE,
            Body::Module(_) => msg_type::MODULE,
            Body::Unknown(u) => u.msg_type,
        }
    }

    /// The gossip and extensions of a PING, PONG or MEET.
    pub fn ping(&self) -> Option<&Ping> {
        match self {
            Body::Ping(p) | Body::Pong(p) | Body::Meet(p) => Some(p),
            _ => None,
        }
    }
}

/// A whole cluster bus message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Msg {
    pub header: Header,
    pub body: Body,
}

impl Msg {
    pub fn new(header: Header, body: Body) -> Self {
        Msg { header, body }
    }

    pub fn msg_type(&self) -> u16 {
        self.body.msg_type()
    }

    /// The message's bytes. The EXT_DATA flag is set when a PING/PONG/MEET carries extensions.
    /// Panics only on sizes no valid message has (more than 65535 gossip sections or
    /// extensions, or a total past 4 GiB).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![0u8; HEADER_LEN];
        let h = &self.header;
        let mut mflags = h.mflags;
        let (mut count, mut extensions) = (0u16, 0u16);
        match &self.body {
            Body::Ping(p) | Body::Pong(p) | Body::Meet(p) => {
                count = u16::try_from(p.gossip.len()).expect("at most 65535 gossip sections");
                extensions = u16::try_from(p.extensions.len()).expect("at most 65535 extensions");
                if !p.extensions.is_empty() {
                    mflags.0[0] |= MsgFlags::EXT_DATA;
                }
                for g in &p.gossip {
                    encode_gossip(&mut out, g);
                }
                for e in &p.extensions {
                    encode_ext(&mut out, e);
                }
            }
            Body::Fail(node) => out.extend_from_slice(node.as_bytes()),
            Body::Publish(p) | Body::PublishShard(p) => {
                let channel_len = u32::try_from(p.channel.len()).expect("channel below 4 GiB");
                let message_len = u32::try_from(p.message.len()).expect("message below 4 GiB");
                out.extend_from_slice(&channel_len.to_be_bytes());
                out.extend_from_slice(&message_len.to_be_bytes());
                out.extend_from_slice(&p.channel);
                out.extend_from_slice(&p.message);
            }
            Body::FailoverAuthRequest | Body::FailoverAuthAck | Body::MfStart => {}
            Body::Update(u) => {
                out.extend_from_slice(&u.config_epoch.to_be_bytes());
                out.extend_from_slice(u.node.as_bytes());
                out.extend_from_slice(u.slots.as_bytes());
            }
            Body::Module(m) => {
                let len = u32::try_from(m.payload.len()).expect("module payload below 4 GiB");
                out.extend_from_slice(&m.module_id.to_le_bytes());
                out.extend_from_slice(&len.to_be_bytes());
                out.push(m.msg_type);
                out.extend_from_slice(&m.payload);
            }
            Body::Unknown(u) => {
                count = u.count;
                extensions = u.extensions;
                out.extend_from_slice(&u.data);
            }
        }
        let totlen = u32::try_from(out.len()).expect("message below 4 GiB");
        out[off::SIG..off::SIG + 4].copy_from_slice(&SIGNATURE);
        put_u32(&mut out, off::TOTLEN, totlen);
        put_u16(&mut out, off::VER, PROTOCOL_VERSION);
        put_u16(&mut out, off::PORT, h.port);
        put_u16(&mut out, off::TYPE, self.msg_type());
        put_u16(&mut out, off::COUNT, count);
        put_u64(&mut out, off::CURRENT_EPOCH, h.current_epoch);
        put_u64(&mut out, off::CONFIG_EPOCH, h.config_epoch);
        put_u64(&mut out, off::OFFSET, h.offset);
        out[off::SENDER..off::SENDER + NAME_LEN].copy_from_slice(h.sender.as_bytes());
        out[off::SLOTS..off::SLOTS + SLOT_BITMAP_LEN].copy_from_slice(h.slots.as_bytes());
        let replicaof = h.replicaof.unwrap_or(NodeId::NULL);
        out[off::REPLICAOF..off::REPLICAOF + NAME_LEN].copy_from_slice(replicaof.as_bytes());
        out[off::MYIP..off::MYIP + IP_LEN].copy_from_slice(&h.myip.0);
        put_u16(&mut out, off::EXTENSIONS, extensions);
        put_u16(&mut out, off::PPORT, h.pport);
        put_u16(&mut out, off::CPORT, h.cport);
        put_u16(&mut out, off::FLAGS, h.flags.bits());
        out[off::STATE] = h.state.to_byte();
        out[off::MFLAGS..off::MFLAGS + 3].copy_from_slice(&mflags.0);
        out
    }

    /// Decode exactly one message (`buf` must be as long as its header says).
    pub fn decode(buf: &[u8]) -> Result<Msg, DecodeError> {
        let totlen = match frame_len(buf)? {
            Some(n) => n,
            None => {
                return Err(DecodeError::Truncated {
                    needed: HEADER_LEN,
                    got: buf.len(),
                })
            }
        };
        if buf.len() < totlen {
            return Err(DecodeError::Truncated {
                needed: totlen,
                got: buf.len(),
            });
        }
        if buf.len() > totlen {
            return Err(DecodeError::TrailingBytes {
                totlen,
                got: buf.len(),
            });
        }
        let version = be_u16(buf, off::VER);
        if version != PROTOCOL_VERSION {
            return Err(DecodeError::UnsupportedVersion(version));
        }
        let t = be_u16(buf, off::TYPE);
        let count = be_u16(buf, off::COUNT);
        let extensions = be_u16(buf, off::EXTENSIONS);
        let replicaof = name_at(buf, off::REPLICAOF);
        let header = Header {
            port: be_u16(buf, off::PORT),
            current_epoch: be_u64(buf, off::CURRENT_EPOCH),
            config_epoch: be_u64(buf, off::CONFIG_EPOCH),
            offset: be_u64(buf, off::OFFSET),
            sender: name_at(buf, off::SENDER),
            slots: slots_at(buf, off::SLOTS),
            replicaof: (!replicaof.is_null()).then_some(replicaof),
            myip: ip_at(buf, off::MYIP),
            pport: be_u16(buf, off::PPORT),
            cport: be_u16(buf, off::CPORT),
            flags: NodeFlags(be_u16(buf, off::FLAGS)),
            state: ClusterState::from_byte(buf[off::STATE]),
            mflags: MsgFlags(
                buf[off::MFLAGS..off::MFLAGS + 3]
                    .try_into()
                    .expect("3 bytes"),
            ),
        };
        let body = &buf[HEADER_LEN..];
        let mismatch = |expected: u64| DecodeError::LengthMismatch {
            msg_type: t,
            totlen,
            expected: usize::try_from(expected).unwrap_or(usize::MAX),
        };
        let body = match t {
            msg_type::PING | msg_type::PONG | msg_type::MEET => {
                let ping = decode_ping(body, count, extensions, header.mflags, &mismatch)?;
                match t {
                    msg_type::PING => Body::Ping(ping),
                    msg_type::PONG => Body::Pong(ping),
                    _ => Body::Meet(ping),
                }
            }
            msg_type::FAIL => {
                if body.len() != NAME_LEN {
                    return Err(mismatch((HEADER_LEN + NAME_LEN) as u64));
                }
                Body::Fail(name_at(body, 0))
            }
            msg_type::PUBLISH | msg_type::PUBLISHSHARD => {
                if body.len() < 8 {
                    return Err(mismatch((HEADER_LEN + 8) as u64));
                }
                let channel_len = be_u32(body, 0) as u64;
                let message_len = be_u32(body, 4) as u64;
                let expected = 8 + channel_len + message_len;
                if body.len() as u64 != expected {
                    return Err(mismatch(HEADER_LEN as u64 + expected));
                }
                let split = 8 + channel_len as usize;
                let publish = Publish {
                    channel: body[8..split].to_vec(),
                    message: body[split..].to_vec(),
                };
                if t == msg_type::PUBLISH {
                    Body::Publish(publish)
                } else {
                    Body::PublishShard(publish)
                }
            }
            msg_type::FAILOVER_AUTH_REQUEST | msg_type::FAILOVER_AUTH_ACK | msg_type::MFSTART => {
                if !body.is_empty() {
                    return Err(mismatch(HEADER_LEN as u64));
                }
                match t {
                    msg_type::FAILOVER_AUTH_REQUEST => Body::FailoverAuthRequest,
                    msg_type::FAILOVER_AUTH_ACK => Body::FailoverAuthAck,
                    _ => Body::MfStart,
                }
            }
            msg_type::UPDATE => {
                if body.len() != 8 + NAME_LEN + SLOT_BITMAP_LEN {
                    return Err(mismatch(
                        (HEADER_LEN + 8 + NAME_LEN + SLOT_BITMAP_LEN) as u64,
                    ));
                }
                Body::Update(Box::new(Update {
                    config_epoch: be_u64(body, 0),
                    node: name_at(body, 8),
                    slots: slots_at(body, 8 + NAME_LEN),
                }))
            }
            msg_type::MODULE => {
                if body.len() < 13 {
                    return Err(mismatch((HEADER_LEN + 13) as u64));
                }
                let len = be_u32(body, 8) as u64;
                if body.len() as u64 != 13 + len {
                    return Err(mismatch(HEADER_LEN as u64 + 13 + len));
                }
                Body::Module(Module {
                    module_id: u64::from_le_bytes(body[0..8].try_into().expect("8 bytes")),
                    msg_type: body[12],
                    payload: body[13..].to_vec(),
                })
            }
            _ => Body::Unknown(UnknownMsg {
                msg_type: t,
                count,
                extensions,
                data: body.to_vec(),
            }),
        };
        Ok(Msg { header, body })
    }
}

fn decode_ping(
    body: &[u8],
    count: u16,
    extensions: u16,
    mflags: MsgFlags,
    mismatch: &dyn Fn(u64) -> DecodeError,
) -> Result<Ping, DecodeError> {
    let gossip_len = count as usize * GOSSIP_LEN;
    if body.len() < gossip_len {
        return Err(mismatch((HEADER_LEN + gossip_len) as u64));
    }
    let gossip = body[..gossip_len]
        .chunks_exact(GOSSIP_LEN)
        .map(decode_gossip)
        .collect();
    let mut rest = &body[gossip_len..];
    let mut exts = Vec::new();
    // As Redis: extensions are read only when the flag says they are there.
    if mflags.ext_data() {
        for index in 0..extensions as usize {
            let bad = |reason| DecodeError::BadExtension { index, reason };
            if rest.len() < EXT_HEADER_LEN {
                return Err(bad("extends past the message"));
            }
            let len = be_u32(rest, 0) as usize;
            if !len.is_multiple_of(8) {
                return Err(bad("length not a multiple of 8"));
            }
            if len < EXT_HEADER_LEN {
                return Err(bad("length below the extension header"));
            }
            if len > rest.len() {
                return Err(bad("extends past the message"));
            }
            exts.push(decode_ext(be_u16(rest, 4), &rest[EXT_HEADER_LEN..len]).map_err(bad)?);
            rest = &rest[len..];
        }
    }
    if !rest.is_empty() {
        let expected = body.len() - rest.len();
        return Err(mismatch((HEADER_LEN + expected) as u64));
    }
    Ok(Ping {
        gossip,
        extensions: exts,
    })
}

fn decode_gossip(g: &[u8]) -> Gossip {
    Gossip {
        node: name_at(g, 0),
        ping_sent: be_u32(g, 40),
        pong_received: be_u32(g, 44),
        ip: ip_at(g, 48),
        port: be_u16(g, 94),
        cport: be_u16(g, 96),
        flags: NodeFlags(be_u16(g, 98)),
        pport: be_u16(g, 100),
    }
}

fn encode_gossip(out: &mut Vec<u8>, g: &Gossip) {
    out.extend_from_slice(g.node.as_bytes());
    out.extend_from_slice(&g.ping_sent.to_be_bytes());
    out.extend_from_slice(&g.pong_received.to_be_bytes());
    out.extend_from_slice(&g.ip.0);
    out.extend_from_slice(&g.port.to_be_bytes());
    out.extend_from_slice(&g.cport.to_be_bytes());
    out.extend_from_slice(&g.flags.bits().to_be_bytes());
    out.extend_from_slice(&g.pport.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
}

/// One extension's data (after its 8-byte header, padding included).
fn decode_ext(t: u16, data: &[u8]) -> Result<PingExt, &'static str> {
    let string = || match data.iter().position(|&b| b == 0) {
        Some(end) => Ok(data[..end].to_vec()),
        None => Err("string without its terminating NUL"),
    };
    Ok(match t {
        ext_type::HOSTNAME => PingExt::Hostname(string()?),
        ext_type::HUMAN_NODENAME => PingExt::HumanNodename(string()?),
        ext_type::FORGOTTEN_NODE => {
            if data.len() != NAME_LEN + 8 {
                return Err("forgotten-node extension of the wrong size");
            }
            PingExt::ForgottenNode {
                node: name_at(data, 0),
                ttl: be_u64(data, NAME_LEN),
            }
        }
        ext_type::SHARD_ID => {
            if data.len() != NAME_LEN {
                return Err("shard-id extension of the wrong size");
            }
            PingExt::ShardId(name_at(data, 0))
        }
        _ => PingExt::Unknown {
            ext_type: t,
            data: data.to_vec(),
        },
    })
}

/// Append an extension: its header, its data and zero padding to a multiple of 8 bytes.
fn encode_ext(out: &mut Vec<u8>, e: &PingExt) {
    let start = out.len();
    out.extend_from_slice(&[0; EXT_HEADER_LEN]);
    match e {
        PingExt::Hostname(s) | PingExt::HumanNodename(s) => {
            out.extend_from_slice(s);
            out.push(0);
        }
        PingExt::ForgottenNode { node, ttl } => {
            out.extend_from_slice(node.as_bytes());
            out.extend_from_slice(&ttl.to_be_bytes());
        }
        PingExt::ShardId(id) => out.extend_from_slice(id.as_bytes()),
        PingExt::Unknown { data, .. } => out.extend_from_slice(data),
    }
    out.resize(start + (out.len() - start).div_ceil(8) * 8, 0);
    let len = u32::try_from(out.len() - start).expect("extension below 4 GiB");
    put_u32(out, start, len);
    put_u16(out, start + 4, e.ext_type());
}

fn be_u16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn name_at(b: &[u8], at: usize) -> NodeId {
    NodeId(b[at..at + NAME_LEN].try_into().expect("40 bytes"))
}

fn ip_at(b: &[u8], at: usize) -> Ip {
    Ip(b[at..at + IP_LEN].try_into().expect("46 bytes"))
}

fn slots_at(b: &[u8], at: usize) -> SlotSet {
    SlotSet::from_bytes(b[at..at + SLOT_BITMAP_LEN].try_into().expect("2048 bytes"))
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}
