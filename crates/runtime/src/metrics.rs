//! The Prometheus text exposition of the server's state (served by the `metrics-port`
//! listener), named and labelled as oliver006/redis_exporter names INFO's fields so existing
//! dashboards work, plus tern's per-thread figures under `tern_`. Read from the same counters
//! INFO reads, never from INFO's text.

use crate::clients::cflags;
use crate::info_sections::CommandTotals;
use crate::server::Server;
use crate::stats::Histogram;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

/// The exposition's content type (text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Writes one metric family: HELP and TYPE once, then its samples.
struct Out {
    text: String,
}

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = write!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }

    /// A family with one unlabelled sample.
    fn one(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }

    /// Unlabelled families copied from INFO fields: (metric, INFO field, value), helped as
    /// the exporter helps them ("<field> metric").
    fn info_fields(&mut self, kind: &str, rows: &[(&str, &str, f64)]) {
        for (name, field, value) in rows {
            self.one(name, kind, &format!("{field} metric"), *value);
        }
    }
}

/// Label values escape backslash, double quote and newline.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub fn render(srv: &Server) -> String {
    let mut o = Out {
        text: String::with_capacity(16 * 1024),
    };
    let role = if crate::master_link::info_lines(srv).is_some() {
        "slave"
    } else {
        "master"
    };
    o.one(
        "redis_up",
        "gauge",
        "Information about the Redis instance",
        1.0,
    );
    o.family(
        "redis_instance_info",
        "gauge",
        "Information about the Redis instance",
    );
    o.sample(
        "redis_instance_info",
        &[
            ("redis_version", crate::REDIS_VERSION),
            ("redis_mode", "standalone"),
            ("role", role),
            ("tcp_port", &srv.tcp_port.load(Relaxed).to_string()),
            ("process_id", &std::process::id().to_string()),
            ("run_id", &srv.run_id),
        ],
        1.0,
    );
    o.one(
        "redis_uptime_in_seconds",
        "gauge",
        "uptime_in_seconds metric",
        srv.started.elapsed().as_secs() as f64,
    );
    o.one(
        "redis_start_time_seconds",
        "gauge",
        "Start time of the Redis instance since unix epoch in seconds.",
        srv.started_unix as f64,
    );
    clients(srv, &mut o);
    memory(srv, &mut o);
    persistence(srv, &mut o);
    stats(srv, &mut o);
    replication(srv, &mut o, role);
    commands(srv, &mut o);
    keyspace(srv, &mut o);
    threads(srv, &mut o);
    o.text
}

fn clients(srv: &Server, o: &mut Out) {
    // The same counting as INFO clients.
    let all = srv.clients.all();
    let count = |f: u32| all.iter().filter(|c| c.has_flag(f)).count() as f64;
    let (_, blocking_keys, _) = srv.blocking.counts();
    o.info_fields(
        "gauge",
        &[
            (
                "redis_connected_clients",
                "connected_clients",
                all.len() as f64 - count(cflags::REPLICA),
            ),
            (
                "redis_blocked_clients",
                "blocked_clients",
                count(cflags::BLOCKED),
            ),
            (
                "redis_tracking_clients",
                "tracking_clients",
                count(cflags::TRACKING),
            ),
            (
                "redis_max_clients",
                "maxclients",
                srv.config.hot.maxclients.load(Relaxed) as f64,
            ),
            (
                "redis_total_blocking_keys",
                "total_blocking_keys",
                blocking_keys as f64,
            ),
        ],
    );
}

fn memory(srv: &Server, o: &mut Out) {
    let m = crate::info_sections::memory_figures(srv);
    o.info_fields(
        "gauge",
        &[
            ("redis_memory_used_bytes", "used_memory", m.used as f64),
            (
                "redis_memory_used_rss_bytes",
                "used_memory_rss",
                m.rss as f64,
            ),
            (
                "redis_memory_used_peak_bytes",
                "used_memory_peak",
                m.peak as f64,
            ),
            (
                "redis_memory_used_startup_bytes",
                "used_memory_startup",
                m.startup as f64,
            ),
            (
                "redis_memory_max_bytes",
                "maxmemory",
                srv.config.hot.maxmemory.load(Relaxed) as f64,
            ),
            (
                "redis_mem_clients_normal",
                "mem_clients_normal",
                m.clients_normal as f64,
            ),
        ],
    );
}

fn persistence(srv: &Server, o: &mut Out) {
    let aof = &srv.aof;
    let rdb = &srv.rdb;
    let dirty = srv
        .dirty_total()
        .saturating_sub(srv.dirty_at_save.load(Relaxed));
    let flag = |b: &std::sync::atomic::AtomicBool| if b.load(Relaxed) { 1.0 } else { 0.0 };
    o.info_fields(
        "gauge",
        &[
            ("redis_loading_dump_file", "loading", flag(&rdb.loading)),
            (
                "redis_rdb_changes_since_last_save",
                "rdb_changes_since_last_save",
                dirty as f64,
            ),
            (
                "redis_rdb_bgsave_in_progress",
                "rdb_bgsave_in_progress",
                flag(&rdb.bgsave_in_progress),
            ),
            (
                "redis_rdb_last_save_timestamp_seconds",
                "rdb_last_save_time",
                srv.lastsave.load(Relaxed) as f64,
            ),
            (
                "redis_rdb_last_bgsave_status",
                "rdb_last_bgsave_status",
                flag(&rdb.last_bgsave_ok),
            ),
            (
                "redis_rdb_last_bgsave_duration_sec",
                "rdb_last_bgsave_time_sec",
                rdb.last_bgsave_time_sec.load(Relaxed) as f64,
            ),
            ("redis_aof_enabled", "aof_enabled", flag(&aof.enabled)),
            (
                "redis_aof_rewrite_in_progress",
                "aof_rewrite_in_progress",
                flag(&aof.rewrite_in_progress),
            ),
            (
                "redis_aof_rewrite_scheduled",
                "aof_rewrite_scheduled",
                flag(&aof.rewrite_scheduled),
            ),
            (
                "redis_aof_last_bgrewrite_status",
                "aof_last_bgrewrite_status",
                flag(&aof.last_bgrewrite_ok),
            ),
            (
                "redis_aof_last_write_status",
                "aof_last_write_status",
                flag(&aof.last_write_ok),
            ),
        ],
    );
    o.info_fields(
        "counter",
        &[(
            "redis_rdb_saves_total",
            "rdb_saves",
            rdb.saves.load(Relaxed) as f64,
        )],
    );
}

fn stats(srv: &Server, o: &mut Out) {
    let st = &srv.stats;
    let (channels, patterns, _) = srv.pubsub.counts();
    o.info_fields(
        "counter",
        &[
            (
                "redis_connections_received_total",
                "total_connections_received",
                srv.clients.total_connections.load(Relaxed) as f64,
            ),
            (
                "redis_commands_processed_total",
                "total_commands_processed",
                st.sum(|t| t.commands_processed.get()) as f64,
            ),
            (
                "redis_net_input_bytes_total",
                "total_net_input_bytes",
                st.sum(|t| t.net_input_bytes.get()) as f64,
            ),
            (
                "redis_net_output_bytes_total",
                "total_net_output_bytes",
                st.sum(|t| t.net_output_bytes.get()) as f64,
            ),
            (
                "redis_rejected_connections_total",
                "rejected_connections",
                srv.clients.rejected_connections.load(Relaxed) as f64,
            ),
            (
                "redis_expired_keys_total",
                "expired_keys",
                srv.store.expired_keys_total() as f64,
            ),
            (
                "redis_evicted_keys_total",
                "evicted_keys",
                st.sum(|t| t.evicted_keys.get()) as f64,
            ),
            (
                "redis_keyspace_hits_total",
                "keyspace_hits",
                st.sum(|t| t.keyspace_hits.get()) as f64,
            ),
            (
                "redis_keyspace_misses_total",
                "keyspace_misses",
                st.sum(|t| t.keyspace_misses.get()) as f64,
            ),
            (
                "redis_total_error_replies",
                "total_error_replies",
                st.sum(|t| t.total_error_replies.get()) as f64,
            ),
            (
                "redis_sync_full_total",
                "sync_full",
                srv.replicas.sync_full.load(Relaxed) as f64,
            ),
        ],
    );
    o.info_fields(
        "gauge",
        &[
            ("redis_pubsub_channels", "pubsub_channels", channels as f64),
            ("redis_pubsub_patterns", "pubsub_patterns", patterns as f64),
        ],
    );
    o.family(
        "redis_errors_total",
        "counter",
        "Total number of errors per error type",
    );
    for (code, count) in srv.stats.errors.lock().iter() {
        o.sample("redis_errors_total", &[("err", code)], *count as f64);
    }
}

fn replication(srv: &Server, o: &mut Out, role: &str) {
    let rows = crate::replication::replica_rows(srv);
    o.one(
        "redis_connected_slaves",
        "gauge",
        "connected_slaves metric",
        rows.len() as f64,
    );
    let offset = match crate::master_link::info_lines(srv) {
        Some((_, _, off)) => off,
        None => srv.propagation.log.repl_offset(),
    };
    o.one(
        "redis_master_repl_offset",
        "gauge",
        "master_repl_offset metric",
        offset as f64,
    );
    o.one(
        "redis_replication_role_is_master",
        "gauge",
        "tern: 1 on a master, 0 on a replica",
        if role == "master" { 1.0 } else { 0.0 },
    );
    type Get = fn(&crate::replication::ReplicaRow) -> f64;
    let families: [(&str, &str, Get); 2] = [
        (
            "redis_connected_slave_offset_bytes",
            "Offset of connected slave",
            |r| r.offset as f64,
        ),
        (
            "redis_connected_slave_lag_seconds",
            "Lag of connected slave",
            |r| r.lag as f64,
        ),
    ];
    for (name, help, get) in families {
        o.family(name, "gauge", help);
        for r in &rows {
            let port = r.port.to_string();
            let labels = [
                ("slave_ip", r.ip.as_str()),
                ("slave_port", port.as_str()),
                ("slave_state", r.state),
            ];
            o.sample(name, &labels, get(r));
        }
    }
}

/// Per command, as INFO commandstats and latencystats: calls, time, rejected and failed
/// calls, and the latency percentiles as a summary.
fn commands(srv: &Server, o: &mut Out) {
    let rows: Vec<CommandTotals> = crate::info_sections::command_totals(srv, true)
        .into_iter()
        .filter(|r| r.calls > 0 || r.rejected > 0 || r.failed > 0)
        .collect();
    type Get = fn(&CommandTotals) -> f64;
    let families: [(&str, &str, Get); 4] = [
        (
            "redis_commands_total",
            "Total number of calls per command",
            |r| r.calls as f64,
        ),
        (
            "redis_commands_duration_seconds_total",
            "Total amount of time in seconds spent per command",
            |r| r.usec as f64 / 1e6,
        ),
        (
            "redis_commands_rejected_calls_total",
            "Total number of errors prior command execution per command",
            |r| r.rejected as f64,
        ),
        (
            "redis_commands_failed_calls_total",
            "Total number of errors within command execution per command",
            |r| r.failed as f64,
        ),
    ];
    for (name, help, get) in families {
        o.family(name, "counter", help);
        for r in &rows {
            o.sample(name, &[("cmd", &r.name)], get(r));
        }
    }
    if !srv.config.hot.latency_tracking.load(Relaxed) {
        return;
    }
    let percentiles = crate::info_sections::latency_percentiles(srv);
    o.family(
        "redis_latency_percentiles_usec",
        "summary",
        "A summary of latency percentile distribution per command",
    );
    for r in &rows {
        let Some(h) = &r.latency else { continue };
        for (_, p) in &percentiles {
            let q = format!("{}", (p * 1e4).round() / 1e6);
            o.sample(
                "redis_latency_percentiles_usec",
                &[("cmd", &r.name), ("quantile", &q)],
                Histogram::percentile(h, *p) as f64,
            );
        }
        o.sample(
            "redis_latency_percentiles_usec_sum",
            &[("cmd", &r.name)],
            r.usec as f64,
        );
        o.sample(
            "redis_latency_percentiles_usec_count",
            &[("cmd", &r.name)],
            r.calls as f64,
        );
    }
}

fn keyspace(srv: &Server, o: &mut Out) {
    let dbs: Vec<(usize, usize, usize)> = (0..srv.store.databases())
        .map(|db| {
            let (keys, expires) = srv.store.db_stats(db);
            (db, keys, expires)
        })
        .filter(|&(_, k, e)| k > 0 || e > 0)
        .collect();
    let names: Vec<String> = dbs.iter().map(|(db, _, _)| format!("db{db}")).collect();
    o.family("redis_db_keys", "gauge", "Total number of keys by DB");
    for (n, (_, keys, _)) in names.iter().zip(&dbs) {
        o.sample("redis_db_keys", &[("db", n)], *keys as f64);
    }
    o.family(
        "redis_db_keys_expiring",
        "gauge",
        "Total number of expiring keys by DB",
    );
    for (n, (_, _, expires)) in names.iter().zip(&dbs) {
        o.sample("redis_db_keys_expiring", &[("db", n)], *expires as f64);
    }
    // INFO keyspace reports avg_ttl=0 (tern keeps no TTL average yet): the same here.
    o.family("redis_db_avg_ttl_seconds", "gauge", "Avg TTL in seconds");
    for n in &names {
        o.sample("redis_db_avg_ttl_seconds", &[("db", n)], 0.0);
    }
}

/// tern's own: what each worker thread has done (its share of the load).
fn threads(srv: &Server, o: &mut Out) {
    let threads = srv.stats.threads();
    let per: Vec<(String, &std::sync::Arc<crate::stats::ThreadStats>)> = threads
        .iter()
        .enumerate()
        .map(|(i, t)| (i.to_string(), t))
        .collect();
    type Get = fn(&crate::stats::ThreadStats) -> u64;
    let families: [(&str, &str, Get); 4] = [
        (
            "tern_thread_commands_processed_total",
            "Commands run by each worker thread",
            |t| t.commands_processed.get(),
        ),
        (
            "tern_thread_net_input_bytes_total",
            "Bytes read by each worker thread",
            |t| t.net_input_bytes.get(),
        ),
        (
            "tern_thread_net_output_bytes_total",
            "Bytes written by each worker thread",
            |t| t.net_output_bytes.get(),
        ),
        (
            "tern_thread_commands_duration_seconds_total",
            "Time spent running commands on each worker thread",
            |t| t.cmds.iter().map(|c| c.usec.get()).sum(),
        ),
    ];
    for (name, help, get) in families {
        o.family(name, "counter", help);
        for (i, t) in &per {
            let v = get(t);
            let v = if name.ends_with("seconds_total") {
                v as f64 / 1e6
            } else {
                v as f64
            };
            o.sample(name, &[("thread", i)], v);
        }
    }
    o.one(
        "tern_threads",
        "gauge",
        "Worker threads serving clients",
        srv.threads as f64,
    );
}
