//! `LD_PRELOAD=libtern_fsync_delay.so FSYNC_DELAY_US=2000 <server>`: every `fsync` and
//! `fdatasync` of the process sleeps `FSYNC_DELAY_US` microseconds, then does the real call.
//!
//! The benchmarks use it to give a local disk the flush latency of a network volume, the same
//! for every server measured, so `appendfsync always` designs can be compared where fsync is
//! what they wait for. The sleep comes before the real call: the data still reaches the disk,
//! and a write made during the sleep is not covered (as on a slow device, where the flush
//! covers what was written when it was issued).

use std::sync::OnceLock;
use std::time::Duration;

type SyncFn = unsafe extern "C" fn(libc::c_int) -> libc::c_int;

fn delay() -> Duration {
    static DELAY: OnceLock<Duration> = OnceLock::new();
    *DELAY.get_or_init(|| {
        let us = std::env::var("FSYNC_DELAY_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        Duration::from_micros(us)
    })
}

/// The next definition of `name` after this library (libc's).
fn real(name: &'static [u8], cell: &'static OnceLock<usize>) -> SyncFn {
    let addr = *cell.get_or_init(|| {
        // SAFETY: `name` is a NUL-terminated symbol name; RTLD_NEXT looks it up in the objects
        // loaded after this one, which include libc.
        unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) as usize }
    });
    assert!(addr != 0, "fsync-delay: libc symbol not found");
    // SAFETY: the address is libc's fsync/fdatasync, whose signature is SyncFn.
    unsafe { std::mem::transmute::<usize, SyncFn>(addr) }
}

fn delayed(fd: libc::c_int, name: &'static [u8], cell: &'static OnceLock<usize>) -> libc::c_int {
    let d = delay();
    if !d.is_zero() {
        std::thread::sleep(d);
    }
    // SAFETY: forwarding the caller's own arguments to the real function.
    unsafe { real(name, cell)(fd) }
}

/// Interposes libc's `fsync`.
#[no_mangle]
pub extern "C" fn fsync(fd: libc::c_int) -> libc::c_int {
    static REAL: OnceLock<usize> = OnceLock::new();
    delayed(fd, b"fsync\0", &REAL)
}

/// Interposes libc's `fdatasync`.
#[no_mangle]
pub extern "C" fn fdatasync(fd: libc::c_int) -> libc::c_int {
    static REAL: OnceLock<usize> = OnceLock::new();
    delayed(fd, b"fdatasync\0", &REAL)
}
