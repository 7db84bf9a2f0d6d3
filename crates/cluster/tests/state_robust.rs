//! Whatever arrives on the bus, the state machine never panics: real captured messages with
//! their fields scrambled (senders, masters, flags, epochs, slots, gossip ids pointing at
//! myself, at nodes being deleted, at handshake nodes), delivered on any link, interleaved with
//! cron ticks, link events, MEET and FORGET. Every state it reaches saves a loadable nodes.conf.

use std::fs;
use std::path::PathBuf;

use tern_cluster::msg::{Body, PingExt};
use tern_cluster::state::{ClusterState, Config, Link};
use tern_cluster::{Msg, NodeFlags, NodeId, NodesConf, SlotSet};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn fixtures() -> Vec<Msg> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bus");
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "hex") {
            let text = fs::read_to_string(&path).unwrap();
            let hex: String = text
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(str::trim)
                .collect();
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            out.push(Msg::decode(&bytes).unwrap());
        }
    }
    out
}

#[test]
fn scrambled_real_traffic_never_panics() {
    let base = fixtures();
    for seed in [0x1234_5678_9abc_def1, 0x7_7777, 0x0abc_def1_2345_u64] {
        scramble(&base, seed);
    }
}

fn scramble(base: &[Msg], seed: u64) {
    let mut rng = Rng(seed);
    for round in 0..30 {
        let config = Config {
            node_timeout: 500 + rng.below(3000),
            require_full_coverage: rng.below(2) == 0,
            ..Config::default()
        };
        let mut node = ClusterState::new(config, "127.0.0.9", 7799, 17799, round + 1, 1_000_000);
        let mut now = 1_000_000u64;
        for step in 0..400 {
            now += rng.below(300);
            // Ids to aim at: known nodes (myself included), ids from the capture, and new ones.
            let mut ids: Vec<NodeId> = node.nodes().map(|n| n.id).collect();
            ids.extend(base.iter().map(|m| m.header.sender));
            let pick = |rng: &mut Rng, ids: &[NodeId]| ids[rng.below(ids.len() as u64) as usize];
            match rng.below(10) {
                0 => node.tick(now),
                1 => {
                    let port = 7000 + rng.below(4) as u16;
                    node.meet("127.0.0.1", port, port + 10000, now);
                }
                2 => {
                    let id = pick(&mut rng, &ids);
                    if rng.below(2) == 0 {
                        node.link_connected(id, now);
                    } else {
                        node.link_failed(id, now);
                    }
                }
                3 => {
                    let id = pick(&mut rng, &ids);
                    node.forget(id, now);
                    node.link_closed(Link::Outbound(id));
                }
                _ => {
                    let mut m = base[rng.below(base.len() as u64) as usize].clone();
                    let h = &mut m.header;
                    if rng.below(2) == 0 {
                        h.sender = pick(&mut rng, &ids);
                    }
                    match rng.below(3) {
                        0 => h.replicaof = None,
                        1 => h.replicaof = Some(pick(&mut rng, &ids)),
                        _ => {}
                    }
                    if rng.below(3) == 0 {
                        h.flags = NodeFlags(rng.next() as u16);
                    }
                    if rng.below(3) == 0 {
                        h.config_epoch = rng.below(8);
                        h.current_epoch = rng.below(8);
                    }
                    if rng.below(4) == 0 {
                        h.config_epoch = u64::MAX - rng.below(2);
                        h.current_epoch = u64::MAX;
                    }
                    if rng.below(3) == 0 {
                        let a = rng.below(16384) as u16;
                        let b = a + rng.below(16384 - a as u64) as u16;
                        h.slots = SlotSet::from_ranges(&[(a, b)]).unwrap();
                    }
                    match &mut m.body {
                        Body::Ping(p) | Body::Pong(p) | Body::Meet(p) => {
                            for g in &mut p.gossip {
                                if rng.below(2) == 0 {
                                    g.node = pick(&mut rng, &ids);
                                }
                                g.flags = NodeFlags(rng.next() as u16);
                                g.pong_received = rng.next() as u32;
                            }
                            if rng.below(3) == 0 {
                                p.extensions.push(PingExt::ForgottenNode {
                                    node: pick(&mut rng, &ids),
                                    ttl: u64::MAX - rng.below(2),
                                });
                            }
                        }
                        Body::Fail(about) => *about = pick(&mut rng, &ids),
                        Body::Update(u) => {
                            u.node = pick(&mut rng, &ids);
                            u.config_epoch = rng.below(10);
                        }
                        _ => {}
                    }
                    let link = if rng.below(2) == 0 {
                        Link::Outbound(pick(&mut rng, &ids))
                    } else {
                        Link::Inbound(rng.below(4))
                    };
                    // Through the codec, as off a socket.
                    let m = Msg::decode(&m.encode()).unwrap();
                    node.handle_message(link, "127.0.0.1", &m, now);
                }
            }
            node.before_sleep(now);
            node.take_actions();
            if step % 50 == 0 {
                let text = node.to_conf().to_text();
                NodesConf::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            }
        }
    }
}
