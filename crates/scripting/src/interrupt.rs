//! How a script stuck inside one of this crate's C functions is stopped.
//!
//! Lua's count hook fires only between Lua instructions, never while a C function runs, so a
//! C function that can work for a long time on its own (a backtracking string pattern, a huge
//! `string.rep`) would keep SCRIPT KILL and the busy-script machinery waiting for as long as it
//! runs. Such functions here count their work and, every so often, ask the embedding server
//! what to do through the handler it installs with [`set_handler`]: go on, or raise the error
//! the server's own hook would raise (killed by SCRIPT KILL, FUNCTION LOAD timeout...).

use mlua::ffi::lua_State;
use std::sync::OnceLock;

/// What to do now for the script running on `state`: 0 go on, anything else is a reason to
/// stop, handed to the [`RaiseFn`]. May have side effects of its own (noticing a script past
/// the busy threshold), as the server's instruction hook does.
pub type CheckFn = unsafe fn(state: *mut lua_State) -> u8;

/// Raise the Lua error for a stop reason returned by the [`CheckFn`]. Called only when no
/// Rust value that needs dropping is alive in the caller's frames.
pub type RaiseFn = unsafe fn(state: *mut lua_State, reason: u8) -> !;

// Process-wide: the C functions that poll it have only a `lua_State`, and the handler is the
// same code for every VM (it finds the running script through its own thread's state).
static HANDLER: OnceLock<(CheckFn, RaiseFn)> = OnceLock::new();

/// Install the server's handler (the first call wins; it is the same for every VM).
pub fn set_handler(check: CheckFn, raise: RaiseFn) {
    let _ = HANDLER.set((check, raise));
}

/// The reason to stop now, 0 to go on (always 0 without a handler).
///
/// # Safety
/// `state` must be the running Lua state of the calling C function.
pub(crate) unsafe fn pending(state: *mut lua_State) -> u8 {
    match HANDLER.get() {
        Some((check, _)) => check(state),
        None => 0,
    }
}

/// Raise the error for `reason` (from [`pending`]).
///
/// # Safety
/// As [`RaiseFn`]: nothing in the caller's frames may need dropping.
pub(crate) unsafe fn raise(state: *mut lua_State, reason: u8) -> ! {
    match HANDLER.get() {
        Some((_, r)) => r(state, reason),
        // `pending` returns 0 without a handler, so this cannot be reached.
        None => std::process::abort(),
    }
}

/// Return if the script may go on, raise otherwise.
///
/// # Safety
/// As [`raise`].
pub(crate) unsafe fn poll(state: *mut lua_State) {
    let reason = pending(state);
    if reason != 0 {
        raise(state, reason);
    }
}
