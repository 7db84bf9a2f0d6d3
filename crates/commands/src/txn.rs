//! The atomic-unit entry point the command layer uses (EXEC, scripts, functions): hold the
//! planned shards for the whole unit. The mechanism lives in `tern_engine::Store::run_locked`.

use crate::server::Server;
pub use tern_engine::LockPlan;

/// Run `f` as one atomic unit holding `plan`'s shards (see `Store::run_locked`).
pub fn run_locked<R>(srv: &Server, plan: LockPlan, f: impl FnOnce() -> R) -> R {
    srv.store.run_locked(&plan, f)
}
