//! nodes.conf on disk (`cluster-config-file`, relative to `dir` as every file of the server):
//! locked for the life of the process so two nodes never share one, and saved as Redis 7.2's
//! `clusterSaveConfig` does: the whole text (nodes, handshakes left out, then the `vars` line)
//! into a temp file `<name>.tmp-<pid>-<ms>`, fsynced when asked, renamed over the file, and
//! the directory fsynced when asked.

use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use tern_cluster::state::ClusterState;
use tern_cluster::{NodeFlags, NodesConf};

pub struct ConfFile {
    pub path: PathBuf,
    /// Held open: its `flock` is the lock.
    _lock: File,
    /// One save at a time, each writing the newest text it was given.
    saving: Mutex<u64>,
}

/// What start-up found.
pub enum Loaded {
    /// The file had a configuration.
    Conf(Box<NodesConf>),
    /// No file, or an empty one: a new node.
    Fresh,
}

impl ConfFile {
    /// Lock the file (creating it if missing), as Redis: a second process on the same file
    /// gets Redis's message.
    pub fn lock(path: &Path) -> Result<ConfFile, String> {
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| {
                format!(
                    "Can't open {} in order to acquire a lock: {}",
                    path.display(),
                    crate::config::strerror(&e)
                )
            })?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == -1 {
            let e = std::io::Error::last_os_error();
            return Err(if e.kind() == std::io::ErrorKind::WouldBlock {
                format!("Sorry, the cluster configuration file {} is already used by a different Redis Cluster node. Please make sure that different nodes use different cluster configuration files.", path.display())
            } else {
                format!(
                    "Impossible to lock {}: {}",
                    path.display(),
                    crate::config::strerror(&e)
                )
            });
        }
        Ok(ConfFile {
            path: path.to_path_buf(),
            _lock: f,
            saving: Mutex::new(0),
        })
    }

    /// Read the configuration. A missing or empty file means a new node; a corrupt one is an
    /// error worded as Redis's.
    pub fn load(&self) -> Result<Loaded, String> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::Fresh),
            Err(e) => {
                return Err(format!(
                    "Loading the cluster node config from {}: {}",
                    self.path.display(),
                    crate::config::strerror(&e)
                ))
            }
        };
        if text.trim().is_empty() {
            return Ok(Loaded::Fresh);
        }
        match NodesConf::parse(&text) {
            Ok(c) => Ok(Loaded::Conf(Box::new(c))),
            Err(e) => Err(format!(
                "Unrecoverable error: corrupted cluster config file \"{}\".",
                e.line
            )),
        }
    }

    /// The text to save for `state` (taken under the state lock; cheap).
    pub fn snapshot(state: &ClusterState) -> String {
        let mut conf = state.to_conf();
        conf.nodes
            .retain(|n| !n.flags.contains(NodeFlags::HANDSHAKE));
        conf.to_text()
    }

    /// Write `text`, numbered `seq` (a later snapshot than any already written wins).
    pub fn save(&self, seq: u64, text: &str, fsync: bool) -> std::io::Result<()> {
        let mut last = self.saving.lock();
        if seq < *last {
            return Ok(());
        }
        let tmp = PathBuf::from(format!(
            "{}.tmp-{}-{}",
            self.path.display(),
            std::process::id(),
            tern_engine::clock::now_ms()
        ));
        let res = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)?;
            f.write_all(text.as_bytes())?;
            if fsync {
                f.sync_all()?;
            }
            std::fs::rename(&tmp, &self.path)?;
            if fsync {
                let dir = match self.path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                File::open(dir)?.sync_all()?;
            }
            Ok(())
        })();
        if res.is_err() {
            let _ = std::fs::remove_file(&tmp);
        } else {
            *last = seq;
        }
        res
    }
}
