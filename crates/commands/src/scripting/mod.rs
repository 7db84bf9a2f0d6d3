//! The scripting group: EVAL/EVALSHA/SCRIPT and FUNCTION/FCALL (the Lua runtime is
//! `tern_runtime::lua`).
pub mod cron;
pub mod eval;
pub mod functions;
