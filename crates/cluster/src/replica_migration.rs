//! Replica migration (Redis's `clusterHandleSlaveMigration`): when a master serving slots has
//! lost all its working replicas, one replica of the master with the most replicas moves to it,
//! so a later failure of the orphan still has someone to fail over to. The master it leaves
//! must keep more than `cluster-migration-barrier` working replicas, and among all candidates
//! the replica with the smallest id goes, so two replicas never move for one orphan.

use crate::node::{NodeFlags, NodeId};
use crate::state::{ClusterState, Health, LogLevel};
use std::collections::BTreeMap;

/// An orphaned master waits this long (ms) before a replica migrates to it.
const MIGRATION_DELAY: u64 = 5000;

/// Since when each master has been orphaned.
#[derive(Debug, Default)]
pub(crate) struct Orphans {
    since: BTreeMap<NodeId, u64>,
}

impl ClusterState {
    /// Replicas of `master` that are not failing.
    fn working_replicas(&self, master: &NodeId) -> usize {
        self.nodes.get(master).map_or(0, |m| {
            m.replicas
                .iter()
                .filter(|r| self.nodes.get(r).is_some_and(|n| !n.failed()))
                .count()
        })
    }

    /// Part of a replica's cron: migrate to an orphaned master if this replica is the one to go.
    pub(crate) fn replica_migration_cron(&mut self, now: u64) {
        if self.me().is_master() {
            return;
        }
        let (mut orphaned, mut max_replicas, mut mine) = (0, 0, 0);
        let my_master = self.me().master;
        for n in self.nodes.values() {
            if n.is_master() && !n.failed() {
                let ok = self.working_replicas(&n.id);
                if ok == 0 && !n.slots.is_empty() && n.flags.contains(NodeFlags::MIGRATE_TO) {
                    orphaned += 1;
                }
                max_replicas = max_replicas.max(ok);
                if my_master == Some(n.id) {
                    mine = ok;
                }
            }
        }
        if orphaned > 0
            && max_replicas >= 2
            && mine == max_replicas
            && self.config.allow_replica_migration
        {
            self.migrate_if_chosen(max_replicas, now);
        }
    }

    fn migrate_if_chosen(&mut self, max_replicas: usize, now: u64) {
        if self.health() != Health::Ok {
            return;
        }
        let Some(my_master) = self.me().master else {
            return;
        };
        if self.working_replicas(&my_master) <= self.config.migration_barrier {
            return;
        }
        let mut candidate = self.myself();
        let mut target = None;
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            let n = &self.nodes[&id];
            let ok = if n.is_master() {
                self.working_replicas(&id)
            } else {
                0
            };
            let is_orphan =
                n.is_master() && !n.failed() && n.flags.contains(NodeFlags::MIGRATE_TO) && ok == 0;
            if is_orphan {
                if target.is_none() && !n.slots.is_empty() {
                    target = Some(id);
                }
                self.orphans.since.entry(id).or_insert(now);
            } else {
                self.orphans.since.remove(&id);
            }
            if ok == max_replicas {
                for r in &self.nodes[&id].replicas {
                    if *r < candidate {
                        candidate = *r;
                    }
                }
            }
        }
        let Some(target) = target else { return };
        let since = self.orphans.since.get(&target).copied().unwrap_or(now);
        if candidate == self.myself() && now.saturating_sub(since) > MIGRATION_DELAY {
            self.log(
                LogLevel::Notice,
                format!("Migrating to orphaned master {target}"),
            );
            self.set_my_master(target);
        }
    }
}
