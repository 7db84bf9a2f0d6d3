//! The declarative command table: every command's name, arity, flags, key specs and ACL
//! categories, once. COMMAND, COMMAND INFO/DOCS/GETKEYS, arity and flag checks and the lock
//! planner all read it; nothing else lists commands.
//!
//! Families write their tables with [`commands!`], one short entry per command, in the order of
//! Redis's JSON command files:
//!
//! ```text
//! pub static COMMANDS: &[CommandSpec] = crate::table::commands! { group "hash";
//!     ("hget", 3, [READONLY FAST], [HASH], [key(1, RO ACCESS)], hget, "2.0.0",
//!         "Returns the value of one hash field."),
//! };
//! ```
//!
//! That is: name, arity, `[flags]`, `[explicit ACL categories]`, `[key specs]`, handler (`_` for a
//! container whose subcommands do the work), since, summary, then any other `CommandSpec` field
//! as `field: value` (complexity, tips, getkeys, subcommands, a group other than the table's).
//! A macro rather than `const fn` builders because flag, category and key-flag lists are written
//! as bare names (`READONLY FAST`) that the macro turns into paths into [`flags`], [`acl`] and
//! [`kflags`], so a misspelt name is a compile error; a builder would need `f::A | f::B` for each.
//! The expansion is a plain `CommandSpec` literal in a static, so everything stays const.
//!
//! The ACL categories Redis derives from flags (its `setImplicitACLCategories`: write, read,
//! admin + dangerous, pubsub, fast, blocking, and slow for every command that is not fast) are
//! derived here too by [`implicit_acl`]; an entry lists only the rest, as the JSON files do.

use crate::args::eq_ic;
use crate::ctx::Ctx;
use crate::Args;

pub type Handler = fn(&mut Ctx, &Args);

/// A command's own key finder: (argument index, key-spec flags) of each key.
pub type GetKeys = fn(&Args) -> Vec<(usize, u32)>;

/// Command flags (Redis's CMD_* names, as COMMAND INFO reports them).
pub mod flags {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const SKIP_MONITOR: u32 = 1 << 9;
    pub const SKIP_SLOWLOG: u32 = 1 << 10;
    pub const ASKING: u32 = 1 << 11;
    pub const FAST: u32 = 1 << 12;
    pub const NO_AUTH: u32 = 1 << 13;
    pub const MAY_REPLICATE: u32 = 1 << 14;
    pub const SENTINEL: u32 = 1 << 15;
    pub const ONLY_SENTINEL: u32 = 1 << 16;
    pub const NO_MANDATORY_KEYS: u32 = 1 << 17;
    pub const PROTECTED: u32 = 1 << 18;
    pub const NO_ASYNC_LOADING: u32 = 1 << 19;
    pub const NO_MULTI: u32 = 1 << 20;
    pub const MOVABLE_KEYS: u32 = 1 << 21;
    pub const ALLOW_BUSY: u32 = 1 << 22;
    /// Internal, not shown by COMMAND: runs a script (EVAL*, FCALL*), which MONITOR shows
    /// before the commands it calls.
    pub const SCRIPT_CALLER: u32 = 1 << 23;
    /// Internal, not shown by COMMAND: observes other connections (their state, or their
    /// position in the order requests arrived), so it runs after every thread took in the
    /// requests already sent (see the server's `drain`).
    pub const OBSERVES_CLIENTS: u32 = 1 << 24;

    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (ASKING, "asking"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (MAY_REPLICATE, "may_replicate"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLE_KEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// ACL categories (`@keyspace`, `@read`, ...).
pub mod acl {
    pub const KEYSPACE: u64 = 1 << 0;
    pub const READ: u64 = 1 << 1;
    pub const WRITE: u64 = 1 << 2;
    pub const SET: u64 = 1 << 3;
    pub const SORTEDSET: u64 = 1 << 4;
    pub const LIST: u64 = 1 << 5;
    pub const HASH: u64 = 1 << 6;
    pub const STRING: u64 = 1 << 7;
    pub const BITMAP: u64 = 1 << 8;
    pub const HYPERLOGLOG: u64 = 1 << 9;
    pub const GEO: u64 = 1 << 10;
    pub const STREAM: u64 = 1 << 11;
    pub const PUBSUB: u64 = 1 << 12;
    pub const ADMIN: u64 = 1 << 13;
    pub const FAST: u64 = 1 << 14;
    pub const SLOW: u64 = 1 << 15;
    pub const BLOCKING: u64 = 1 << 16;
    pub const DANGEROUS: u64 = 1 << 17;
    pub const CONNECTION: u64 = 1 << 18;
    pub const TRANSACTION: u64 = 1 << 19;
    pub const SCRIPTING: u64 = 1 << 20;

    pub const NAMES: &[(u64, &str)] = &[
        (KEYSPACE, "keyspace"),
        (READ, "read"),
        (WRITE, "write"),
        (SET, "set"),
        (SORTEDSET, "sortedset"),
        (LIST, "list"),
        (HASH, "hash"),
        (STRING, "string"),
        (BITMAP, "bitmap"),
        (HYPERLOGLOG, "hyperloglog"),
        (GEO, "geo"),
        (STREAM, "stream"),
        (PUBSUB, "pubsub"),
        (ADMIN, "admin"),
        (FAST, "fast"),
        (SLOW, "slow"),
        (BLOCKING, "blocking"),
        (DANGEROUS, "dangerous"),
        (CONNECTION, "connection"),
        (TRANSACTION, "transaction"),
        (SCRIPTING, "scripting"),
    ];
}

/// Key-spec flags (COMMAND INFO / DOCS names).
pub mod kflags {
    pub const RO: u32 = 1 << 0;
    pub const RW: u32 = 1 << 1;
    pub const OW: u32 = 1 << 2;
    pub const RM: u32 = 1 << 3;
    pub const ACCESS: u32 = 1 << 4;
    pub const UPDATE: u32 = 1 << 5;
    pub const INSERT: u32 = 1 << 6;
    pub const DELETE: u32 = 1 << 7;
    pub const NOT_KEY: u32 = 1 << 8;
    pub const INCOMPLETE: u32 = 1 << 9;
    pub const VARIABLE_FLAGS: u32 = 1 << 10;

    pub const NAMES: &[(u32, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Where the search for keys begins.
#[derive(Debug, Clone, Copy)]
pub enum BeginSearch {
    /// At a fixed argument index.
    Index(i32),
    /// After the last (or first, from `startfrom`) occurrence of a keyword.
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
    /// Only the command itself knows (its `getkeys`).
    Unknown,
}

/// How keys are found from the beginning.
#[derive(Debug, Clone, Copy)]
pub enum FindKeys {
    /// `lastkey` relative to the begin index (-1 = last arg), every `step` args, `limit` as Redis.
    Range {
        lastkey: i32,
        step: i32,
        limit: i32,
    },
    /// A count argument at `keynumidx` (relative), keys from `firstkey` (relative), every `step`.
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        step: i32,
    },
    Unknown,
}

#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    pub flags: u32,
    pub begin: BeginSearch,
    pub find: FindKeys,
}

/// Where a command's keys are, as far as a per-command check needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyShape {
    /// The command takes no keys.
    NoKeys,
    /// At most one key, at this argument index (when the command has that many arguments):
    /// GET, SET, HSET... the common case, checked without walking the key specs.
    One(usize),
    /// Anything else: walk the key specs (or the command's key finder).
    Other,
}

impl KeySpec {
    /// One key at a fixed index.
    pub const fn single(index: i32, flags: u32) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Index(index),
            find: FindKeys::Range {
                lastkey: 0,
                step: 1,
                limit: 0,
            },
        }
    }

    /// Keys from `index` to the end (lastkey -1), every `step`.
    pub const fn range(index: i32, lastkey: i32, step: i32, flags: u32) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Index(index),
            find: FindKeys::Range {
                lastkey,
                step,
                limit: 0,
            },
        }
    }

    /// Keys after a keyword (searched from `startfrom`; negative counts from the end).
    pub const fn keyword(
        keyword: &'static str,
        startfrom: i32,
        lastkey: i32,
        step: i32,
        limit: i32,
        flags: u32,
    ) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Keyword { keyword, startfrom },
            find: FindKeys::Range {
                lastkey,
                step,
                limit,
            },
        }
    }

    /// Keys only the command's own `getkeys` can find.
    pub const fn unknown(flags: u32) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Unknown,
            find: FindKeys::Unknown,
        }
    }

    pub const fn keynum(
        index: i32,
        keynumidx: i32,
        firstkey: i32,
        step: i32,
        flags: u32,
    ) -> KeySpec {
        KeySpec {
            flags,
            begin: BeginSearch::Index(index),
            find: FindKeys::Keynum {
                keynumidx,
                firstkey,
                step,
            },
        }
    }
}

/// The command families, handed over by the binary at start-up: the runtime cannot name them
/// (they live above it). Process-wide on purpose: the table is code, the same for every
/// server a process could run.
static FAMILIES: std::sync::OnceLock<&'static [&'static [CommandSpec]]> =
    std::sync::OnceLock::new();

/// Install the command table (once; later calls are ignored).
pub fn install(families: &'static [&'static [CommandSpec]]) {
    let _ = FAMILIES.set(families);
}

/// Every top-level command of the installed table.
pub fn all_commands() -> impl Iterator<Item = &'static CommandSpec> {
    FAMILIES
        .get()
        .expect("the command table is installed at start-up (table::install)")
        .iter()
        .flat_map(|f| f.iter())
}

/// One entry of the command table. Container commands (CONFIG, CLIENT, ...) list their
/// subcommands, which are entries of their own.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lower-case name (`get`, or the subcommand's own name `get` under `config`).
    pub name: &'static str,
    pub arity: i32,
    pub flags: u32,
    pub acl: u64,
    pub keys: &'static [KeySpec],
    pub handler: Option<Handler>,
    pub subcommands: &'static [CommandSpec],
    pub group: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    pub summary: &'static str,
    /// Hints for clients and proxies (`nondeterministic_output`, `request_policy:all_shards`...).
    pub tips: &'static [&'static str],
    /// Key finder for commands whose specs cannot say where the keys are (SORT's STORE):
    /// replaces the specs for GETKEYS and lock planning, as Redis's getkeys_proc does.
    pub getkeys: Option<GetKeys>,
}

/// The defaults every entry starts from (`..CommandSpec::DEFAULT`).
impl CommandSpec {
    pub const DEFAULT: CommandSpec = CommandSpec {
        name: "",
        arity: 0,
        flags: 0,
        acl: 0,
        keys: &[],
        handler: None,
        subcommands: &[],
        group: "generic",
        since: "1.0.0",
        complexity: "O(1)",
        summary: "",
        tips: &[],
        getkeys: None,
    };

    /// The legacy (first key, last key, step) triple COMMAND INFO reports, derived from the
    /// key specs the way Redis derives it: only index/range specs, merged if contiguous.
    pub fn legacy_range(&self) -> (i32, i32, i32) {
        // One plain range spec is reported as it is, even a not_key one (SPUBLISH), as Redis.
        if let [KeySpec {
            begin: BeginSearch::Index(idx),
            find: FindKeys::Range { lastkey, step, .. },
            ..
        }] = self.keys
        {
            let last = if *lastkey < 0 {
                *lastkey
            } else {
                idx + lastkey
            };
            return (*idx, last, *step);
        }
        let mut first = 0;
        let mut last = 0;
        let mut step = 0;
        for ks in self.keys {
            let (
                BeginSearch::Index(idx),
                FindKeys::Range {
                    lastkey,
                    step: st,
                    limit,
                },
            ) = (ks.begin, ks.find)
            else {
                continue;
            };
            if ks.flags & kflags::NOT_KEY != 0 || limit > 1 {
                continue;
            }
            let spec_last = if lastkey < 0 { lastkey } else { idx + lastkey };
            if first == 0 {
                first = idx;
                last = spec_last;
                step = st;
            } else if last >= 0 && idx == last + st && st == step {
                last = spec_last;
            } else {
                break;
            }
        }
        (first, last, step)
    }

    /// True when key positions depend on the arguments (keynum or keyword specs).
    pub fn movable_keys(&self) -> bool {
        self.keys.iter().any(|k| {
            !matches!(
                (k.begin, k.find),
                (BeginSearch::Index(_), FindKeys::Range { .. })
            )
        })
    }

    /// Argument indexes of the keys in `args`, with each key's spec flags. Arguments that do not
    /// fit the spec (too few, bad keynum) end the search quietly; arity checks run first.
    pub fn key_positions(&self, args: &Args) -> Vec<(usize, u32)> {
        if let Some(find) = self.getkeys {
            return find(args);
        }
        let mut out = Vec::new();
        self.for_each_key(args, |i, f| out.push((i, f)));
        out
    }

    /// What the per-command checks need to know of where the keys are, decided once per
    /// command (see [`KeyShape`]).
    pub fn key_shape(&self) -> KeyShape {
        match (self.getkeys, self.keys) {
            (None, []) => KeyShape::NoKeys,
            (
                None,
                [KeySpec {
                    begin: BeginSearch::Index(at),
                    find: FindKeys::Range { lastkey: 0, .. },
                    ..
                }],
            ) if *at > 0 => KeyShape::One(*at as usize),
            _ => KeyShape::Other,
        }
    }

    /// `key_positions` without collecting them (a command's own key finder still does).
    pub fn for_each_key(&self, args: &Args, mut out: impl FnMut(usize, u32)) {
        if let Some(find) = self.getkeys {
            for (i, f) in find(args) {
                out(i, f);
            }
            return;
        }
        let argc = args.len() as i32;
        for ks in self.keys {
            let begin = match ks.begin {
                BeginSearch::Index(i) => i,
                BeginSearch::Keyword { keyword, startfrom } => {
                    let found = if startfrom >= 0 {
                        (startfrom..argc)
                            .find(|&i| args[i as usize].eq_ignore_ascii_case(keyword.as_bytes()))
                    } else {
                        (1..=(argc + startfrom).max(0))
                            .rev()
                            .find(|&i| args[i as usize].eq_ignore_ascii_case(keyword.as_bytes()))
                    };
                    match found {
                        Some(i) => i + 1,
                        None => continue,
                    }
                }
                BeginSearch::Unknown => continue,
            };
            if begin >= argc {
                continue;
            }
            match ks.find {
                FindKeys::Range {
                    lastkey,
                    step,
                    limit,
                } => {
                    let last = if lastkey >= 0 {
                        begin + lastkey
                    } else if limit > 1 {
                        begin + (argc - 1 - begin) / limit
                    } else {
                        argc + lastkey
                    };
                    let mut i = begin;
                    while i <= last.min(argc - 1) {
                        out(i as usize, ks.flags);
                        i += step.max(1);
                    }
                }
                FindKeys::Keynum {
                    keynumidx,
                    firstkey,
                    step,
                } => {
                    let ki = begin + keynumidx;
                    if ki >= argc {
                        continue;
                    }
                    let Some(n) = crate::args::parse_i64(&args[ki as usize]).filter(|&n| n >= 0)
                    else {
                        continue;
                    };
                    let mut i = begin + firstkey;
                    for _ in 0..n {
                        if i >= argc {
                            break;
                        }
                        out(i as usize, ks.flags);
                        i += step.max(1);
                    }
                }
                FindKeys::Unknown => {}
            }
        }
    }
}

/// The keys the specs name, as Redis reads them (getKeysUsingKeySpecs, for COMMAND GETKEYS
/// and ACL checks): None when a spec does not fit the arguments (a count out of range, an
/// incomplete spec).
pub fn keys_by_specs(specs: &[KeySpec], args: &Args) -> Option<Vec<(usize, u32)>> {
    let argc = args.len() as i64;
    let mut keys = Vec::new();
    for ks in specs {
        if ks.flags & kflags::NOT_KEY != 0 {
            continue;
        }
        let mut first = match ks.begin {
            BeginSearch::Index(i) => i as i64,
            BeginSearch::Keyword { keyword, startfrom } => {
                let start = if startfrom > 0 {
                    startfrom as i64
                } else {
                    argc + startfrom as i64
                };
                let end = if startfrom > 0 { argc - 1 } else { 1 };
                let mut found = None;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if crate::args::eq_ic(&args[i as usize], keyword) {
                        found = Some(i + 1);
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                match found {
                    Some(i) => i,
                    None => continue,
                }
            }
            BeginSearch::Unknown => return None,
        };
        let (last, step) = match ks.find {
            FindKeys::Range {
                lastkey,
                step,
                limit,
            } => {
                let last = if lastkey >= 0 {
                    first + lastkey as i64
                } else if limit == 0 {
                    argc + lastkey as i64
                } else {
                    first + ((argc - first) / limit as i64 + lastkey as i64)
                };
                (last, step as i64)
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                step,
            } => {
                let at = first + keynumidx as i64;
                if keynumidx as i64 >= argc || at >= argc {
                    return None;
                }
                let n = crate::args::parse_i64(&args[at as usize]).filter(|&n| n >= 0)?;
                first += firstkey as i64;
                // Redis adds the count as a C int: a count past 2^31 wraps negative.
                (first + (n as i32) as i64 - 1, step as i64)
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push((i as usize, ks.flags));
            i += step.max(1);
        }
        if ks.flags & kflags::INCOMPLETE != 0 {
            return None;
        }
    }
    Some(keys)
}

/// The real access flags of commands whose key spec says `variable_flags`: they depend on the
/// arguments (SET with or without GET, BITFIELD with or without writes).
pub fn variable_key_flags(name: &str, args: &Args) -> Option<u32> {
    match name {
        "set" => Some(if (3..args.len()).any(|i| eq_ic(&args[i], "get")) {
            kflags::RW | kflags::ACCESS | kflags::UPDATE
        } else {
            kflags::OW | kflags::UPDATE
        }),
        "bitfield" => {
            let mut readonly = true;
            let mut i = 2;
            while i < args.len() {
                let rem = args.len() - i - 1;
                let a = &args[i];
                if eq_ic(a, "get") && rem >= 2 {
                    i += 3;
                } else if (eq_ic(a, "set") || eq_ic(a, "incrby")) && rem >= 3 {
                    readonly = false;
                    break;
                } else if eq_ic(a, "overflow") && rem >= 1 {
                    i += 2;
                } else {
                    readonly = false;
                    break;
                }
            }
            Some(if readonly {
                kflags::RO | kflags::ACCESS
            } else {
                kflags::RW | kflags::ACCESS | kflags::UPDATE
            })
        }
        _ => None,
    }
}

/// A command's ACL categories: its explicit ones plus those Redis derives from its flags.
pub const fn implicit_acl(cmd_flags: u32, explicit: u64) -> u64 {
    let mut cats = explicit;
    if cmd_flags & flags::WRITE != 0 {
        cats |= acl::WRITE;
    }
    // Scripting commands that only read (EVAL_RO, FCALL_RO) are not @read, as in Redis.
    if cmd_flags & flags::READONLY != 0 && cats & acl::SCRIPTING == 0 {
        cats |= acl::READ;
    }
    if cmd_flags & flags::ADMIN != 0 {
        cats |= acl::ADMIN | acl::DANGEROUS;
    }
    if cmd_flags & flags::PUBSUB != 0 {
        cats |= acl::PUBSUB;
    }
    if cmd_flags & flags::FAST != 0 {
        cats |= acl::FAST;
    }
    if cmd_flags & flags::BLOCKING != 0 {
        cats |= acl::BLOCKING;
    }
    if cats & acl::FAST == 0 {
        cats |= acl::SLOW;
    }
    cats
}

/// A family's table: `commands! { group "NAME"; (entry), (entry), ... }` (see the module comment).
#[macro_export]
macro_rules! commands {
    (group $group:literal; $( ( $($entry:tt)* ) ),* $(,)?) => {
        &[ $( $crate::table::command!($group; $($entry)*) ),* ]
    };
}

/// One entry of [`commands!`].
#[macro_export]
macro_rules! command {
    ($group:literal; $name:literal, $arity:expr, [$($flag:ident)*], [$($cat:ident)*], $keys:tt,
        _, $since:literal, $summary:literal $(, $field:ident: $value:expr)* $(,)?) => {
        $crate::table::command!(@spec $group; $name, $arity, [$($flag)*], [$($cat)*], $keys,
            None, $since, $summary $(, $field: $value)*)
    };
    ($group:literal; $name:literal, $arity:expr, [$($flag:ident)*], [$($cat:ident)*], $keys:tt,
        $handler:path, $since:literal, $summary:literal $(, $field:ident: $value:expr)* $(,)?) => {
        $crate::table::command!(@spec $group; $name, $arity, [$($flag)*], [$($cat)*], $keys,
            Some($handler), $since, $summary $(, $field: $value)*)
    };
    (@spec $group:literal; $name:literal, $arity:expr, [$($flag:ident)*], [$($cat:ident)*],
        [$($kind:ident ($($karg:tt)*)),*], $handler:expr, $since:literal, $summary:literal
        $(, $field:ident: $value:expr)*) => {
        $crate::table::CommandSpec {
            $($field: $value,)*
            ..$crate::table::CommandSpec {
                name: $name,
                arity: $arity,
                flags: 0 $(| $crate::table::flags::$flag)*,
                acl: $crate::table::implicit_acl(
                    0 $(| $crate::table::flags::$flag)*,
                    0 $(| $crate::table::acl::$cat)*,
                ),
                keys: &[$($crate::table::key_spec!($kind $($karg)*)),*],
                handler: $handler,
                group: $group,
                since: $since,
                summary: $summary,
                ..$crate::table::CommandSpec::DEFAULT
            }
        }
    };
}

/// One key spec of a [`commands!`] entry; flags are bare [`kflags`] names.
#[macro_export]
macro_rules! key_spec {
    (key $index:literal, $($fl:ident)*) => {
        $crate::table::KeySpec::single($index, 0 $(| $crate::table::kflags::$fl)*)
    };
    (range $index:literal, $last:literal, $step:literal, $($fl:ident)*) => {
        $crate::table::KeySpec::range($index, $last, $step, 0 $(| $crate::table::kflags::$fl)*)
    };
    (keynum $index:literal, $keynumidx:literal, $first:literal, $step:literal, $($fl:ident)*) => {
        $crate::table::KeySpec::keynum(
            $index, $keynumidx, $first, $step, 0 $(| $crate::table::kflags::$fl)*,
        )
    };
    (keyword $kw:literal, $from:literal, $last:literal, $step:literal, $limit:literal,
        $($fl:ident)*) => {
        $crate::table::KeySpec::keyword(
            $kw, $from, $last, $step, $limit, 0 $(| $crate::table::kflags::$fl)*,
        )
    };
    (unknown $($fl:ident)*) => {
        $crate::table::KeySpec::unknown(0 $(| $crate::table::kflags::$fl)*)
    };
}

// Exported at the crate root (macro_export) and reached as `table::commands!` by the families.
pub use crate::{command, commands, key_spec};

#[cfg(test)]
mod tests {
    use super::*;

    fn ping(_: &mut Ctx, _: &Args) {}

    fn first_arg(_: &Args) -> Vec<(usize, u32)> {
        vec![(1, kflags::RO)]
    }

    static SUBS: &[CommandSpec] = commands! { group "server";
        ("sub", 2, [ADMIN LOADING], [], [], ping, "6.0.0", "A subcommand.", tips: &["tip"]),
    };

    static TABLE: &[CommandSpec] = commands! { group "hash";
        ("hget", 3, [READONLY FAST], [HASH], [key(1, RO ACCESS)], ping, "2.0.0", "Reads."),
        ("box", -2, [], [], [], _, "7.0.0", "A container.", complexity: "Depends.",
            subcommands: SUBS, group: "server"),
        ("odd", -2, [WRITE], [KEYSPACE], [range(1, -1, 2, OW UPDATE), keynum(1, 0, 1, 1, RW),
            keyword("STORE", -2, 0, 1, 0, OW), unknown(RO)], ping, "1.0.0", "Odd.",
            getkeys: Some(first_arg)),
    };

    #[test]
    fn entries_fill_every_field() {
        let hget = &TABLE[0];
        assert_eq!(
            (hget.name, hget.arity, hget.group, hget.since),
            ("hget", 3, "hash", "2.0.0")
        );
        assert_eq!(hget.flags, flags::READONLY | flags::FAST);
        assert_eq!(hget.acl, acl::HASH | acl::READ | acl::FAST);
        assert_eq!(hget.complexity, "O(1)");
        assert!(hget.handler.is_some() && hget.getkeys.is_none() && hget.tips.is_empty());
        assert!(matches!(
            hget.keys,
            [KeySpec { flags, begin: BeginSearch::Index(1), find: FindKeys::Range { lastkey: 0, step: 1, limit: 0 } }]
                if *flags == kflags::RO | kflags::ACCESS
        ));

        let container = &TABLE[1];
        assert!(container.handler.is_none());
        assert_eq!(
            (container.group, container.complexity),
            ("server", "Depends.")
        );
        assert_eq!(container.acl, acl::SLOW);
        let sub = &container.subcommands[0];
        assert_eq!(sub.acl, acl::ADMIN | acl::DANGEROUS | acl::SLOW);
        assert_eq!(sub.tips, &["tip"]);

        let odd = &TABLE[2];
        assert_eq!(odd.keys.len(), 4);
        assert!(matches!(
            odd.keys[1].find,
            FindKeys::Keynum {
                keynumidx: 0,
                firstkey: 1,
                step: 1
            }
        ));
        assert!(matches!(
            odd.keys[2].begin,
            BeginSearch::Keyword {
                keyword: "STORE",
                startfrom: -2
            }
        ));
        assert!(matches!(odd.keys[3].begin, BeginSearch::Unknown));
        assert!(odd.getkeys.is_some());
        assert_eq!(odd.acl, acl::KEYSPACE | acl::WRITE | acl::SLOW);
    }

    #[test]
    fn implicit_categories_follow_redis() {
        let c = implicit_acl(flags::WRITE | flags::ADMIN, 0);
        assert_eq!(c, acl::WRITE | acl::ADMIN | acl::DANGEROUS | acl::SLOW);
        // Read-only scripting commands are not @read.
        assert_eq!(
            implicit_acl(flags::READONLY, acl::SCRIPTING),
            acl::SCRIPTING | acl::SLOW
        );
        assert_eq!(implicit_acl(flags::READONLY, 0), acl::READ | acl::SLOW);
        // An explicit @fast is enough to leave out @slow, as in Redis.
        assert_eq!(implicit_acl(0, acl::FAST), acl::FAST);
        assert_eq!(
            implicit_acl(flags::PUBSUB | flags::BLOCKING | flags::FAST, 0),
            acl::PUBSUB | acl::BLOCKING | acl::FAST
        );
        // Deriving twice changes nothing (COMMAND and ACL read the derived value).
        let once = implicit_acl(flags::WRITE, acl::HASH);
        assert_eq!(implicit_acl(flags::WRITE, once), once);
    }
}
