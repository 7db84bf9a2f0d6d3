//! The cron's visit of the connected clients, as Redis's clientsCron: one walk of the client
//! list does each job per client (reply buffer resizing, output limits for output left
//! waiting, the client's figure in the clients' memory total), then the client eviction
//! limit is enforced once. In cluster mode, first, blocked clients whose slot moved away are
//! redirected.

use crate::server::Server;

pub fn run(srv: &Server) {
    let now_ms = tern_engine::clock::now_ms();
    crate::cluster::blocked::redirect_blocked_clients(srv);
    let reg = &srv.clients;
    for h in reg.all() {
        reg.reply_buffers.visit(&h.reply_buffer, now_ms);
        if crate::output_limits::cron_visit(srv, &h) {
            continue;
        }
        crate::client_eviction::refresh(reg, &h);
    }
    // Takes the limit again too: a percentage follows `maxmemory`.
    crate::client_eviction::apply_limit(srv);
}
