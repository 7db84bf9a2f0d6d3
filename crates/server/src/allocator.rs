//! The global allocator: jemalloc (as Redis uses: low fragmentation, and the allocation stats
//! INFO memory reports), built with an 8-byte quantum (`.cargo/config.toml`).
//!
//! The 8-byte quantum (Redis builds jemalloc with it too) gives size classes 8 bytes apart up to
//! 64 (8, 16, 24, … 56, 64) instead of 16 apart. A keyspace entry is a 32-byte header plus its
//! key, so a key of up to 8 bytes takes a 40-byte block instead of 48, one of 17–24 bytes a
//! 56-byte block instead of 64 (issue #19); small strings and intsets gain likewise.
//! The price is that plain `malloc` then guarantees only 8-byte alignment, which
//! `tikv_jemallocator::Jemalloc` does not expect (it asks for alignment only above 16), so this
//! wrapper passes the alignment to jemalloc whenever a layout needs more than 8.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;
use tikv_jemalloc_sys as je;

/// What plain `malloc` aligns to with the quantum we build jemalloc with.
const QUANTUM: usize = 8;

pub struct Jemalloc;

/// The mallocx flags for a layout: none when the quantum already aligns it.
#[inline]
fn flags(align: usize) -> i32 {
    if align <= QUANTUM {
        0
    } else {
        je::MALLOCX_ALIGN(align)
    }
}

// SAFETY: every call forwards to jemalloc with the layout's size and, when the quantum does not
// already give it, its alignment; jemalloc returns null on failure, as GlobalAlloc requires.
unsafe impl GlobalAlloc for Jemalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match flags(layout.align()) {
            0 => je::malloc(layout.size()) as *mut u8,
            f => je::mallocx(layout.size(), f) as *mut u8,
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match flags(layout.align()) {
            0 => je::calloc(1, layout.size()) as *mut u8,
            f => je::mallocx(layout.size(), f | je::MALLOCX_ZERO) as *mut u8,
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        je::sdallocx(ptr as *mut c_void, layout.size(), flags(layout.align()))
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match flags(layout.align()) {
            0 => je::realloc(ptr as *mut c_void, new_size) as *mut u8,
            f => je::rallocx(ptr as *mut c_void, new_size, f) as *mut u8,
        }
    }
}

/// `jemalloc-bg-thread`: jemalloc's background thread returns freed (dirty) pages to the kernel
/// on its decay schedule, so RSS falls after a load or a burst of deletes even while the server
/// is idle, as Redis does by default. Without it, pages are purged only when some thread
/// allocates.
pub fn set_background_thread(on: bool) -> Result<(), String> {
    let mut value = on;
    // SAFETY: "background_thread" is a bool control; we pass a valid pointer to a bool and its
    // size, and read nothing back.
    let rc = unsafe {
        je::mallctl(
            c"background_thread".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut value as *mut bool as *mut c_void,
            std::mem::size_of::<bool>(),
        )
    };
    match rc {
        0 => Ok(()),
        e => Err(format!(
            "jemalloc refused background_thread={on} (error {e})"
        )),
    }
}

/// Apply `jemalloc-bg-thread` now and whenever CONFIG SET changes it.
pub fn register_hooks(srv: &tern_runtime::Server) {
    if let Err(e) = set_background_thread(srv.config.get_bool("jemalloc-bg-thread")) {
        tern_runtime::log::warning(&e);
    }
    srv.config.set_apply_hook(
        "jemalloc-bg-thread",
        Box::new(|v| set_background_thread(v == "yes")),
    );
}
