//! Redis 7 function libraries as the runtime keeps them: the server's library set (the
//! code and what each library registered), and each worker thread's function Lua state, built
//! from that set the first time the thread needs it after a change, so FCALLs on different
//! threads run at the same time.

use crate::args::Args;
use crate::lua::{self, sflags, NewFunction};
use crate::server::Server;
use parking_lot::RwLock;
use std::sync::Arc;

#[derive(Clone)]
pub struct FuncMeta {
    pub name: String,
    pub description: Option<Vec<u8>>,
    pub flags: u32,
    /// Slow last time: run on a script thread (shared by the library's clones).
    pub history: Arc<lua::RunHistory>,
}

#[derive(Clone)]
pub struct Library {
    pub name: String,
    /// The code as loaded, shebang included.
    pub code: Vec<u8>,
    pub functions: Vec<FuncMeta>,
}

#[derive(Clone)]
struct Libs {
    libs: Vec<Library>,
    /// Replaced on every change; thread VMs built for an older one are rebuilt.
    gen: u64,
}

impl Default for Libs {
    fn default() -> Libs {
        Libs {
            libs: Vec::new(),
            gen: lua::fresh_generation(),
        }
    }
}

/// The function libraries, owned by the server (`Server::functions`).
#[derive(Default)]
pub struct FunctionLibraries {
    libs: RwLock<Libs>,
}

impl Libs {
    fn lib(&self, name: &str) -> Option<&Library> {
        self.libs.iter().find(|l| l.name == name)
    }

    fn function(&self, name: &[u8]) -> Option<(&Library, &FuncMeta)> {
        self.libs.iter().find_map(|l| {
            l.functions
                .iter()
                .find(|f| f.name.as_bytes().eq_ignore_ascii_case(name))
                .map(|f| (l, f))
        })
    }

    fn function_count(&self) -> usize {
        self.libs.iter().map(|l| l.functions.len()).sum()
    }

    /// Add `new` libraries; with `replace` a library of the same name goes, otherwise that is
    /// an error, as is a function name another library has.
    fn join(&mut self, new: Vec<Library>, replace: bool) -> Result<(), String> {
        let mut next = self.clone();
        for l in &new {
            if next.lib(&l.name).is_some() {
                if !replace {
                    return Err(format!("ERR Library {} already exists", l.name));
                }
                next.libs.retain(|o| o.name != l.name);
            }
        }
        for l in &new {
            for f in &l.functions {
                if next.function(f.name.as_bytes()).is_some() {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
            }
            next.libs.push(l.clone());
        }
        next.gen = lua::fresh_generation();
        *self = next;
        Ok(())
    }
}

/// (libraries, functions) for INFO and FUNCTION STATS.
pub fn counts(srv: &Server) -> (usize, usize) {
    let l = srv.functions.libs.read();
    (l.libs.len(), l.function_count())
}

/// The library set's generation (every change bumps it).
pub fn generation(srv: &Server) -> u64 {
    srv.functions.libs.read().gen
}

/// Bytes the library set keeps outside the Lua states (code, names, descriptions).
pub fn memory_overhead(srv: &Server) -> u64 {
    let l = srv.functions.libs.read();
    l.libs
        .iter()
        .map(|lib| {
            lib.code.len()
                + lib.name.len()
                + lib
                    .functions
                    .iter()
                    .map(|f| f.name.len() + f.description.as_ref().map_or(0, |d| d.len()) + 48)
                    .sum::<usize>()
                + 64
        })
        .sum::<usize>() as u64
}

/// Function and library names: letters, digits and underscores, at least one.
pub fn valid_name(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `#!<engine> name=<lib>`: (engine, name, code after the shebang line, newline kept).
fn metadata(code: &[u8]) -> Result<(Vec<u8>, String, &[u8]), String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&c| c == b'\n') else {
        return Err("ERR Invalid library metadata".into());
    };
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    if tern_resp::split_args(&code[..end], &mut buf, &mut ranges).is_err() || ranges.is_empty() {
        return Err("ERR Invalid library metadata".into());
    }
    let part = |i: usize| &buf[ranges[i].0..ranges[i].1];
    let engine = part(0)[2..].to_vec();
    let mut name = None;
    for i in 1..ranges.len() {
        let p = part(i);
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&p[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "ERR Invalid metadata value given: {}",
            String::from_utf8_lossy(p)
        ));
    }
    let name = name.ok_or("ERR Library name was not given")?;
    Ok((engine, name, &code[end..]))
}

/// Check a library's header and name; (name, code to compile).
fn check_library(code: &[u8]) -> Result<(String, &[u8]), String> {
    let (engine, name, body) = metadata(code)?;
    if !valid_name(name.as_bytes()) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    if !engine.eq_ignore_ascii_case(b"lua") {
        return Err(format!(
            "ERR Engine '{}' not found",
            String::from_utf8_lossy(&engine)
        ));
    }
    Ok((name, body))
}

/// Compile and run a library's code on `vm`: the functions it registers.
fn run_library(vm: &lua::Vm, body: &[u8], timeout_ms: u64) -> Result<Vec<NewFunction>, String> {
    let chunk = vm
        .compile(body, "@user_function")
        .map_err(|e| format!("ERR Error compiling function: {e}"))?;
    let fs = vm
        .load_library(&chunk, timeout_ms)
        .map_err(|e| format!("ERR {e}"))?;
    if fs.is_empty() {
        return Err("ERR No functions registered".into());
    }
    Ok(fs)
}

/// Build a library from its code on this thread's function VM (validating it).
fn build(vm: &lua::Vm, code: &[u8], timeout_ms: u64) -> Result<Library, String> {
    let (name, body) = check_library(code)?;
    let fs = run_library(vm, body, timeout_ms)?;
    Ok(Library {
        name,
        code: code.to_vec(),
        functions: fs
            .into_iter()
            .map(|f| FuncMeta {
                name: f.name,
                description: f.description,
                flags: f.flags,
                history: Default::default(),
            })
            .collect(),
    })
}

/// Load every library of `libs` into a fresh function VM.
fn fill(vm: &mut lua::Vm, libs: &[Library]) -> Result<(), String> {
    for l in libs {
        let (_, body) = check_library(&l.code)?;
        for f in run_library(vm, body, 0)? {
            let c = vm.keep(f.callback)?;
            vm.compiled.insert(f.name, c);
        }
    }
    Ok(())
}

/// Run `f` on this thread's function VM, built for the current library set.
pub fn with_functions<R>(srv: &Server, f: impl FnOnce(&mut lua::Vm) -> R) -> Result<R, String> {
    let gen = srv.functions.libs.read().gen;
    // The libraries are copied only when this thread's VM is (re)built; one newer than `gen`
    // makes the VM be rebuilt once more on its next use, which is harmless.
    lua::with_vm(
        srv,
        false,
        gen,
        |vm| {
            let libs = srv.functions.libs.read().libs.clone();
            fill(vm, &libs)
        },
        f,
    )
}

/// The flags the function an FCALL/FCALL_RO names declares; None for an unknown function,
/// whose command keeps its own flags (Redis's fcallGetCommandFlags).
pub fn fcall_declared_flags(srv: &Server, args: &Args) -> Option<u32> {
    if args.len() < 2 {
        return None;
    }
    let libs = srv.functions.libs.read();
    libs.function(&args[1]).map(|(_, f)| f.flags)
}

/// Is this FCALL/FCALL_RO refused while memory is over `maxmemory`?
pub fn fcall_denies_oom(srv: &Server, args: &Args) -> bool {
    fcall_declared_flags(srv, args).is_some_and(crate::lua::scripts::flags_deny_oom)
}

/// May this FCALL write (CLIENT PAUSE WRITE holds it)? Unless its function says `no-writes`.
pub fn fcall_may_write(srv: &Server, args: &Args) -> bool {
    fcall_declared_flags(srv, args).is_none_or(|fl| fl & sflags::NO_WRITES == 0)
}

/// The code of every loaded library (what an RDB file's FUNCTION2 records hold).
pub fn library_codes(srv: &Server) -> Vec<Vec<u8>> {
    srv.functions
        .libs
        .read()
        .libs
        .iter()
        .map(|l| l.code.clone())
        .collect()
}

/// How restored libraries meet the loaded ones (FUNCTION RESTORE's policy).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    /// A library of the same name is an error.
    Append,
    /// A library of the same name is replaced.
    Replace,
    /// Every loaded library goes first.
    Flush,
}

/// Add libraries from their codes (FUNCTION RESTORE, a loaded dataset): all of them or,
/// on any error, none.
pub fn restore_libraries(
    srv: &Server,
    codes: &[Vec<u8>],
    policy: RestorePolicy,
) -> Result<(), String> {
    let new = with_functions(srv, |vm| -> Result<Vec<Library>, String> {
        let mut libs: Vec<Library> = Vec::new();
        for code in codes {
            let lib = build(vm, code, 0)?;
            if libs.iter().any(|l| l.name == lib.name) {
                return Err(format!("ERR Library {} already exists", lib.name));
            }
            libs.push(lib);
        }
        Ok(libs)
    })??;
    let mut l = srv.functions.libs.write();
    if policy == RestorePolicy::Flush {
        let mut fresh = Libs {
            libs: Vec::new(),
            gen: l.gen,
        };
        fresh.join(new, false)?;
        *l = fresh;
        Ok(())
    } else {
        l.join(new, policy == RestorePolicy::Replace)
    }
}

/// Add the libraries of a loaded dataset to the current ones; `replace` lets one replace a
/// library of the same name (otherwise that fails the load and nothing changes).
pub fn load_libraries(srv: &Server, codes: &[Vec<u8>], replace: bool) -> Result<(), String> {
    let policy = if replace {
        RestorePolicy::Replace
    } else {
        RestorePolicy::Append
    };
    restore_libraries(srv, codes, policy)
}
/// Forget every library (FUNCTION FLUSH, and before a dataset is loaded in its place).
pub fn clear_libraries(srv: &Server) {
    let mut l = srv.functions.libs.write();
    l.libs.clear();
    l.gen = lua::fresh_generation();
}

/// FUNCTION LOAD: build the library `code` (its top level may run `timeout_ms`) and add it;
/// its name, or Redis's error.
pub fn load(srv: &Server, code: &[u8], replace: bool, timeout_ms: u64) -> Result<String, String> {
    if let Ok((name, _)) = check_library(code) {
        if !replace && srv.functions.libs.read().lib(&name).is_some() {
            return Err(format!("ERR Library '{name}' already exists"));
        }
    }
    let lib = with_functions(srv, |vm| build(vm, code, timeout_ms))??;
    let name = lib.name.clone();
    let mut libs = srv.functions.libs.write();
    if !replace && libs.lib(&name).is_some() {
        return Err(format!("ERR Library '{name}' already exists"));
    }
    libs.join(vec![lib], true)?;
    Ok(name)
}

/// FUNCTION DELETE: false when there is no such library.
pub fn delete(srv: &Server, name: &str) -> bool {
    let mut l = srv.functions.libs.write();
    if l.lib(name).is_none() {
        return false;
    }
    l.libs.retain(|x| x.name != name);
    l.gen = lua::fresh_generation();
    true
}

/// The loaded libraries (FUNCTION LIST), in load order.
pub fn libraries(srv: &Server) -> Vec<Library> {
    srv.functions.libs.read().libs.clone()
}

/// The function FCALL names (case-insensitive): its name as registered, flags and history.
pub fn function(srv: &Server, name: &[u8]) -> Option<(String, u32, Arc<lua::RunHistory>)> {
    srv.functions
        .libs
        .read()
        .function(name)
        .map(|(_, f)| (f.name.clone(), f.flags, f.history.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_errors() {
        assert!(metadata(b"return 1").is_err());
        assert_eq!(metadata(b"#!lua name=x\nbody").unwrap().1, "x");
        assert!(metadata(b"#!lua name=x foo=y\n").is_err());
    }
}
