//! The writer process of a background save (BGSAVE, an AOF rewrite's base).
//!
//! tern snapshots without fork (copy-on-write per key, in this process), but the file itself is
//! written by a child process, as Redis's forked child writes it: the snapshot thread streams
//! the encoded bytes through a pipe, and the child (this same binary, started in its writer
//! role) writes them to `temp-<child pid>.rdb` / `temp-rewriteaof-bg-<child pid>.aof`, fsyncs and
//! exits. So, as with Redis:
//!
//! * the save has a process of its own: `pgrep -P <server pid>` finds it, and the file's name
//!   carries its pid;
//! * killing that process (an operator's `kill`, `SHUTDOWN`, `appendonly no`, FLUSHALL) fails
//!   the save at once and its temp file is removed;
//! * the server process does no file I/O (write, fsync) for the save: a slow disk stalls the
//!   child, not the server.
//!
//! The child exits 0 once its input ends and the file is synced; only the server decides
//! whether the stream was complete (it renames the file into place only then).

use parking_lot::Mutex;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The server's writer processes and the fork counters INFO reports, owned by the server
/// (`Server::save_children`; each `SaveChild` keeps a handle to take itself off the table).
#[derive(Default)]
pub struct SaveChildren {
    /// INFO stats `total_forks`: writer processes started (Redis counts its forks).
    pub forks: AtomicU64,
    /// INFO stats `latest_fork_usec`: how long starting the last one took.
    pub latest_fork_usec: AtomicU64,
    /// Writer processes running now: (pid, temp file). SHUTDOWN kills them and removes the
    /// files.
    running: Mutex<Vec<(u32, PathBuf)>>,
}

/// The first argument that starts this binary as a save's writer process.
pub const CHILD_FLAG: &str = "--tern-save-writer";

/// The writer role (`tern-server --tern-save-writer <name template>`): `%d` in the template is
/// this process's pid. Never returns.
pub fn child_main(template: &str) -> ! {
    let path = template.replace("%d", &std::process::id().to_string());
    let code = match copy_stdin_to(&path) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("save writer: {path}: {e}");
            let _ = std::fs::remove_file(&path);
            1
        }
    };
    std::process::exit(code)
}

fn copy_stdin_to(path: &str) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    let mut input = std::io::stdin().lock();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        file.write_all(&buf[..n])?;
    }
    file.sync_all()
}

/// A running writer process.
pub struct SaveChild {
    child: Child,
    /// The table it is listed in while it runs.
    children: Arc<SaveChildren>,
    /// Sets the save's abort flag when the process ends (for whatever reason).
    watcher: Option<JoinHandle<()>>,
    /// The temp file it writes, relative to the working directory.
    pub path: PathBuf,
}

/// How a save's writer process ended.
pub enum Ended {
    /// Exited 0: its file is complete and synced (if the stream was).
    Ok,
    Failed(String),
    /// Killed by this signal.
    Signal(i32),
}

impl SaveChild {
    /// Start a writer of `template` (`%d`: its pid), listed in `children`. `on_end` runs as
    /// soon as the process ends (it sets the save's abort flag), so a snapshot feeding it
    /// stops at once if it is killed.
    pub fn spawn(
        children: &Arc<SaveChildren>,
        template: &str,
        on_end: impl FnOnce() + Send + 'static,
    ) -> std::io::Result<(SaveChild, ChildStdin)> {
        let started = std::time::Instant::now();
        // /proc/self/exe: the running binary even if the file was replaced since.
        let mut child = Command::new("/proc/self/exe")
            .arg(CHILD_FLAG)
            .arg(template)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        children.forks.fetch_add(1, Relaxed);
        children
            .latest_fork_usec
            .store(started.elapsed().as_micros() as u64, Relaxed);
        let stdin = child.stdin.take().expect("piped stdin");
        let pid = child.id();
        let path = PathBuf::from(template.replace("%d", &pid.to_string()));
        children.running.lock().push((pid, path.clone()));
        let watcher = std::thread::Builder::new()
            .name("save-child-watch".into())
            .spawn(move || {
                // Wait for the end without reaping it: the owner collects the status.
                // SAFETY: waitid on our own child with a zeroed siginfo out-parameter.
                unsafe {
                    let mut info: libc::siginfo_t = std::mem::zeroed();
                    while libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT)
                        < 0
                        && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                    {
                    }
                }
                on_end();
            })?;
        Ok((
            SaveChild {
                child,
                children: children.clone(),
                watcher: Some(watcher),
                path,
            },
            stdin,
        ))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// True once the process has ended (without collecting it).
    pub fn has_ended(&self) -> bool {
        self.watcher.as_ref().is_none_or(|w| w.is_finished())
    }

    /// Wait for the process (its input must be closed first) and say how it ended.
    pub fn wait(mut self) -> Ended {
        let status = self.child.wait();
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
        let pid = self.child.id();
        self.children.running.lock().retain(|(p, _)| *p != pid);
        match status {
            Ok(s) if s.success() => Ended::Ok,
            Ok(s) => match s.signal() {
                Some(sig) => Ended::Signal(sig),
                None => Ended::Failed(format!("exit code {}", s.code().unwrap_or(-1))),
            },
            Err(e) => Ended::Failed(e.to_string()),
        }
    }

    /// Stop the process (the save is given up) and remove its file.
    pub fn kill_and_remove(mut self) {
        let _ = self.child.kill();
        let path = self.path.clone();
        let _ = self.wait();
        let _ = std::fs::remove_file(path);
    }
}

impl SaveChildren {
    /// Kill every writer process and remove its temp file (shutting down: the saves they were
    /// writing are given up). Returns the pids killed.
    pub fn kill_all(&self) -> Vec<u32> {
        let running = std::mem::take(&mut *self.running.lock());
        let mut pids = Vec::new();
        for (pid, path) in running {
            // SAFETY: signalling a child of ours; it has not been collected (it is in `running`).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            let _ = std::fs::remove_file(path);
            pids.push(pid);
        }
        pids
    }

    /// The pid of the writer process whose temp file name starts with `prefix`, if one runs.
    pub fn running_pid(&self, prefix: &str) -> Option<u32> {
        self.running
            .lock()
            .iter()
            .find(|(_, p)| p.to_string_lossy().starts_with(prefix))
            .map(|(pid, _)| *pid)
    }
}
