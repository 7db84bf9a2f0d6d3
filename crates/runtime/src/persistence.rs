//! Persistence commands: DUMP and RESTORE (Redis's serialized-value payloads), SAVE, BGSAVE,
//! LASTSAVE, and the RDB save/load machinery (snapshot -> file, file -> store) with the state
//! INFO persistence reports.

use crate::args::{eq_ic, Args};
use crate::ctx::Ctx;
use crate::table::{flags as f, CommandSpec};
use std::sync::atomic::Ordering::Relaxed;
use tern_engine::clock;
use tern_engine::EntryBox;
use tern_persist::rdb::RestoreError;

// ---------------------------------------------------------------------------------------------
// RDB save / load

use crate::server::Server;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::sync::Arc;

/// Save/load state for INFO persistence and the save commands, owned by the server
/// (`Server::rdb`).
pub struct RdbState {
    pub bgsave_in_progress: AtomicBool,
    /// Snapshots for disk-target full syncs running now: INFO shows them as a BGSAVE, as
    /// Redis's sync is one.
    pub sync_saves: std::sync::atomic::AtomicUsize,
    pub bgsave_scheduled: AtomicBool,
    /// Unix seconds the running BGSAVE started.
    pub bgsave_started: AtomicU64,
    pub last_bgsave_ok: AtomicBool,
    pub last_bgsave_time_sec: AtomicI64,
    pub saves: AtomicU64,
    pub loading: AtomicBool,
    pub loading_total: AtomicU64,
    pub loading_loaded: AtomicU64,
    pub loading_start: AtomicU64,
    pub last_load_keys_loaded: AtomicU64,
    pub last_load_keys_expired: AtomicU64,
    /// Unix seconds of the last save attempt (for the save-points retry delay).
    pub last_attempt: AtomicU64,
    /// Set to give up the running BGSAVE (FLUSHALL, as Redis kills its RDB child); shared with
    /// the thread that watches the save's writer process.
    abort_bgsave: Arc<AtomicBool>,
    save_lock: parking_lot::Mutex<()>,
    /// DEBUG SET-SKIP-CHECKSUM-VALIDATION: RESTORE and RDB loading take payloads whatever their
    /// CRC-64 says (the corruption tests feed hand-made payloads).
    pub skip_checksum_validation: AtomicBool,
    /// Set once the dataset read at start-up is in (and its log lines written): only then is
    /// "Ready to accept connections" logged, as Redis logs it after loading.
    pub startup_load_done: AtomicBool,
}

impl Default for RdbState {
    fn default() -> RdbState {
        RdbState {
            bgsave_in_progress: AtomicBool::new(false),
            sync_saves: Default::default(),
            bgsave_scheduled: AtomicBool::new(false),
            bgsave_started: AtomicU64::new(0),
            last_bgsave_ok: AtomicBool::new(true),
            last_bgsave_time_sec: AtomicI64::new(-1),
            saves: AtomicU64::new(0),
            loading: AtomicBool::new(false),
            loading_total: AtomicU64::new(0),
            loading_loaded: AtomicU64::new(0),
            loading_start: AtomicU64::new(0),
            last_load_keys_loaded: AtomicU64::new(0),
            last_load_keys_expired: AtomicU64::new(0),
            last_attempt: AtomicU64::new(0),
            abort_bgsave: Default::default(),
            save_lock: parking_lot::const_mutex(()),
            skip_checksum_validation: AtomicBool::new(false),
            startup_load_done: AtomicBool::new(false),
        }
    }
}

/// The RDB file's path: `dbfilename` in the working directory (`dir`).
pub fn rdb_path(srv: &Server) -> std::path::PathBuf {
    let name = srv
        .config
        .get("dbfilename")
        .unwrap_or_else(|| "dump.rdb".into());
    std::path::PathBuf::from(name)
}

fn unix_secs() -> u64 {
    clock::now_ms() / 1000
}

/// The AUX fields tern writes at the head of every RDB (`aof_base`: the RDB preamble of an
/// AOF base file).
pub(crate) fn rdb_aux(now_ms: u64, aof_base: bool) -> Vec<(&'static str, String)> {
    vec![
        ("redis-ver", crate::REDIS_VERSION.to_string()),
        ("redis-bits", "64".to_string()),
        ("ctime", (now_ms / 1000).to_string()),
        ("used-mem", "0".to_string()),
        ("aof-base", (aof_base as u8).to_string()),
    ]
}

/// An RDB file writer with the configured compression and checksum, starting with `aux` and
/// the function libraries (made at a snapshot's cut, so the libraries are the cut's).
pub(crate) fn rdb_writer<W: std::io::Write + Send>(
    srv: &Server,
    out: W,
    aux: &[(&str, String)],
) -> tern_persist::rdb::file::FileWriter<W> {
    tern_persist::rdb::file::FileWriter::new(
        out,
        srv.config.get_bool("rdbcompression"),
        srv.config.get_bool("rdbchecksum"),
        aux,
        &crate::lua::libraries::library_codes(srv),
        // Version 12 only when a hash has field times, so that other files stay loadable by
        // Redis 7.0 and 7.2. (A time given after the cut, while the snapshot is written, lands
        // in a file that says 10: tern reads it, Redis 7.x refuses it either way.)
        if tern_engine::field_expire::any_hash_indexed() {
            tern_persist::rdb::RDB_VERSION_FIELD_TTLS
        } else {
            tern_persist::rdb::RDB_VERSION
        },
    )
}

/// Write a point-in-time RDB of the whole keyspace to a temp file, then rename it over the
/// configured file. Runs on the calling thread. Returns the keys written.
pub fn rdb_save(srv: &Server) -> Result<u64, String> {
    let never = AtomicBool::new(false);
    rdb_save_abortable(srv, &never, None).map(|k| k.expect("not aborted"))
}

/// Where a save's bytes go: a temp file this process writes (SAVE, shutdown), or the pipe to
/// the writer process of a background save.
enum Target {
    Own(std::path::PathBuf),
    Child(crate::save_child::SaveChild),
}

/// `rdb_save` that gives up when `abort` is set (Ok(None); the file is left as it was).
/// `child`: write through this writer process (BGSAVE), whose death fails the save.
fn rdb_save_abortable(
    srv: &Server,
    abort: &AtomicBool,
    child: Option<(crate::save_child::SaveChild, std::process::ChildStdin)>,
) -> Result<Option<u64>, String> {
    let _one = srv.rdb.save_lock.lock();
    srv.rdb.last_attempt.store(unix_secs(), Relaxed);
    let path = rdb_path(srv);
    let open_err = |tmp: &std::path::Path, e: std::io::Error| {
        format!(
            "Failed opening the temp RDB file {} (in server root dir {}) for saving: {e}",
            tmp.display(),
            std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default()
        )
    };
    let (target, out): (Target, Box<dyn std::io::Write + Send>) = match child {
        Some((c, stdin)) => (Target::Child(c), Box::new(stdin)),
        None => {
            let tmp = std::path::PathBuf::from(format!("temp-{}.rdb", std::process::id()));
            let file = std::fs::File::create(&tmp).map_err(|e| open_err(&tmp, e))?;
            (Target::Own(tmp), Box::new(file))
        }
    };
    let now = clock::now_ms();
    let aux = rdb_aux(now, false);
    let dirty_at_cut = AtomicU64::new(0);
    let w = srv.store.snapshot_abortable(
        || {
            // The replication history as of the cut: a restart from this file continues it.
            let mut aux = aux;
            aux.extend(crate::replication::rdb_repl_aux(srv));
            let w = rdb_writer(srv, std::io::BufWriter::with_capacity(1 << 20, out), &aux);
            dirty_at_cut.store(srv.dirty_total(), Relaxed);
            let w = crate::db_policy::Persisted::new(&srv.db_policies, w);
            crate::save_progress::Counted::new(&srv.save_progress, w)
        },
        abort,
    );
    let written = match w {
        None => Err(None),
        Some(w) => {
            let keys = w.inner.inner.keys;
            match w.inner.inner.finish().and_then(|bw| {
                let mut out = bw.into_inner().map_err(|e| e.into_error())?;
                out.flush()?;
                Ok(out)
            }) {
                Ok(out) => Ok((keys, out)),
                Err(e) => Err(Some(e)),
            }
        }
    };
    // The temp file: synced by this process, or by the writer process once its input ends.
    let tmp = match target {
        Target::Own(tmp) => {
            let res = match written {
                Ok((keys, out)) => {
                    drop(out);
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&tmp)
                        .and_then(|f| f.sync_all())
                        .map(|_| keys)
                        .map_err(Some)
                }
                Err(e) => Err(e),
            };
            match res {
                Ok(keys) => (tmp, keys),
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    return match e {
                        None => Ok(None),
                        Some(e) => Err(format!("Write error saving DB on disk: {e}")),
                    };
                }
            }
        }
        Target::Child(c) => {
            let tmp = c.path.clone();
            let pid = c.pid();
            match written {
                Ok((keys, out)) => {
                    drop(out); // end of input: the writer syncs and exits
                    match c.wait() {
                        crate::save_child::Ended::Ok => (tmp, keys),
                        ended => {
                            let _ = std::fs::remove_file(&tmp);
                            return Err(child_failure(pid, ended));
                        }
                    }
                }
                Err(e) => {
                    // Given up (FLUSHALL), or the writer died (the pipe broke, or the
                    // watcher set the abort flag): which one, the process's status says.
                    let died_first = c.has_ended();
                    if died_first {
                        let ended = c.wait();
                        let _ = std::fs::remove_file(&tmp);
                        return Err(child_failure(pid, ended));
                    }
                    c.kill_and_remove();
                    return match e {
                        None => Ok(None),
                        Some(e) => Err(format!("Write error saving DB on disk: {e}")),
                    };
                }
            }
        }
    };
    let (tmp, keys) = tmp;
    if let Err(e) = std::fs::rename(&tmp, &path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "Error moving temp DB file {} on the final destination {}: {e}",
            tmp.display(),
            path.display()
        ));
    }
    srv.dirty_at_save.store(dirty_at_cut.load(Relaxed), Relaxed);
    srv.lastsave.store(unix_secs(), Relaxed);
    srv.rdb.saves.fetch_add(1, Relaxed);
    Ok(Some(keys))
}

/// Redis's words for a writer process that failed.
fn child_failure(pid: u32, ended: crate::save_child::Ended) -> String {
    match ended {
        crate::save_child::Ended::Signal(sig) => format!("terminated by signal {sig}"),
        crate::save_child::Ended::Failed(e) => format!("writer process {pid} failed: {e}"),
        crate::save_child::Ended::Ok => format!("writer process {pid} ended early"),
    }
}

/// FLUSHALL with save points: save now (outside any atomic unit), as Redis's rdbSave there.
pub fn save_after_flushall(srv: &Server) {
    match rdb_save(srv) {
        Ok(_) => crate::log::notice("DB saved on disk"),
        Err(e) => crate::log::warning(&e),
    }
}

/// FLUSHALL: give up a running BGSAVE or diskless transfer (its data is gone), as Redis kills
/// its RDB child.
pub fn abort_bgsave(srv: &Server) {
    if srv.rdb.bgsave_in_progress.load(Relaxed) {
        srv.rdb.abort_bgsave.store(true, Relaxed);
    }
    srv.diskless.abort_transfer();
}

/// How an RDB file is loaded.
#[derive(Default, Clone, Copy)]
pub struct RdbLoadHow {
    /// DEBUG RELOAD MERGE: a library already loaded is replaced by the file's instead of
    /// failing the load.
    pub merge: bool,
    /// Loaded by a replica: keys already expired stay (its master's DEL removes them), as
    /// Redis drops them only on a master.
    pub as_replica: bool,
    /// Name the keys dropped as expired (`RdbLoaded::expired_keys`).
    pub name_expired: bool,
}

/// What a loaded RDB file holds beyond its keys.
pub struct RdbLoaded {
    /// The replication history it recorded, if complete.
    pub repl: Option<crate::replication::ReplInfo>,
    /// (database, key) of the keys dropped as expired, with `RdbLoadHow::name_expired`.
    pub expired_keys: Vec<(usize, Vec<u8>)>,
}

/// Load an RDB file into the (empty) store. Ok(None) when the file does not exist.
pub fn rdb_load(
    srv: &Server,
    path: &std::path::Path,
    how: RdbLoadHow,
) -> Result<Option<RdbLoaded>, String> {
    let fatal = |e: std::io::Error| format!("Fatal error loading the DB {}: {e}", path.display());
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(fatal(e)),
    };
    // Mapped, not read: a heap copy of the file would double the memory a restart needs
    // (file plus dataset); mapped pages are page cache the kernel can drop as it goes.
    let map = if file.metadata().map_err(fatal)?.len() == 0 {
        None
    } else {
        // SAFETY: dump files are only ever replaced by rename, never changed in place, so
        // the mapped bytes stay as they are while we read them.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(fatal)?;
        let _ = map.advise(memmap2::Advice::Sequential);
        Some(map)
    };
    let data: &[u8] = map.as_deref().unwrap_or(&[]);
    srv.rdb.loading.store(true, Relaxed);
    srv.rdb.loading_total.store(data.len() as u64, Relaxed);
    srv.rdb.loading_loaded.store(0, Relaxed);
    srv.rdb.loading_start.store(unix_secs(), Relaxed);
    let res = load_rdb_into(
        srv,
        data,
        !how.as_replica,
        how.name_expired,
        how.merge,
        |pos| srv.rdb.loading_loaded.store(pos as u64, Relaxed),
    );
    srv.rdb.loading.store(false, Relaxed);
    let loaded = match res {
        Ok(l) => l,
        Err(RdbLoadError::Corrupt(e)) => {
            return Err(format!(
                "Short read or corrupt RDB file {}: {e}",
                path.display()
            ))
        }
        Err(RdbLoadError::TooManyDbs { dbs, db }) => {
            return Err(format!("FATAL: Data file {} was created with a Redis server configured to handle more than {dbs} databases (key in DB {db}). Exiting", path.display()));
        }
        Err(RdbLoadError::Functions(e)) => {
            return Err(format!(
                "Failed loading the functions of {}: {e}",
                path.display()
            ))
        }
    };
    if loaded.empty_keys.is_empty() {
        crate::log::notice(&format!(
            "Done loading RDB, keys loaded: {}, keys expired: {}.",
            loaded.keys, loaded.expired
        ));
    } else {
        crate::log::notice(&format!(
            "Done loading RDB, keys loaded: {}, keys expired: {}, empty keys skipped: {}.",
            loaded.keys,
            loaded.expired,
            loaded.empty_keys.len()
        ));
    }
    srv.rdb.last_load_keys_loaded.store(loaded.keys, Relaxed);
    srv.rdb
        .last_load_keys_expired
        .store(loaded.expired, Relaxed);
    srv.dirty_at_save.store(srv.dirty_total(), Relaxed);
    srv.lastsave.store(unix_secs(), Relaxed);
    Ok(Some(RdbLoaded {
        repl: crate::replication::ReplInfo::from_aux(&loaded.aux),
        expired_keys: loaded.expired_keys,
    }))
}

/// Drop every key of every database and every function library, without propagating it
/// (before a dataset is loaded in its place, as Redis's emptyData). The old data is freed
/// after the locks are released.
pub(crate) fn empty_keyspace(srv: &Server) {
    crate::lua::libraries::clear_libraries(srv);
    let dbs: Vec<usize> = (0..srv.store.databases()).collect();
    let mut g = srv.store.lock_dbs(&dbs);
    let old: Vec<_> = g.guards_mut().map(|sh| sh.clear()).collect();
    drop(g);
    drop(old);
}

/// Log why an RDB image was refused, as Redis does before it exits: the reason, then the
/// report of its checker (where, which key, which type).
fn report_corrupt_rdb(e: &RestoreError) {
    // (key, offset of its record, RDB type) when the error is inside a key's value
    let (cause, at) = match e {
        RestoreError::InKey {
            cause,
            key,
            offset,
            rdb_type,
        } => (&**cause, Some((key.as_slice(), *offset, *rdb_type))),
        other => (other, None),
    };
    let offset = match (cause, at) {
        (_, Some((_, off, _))) => off,
        (RestoreError::Bad(_, off), None) => *off,
        _ => 0,
    };
    let why = match cause {
        RestoreError::Bad(what, _) => what.clone(),
        other => other.to_string(),
    };
    let w = crate::log::warning;
    w(&format!(
        "Internal error in RDB reading offset {offset}, function at rdbLoadObject -> {why}"
    ));
    w("--- RDB ERROR DETECTED ---");
    w(&format!("[offset {offset}] {why}"));
    if let Some((key, _, t)) = at {
        w("[additional info] While doing: read-object-value");
        w(&format!(
            "[additional info] Reading key '{}'",
            String::from_utf8_lossy(key)
        ));
        w(&format!("[additional info] Reading type {t}"));
    }
}

/// Why an RDB image could not be loaded.
pub(crate) enum RdbLoadError {
    Corrupt(String),
    TooManyDbs { dbs: usize, db: usize },
    Functions(String),
}

/// Where the keys of an RDB being loaded go (a file, an AOF preamble, a master's payload):
/// into `store`, pausing after each as `key-load-delay` says; keys of a database beyond
/// those configured are only noted (`bad_db`: the first one met).
pub(crate) struct KeySink<'a> {
    store: &'a tern_engine::store::Store,
    now: u64,
    lfu: bool,
    delay: crate::load_delay::KeyLoadDelay<'a>,
    pub bad_db: Option<usize>,
}

impl<'a> KeySink<'a> {
    pub fn new(srv: &'a Server, store: &'a tern_engine::store::Store, now: u64) -> KeySink<'a> {
        KeySink {
            store,
            now,
            lfu: srv.config.hot.lfu_policy.load(Relaxed),
            delay: crate::load_delay::KeyLoadDelay::from_config(srv),
            bad_db: None,
        }
    }

    pub fn key(&mut self, k: tern_persist::rdb::file::LoadedKey) {
        if k.db >= self.store.databases() {
            self.bad_db.get_or_insert(k.db);
            return;
        }
        insert_loaded_key(self.store, k, self.now, self.lfu);
        self.delay.after_key();
    }
}

/// An RDB's RESIZEDB hint: the database's tables are sized once instead of growing step by
/// step.
pub(crate) fn presize(store: &tern_engine::store::Store, db: usize, keys: u64) {
    if db < store.databases() {
        let per_shard = keys as usize / store.shards_per_db();
        for s in 0..store.shards_per_db() {
            store.lock_shard(db, s).reserve(per_shard + per_shard / 8);
        }
    }
}

/// The RDB loader's options as the configuration sets them.
pub(crate) fn load_options(
    srv: &Server,
    name_expired: bool,
) -> tern_persist::rdb::file::LoadOptions {
    tern_persist::rdb::file::LoadOptions {
        // `clients` leaves files (and the master's payload) to the shallow checks.
        deep: srv.config.get("sanitize-dump-payload").as_deref() == Some("yes"),
        verify_crc: !srv.rdb.skip_checksum_validation.load(Relaxed),
        name_expired,
    }
}

/// Put one key read from an RDB into `store`, its LRU idle time or LFU counter turned into
/// the access stamp the store keeps (shard locked for this key alone).
fn insert_loaded_key(
    store: &tern_engine::store::Store,
    k: tern_persist::rdb::file::LoadedKey,
    now: u64,
    lfu: bool,
) {
    let mut access = clock::initial_access_at(now);
    if lfu {
        if let Some(f) = k.freq {
            access = (clock::lfu_minutes() << 8) | f as u32;
        }
    } else if let Some(idle) = k.idle {
        let mut abs = clock::lru_clock() as i64 - idle as i64;
        if abs < 0 {
            abs += clock::LRU_CLOCK_MAX as i64;
        }
        access = abs as u32;
    }
    let h = tern_engine::key_hash(&k.key);
    let mut g = store.lock_shard(k.db, store.shard_index(h));
    g.insert_entry(
        h,
        EntryBox::new_expiring(&k.key, k.value, access, k.expire_at),
        now,
    );
}

/// Load an RDB image (a file, or an AOF's RDB preamble) into the store: each key with its
/// expiry and its LRU idle time or LFU counter, then the function libraries. Expired keys are
/// dropped when `drop_expired` (not for an AOF preamble: the AOF's own DELs follow). The
/// libraries join those loaded already (`merge`: replacing any of the same name).
pub(crate) fn load_rdb_into(
    srv: &Server,
    data: &[u8],
    drop_expired: bool,
    name_expired: bool,
    merge: bool,
    progress: impl FnMut(usize),
) -> Result<tern_persist::rdb::file::Loaded, RdbLoadError> {
    let now = clock::now_ms();
    let mut sink = KeySink::new(srv, &srv.store, now);
    let loaded = tern_persist::rdb::file::load(
        data,
        now,
        drop_expired,
        load_options(srv, name_expired),
        |k| sink.key(k),
        |db, keys| presize(&srv.store, db, keys),
        progress,
    )
    .map_err(|e| {
        report_corrupt_rdb(&e);
        RdbLoadError::Corrupt(format!("{e}"))
    })?;
    // Old servers could leave empty collections behind: skipped, the first ten named.
    for key in loaded.empty_keys.iter().take(10) {
        crate::log::notice(&format!(
            "rdbLoadObject skipping empty key: {}",
            String::from_utf8_lossy(key)
        ));
    }
    if let Some(db) = sink.bad_db {
        let dbs = srv.store.databases();
        return Err(RdbLoadError::TooManyDbs { dbs, db });
    }
    if !loaded.functions.is_empty() {
        crate::lua::libraries::load_libraries(srv, &loaded.functions, merge)
            .map_err(RdbLoadError::Functions)?;
    }
    Ok(loaded)
}

/// Start a background save unless one runs; false when one was already running.
pub fn start_bgsave(srv: std::sync::Arc<Server>) -> bool {
    if srv.rdb.bgsave_in_progress.swap(true, Relaxed) {
        return false;
    }
    srv.rdb.bgsave_scheduled.store(false, Relaxed);
    srv.rdb.bgsave_started.store(unix_secs(), Relaxed);
    srv.rdb.abort_bgsave.store(false, Relaxed);
    // The writer process exists before BGSAVE replies, as Redis forks before it replies.
    let abort = srv.rdb.abort_bgsave.clone();
    let on_end = move || abort.store(true, Relaxed);
    let spawned = crate::save_child::SaveChild::spawn(&srv.save_children, "temp-%d.rdb", on_end);
    let child = match spawned {
        Ok(c) => c,
        Err(e) => {
            crate::log::warning(&format!("Can't save in background: fork: {e}"));
            srv.rdb.last_bgsave_ok.store(false, Relaxed);
            srv.rdb.bgsave_in_progress.store(false, Relaxed);
            return false;
        }
    };
    crate::log::notice(&format!(
        "Background saving started by pid {}",
        child.0.pid()
    ));
    crate::save_progress::starting(&srv);
    std::thread::Builder::new()
        .name("bgsave".into())
        .spawn(move || {
            tern_engine::save_delay::keep_delay_of_start();
            let start = std::time::Instant::now();
            let r = rdb_save_abortable(&srv, &srv.rdb.abort_bgsave, Some(child));
            srv.rdb
                .last_bgsave_time_sec
                .store(start.elapsed().as_secs() as i64, Relaxed);
            crate::save_progress::finish(&srv, false);
            match r {
                Ok(Some(_)) => {
                    srv.rdb.last_bgsave_ok.store(true, Relaxed);
                    crate::log::notice("Background saving terminated with success")
                }
                // Like a child killed on purpose: the last status stays what it was.
                Ok(None) => crate::log::warning("Background saving aborted (FLUSHALL)"),
                Err(e) if e.starts_with("terminated by signal") => {
                    srv.rdb.last_bgsave_ok.store(false, Relaxed);
                    crate::log::warning(&format!("Background saving {e}"))
                }
                Err(e) => {
                    srv.rdb.last_bgsave_ok.store(false, Relaxed);
                    crate::log::warning(&format!("Background saving error: {e}"))
                }
            }
            srv.rdb.bgsave_in_progress.store(false, Relaxed);
        })
        .expect("spawn bgsave thread");
    true
}

/// True when `save` has save points.
pub fn has_save_points(srv: &Server) -> bool {
    srv.config.get("save").is_some_and(|s| !s.trim().is_empty())
}

/// The cron's part: a scheduled BGSAVE, or one a save point asks for (`save <secs> <changes>`;
/// after a failed save, not before 5 seconds passed, as Redis).
pub fn cron(srv: &std::sync::Arc<Server>) {
    if srv.rdb.bgsave_in_progress.load(Relaxed) {
        return;
    }
    if srv.rdb.bgsave_scheduled.load(Relaxed) {
        start_bgsave(srv.clone());
        return;
    }
    let Some(points) = srv.config.get("save") else {
        return;
    };
    let nums: Vec<u64> = points
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    if nums.is_empty() {
        return;
    }
    let dirty = srv
        .dirty_total()
        .saturating_sub(srv.dirty_at_save.load(Relaxed));
    let now = unix_secs();
    let since = now.saturating_sub(srv.lastsave.load(Relaxed));
    let retry_ok = srv.rdb.last_bgsave_ok.load(Relaxed)
        || now.saturating_sub(srv.rdb.last_attempt.load(Relaxed)) > 5;
    for p in nums.chunks(2) {
        if let [secs, changes] = *p {
            if dirty >= changes && since >= secs && retry_ok {
                crate::log::notice(&format!("{changes} changes in {secs} seconds. Saving..."));
                start_bgsave(srv.clone());
                return;
            }
        }
    }
}

/// DEBUG RELOAD: save, empty the keyspace, load the file again.
pub fn debug_reload(ctx: &mut Ctx, args: &Args) {
    let (mut save, mut flush, mut merge) = (true, true, false);
    for a in args.iter().skip(2) {
        if eq_ic(a, "nosave") {
            save = false;
        } else if eq_ic(a, "noflush") {
            flush = false;
        } else if eq_ic(a, "merge") {
            merge = true;
        } else {
            return ctx
                .error("ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.");
        }
    }
    if save {
        if let Err(e) = rdb_save(ctx.srv) {
            crate::log::warning(&e);
            return ctx.error("ERR Error trying to save the DB, check logs");
        }
    }
    let srv = ctx.srv;
    if flush {
        empty_keyspace(srv);
    }
    let how = RdbLoadHow {
        merge,
        as_replica: crate::replica_expiry::is_replica(srv),
        name_expired: false,
    };
    match rdb_load(srv, &rdb_path(srv), how) {
        Ok(Some(_)) => ctx.out.ok(),
        Ok(None) => ctx.error("ERR Error trying to load the RDB dump, check server logs."),
        Err(e) => {
            crate::log::warning(&e);
            ctx.error("ERR Error trying to load the RDB dump, check server logs.")
        }
    }
}

const ERR_LOADING: &str = "LOADING Redis is loading the dataset in memory";

/// -LOADING while the dataset loads, for a command (or an EXEC whose queued commands have
/// `all` flags in common and `any` among them) that may not run then: without the LOADING
/// flag during a load, or flagged NO_ASYNC_LOADING while the old data serves a replica's
/// diskless load (async loading).
pub fn deny_loading(srv: &Server, all: u32, any: u32) -> Option<&'static str> {
    if srv.rdb.loading.load(Relaxed) && all & f::LOADING == 0 {
        return Some(ERR_LOADING);
    }
    if any & f::NO_ASYNC_LOADING != 0 && srv.diskless_load.async_loading.load(Relaxed) {
        return Some(ERR_LOADING);
    }
    None
}

const ERR_MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// MISCONF when writes are held back because the last background save failed (and
/// `stop-writes-on-bgsave-error` with save points): scripts check it before a write.
pub fn disk_error(srv: &Server) -> Option<&'static str> {
    (!srv.rdb.last_bgsave_ok.load(Relaxed)
        && srv.config.get_bool("stop-writes-on-bgsave-error")
        && has_save_points(srv))
    .then_some(ERR_MISCONF)
}

/// Why a command is refused right now: the dataset is loading (`-LOADING` unless the command
/// may run then), or the last background save failed and `stop-writes-on-bgsave-error` holds
/// writes (and PING) back. Two relaxed loads in the common case.
pub fn deny_reason(srv: &Server, spec: &CommandSpec) -> Option<&'static str> {
    if let Some(e) = deny_loading(srv, spec.flags, spec.flags) {
        return Some(e);
    }
    if !srv.rdb.last_bgsave_ok.load(Relaxed)
        && (spec.flags & f::WRITE != 0 || spec.name == "ping")
        && srv.config.get_bool("stop-writes-on-bgsave-error")
        && has_save_points(srv)
    {
        return Some(ERR_MISCONF);
    }
    None
}
