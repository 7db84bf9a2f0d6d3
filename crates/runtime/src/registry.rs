//! Name lookup over the command table, with stable numeric ids for per-command statistics.

use crate::table::{CommandSpec, KeyShape};
use std::collections::HashMap;

pub struct CmdEntry {
    pub spec: &'static CommandSpec,
    pub id: usize,
    /// `get`, or `config|get` for a subcommand.
    pub fullname: String,
    /// `spec.key_shape()`, kept for the per-command cluster slot check.
    pub key_shape: KeyShape,
    pub subs: HashMap<String, CmdEntry>,
}

pub struct Registry {
    top: HashMap<String, CmdEntry>,
    /// Lower-case name bytes -> entry, for the per-command lookup (fast hash, no UTF-8 check).
    by_bytes: ahash::HashMap<Box<[u8]>, *const CmdEntry>,
    count: usize,
}

// SAFETY: `by_bytes` points into `top`, which is never modified after `build`.
unsafe impl Send for Registry {}
// SAFETY: as Send: after `build` the registry is only read.
unsafe impl Sync for Registry {}

impl Registry {
    pub fn build() -> Registry {
        Registry::build_renamed(&[])
    }

    /// The table with `rename-command` applied: each (old, new) pair serves the command
    /// under the new name only; an empty new name removes it. COMMAND INFO and INFO
    /// commandstats keep the original name, as in Redis.
    pub fn build_renamed(renames: &[(String, String)]) -> Registry {
        let mut id = 0;
        let mut top = HashMap::new();
        for spec in crate::table::all_commands() {
            let entry = make_entry(spec, None, &mut id);
            top.insert(spec.name.to_string(), entry);
        }
        for (old, new) in renames {
            if let Some(entry) = top.remove(old.as_str()) {
                if !new.is_empty() {
                    top.insert(new.to_ascii_lowercase(), entry);
                }
            }
        }
        let by_bytes = top
            .iter()
            .map(|(k, v)| (k.as_bytes().into(), v as *const CmdEntry))
            .collect();
        Registry {
            top,
            by_bytes,
            count: id,
        }
    }

    /// Number of ids handed out (commands plus subcommands).
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Case-insensitive lookup of a top-level command.
    #[inline]
    pub fn get(&self, name: &[u8]) -> Option<&CmdEntry> {
        let mut buf = [0u8; 48];
        if name.len() > buf.len() {
            return None;
        }
        for (d, s) in buf.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        let p = *self.by_bytes.get(&buf[..name.len()])?;
        // SAFETY: see the Send/Sync note; entries live as long as the registry.
        Some(unsafe { &*p })
    }

    pub fn iter(&self) -> impl Iterator<Item = &CmdEntry> {
        self.top.values()
    }

    /// Every entry including subcommands.
    pub fn all(&self) -> Vec<&CmdEntry> {
        let mut out = Vec::new();
        for e in self.top.values() {
            out.push(e);
            out.extend(e.subs.values());
        }
        out
    }

    /// Lookup by full name (`get`, `config|get`).
    pub fn by_fullname(&self, name: &str) -> Option<&CmdEntry> {
        let lower = name.to_ascii_lowercase();
        match lower.split_once('|') {
            Some((c, s)) => self.top.get(c)?.subs.get(s),
            None => self.top.get(&lower),
        }
    }

    pub fn by_id(&self, id: usize) -> Option<&CmdEntry> {
        self.top
            .values()
            .flat_map(|e| std::iter::once(e).chain(e.subs.values()))
            .find(|e| e.id == id)
    }
}

impl CmdEntry {
    pub fn sub(&self, name: &[u8]) -> Option<&CmdEntry> {
        let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
        self.subs.get(&lower)
    }
}

fn make_entry(spec: &'static CommandSpec, parent: Option<&str>, id: &mut usize) -> CmdEntry {
    let fullname = match parent {
        Some(p) => format!("{p}|{}", spec.name),
        None => spec.name.to_string(),
    };
    let my_id = *id;
    *id += 1;
    let subs = spec
        .subcommands
        .iter()
        .map(|s| (s.name.to_string(), make_entry(s, Some(spec.name), id)))
        .collect();
    CmdEntry {
        spec,
        id: my_id,
        key_shape: spec.key_shape(),
        fullname,
        subs,
    }
}
