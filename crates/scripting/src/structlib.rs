//! Placeholder: filled in by the Lua libraries work.

pub fn register(_lua: &mlua::Lua) -> mlua::Result<()> {
    Ok(())
}
