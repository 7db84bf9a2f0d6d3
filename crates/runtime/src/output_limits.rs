//! `client-output-buffer-limit`, as Redis's checkClientOutputBufferLimits: what a client has
//! not read yet (replies waiting for its socket, push output queued for it) is measured
//! against its class's hard limit, and against the soft limit held continuously for longer
//! than its seconds. One judgement for every caller: the connection after a batch, senders of
//! push output, and the cron (which closes a client that stays over the soft limit even when
//! nothing more is sent to it).

use crate::clients::{counted_reply_bytes, obuf_limits, ClientHandle};
use crate::server::Server;
use std::sync::atomic::Ordering::Relaxed;

/// Output bytes counted against the limits: replies past the client's reply buffer (in
/// whole reply-list nodes, as Redis counts them) plus push output queued for it.
pub fn counted_output(h: &ClientHandle) -> usize {
    counted_reply_bytes(
        h.reply_pending.load(Relaxed),
        h.reply_buffer.size.load(Relaxed),
    ) + h.push_pending.load(Relaxed)
}

/// True when `h` must be closed: over its hard limit, or over its soft limit for longer than
/// the limit's seconds. The first time the soft limit is seen crossed starts its clock;
/// seconds are whole unix seconds, as Redis counts them.
pub fn reached(srv: &Server, h: &ClientHandle) -> bool {
    let (hard, soft, secs) = obuf_limits(srv, h);
    let used = counted_output(h) as u64;
    if hard != 0 && used >= hard {
        return true;
    }
    if soft != 0 && used >= soft {
        let now = tern_engine::clock::now_ms() / 1000;
        let since = h.obuf_soft_since.load(Relaxed);
        if since == 0 {
            h.obuf_soft_since.store(now, Relaxed);
            return false;
        }
        return now - since.min(now) > secs;
    }
    under_soft_limit(h);
    false
}

/// The client's output went under its soft limit (or was all written): its clock stops.
pub fn under_soft_limit(h: &ClientHandle) {
    if h.obuf_soft_since.load(Relaxed) != 0 {
        h.obuf_soft_since.store(0, Relaxed);
    }
}

/// How a close is logged: from the reply path (`Scheduled`, Redis's freeClientAsync) or by
/// the cron (`Now`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Close {
    Scheduled,
    Now,
}

/// Close `h` for its output limits, from any thread: it leaves CLIENT LIST and the clients'
/// memory total at once (its connection notices and ends), so client eviction never picks
/// another client for memory this one is about to give back.
pub fn close(srv: &Server, h: &ClientHandle, how: Close) {
    let line = h.info_line("NULL", tern_engine::clock::now_ms());
    if !h.kill() {
        return;
    }
    crate::client_eviction::forget(&srv.clients, h);
    srv.pubsub.obuf_limit_disconnections.fetch_add(1, Relaxed);
    crate::log::warning(&match how {
        Close::Scheduled => {
            format!(
                "Client {line} scheduled to be closed ASAP for overcoming of output buffer limits."
            )
        }
        Close::Now => format!("Client {line} closed for overcoming of output buffer limits."),
    });
}

/// The cron's check of one client: output still waiting is judged even when nothing more is
/// produced for it. True when the client was closed.
pub fn cron_visit(srv: &Server, h: &ClientHandle) -> bool {
    if h.reply_pending.load(Relaxed) == 0 && h.push_pending.load(Relaxed) == 0 {
        return false;
    }
    if reached(srv, h) {
        close(srv, h, Close::Now);
        return true;
    }
    false
}
