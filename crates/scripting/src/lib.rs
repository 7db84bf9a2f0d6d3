//! tern's Lua 5.1 environment for EVAL and FUNCTION: the libraries Redis bundles with its Lua
//! (cjson, cmsgpack, bit, struct), written in Rust on top of mlua. No dependency on the server:
//! the command layer (`tern-commands`) drives the VM and supplies `redis.call`.

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod interrupt;
mod lapi;
pub mod pattern;
pub mod structlib;

/// Register every bundled library as a global of `lua` (`cjson`, `cmsgpack`, `bit`, `struct`),
/// as Redis does before it protects the global table, and swap the `string` library's pattern
/// functions and `rep` for interruptible ones (see `pattern`).
pub fn register_libs(lua: &mlua::Lua) -> mlua::Result<()> {
    pattern::register(lua)?;
    bit::register(lua)?;
    cjson::register(lua)?;
    cmsgpack::register(lua)?;
    structlib::register(lua)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua() -> mlua::Lua {
        let lua = mlua::Lua::new();
        register_libs(&lua).unwrap();
        lua
    }

    #[test]
    fn globals_are_tables() {
        let lua = lua();
        for name in ["bit", "cjson", "cmsgpack", "struct"] {
            let t: mlua::Value = lua.globals().get(name).unwrap();
            assert!(t.is_table(), "{name} is not a table");
        }
    }

    #[test]
    fn errors_reach_rust_as_runtime_errors() {
        let lua = lua();
        let err = lua
            .load("local x = cjson.decode('[')")
            .set_name("@user_script")
            .exec()
            .unwrap_err();
        match err {
            // mlua appends a traceback after the message.
            mlua::Error::RuntimeError(m) => assert!(
                m.starts_with("user_script:1: Expected value but found T_END at character 2\n"),
                "{m}"
            ),
            other => panic!("unexpected error {other:?}"),
        }
    }

    #[test]
    fn pcall_sees_string_errors() {
        let lua = lua();
        let (ok, ty): (bool, String) = lua
            .load("local ok, e = pcall(cmsgpack.unpack, '\\193') return ok, type(e)")
            .eval()
            .unwrap();
        assert!(!ok);
        assert_eq!(ty, "string");
    }

    #[test]
    fn values_cross_into_rust() {
        let lua = lua();
        let s: String = lua
            .load("return cjson.encode({1, 2, {a = 1}})")
            .eval()
            .unwrap();
        assert_eq!(s, r#"[1,2,{"a":1}]"#);
        let b: mlua::LuaString = lua.load("return cmsgpack.pack({1, 'a'})").eval().unwrap();
        assert_eq!(&b.as_bytes()[..], &[0x92, 0x01, 0xa1, b'a']);
        let n: f64 = lua.load("return bit.tobit(2^32 + 5)").eval().unwrap();
        assert_eq!(n, 5.0);
        let sz: i64 = lua.load("return struct.size('>!4 b i')").eval().unwrap();
        assert_eq!(sz, 8);
    }

    #[test]
    fn libraries_survive_many_calls_and_errors() {
        // Error paths free their Rust buffers before unwinding; run them in a loop to make
        // sure the VM stays consistent.
        let lua = lua();
        let n: i64 = lua
            .load(
                r#"
                local n = 0
                for i = 1, 2000 do
                  if not pcall(cjson.encode, {1, {f = print}}) then n = n + 1 end
                  if not pcall(cjson.decode, '[1, 2, {"a": [tru]}]') then n = n + 1 end
                  if not pcall(cmsgpack.unpack, '\147\1\2') then n = n + 1 end
                  if not pcall(struct.pack, 'i i', 1) then n = n + 1 end
                end
                return n
            "#,
            )
            .eval()
            .unwrap();
        assert_eq!(n, 8000);
    }
}
