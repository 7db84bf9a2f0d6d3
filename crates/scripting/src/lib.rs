//! tern's Lua 5.1 environment for EVAL and FUNCTION: the libraries Redis bundles with its Lua
//! (cjson, cmsgpack, bit, struct), written in Rust on top of mlua. No dependency on the server:
//! the command layer (`tern-commands`) drives the VM and supplies `redis.call`.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
mod lapi;
pub mod structlib;

/// Register every bundled library as a global of `lua` (`cjson`, `cmsgpack`, `bit`, `struct`),
/// as Redis does before it protects the global table.
pub fn register_libs(lua: &mlua::Lua) -> mlua::Result<()> {
    bit::register(lua)?;
    cjson::register(lua)?;
    cmsgpack::register(lua)?;
    structlib::register(lua)?;
    Ok(())
}
