//! Per-database policies (`Server::db_policies`): each database may have its own memory quota
//! and eviction policy, be left out of persistence, and have its own `appendfsync`. The
//! config parameters (`config::db_overrides`) are mirrored here into per-database atomics,
//! read on the hot paths: the OOM check before a command, what a write appends to the AOF,
//! and what its reply waits for. A database without an override follows the global
//! `maxmemory-policy` and `appendfsync`; the global `maxmemory` still limits the whole server.

use crate::config::{db_pairs, Config, MAXMEMORY_POLICIES};
use crate::server::Server;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use tern_engine::snapshot::{KeyEncoder, SnapshotSink};

/// No override: the global setting applies.
const INHERIT: u32 = u32::MAX;
/// `noeviction`'s number in `MAXMEMORY_POLICIES`.
const NOEVICTION: u32 = 7;

/// `db-appendfsync` values (0: no override).
const FSYNC_INHERIT: u8 = 0;
const FSYNC_ALWAYS: u8 = 1;
const FSYNC_EVERYSEC: u8 = 2;
const FSYNC_NO: u8 = 3;

/// One database's overrides.
struct DbPolicy {
    /// Quota in bytes (0: none).
    maxmemory: AtomicU64,
    /// Index into `MAXMEMORY_POLICIES`' numbers, or INHERIT.
    eviction: AtomicU32,
    /// Written to RDB files, the AOF and AOF rewrites.
    persisted: AtomicBool,
    fsync: AtomicU8,
}

impl Default for DbPolicy {
    fn default() -> Self {
        DbPolicy {
            maxmemory: AtomicU64::new(0),
            eviction: AtomicU32::new(INHERIT),
            persisted: AtomicBool::new(true),
            fsync: AtomicU8::new(FSYNC_INHERIT),
        }
    }
}

/// What a reply to a command in a database waits for before it goes out (AOF on).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReplyWait {
    /// Nothing: the database is not persisted.
    Nothing,
    /// Its writes written to the AOF file (the kernel has them).
    Written,
    /// Its writes fsynced (`appendfsync always`).
    Fsynced,
}

pub struct DbPolicies {
    dbs: Box<[DbPolicy]>,
    /// Some database has a quota (the only check most servers pay per command).
    any_quota: AtomicBool,
    /// Some database is not persisted.
    any_unpersisted: AtomicBool,
    /// Some database has its own appendfsync.
    any_fsync: AtomicBool,
    /// Some database has `db-appendfsync always` (the AOF writer then fsyncs every batch).
    any_always: AtomicBool,
}

impl DbPolicies {
    /// Policies for `databases` databases, as the config says now.
    pub fn new(databases: usize, config: &Config) -> DbPolicies {
        let p = DbPolicies {
            dbs: (0..databases).map(|_| DbPolicy::default()).collect(),
            any_quota: AtomicBool::new(false),
            any_unpersisted: AtomicBool::new(false),
            any_fsync: AtomicBool::new(false),
            any_always: AtomicBool::new(false),
        };
        for name in crate::config::DB_OVERRIDE_PARAMS {
            p.apply(name, &config.get(name).unwrap_or_default());
        }
        p
    }

    /// Register the CONFIG SET hooks that keep these atomics in step with the config
    /// (`db-persistence`'s, which also acts on the AOF, is `watch_persistence`).
    pub fn watch_config(self: &Arc<Self>, config: &Config) {
        for name in crate::config::DB_OVERRIDE_PARAMS {
            if *name == "db-persistence" {
                continue;
            }
            let me = self.clone();
            config.set_apply_hook(
                name,
                Box::new(move |v| {
                    me.apply(name, v);
                    Ok(())
                }),
            );
        }
    }

    /// Mirror the canonical value of one `db-*` parameter (every database it does not list
    /// goes back to no override).
    pub fn apply(&self, name: &str, canonical: &str) {
        let mut listed = vec![None; self.dbs.len()];
        for (db, setting) in db_pairs(canonical) {
            if let Some(slot) = listed.get_mut(db) {
                *slot = Some(setting);
            }
        }
        for (d, setting) in self.dbs.iter().zip(&listed) {
            match name {
                "db-maxmemory" => d
                    .maxmemory
                    .store(setting.and_then(|s| s.parse().ok()).unwrap_or(0), Relaxed),
                "db-maxmemory-policy" => d.eviction.store(
                    setting
                        .and_then(|s| MAXMEMORY_POLICIES.iter().find(|(n, _)| *n == s))
                        .map_or(INHERIT, |(_, i)| *i as u32),
                    Relaxed,
                ),
                "db-persistence" => d.persisted.store(*setting != Some("no"), Relaxed),
                "db-appendfsync" => d.fsync.store(
                    match *setting {
                        Some("always") => FSYNC_ALWAYS,
                        Some("everysec") => FSYNC_EVERYSEC,
                        Some("no") => FSYNC_NO,
                        _ => FSYNC_INHERIT,
                    },
                    Relaxed,
                ),
                _ => {}
            }
        }
        let any = |f: &dyn Fn(&DbPolicy) -> bool| self.dbs.iter().any(f);
        self.any_quota
            .store(any(&|d| d.maxmemory.load(Relaxed) > 0), Relaxed);
        self.any_unpersisted
            .store(any(&|d| !d.persisted.load(Relaxed)), Relaxed);
        self.any_fsync
            .store(any(&|d| d.fsync.load(Relaxed) != FSYNC_INHERIT), Relaxed);
        self.any_always
            .store(any(&|d| d.fsync.load(Relaxed) == FSYNC_ALWAYS), Relaxed);
    }

    pub fn databases(&self) -> usize {
        self.dbs.len()
    }

    /// `db`'s quota in bytes (0: none).
    #[inline]
    pub fn quota(&self, db: usize) -> u64 {
        if !self.any_quota.load(Relaxed) {
            return 0;
        }
        self.dbs.get(db).map_or(0, |d| d.maxmemory.load(Relaxed))
    }

    /// Some database has a quota.
    #[inline]
    pub fn any_quota(&self) -> bool {
        self.any_quota.load(Relaxed)
    }

    /// `db`'s eviction policy (index into `MAXMEMORY_POLICIES`' numbers), given the global one.
    pub fn eviction_policy(&self, db: usize, global: u32) -> u32 {
        match self.dbs.get(db).map(|d| d.eviction.load(Relaxed)) {
            Some(p) if p != INHERIT => p,
            _ => global,
        }
    }

    /// `db` has `noeviction` of its own: the global `maxmemory` does not evict its keys either.
    pub fn never_evicted(&self, db: usize) -> bool {
        self.dbs
            .get(db)
            .is_some_and(|d| d.eviction.load(Relaxed) == NOEVICTION)
    }

    /// `db`'s writes go to RDB files and the AOF.
    #[inline]
    pub fn persisted(&self, db: usize) -> bool {
        !self.any_unpersisted.load(Relaxed)
            || self.dbs.get(db).is_none_or(|d| d.persisted.load(Relaxed))
    }

    /// Some database has `db-appendfsync always`.
    #[inline]
    pub fn any_always(&self) -> bool {
        self.any_always.load(Relaxed)
    }

    /// Some database's replies wait differently from the global `appendfsync`'s.
    #[inline]
    pub fn any_reply_override(&self) -> bool {
        self.any_fsync.load(Relaxed) || self.any_unpersisted.load(Relaxed)
    }

    /// What a reply to a command run in `db` waits for, under the global `appendfsync`
    /// (`global_always`).
    #[inline]
    pub fn reply_wait(&self, db: usize, global_always: bool) -> ReplyWait {
        if !self.persisted(db) {
            return ReplyWait::Nothing;
        }
        let own = if self.any_fsync.load(Relaxed) {
            self.dbs
                .get(db)
                .map_or(FSYNC_INHERIT, |d| d.fsync.load(Relaxed))
        } else {
            FSYNC_INHERIT
        };
        let always = match own {
            FSYNC_INHERIT => global_always,
            o => o == FSYNC_ALWAYS,
        };
        if always {
            ReplyWait::Fsynced
        } else {
            ReplyWait::Written
        }
    }
}

/// CONFIG SET db-persistence: when the set of persisted databases changes with the AOF on,
/// its files no longer describe them (a database taken in has keys the AOF never got, one left
/// out still has its old ones there), so a rewrite is scheduled; the cron starts it.
pub fn watch_persistence(srv: &Arc<Server>) {
    let s = Arc::downgrade(srv);
    srv.config.set_apply_hook(
        "db-persistence",
        Box::new(move |v| {
            let srv = s.upgrade().ok_or("shutting down")?;
            let policies = &srv.db_policies;
            let persisted = || -> Vec<bool> {
                (0..policies.databases())
                    .map(|db| policies.persisted(db))
                    .collect()
            };
            let before = persisted();
            policies.apply("db-persistence", v);
            if before != persisted() && crate::aof::enabled(&srv) {
                crate::log::notice("db-persistence changed: scheduling an AOF rewrite");
                srv.aof.rewrite_scheduled.store(true, Relaxed);
            }
            Ok(())
        }),
    );
}

/// A snapshot sink for persistence (RDB files, AOF rewrites): leaves out the databases
/// excluded by `db-persistence no`. Replication's snapshots do not use it: replicas get every
/// database.
pub struct Persisted<S> {
    pub inner: S,
    excluded: Box<[bool]>,
}

impl<S> Persisted<S> {
    /// Wrap `inner`, excluding what `policies` exclude at this moment (the cut).
    pub fn new(policies: &DbPolicies, inner: S) -> Persisted<S> {
        Persisted {
            inner,
            excluded: (0..policies.databases())
                .map(|db| !policies.persisted(db))
                .collect(),
        }
    }
}

impl<S: SnapshotSink> SnapshotSink for Persisted<S> {
    fn encoder(&self) -> Arc<dyn KeyEncoder> {
        self.inner.encoder()
    }

    fn wants_db(&self, db: usize) -> bool {
        !self.excluded.get(db).copied().unwrap_or(false) && self.inner.wants_db(db)
    }

    fn db_sizes(&mut self, sizes: &[(u64, u64)]) {
        self.inner.db_sizes(sizes)
    }

    fn records(&mut self, db: usize, bytes: &[u8], keys: u64) {
        self.inner.records(db, bytes, keys)
    }
}
