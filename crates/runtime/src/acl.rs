//! ACL: users and their permissions, the checks every command goes through, the ACL log, the
//! ACL command family, AUTH's credential check, and the ACL file / config `user` lines.
//!
//! A connection holds its user (`Conn::user`). The user's rules live behind a lock and can be
//! replaced at any time by ACL SETUSER (they apply to connections already authenticated, as in
//! Redis); `unrestricted` caches "some selector allows every command, key and channel", so the
//! default user costs one relaxed load per command.

pub mod rules;

use crate::args::Args;
use crate::ctx::{Conn, Ctx};
use crate::registry::CmdEntry;
use crate::server::Server;
use crate::table::{flags as f, kflags, CommandSpec};
use parking_lot::{Mutex, RwLock};
use rules::{ApplyError, RuleCtx, Rules, Selector, SetError, PERM_READ, PERM_WRITE};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::Arc;

/// One user. Connections keep an `Arc` to it; deleting the user disconnects them.
pub struct AclUser {
    pub name: String,
    unrestricted: AtomicBool,
    /// Bumped on every change of the rules: connections keep the rules they last saw and
    /// look again only when this moved (no shared reference count touched per command).
    version: AtomicU64,
    rules: RwLock<Arc<Rules>>,
}

impl AclUser {
    fn new(name: String, rules: Rules) -> AclUser {
        AclUser {
            name,
            unrestricted: AtomicBool::new(rules.unrestricted()),
            version: AtomicU64::new(0),
            rules: RwLock::new(Arc::new(rules)),
        }
    }

    /// Every command, key and channel allowed: no check needed.
    #[inline]
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Relaxed)
    }

    pub fn rules(&self) -> Arc<Rules> {
        self.rules.read().clone()
    }

    fn set_rules(&self, r: Rules) {
        let mut g = self.rules.write();
        self.unrestricted.store(r.unrestricted(), Relaxed);
        *g = Arc::new(r);
        self.version.fetch_add(1, Release);
    }
}

/// A connection's copy of its user's rules (see `AclUser::version`).
pub type RulesCache = std::cell::RefCell<Option<(u64, Arc<Rules>)>>;

/// Run `f` on the current rules of the connection's user `u`, from the connection's cache.
fn with_rules<R>(conn: &Conn, u: &AclUser, f: impl FnOnce(&Rules) -> R) -> R {
    let v = u.version.load(Acquire);
    let fresh = matches!(&*conn.acl_cache.borrow(), Some((cv, _)) if *cv == v);
    if !fresh {
        let g = u.rules.read();
        let snapshot = (u.version.load(Acquire), g.clone());
        drop(g);
        *conn.acl_cache.borrow_mut() = Some(snapshot);
    }
    let c = conn.acl_cache.borrow();
    let rules = &c.as_ref().expect("filled above").1;
    f(rules)
}

/// Why a command was refused (Redis's ACL_DENIED_* values: their order picks the error
/// reported when several selectors refuse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Cmd = 1,
    Key = 2,
    Auth = 3,
    Channel = 4,
}

/// Where the refusal happened (ACL LOG `context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogContext {
    Toplevel,
    Lua,
    Multi,
}

pub struct LogEntry {
    pub count: u64,
    pub reason: Denied,
    pub context: LogContext,
    pub object: Vec<u8>,
    pub username: String,
    /// Last update (ms).
    pub ctime: u64,
    pub cinfo: String,
    pub entry_id: u64,
    pub created: u64,
}

#[derive(Default)]
pub struct AclLog {
    /// Newest first.
    pub entries: VecDeque<LogEntry>,
    next_id: u64,
}

/// Entries this close in time (ms) with the same reason, context, object and user are one.
const LOG_GROUPING_MS: u64 = 60_000;

/// The users, the default user, the ACL log and the INFO counters.
pub struct Acl {
    users: RwLock<BTreeMap<String, Arc<AclUser>>>,
    default: Arc<AclUser>,
    /// The default user is off or has a password: new connections must authenticate.
    auth_required: AtomicBool,
    log: Mutex<AclLog>,
    pub denied_auth: AtomicU64,
    pub denied_cmd: AtomicU64,
    pub denied_key: AtomicU64,
    pub denied_channel: AtomicU64,
}

impl Acl {
    /// ACL USERS: every user name, sorted.
    pub fn user_names(&self) -> Vec<String> {
        self.users.read().keys().cloned().collect()
    }

    /// The ACL log (ACL LOG reads and resets it).
    pub fn log(&self) -> parking_lot::MutexGuard<'_, AclLog> {
        self.log.lock()
    }

    pub fn new(reg: &crate::registry::Registry) -> Acl {
        let cx = RuleCtx {
            reg,
            pubsub_all: false,
        };
        let default = Arc::new(AclUser::new("default".into(), Rules::default_user(&cx)));
        let mut users = BTreeMap::new();
        users.insert("default".to_string(), default.clone());
        Acl {
            users: RwLock::new(users),
            default,
            auth_required: AtomicBool::new(false),
            log: Mutex::new(AclLog::default()),
            denied_auth: AtomicU64::new(0),
            denied_cmd: AtomicU64::new(0),
            denied_key: AtomicU64::new(0),
            denied_channel: AtomicU64::new(0),
        }
    }

    pub fn default_user(&self) -> Arc<AclUser> {
        self.default.clone()
    }

    /// Clients not authenticated must AUTH first (the default user is off or has passwords).
    #[inline]
    pub fn auth_required(&self) -> bool {
        self.auth_required.load(Relaxed)
    }

    fn refresh_default(&self) {
        let r = self.default.rules();
        self.auth_required.store(!(r.nopass && r.enabled), Relaxed);
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<AclUser>> {
        self.users
            .read()
            .get(String::from_utf8_lossy(name).as_ref())
            .cloned()
    }

    /// `requirepass`: the default user's only password, or none (nopass).
    pub fn set_requirepass(&self, pass: &str) {
        let mut r = (*self.default.rules()).clone();
        r.passwords.clear();
        r.nopass = pass.is_empty();
        if !pass.is_empty() {
            r.passwords.push(rules::hash_password(pass.as_bytes()));
        }
        self.default.set_rules(r);
        self.refresh_default();
    }

    /// The user whose name and password match, or None (unknown, disabled, bad password).
    pub fn authenticate(&self, user: &[u8], pass: &[u8]) -> Option<Arc<AclUser>> {
        let u = self.get(user)?;
        let r = u.rules();
        (r.enabled && r.password_ok(pass)).then_some(u)
    }

    /// Count a refusal and add it to the ACL log (grouping it with a recent similar one).
    #[allow(clippy::too_many_arguments)]
    pub fn log_denial(
        &self,
        srv: &Server,
        conn: &Conn,
        reason: Denied,
        context: LogContext,
        object: &[u8],
        username: &str,
        cmd_name: &str,
    ) {
        match reason {
            Denied::Auth => &self.denied_auth,
            Denied::Cmd => &self.denied_cmd,
            Denied::Key => &self.denied_key,
            Denied::Channel => &self.denied_channel,
        }
        .fetch_add(1, Relaxed);
        let now = tern_engine::clock::now_ms();
        let cinfo = conn.handle.info_line(cmd_name, now);
        let max = srv.config.get_i64("acllog-max-len").max(0) as usize;
        let mut log = self.log.lock();
        let found = log.entries.iter().take(10).position(|e| {
            e.reason == reason
                && e.context == context
                && e.ctime.abs_diff(now) <= LOG_GROUPING_MS
                && e.object == object
                && e.username == username
        });
        if let Some(i) = found {
            let mut e = log.entries.remove(i).expect("found above");
            e.cinfo = cinfo;
            e.ctime = now;
            e.count += 1;
            log.entries.push_front(e);
            return;
        }
        let entry_id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(LogEntry {
            count: 1,
            reason,
            context,
            object: object.to_vec(),
            username: username.to_string(),
            ctime: now,
            cinfo,
            entry_id,
            created: now,
        });
        log.entries.truncate(max);
    }
}

/// The rule context for this server (its command table, acl-pubsub-default now).
pub fn rule_ctx(srv: &Server) -> RuleCtx<'_> {
    RuleCtx {
        reg: &srv.commands,
        pubsub_all: srv.config.get("acl-pubsub-default").as_deref() == Some("allchannels"),
    }
}

// ---------------------------------------------------------------------------------------------
// Permission checks

/// Redis's error text for a refusal (`verbose` names the key or channel, as ACL DRYRUN does).
pub fn denial_message(
    reason: Denied,
    user: &str,
    fullname: &str,
    object: &[u8],
    verbose: bool,
) -> String {
    let obj = String::from_utf8_lossy(object);
    match (reason, verbose) {
        (Denied::Cmd, _) | (Denied::Auth, _) => {
            format!("User {user} has no permissions to run the '{fullname}' command")
        }
        (Denied::Key, true) => format!("User {user} has no permissions to access the '{obj}' key"),
        (Denied::Key, false) => "No permissions to access a key".into(),
        (Denied::Channel, true) => {
            format!("User {user} has no permissions to access the '{obj}' channel")
        }
        (Denied::Channel, false) => "No permissions to access a channel".into(),
    }
}

/// Does the command name keys at all (specs other than not_key, or its own key finder)?
fn has_keys(spec: &CommandSpec) -> bool {
    spec.getkeys.is_some() || spec.keys.iter().any(|k| k.flags & kflags::NOT_KEY == 0)
}

/// The keys of a command as Redis's ACL check finds them (getKeysFromCommandWithSpecs): a
/// spec that does not fit the arguments (a bad or too large numkeys...) means no keys at all,
/// commands with variable flags report the flags their arguments imply.
pub fn command_keys(spec: &CommandSpec, args: &Args) -> Vec<(usize, u32)> {
    if let Some(find) = spec.getkeys {
        return find(args)
            .into_iter()
            .filter(|(_, fl)| fl & kflags::NOT_KEY == 0)
            .collect();
    }
    let mut out = crate::table::keys_by_specs(spec.keys, args).unwrap_or_default();
    if out.iter().any(|(_, fl)| fl & kflags::VARIABLE_FLAGS != 0) {
        if let Some(fl) = crate::table::variable_key_flags(spec.name, args) {
            for k in out.iter_mut() {
                k.1 = fl;
            }
        }
    }
    out
}

/// Which arguments are channels: (first index, how many (None = all), patterns?).
fn channel_args(entry: &CmdEntry) -> Option<(usize, Option<usize>, bool)> {
    if entry.spec.flags & f::PUBSUB == 0 {
        return None;
    }
    match entry.fullname.as_str() {
        "subscribe" | "ssubscribe" => Some((1, None, false)),
        "psubscribe" => Some((1, None, true)),
        "publish" | "spublish" => Some((1, Some(1), false)),
        _ => None,
    }
}

fn key_allowed(s: &Selector, key: &[u8], ksflags: u32) -> bool {
    let mut need = 0u8;
    if ksflags & kflags::ACCESS != 0 {
        need |= PERM_READ;
    }
    if ksflags & (kflags::INSERT | kflags::DELETE | kflags::UPDATE) != 0 {
        need |= PERM_WRITE;
    }
    s.patterns
        .iter()
        .any(|p| p.flags & need == need && crate::glob::matches(&p.pattern, key, false))
}

fn channel_allowed(list: &[Vec<u8>], channel: &[u8], is_pattern: bool) -> bool {
    list.iter().any(|p| {
        if is_pattern {
            p.as_slice() == channel
        } else {
            crate::glob::matches(p, channel, false)
        }
    })
}

/// One selector against one command (ACLSelectorCheckCmd). `keys` caches the key positions
/// between selectors.
fn check_selector(
    s: &Selector,
    entry: &CmdEntry,
    args: &Args,
    keys: &mut Option<Vec<(usize, u32)>>,
) -> Result<(), (Denied, usize)> {
    if !s.allcommands && entry.spec.flags & f::NO_AUTH == 0 && !s.bit(entry.id) {
        let idx = if entry.fullname.contains('|') { 2 } else { 1 };
        let ok = args.len() > idx
            && s.firstargs(entry.id)
                .is_some_and(|fa| fa.iter().any(|a| a.eq_ignore_ascii_case(args.get(idx))));
        if !ok {
            return Err((Denied::Cmd, 0));
        }
    }
    if !s.allkeys && has_keys(entry.spec) {
        let ks = keys.get_or_insert_with(|| command_keys(entry.spec, args));
        for &(pos, fl) in ks.iter() {
            if !key_allowed(s, args.get(pos), fl) {
                return Err((Denied::Key, pos));
            }
        }
    }
    if !s.allchannels {
        if let Some((start, count, pattern)) = channel_args(entry) {
            let stop = count.map_or(args.len(), |c| (start + c).min(args.len()));
            for i in start..stop {
                if !channel_allowed(&s.channels, args.get(i), pattern) {
                    return Err((Denied::Channel, i));
                }
            }
        }
    }
    Ok(())
}

/// A user's rules against one command (ACLCheckAllUserCommandPerm): Ok when some selector
/// allows it, else the refusal to report and the argument it is about.
pub fn check_rules(rules: &Rules, entry: &CmdEntry, args: &Args) -> Result<(), (Denied, usize)> {
    let mut relevant = Denied::Cmd;
    let mut last_idx = 0;
    let mut keys = None;
    for s in &rules.selectors {
        match check_selector(s, entry, args, &mut keys) {
            Ok(()) => return Ok(()),
            Err((r, idx)) => {
                if r > relevant || (r == relevant && idx > last_idx) {
                    relevant = r;
                    last_idx = idx;
                }
            }
        }
    }
    Err((relevant, last_idx))
}

/// The connection's user may run this command (None: an internal client, may run anything).
#[inline]
pub fn allowed(conn: &Conn) -> bool {
    match &conn.user {
        None => true,
        Some(u) => u.unrestricted(),
    }
}

/// The full check at dispatch: on refusal, log it and return the reason and argument.
pub fn check_command(
    srv: &Server,
    conn: &Conn,
    entry: &CmdEntry,
    args: &Args,
    context: LogContext,
    cmd_name: &str,
) -> Result<(), (Denied, usize, String)> {
    let Some(u) = &conn.user else { return Ok(()) };
    match with_rules(conn, u, |r| check_rules(r, entry, args)) {
        Ok(()) => Ok(()),
        Err((reason, idx)) => {
            let object: &[u8] = match reason {
                Denied::Cmd | Denied::Auth => entry.fullname.as_bytes(),
                _ => args.get(idx),
            };
            srv.acl
                .log_denial(srv, conn, reason, context, object, &u.name, cmd_name);
            let msg = denial_message(reason, &u.name, &entry.fullname, object, false);
            Err((reason, idx, msg))
        }
    }
}

/// What EXEC replies for a queued command the rules no longer allow.
pub fn exec_denial_message(reason: Denied) -> String {
    let why = match reason {
        Denied::Cmd => "no permission to execute the command or subcommand",
        Denied::Key => "no permission to touch the specified keys",
        Denied::Channel => "no permission to access one of the channels used as arguments",
        Denied::Auth => "no permission",
    };
    format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the \
         EXEC call. This command is no longer allowed for the following reason: {why}"
    )
}

/// SORT's BY / GET patterns read arbitrary keys: allowed only when some selector allows the
/// command and reading every key (ACLUserCheckCmdWithUnrestrictedKeyAccess).
pub fn full_read_access(ctx: &Ctx, args: &Args) -> bool {
    let Some(u) = &ctx.conn.user else { return true };
    if u.unrestricted() {
        return true;
    }
    let Some(entry) = ctx.srv.commands.get(args.get(0)) else {
        return false;
    };
    let mut keys = None;
    with_rules(ctx.conn, u, |rules| {
        rules.selectors.iter().any(|s| {
            check_selector(s, entry, args, &mut keys).is_ok()
                && (s.allkeys
                    || s.patterns
                        .iter()
                        .any(|p| p.flags & PERM_READ != 0 && p.pattern == b"*"))
        })
    })
}

/// redis.acl_check_cmd: may the script's user run this command? None: no such command.
pub fn script_check(srv: &Server, conn: &Conn, args: &Args) -> Option<bool> {
    let mut entry = srv.commands.get(args.get(0))?;
    if args.len() > 1 && !entry.subs.is_empty() {
        entry = entry.sub(args.get(1))?;
    }
    Some(match &conn.user {
        None => true,
        Some(u) => u.unrestricted() || check_rules(&u.rules(), entry, args).is_ok(),
    })
}

// ---------------------------------------------------------------------------------------------
// Users, connections

/// Log in `conn` as `u` (AUTH, HELLO AUTH).
pub fn set_conn_user(conn: &mut Conn, u: Arc<AclUser>) {
    {
        let mut m = conn.handle.meta.lock();
        m.user.clone_from(&u.name);
        m.acl_user = Some(u.clone());
    }
    conn.user = Some(u);
    conn.acl_cache.take();
    conn.authenticated = true;
}

/// Back to the default user, authenticated only if it needs no password (new connections,
/// RESET).
pub fn set_default_auth(srv: &Server, conn: &mut Conn) {
    let u = srv.acl.default_user();
    {
        let mut m = conn.handle.meta.lock();
        m.user.clone_from(&u.name);
        m.acl_user = Some(u.clone());
    }
    conn.user = Some(u);
    conn.acl_cache.take();
    conn.authenticated = !srv.acl.auth_required();
}

/// AUTH / HELLO AUTH: check the pair, log a failure. True when the connection is now the user.
pub fn auth(srv: &Server, conn: &mut Conn, user: &[u8], pass: &[u8], argv0: &[u8]) -> bool {
    if let Some(u) = srv.acl.authenticate(user, pass) {
        set_conn_user(conn, u);
        return true;
    }
    let ctx = if conn.multi.is_some() {
        LogContext::Multi
    } else {
        LogContext::Toplevel
    };
    let cmd = String::from_utf8_lossy(argv0).to_ascii_lowercase();
    srv.acl.log_denial(
        srv,
        conn,
        Denied::Auth,
        ctx,
        argv0,
        &String::from_utf8_lossy(user),
        &cmd,
    );
    false
}

/// Disconnect every client logged in as one of `users` (ACL DELUSER, ACL LOAD). The calling
/// client is closed after its reply.
/// ACL SETUSER: apply `ops` to the user `name` (created if missing) as one change: on an error
/// nothing changes and the error line is returned. Connections of the user whose channel
/// permissions shrink are closed, as in Redis.
pub fn set_user(srv: &Server, conn: &mut Conn, name: &[u8], ops: &[Vec<u8>]) -> Result<(), String> {
    let cx = rule_ctx(srv);
    let mut users = srv.acl.users.write();
    let name_s = lossy(name);
    let existing = users.get(&name_s).cloned();
    let old = existing.as_ref().map(|u| u.rules());
    let mut r = match &old {
        Some(o) => (**o).clone(),
        None => Rules::new(&cx),
    };
    if let Err(e) = r.apply_all(&cx, ops) {
        let msg = match e {
            ApplyError::Unmatched(op) => format!(
                "ERR Unmatched parenthesis in acl selector starting at '{}'.",
                lossy(&op)
            ),
            ApplyError::Op(op, e) => format!(
                "ERR Error in ACL SETUSER modifier '{}': {}",
                lossy(&op),
                e.message()
            ),
        };
        return Err(msg.replace(['\r', '\n'], " "));
    }
    match existing {
        Some(u) => {
            if let Some(o) = &old {
                kill_pubsub_if_needed(srv, conn, &u, o, &r);
            }
            u.set_rules(r);
            if Arc::ptr_eq(&u, &srv.acl.default) {
                drop(users);
                srv.acl.refresh_default();
            }
        }
        None => {
            users.insert(name_s.clone(), Arc::new(AclUser::new(name_s, r)));
        }
    }
    Ok(())
}

/// ACL DELUSER: remove the named users and close their connections; how many existed.
pub fn delete_users<'a>(
    srv: &Server,
    conn: &mut Conn,
    names: impl Iterator<Item = &'a [u8]>,
) -> usize {
    let mut removed = Vec::new();
    {
        let mut users = srv.acl.users.write();
        for name in names {
            if let Some(u) = users.remove(&lossy(name)) {
                removed.push(u);
            }
        }
    }
    kill_clients_of(srv, conn, &removed);
    removed.len()
}

fn kill_clients_of(srv: &Server, conn: &mut Conn, users: &[Arc<AclUser>]) {
    if users.is_empty() {
        return;
    }
    let is_one = |u: &Option<Arc<AclUser>>| {
        u.as_ref()
            .is_some_and(|u| users.iter().any(|x| Arc::ptr_eq(x, u)))
    };
    if is_one(&conn.user) {
        conn.close_after_reply = true;
        conn.handle
            .set_flag(crate::clients::cflags::CLOSE_AFTER_REPLY, true);
        conn.authenticated = false;
    }
    for h in srv.clients.all() {
        if h.id == conn.handle.id {
            continue;
        }
        let hit = is_one(&h.meta.lock().acl_user);
        if hit {
            h.kill();
            srv.clients.unregister(h.id);
        }
    }
}

/// After `user`'s channel permissions changed from `old` to `new`: disconnect its subscribers
/// that are subscribed to something no longer allowed (ACLKillPubsubClientsIfNeeded).
fn kill_pubsub_if_needed(
    srv: &Server,
    conn: &mut Conn,
    user: &Arc<AclUser>,
    old: &Rules,
    new: &Rules,
) {
    if new.selectors.iter().any(|s| s.allchannels) || srv.pubsub.is_empty() {
        return;
    }
    let upcoming: Vec<Vec<u8>> = new
        .selectors
        .iter()
        .flat_map(|s| s.channels.iter().cloned())
        .collect();
    let superset = old
        .selectors
        .iter()
        .all(|s| !s.allchannels && s.channels.iter().all(|c| upcoming.contains(c)));
    if superset {
        return;
    }
    let subs = srv.pubsub.by_client();
    for h in srv.clients.all() {
        if !h
            .meta
            .lock()
            .acl_user
            .as_ref()
            .is_some_and(|u| Arc::ptr_eq(u, user))
        {
            continue;
        }
        let Some([chans, pats, shard]) = subs.get(&h.id) else {
            continue;
        };
        let kill = pats.iter().any(|p| !channel_allowed(&upcoming, p, true))
            || chans
                .iter()
                .chain(shard.iter())
                .any(|c| !channel_allowed(&upcoming, c, false));
        if kill {
            if h.id == conn.handle.id {
                conn.close_after_reply = true;
            } else {
                h.kill();
                srv.clients.unregister(h.id);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Loading and saving

pub fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Validate a config file `user` line, `argv` = `user <name> <rules...>`
/// (ACLAppendUserForLoading): rules with syntax errors are refused at once; unknown commands
/// are not (they are reported when the users are loaded). Err: (argument to show, message).
pub fn validate_user_line(argv: &[String]) -> Result<(), (usize, &'static str)> {
    // Process-wide: the config file is checked before any server (and its registry) exists;
    // the plain command table is code, the same for every server.
    static REG: std::sync::OnceLock<crate::registry::Registry> = std::sync::OnceLock::new();
    let reg = REG.get_or_init(crate::registry::Registry::build);
    let cx = RuleCtx {
        reg,
        pubsub_all: false,
    };
    // As Redis, the index reported is into the rules but names an argument of the whole line.
    let ops: Vec<Vec<u8>> = argv[2..].iter().map(|s| s.as_bytes().to_vec()).collect();
    let merged = rules::merge_selectors(&ops).map_err(|bad| {
        let i = ops.iter().position(|o| *o == bad).unwrap_or(0);
        (i, SetError::Syntax.message())
    })?;
    let mut r = Rules::new(&cx);
    for (j, op) in merged.iter().enumerate() {
        if let Err(e) = r.apply(&cx, op) {
            if e != SetError::Unknown {
                return Err((j, e.message()));
            }
        }
    }
    Ok(())
}

/// Parse an ACL file's text into users (ACLLoadFromFile). Err: every problem, in one line.
fn parse_acl_file(
    srv: &Server,
    text: &str,
    filename: &str,
) -> Result<Vec<(String, Rules)>, String> {
    let cx = rule_ctx(srv);
    let mut errors = String::new();
    let mut users: Vec<(String, Rules)> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let linenum = i + 1;
        let line = raw.trim_matches([' ', '\t', '\r', '\n']);
        if line.is_empty() {
            continue;
        }
        let argv: Vec<&str> = line.split(' ').filter(|s| !s.is_empty()).collect();
        if argv.is_empty() {
            continue;
        }
        if argv[0] != "user" || argv.len() < 2 {
            errors.push_str(&format!(
                "{filename}:{linenum} should start with user keyword followed by the username. "
            ));
            continue;
        }
        if rules::has_spaces(argv[1].as_bytes()) {
            errors.push_str(&format!(
                "'{filename}:{linenum}: username '{}' contains invalid characters. ",
                argv[1]
            ));
            continue;
        }
        if users.iter().any(|(n, _)| n == argv[1]) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {linenum}. ",
                argv[1]
            ));
            continue;
        }
        let ops: Vec<Vec<u8>> = argv[2..].iter().map(|s| s.as_bytes().to_vec()).collect();
        let mut r = Rules::new(&cx);
        match rules::merge_selectors(&ops) {
            Err(_) => errors.push_str(&format!(
                "{filename}:{linenum}: Unmatched parenthesis in selector definition."
            )),
            Ok(merged) => {
                let mut syntax_error = false;
                for op in merged {
                    let op: Vec<u8> = lossy(&op)
                        .trim_matches(['\t', '\r', '\n'])
                        .as_bytes()
                        .to_vec();
                    if let Err(e) = r.apply(&cx, &op) {
                        if e == SetError::Unknown {
                            errors.push_str(&format!(
                                "{filename}:{linenum}: Error in applying operation '{}': {}. ",
                                lossy(&op),
                                e.message()
                            ));
                        } else if !syntax_error {
                            errors.push_str(&format!("{filename}:{linenum}: {}. ", e.message()));
                            syntax_error = true;
                        }
                    }
                }
            }
        }
        users.push((argv[1].to_string(), r));
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        Err(errors)
    }
}

/// Replace every user with those of the ACL file. The default user keeps its identity (its
/// connections stay); every other user's connections are closed.
pub fn load_file(srv: &Server, conn: Option<&mut Conn>) -> Result<(), String> {
    let filename = srv.config.get("aclfile").unwrap_or_default();
    let text = std::fs::read(&filename).map_err(|e| {
        format!(
            "Error loading ACLs, opening file '{filename}': {}",
            crate::config::strerror(&e)
        )
    })?;
    let parsed = parse_acl_file(srv, &String::from_utf8_lossy(&text), &filename)?;
    let cx = rule_ctx(srv);
    let acl = &srv.acl;
    let old: Vec<Arc<AclUser>>;
    {
        let mut users = acl.users.write();
        old = users
            .values()
            .filter(|u| !Arc::ptr_eq(u, &acl.default))
            .cloned()
            .collect();
        users.clear();
        let mut default_rules = None;
        for (name, r) in parsed {
            if name == "default" {
                default_rules = Some(r);
            } else {
                users.insert(name.clone(), Arc::new(AclUser::new(name, r)));
            }
        }
        acl.default
            .set_rules(default_rules.unwrap_or_else(|| Rules::default_user(&cx)));
        users.insert("default".into(), acl.default.clone());
    }
    acl.refresh_default();
    match conn {
        Some(c) => kill_clients_of(srv, c, &old),
        None => {
            for h in srv.clients.all() {
                let hit = h
                    .meta
                    .lock()
                    .acl_user
                    .as_ref()
                    .is_some_and(|u| old.iter().any(|x| Arc::ptr_eq(x, u)));
                if hit {
                    h.kill();
                    srv.clients.unregister(h.id);
                }
            }
        }
    }
    Ok(())
}

/// Every user as `user <name> <rules>` lines, in name order (ACL LIST, ACL SAVE, CONFIG
/// REWRITE).
pub fn user_lines(acl: &Acl) -> Vec<Vec<u8>> {
    acl.users
        .read()
        .values()
        .map(|u| {
            let mut line = format!("user {} ", u.name).into_bytes();
            line.extend_from_slice(&u.rules().describe());
            line
        })
        .collect()
}

/// ACL SAVE: write every user to `aclfile` (temp file, fsync, rename).
pub fn save_file(srv: &Server) -> std::io::Result<()> {
    let filename = srv.config.get("aclfile").unwrap_or_default();
    let mut content = Vec::new();
    for l in user_lines(&srv.acl) {
        content.extend_from_slice(&l);
        content.push(b'\n');
    }
    let tmp = format!(
        "{filename}.tmp-{}-{}",
        std::process::id(),
        tern_engine::clock::now_ms()
    );
    let res = (|| {
        use std::io::Write;
        let mut fh = std::fs::File::create(&tmp)?;
        fh.write_all(&content)?;
        fh.sync_all()?;
        std::fs::rename(&tmp, &filename)
    })();
    if let Err(e) = &res {
        crate::log::warning(&format!("Writing ACL file for ACL SAVE: {e}"));
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// At start-up: `requirepass`, then the config file's `user` lines, then the ACL file. Err:
/// what to log before exiting.
pub fn load_at_startup(srv: &Server) -> Result<(), String> {
    let cx = rule_ctx(srv);
    srv.acl
        .set_requirepass(&srv.config.get("requirepass").unwrap_or_default());
    let lines = srv.config.users.lock().clone();
    let aclfile = srv.config.get("aclfile").unwrap_or_default();
    if !aclfile.is_empty() && !lines.is_empty() {
        return Err(
            "Configuring Redis with users defined in redis.conf and at the same setting \
                    an ACL file path is invalid. This setup is very likely to lead to \
                    configuration errors and security holes, please define either an ACL file \
                    or declare users directly in your redis.conf, but not both."
                .into(),
        );
    }
    for argv in &lines {
        let name = &argv[0];
        if rules::has_spaces(name.as_bytes()) {
            return Err("Spaces not allowed in ACL usernames".into());
        }
        let existing = srv.acl.get(name.as_bytes());
        let mut r = match &existing {
            Some(_) => {
                let mut r = Rules::new(&cx);
                let _ = r.apply(&cx, b"reset");
                r
            }
            None => Rules::new(&cx),
        };
        let ops: Vec<Vec<u8>> = argv[1..].iter().map(|s| s.as_bytes().to_vec()).collect();
        let merged = rules::merge_selectors(&ops).unwrap_or(ops);
        for op in &merged {
            if let Err(e) = r.apply(&cx, op) {
                crate::log::warning(&format!(
                    "Error loading ACL rule '{}' for the user named '{name}': {}",
                    lossy(op),
                    e.message()
                ));
                return Err("Critical error while loading ACLs. Exiting.".into());
            }
        }
        if !r.enabled {
            crate::log::notice(&format!(
                "The user '{name}' is disabled (there is no 'on' modifier in the user \
                 description). Make sure this is not a configuration error."
            ));
        }
        match existing {
            Some(u) => u.set_rules(r),
            None => {
                srv.acl
                    .users
                    .write()
                    .insert(name.clone(), Arc::new(AclUser::new(name.clone(), r)));
            }
        }
    }
    srv.acl.refresh_default();
    if !aclfile.is_empty() {
        load_file(srv, None)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}
