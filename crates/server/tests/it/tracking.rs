//! Client-side caching (CLIENT TRACKING) against the real binary: default mode, REDIRECT to a
//! RESP2 subscriber and to a RESP3 client, BCAST prefixes, OPTIN/OPTOUT with CLIENT CACHING,
//! NOLOOP, the order of invalidations against replies, flush/expiry invalidations, the
//! tracking table limit, introspection (GETREDIR, TRACKINGINFO, INFO), and error texts compared
//! with a real redis-server.
use crate::common::{Raw, Server};
use std::time::Duration;

const INV: &str = ">[invalidate,";

fn inv(keys: &[&str]) -> String {
    format!("{INV}[{}]]", keys.join(","))
}

#[test]
fn default_mode_invalidates_once_per_read() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::resp3(s.port);
    let mut w = Raw::<false>::new(s.port);
    assert_eq!(w.q("SET k 1"), "OK");
    assert_eq!(c.q("CLIENT TRACKING on"), "OK");
    assert_eq!(c.q("GET k"), "1");
    assert_eq!(w.q("SET k 2"), "OK");
    assert_eq!(c.read(), inv(&["k"]));
    // Forgotten after one message: a second write says nothing until it is read again.
    assert_eq!(w.q("SET k 3"), "OK");
    assert_eq!(c.q("PING"), "PONG");
    assert_eq!(c.q("GET k"), "3");
    assert_eq!(w.q("DEL k"), ":1");
    assert_eq!(c.read(), inv(&["k"]));
    // A key only written (never read) by the tracking client is not tracked.
    assert_eq!(c.q("SET other 1"), "OK");
    assert_eq!(w.q("SET other 2"), "OK");
    assert_eq!(c.q("PING"), "PONG");
}

#[test]
fn own_write_invalidation_follows_its_reply() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::resp3(s.port);
    assert_eq!(c.q("CLIENT TRACKING on"), "OK");
    assert_eq!(c.q("HSET h f 1"), ":1");
    assert_eq!(c.q("HGET h f"), "1");
    assert_eq!(c.q("HDEL h f"), ":1");
    assert_eq!(c.read(), inv(&["h"]));
    // Inside a transaction the invalidation comes after EXEC's whole reply.
    assert_eq!(c.q("MSET a 1 b 2"), "OK");
    assert_eq!(c.q("GET a"), "1");
    assert_eq!(c.q("MULTI"), "OK");
    assert_eq!(c.q("INCR a"), "QUEUED");
    assert_eq!(c.q("GET b"), "QUEUED");
    assert_eq!(c.q("EXEC"), "[:2,2]");
    assert_eq!(c.read(), inv(&["a"]));
}

#[test]
fn noloop_skips_own_writes() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::resp3(s.port);
    let mut w = Raw::<false>::new(s.port);
    assert_eq!(c.q("CLIENT TRACKING on NOLOOP"), "OK");
    assert_eq!(c.q("GET k"), "(nil)");
    assert_eq!(c.q("SET k mine"), "OK");
    assert_eq!(c.q("GET k"), "mine");
    assert_eq!(w.q("SET k theirs"), "OK");
    assert_eq!(c.read(), inv(&["k"]));
}

#[test]
fn redirect_to_resp2_subscriber_and_broken_redirect() {
    let s = Server::tern(&[]);
    let mut sub = Raw::<false>::new(s.port);
    let id = sub.q("CLIENT ID");
    let id = id.trim_start_matches(':').to_string();
    assert_eq!(
        sub.q("SUBSCRIBE __redis__:invalidate"),
        "[subscribe,__redis__:invalidate,:1]"
    );
    let mut c = Raw::<false>::resp3(s.port);
    let mut w = Raw::<false>::new(s.port);
    assert_eq!(c.q(&format!("CLIENT TRACKING on REDIRECT {id}")), "OK");
    assert_eq!(c.q("CLIENT GETREDIR"), format!(":{id}"));
    assert_eq!(c.q("GET k"), "(nil)");
    assert_eq!(w.q("SET k 1"), "OK");
    assert_eq!(sub.read(), "[message,__redis__:invalidate,[k]]");
    // FLUSHALL tells everyone to drop everything: a null instead of the key list.
    assert_eq!(c.q("GET k"), "1");
    assert_eq!(w.q("FLUSHALL"), "OK");
    assert_eq!(sub.read(), "[message,__redis__:invalidate,(nil)]");
    // The redirect client goes away: the tracking client hears of it on its next invalidation.
    assert_eq!(c.q("GET k2"), "(nil)");
    drop(sub);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(w.q("SET k2 1"), "OK");
    assert_eq!(c.read(), format!(">[tracking-redir-broken,:{id}]"));
    assert_eq!(
        c.q("CLIENT TRACKINGINFO"),
        format!("{{flags:[on,broken_redirect],redirect::{id},prefixes:[]}}")
    );
}

#[test]
fn redirect_to_resp3_client_that_never_subscribed() {
    let s = Server::tern(&[]);
    let mut target = Raw::<false>::resp3(s.port);
    let id = target.q("CLIENT ID");
    let id = id.trim_start_matches(':').to_string();
    let mut c = Raw::<false>::new(s.port);
    let mut w = Raw::<false>::new(s.port);
    assert_eq!(c.q(&format!("CLIENT TRACKING on REDIRECT {id}")), "OK");
    assert_eq!(c.q("GET foo"), "(nil)");
    // CLIENT REPLY OFF silences replies, not pushes.
    target.send_cmd("CLIENT REPLY off");
    assert_eq!(w.q("SET foo bar"), "OK");
    assert_eq!(target.read(), inv(&["foo"]));
    assert_eq!(target.q("CLIENT REPLY on"), "OK");
    assert_eq!(target.q("PING"), "PONG");
}

#[test]
fn bcast_prefixes_and_noloop() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::resp3(s.port);
    let mut w = Raw::<false>::new(s.port);
    assert_eq!(
        c.q("CLIENT TRACKING on BCAST PREFIX user: PREFIX obj: NOLOOP"),
        "OK"
    );
    assert_eq!(w.q("MSET user:1 a obj:1 b other c"), "OK");
    let mut got = vec![c.read(), c.read()];
    got.sort();
    assert_eq!(got, vec![inv(&["obj:1"]), inv(&["user:1"])]);
    // NOLOOP: its own writes are not broadcast back to it.
    assert_eq!(c.q("SET user:2 x"), "OK");
    assert_eq!(w.q("SET user:3 y"), "OK");
    assert_eq!(c.read(), inv(&["user:3"]));
    assert_eq!(
        c.q("CLIENT TRACKINGINFO"),
        "{flags:[on,bcast,noloop],redirect::0,prefixes:[obj:,user:]}"
    );
    // BCAST without a prefix hears of every key; a whole transaction is one message.
    let mut all = Raw::<false>::resp3(s.port);
    assert_eq!(all.q("CLIENT TRACKING on BCAST"), "OK");
    assert_eq!(w.q("MULTI"), "OK");
    assert_eq!(w.q("SET p 1"), "QUEUED");
    assert_eq!(w.q("SET q 2"), "QUEUED");
    assert_eq!(w.q("EXEC"), "[OK,OK]");
    assert_eq!(all.read(), inv(&["p", "q"]));
}

#[test]
fn optin_and_optout_with_client_caching() {
    let s = Server::tern(&[]);
    let mut w = Raw::<false>::new(s.port);
    let mut c = Raw::<false>::resp3(s.port);
    assert_eq!(c.q("CLIENT TRACKING on OPTIN"), "OK");
    assert_eq!(c.q("GET notcached"), "(nil)");
    assert_eq!(c.q("CLIENT CACHING yes"), "OK");
    assert_eq!(c.q("GET cached"), "(nil)");
    // CACHING applies to the next command only.
    assert_eq!(c.q("GET nexttime"), "(nil)");
    assert_eq!(w.q("MSET notcached 1 cached 1 nexttime 1"), "OK");
    assert_eq!(c.read(), inv(&["cached"]));
    assert_eq!(c.q("PING"), "PONG");

    let mut o = Raw::<false>::resp3(s.port);
    assert_eq!(o.q("CLIENT TRACKING on OPTOUT"), "OK");
    assert_eq!(o.q("CLIENT CACHING no"), "OK");
    assert_eq!(o.q("GET skipped"), "(nil)");
    assert_eq!(o.q("GET kept"), "(nil)");
    assert_eq!(w.q("MSET skipped 1 kept 1"), "OK");
    assert_eq!(o.read(), inv(&["kept"]));
    assert_eq!(
        o.q("CLIENT CACHING yes"),
        "!ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
    );
}

#[test]
fn expired_key_is_invalidated() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::resp3(s.port);
    let mut w = Raw::<false>::new(s.port);
    assert_eq!(w.q("SET t v PX 50"), "OK");
    assert_eq!(c.q("CLIENT TRACKING on"), "OK");
    assert_eq!(c.q("GET t"), "v");
    // The active expire cycle removes it; the client is told without asking.
    assert_eq!(c.read(), inv(&["t"]));
}

#[test]
fn table_limit_evicts_with_invalidation() {
    let s = Server::tern(&["--threads", "2"]);
    let mut c = Raw::<false>::resp3(s.port);
    assert_eq!(c.q("CLIENT TRACKING on"), "OK");
    assert_eq!(c.q("MGET a b c"), "[(nil),(nil),(nil)]");
    let mut admin = Raw::<false>::new(s.port);
    assert_eq!(admin.q("CONFIG SET tracking-table-max-keys 1"), "OK");
    let mut evicted = Vec::new();
    for _ in 0..2 {
        evicted.push(c.read());
    }
    evicted.sort();
    assert!(
        evicted.iter().all(|m| m.starts_with(INV)),
        "unexpected messages {evicted:?}"
    );
    let info = admin.q("INFO clients");
    assert!(info.contains("tracking_clients:1"), "{info}");
    let stats = admin.q("INFO stats");
    assert!(stats.contains("tracking_total_keys:1"), "{stats}");
}

#[test]
fn introspection_and_off() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    assert_eq!(c.q("CLIENT GETREDIR"), ":-1");
    assert_eq!(c.q("CLIENT TRACKING on"), "OK");
    assert_eq!(c.q("CLIENT GETREDIR"), ":0");
    assert!(c.q("CLIENT INFO").contains("flags=t "));
    assert_eq!(c.q("CLIENT TRACKING off"), "OK");
    assert_eq!(c.q("CLIENT GETREDIR"), ":-1");
    assert_eq!(
        c.q("CLIENT TRACKINGINFO"),
        "[flags,[off],redirect,:-1,prefixes,[]]"
    );
}

#[test]
fn errors_match_redis() {
    let Some(r) = Server::redis(&[]) else { return };
    let t = Server::tern(&[]);
    for cmd in [
        "CLIENT CACHING yes",
        "CLIENT TRACKING on REDIRECT 999999",
        "CLIENT TRACKING on OPTIN OPTOUT",
        "CLIENT TRACKING on PREFIX a",
        "CLIENT TRACKING on BCAST PREFIX ab PREFIX a",
        "CLIENT TRACKING on BCAST OPTIN",
        "CLIENT TRACKING maybe",
        "CLIENT TRACKING on NOSUCH",
        "CLIENT CACHING maybe",
    ] {
        let mut a = Raw::<false>::new(r.port);
        let mut b = Raw::<false>::new(t.port);
        assert_eq!(b.q(cmd), a.q(cmd), "{cmd}");
    }
}

#[test]
fn many_clients_across_threads_all_hear() {
    let s = Server::tern(&["--threads", "2"]);
    let mut readers: Vec<Raw<false>> = (0..20).map(|_| Raw::<false>::resp3(s.port)).collect();
    for r in readers.iter_mut() {
        assert_eq!(r.q("CLIENT TRACKING on"), "OK");
        assert_eq!(r.q("MGET x y"), "[(nil),(nil)]");
    }
    let mut w = Raw::<false>::new(s.port);
    assert_eq!(w.q("MSET x 1 y 2"), "OK");
    for r in readers.iter_mut() {
        assert_eq!(r.read(), inv(&["x"]));
        assert_eq!(r.read(), inv(&["y"]));
    }
}

/// Invalidation follows what the write changed (Redis's signalModifiedKey, the same points
/// that touch WATCH): a write that changes nothing sends nothing; one that rewrites the same
/// value does.
#[test]
fn writes_that_change_nothing_do_not_invalidate() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::resp3(s.port);
    let mut w = Raw::<false>::new(s.port);
    assert_eq!(w.q("SADD s x"), ":1");
    assert_eq!(w.q("SET k v"), "OK");
    assert_eq!(w.q("SET ttl v EX 100"), "OK");
    assert_eq!(w.q("HSET h f 1"), ":1");
    assert_eq!(c.q("CLIENT TRACKING on"), "OK");
    assert_eq!(c.q("SMEMBERS s"), "[x]");
    assert_eq!(c.q("GET k"), "v");
    assert_eq!(c.q("GET ttl"), "v");
    assert_eq!(c.q("HGET h f"), "1");
    assert_eq!(c.q("GET missing"), "(nil)");
    for (cmd, reply) in [
        ("SADD s x", ":0"),
        ("SREM s nope", ":0"),
        ("SETNX k z", ":0"),
        ("SET k z NX", "(nil)"),
        ("EXPIRE ttl 200 NX", ":0"),
        ("PERSIST k", ":0"),
        ("HSETNX h f 2", ":0"),
        ("HDEL h nope", ":0"),
        ("DEL missing", ":0"),
        ("SET missing v XX", "(nil)"),
    ] {
        assert_eq!(w.q(cmd), reply, "{cmd}");
        // Nothing was pushed before the PONG.
        assert_eq!(c.q("PING"), "PONG", "after {cmd}");
    }
    // The same value written again is a modification, as in Redis.
    assert_eq!(w.q("SET k v"), "OK");
    assert_eq!(c.read(), inv(&["k"]));
    // A refused write of one key of a multi-key command invalidates only what changed.
    assert_eq!(c.q("GET k"), "v");
    assert_eq!(w.q("MSETNX k 1 fresh 2"), ":0");
    assert_eq!(c.q("PING"), "PONG");
    assert_eq!(w.q("SADD s y"), ":1");
    assert_eq!(c.read(), inv(&["s"]));
}
