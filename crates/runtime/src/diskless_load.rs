//! The replica side of a diskless full sync (`repl-diskless-load`): the master's RDB payload
//! is parsed as it arrives from the socket, with no temp file.
//!
//! - `on-empty-db` (when this server holds no key): straight into the keyspace, clients get
//!   `-LOADING` meanwhile; a failed transfer leaves the keyspace empty.
//! - `swapdb`: into a separate store, swapped in whole once complete; a failed transfer keeps
//!   the old dataset. While the master's history is the one we already follow (same
//!   replication ID), the old data keeps serving reads during the load (Redis's async
//!   loading: INFO `async_loading:1`); otherwise clients get `-LOADING`.
//!
//! The link (`master_link`) reads the payload and decides the mode; this module loads.

use crate::server::Server;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use tern_engine::clock;
use tern_engine::store::Store;
use tern_persist::rdb::file::{Loaded, StreamLoadError};

/// The replica's diskless-load state, owned by the server (`Server::diskless_load`).
#[derive(Default)]
pub struct DisklessLoad {
    /// A swapdb load runs while the old dataset serves reads (INFO async_loading).
    pub async_loading: AtomicBool,
}

/// How a full sync's payload is loaded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Spooled to a temp file, then loaded.
    Disk,
    /// Parsed from the socket into the (emptied) keyspace.
    Direct,
    /// Parsed from the socket into a separate store, swapped in once complete.
    Swap,
}

/// The mode `repl-diskless-load` asks for now.
pub fn mode(srv: &Server) -> Mode {
    match srv.config.get("repl-diskless-load").as_deref() {
        Some("swapdb") => Mode::Swap,
        Some("on-empty-db") if keyspace_empty(srv) => Mode::Direct,
        _ => Mode::Disk,
    }
}

fn keyspace_empty(srv: &Server) -> bool {
    let store = &srv.store;
    (0..store.databases())
        .all(|db| (0..store.shards_per_db()).all(|s| store.lock_shard(db, s).is_empty()))
}

/// Why a diskless load failed, in the words of the log.
pub enum Failed {
    /// The payload stopped arriving (the link's own message).
    Transfer(String),
    /// The payload was no valid RDB.
    Rdb(String),
}

/// `Mode::Direct`: load `src` into the keyspace, emptied beforehand (as Redis's emptyData),
/// while clients get -LOADING. A failure empties the keyspace again.
pub fn load_direct(
    srv: &Server,
    src: &mut impl std::io::Read,
    size: u64,
) -> Result<Loaded, Failed> {
    start_loading(srv, size);
    let res = parse(srv, &srv.store, src);
    srv.rdb.loading.store(false, Relaxed);
    match res {
        Ok(loaded) => {
            if let Err(e) = crate::lua::libraries::load_libraries(srv, &loaded.functions, false) {
                crate::persistence::empty_keyspace(srv);
                return Err(Failed::Rdb(format!("Failed loading the functions: {e}")));
            }
            done_loading(srv, &loaded);
            Ok(loaded)
        }
        Err(e) => {
            crate::persistence::empty_keyspace(srv);
            Err(e)
        }
    }
}

/// `Mode::Swap`: load `src` into a store of its own; `swap` runs once it is complete (the
/// link drops what it must there), then the new data replaces the old. `async_loading`: the
/// old data keeps serving meanwhile; else clients get -LOADING. A failure keeps the old data.
pub fn load_swapped(
    srv: &Server,
    src: &mut impl std::io::Read,
    size: u64,
    async_loading: bool,
    swap: impl FnOnce(),
) -> Result<Loaded, Failed> {
    let temp = Store::new(
        srv.store.databases(),
        srv.store.shards_per_db().trailing_zeros(),
    );
    if async_loading {
        srv.diskless_load.async_loading.store(true, Relaxed);
    } else {
        start_loading(srv, size);
    }
    let res = parse(srv, &temp, src);
    srv.rdb.loading.store(false, Relaxed);
    srv.diskless_load.async_loading.store(false, Relaxed);
    let loaded = match res {
        Ok(l) => l,
        Err(e) => {
            crate::log::notice("MASTER <-> REPLICA sync: Discarding temporary DB in background");
            free_in_background(temp);
            return Err(e);
        }
    };
    swap();
    crate::log::notice("MASTER <-> REPLICA sync: Swapping active DB with loaded DB");
    swap_in(srv, &temp);
    crate::lua::libraries::clear_libraries(srv);
    if let Err(e) = crate::lua::libraries::load_libraries(srv, &loaded.functions, false) {
        crate::log::warning(&format!("Failed loading the functions of the MASTER: {e}"));
    }
    crate::log::notice("MASTER <-> REPLICA sync: Discarding old DB in background");
    free_in_background(temp);
    done_loading(srv, &loaded);
    Ok(loaded)
}

fn start_loading(srv: &Server, size: u64) {
    srv.rdb.loading_total.store(size, Relaxed);
    srv.rdb.loading_loaded.store(0, Relaxed);
    srv.rdb.loading_start.store(clock::now_ms() / 1000, Relaxed);
    srv.rdb.loading.store(true, Relaxed);
}

fn done_loading(srv: &Server, loaded: &Loaded) {
    crate::log::notice(&format!(
        "Done loading RDB, keys loaded: {}, keys expired: {}.",
        loaded.keys, loaded.expired
    ));
    srv.rdb.last_load_keys_loaded.store(loaded.keys, Relaxed);
    srv.rdb
        .last_load_keys_expired
        .store(loaded.expired, Relaxed);
}

/// Exchange every shard of the live keyspace with the loaded one (all locked at once, so no
/// command sees half of each).
fn swap_in(srv: &Server, temp: &Store) {
    let dbs: Vec<usize> = (0..srv.store.databases()).collect();
    let mut live = srv.store.lock_dbs(&dbs);
    // lock_dbs hands the shards out in global index order: database by database.
    for (i, shard) in live.guards_mut().enumerate() {
        let per_db = temp.shards_per_db();
        shard.swap(&mut temp.lock_shard(i / per_db, i % per_db));
    }
}

/// The old (or half-loaded) data is freed off the link's thread.
fn free_in_background(store: Store) {
    let _ = std::thread::Builder::new()
        .name("free-old-db".into())
        .spawn(move || drop(store));
}

/// Parse the payload into `store`: each key with its expiry and LRU/LFU data (keys already
/// expired are kept: the master's DELs follow), as a file load does.
fn parse(srv: &Server, store: &Store, src: &mut impl std::io::Read) -> Result<Loaded, Failed> {
    let now = clock::now_ms();
    // key-load-delay holds a replica mid-load (tests use it), as with a file load.
    let mut sink = crate::persistence::KeySink::new(srv, store, now);
    let loaded = tern_persist::rdb::file::load_from(
        src,
        now,
        false,
        crate::persistence::load_options(srv, false),
        |k| sink.key(k),
        |db, keys| crate::persistence::presize(store, db, keys),
        |pos| srv.rdb.loading_loaded.store(pos as u64, Relaxed),
    )
    .map_err(|e| match e {
        StreamLoadError::Io(e) => {
            // As Redis's loader words a read that failed (the suite greps for it).
            crate::log::warning(&format!(
                "Internal error in RDB reading offset 0, function at rdbLoadRioWithLoadingCtx -> Unexpected EOF reading RDB file ({e})"
            ));
            Failed::Transfer(e.to_string())
        }
        StreamLoadError::Rdb(e) => Failed::Rdb(format!("Short read or corrupt RDB payload: {e}")),
    })?;
    if let Some(db) = sink.bad_db {
        return Err(Failed::Rdb(format!(
            "The MASTER's data holds keys in DB {db}, more than the {} databases configured",
            store.databases()
        )));
    }
    Ok(loaded)
}
