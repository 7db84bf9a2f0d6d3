//! Randomized (seeded, fuzz-like) checks of the bus codec: random well-formed messages of every
//! type round-trip byte for byte; mutated messages (captured and random) never panic the decoder
//! and obey the properties of fuzz/cluster_check.rs; a stream cut at random points splits back
//! into its messages with `frame_len`; and the malformed inputs Redis drops are errors.

#[path = "../../../fuzz/cluster_check.rs"]
mod cluster_check;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tern_cluster::msg::{
    frame_len, ClusterState, DecodeError, Gossip, Header, Ip, Module, MsgFlags, MsgReader, Ping,
    PingExt, Publish, UnknownMsg, Update, HEADER_LEN,
};
use tern_cluster::slots::SLOT_BITMAP_LEN;
use tern_cluster::{Body, Msg, NodeFlags, NodeId, SlotSet};

fn id(rng: &mut SmallRng) -> NodeId {
    let mut raw = [0u8; 40];
    for b in raw.iter_mut() {
        *b = b"0123456789abcdef"[rng.gen_range(0..16)];
    }
    NodeId(raw)
}

fn bytes(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let n = rng.gen_range(0..=max);
    (0..n).map(|_| rng.gen()).collect()
}

fn slots(rng: &mut SmallRng) -> SlotSet {
    let mut raw = [0u8; SLOT_BITMAP_LEN];
    if rng.gen_bool(0.5) {
        let start = rng.gen_range(0..16384u16);
        let end = rng.gen_range(start..16384);
        return SlotSet::from_ranges(&[(start, end)]).unwrap();
    }
    rng.fill(&mut raw[..]);
    SlotSet::from_bytes(raw)
}

fn ip(rng: &mut SmallRng) -> Ip {
    match rng.gen_range(0..3) {
        0 => Ip::default(),
        1 => Ip::new("127.0.0.1").unwrap(),
        _ => Ip::new("fe80::1:2:3:4:5:6").unwrap(),
    }
}

fn no_nul(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    bytes(rng, max).into_iter().map(|b| b.max(1)).collect()
}

fn ext(rng: &mut SmallRng) -> PingExt {
    match rng.gen_range(0..5) {
        0 => PingExt::Hostname(no_nul(rng, 30)),
        1 => PingExt::HumanNodename(no_nul(rng, 30)),
        2 => PingExt::ForgottenNode {
            node: id(rng),
            ttl: rng.gen(),
        },
        3 => PingExt::ShardId(id(rng)),
        _ => {
            let len = rng.gen_range(0..5) * 8;
            PingExt::Unknown {
                ext_type: rng.gen_range(4..=u16::MAX),
                data: (0..len).map(|_| rng.gen()).collect(),
            }
        }
    }
}

fn ping(rng: &mut SmallRng) -> Ping {
    let gossip = (0..rng.gen_range(0..6))
        .map(|_| Gossip {
            node: id(rng),
            ping_sent: rng.gen(),
            pong_received: rng.gen(),
            ip: ip(rng),
            port: rng.gen(),
            cport: rng.gen(),
            flags: NodeFlags(rng.gen()),
            pport: rng.gen(),
        })
        .collect();
    let extensions = (0..rng.gen_range(0..5)).map(|_| ext(rng)).collect();
    Ping { gossip, extensions }
}

fn publish(rng: &mut SmallRng) -> Publish {
    Publish {
        channel: bytes(rng, 20),
        message: bytes(rng, 100),
    }
}

fn random_msg(rng: &mut SmallRng) -> Msg {
    let body = match rng.gen_range(0..12) {
        0 => Body::Ping(ping(rng)),
        1 => Body::Pong(ping(rng)),
        2 => Body::Meet(ping(rng)),
        3 => Body::Fail(id(rng)),
        4 => Body::Publish(publish(rng)),
        5 => Body::PublishShard(publish(rng)),
        6 => Body::FailoverAuthRequest,
        7 => Body::FailoverAuthAck,
        8 => Body::MfStart,
        9 => Body::Update(Box::new(Update {
            config_epoch: rng.gen(),
            node: id(rng),
            slots: slots(rng),
        })),
        10 => Body::Module(Module {
            module_id: rng.gen(),
            msg_type: rng.gen(),
            payload: bytes(rng, 50),
        }),
        _ => Body::Unknown(UnknownMsg {
            msg_type: rng.gen_range(11..=u16::MAX),
            count: rng.gen(),
            extensions: rng.gen(),
            data: bytes(rng, 64),
        }),
    };
    let mut mflags = MsgFlags([rng.gen(), rng.gen(), rng.gen()]);
    // Canonical: the flag says whether extensions follow.
    match body.ping() {
        Some(p) if !p.extensions.is_empty() => mflags.0[0] |= MsgFlags::EXT_DATA,
        _ => {}
    }
    let header = Header {
        port: rng.gen(),
        current_epoch: rng.gen(),
        config_epoch: rng.gen(),
        offset: rng.gen(),
        sender: id(rng),
        slots: slots(rng),
        replicaof: rng.gen_bool(0.5).then(|| id(rng)),
        myip: ip(rng),
        pport: rng.gen(),
        cport: rng.gen(),
        flags: NodeFlags(rng.gen()),
        state: ClusterState::from_byte(rng.gen_range(0..3)),
        mflags,
    };
    Msg::new(header, body)
}

fn fixtures() -> Vec<Vec<u8>> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bus");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "hex") {
            let hex: String = std::fs::read_to_string(&path)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#'))
                .collect();
            out.push(
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect(),
            );
        }
    }
    assert!(out.len() >= 15);
    out
}

#[test]
fn random_messages_round_trip() {
    let mut rng = SmallRng::seed_from_u64(0x5eed);
    for _ in 0..3000 {
        let msg = random_msg(&mut rng);
        let bytes = msg.encode();
        assert_eq!(frame_len(&bytes), Ok(Some(bytes.len())));
        let back = Msg::decode(&bytes).unwrap_or_else(|e| panic!("{e}: {msg:?}"));
        assert_eq!(back, msg);
        assert_eq!(back.encode(), bytes);
        assert!(cluster_check::check(&bytes));
    }
}

#[test]
fn mutated_messages_never_panic() {
    let mut rng = SmallRng::seed_from_u64(42);
    let mut seeds = fixtures();
    seeds.extend((0..200).map(|_| random_msg(&mut rng).encode()));
    let mut decoded = 0;
    for _ in 0..20_000 {
        let mut m = seeds[rng.gen_range(0..seeds.len())].clone();
        for _ in 0..rng.gen_range(1..4) {
            match rng.gen_range(0..6) {
                // Flip bytes anywhere, or in the fields that steer decoding.
                0 => {
                    let i = rng.gen_range(0..m.len());
                    m[i] = rng.gen();
                }
                1 => {
                    for at in [12, 14, 2214, 2253] {
                        if rng.gen_bool(0.3) && at < m.len() {
                            m[at] ^= 1 << rng.gen_range(0..8);
                        }
                    }
                }
                // Truncate or extend, then maybe fix totlen up so the body is reached.
                2 => m.truncate(rng.gen_range(0..=m.len())),
                3 => m.extend((0..rng.gen_range(1..40)).map(|_| rng.gen::<u8>())),
                4 if m.len() >= 8 => {
                    let len = m.len() as u32;
                    m[4..8].copy_from_slice(&len.to_be_bytes());
                }
                // Corrupt a length field in the body (extension, publish or module lengths).
                _ if m.len() > HEADER_LEN + 4 => {
                    let at = rng.gen_range(HEADER_LEN..m.len() - 4);
                    let v: u32 = rng.gen_range(0..200);
                    m[at..at + 4].copy_from_slice(&v.to_be_bytes());
                }
                _ => {}
            }
        }
        decoded += cluster_check::check(&m) as usize;
    }
    // Mutations must reach the body decoders, not only the header checks.
    assert!(decoded > 2000, "only {decoded} mutated messages decoded");
}

#[test]
fn stream_splits_at_frame_boundaries() {
    let mut rng = SmallRng::seed_from_u64(9);
    let msgs: Vec<Msg> = (0..50).map(|_| random_msg(&mut rng)).collect();
    let stream: Vec<u8> = msgs.iter().flat_map(|m| m.encode()).collect();
    let mut buf = Vec::new();
    let mut got = Vec::new();
    let mut pos = 0;
    while pos < stream.len() {
        let n = rng.gen_range(1..3000).min(stream.len() - pos);
        buf.extend_from_slice(&stream[pos..pos + n]);
        pos += n;
        while let Some(len) = frame_len(&buf).unwrap() {
            if buf.len() < len {
                break;
            }
            got.push(Msg::decode(&buf[..len]).unwrap());
            buf.drain(..len);
        }
    }
    assert!(buf.is_empty());
    assert_eq!(got, msgs);
}

#[test]
fn reader_keeps_the_link_on_a_bad_body_and_drops_it_on_bad_framing() {
    let mut rng = SmallRng::seed_from_u64(11);
    let first = random_msg(&mut rng);
    let second = random_msg(&mut rng);
    // A FAIL message one byte too long: framed fine, its body does not decode.
    let mut bad_body = Msg::new(Header::default(), Body::Fail(NodeId::NULL)).encode();
    bad_body.push(0);
    let len = bad_body.len() as u32;
    bad_body[4..8].copy_from_slice(&len.to_be_bytes());
    let mut stream = first.encode();
    stream.extend_from_slice(&bad_body);
    stream.extend_from_slice(&second.encode());
    let mut reader = MsgReader::new();
    let mut got = Vec::new();
    for chunk in stream.chunks(777) {
        reader.feed(chunk);
        while let Some(frame) = reader.next_frame(1 << 20).unwrap() {
            got.push(frame);
        }
    }
    assert_eq!(reader.buffered(), 0);
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], Ok(first));
    assert!(matches!(
        got[1],
        Err(DecodeError::LengthMismatch { msg_type: 3, .. })
    ));
    assert_eq!(got[2], Ok(second));

    let mut reader = MsgReader::new();
    reader.feed(b"RCmc\0\0\x10\0");
    assert!(matches!(
        reader.next_frame(1 << 20),
        Err(DecodeError::BadSignature(_))
    ));
    let mut reader = MsgReader::new();
    reader.feed(&sample_ping()[..8]);
    assert_eq!(reader.next_frame(1 << 20), Ok(None));
    assert!(matches!(
        reader.next_frame(100),
        Err(DecodeError::TooLong { max: 100, .. })
    ));
}

fn sample_ping() -> Vec<u8> {
    let mut header = Header {
        sender: NodeId([b'a'; 40]),
        ..Header::default()
    };
    header.mflags.0[0] = MsgFlags::EXT_DATA;
    let body = Body::Ping(Ping {
        gossip: vec![Gossip::default()],
        extensions: vec![
            PingExt::Hostname(b"host".to_vec()),
            PingExt::ShardId(NodeId([b'b'; 40])),
        ],
    });
    Msg::new(header, body).encode()
}

#[test]
fn malformed_messages_are_errors() {
    let good = sample_ping();
    assert_eq!(good.len(), HEADER_LEN + 104 + 16 + 48);
    assert!(Msg::decode(&good).is_ok());
    assert_eq!(frame_len(&good[..7]), Ok(None));

    let mut m = good.clone();
    m[0] = b'X';
    assert!(matches!(Msg::decode(&m), Err(DecodeError::BadSignature(_))));
    assert!(frame_len(&m).is_err());

    let mut m = good.clone();
    m[4..8].copy_from_slice(&100u32.to_be_bytes());
    assert_eq!(frame_len(&m), Err(DecodeError::LengthTooSmall(100)));

    assert!(matches!(
        Msg::decode(&good[..good.len() - 1]),
        Err(DecodeError::Truncated { .. })
    ));
    let mut m = good.clone();
    m.push(0);
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::TrailingBytes { .. })
    ));

    let mut m = good.clone();
    m[8..10].copy_from_slice(&2u16.to_be_bytes());
    assert_eq!(Msg::decode(&m), Err(DecodeError::UnsupportedVersion(2)));

    // An extension length that is not a multiple of 8 (Redis: "without proper padding").
    let ext_at = HEADER_LEN + 104;
    let mut m = good.clone();
    m[ext_at..ext_at + 4].copy_from_slice(&12u32.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::BadExtension { index: 0, .. })
    ));
    // One that runs past the message.
    let mut m = good.clone();
    m[ext_at..ext_at + 4].copy_from_slice(&4096u32.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::BadExtension { index: 0, .. })
    ));
    // A zero length would loop forever in a naive reader.
    let mut m = good.clone();
    m[ext_at..ext_at + 4].copy_from_slice(&0u32.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::BadExtension { index: 0, .. })
    ));
    // A hostname with no NUL in its space.
    let mut m = good.clone();
    m[ext_at + 8..ext_at + 16].copy_from_slice(b"12345678");
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::BadExtension { index: 0, .. })
    ));
    // More extensions announced than there are.
    let mut m = good.clone();
    m[2214..2216].copy_from_slice(&3u16.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::BadExtension { index: 2, .. })
    ));
    // Fewer: the rest does not fit the length.
    let mut m = good.clone();
    m[2214..2216].copy_from_slice(&1u16.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::LengthMismatch { .. })
    ));
    // Extensions without the EXT_DATA flag are not read, so the length is wrong.
    let mut m = good.clone();
    m[2253] = 0;
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::LengthMismatch { .. })
    ));
    // More gossip sections than bytes.
    let mut m = good.clone();
    m[14..16].copy_from_slice(&9u16.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::LengthMismatch { .. })
    ));

    // Fixed-size bodies of the wrong size, and publish/module lengths that do not add up.
    let header = Header::default();
    let fail = Msg::new(header.clone(), Body::Fail(NodeId([b'c'; 40]))).encode();
    let mut m = fail.clone();
    m.push(0);
    let len = m.len() as u32;
    m[4..8].copy_from_slice(&len.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::LengthMismatch { msg_type: 3, .. })
    ));
    let publish = Body::Publish(Publish {
        channel: b"ch".to_vec(),
        message: b"msg".to_vec(),
    });
    let mut m = Msg::new(header.clone(), publish).encode();
    m[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::LengthMismatch { msg_type: 4, .. })
    ));
    let module = Body::Module(Module {
        module_id: 7,
        msg_type: 1,
        payload: b"Hey".to_vec(),
    });
    let mut m = Msg::new(header.clone(), module).encode();
    m[HEADER_LEN + 8..HEADER_LEN + 12].copy_from_slice(&4u32.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::LengthMismatch { msg_type: 9, .. })
    ));
    let mut m = Msg::new(header, Body::MfStart).encode();
    m.extend_from_slice(&[0; 8]);
    let len = m.len() as u32;
    m[4..8].copy_from_slice(&len.to_be_bytes());
    assert!(matches!(
        Msg::decode(&m),
        Err(DecodeError::LengthMismatch { msg_type: 8, .. })
    ));
}

#[test]
fn sizes_match_redis() {
    // Redis's sizes: header 2256, FAIL +40, PUBLISH +8+data, UPDATE = sizeof(clusterMsg),
    // MODULE +13+payload, ping extensions padded to 8.
    let h = Header::default();
    assert_eq!(
        Msg::new(h.clone(), Body::FailoverAuthAck).encode().len(),
        2256
    );
    assert_eq!(
        Msg::new(h.clone(), Body::Fail(NodeId::NULL)).encode().len(),
        2296
    );
    let update = Body::Update(Box::default());
    assert_eq!(
        Msg::new(h.clone(), update).encode().len(),
        tern_cluster::msg::CLUSTER_MSG_SIZE
    );
    let p = Body::Publish(Publish {
        channel: b"a".to_vec(),
        message: b"bc".to_vec(),
    });
    assert_eq!(Msg::new(h.clone(), p).encode().len(), 2256 + 8 + 3);
    let module = Body::Module(Module {
        payload: b"Hey".to_vec(),
        ..Module::default()
    });
    assert_eq!(Msg::new(h.clone(), module).encode().len(), 2256 + 16);
    for (host, ext_len) in [("", 16), ("abcdefg", 16), ("abcdefgh", 24), ("a", 16)] {
        let ping = Body::Ping(Ping {
            gossip: vec![],
            extensions: vec![PingExt::Hostname(host.as_bytes().to_vec())],
        });
        assert_eq!(
            Msg::new(h.clone(), ping).encode().len(),
            2256 + ext_len,
            "{host:?}"
        );
    }
    let forgotten = PingExt::ForgottenNode {
        node: NodeId::NULL,
        ttl: 1,
    };
    let ping = Body::Pong(Ping {
        gossip: vec![Gossip::default()],
        extensions: vec![forgotten],
    });
    assert_eq!(Msg::new(h, ping).encode().len(), 2256 + 104 + 56);
}
