//! The order Redis's single event loop gives requests on different connections, kept across
//! tern's worker threads: a request already sent on one connection is seen by INFO / CLIENT
//! LIST / CLIENT KILL sent afterwards on another, a connection already opened is listed, and
//! client ids follow the order connections were accepted. Each is a race without that
//! ordering, so each test tries it many times (no timing is asserted).
use crate::common::*;

const TRIES: usize = 200;

/// More workers than cores, so connections of one test land on different threads.
fn server() -> Server {
    Server::tern(&["--threads", "4"])
}

fn client_list(c: &mut Raw) -> String {
    c.q("CLIENT LIST")
}

#[test]
fn a_request_sent_on_one_connection_is_seen_by_info_and_client_list_on_another() {
    let s = server();
    let mut observer = <Raw>::new(s.port);
    let mut others: Vec<Raw> = (0..4).map(|_| <Raw>::new(s.port)).collect();
    for c in &mut others {
        assert_eq!(c.q("PING"), "PONG");
    }
    for i in 0..TRIES {
        let c = &mut others[i % 4];
        // Sent, not answered yet: the observer's next request comes after it.
        c.send(&[b"CLIENT", b"SETNAME", format!("n{i}").as_bytes()]);
        let list = client_list(&mut observer);
        assert!(
            list.contains(&format!(" name=n{i} ")),
            "try {i}: CLIENT LIST ran before the name was set:\n{list}"
        );
        assert_eq!(c.read(), "OK");

        let key = format!("list{i}");
        c.send(&[b"BLPOP", key.as_bytes(), b"0"]);
        let info = observer.info_text("clients");
        assert_eq!(
            info_value(&info, "blocked_clients").as_deref(),
            Some("1"),
            "try {i}: INFO ran before BLPOP blocked:\n{info}"
        );
        assert_eq!(observer.q(&format!("LPUSH {key} v")), ":1");
        assert_eq!(c.read(), format!("[{key},v]"));
    }
}

#[test]
fn client_kill_sees_a_request_already_sent_by_its_target() {
    let s = server();
    let mut observer = <Raw>::new(s.port);
    assert_eq!(observer.q("ACL SETUSER other on >pw ~* +@all"), "OK");
    for i in 0..TRIES / 4 {
        let mut c = <Raw>::new(s.port);
        assert_eq!(c.q("PING"), "PONG");
        // CLIENT KILL USER finds the user the target switched to just before.
        c.send(&[b"AUTH", b"other", b"pw"]);
        assert_eq!(observer.q("CLIENT KILL USER other"), ":1", "try {i}");
    }
}

#[test]
fn a_connection_already_open_is_listed_and_ids_follow_accept_order() {
    let s = server();
    let mut observer = <Raw>::new(s.port);
    for i in 0..TRIES {
        let mut a = <Raw>::new(s.port);
        let mut b = <Raw>::new(s.port);
        // Both connected (the kernel finished both handshakes) before this is sent.
        let info = observer.info_text("clients");
        assert_eq!(
            info_value(&info, "connected_clients").as_deref(),
            Some("3"),
            "try {i}: INFO ran before the new connections were accepted:\n{info}"
        );
        let id_a: u64 = a.q("CLIENT ID")[1..].parse().unwrap();
        let id_b: u64 = b.q("CLIENT ID")[1..].parse().unwrap();
        assert_eq!(
            id_b,
            id_a + 1,
            "try {i}: ids out of accept order (first {id_a}, second {id_b})"
        );
        drop((a, b));
        wait_for(
            "the closed connections to go",
            std::time::Duration::from_secs(10),
            || {
                info_value(&observer.info_text("clients"), "connected_clients").as_deref()
                    == Some("1")
            },
        );
    }
}
