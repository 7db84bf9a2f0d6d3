//! Running one command: lookup, arity and auth checks, the handler, then the bookkeeping Redis
//! does after every call (command stats, error stats, slow log, latency, MONITOR feed).

use crate::args::Args;
use crate::clients::cflags;
use crate::ctx::{Conn, Ctx, ReplyMode};
use crate::registry::CmdEntry;
use crate::server::{Server, SlowlogEntry};
use crate::table::{flags, KeyShape};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;
use tern_resp::Reply;

/// Execute one parsed command and append its reply to `out`.
pub fn execute(srv: &Arc<Server>, conn: &mut Conn, out: &mut Reply, args: &Args) {
    if args.is_empty() {
        return;
    }
    // Cluster mode: the slot check below may keep its key's hash for this command's lookup;
    // that hash must not outlive the command (whatever way it ends).
    struct ForgetCheckedKey;
    impl Drop for ForgetCheckedKey {
        fn drop(&mut self) {
            tern_engine::hash::forget_checked_key();
        }
    }
    let _checked_key = ForgetCheckedKey;
    // DEBUG SLEEP elsewhere: nothing runs until it ends.
    srv.world.wait_while_stopped();
    // Over maxmemory: evict first (unless a script is busy), as Redis does for every command.
    let oom = (srv.config.hot.maxmemory.load(Relaxed) > 0 || srv.db_policies.any_quota())
        && crate::lua::busy_error(srv).is_none()
        && crate::evict::before_command(srv, conn);
    if srv.tracking.active() {
        // A lowered tracking-table-max-keys applies before the next command, queued or not;
        // the invalidations it and evictions cause precede the command's reply.
        crate::tracking::enforce_limit(srv);
        conn.drain_pushes(srv, out);
    }
    let mark = out.buf.len();
    let mode_before = conn.reply_mode;
    if conn.reply_mode == ReplyMode::SkipNext {
        conn.reply_mode = ReplyMode::Skip;
    }
    out.errors = 0;
    let mut resolved = resolve(srv, conn, out, args, false);
    if let Ok(entry) = resolved {
        if entry.spec.name == "exec"
            && srv.cluster.get().is_some()
            && exec_redirects(srv, conn, out, args, entry)
        {
            resolved = Err(Some(entry));
        }
    }
    if let Ok(e) = resolved {
        conn.cur_cmd = e.id;
    }
    // CLIENT LIST shows the command a client runs, blocks in or waits to run (Redis sets
    // its lastcmd as soon as the command is looked up).
    let shown = match resolved {
        Ok(e) | Err(Some(e)) => e.id + 1,
        Err(None) => 0,
    };
    conn.handle.last_cmd.store(shown, Relaxed);
    match resolved {
        Ok(entry) if oom && crate::evict::refuses(srv, conn, entry.spec, args) => {
            crate::txn::reject(srv, conn, out, entry.spec, crate::evict::OOM_ERROR);
            record_errors(srv, conn, out, Some(entry), true)
        }
        Ok(entry)
            if entry.spec.flags & flags::ALLOW_BUSY == 0 && is_busy(srv, conn, out, entry) =>
        {
            record_errors(srv, conn, out, Some(entry), true)
        }
        // CLIENT PAUSE: the client waits, then sends the command again (after the command's
        // own checks, before it is queued or run, as Redis's processCommand).
        Ok(entry)
            if srv
                .pause
                .active()
                .is_some_and(|all| crate::pause::holds(srv, conn, entry.spec, args, all)) =>
        {
            conn.pending_pause = true;
        }
        // Not run yet: the connection drains the other threads, then dispatches it again.
        Ok(entry)
            if entry.spec.flags & flags::OBSERVES_CLIENTS != 0
                && conn.drain_first
                && !conn.offloaded
                && conn.multi.is_none()
                && observes_now(entry, args) =>
        {
            conn.pending_pause = true;
            conn.pending_drain = true;
        }
        Ok(entry) if conn.multi.is_some() && !crate::txn::runs_inside_multi(entry.spec.name) => {
            crate::txn::queue(conn, out, args, entry);
            if out.errors > 0 {
                record_errors(srv, conn, out, Some(entry), true);
            }
        }
        // A command that would wait for a shard a long script holds waits on a script thread,
        // not on this worker (whose other clients go on being served).
        Ok(entry)
            if srv.store.any_long()
                && crate::txn::meets_long_unit(srv, conn, entry.spec, args)
                && conn.try_offload(crate::background::Pool::Script) => {}
        Ok(entry) => {
            run(srv, conn, out, args, entry);
            if entry.spec.flags & flags::WRITE != 0
                && conn.pending_block.is_none()
                && srv.blocking.any()
            {
                crate::blocking::note_written_keys(
                    srv,
                    conn.db,
                    entry.spec,
                    args,
                    &mut conn.ready_keys,
                );
            }
        }
        Err(known) => {
            crate::txn::flag_error(conn);
            record_errors(srv, conn, out, known, true)
        }
    }
    if conn.asking && conn.multi.is_none() && !matches!(resolved, Ok(e) if e.spec.name == "asking")
    {
        conn.asking = false;
    }
    if conn.pending_pause {
        // Not run: it is dispatched again once the pause is over.
        conn.reply_mode = mode_before;
        return;
    }
    if !conn.serving_blocked && !conn.ready_keys.is_empty() {
        let ready = std::mem::take(&mut conn.ready_keys);
        crate::blocking::serve_queue(srv, conn, ready);
    }
    if conn.save_after && !tern_engine::Store::in_atomic_unit() {
        conn.save_after = false;
        crate::persistence::save_after_flushall(srv);
    }
    if srv.tracking.active() && !conn.serving_blocked {
        // BCAST invalidations go out once per top-level command (a whole transaction), after
        // the clients it unblocked got their replies.
        crate::tracking::flush_pending(srv);
    }
    if tern_engine::events::any_wanted() {
        crate::notify::flush_engine_events(srv);
    }
    // Pushes that are a command's reply (subscribe confirmations) get through a silenced
    // client, as in Redis.
    let keep = std::mem::take(&mut conn.keep_reply);
    match conn.reply_mode {
        ReplyMode::Off if !keep => out.buf.truncate(mark),
        ReplyMode::Skip => {
            if !keep {
                out.buf.truncate(mark);
            }
            conn.reply_mode = ReplyMode::On;
        }
        _ => {}
    }
}

/// Cluster mode: an EXEC whose queued commands' keys this node does not serve (or not in one
/// slot) is answered with the redirection and discards its transaction, as Redis does. (Other
/// commands are checked in `check`.)
fn exec_redirects(
    srv: &Server,
    conn: &mut Conn,
    out: &mut Reply,
    args: &Args,
    entry: &CmdEntry,
) -> bool {
    if crate::master_link::obeys(&conn.handle) {
        return false;
    }
    let Some(msg) = crate::cluster::redirect::refusal(srv, conn, entry, args) else {
        return false;
    };
    if let Some(state) = crate::txn::end_multi(conn) {
        crate::txn::recycle(conn, state);
    }
    crate::txn::unwatch_all(srv, conn);
    out.error(&msg);
    true
}

/// SHUTDOWN observes the callers already waiting only when it aborts them: one that starts a
/// shutdown runs at once, so an INFO or ABORT sent after it on another connection sees it.
fn observes_now(entry: &CmdEntry, args: &Args) -> bool {
    entry.spec.name != "shutdown"
        || args
            .iter()
            .skip(1)
            .any(|a| a.eq_ignore_ascii_case(b"abort"))
}

/// Run one command of a transaction inside EXEC (the shards are held already): the checks and
/// bookkeeping of `execute`, except that clients blocked on the keys it writes are served only
/// after the whole transaction, by EXEC's own `execute`.
pub fn execute_queued(
    srv: &Arc<Server>,
    conn: &mut Conn,
    out: &mut Reply,
    args: &Args,
    entry: &CmdEntry,
) {
    out.errors = 0;
    match check(srv, conn, out, args, entry, true) {
        Ok(entry) => {
            run(srv, conn, out, args, entry);
            if entry.spec.flags & flags::WRITE != 0 && srv.blocking.any() {
                crate::blocking::note_written_keys(
                    srv,
                    conn.db,
                    entry.spec,
                    args,
                    &mut conn.ready_keys,
                );
            }
        }
        Err(known) => record_errors(srv, conn, out, known, true),
    }
}

/// While a script runs past `busy-reply-threshold`, other clients get BUSY (as in Redis),
/// except for the commands flagged allow-busy (SCRIPT KILL, FUNCTION KILL, ...).
#[inline]
fn is_busy(srv: &Server, conn: &mut Conn, out: &mut Reply, entry: &CmdEntry) -> bool {
    match crate::lua::busy_error(srv) {
        Some(e) => {
            crate::txn::reject(srv, conn, out, entry.spec, e);
            true
        }
        None => false,
    }
}

/// Run one command for a script (`redis.call`): Redis's script rules first (unknown
/// commands, arity, noscript, writes from read-only scripts, each with the error text Redis
/// gives scripts), then the command as usual into `out`, whose protocol the script chose.
/// Returns the command's flags, or the rejection message.
pub fn execute_for_script(
    srv: &Arc<Server>,
    conn: &mut Conn,
    out: &mut Reply,
    args: &Args,
    read_only: bool,
    oom_exempt: bool,
    script_slot: &mut crate::cluster::redirect::ScriptSlot,
) -> Result<u32, std::borrow::Cow<'static, str>> {
    let reject = |e: Option<&CmdEntry>, msg: &'static str| {
        conn.stats.total_error_replies.add(1);
        srv.stats.record_error("ERR");
        if let Some(e) = e {
            conn.stats.cmds[e.id].rejected.add(1);
        }
        Err(msg.into())
    };
    let Some(mut entry) = srv.commands.get(args.get(0)) else {
        return reject(None, "Unknown Redis command called from script");
    };
    if !entry.subs.is_empty() && args.len() >= 2 {
        match entry.sub(args.get(1)) {
            Some(s) => entry = s,
            None => return reject(None, "Unknown Redis command called from script"),
        }
    }
    let f = entry.spec.flags;
    let arity = entry.spec.arity;
    let argc = args.len() as i32;
    if (arity > 0 && argc != arity) || argc < -arity {
        return reject(
            Some(entry),
            "Wrong number of args calling Redis command from script",
        );
    }
    if f & flags::NOSCRIPT != 0 && !srv.lua.disable_deny_scripts.load(Relaxed) {
        return reject(Some(entry), "This Redis command is not allowed from script");
    }
    if !crate::acl::allowed(conn) {
        let shown = srv
            .commands
            .by_id(conn.cur_cmd)
            .map(|e| e.fullname.clone())
            .unwrap_or_default();
        if let Err((_, _, msg)) =
            crate::acl::check_command(srv, conn, entry, args, crate::acl::LogContext::Lua, &shown)
        {
            conn.stats.total_error_replies.add(1);
            srv.stats.record_error("ERR");
            conn.stats.cmds[entry.id].rejected.add(1);
            return Err(format!("ACL failure in script: {msg}").into());
        }
    }
    if read_only && f & (flags::WRITE | flags::MAY_REPLICATE) != 0 {
        return reject(
            Some(entry),
            "Write commands are not allowed from read-only scripts.",
        );
    }
    // Over maxmemory when the script started: no growing writes (unless exempt).
    if f & flags::DENYOOM != 0
        && !oom_exempt
        && (srv.config.hot.maxmemory.load(Relaxed) > 0 || srv.db_policies.any_quota())
        && crate::evict::oom_before_command()
    {
        conn.stats.total_error_replies.add(1);
        srv.stats.record_error("OOM");
        conn.stats.cmds[entry.id].rejected.add(1);
        return Err(crate::evict::OOM_SCRIPT_ERROR.into());
    }
    if f & flags::WRITE != 0 && !crate::master_link::obeys(&conn.handle) {
        if let Some(e) = crate::master_link::deny_reason(srv, true, true) {
            conn.stats.total_error_replies.add(1);
            srv.stats.record_error("READONLY");
            conn.stats.cmds[entry.id].rejected.add(1);
            // The leading `-` keeps the error's code through the script's error table.
            return Err(format!("-{e}").into());
        }
        if let Some(e) = crate::persistence::disk_error(srv) {
            conn.stats.total_error_replies.add(1);
            srv.stats.record_error("MISCONF");
            conn.stats.cmds[entry.id].rejected.add(1);
            return Err(format!("-{e}").into());
        }
        if let Some(e) = crate::replication::deny_write(srv) {
            conn.stats.total_error_replies.add(1);
            srv.stats.record_error("NOREPLICAS");
            conn.stats.cmds[entry.id].rejected.add(1);
            return Err(format!("-{e}").into());
        }
    }
    if srv.cluster.get().is_some() {
        if let Some(e) =
            crate::cluster::redirect::script_refusal(srv, conn, entry, args, script_slot)
        {
            conn.stats.total_error_replies.add(1);
            srv.stats.record_error("ERR");
            conn.stats.cmds[entry.id].rejected.add(1);
            return Err(e.into());
        }
    }
    conn.mark = Instant::now();
    // Time stands still inside a script: every command sees the script's start time.
    let now = conn.now_ms;
    let outer = std::mem::replace(&mut conn.in_script, true);
    run(srv, conn, out, args, entry);
    conn.in_script = outer;
    conn.now_ms = now;
    if f & flags::WRITE != 0 && srv.blocking.any() {
        crate::blocking::note_written_keys(srv, conn.db, entry.spec, args, &mut conn.ready_keys);
    }
    Ok(f)
}

/// Find the command (and subcommand) and check arity and authentication, replying with
/// Redis's error when that fails. The error carries the command when it was found, so the
/// rejection counts in its `rejected_calls` as in Redis.
fn resolve<'s>(
    srv: &'s Server,
    conn: &Conn,
    out: &mut Reply,
    args: &Args,
    in_exec: bool,
) -> Result<&'s CmdEntry, Option<&'s CmdEntry>> {
    let Some(mut entry) = srv.commands.get(args.get(0)) else {
        // Byte limits and the client's bytes as sent, as Redis formats it.
        let mut msg = b"ERR unknown command '".to_vec();
        let name = args.get(0);
        msg.extend_from_slice(&name[..name.len().min(128)]);
        msg.extend_from_slice(b"', with args beginning with: ");
        let mut list_len = 0;
        for a in args.iter().skip(1) {
            if list_len >= 128 {
                break;
            }
            let take = a.len().min(128 - list_len);
            msg.push(b'\'');
            msg.extend_from_slice(&a[..take]);
            msg.extend_from_slice(b"' ");
            list_len += take + 3;
        }
        out.error_bytes(&msg);
        return Err(None);
    };
    if !entry.subs.is_empty() && args.len() >= 2 {
        match entry.sub(args.get(1)) {
            Some(s) => entry = s,
            None => {
                let sub = args.get(1);
                let mut msg = b"ERR unknown subcommand '".to_vec();
                msg.extend_from_slice(&sub[..sub.len().min(128)]);
                msg.extend_from_slice(
                    format!("'. Try {} HELP.", entry.spec.name.to_ascii_uppercase()).as_bytes(),
                );
                out.error_bytes(&msg);
                return Err(None);
            }
        }
    }
    check(srv, conn, out, args, entry, in_exec)
}

/// `resolve`'s checks of a command already found (arity, protection, authentication, ACL,
/// RESP2 subscriber context, the server's state), replying with Redis's error on failure.
fn check<'s>(
    srv: &'s Server,
    conn: &Conn,
    out: &mut Reply,
    args: &Args,
    entry: &'s CmdEntry,
    in_exec: bool,
) -> Result<&'s CmdEntry, Option<&'s CmdEntry>> {
    let arity = entry.spec.arity;
    let argc = args.len() as i32;
    if (arity > 0 && argc != arity) || argc < -arity {
        out.error(&format!(
            "ERR wrong number of arguments for '{}' command",
            entry.fullname
        ));
        return Err(Some(entry));
    }
    // The setting is the container's (`enable-module-command` for MODULE LOAD).
    let container = entry.fullname.split('|').next().unwrap_or(entry.spec.name);
    if entry.spec.flags & flags::PROTECTED != 0 && !protected_allowed(srv, conn, container) {
        let name = container;
        out.error(&format!(
            "ERR {} command not allowed. If the enable-{name}-command option is set to \"local\", \
             you can run it from a local connection, otherwise you need to set this option in the \
             configuration file, and then restart the server.",
            name.to_ascii_uppercase()
        ));
        return Err(Some(entry));
    }
    if !conn.authenticated && entry.spec.flags & flags::NO_AUTH == 0 && srv.acl.auth_required() {
        out.error("NOAUTH Authentication required.");
        return Err(Some(entry));
    }
    if !crate::acl::allowed(conn) {
        use crate::acl::LogContext;
        let context = if in_exec || conn.multi.is_some() {
            LogContext::Multi
        } else {
            LogContext::Toplevel
        };
        let shown = if in_exec { "exec" } else { &entry.fullname };
        if let Err((reason, _, msg)) =
            crate::acl::check_command(srv, conn, entry, args, context, shown)
        {
            if in_exec {
                out.error(&crate::acl::exec_denial_message(reason));
            } else {
                out.error(&format!("NOPERM {msg}"));
            }
            return Err(Some(entry));
        }
    }
    if conn.subscribed()
        && out.resp == 2
        && !crate::subscriptions::allowed_while_subscribed(&entry.fullname)
    {
        out.error(&format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            entry.fullname
        ));
        return Err(Some(entry));
    }
    if crate::master_link::obeys(&conn.handle) || in_exec {
        // The AOF being replayed, the master's stream: no LOADING, MISCONF, READONLY...
        // Inside EXEC neither: the server's state was checked for EXEC itself (Redis).
        return Ok(entry);
    }
    // Cluster mode: keys another node serves get the redirection, before the server's own
    // state is looked at (a replica answers MOVED to a write, not READONLY), as Redis.
    if entry.key_shape != KeyShape::NoKeys && srv.cluster.get().is_some() {
        if let Some(msg) = crate::cluster::redirect::refusal(srv, conn, entry, args) {
            out.error(&msg);
            return Err(Some(entry));
        }
    }
    if let Some(e) = crate::persistence::deny_reason(srv, entry.spec) {
        out.error(e);
        return Err(Some(entry));
    }
    let write = entry.spec.flags & flags::WRITE != 0;
    if write {
        if let Some(e) = crate::replication::deny_write(srv) {
            out.error(e);
            return Err(Some(entry));
        }
    }
    if let Some(e) =
        crate::master_link::deny_reason(srv, write, entry.spec.flags & flags::STALE != 0)
    {
        out.error(e);
        return Err(Some(entry));
    }
    Ok(entry)
}

/// PROTECTED commands (DEBUG, MODULE) run only when `enable-<name>-command` is `yes`, or
/// `local` and the client is on a loopback address or unix socket.
fn protected_allowed(srv: &Server, conn: &Conn, name: &str) -> bool {
    match srv.config.get(&format!("enable-{name}-command")).as_deref() {
        Some("yes") => true,
        Some("local") => {
            let h = &conn.handle;
            let a = h.addr.as_str();
            h.has_flag(cflags::UNIX_SOCKET) || a.starts_with("127.") || a.starts_with("[::1]")
        }
        _ => false,
    }
}

fn run(srv: &Arc<Server>, conn: &mut Conn, out: &mut Reply, args: &Args, entry: &CmdEntry) {
    let Some(handler) = entry.spec.handler else {
        out.error(&format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'",
            entry.fullname
        ));
        record_errors(srv, conn, out, Some(entry), true);
        return;
    };
    let start = conn.mark;
    let reply_at = out.buf.len();
    let now_ms = conn.now_ms;
    tern_engine::watch::set_command(
        entry.spec.flags & flags::WRITE != 0,
        conn.handle.has_flag(crate::clients::cflags::MASTER),
    );
    // Tracking invalidates exactly the keys the command touches for WATCH.
    let collect = srv.tracking.active();
    if collect {
        tern_engine::watch::collect_touches();
    }
    // Writes pass the write-log gate: while a log consumer (AOF) is attached they run as a
    // unit holding their keys and log what they changed (see `propagate`).
    // Scripts are shown to MONITOR before they run, so the commands they call follow them.
    if entry.spec.flags & flags::SCRIPT_CALLER != 0 && !conn.script_fed && srv.has_monitors() {
        conn.script_fed = true;
        if !conn.is_monitor() {
            srv.feed_monitors(&monitor_line(
                conn.db,
                &conn.handle.monitor_addr(),
                args,
                &[],
            ));
        }
    }
    let gate = if crate::propagate::gated(entry.spec) && conn.handle.id != crate::aof::CLIENT_ID {
        Some(srv.propagation.log.gate())
    } else {
        None
    };
    if gate.as_ref().is_some_and(|g| g.logged()) {
        crate::propagate::logged_call(srv, conn, out, args, entry.spec, handler, now_ms);
        let lsn = crate::propagate::take_last_append();
        if lsn != 0 {
            conn.woff = lsn;
        }
        // Apart from the LSN: without an AOF the log's LSN stays 0.
        if let Some(r) = srv.propagation.log.take_last_repl_end() {
            conn.repl_woff = r;
        }
    } else {
        let mut ctx = Ctx {
            srv,
            conn,
            out,
            now_ms,
            cmd: entry.spec,
        };
        handler(&mut ctx, args);
    }
    drop(gate);
    crate::propagate::observe(srv, conn, entry.spec, args);
    let touched = if collect {
        tern_engine::watch::take_touched()
    } else {
        Vec::new()
    };
    if srv.tracking.active() {
        crate::tracking::after_command(srv, conn, args, entry, &touched);
    }
    let end = Instant::now();
    conn.mark = end;
    let dur_us = end.duration_since(start).as_micros() as u64;
    if dur_us >= 1000 {
        conn.now_ms = tern_engine::clock::now_ms();
    }
    let f = entry.spec.flags;
    // MONITOR sees a command once, when the client sent it: not again when it is run for a
    // blocked client or moved to a background thread.
    let rerun = (conn.serving_blocked || conn.offloaded) && !conn.in_script;
    if srv.has_monitors()
        && f & (flags::SKIP_MONITOR | flags::ADMIN) == 0
        && !conn.is_monitor()
        && !rerun
    {
        let hidden = redacted_args(&entry.fullname, args);
        let addr = conn.handle.monitor_addr();
        let peer = if conn.in_script { "lua" } else { &addr };
        srv.feed_monitors(&monitor_line(conn.db, peer, args, &hidden));
    }
    if !conn.pending_offload {
        conn.script_fed = false;
    }
    if conn.pending_block.is_some() || conn.pending_offload {
        // The command runs again later (served, or on a background thread): count it then.
        return;
    }
    let st = &conn.stats.cmds[entry.id];
    st.calls.add(1);
    st.usec.add(dur_us);
    conn.stats.commands_processed.add(1);
    if srv.config.hot.latency_tracking.load(Relaxed) {
        st.latency.get_or_init(Default::default).record(dur_us);
    }
    conn.handle.last_cmd.store(entry.id + 1, Relaxed);
    if out.errors > 0 {
        record_errors(srv, conn, out, Some(entry), false);
    } else if out.buf.get(reply_at) == Some(&b'-') {
        // An error reply kept out of the error stats (a script's error already counted for
        // the command that raised it) still makes the call a failed one, as in Redis.
        st.failed.add(1);
    }
    if f & flags::SKIP_SLOWLOG == 0 {
        slowlog_push(srv, conn, args, entry, dur_us);
    }
    let ms = dur_us / 1000;
    if ms > 0 {
        srv.latency_event(
            if f & flags::FAST != 0 {
                "fast-command"
            } else {
                "command"
            },
            ms,
        );
    }
}

/// A blocked command that ended without running again (timeout, CLIENT UNBLOCK ERROR):
/// count its one call now (`cur_cmd` is still the blocked command).
pub fn count_unblocked_call(conn: &Conn, failed: bool) {
    let st = &conn.stats.cmds[conn.cur_cmd];
    st.calls.add(1);
    if failed {
        st.failed.add(1);
    }
    conn.stats.commands_processed.add(1);
}

/// Count error replies: per code, and per command as rejected (before running) or failed.
fn record_errors(
    srv: &Server,
    conn: &Conn,
    out: &mut Reply,
    entry: Option<&CmdEntry>,
    rejected: bool,
) {
    conn.stats
        .total_error_replies
        .add(out.error_codes.len() as u64);
    for code in out.error_codes.drain(..) {
        srv.stats.record_error(&code);
    }
    if let Some(e) = entry {
        let st = &conn.stats.cmds[e.id];
        if rejected {
            st.rejected.add(1);
        } else {
            st.failed.add(1);
        }
    }
}

const SLOWLOG_MAX_ARGC: usize = 32;
const SLOWLOG_MAX_STRING: usize = 128;

/// Argument positions Redis shows as `(redacted)` in MONITOR and the slow log: passwords of
/// AUTH, HELLO AUTH and MIGRATE AUTH/AUTH2, and values of sensitive configs in CONFIG SET.
pub fn redacted_args(fullname: &str, args: &Args) -> Vec<usize> {
    let mut out = Vec::new();
    match fullname {
        "auth" => out.extend(1..args.len()),
        "acl|setuser" => out.extend(2..args.len()),
        "hello" => {
            let mut i = 2;
            while i < args.len() {
                if args.get(i).eq_ignore_ascii_case(b"AUTH") && i + 2 < args.len() {
                    out.extend([i + 1, i + 2]);
                    i += 3;
                } else {
                    i += 1;
                }
            }
        }
        "migrate" => {
            for i in 6..args.len() {
                let a = args.get(i);
                if a.eq_ignore_ascii_case(b"AUTH") {
                    out.push(i + 1);
                } else if a.eq_ignore_ascii_case(b"AUTH2") {
                    out.extend([i + 1, i + 2]);
                }
            }
            out.retain(|&i| i < args.len());
        }
        "config|set" => {
            let mut i = 2;
            while i + 1 < args.len() {
                let name = String::from_utf8_lossy(args.get(i));
                if crate::config::find(&name).is_some_and(|p| p.sensitive()) {
                    out.push(i + 1);
                }
                i += 2;
            }
        }
        _ => {}
    }
    out
}

const REDACTED: &[u8] = b"(redacted)";

fn slowlog_push(srv: &Server, conn: &Conn, args: &Args, entry: &CmdEntry, dur_us: u64) {
    let threshold = srv.config.hot.slowlog_slower_than.load(Relaxed);
    if threshold < 0 || dur_us < threshold as u64 {
        return;
    }
    let hidden = redacted_args(&entry.fullname, args);
    let n = args.len().min(SLOWLOG_MAX_ARGC);
    let mut a = Vec::with_capacity(n);
    for i in 0..n {
        if i == SLOWLOG_MAX_ARGC - 1 && args.len() > SLOWLOG_MAX_ARGC {
            a.push(
                format!("... ({} more arguments)", args.len() - SLOWLOG_MAX_ARGC + 1).into_bytes(),
            );
            break;
        }
        let s = if hidden.contains(&i) {
            REDACTED
        } else {
            args.get(i)
        };
        if s.len() > SLOWLOG_MAX_STRING {
            let mut v = s[..SLOWLOG_MAX_STRING].to_vec();
            v.extend_from_slice(
                format!("... ({} more bytes)", s.len() - SLOWLOG_MAX_STRING).as_bytes(),
            );
            a.push(v);
        } else {
            a.push(s.to_vec());
        }
    }
    let name = conn
        .handle
        .meta
        .lock()
        .name
        .clone()
        .map(|n| String::from_utf8_lossy(&n).into_owned())
        .unwrap_or_default();
    let max = srv.config.hot.slowlog_max_len.load(Relaxed) as usize;
    let mut sl = srv.slowlog.lock();
    let id = sl.next_id;
    sl.next_id += 1;
    sl.entries.push_front(SlowlogEntry {
        id,
        time: tern_engine::clock::now_ms() / 1000,
        duration_us: dur_us,
        args: a,
        peer: conn.handle.addr.clone(),
        name,
    });
    sl.entries.truncate(max);
}

/// Redis's sdscatrepr: a quoted, escaped rendering of binary data.
pub fn repr(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        match c {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c),
            c => out.extend_from_slice(format!("\\x{c:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// `+<secs>.<usecs> [db addr] "arg" "arg"...` as MONITOR shows a command.
pub fn monitor_line(db: usize, peer: &str, args: &Args, hidden: &[usize]) -> Vec<u8> {
    let us = tern_engine::clock::now_us();
    let mut out = format!(
        "+{}.{:06} [{} {}]",
        us / 1_000_000,
        us % 1_000_000,
        db,
        peer
    )
    .into_bytes();
    for (i, a) in args.iter().enumerate() {
        out.push(b' ');
        repr(&mut out, if hidden.contains(&i) { REDACTED } else { a });
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Mark the client as a MONITOR and return the receiver its connection drains.
pub fn start_monitor(srv: &Server, conn: &mut Conn) {
    let tx = conn.push_sender();
    srv.add_monitor(tx);
    conn.handle.set_flag(cflags::MONITOR, true);
}
