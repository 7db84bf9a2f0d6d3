//! The shared replication buffer: every replica and the backlog read one copy of the stream,
//! a slow replica keeps the backlog longer than its setting (and another replica may continue
//! from there), client-output-buffer-limit drops a replica whose share grows too big, and
//! the memory comes back once nobody needs it.
use crate::common::*;
use crate::psync::sync_counts;

fn mem_buffers(c: &mut redis::Connection) -> u64 {
    info_u64(c, "memory", "mem_total_replication_buffers")
}

fn histlen(c: &mut redis::Connection) -> u64 {
    info_u64(c, "replication", "repl_backlog_histlen")
}

/// The largest omem in `CLIENT LIST TYPE replica`.
fn max_replica_omem(m: &mut redis::Connection) -> u64 {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("replica")
        .query(m)
        .unwrap();
    list.lines()
        .filter_map(|l| {
            let omem = l.split(' ').find_map(|f| f.strip_prefix("omem="))?;
            Some(omem.parse::<u64>().unwrap())
        })
        .max()
        .unwrap_or_else(|| panic!("no replica client: {list}"))
}

/// Writes `mb` megabytes in 100 KiB values (the same keys each time).
fn write_mb(m: &mut redis::Connection, prefix: &str, mb: usize) {
    let v = "x".repeat(100 * 1024);
    for i in 0..mb * 10 {
        q(m, &["SET", &format!("{prefix}{i}"), &v]);
    }
}

/// A master with a 16 KiB backlog and no replica output limit, and two replicas in sync.
fn master_with_two_replicas() -> (Server, Server, Server) {
    let debug = ["--enable-debug-command", "yes"];
    let master = Server::tern(&[
        "--repl-backlog-size",
        "16384",
        "--client-output-buffer-limit",
        "replica 0 0 0",
        debug[0],
        debug[1],
    ]);
    let (r1, r2) = (Server::tern(&debug), Server::tern(&debug));
    let mut m = master.conn();
    for r in [&r1, &r2] {
        let mut c = r.conn();
        replicaof(&mut c, &master);
        wait_caught_up(&mut m, &mut c);
    }
    (master, r1, r2)
}

#[test]
fn a_stopped_replica_pins_one_shared_copy_until_its_limit_drops_it() {
    let (master, fast, slow) = master_with_two_replicas();
    let mut m = master.conn();
    slow.signal(libc::SIGSTOP);
    // Past what the sockets' kernel buffers absorb.
    write_mb(&mut m, "k", 40);
    let mut f = fast.conn();
    wait_caught_up(&mut m, &mut f);
    // The stopped replica holds everything since it stopped; one copy serves both.
    let (mem, held) = (mem_buffers(&mut m), histlen(&mut m));
    assert!(held > 20_000_000, "the backlog outgrew its setting: {held}");
    assert!(
        mem < held * 3 / 2,
        "one shared copy ({mem} bytes for {held} of stream)"
    );
    assert!(max_replica_omem(&mut m) > 20_000_000);
    assert!(info_u64(&mut m, "memory", "mem_clients_slaves") > 0);
    // Its limit now applies: the next block drops it, and the memory comes back.
    q(
        &mut m,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "replica 128kb 0 0",
        ],
    );
    q(&mut m, &["SET", "big", &"y".repeat(64 * 1024)]);
    wait_until("the stopped replica to be dropped", || {
        info_u64(&mut m, "replication", "connected_slaves") == 1
    });
    wait_until("the buffer to shrink", || histlen(&mut m) < 1_000_000);
    assert!(mem_buffers(&mut m) < mem / 4);
    assert!(master
        .log()
        .contains("for overcoming of output buffer limits"));
    slow.signal(libc::SIGCONT);
    let mut s = slow.conn();
    wait_caught_up(&mut m, &mut s);
    assert_eq!(
        q(&mut m, &["DEBUG", "DIGEST"]),
        q(&mut s, &["DEBUG", "DIGEST"])
    );
    assert_eq!(
        q(&mut m, &["DEBUG", "DIGEST"]),
        q(&mut f, &["DEBUG", "DIGEST"])
    );
}

#[test]
fn a_replica_continues_from_what_another_replica_still_holds() {
    let (master, a, pinning) = master_with_two_replicas();
    let mut m = master.conn();
    // Stopped first, it holds the stream from before `a` leaves (once its socket is full).
    pinning.signal(libc::SIGSTOP);
    let mut ra = a.conn();
    let mut m5 = master.conn();
    q(&mut m5, &["SELECT", "5"]);
    write_mb(&mut m5, "db5:", 20);
    q(&mut m5, &["SET", "db5:first", "v"]);
    wait_caught_up(&mut m, &mut ra);
    // `a` leaves for a master that is not there, then comes back: its stream was in db 5.
    let nowhere = free_port();
    q(&mut ra, &["REPLICAOF", "127.0.0.1", &nowhere.to_string()]);
    write_mb(&mut m5, "db5:", 40);
    assert!(histlen(&mut m) > 20_000_000, "the stopped replica pins it");
    let (full, ok, _) = sync_counts(&mut m);
    replicaof(&mut ra, &master);
    wait_caught_up(&mut m, &mut ra);
    assert_eq!(sync_counts(&mut m).0, full, "no new full sync");
    assert_eq!(sync_counts(&mut m).1, ok + 1, "continued from the buffer");
    assert_eq!(
        q(&mut m, &["DEBUG", "DIGEST"]),
        q(&mut ra, &["DEBUG", "DIGEST"])
    );
    q(&mut ra, &["SELECT", "5"]);
    assert_eq!(qi(&mut ra, &["DBSIZE"]), 401);
    pinning.signal(libc::SIGCONT);
}
