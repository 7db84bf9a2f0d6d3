//! Pub/Sub against the real binary: SUBSCRIBE/PSUBSCRIBE/SSUBSCRIBE families and their exact
//! RESP2/RESP3 frames, PUBLISH/SPUBLISH receiver counts, PUBSUB introspection, RESP2 subscribed
//! mode, RESET and disconnects, cross-thread delivery and ordering, the pubsub output buffer
//! limit, CLIENT LIST/INFO fields, and keyspace notifications (one command per class, expired
//! events from lazy and active expiry, `new`).
use crate::common::{bulk, info_field, int, q, wait_for, Raw, Server};
use redis::Value;
use std::time::{Duration, Instant};

#[test]
fn resp2_subscribe_frames_and_messages() {
    let s = Server::tern(&[]);
    let mut sub = Raw::<true>::new(s.port);
    let mut c = s.conn();
    assert_eq!(
        sub.q_raw("SUBSCRIBE a b a"),
        b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
    );
    assert_eq!(sub.read(), "[subscribe,b,:2]");
    assert_eq!(sub.read(), "[subscribe,a,:2]");
    assert_eq!(q(&mut c, &["PUBLISH", "a", "hello"]), int(1));
    assert_eq!(q(&mut c, &["PUBLISH", "nobody", "x"]), int(0));
    assert_eq!(
        sub.read_raw(),
        b"*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nhello\r\n"
    );
    // Subscribed mode (RESP2): PING answers an array, other commands are refused.
    assert_eq!(sub.q("PING"), "[pong,]");
    assert_eq!(sub.q("PING x"), "[pong,x]");
    assert_eq!(
        sub.q("GET k"),
        "!ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    );
    assert_eq!(
        sub.q("CLIENT LIST"),
        "!ERR Can't execute 'client|list': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    );
    // Arity errors come first.
    assert_eq!(
        sub.q("GET"),
        "!ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(sub.q("UNSUBSCRIBE b"), "[unsubscribe,b,:1]");
    assert_eq!(sub.q("UNSUBSCRIBE b"), "[unsubscribe,b,:1]");
    assert_eq!(sub.q("UNSUBSCRIBE"), "[unsubscribe,a,:0]");
    assert_eq!(
        sub.q_raw("UNSUBSCRIBE"),
        b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"
    );
    assert_eq!(sub.q("PUNSUBSCRIBE"), "[punsubscribe,(nil),:0]");
    assert_eq!(sub.q("SUNSUBSCRIBE"), "[sunsubscribe,(nil),:0]");
    // Out of subscribed mode again.
    assert_eq!(sub.q("PING"), "PONG");
    assert_eq!(sub.q("GET k"), "(nil)");
}

#[test]
fn resp3_frames_are_pushes_and_any_command_runs() {
    let s = Server::tern(&[]);
    let mut sub = Raw::<true>::resp3(s.port);
    let mut c = s.conn();
    assert_eq!(
        sub.q_raw("SUBSCRIBE a"),
        b">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
    );
    assert_eq!(sub.q("PING"), "PONG");
    assert_eq!(sub.q("SET k v"), "OK");
    assert_eq!(q(&mut c, &["PUBLISH", "a", "m"]), int(1));
    assert_eq!(
        sub.read_raw(),
        b">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nm\r\n"
    );
    // Publishing to itself: the message follows the reply (Redis 7.2).
    assert_eq!(sub.q("PUBLISH a self"), ":1");
    assert_eq!(sub.read(), ">[message,a,self]");
    assert_eq!(
        sub.q_raw("PUNSUBSCRIBE"),
        b">3\r\n$12\r\npunsubscribe\r\n_\r\n:1\r\n"
    );
    assert_eq!(sub.q("PSUBSCRIBE a*"), ">[psubscribe,a*,:2]");
    assert_eq!(q(&mut c, &["PUBLISH", "ab", "z"]), int(1));
    assert_eq!(sub.read(), ">[pmessage,a*,ab,z]");
    // A channel matched by name and by pattern counts twice, message first.
    assert_eq!(q(&mut c, &["PUBLISH", "a", "both"]), int(2));
    assert_eq!(sub.read(), ">[message,a,both]");
    assert_eq!(sub.read(), ">[pmessage,a*,a,both]");
}

#[test]
fn confirmations_get_through_client_reply_off() {
    let s = Server::tern(&[]);
    let mut sub = Raw::<true>::resp3(s.port);
    let mut c = s.conn();
    sub.send_cmd("CLIENT REPLY OFF");
    sub.send_cmd("PING");
    assert_eq!(sub.q("SSUBSCRIBE ch"), ">[ssubscribe,ch,:1]");
    assert_eq!(q(&mut c, &["SPUBLISH", "ch", "x"]), int(1));
    assert_eq!(sub.read(), ">[smessage,ch,x]");
    sub.send_cmd("PING");
    assert_eq!(sub.q("SUNSUBSCRIBE ch"), ">[sunsubscribe,ch,:0]");
}

#[test]
fn shard_channels_are_separate() {
    let s = Server::tern(&[]);
    let mut ss = Raw::<true>::new(s.port);
    let mut cs = Raw::<true>::new(s.port);
    let mut c = s.conn();
    assert_eq!(ss.q("SSUBSCRIBE ch"), "[ssubscribe,ch,:1]");
    assert_eq!(ss.q("SSUBSCRIBE other"), "[ssubscribe,other,:2]");
    // Shard counts are their own: SUBSCRIBE on the same client starts at 1.
    assert_eq!(ss.q("SUBSCRIBE plain"), "[subscribe,plain,:1]");
    assert_eq!(cs.q("SUBSCRIBE ch"), "[subscribe,ch,:1]");
    assert_eq!(q(&mut c, &["SPUBLISH", "ch", "s"]), int(1));
    assert_eq!(q(&mut c, &["PUBLISH", "ch", "p"]), int(1));
    assert_eq!(ss.read(), "[smessage,ch,s]");
    assert_eq!(cs.read(), "[message,ch,p]");
    assert_eq!(
        q(&mut c, &["PUBSUB", "SHARDNUMSUB", "ch", "x"]),
        Value::Array(vec![bulk("ch"), int(1), bulk("x"), int(0)])
    );
    let mut chans: Vec<String> = crate::common::cmd(&["PUBSUB", "SHARDCHANNELS"])
        .query(&mut c)
        .unwrap();
    chans.sort();
    assert_eq!(chans, ["ch", "other"]);
    let chans: Vec<String> = crate::common::cmd(&["PUBSUB", "SHARDCHANNELS", "o*"])
        .query(&mut c)
        .unwrap();
    assert_eq!(chans, ["other"]);
    assert_eq!(info_field(&mut c, "stats", "pubsubshard_channels"), "2");
    // Patterns never see shard messages.
    let mut ps = Raw::<true>::new(s.port);
    assert_eq!(ps.q("PSUBSCRIBE *"), "[psubscribe,*,:1]");
    assert_eq!(q(&mut c, &["SPUBLISH", "other", "s"]), int(1));
}

#[test]
fn pubsub_introspection_and_client_fields() {
    let s = Server::tern(&[]);
    let mut a = Raw::<true>::new(s.port);
    a.q("SUBSCRIBE news.1 news.2");
    a.read();
    a.q("PSUBSCRIBE news.*");
    // b connects once a is served, so CLIENT LIST (in id order) lists a first: connections
    // made back to back can be accepted in either order by the server's threads.
    let mut b = Raw::<true>::new(s.port);
    let mut c = s.conn();
    b.q("PSUBSCRIBE news.*");
    b.q("PSUBSCRIBE n?ws.*");
    b.q("SSUBSCRIBE sh");
    let mut chans: Vec<String> = crate::common::cmd(&["PUBSUB", "CHANNELS"])
        .query(&mut c)
        .unwrap();
    chans.sort();
    assert_eq!(chans, ["news.1", "news.2"]);
    let chans: Vec<String> = crate::common::cmd(&["PUBSUB", "CHANNELS", "*2"])
        .query(&mut c)
        .unwrap();
    assert_eq!(chans, ["news.2"]);
    assert_eq!(
        q(&mut c, &["PUBSUB", "NUMSUB", "news.1", "zz"]),
        Value::Array(vec![bulk("news.1"), int(1), bulk("zz"), int(0)])
    );
    assert_eq!(q(&mut c, &["PUBSUB", "NUMSUB"]), Value::Array(vec![]));
    assert_eq!(q(&mut c, &["PUBSUB", "NUMPAT"]), int(2));
    assert_eq!(q(&mut c, &["PUBLISH", "news.1", "x"]), int(4));
    assert_eq!(
        crate::common::err(&mut c, &["PUBSUB", "CHANNELS", "a", "b"]),
        "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP."
    );
    assert_eq!(
        crate::common::err(&mut c, &["PUBSUB", "NOPE"]),
        "ERR unknown subcommand 'NOPE'. Try PUBSUB HELP."
    );
    let help: Vec<String> = crate::common::cmd(&["PUBSUB", "HELP"])
        .query(&mut c)
        .unwrap();
    assert_eq!(help.len(), 14);
    assert_eq!(help[13], "    Print this help.");
    assert_eq!(info_field(&mut c, "stats", "pubsub_channels"), "2");
    assert_eq!(info_field(&mut c, "stats", "pubsub_patterns"), "2");
    assert_eq!(info_field(&mut c, "stats", "pubsubshard_channels"), "1");
    let list: String = crate::common::cmd(&["CLIENT", "LIST", "TYPE", "pubsub"])
        .query(&mut c)
        .unwrap();
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(
        lines[0].contains(" flags=P ") && lines[0].contains(" sub=2 psub=1 ssub=0 "),
        "{list}"
    );
    assert!(lines[1].contains(" sub=0 psub=2 ssub=1 "), "{}", lines[1]);
    // CLIENT KILL TYPE pubsub drops both, and with them every subscription.
    assert_eq!(q(&mut c, &["CLIENT", "KILL", "TYPE", "pubsub"]), int(2));
    wait_for("subscriptions gone", Duration::from_secs(3), || {
        q(&mut c, &["PUBSUB", "NUMPAT"]) == int(0)
            && q(&mut c, &["PUBLISH", "news.1", "x"]) == int(0)
            && info_field(&mut c, "stats", "pubsubshard_channels") == "0"
    });
}

#[test]
fn reset_and_disconnect_drop_subscriptions() {
    let s = Server::tern(&[]);
    let mut a = Raw::<true>::new(s.port);
    let mut c = s.conn();
    a.q("SUBSCRIBE x");
    a.q("PSUBSCRIBE y*");
    assert_eq!(a.q("RESET"), "RESET");
    assert_eq!(a.q("GET k"), "(nil)");
    assert_eq!(q(&mut c, &["PUBLISH", "x", "m"]), int(0));
    assert_eq!(q(&mut c, &["PUBLISH", "yy", "m"]), int(0));
    let line: String = crate::common::cmd(&["CLIENT", "LIST"])
        .query(&mut c)
        .unwrap();
    assert!(!line.contains("flags=P"), "{line}");
    a.q("SUBSCRIBE x");
    drop(a);
    wait_for("closed subscriber removed", Duration::from_secs(3), || {
        q(&mut c, &["PUBLISH", "x", "m"]) == int(0)
    });
    assert_eq!(info_field(&mut c, "stats", "pubsub_channels"), "0");
}

#[test]
fn command_metadata_matches_redis() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let mut raw = Raw::<true>::new(s.port);
    // Flags and the legacy key range Redis derives from the shard variants' not_key spec.
    let info = raw.q("COMMAND INFO spublish");
    assert!(
        info.starts_with("[[spublish,:3,[pubsub,loading,stale,fast],:1,:1,:1,[@pubsub,@fast]"),
        "{info}"
    );
    if let Some(r) = Server::redis(&[]) {
        let mut rc = r.conn();
        for name in [
            "subscribe",
            "unsubscribe",
            "psubscribe",
            "punsubscribe",
            "publish",
            "ssubscribe",
            "sunsubscribe",
            "spublish",
            "pubsub|channels",
            "pubsub|numsub",
            "pubsub|numpat",
            "pubsub|shardchannels",
            "pubsub|shardnumsub",
            "pubsub|help",
        ] {
            let a =
                crate::common::norm(crate::common::cmd(&["COMMAND", "INFO", name]).query(&mut c));
            let b =
                crate::common::norm(crate::common::cmd(&["COMMAND", "INFO", name]).query(&mut rc));
            assert_eq!(a, b, "COMMAND INFO {name}");
        }
    }
}

#[test]
fn redis_crate_pubsub_api_and_order() {
    let s = Server::tern(&[]);
    let mut subc = s.conn();
    let mut ps = subc.as_pubsub();
    ps.subscribe("orders").unwrap();
    ps.psubscribe("ev.*").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut c = s.conn();
    for i in 0..500 {
        let n: i64 = crate::common::cmd(&["PUBLISH", "orders", &i.to_string()])
            .query(&mut c)
            .unwrap();
        assert_eq!(n, 1);
    }
    let n: i64 = crate::common::cmd(&["PUBLISH", "ev.a", "p"])
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1);
    for i in 0..500 {
        let m = ps.get_message().unwrap();
        assert_eq!(m.get_channel_name(), "orders");
        assert_eq!(m.get_payload::<String>().unwrap(), i.to_string());
    }
    let m = ps.get_message().unwrap();
    assert!(m.from_pattern());
    assert_eq!(m.get_pattern::<String>().unwrap(), "ev.*");
    assert_eq!(m.get_channel_name(), "ev.a");
}

#[test]
fn resp3_push_through_redis_crate() {
    let s = Server::tern(&[]);
    let mut sub = s.conn_resp3();
    let (tx, rx) = std::sync::mpsc::channel();
    sub.set_push_sender(tx);
    // In RESP3 the confirmation is a push, not a reply: nothing to wait for.
    let _: () = crate::common::cmd(&["SUBSCRIBE", "r3"])
        .set_no_response(true)
        .query(&mut sub)
        .unwrap();
    let mut c = s.conn();
    // The SUBSCRIBE was not waited for: publish once the server has processed it.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while q(&mut c, &["PUBSUB", "NUMSUB", "r3"]) != Value::Array(vec![bulk("r3"), int(1)]) {
        assert!(
            std::time::Instant::now() < deadline,
            "subscription never registered"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(q(&mut c, &["PUBLISH", "r3", "hi"]), int(1));
    // Any command reads what came before its reply; RESP3 clients may run anything.
    assert_eq!(q(&mut sub, &["SET", "k", "v"]), Value::Okay);
    let mut got = Vec::new();
    while let Ok(p) = rx.recv_timeout(Duration::from_secs(2)) {
        let done = p.kind == redis::PushKind::Message;
        got.push(p);
        if done {
            break;
        }
    }
    assert_eq!(got[0].kind, redis::PushKind::Subscribe);
    assert_eq!(got[0].data, vec![bulk("r3"), int(1)]);
    let msg = got.last().expect("a push");
    assert_eq!(msg.kind, redis::PushKind::Message);
    assert_eq!(msg.data, vec![bulk("r3"), bulk("hi")]);
}

#[test]
fn cross_thread_publish_keeps_each_publishers_order() {
    let s = Server::tern(&["--threads", "2"]);
    let mut subs: Vec<redis::Connection> = (0..4).map(|_| s.conn()).collect();
    for c in subs.iter_mut() {
        let _: () = crate::common::cmd(&["SUBSCRIBE", "x"]).query(c).unwrap();
    }
    const N: usize = 2000;
    let pubs: Vec<_> = (0..4)
        .map(|p| {
            let mut c = s.conn();
            std::thread::spawn(move || {
                for i in 0..N {
                    let n: i64 = crate::common::cmd(&["PUBLISH", "x", &format!("{p}:{i}")])
                        .query(&mut c)
                        .unwrap();
                    assert_eq!(n, 4);
                }
            })
        })
        .collect();
    let readers: Vec<_> = subs
        .into_iter()
        .map(|mut c| {
            std::thread::spawn(move || {
                let mut ps = c.as_pubsub();
                ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut next = [0usize; 4];
                for _ in 0..4 * N {
                    let m: String = ps.get_message().unwrap().get_payload().unwrap();
                    let (p, i) = m.split_once(':').unwrap();
                    let (p, i): (usize, usize) = (p.parse().unwrap(), i.parse().unwrap());
                    assert_eq!(i, next[p], "publisher {p} out of order");
                    next[p] += 1;
                }
                next
            })
        })
        .collect();
    for p in pubs {
        p.join().unwrap();
    }
    for r in readers {
        assert_eq!(r.join().unwrap(), [N; 4]);
    }
}

#[test]
fn slow_subscriber_is_disconnected_at_the_hard_limit() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "pubsub 262144 0 0",
        ],
    );
    let mut slow = Raw::<true>::new(s.port);
    assert_eq!(slow.q("SUBSCRIBE big"), "[subscribe,big,:1]");
    let payload = "x".repeat(256 * 1024);
    let start = Instant::now();
    // The subscriber never reads: once the socket buffers are full, queued bytes pile up.
    loop {
        let n: i64 = crate::common::cmd(&["PUBLISH", "big", &payload])
            .query(&mut c)
            .unwrap();
        if n == 0 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never dropped");
    }
    assert_eq!(
        info_field(&mut c, "stats", "client_output_buffer_limit_disconnections"),
        "1"
    );
    assert_eq!(
        q(&mut c, &["PUBSUB", "NUMSUB", "big"]),
        Value::Array(vec![bulk("big"), int(0)])
    );
    // Publishers never waited for the slow reader, and the server is fine.
    assert_eq!(q(&mut c, &["PING"]), Value::SimpleString("PONG".into()));
}

// ---------------------------------------------------------------------------------------------
// Keyspace notifications

/// A pattern subscriber on `__key*` and a way to read its next event as "channel event".
struct Events(Raw<true>);

impl Events {
    fn new(s: &Server) -> Events {
        let mut r = Raw::<true>::new(s.port);
        assert_eq!(r.q("PSUBSCRIBE __key*"), "[psubscribe,__key*,:1]");
        Events(r)
    }

    fn next(&mut self) -> String {
        let m = self.0.read();
        let parts: Vec<&str> = m
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .collect();
        assert_eq!(parts[0], "pmessage", "{m}");
        format!("{} {}", parts[2], parts[3])
    }
}

#[test]
fn notify_keyspace_events_config_is_normalised() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    for (set, get) in [
        ("gKE", "gKE"),
        ("$lshzxeKE", "$lshzxeKE"),
        ("KA", "AK"),
        ("EA", "AE"),
        ("EAn", "AE"),
        ("Ex", "xE"),
        ("Kmdt", "tdKm"),
        ("", ""),
    ] {
        q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", set]);
        assert_eq!(
            q(&mut c, &["CONFIG", "GET", "notify-keyspace-events"]),
            Value::Array(vec![bulk("notify-keyspace-events"), bulk(get)]),
            "{set}"
        );
    }
    assert_eq!(
        crate::common::err(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KQ"]),
        "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
    );
}

#[test]
fn keyspace_events_of_each_class() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut ev = Events::new(&s);
    q(&mut c, &["SET", "s", "1"]);
    assert_eq!(ev.next(), "__keyspace@0__:s set");
    assert_eq!(ev.next(), "__keyevent@0__:set s");
    q(&mut c, &["INCRBY", "s", "2"]);
    assert_eq!(ev.next(), "__keyspace@0__:s incrby");
    assert_eq!(ev.next(), "__keyevent@0__:incrby s");
    q(&mut c, &["EXPIRE", "s", "100"]);
    assert_eq!(ev.next(), "__keyspace@0__:s expire");
    assert_eq!(ev.next(), "__keyevent@0__:expire s");
    q(&mut c, &["DEL", "s"]);
    assert_eq!(ev.next(), "__keyspace@0__:s del");
    assert_eq!(ev.next(), "__keyevent@0__:del s");
    // Only keyspace events from here on, to keep the checks short.
    q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KA"]);
    for (cmd, event) in [
        (&["RPUSH", "l", "a", "b"][..], "__keyspace@0__:l rpush"),
        (&["LPOP", "l"], "__keyspace@0__:l lpop"),
        (&["SADD", "set", "a"], "__keyspace@0__:set sadd"),
        (&["HSET", "h", "f", "v"], "__keyspace@0__:h hset"),
        (&["ZADD", "z", "1", "a"], "__keyspace@0__:z zadd"),
        (&["XADD", "x", "1-0", "f", "v"], "__keyspace@0__:x xadd"),
        (&["RENAME", "h", "h2"], "__keyspace@0__:h rename_from"),
    ] {
        crate::common::cmd(cmd).query::<Value>(&mut c).unwrap();
        assert_eq!(ev.next(), event, "{cmd:?}");
    }
    assert_eq!(ev.next(), "__keyspace@0__:h2 rename_to");
    // A command that changes nothing notifies nothing.
    q(&mut c, &["SREM", "set", "nope"]);
    q(&mut c, &["SELECT", "3"]);
    q(&mut c, &["APPEND", "a", "x"]);
    assert_eq!(ev.next(), "__keyspace@3__:a append");
    q(&mut c, &["MOVE", "a", "5"]);
    assert_eq!(ev.next(), "__keyspace@3__:a move_from");
    assert_eq!(ev.next(), "__keyspace@5__:a move_to");
    // Masked classes stay quiet.
    q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Kl"]);
    q(&mut c, &["SET", "quiet", "1"]);
    q(&mut c, &["LPUSH", "loud", "1"]);
    assert_eq!(ev.next(), "__keyspace@3__:loud lpush");
}

#[test]
fn expired_and_new_key_events() {
    let s = Server::tern(&["--enable-debug-command", "yes"]);
    let mut c = s.conn();
    q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Exn"]);
    let mut ev = Events::new(&s);
    // Active expiry.
    q(&mut c, &["SET", "a", "1", "PX", "50"]);
    assert_eq!(ev.next(), "__keyevent@0__:new a");
    assert_eq!(ev.next(), "__keyevent@0__:expired a");
    // Lazy expiry: the key is touched before the active cycle can get to it.
    q(&mut c, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    q(&mut c, &["SET", "b", "1", "PX", "20"]);
    assert_eq!(ev.next(), "__keyevent@0__:new b");
    std::thread::sleep(Duration::from_millis(50));
    // SET on the expired key: `expired`, then `new` (it is added again); overwriting is not new.
    q(&mut c, &["SET", "b", "2"]);
    assert_eq!(ev.next(), "__keyevent@0__:expired b");
    assert_eq!(ev.next(), "__keyevent@0__:new b");
    q(&mut c, &["SET", "b", "3"]);
    q(&mut c, &["LPUSH", "c", "x"]);
    assert_eq!(ev.next(), "__keyevent@0__:new c");
}

#[test]
fn own_keyspace_events_follow_the_reply_in_resp3() {
    let s = Server::tern(&[]);
    let mut c = Raw::<true>::resp3(s.port);
    c.q("CONFIG SET notify-keyspace-events KEg$");
    assert_eq!(
        c.q("PSUBSCRIBE __keyevent*"),
        ">[psubscribe,__keyevent*,:1]"
    );
    assert_eq!(c.q("SET k v"), "OK");
    assert_eq!(c.read(), ">[pmessage,__keyevent*,__keyevent@0__:set,k]");
    assert_eq!(c.q("DEL k"), ":1");
    assert_eq!(c.read(), ">[pmessage,__keyevent*,__keyevent@0__:del,k]");
}

#[test]
fn notifications_off_publish_nothing() {
    let s = Server::tern(&[]);
    let mut c = s.conn();
    let mut ev = Events::new(&s);
    q(&mut c, &["SET", "k", "v"]);
    q(&mut c, &["DEL", "k"]);
    // The first message the subscriber sees is the one published explicitly.
    assert_eq!(
        q(&mut c, &["PUBLISH", "__keyspace@0__:marker", "m"]),
        int(1)
    );
    assert_eq!(ev.next(), "__keyspace@0__:marker m");
}
