//! Overlapping fsyncs for `appendfsync always`.
//!
//! With one writer thread that writes, fsyncs, and only then takes the next batch, a write that
//! arrives while an fsync runs waits for the rest of that fsync and then a whole one of its own:
//! one and a half fsyncs on average, and two when replies release clients in a herd (their next
//! writes arrive just after the next fsync began). Here the writer only writes, and a few fsync
//! threads each start an fsync as soon as something written is not covered by one already
//! started; so a write waits for one fsync that begins right after it (plus, when all threads
//! are busy, the rest of the oldest). An fsync covers what was written before it began, whoever
//! finishes first: the log is durable up to the largest covered position of any finished one.
//!
//! On a device whose flush latency is its cost (a network volume), fsyncs in flight together
//! take no longer than one (measured with the `fsync-delay` shim: `make bench-durable`).

use parking_lot::{Condvar, Mutex};
use std::fs::File;
use std::sync::Arc;

/// fsyncs that may be in flight at once: a write waits at most for the oldest of them to end
/// (1/N of an fsync on average when they are spread) before one starts that covers it.
pub const THREADS: usize = 4;

/// What a finished fsync reports: the log position it covered, or its error.
pub type OnSynced = Box<dyn Fn(u64, std::io::Result<()>) + Send + Sync>;

struct State {
    /// The file being appended to, and the log position written to it (everything before is in
    /// it or in files already fsynced).
    file: Option<Arc<File>>,
    written: u64,
    /// The largest position an fsync already started covers.
    started: u64,
    stop: bool,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
    on_synced: OnSynced,
}

pub struct FsyncPipeline {
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl FsyncPipeline {
    /// Start the fsync threads; `on_synced` runs on them after each fsync.
    pub fn start(file: Option<Arc<File>>, written: u64, on_synced: OnSynced) -> FsyncPipeline {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                file,
                written,
                started: written,
                stop: false,
            }),
            work: Condvar::new(),
            on_synced,
        });
        let threads = (0..THREADS)
            .map(|i| {
                let shared = shared.clone();
                std::thread::Builder::new()
                    .name(format!("aof-fsync-{i}"))
                    .spawn(move || fsync_loop(&shared))
                    .expect("spawn aof fsync thread")
            })
            .collect();
        FsyncPipeline { shared, threads }
    }

    /// The current file holds the log up to `lsn`: have an fsync cover it.
    pub fn written(&self, lsn: u64) {
        let mut g = self.shared.state.lock();
        if lsn > g.written {
            g.written = lsn;
            drop(g);
            self.shared.work.notify_one();
        }
    }

    /// The writer moved to `file` after fsyncing the previous one itself: everything up to the
    /// position written so far needs no fsync from here.
    pub fn switch_file(&self, file: Option<Arc<File>>) {
        let mut g = self.shared.state.lock();
        g.file = file;
        g.started = g.started.max(g.written);
    }

    /// Stop the threads once the fsyncs in flight ended.
    pub fn stop(self) {
        self.shared.state.lock().stop = true;
        self.shared.work.notify_all();
        for t in self.threads {
            let _ = t.join();
        }
    }
}

fn fsync_loop(shared: &Shared) {
    let mut g = shared.state.lock();
    loop {
        if g.stop {
            return;
        }
        match g.file.clone() {
            Some(file) if g.written > g.started => {
                let cover = g.written;
                g.started = cover;
                drop(g);
                let r = file.sync_data();
                (shared.on_synced)(cover, r);
                g = shared.state.lock();
            }
            _ => shared.work.wait(&mut g),
        }
    }
}
