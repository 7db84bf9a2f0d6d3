//! The snapshot of a disk-target full sync (`repl-diskless-sync no`), as INFO and the
//! replica's departure see it.
//!
//! Redis serves such a sync with a BGSAVE: INFO shows `rdb_bgsave_in_progress:1` meanwhile,
//! and when the last replica waiting for it goes away the child is killed, unless save points
//! are configured (the file is then the server's own dump and worth finishing). tern takes
//! one forkless snapshot per replica; this module counts them for INFO and decides whether
//! one whose replica left is given up or finished as the server's dump.

use crate::server::Server;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// A sync snapshot in progress: counted from `start` until dropped.
pub struct Running<'a> {
    srv: &'a Server,
}

impl<'a> Running<'a> {
    pub fn start(srv: &'a Server) -> Running<'a> {
        if srv.rdb.sync_saves.fetch_add(1, Relaxed) == 0
            && !srv.rdb.bgsave_in_progress.load(Relaxed)
        {
            // INFO's rdb_current_bgsave_time_sec counts from here.
            srv.rdb
                .bgsave_started
                .store(tern_engine::clock::now_ms() / 1000, Relaxed);
        }
        Running { srv }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.srv.rdb.sync_saves.fetch_sub(1, Relaxed);
    }
}

/// The replica a sync snapshot is for went away before it was done: give the snapshot up
/// (set `abort`) unless save points make a finished RDB worth having (then it is finished
/// and kept as the dump: `keep_as_dump`), as Redis decides for its child. True when it was
/// given up.
pub fn unwanted(srv: &Server, abort: &AtomicBool) -> bool {
    if crate::persistence::has_save_points(srv) {
        return false;
    }
    abort.store(true, Relaxed);
    true
}

/// Logged once an unwanted snapshot stopped.
pub(crate) fn aborted(_srv: &Server) {
    crate::log::warning(
        "Background saving for SYNC aborted: no replica waits for this RDB any more",
    );
}

/// A finished sync snapshot.
pub struct SyncRdb {
    /// The temp file (removed when the replica detaches).
    pub path: std::path::PathBuf,
    /// The replica's stream starts at this offset.
    pub offset: u64,
    /// The server's change counter at the cut.
    pub dirty_at_cut: u64,
}

/// A snapshot kept running for the save points although its replica left: it becomes the
/// server's dump (`dbfilename`), as Redis's sync BGSAVE is.
pub fn keep_as_dump(srv: &Server, rdb: &SyncRdb) {
    let path = crate::persistence::rdb_path(srv);
    let moved = std::fs::File::open(&rdb.path)
        .and_then(|f| f.sync_all())
        .and_then(|()| std::fs::rename(&rdb.path, &path));
    if let Err(e) = moved {
        crate::log::warning(&format!(
            "Error moving temp DB file {} on the final destination {}: {e}",
            rdb.path.display(),
            path.display()
        ));
        return;
    }
    // A later save may have finished first: the counter only moves forward.
    srv.dirty_at_save.fetch_max(rdb.dirty_at_cut, Relaxed);
    srv.lastsave
        .store(tern_engine::clock::now_ms() / 1000, Relaxed);
    srv.rdb.saves.fetch_add(1, Relaxed);
    srv.rdb.last_bgsave_ok.store(true, Relaxed);
    crate::log::notice("Background saving terminated with success");
}
