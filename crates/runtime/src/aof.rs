//! The append-only file: Redis 7's multi-part AOF (manifest + base + incremental files in
//! `appenddirname`), fed by the write log (`Server::propagation`). Its state is `Server::aof`.
//!
//! - One writer thread takes what the log accumulated, writes it to the current incremental
//!   file and fsyncs per `appendfsync`: `always` after every batch (one fsync covers every
//!   record waiting at that moment: group commit), then reports the LSN durable so that the
//!   replies waiting for it go out; `everysec` at most once a second; `no` never.
//! - BGREWRITEAOF (and the automatic rewrite, and CONFIG SET appendonly yes) writes a new
//!   base from a point-in-time snapshot (`Store::snapshot`) without stopping anyone: at the
//!   cut the log switches to a new incremental file (listed in the manifest beforehand), so
//!   base + new incremental files always describe the whole dataset.
//! - At start-up the files the manifest lists are loaded: an RDB base through the RDB loader,
//!   commands through the normal command path on a pseudo-client.

use crate::args::OwnedArgs;
use crate::ctx::{Conn, Ctx};
use crate::server::Server;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_engine::clock;
use tern_persist::aof::{CommandReader, Manifest, ReadError};

/// The id of the pseudo-client that replays the AOF at start-up (Redis's CLIENT_ID_AOF).
pub const CLIENT_ID: u64 = u64::MAX;

pub const FSYNC_NO: u8 = 0;
pub const FSYNC_ALWAYS: u8 = 1;
pub const FSYNC_EVERYSEC: u8 = 2;

/// AOF state for INFO persistence, the commands and the writer thread.
pub struct AofState {
    /// aof_state != AOF_OFF: on, or waiting for its first rewrite.
    pub enabled: AtomicBool,
    /// Enabled at run time, the first rewrite not done yet (AOF_WAIT_REWRITE).
    pub wait_rewrite: AtomicBool,
    pub rewrite_in_progress: AtomicBool,
    pub rewrite_scheduled: AtomicBool,
    pub rewrite_started: AtomicU64,
    pub last_rewrite_time_sec: AtomicI64,
    pub last_bgrewrite_ok: AtomicBool,
    pub rewrites: AtomicU64,
    pub consecutive_failures: AtomicU64,
    pub last_write_ok: AtomicBool,
    /// Size of the base and the incremental files before the current one.
    pub others_size: AtomicU64,
    /// Bytes in the incremental file being written.
    pub incr_size: AtomicU64,
    /// aof_rewrite_base_size: the AOF's size when the last rewrite ended (or the base's at
    /// start-up), the reference of auto-aof-rewrite-percentage.
    pub base_size: AtomicU64,
    /// The global `appendfsync` (the writer fsyncs every batch also when only some database
    /// has `db-appendfsync always`: see `writer_fsync`).
    pub fsync: AtomicU8,
    pub delayed_fsync: AtomicU64,
    /// LSN up to which the log is written to the AOF file (fsynced or not): what replies in a
    /// database that does not need the fsync wait for.
    written: AtomicU64,
    /// The manifest as last persisted (plus where the files live).
    files: Mutex<Option<Files>>,
    /// The incremental file the writer switches to at the next cut.
    next_incr: Mutex<Option<File>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Replies waiting for durability are woken here.
    pub durable: tokio::sync::Notify,
    /// LSN up to which the log is fsynced into the current AOF (WAITAOF's local count; under
    /// `appendfsync no` it does not move).
    fsynced: AtomicU64,
    /// Bumped by every start/stop: a rewrite started under another generation is stale.
    generation: AtomicU64,
    /// Serializes start/stop/rewrite decisions.
    control: Mutex<()>,
    /// Durability news, per worker thread: the writer wakes each worker once (`notify_one` keeps
    /// a permit when the worker is busy), and the worker's own task wakes its waiting replies
    /// locally, instead of the writer waking every waiting reply across threads (one eventfd
    /// write per reply).
    worker_news: Mutex<Vec<&'static tokio::sync::Notify>>,
    /// DEBUG AOF-FLUSH-SLEEP: microseconds to pause before each write to the AOF (tests use it
    /// to catch a reply sent before its write reached the file).
    pub flush_sleep_us: AtomicU64,
    /// The second of the last `#TS:` annotation written (`aof-timestamp-enabled`).
    last_timestamp: AtomicU64,
    /// Set to give a background rewrite up (its writer process ended, or the AOF was turned
    /// off). Leaked once per server: the writer process's watcher thread takes a `'static` flag.
    rewrite_abort: &'static AtomicBool,
    /// The thread of the running background rewrite (`appendonly no` waits for it to end).
    rewrite_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// The automatic rewrite's back-off after repeated failures: (minutes, retry at unix secs).
    rewrite_backoff: Mutex<(u64, u64)>,
}

struct Files {
    manifest: Manifest,
}

impl Default for AofState {
    fn default() -> Self {
        AofState {
            enabled: AtomicBool::new(false),
            wait_rewrite: AtomicBool::new(false),
            rewrite_in_progress: AtomicBool::new(false),
            rewrite_scheduled: AtomicBool::new(false),
            rewrite_started: AtomicU64::new(0),
            last_rewrite_time_sec: AtomicI64::new(-1),
            last_bgrewrite_ok: AtomicBool::new(true),
            rewrites: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
            last_write_ok: AtomicBool::new(true),
            others_size: AtomicU64::new(0),
            incr_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            fsync: AtomicU8::new(FSYNC_EVERYSEC),
            delayed_fsync: AtomicU64::new(0),
            written: AtomicU64::new(0),
            files: Mutex::new(None),
            next_incr: Mutex::new(None),
            writer: Mutex::new(None),
            durable: tokio::sync::Notify::new(),
            fsynced: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            control: Mutex::new(()),
            worker_news: Mutex::new(Vec::new()),
            flush_sleep_us: AtomicU64::new(0),
            last_timestamp: AtomicU64::new(0),
            rewrite_abort: Box::leak(Box::new(AtomicBool::new(false))),
            rewrite_thread: Mutex::new(None),
            rewrite_backoff: Mutex::new((0, 0)),
        }
    }
}

/// Where log lines go: the server installs its logger (`set_logger`); stderr until then.
fn unix_secs() -> u64 {
    clock::now_ms() / 1000
}

fn filename(srv: &Server) -> String {
    srv.config
        .get("appendfilename")
        .unwrap_or_else(|| "appendonly.aof".into())
}

fn dirname(srv: &Server) -> PathBuf {
    PathBuf::from(
        srv.config
            .get("appenddirname")
            .unwrap_or_else(|| "appendonlydir".into()),
    )
}

fn fsync_policy(v: &str) -> u8 {
    match v {
        "always" => FSYNC_ALWAYS,
        "no" => FSYNC_NO,
        _ => FSYNC_EVERYSEC,
    }
}

/// How the writer fsyncs: every batch when the global `appendfsync` or some database's
/// `db-appendfsync` is `always`, else per the global setting.
fn writer_fsync(srv: &Server) -> u8 {
    let global = srv.aof.fsync.load(Relaxed);
    if srv.db_policies.any_always() {
        FSYNC_ALWAYS
    } else {
        global
    }
}

/// True when the global `appendfsync` is `always`.
pub fn global_always(srv: &Server) -> bool {
    srv.aof.fsync.load(Relaxed) == FSYNC_ALWAYS
}

/// Replies that waited for `durable` (fsynced under `always`) and for `written` positions of
/// the log may go.
#[inline]
pub fn reached(srv: &Server, durable: u64, written: u64) -> bool {
    srv.propagation.log.durable() >= durable && srv.aof.written.load(Relaxed) >= written
}

/// AOF is on.
pub fn enabled(srv: &Server) -> bool {
    srv.aof.enabled.load(Relaxed)
}

/// Mirror `appendfsync` (start-up and CONFIG SET).
pub fn set_fsync_policy(srv: &Server, v: &str) {
    srv.aof.fsync.store(fsync_policy(v), Relaxed);
    // Replies that were waiting under `always` may go now.
    notify_durable(&srv.aof);
}

/// True when replies must wait until what they could have observed is in the AOF: fsynced
/// under `appendfsync always`; written to the file (the kernel has it, so a crash of the
/// process loses nothing acknowledged) under `everysec` and `no`, as Redis writes the AOF
/// before it sends the replies of an event-loop pass.
#[inline]
pub fn must_wait(srv: &Server) -> bool {
    srv.aof.enabled.load(Relaxed)
        && srv.propagation.log.active()
        && !srv.aof.wait_rewrite.load(Relaxed)
}

/// A worker's relay: where its replies wait, and how many do.
struct Relay {
    durable: tokio::sync::Notify,
    first_waiter: tokio::sync::Notify,
    waiting: std::sync::atomic::AtomicUsize,
}

// Per worker thread by nature: where the replies waiting on this thread are woken (a worker
// serves one server; `start_durable_relay` sets it).
thread_local! {
    static RELAY: std::cell::Cell<Option<&'static Relay>> = const { std::cell::Cell::new(None) };
}

/// Called on each worker's runtime at start: relay durability news to this thread's replies.
/// While replies wait, the relay also wakes the writer after `WAKE_AFTER` without news (the
/// writer is normally woken when the worker goes idle, see `on_worker_park`; a worker kept
/// busy by other clients must not hold the fsync back). One timer per wait cycle, not one per
/// reply (each timer that comes due sooner than the driver's next one costs an eventfd write).
pub fn start_durable_relay(srv: &Arc<Server>) {
    const WAKE_AFTER: Duration = Duration::from_millis(1);
    let news: &'static tokio::sync::Notify = Box::leak(Box::default());
    let relay: &'static Relay = Box::leak(Box::new(Relay {
        durable: tokio::sync::Notify::new(),
        first_waiter: tokio::sync::Notify::new(),
        waiting: std::sync::atomic::AtomicUsize::new(0),
    }));
    srv.aof.worker_news.lock().push(news);
    RELAY.with(|l| l.set(Some(relay)));
    let srv = srv.clone();
    tokio::spawn(async move {
        loop {
            if relay.waiting.load(Relaxed) > 0 {
                tokio::select! {
                    _ = news.notified() => relay.durable.notify_waiters(),
                    _ = tokio::time::sleep(WAKE_AFTER) => srv.propagation.log.wake_consumer(),
                }
            } else {
                tokio::select! {
                    _ = news.notified() => relay.durable.notify_waiters(),
                    _ = relay.first_waiter.notified() => {}
                }
            }
        }
    });
}

/// The log became more durable (or the rules changed): wake whoever waits.
fn notify_durable(aof: &AofState) {
    aof.durable.notify_waiters();
    for n in aof.worker_news.lock().iter() {
        n.notify_one();
    }
}

/// Wait until the log is durable up to `lsn` and written up to `written` (or the AOF no
/// longer holds replies back).
pub async fn wait_durable(srv: &Server, lsn: u64, written: u64) {
    let Some(relay) = RELAY.with(|l| l.get()) else {
        // Not on a worker: wait on the writer's own news.
        loop {
            let n = srv.aof.durable.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if reached(srv, lsn, written) || !must_wait(srv) {
                return;
            }
            srv.propagation.log.wake_consumer();
            n.await;
        }
    };
    struct Waiting(&'static Relay);
    impl Drop for Waiting {
        fn drop(&mut self) {
            self.0.waiting.fetch_sub(1, Relaxed);
        }
    }
    let _w = Waiting(relay);
    if relay.waiting.fetch_add(1, Relaxed) == 0 {
        relay.first_waiter.notify_one();
    }
    loop {
        let n = relay.durable.notified();
        tokio::pin!(n);
        n.as_mut().enable();
        if reached(srv, lsn, written) || !must_wait(srv) {
            return;
        }
        n.await;
    }
}

/// A worker thread is about to go idle: the writer takes what its pass appended (one write
/// and, under `always`, one fsync for all of it).
#[inline]
pub fn on_worker_park(srv: &Server) {
    srv.propagation.log.wake_consumer();
}

/// WAITAOF's local acknowledgement: the AOF is on and fsynced up to `lsn`.
pub fn fsynced_to(srv: &Server, lsn: u64) -> bool {
    srv.aof.enabled.load(Relaxed)
        && !srv.aof.wait_rewrite.load(Relaxed)
        && srv.aof.fsynced.load(Relaxed) >= lsn
}

/// Wait until the AOF is fsynced up to `lsn` (true) or AOF was turned off (false).
pub async fn wait_fsynced(srv: &Server, lsn: u64) -> bool {
    loop {
        let n = srv.aof.durable.notified();
        tokio::pin!(n);
        n.as_mut().enable();
        if fsynced_to(srv, lsn) {
            return true;
        }
        if !srv.aof.enabled.load(Relaxed) {
            return false;
        }
        n.await;
    }
}

// ---------------------------------------------------------------------------------------------
// Files and manifest

fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Write the manifest atomically: temp file, fsync, rename, fsync the directory.
fn persist_manifest(srv: &Server, m: &Manifest) -> Result<(), String> {
    let dir = dirname(srv);
    let name = format!("{}.manifest", filename(srv));
    let tmp = dir.join(format!("temp-{name}"));
    let res = (|| -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(m.format().as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(&name))?;
        fsync_dir(&dir)
    })();
    res.map_err(|e| format!("Can't persist the AOF manifest file {name}: {e}"))
}

fn read_manifest(srv: &Server) -> Result<Manifest, String> {
    let path = dirname(srv).join(format!("{}.manifest", filename(srv)));
    match std::fs::read(&path) {
        Ok(b) => Manifest::parse(&b).map_err(|e| {
            format!(
                "*** FATAL AOF MANIFEST FILE ERROR *** {} ({})",
                e,
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default()),
        Err(e) => Err(format!(
            "Fatal error: can't open the AOF manifest file {} for reading: {e}",
            path.display()
        )),
    }
}

fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn delete_history(srv: &Server, m: &mut Manifest) {
    if m.history.is_empty() || srv.config.get_bool("aof-disable-auto-gc") {
        return;
    }
    let dir = dirname(srv);
    for h in m.history.drain(..) {
        crate::log::notice(&format!(
            "Removing the history file {} in the background",
            h.name
        ));
        let _ = std::fs::remove_file(dir.join(&h.name));
    }
}

/// Delete the history files of the AOF in use and persist the manifest without them (unless
/// `aof-disable-auto-gc`), as Redis does at start-up, DEBUG LOADAOF and when auto gc is turned
/// back on.
fn gc_history(srv: &Server) -> Result<(), String> {
    let _c = srv.aof.control.lock();
    let mut files = srv.aof.files.lock();
    let Some(f) = files.as_mut() else {
        return Ok(());
    };
    if f.manifest.history.is_empty() || srv.config.get_bool("aof-disable-auto-gc") {
        return Ok(());
    }
    let mut m = f.manifest.clone();
    delete_history(srv, &mut m);
    persist_manifest(srv, &m)?;
    f.manifest = m;
    Ok(())
}

/// CONFIG SET aof-disable-auto-gc: turning it off deletes the history files at once.
pub fn auto_gc_changed(srv: &Server, disabled: bool) -> Result<(), String> {
    if disabled {
        return Ok(());
    }
    gc_history(srv)
}

// ---------------------------------------------------------------------------------------------
// The writer thread

// `aof-timestamp-enabled` (`config.hot.aof_timestamp_enabled`): a `#TS:<unix time>` annotation
// line precedes the writes of each new second (and starts a rewritten base), as Redis writes
// them for point-in-time recovery (`redis-check-aof --truncate-to-timestamp`).

fn timestamp_line(secs: u64) -> String {
    format!("#TS:{secs}\r\n")
}

fn write_all_retry(srv: &Server, mut file: &File, bytes: &[u8]) -> std::io::Result<()> {
    let pause = srv.aof.flush_sleep_us.load(Relaxed);
    if pause > 0 {
        std::thread::sleep(Duration::from_micros(pause));
    }
    if srv.config.hot.aof_timestamp_enabled.load(Relaxed) && !bytes.is_empty() {
        let now = unix_secs();
        if srv.aof.last_timestamp.swap(now, Relaxed) != now {
            let ts = timestamp_line(now);
            file.write_all(ts.as_bytes())?;
            srv.aof.incr_size.fetch_add(ts.len() as u64, Relaxed);
        }
    }
    file.write_all(bytes)
}

/// A failed write or fsync: recorded for INFO; under `always` the process cannot go on (a
/// reply would have to claim durability it does not have), as Redis exits.
fn write_failed(srv: &Server, e: std::io::Error) {
    srv.aof.last_write_ok.store(false, Relaxed);
    crate::log::warning(&format!("Error writing to the AOF file: {e}"));
    if writer_fsync(srv) == FSYNC_ALWAYS {
        crate::log::warning(
            "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...",
        );
        std::process::exit(1);
    }
}

/// The log is fsynced into the current AOF up to `lsn`: WAITAOF's count, then the replies.
fn synced_to(srv: &Server, lsn: u64) {
    if !srv.aof.wait_rewrite.load(Relaxed) {
        srv.aof.fsynced.fetch_max(lsn, Relaxed);
    }
    srv.propagation.log.set_durable(lsn);
    notify_durable(&srv.aof);
}

/// Takes the log's batches, writes them, fsyncs per policy, reports durability. Under
/// `always` the fsyncs run on `aof_fsync`'s threads, overlapping, so that a write never waits
/// for an fsync that began before it plus one of its own.
fn writer_loop(srv: Arc<Server>, file: Option<File>) {
    let mut file = file.map(Arc::new);
    let mut spare = Vec::new();
    let mut last_fsync = Instant::now();
    let mut unsynced = false;
    let fsyncs = {
        let srv = srv.clone();
        crate::aof_fsync::FsyncPipeline::start(
            file.clone(),
            srv.propagation.log.durable(),
            Box::new(move |lsn, r| match r {
                Ok(()) => synced_to(&srv, lsn),
                Err(e) => write_failed(&srv, e),
            }),
        )
    };
    let write = |file: &Option<Arc<File>>, bytes: &[u8], unsynced: &mut bool| {
        if bytes.is_empty() {
            return;
        }
        let Some(f) = file.as_deref() else {
            return;
        };
        loop {
            match write_all_retry(&srv, f, bytes) {
                Ok(()) => {
                    srv.aof.last_write_ok.store(true, Relaxed);
                    srv.aof.incr_size.fetch_add(bytes.len() as u64, Relaxed);
                    *unsynced = true;
                    return;
                }
                Err(e) => {
                    write_failed(&srv, e);
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    };
    loop {
        let policy = writer_fsync(&srv);
        let timeout = if policy == FSYNC_EVERYSEC && unsynced {
            Duration::from_secs(1).saturating_sub(last_fsync.elapsed())
        } else {
            Duration::from_secs(1)
        };
        let Some(batch) = srv
            .propagation
            .log
            .take(timeout.max(Duration::from_millis(1)), spare)
        else {
            break;
        };
        let mut off = 0usize;
        for &cut in &batch.cuts {
            let at = (cut - batch.start) as usize;
            write(&file, &batch.bytes[off..at], &mut unsynced);
            // The old file ends here: fsynced now, whatever the policy and whether or not an
            // fsync of it is in flight (the pipeline drops what it had not started).
            if let Some(f) = file.as_deref() {
                let _ = f.sync_data();
            }
            unsynced = false;
            file = srv.aof.next_incr.lock().take().map(Arc::new);
            fsyncs.switch_file(file.clone());
            let before = srv.aof.incr_size.swap(0, Relaxed);
            srv.aof.others_size.fetch_add(before, Relaxed);
            off = at;
        }
        write(&file, &batch.bytes[off..], &mut unsynced);
        srv.aof.written.fetch_max(batch.end(), Relaxed);
        let policy = writer_fsync(&srv);
        if policy == FSYNC_ALWAYS && srv.db_policies.any_reply_override() && !batch.bytes.is_empty()
        {
            // Replies of databases that need only the write go now, not after the fsync.
            notify_durable(&srv.aof);
        }
        if policy == FSYNC_ALWAYS && file.is_some() {
            if unsynced {
                fsyncs.written(batch.end());
                last_fsync = Instant::now();
                unsynced = false;
            } else if !batch.bytes.is_empty() {
                // Every byte of the batch went before a cut: fsynced with the old file.
                synced_to(&srv, batch.end());
            }
        } else {
            if policy == FSYNC_EVERYSEC
                && unsynced
                && last_fsync.elapsed() >= Duration::from_secs(1)
            {
                if let Some(f) = file.as_deref() {
                    if let Err(e) = f.sync_data() {
                        write_failed(&srv, e);
                    }
                }
                last_fsync = Instant::now();
                unsynced = false;
            }
            if !unsynced && file.is_some() && !srv.aof.wait_rewrite.load(Relaxed) {
                srv.aof.fsynced.fetch_max(batch.end(), Relaxed);
            }
            srv.propagation.log.set_durable(batch.end());
            notify_durable(&srv.aof);
        }
        spare = batch.bytes;
    }
    if let Some(f) = file.as_deref() {
        let _ = f.sync_data();
    }
    fsyncs.stop();
}

fn start_writer(srv: &Arc<Server>, file: Option<File>) {
    let srv2 = srv.clone();
    let h = std::thread::Builder::new()
        .name("aof-writer".into())
        .spawn(move || writer_loop(srv2, file))
        .expect("spawn aof writer");
    *srv.aof.writer.lock() = Some(h);
}

/// Stop logging: the writer writes and fsyncs what is pending, then exits.
fn stop_writer(srv: &Server) {
    srv.propagation.log.deactivate();
    if let Some(h) = srv.aof.writer.lock().take() {
        let _ = h.join();
    }
    *srv.aof.next_incr.lock() = None;
    notify_durable(&srv.aof);
}

// ---------------------------------------------------------------------------------------------
// Start, stop

/// Called once the dataset is loaded, when `appendonly yes`: create a base if there is no AOF
/// yet, open the last incremental file (or a new one), persist the manifest, start logging.
pub fn open_on_start(srv: &Arc<Server>) -> Result<(), String> {
    let _c = srv.aof.control.lock();
    set_fsync_policy(srv, &srv.config.get("appendfsync").unwrap_or_default());
    let dir = dirname(srv);
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "Can't open or create append-only dir {}: {e}",
            dir.display()
        )
    })?;
    let mut m = read_manifest(srv)?;
    let name = filename(srv);
    if m.base.is_none() && m.incrs.is_empty() {
        let rdb = srv.config.get_bool("aof-use-rdb-preamble");
        let base = m.new_base(&name, rdb);
        write_base(srv, &dir.join(&base), rdb, None, None)?;
        crate::log::notice(&format!("Creating AOF base file {base} on server start"));
    }
    let (incr, created) = match m.incrs.last() {
        Some(i) => (i.name.clone(), false),
        None => (m.new_incr(&name), true),
    };
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.join(&incr))
        .map_err(|e| format!("Can't open the append-only file {incr}: {e}"))?;
    delete_history(srv, &mut m);
    persist_manifest(srv, &m)?;
    let incr_size = file_size(&dir.join(&incr));
    let total: u64 = m
        .load_order()
        .iter()
        .map(|f| file_size(&dir.join(&f.name)))
        .sum();
    srv.aof.incr_size.store(incr_size, Relaxed);
    srv.aof
        .others_size
        .store(total.saturating_sub(incr_size), Relaxed);
    if srv.aof.base_size.load(Relaxed) == 0 {
        srv.aof.base_size.store(
            m.base
                .as_ref()
                .map(|b| file_size(&dir.join(&b.name)))
                .unwrap_or(0),
            Relaxed,
        );
    }
    *srv.aof.files.lock() = Some(Files { manifest: m });
    crate::log::notice(&format!(
        "{} AOF incr file {incr} on server start",
        if created { "Creating" } else { "Opening" }
    ));
    srv.aof.generation.fetch_add(1, Relaxed);
    srv.propagation.log.activate();
    start_writer(srv, Some(file));
    srv.aof.enabled.store(true, Relaxed);
    srv.aof.wait_rewrite.store(false, Relaxed);
    Ok(())
}

/// CONFIG SET appendonly yes|no at run time.
pub fn config_changed(srv: &Arc<Server>, on: bool) -> Result<(), String> {
    if on {
        if srv.aof.enabled.load(Relaxed) {
            return Ok(());
        }
        {
            let _c = srv.aof.control.lock();
            set_fsync_policy(srv, &srv.config.get("appendfsync").unwrap_or_default());
            srv.aof.enabled.store(true, Relaxed);
            srv.aof.wait_rewrite.store(true, Relaxed);
            srv.aof.last_write_ok.store(true, Relaxed);
            srv.aof.generation.fetch_add(1, Relaxed);
        }
        if srv.rdb.bgsave_in_progress.load(Relaxed) {
            srv.aof.rewrite_scheduled.store(true, Relaxed);
            crate::log::notice("AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible.");
            return Ok(());
        }
        if tern_engine::Store::in_atomic_unit() {
            srv.aof.rewrite_scheduled.store(true, Relaxed);
            crate::log::notice("AOF was enabled during a transaction. An AOF background was scheduled to start when possible.");
            return Ok(());
        }
        if srv.aof.rewrite_in_progress.load(Relaxed) {
            // It writes no incremental file the AOF could go on with: start over, as Redis.
            crate::log::notice("AOF was enabled but there is already an AOF rewriting in background. Stopping background AOF and starting a rewrite now.");
            kill_rewrite(srv);
            if srv.aof.rewrite_in_progress.load(Relaxed) {
                srv.aof.rewrite_scheduled.store(true, Relaxed);
                return Ok(());
            }
        }
        if !start_rewrite(srv.clone()) {
            srv.aof.enabled.store(false, Relaxed);
            srv.aof.wait_rewrite.store(false, Relaxed);
            return Err("Unable to turn on srv.aof. Check server logs.".into());
        }
        Ok(())
    } else {
        if !srv.aof.enabled.load(Relaxed) {
            return Ok(());
        }
        // As Redis: a running rewrite is of no use any more; it is given up at once.
        srv.aof.generation.fetch_add(1, Relaxed);
        kill_rewrite(srv);
        let _c = srv.aof.control.lock();
        srv.aof.generation.fetch_add(1, Relaxed);
        stop_writer(srv);
        srv.aof.enabled.store(false, Relaxed);
        srv.aof.wait_rewrite.store(false, Relaxed);
        srv.aof.rewrite_scheduled.store(false, Relaxed);
        // WAITAOF clients waiting for a local fsync get their error now.
        notify_durable(&srv.aof);
        srv.aof.incr_size.store(0, Relaxed);
        *srv.aof.files.lock() = None;
        Ok(())
    }
}

/// At exit: write and fsync what the log holds.
pub fn shutdown(srv: &Server) {
    if srv.aof.enabled.load(Relaxed) {
        crate::log::notice("Calling fsync() on the AOF file.");
        stop_writer(srv);
    }
}

// ---------------------------------------------------------------------------------------------
// Rewrite

/// Write a base file from a snapshot of the dataset (RDB when `rdb`, else commands). `at_cut`
/// runs at the snapshot's cut.
fn write_base(
    srv: &Server,
    path: &Path,
    rdb: bool,
    at_cut: Option<&(dyn Fn() + Sync)>,
    writer: Option<RewriteWriter>,
) -> Result<u64, String> {
    let write_err =
        |e: std::io::Error| format!("Write error writing append only file on disk: {e}");
    // A background rewrite's base is written by its writer process (see save_child), whose
    // death (or `appendonly no`) gives the rewrite up at once.
    let background = writer.is_some();
    let (child, out): (Option<crate::save_child::SaveChild>, Box<dyn Write + Send>) =
        if let Some((c, stdin)) = writer {
            (Some(c), Box::new(stdin))
        } else {
            let tmp = PathBuf::from(format!("temp-rewriteaof-bg-{}.aof", std::process::id()));
            let file = File::create(&tmp).map_err(|e| {
                format!("Opening the temp file for AOF rewrite in rewriteAppendOnlyFile(): {e}")
            })?;
            (None, Box::new(file))
        };
    let tmp = match &child {
        Some(c) => c.path.clone(),
        None => PathBuf::from(format!("temp-rewriteaof-bg-{}.aof", std::process::id())),
    };
    let never = AtomicBool::new(false);
    let abort = if background {
        srv.aof.rewrite_abort
    } else {
        &never
    };
    let now = clock::now_ms();
    let out = std::io::BufWriter::with_capacity(1 << 20, out);
    let res: Option<std::io::Result<std::io::BufWriter<Box<dyn Write + Send>>>> = if rdb {
        let aux = crate::persistence::rdb_aux(now, true);
        snapshot_into_abortable(srv, at_cut, abort, || {
            crate::save_progress::Counted::new(
                &srv.save_progress,
                crate::db_policy::Persisted::new(
                    &srv.db_policies,
                    crate::persistence::rdb_writer(srv, out, &aux),
                ),
            )
        })
        .map(|w| w.inner.inner.finish())
    } else {
        let mut out = out;
        if srv.config.hot.aof_timestamp_enabled.load(Relaxed) {
            out.write_all(timestamp_line(now / 1000).as_bytes())
                .map_err(write_err)?;
        }
        snapshot_into_abortable(srv, at_cut, abort, || {
            crate::save_progress::Counted::new(
                &srv.save_progress,
                crate::db_policy::Persisted::new(
                    &srv.db_policies,
                    tern_persist::aof::rewrite::CommandWriter::new(
                        out,
                        &crate::lua::libraries::library_codes(srv),
                        now,
                    ),
                ),
            )
        })
        .map(|w| w.inner.inner.finish())
    };
    let res = match res {
        Some(r) => r.and_then(|bw| {
            let mut out = bw.into_inner().map_err(|e| e.into_error())?;
            out.flush()?;
            Ok(out)
        }),
        None => Err(std::io::Error::other("rewrite given up")),
    };
    let res = match (res, child) {
        (Ok(out), None) => {
            drop(out);
            OpenOptions::new()
                .write(true)
                .open(&tmp)
                .and_then(|f| f.sync_all())
                .map_err(write_err)
        }
        (Ok(out), Some(c)) => {
            drop(out); // end of input: the writer syncs and exits
            child_result(c.wait())
        }
        (Err(e), None) => Err(write_err(e)),
        (Err(e), Some(c)) => {
            if c.has_ended() {
                child_result(c.wait()).and(Err(write_err(e)))
            } else {
                c.kill_and_remove();
                Err(write_err(e))
            }
        }
    };
    if let Err(e) = res {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "Error trying to rename the temporary AOF base file {} into {}: {e}",
            tmp.display(),
            path.display()
        ));
    }
    Ok(file_size(path))
}

fn child_result(ended: crate::save_child::Ended) -> Result<(), String> {
    match ended {
        crate::save_child::Ended::Ok => Ok(()),
        crate::save_child::Ended::Signal(sig) => Err(format!("terminated by signal {sig}")),
        crate::save_child::Ended::Failed(e) => Err(format!("writer process failed: {e}")),
    }
}

/// Take a snapshot into the sink `make` creates at the cut (the function libraries it writes
/// are then the cut's); `at_cut` runs there too. Returns the sink once every key is in, or
/// None once `abort` is set.
pub(crate) fn snapshot_into_abortable<S: tern_engine::snapshot::SnapshotSink>(
    srv: &Server,
    at_cut: Option<&(dyn Fn() + Sync)>,
    abort: &AtomicBool,
    make: impl FnOnce() -> S,
) -> Option<S> {
    srv.store.snapshot_abortable(
        || {
            let sink = make();
            if let Some(f) = at_cut {
                f();
            }
            sink
        },
        abort,
    )
}

/// A background rewrite's writer process and the pipe that feeds it.
type RewriteWriter = (crate::save_child::SaveChild, std::process::ChildStdin);

/// Start a background rewrite unless one runs; false when it could not start. As Redis forks
/// before BGREWRITEAOF replies, the new incremental file is listed and the writer process runs
/// when this returns (INFO, the manifest and `pgrep -P` show them at once); the base is
/// written on a thread of its own.
pub fn start_rewrite(srv: Arc<Server>) -> bool {
    if srv.aof.rewrite_in_progress.swap(true, Relaxed) {
        return false;
    }
    srv.aof.rewrite_scheduled.store(false, Relaxed);
    srv.aof.rewrite_started.store(unix_secs(), Relaxed);
    let gen = srv.aof.generation.load(Relaxed);
    let start = Instant::now();
    let (plan, writer) = match begin_rewrite(&srv, gen) {
        Ok(b) => b,
        Err(e) => {
            rewrite_done(&srv, Err(e), start, gen);
            return false;
        }
    };
    let pid = writer.0.pid();
    crate::save_progress::starting(&srv);
    let srv2 = srv.clone();
    let spawned = std::thread::Builder::new()
        .name("aof-rewrite".into())
        .spawn(move || {
            tern_engine::save_delay::keep_delay_of_start();
            let r = finish_rewrite(&srv2, gen, plan, writer);
            rewrite_done(&srv2, r, start, gen);
        });
    match spawned {
        Ok(h) => {
            *srv.aof.rewrite_thread.lock() = Some(h);
            true
        }
        Err(e) => {
            // The writer process has no input: it ends with an empty file, removed here.
            let _ = std::fs::remove_file(format!("temp-rewriteaof-bg-{pid}.aof"));
            rewrite_done(
                &srv,
                Err(format!("can't start the rewrite thread: {e}")),
                start,
                gen,
            );
            false
        }
    }
}

/// The end of a background rewrite, whatever it was: status, counters, log lines.
fn rewrite_done(srv: &Server, r: Result<(), String>, start: Instant, gen: u64) {
    srv.aof
        .last_rewrite_time_sec
        .store(start.elapsed().as_secs() as i64, Relaxed);
    crate::save_progress::finish(srv, true);
    match &r {
        Ok(()) => {
            srv.aof.last_bgrewrite_ok.store(true, Relaxed);
            srv.aof.rewrites.fetch_add(1, Relaxed);
            srv.aof.consecutive_failures.store(0, Relaxed);
            crate::log::notice("Background AOF rewrite finished successfully");
        }
        // Given up on purpose (`appendonly` switched meanwhile): as Redis's killed child,
        // neither a failure nor a success.
        Err(_) if srv.aof.generation.load(Relaxed) != gen => {}
        Err(e) => {
            srv.aof.last_bgrewrite_ok.store(false, Relaxed);
            srv.aof.consecutive_failures.fetch_add(1, Relaxed);
            if e.starts_with("terminated by signal") {
                crate::log::warning(&format!("Background AOF rewrite {e}"));
            } else {
                crate::log::warning(&format!("Background AOF rewrite failed: {e}"));
            }
            if srv.aof.wait_rewrite.load(Relaxed) {
                drop_temp_incr(srv, gen);
                // Still waiting for a first base: try again from the cron.
                srv.aof.rewrite_scheduled.store(true, Relaxed);
            }
        }
    }
    srv.aof.rewrite_in_progress.store(false, Relaxed);
}

/// A first rewrite (AOF turned on at run time) failed: what was logged since its cut, in the
/// temp incremental file, is of no use (the next attempt snapshots it again), so logging
/// stops and the file goes, as Redis drops it.
fn drop_temp_incr(srv: &Server, gen: u64) {
    let _c = srv.aof.control.lock();
    if srv.aof.generation.load(Relaxed) != gen || !srv.aof.wait_rewrite.load(Relaxed) {
        return;
    }
    stop_writer(srv);
    let name = format!("temp-{}.incr", filename(srv));
    crate::log::notice(&format!(
        "Removing the temp incr aof file {name} in the background"
    ));
    let _ = std::fs::remove_file(dirname(srv).join(&name));
}

/// Give the running background rewrite up and wait for its thread, as Redis's
/// killAppendOnlyChild: its writer process is gone, its temp file removed and
/// `aof_rewrite_in_progress` 0 when this returns (unless called inside an atomic unit, whose
/// held shards the rewrite may need: then it ends on its own shortly after).
fn kill_rewrite(srv: &Server) {
    let Some(h) = srv.aof.rewrite_thread.lock().take() else {
        return;
    };
    if let Some(pid) = srv.save_children.running_pid("temp-rewriteaof-bg-") {
        crate::log::notice(&format!("Killing running AOF rewrite child: {pid}"));
        // SAFETY: signalling our own child, not yet collected (its owner still waits for it).
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
    srv.aof.rewrite_abort.store(true, Relaxed);
    if tern_engine::Store::in_atomic_unit() {
        *srv.aof.rewrite_thread.lock() = Some(h);
    } else {
        let _ = h.join();
    }
}

/// What a background rewrite decided when it began.
struct RewritePlan {
    dir: PathBuf,
    name: String,
    rdb: bool,
    enabled: bool,
    waiting: bool,
}

/// The part of a rewrite done before BGREWRITEAOF replies: the incremental file writes go to
/// after the cut (while on, listed in the manifest before anything is written to it; when
/// turning on, a temp file named at the end), and the writer process of the new base.
fn begin_rewrite(srv: &Arc<Server>, gen: u64) -> Result<(RewritePlan, RewriteWriter), String> {
    let dir = dirname(srv);
    let name = filename(srv);
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "Can't open or create append-only dir {}: {e}",
            dir.display()
        )
    })?;
    let rdb = srv.config.get_bool("aof-use-rdb-preamble");
    let enabled = srv.aof.enabled.load(Relaxed);
    let waiting = srv.aof.wait_rewrite.load(Relaxed);
    if enabled {
        let _c = srv.aof.control.lock();
        if srv.aof.generation.load(Relaxed) != gen {
            return Err("AOF was turned off or on meanwhile".into());
        }
        let (path, listed) = if waiting {
            (dir.join(format!("temp-{name}.incr")), None)
        } else {
            let mut files = srv.aof.files.lock();
            let m = &mut files.as_mut().ok_or("AOF is off")?.manifest;
            let mut m2 = m.clone();
            let n = m2.new_incr(&name);
            (dir.join(&n), Some((m2, n)))
        };
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| format!("Can't open the append-only file {}: {e}", path.display()))?;
        if let Some((m2, n)) = listed {
            persist_manifest(srv, &m2)?;
            srv.aof.files.lock().as_mut().ok_or("AOF is off")?.manifest = m2;
            crate::log::notice(&format!("Creating AOF incr file {n} on background rewrite"));
        }
        *srv.aof.next_incr.lock() = Some(file);
        if waiting {
            // Writes log themselves from now on; the cut starts the file.
            srv.propagation.log.activate();
            start_writer(srv, None);
        }
    }
    srv.aof.rewrite_abort.store(false, Relaxed);
    let abort = srv.aof.rewrite_abort;
    let writer = crate::save_child::SaveChild::spawn(
        &srv.save_children,
        "temp-rewriteaof-bg-%d.aof",
        move || abort.store(true, Relaxed),
    )
    .map_err(|e| format!("Can't rewrite append only file in background: fork: {e}"))?;
    crate::log::notice(&format!(
        "Background append only file rewriting started by pid {}",
        writer.0.pid()
    ));
    Ok((
        RewritePlan {
            dir,
            name,
            rdb,
            enabled,
            waiting,
        },
        writer,
    ))
}

/// The rest of a rewrite, on its thread: the base from the snapshot (the log switches files
/// at its cut), then the manifest naming it (and the old files deleted).
fn finish_rewrite(
    srv: &Arc<Server>,
    gen: u64,
    plan: RewritePlan,
    writer: RewriteWriter,
) -> Result<(), String> {
    let RewritePlan {
        dir,
        name,
        rdb,
        enabled,
        waiting,
    } = plan;
    let tmp_base = format!("temp-{name}.base");
    let cut = || {
        if enabled {
            srv.propagation.log.cut();
        }
    };
    let base_size = write_base(srv, &dir.join(&tmp_base), rdb, Some(&cut), Some(writer))?;
    // The manifest: new base, the new incremental file last, the rest history.
    let _c = srv.aof.control.lock();
    if srv.aof.generation.load(Relaxed) != gen {
        let _ = std::fs::remove_file(dir.join(&tmp_base));
        return Err("AOF was turned off or on meanwhile".into());
    }
    let mut files = srv.aof.files.lock();
    let mut m = match files.as_ref() {
        Some(f) => f.manifest.clone(),
        None => read_manifest(srv)?,
    };
    let base_name = m.new_base(&name, rdb);
    std::fs::rename(dir.join(&tmp_base), dir.join(&base_name))
        .map_err(|e| format!("Error trying to rename the temporary AOF base file: {e}"))?;
    if enabled && waiting {
        let n = m.new_incr(&name);
        std::fs::rename(dir.join(format!("temp-{name}.incr")), dir.join(&n)).map_err(|e| {
            format!("Error trying to rename the temporary AOF incr file into {n}: {e}")
        })?;
    }
    m.incrs_to_history(enabled);
    persist_manifest(srv, &m)?;
    delete_history(srv, &mut m);
    persist_manifest(srv, &m)?;
    if enabled {
        *files = Some(Files { manifest: m });
        srv.aof.others_size.store(base_size, Relaxed);
        srv.aof
            .base_size
            .store(base_size + srv.aof.incr_size.load(Relaxed), Relaxed);
        srv.aof.wait_rewrite.store(false, Relaxed);
    } else {
        *files = None;
    }
    Ok(())
}

/// The cron's part: a scheduled rewrite, or the automatic one on growth.
pub fn cron(srv: &Arc<Server>) {
    if srv.aof.rewrite_in_progress.load(Relaxed) || srv.rdb.bgsave_in_progress.load(Relaxed) {
        return;
    }
    if srv.aof.rewrite_scheduled.load(Relaxed) && !rewrite_limited(srv) {
        start_rewrite(srv.clone());
        return;
    }
    if !srv.aof.enabled.load(Relaxed) || srv.aof.wait_rewrite.load(Relaxed) {
        return;
    }
    let perc = srv.config.get_i64("auto-aof-rewrite-percentage");
    let min = srv.config.get_i64("auto-aof-rewrite-min-size").max(0) as u64;
    let size = srv.aof.others_size.load(Relaxed) + srv.aof.incr_size.load(Relaxed);
    if perc > 0 && size > min {
        let base = srv.aof.base_size.load(Relaxed).max(1);
        let growth = (size * 100 / base) as i64 - 100;
        if growth >= perc && !rewrite_limited(srv) {
            crate::log::notice(&format!(
                "Starting automatic rewriting of AOF on {growth}% growth"
            ));
            start_rewrite(srv.clone());
        }
    }
}

/// After three failures in a row, wait 1, 2, 4 ... 60 minutes between automatic attempts.
fn rewrite_limited(srv: &Server) -> bool {
    let mut g = srv.aof.rewrite_backoff.lock();
    if srv.aof.consecutive_failures.load(Relaxed) < 3 {
        *g = (0, 0);
        return false;
    }
    let now = unix_secs();
    if g.1 != 0 {
        if now < g.1 {
            return true;
        }
        g.1 = 0;
        return false;
    }
    g.0 = if g.0 == 0 { 1 } else { (g.0 * 2).min(60) };
    g.1 = now + g.0 * 60;
    crate::log::warning(&format!("Background AOF rewrite has repeatedly failed and triggered the limit, will retry in {} minutes", g.0));
    true
}

/// INFO persistence: the aof_* fields, as Redis names and orders them.
pub fn info_fields(srv: &Server, out: &mut String) {
    use std::fmt::Write as _;
    let on = srv.aof.enabled.load(Relaxed);
    let rw = srv.aof.rewrite_in_progress.load(Relaxed);
    let _ = write!(
        out,
        "aof_enabled:{}\r\n\
         aof_rewrite_in_progress:{}\r\n\
         aof_rewrite_scheduled:{}\r\n\
         aof_last_rewrite_time_sec:{}\r\n\
         aof_current_rewrite_time_sec:{}\r\n\
         aof_last_bgrewrite_status:{}\r\n\
         aof_rewrites:{}\r\n\
         aof_rewrites_consecutive_failures:{}\r\n\
         aof_last_write_status:{}\r\n\
         aof_last_cow_size:{}\r\n\
         module_fork_in_progress:0\r\n\
         module_fork_last_cow_size:0\r\n",
        on as u8,
        rw as u8,
        srv.aof.rewrite_scheduled.load(Relaxed) as u8,
        srv.aof.last_rewrite_time_sec.load(Relaxed),
        if rw {
            unix_secs().saturating_sub(srv.aof.rewrite_started.load(Relaxed)) as i64
        } else {
            -1
        },
        if srv.aof.last_bgrewrite_ok.load(Relaxed) {
            "ok"
        } else {
            "err"
        },
        srv.aof.rewrites.load(Relaxed),
        srv.aof.consecutive_failures.load(Relaxed),
        if srv.aof.last_write_ok.load(Relaxed) {
            "ok"
        } else {
            "err"
        },
        srv.save_progress.aof_last_cow.load(Relaxed),
    );
    if on {
        let _ = write!(
            out,
            "aof_current_size:{}\r\n\
             aof_base_size:{}\r\n\
             aof_pending_rewrite:{}\r\n\
             aof_buffer_length:{}\r\n\
             aof_pending_bio_fsync:0\r\n\
             aof_delayed_fsync:{}\r\n",
            srv.aof.others_size.load(Relaxed) + srv.aof.incr_size.load(Relaxed),
            srv.aof.base_size.load(Relaxed),
            srv.aof.rewrite_scheduled.load(Relaxed) as u8,
            srv.propagation.log.pending(),
            srv.aof.delayed_fsync.load(Relaxed),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Loading

/// How loading the AOF ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Loaded {
    /// No AOF files at all.
    NotExist,
    Empty,
    Ok,
    Truncated,
}

/// Load the AOF the manifest (or an old single-file AOF, migrated first) describes.
pub fn load(srv: &Arc<Server>) -> Result<Loaded, String> {
    let dir = dirname(srv);
    let name = filename(srv);
    let mut m = read_manifest(srv)?;
    // An old-style single AOF in the working directory: move it into the AOF directory as
    // the base, as Redis 7 does on upgrade.
    if Path::new(&name).is_file() {
        let dir_exists = dir.is_dir();
        let upgrade = !dir_exists
            || (m.base.is_none() && m.incrs.is_empty())
            || (m.incrs.is_empty()
                && m.base.as_ref().is_some_and(|b| b.name == name)
                && !dir.join(&name).exists());
        if upgrade {
            std::fs::create_dir_all(&dir).map_err(|e| {
                format!(
                    "Can't open or create append-only dir {}: {e}",
                    dir.display()
                )
            })?;
            let um = Manifest {
                base: Some(tern_persist::aof::FileInfo {
                    name: name.clone(),
                    seq: 1,
                    kind: tern_persist::aof::manifest::BASE,
                }),
                base_seq: 1,
                ..Manifest::default()
            };
            persist_manifest(srv, &um)?;
            std::fs::rename(&name, dir.join(&name)).map_err(|e| {
                format!(
                    "Error trying to move the old AOF file {name} into dir {}: {e}",
                    dir.display()
                )
            })?;
            crate::log::notice(&format!(
                "Successfully migrated an old-style AOF file ({name}) into the AOF directory ({}).",
                dir.display()
            ));
            m = um;
        }
    }
    let files = m.load_order();
    if files.is_empty() {
        return Ok(Loaded::NotExist);
    }
    let mut total = 0u64;
    for f in &files {
        let p = dir.join(&f.name);
        match std::fs::metadata(&p) {
            Ok(md) => total += md.len(),
            Err(e) => return Err(format!("The append log file {} doesn't exist: {e}", f.name)),
        }
    }
    if total == 0 {
        return Ok(Loaded::Empty);
    }
    let rdbst = &srv.rdb;
    rdbst.loading_total.store(total, Relaxed);
    rdbst.loading_loaded.store(0, Relaxed);
    rdbst.loading_start.store(unix_secs(), Relaxed);
    tern_engine::expire::set_loading(true);
    let res = (|| {
        let mut outcome = Loaded::Ok;
        let mut done_bytes = 0u64;
        for (i, f) in files.iter().enumerate() {
            let last = i + 1 == files.len();
            let t0 = Instant::now();
            let r = load_one(srv, &dir, &f.name, f.name == name, done_bytes)?;
            done_bytes += file_size(&dir.join(&f.name));
            match r {
                Loaded::Truncated if !last => {
                    return Err("Fatal error: the truncated file is not the last file".to_string())
                }
                Loaded::Truncated => outcome = Loaded::Truncated,
                _ => {}
            }
            crate::log::notice(&format!(
                "DB loaded from {} file {}: {:.3} seconds",
                if f.kind == tern_persist::aof::manifest::BASE {
                    "base"
                } else {
                    "incr"
                },
                f.name,
                t0.elapsed().as_secs_f64()
            ));
        }
        Ok(outcome)
    })();
    tern_engine::expire::set_loading(false);
    if res.is_ok() {
        srv.aof.base_size.store(
            m.base
                .as_ref()
                .map(|b| file_size(&dir.join(&b.name)))
                .unwrap_or(0),
            Relaxed,
        );
    }
    res
}

/// DEBUG LOADAOF: write out what the log holds, empty the dataset and load the AOF again,
/// holding every shard meanwhile (the replayed commands are not logged again).
pub fn debug_loadaof(ctx: &mut Ctx) {
    let srv = ctx.srv.clone();
    if srv.aof.enabled.load(Relaxed) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while srv.propagation.log.durable() < srv.propagation.log.appended()
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let res = srv.store.run_locked(&tern_engine::LockPlan::AllShards, || {
        crate::persistence::empty_keyspace(&srv);
        // As Redis while it loads: other clients get -LOADING (not BUSY, should a replayed
        // script run long) and INFO shows the load.
        srv.rdb.loading.store(true, Relaxed);
        let r = load(&srv);
        srv.rdb.loading.store(false, Relaxed);
        r
    });
    match res {
        Ok(Loaded::Ok | Loaded::Empty | Loaded::NotExist) => {
            if let Err(e) = gc_history(&srv) {
                crate::log::warning(&e);
            }
            // What was loaded is what the files hold: no change since (Redis zeroes dirty).
            srv.dirty_at_save.store(srv.dirty_total(), Relaxed);
            crate::log::notice("Append Only File loaded by DEBUG LOADAOF");
            ctx.out.ok()
        }
        Ok(Loaded::Truncated) | Err(_) => {
            if let Err(e) = res {
                crate::log::warning(&e);
            }
            std::process::exit(1);
        }
    }
}

/// Load one file: an RDB (base, or preamble of an old AOF) and/or commands.
fn load_one(
    srv: &Arc<Server>,
    dir: &Path,
    name: &str,
    old_style: bool,
    done_before: u64,
) -> Result<Loaded, String> {
    let path = dir.join(name);
    let data = std::fs::read(&path).map_err(|e| {
        format!("Fatal error: can't open the append log file {name} for reading: {e}")
    })?;
    if data.is_empty() {
        return Ok(Loaded::Empty);
    }
    let mut pos = 0;
    if tern_persist::aof::is_rdb(&data) {
        crate::log::notice(if old_style {
            "Reading RDB preamble from AOF file..."
        } else {
            "Reading RDB base file on AOF loading..."
        });
        pos = load_rdb_part(srv, &data, done_before).map_err(|e| {
            if old_style {
                format!("Error reading the RDB preamble of the AOF file {name}, AOF loading aborted: {e}")
            } else {
                format!("Error reading the RDB base file {name}, AOF loading aborted: {e}")
            }
        })?;
        if old_style {
            crate::log::notice("Reading the remaining AOF tail...");
        }
    }
    replay(srv, &path, name, &data, pos, done_before)
}

/// Load the RDB at the start of `data` (expired keys kept: the log may still touch them);
/// returns where it ends.
fn load_rdb_part(srv: &Server, data: &[u8], done_before: u64) -> Result<usize, String> {
    use crate::persistence::RdbLoadError;
    let loaded = crate::persistence::load_rdb_into(srv, data, false, false, false, |p| {
        srv.rdb.loading_loaded.store(done_before + p as u64, Relaxed)
    })
    .map_err(|e| match e {
        RdbLoadError::Corrupt(e) | RdbLoadError::Functions(e) => e,
        RdbLoadError::TooManyDbs { dbs, db } => format!(
            "the file was created with a server configured to handle more than {dbs} databases (key in DB {db})"
        ),
    })?;
    Ok(loaded.end)
}

/// Replay the commands of `data` from `pos` on the AOF pseudo-client.
fn replay(
    srv: &Arc<Server>,
    path: &Path,
    name: &str,
    data: &[u8],
    pos: usize,
    done_before: u64,
) -> Result<Loaded, String> {
    let truncated_ok = srv.config.get_bool("aof-load-truncated");
    let mut conn = Conn::internal(srv, CLIENT_ID);
    let mut out = tern_resp::Reply::new();
    let mut reader = CommandReader::new(data, pos);
    let mut valid_up_to = pos;
    let mut before_multi = pos;
    let mut n = 0u64;
    let mut delay = crate::load_delay::KeyLoadDelay::from_config(srv);
    let end = loop {
        if n.is_multiple_of(1024) {
            conn.start_batch();
            srv.rdb
                .loading_loaded
                .store(done_before + reader.pos() as u64, Relaxed);
        }
        n += 1;
        match reader.next_command() {
            Ok(None) => break None,
            Ok(Some(argv)) => {
                let owned = OwnedArgs::new(argv.iter());
                let args = owned.args();
                if srv.commands.get(args.get(0)).is_none() {
                    return Err(format!(
                        "Unknown command '{}' reading the append only file {name}",
                        String::from_utf8_lossy(args.get(0))
                    ));
                }
                if args.get(0).eq_ignore_ascii_case(b"multi") {
                    before_multi = valid_up_to;
                }
                crate::dispatch::execute(srv, &mut conn, &mut out, &args);
                out.buf.clear();
                valid_up_to = reader.pos();
                delay.after_key();
            }
            Err(e) => break Some(e),
        }
    };
    let in_multi = conn.multi.is_some();
    crate::txn::reset(srv, &mut conn);
    let err = match end {
        None if !in_multi => return Ok(Loaded::Ok),
        None => {
            crate::log::warning(&format!(
                "Revert incomplete MULTI/EXEC transaction in AOF file {name}"
            ));
            valid_up_to = before_multi;
            ReadError::Truncated
        }
        Some(ReadError::Truncated) if in_multi => {
            valid_up_to = before_multi;
            ReadError::Truncated
        }
        Some(e) => e,
    };
    if err == ReadError::Format {
        return Err(format!("Bad file format reading the append only file {name}: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>"));
    }
    if truncated_ok {
        crate::log::warning(&format!(
            "!!! Warning: short read while loading the AOF file {name}!!!"
        ));
        crate::log::warning(&format!(
            "!!! Truncating the AOF {name} at offset {valid_up_to} !!!"
        ));
        match OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(valid_up_to as u64))
        {
            Ok(()) => {
                crate::log::warning(&format!(
                    "AOF {name} loaded anyway because aof-load-truncated is enabled"
                ));
                return Ok(Loaded::Truncated);
            }
            Err(e) => crate::log::warning(&format!("Error truncating the AOF file {name}: {e}")),
        }
    }
    Err(format!("Unexpected end of file reading the append only file {name} (the last complete command ends at offset {valid_up_to}). You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."))
}
