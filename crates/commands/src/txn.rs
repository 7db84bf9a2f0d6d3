//! The atomic-unit entry point the command layer uses (EXEC, scripts, functions): hold the
//! planned shards for the whole unit. The mechanism lives in `tern_engine::Store::run_locked`.

use crate::server::Server;
pub use tern_engine::LockPlan;

/// Run `f` as one atomic unit holding `plan`'s shards (see `Store::run_locked`).
/// The outermost unit appends what its commands propagated before its locks are released.
pub fn run_locked<R>(srv: &Server, plan: LockPlan, f: impl FnOnce() -> R) -> R {
    if tern_engine::Store::in_atomic_unit() {
        return f();
    }
    srv.store.run_locked(&plan, || {
        let r = f();
        crate::propagate::flush();
        r
    })
}
