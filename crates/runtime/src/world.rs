//! Stopping the whole server for a while (DEBUG SLEEP): Redis runs commands on one thread, so
//! a sleeping command stops every client. Here the sleeper raises a process-wide flag and
//! every worker checks it before it dispatches a command, waiting (blocking its thread, as a
//! busy Redis would) until the sleep is over. Commands already running elsewhere finish.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Default)]
pub struct World {
    /// Fast check on every command: is somebody holding the world?
    stopped: AtomicBool,
    /// Who holds it (one sleeper at a time) and the wake-up for the waiters.
    held: Mutex<bool>,
    resumed: Condvar,
}

impl World {
    /// Another client holds the world stopped (tasks that do not wait skip their work).
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Wait here while another client holds the world stopped.
    #[inline]
    pub fn wait_while_stopped(&self) {
        if self.stopped.load(Ordering::Acquire) {
            self.wait_slow();
        }
    }

    #[cold]
    fn wait_slow(&self) {
        let mut held = self.held.lock();
        while *held {
            self.resumed.wait(&mut held);
        }
    }

    /// Stop every worker for `d`, sleeping on the caller's thread meanwhile.
    pub fn stop_for(&self, d: Duration) {
        {
            let mut held = self.held.lock();
            // Another sleeper first (a command already past its check): wait for it.
            while *held {
                self.resumed.wait(&mut held);
            }
            *held = true;
            self.stopped.store(true, Ordering::Release);
        }
        std::thread::sleep(d);
        let mut held = self.held.lock();
        *held = false;
        self.stopped.store(false, Ordering::Release);
        self.resumed.notify_all();
    }
}
