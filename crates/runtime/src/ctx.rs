//! What a command handler sees: the server, its connection's state, the reply buffer, and the
//! time the command started (one clock read per command, as Redis caches `mstime`).

use crate::clients::{cflags, ClientHandle};
use crate::server::Server;
use crate::table::CommandSpec;
use rand::rngs::SmallRng;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tern_engine::ShardGuard;
use tern_resp::Reply;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the next command's reply only.
    SkipNext,
    /// Skipping the current command's reply (was SkipNext).
    Skip,
}

/// Per-connection state that lives on the connection's task.
pub struct Conn {
    pub db: usize,
    pub handle: Arc<ClientHandle>,
    pub authenticated: bool,
    /// The ACL user (None: an internal client, AOF loading or the master's stream, that may
    /// run anything).
    pub user: Option<Arc<crate::acl::AclUser>>,
    /// The rules of `user` as last seen (restricted users only).
    pub acl_cache: crate::acl::RulesCache,
    /// Command-table id of the top-level command being run (what the ACL log's client info
    /// shows for a refusal inside a script).
    pub cur_cmd: usize,
    pub reply_mode: ReplyMode,
    /// Close the connection once the pending replies are written (QUIT, self-KILL).
    pub close_after_reply: bool,
    pub no_touch: bool,
    pub no_evict: bool,
    /// Output other clients send this one (pub/sub messages, MONITOR lines): the connection
    /// drains it. Created the first time the client subscribes or runs MONITOR.
    pub push_rx: Option<crate::push::PushRx>,
    pub push_tx: Option<crate::push::PushTx>,
    /// What this client is subscribed to.
    pub subs: crate::subscriptions::ClientSubs,
    /// Set by a command whose reply is a push (the subscribe family): CLIENT REPLY OFF/SKIP
    /// do not silence it.
    pub keep_reply: bool,
    pub rng: SmallRng,
    /// This thread's counters (connections never move between threads).
    pub stats: Arc<crate::stats::ThreadStats>,
    /// Wall-clock ms commands see as "now"; refreshed per read batch and after slow commands.
    pub now_ms: u64,
    /// When the previous command ended (or the batch began): the next command's start time,
    /// so timing a command costs one clock read.
    pub mark: std::time::Instant,
    /// Set by a blocking handler that found nothing to serve; the connection then waits.
    pub pending_block: Option<crate::blocking::BlockSpec>,
    /// True while this command runs again on behalf of a waiting client (see `blocking`).
    pub serving_blocked: bool,
    /// Inside MULTI/EXEC or a script a blocking command must not block: it times out at once.
    pub deny_blocking: bool,
    /// Keys written while clients were blocked, to be looked at after this command.
    pub ready_keys: std::collections::VecDeque<(usize, Vec<u8>)>,
    /// Set by a handler that found its input huge: the connection runs the command again on a
    /// background thread (see `Ctx::offload`).
    pub pending_offload: bool,
    /// Set by SYNC/PSYNC: once the replies so far are written, the connection becomes a
    /// replica's stream (see `replication`).
    pub pending_sync: Option<crate::replication::SyncKind>,
    /// The background threads an offloaded command runs on.
    pub offload_pool: crate::background::Pool,
    /// True while running on a background thread (never offload twice).
    pub offloaded: bool,
    /// Write-log LSN right after this client's last write that was logged (WAITAOF's target).
    pub woff: u64,
    /// The replication offset after the connection's last logged write (what WAIT waits
    /// for replicas to acknowledge).
    pub repl_woff: u64,
    /// Set when CLIENT PAUSE holds the command being dispatched: the connection waits for the
    /// pause to end, then dispatches it again.
    pub pending_pause: bool,
    /// A network client's connection loop: a command that observes other connections waits
    /// until every thread took in what was already sent, as one event loop would have.
    pub drain_first: bool,
    /// With `pending_pause`: the command waits for that drain, not for a pause.
    pub pending_drain: bool,
    /// FLUSHALL with save points: save the (empty) dataset once the command's atomic unit is
    /// over, before its reply goes out (Redis's flushAllDataAndResetRDB).
    pub save_after: bool,
    /// `appendfsync always`: the log position the replies of the current batch reveal (what
    /// the client wrote or read); they go out once the log is durable up to it.
    pub obs: u64,
    /// The same for commands in databases whose replies need the AOF written, not fsynced
    /// (`db-appendfsync` other than `always` under a global `always`, and the reverse).
    pub obs_written: u64,
    /// The open transaction (after MULTI, until EXEC or DISCARD).
    pub multi: Option<crate::txn::MultiState>,
    /// Cluster mode: ASKING was sent; the next command (or transaction) may use a slot this
    /// node is importing.
    pub asking: bool,
    /// The last transaction's buffers, kept for the next MULTI.
    pub spare_multi: Option<crate::txn::MultiState>,
    /// WATCHed keys.
    pub watch: crate::txn::WatchState,
    /// True while a script's redis.call runs a command (MONITOR shows it as `lua`).
    pub in_script: bool,
    /// The running script command was already shown to MONITOR (before it ran, as Redis
    /// does, so its calls follow it); kept while it moves to a script thread.
    pub script_fed: bool,
    /// Read lookups are not counted (`Ctx::hit`): set for the extra run of a blocking command
    /// right after it starts waiting, which Redis does not make.
    pub quiet_reads: bool,
}

impl Conn {
    pub fn new(
        handle: Arc<ClientHandle>,
        needs_auth: bool,
        stats: Arc<crate::stats::ThreadStats>,
    ) -> Conn {
        use rand::SeedableRng;
        let user = handle.meta.lock().acl_user.clone();
        Conn {
            db: 0,
            handle,
            authenticated: !needs_auth,
            user,
            acl_cache: Default::default(),
            cur_cmd: 0,
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            no_touch: false,
            no_evict: false,
            push_rx: None,
            push_tx: None,
            subs: Default::default(),
            keep_reply: false,
            rng: SmallRng::from_entropy(),
            stats,
            now_ms: tern_engine::clock::now_ms(),
            mark: std::time::Instant::now(),
            pending_block: None,
            serving_blocked: false,
            deny_blocking: false,
            ready_keys: Default::default(),
            pending_offload: false,
            pending_sync: None,
            offload_pool: crate::background::Pool::Idle,
            offloaded: false,
            woff: 0,
            repl_woff: 0,
            save_after: false,
            pending_pause: false,
            drain_first: false,
            pending_drain: false,
            obs: 0,
            obs_written: 0,
            multi: None,
            asking: false,
            spare_multi: None,
            watch: Default::default(),
            in_script: false,
            script_fed: false,
            quiet_reads: false,
        }
    }

    pub fn set_db(&mut self, db: usize) {
        self.db = db;
        self.handle
            .db
            .store(db, std::sync::atomic::Ordering::Relaxed);
    }

    /// Start of a read batch: take the clocks once for the commands that follow.
    /// A connection with no socket for the server's own commands (AOF loading, KEYDB.CRON
    /// jobs): client `id`, no ACL user (it may run anything), never blocking.
    pub fn internal(srv: &crate::server::Server, id: u64) -> Conn {
        let handle = Arc::new(ClientHandle::new(id, String::new(), String::new(), -1));
        let mut conn = Conn::new(handle, false, srv.stats.local());
        conn.deny_blocking = true;
        conn
    }

    pub fn start_batch(&mut self) {
        self.now_ms = tern_engine::clock::now_ms();
        self.mark = std::time::Instant::now();
    }

    /// Record what this connection's state holds (MULTI queue, watched keys, tracking
    /// prefixes) for client eviction, and evict if the clients are over the limit.
    pub fn account_memory(&self, srv: &Server) {
        let mut mem = self.multi.as_ref().map_or(0, |m| m.memory()) + self.watch.memory();
        if self.handle.has_flag(crate::clients::cflags::TRACKING_BCAST) {
            if let Some(t) = srv.tracking.get(self.handle.id) {
                // Redis's estimate: per prefix, a rax node and its child pointers.
                mem += t.prefixes.len() * 32 * 4;
            }
        }
        self.handle
            .state_mem
            .store(mem, std::sync::atomic::Ordering::Relaxed);
        crate::client_eviction::check(srv, &self.handle);
    }

    /// The batch's replies reveal anything logged so far (`appendfsync always` only).
    #[inline]
    pub fn observe_all(&mut self, srv: &Server) {
        if crate::aof::must_wait(srv) {
            self.observe_lsn(srv, srv.propagation.log.appended());
        }
    }

    /// The batch's replies reveal the log up to `lsn`: what they wait for depends on the
    /// database the command ran in (`db-persistence`, `db-appendfsync`).
    #[inline]
    pub fn observe_lsn(&mut self, srv: &Server, lsn: u64) {
        let policies = &srv.db_policies;
        if !policies.any_reply_override() {
            self.obs = self.obs.max(lsn);
            return;
        }
        use crate::db_policy::ReplyWait;
        match policies.reply_wait(self.db, crate::aof::global_always(srv)) {
            ReplyWait::Nothing => {}
            ReplyWait::Written => self.obs_written = self.obs_written.max(lsn),
            ReplyWait::Fsynced => self.obs = self.obs.max(lsn),
        }
    }

    /// Take the log positions the replies written so far wait for: durable up to the first
    /// (see `obs`), written up to the second (see `obs_written`).
    pub fn take_observed(&mut self) -> (u64, u64) {
        (
            std::mem::take(&mut self.obs),
            std::mem::take(&mut self.obs_written),
        )
    }

    pub fn is_monitor(&self) -> bool {
        self.handle.has_flag(cflags::MONITOR)
    }

    /// Have the command being dispatched run again on a background thread of `pool` (see
    /// `Ctx::offload`); false where it cannot move.
    pub fn try_offload(&mut self, pool: crate::background::Pool) -> bool {
        if self.offloaded || self.serving_blocked || self.deny_blocking {
            return false;
        }
        self.pending_offload = true;
        self.offload_pool = pool;
        true
    }

    /// The sending side of this client's push queue, created on first use.
    pub fn push_sender(&mut self) -> crate::push::PushTx {
        if let Some(tx) = &self.push_tx {
            return tx.clone();
        }
        let (tx, rx) = crate::push::channel(self.handle.clone());
        self.push_rx = Some(rx);
        self.push_tx = Some(tx.clone());
        *self.handle.push.lock() = Some(tx.clone());
        tx
    }

    /// True while the client has (P|S)SUBSCRIBEd to anything.
    #[inline]
    pub fn subscribed(&self) -> bool {
        self.subs.total() > 0
    }

    /// Move push output already queued for this client into its reply buffer (so that it goes
    /// out in order with the replies around it, as Redis appends pushes to the same buffer).
    #[inline]
    pub fn drain_pushes(&mut self, srv: &Server, out: &mut Reply) {
        if let Some(rx) = self.push_rx.as_mut() {
            let n = rx.drain_into(&mut out.buf);
            if n > 0 {
                rx.written(n);
                // A keyspace event or an invalidation reveals a write: wait for everything.
                self.observe_all(srv);
            }
            // Shard channels the server dropped (cluster slots gone) leave its list too.
            crate::subscriptions::reconcile_shard(srv, self);
        }
    }
}

pub struct Ctx<'a> {
    pub srv: &'a Arc<Server>,
    pub conn: &'a mut Conn,
    pub out: &'a mut Reply,
    pub now_ms: u64,
    pub cmd: &'static CommandSpec,
}

impl<'a> Ctx<'a> {
    /// Lock the shard owning `key` in the current database.
    #[inline]
    pub fn lock(&self, key: &[u8]) -> (u64, ShardGuard<'a>) {
        let srv: &'a Server = self.srv;
        srv.store.lock(self.conn.db, key)
    }

    /// Look up a key the running command only reads (Redis's lookupKeyRead): `get` for a read
    /// command; for a write command (a STORE variant's sources, COPY's source...) `get_quiet`,
    /// as such a key is never touched for WATCH.
    #[inline]
    pub fn read_key<'s>(
        &self,
        shard: &'s mut tern_engine::ShardData,
        h: u64,
        key: &[u8],
    ) -> Option<&'s mut tern_engine::Entry> {
        if self.cmd.flags & crate::table::flags::WRITE != 0 {
            shard.get_quiet(h, key, self.now_ms)
        } else {
            shard.get(h, key, self.now_ms)
        }
    }

    /// Count a write for `rdb_changes_since_last_save` (and, later, the write log).
    #[inline]
    pub fn dirty(&self, n: u64) {
        self.conn.stats.dirty.add(n);
        crate::propagate::add_dirty(n);
    }

    /// A read lookup of `key` (Redis's lookupKeyRead) that found it or not: counted as a
    /// keyspace hit or miss, and a miss is a `keymiss` event (class `m`), published after the
    /// command's earlier events (the key's `expired` among them). Write lookups call neither.
    /// While `m` is off a miss costs one relaxed load more.
    #[inline]
    pub fn hit(&self, found: bool, key: &[u8]) {
        if self.hit_quiet(found) && !found {
            tern_engine::events::keymiss(self.conn.db, key);
        }
    }

    /// Take back the read lookups `hit` counted (`found`, in order) in a command that is about
    /// to run again on a background thread (`offload`), where it reads those keys again.
    pub fn unhit(&self, found: &[bool]) {
        if self.conn.quiet_reads {
            return;
        }
        let s = &self.conn.stats;
        let misses = found.iter().filter(|&&f| !f).count();
        s.keyspace_hits.sub((found.len() - misses) as u64);
        s.keyspace_misses.sub(misses as u64);
        tern_engine::events::forget_keymiss(misses);
    }

    /// A read lookup Redis makes with LOOKUP_NONOTIFY (OBJECT, DEBUG OBJECT): counted as a hit
    /// or miss, never a `keymiss` event. False when this run's reads are not counted.
    #[inline]
    pub fn hit_quiet(&self, found: bool) -> bool {
        if self.conn.quiet_reads {
            return false;
        }
        let s = &self.conn.stats;
        if found {
            s.keyspace_hits.add(1);
        } else {
            s.keyspace_misses.add(1);
        }
        true
    }

    /// Record an access on an entry's LRU/LFU clock, unless the client asked for NO-TOUCH.
    pub fn touch(&mut self, e: &mut tern_engine::Entry) {
        if self.conn.no_touch && !self.cmd.name.eq_ignore_ascii_case("touch") {
            return;
        }
        let hot = &self.srv.config.hot;
        if hot.lfu_policy.load(std::sync::atomic::Ordering::Relaxed) {
            let lf = hot
                .lfu_log_factor
                .load(std::sync::atomic::Ordering::Relaxed);
            let dt = hot
                .lfu_decay_time
                .load(std::sync::atomic::Ordering::Relaxed);
            e.access =
                tern_engine::clock::lfu_touch(e.access, lf, dt, self.now_ms, &mut self.conn.rng);
        } else {
            e.access = tern_engine::clock::lru_clock_at(self.now_ms);
        }
    }

    pub fn error(&mut self, msg: &str) {
        self.out.error(msg);
    }

    /// Ask to wait for one of `spec.keys` (see `blocking`). Where blocking is not allowed
    /// (MULTI/EXEC, scripts) the client gets the timeout reply at once, as in Redis.
    pub fn block(&mut self, spec: crate::blocking::BlockSpec) {
        if self.conn.deny_blocking && !self.conn.serving_blocked {
            spec.timeout_reply.write(self.srv, self.out);
            return;
        }
        self.conn.pending_block = Some(spec);
    }

    /// Called by a handler about to do a lot of work (a ZINTERSTORE over huge sets): returns
    /// true when the command will instead run again on a background thread, so that the
    /// connection's worker thread keeps serving its other clients meanwhile. The handler must
    /// then return at once, having replied nothing and changed nothing. Returns false where
    /// the command cannot move (already moved, serving a blocked client, inside MULTI or a
    /// script), and the handler just goes on.
    pub fn offload(&mut self) -> bool {
        self.offload_to(crate::background::Pool::Idle)
    }

    /// `offload` onto the threads of `pool`.
    pub fn offload_to(&mut self, pool: crate::background::Pool) -> bool {
        self.conn.try_offload(pool)
    }

    /// True while this command runs again for a client that was waiting on a key.
    pub fn serving_blocked(&self) -> bool {
        self.conn.serving_blocked
    }

    /// A keyspace event (`class` from `notify`, Redis's event name) for `key` in the current
    /// database: published as `notify-keyspace-events` asks. Costs one relaxed load when that
    /// class is off.
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.notify_db(class, event, key, self.conn.db);
    }

    /// `notify` for a key in another database (MOVE, COPY ... DB).
    #[inline]
    pub fn notify_db(&self, class: u32, event: &str, key: &[u8], db: usize) {
        let flags = self.srv.config.hot.notify_flags.load(Relaxed);
        if flags & class != 0 {
            crate::notify::notify_keyspace(self.srv, db, class, event, key);
        }
    }
}

/// The HELP reply every container shares: a header line, the entries, then HELP itself.
pub fn reply_help(ctx: &mut Ctx, cmd: &str, lines: &[&str]) {
    let out = &mut *ctx.out;
    out.array(lines.len() + 3);
    out.simple(
        format!("{cmd} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:").as_bytes(),
    );
    for l in lines {
        out.simple(l.as_bytes());
    }
    out.simple(b"HELP");
    out.simple(b"    Print this help.");
}
