//! ACL rules: what one user may do (flags, password hashes, selectors), how the ACL SETUSER
//! operations change it, and how it is described back (ACL LIST, ACL GETUSER, the ACL file).
//! Semantics and error texts follow Redis 7.2 (`acl.c`); the command bitmaps are indexed by
//! the registry's command ids.

use crate::registry::{CmdEntry, Registry};
use crate::table::acl as cat;

/// Key pattern permissions (`%R~`, `%W~`, `~` = both).
pub const PERM_READ: u8 = 1;
pub const PERM_WRITE: u8 = 2;
pub const PERM_ALL: u8 = PERM_READ | PERM_WRITE;

/// Why an ACL SETUSER operation failed (Redis's errno values), with Redis's texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetError {
    /// EINVAL
    Syntax,
    /// ENOENT
    Unknown,
    /// EEXIST
    KeyAfterAll,
    /// EISDIR
    ChannelAfterAll,
    /// ENODEV
    NoSuchPassword,
    /// EBADMSG
    BadHash,
    /// ECHILD
    SubcommandFirstArg,
    /// EALREADY
    Duplicate,
}

impl SetError {
    pub fn message(self) -> &'static str {
        match self {
            SetError::Syntax => "Syntax error",
            SetError::Unknown => "Unknown command or category name in ACL",
            SetError::KeyAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            SetError::ChannelAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                 and does not have any effect. Try 'resetchannels' to start with an empty list of \
                 channels"
            }
            SetError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            SetError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            SetError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
            SetError::Duplicate => {
                "Duplicate user found. A user can only be defined once in config files"
            }
        }
    }
}

/// What the rules are applied against: the command table, and `acl-pubsub-default`.
#[derive(Clone, Copy)]
pub struct RuleCtx<'a> {
    pub reg: &'a Registry,
    /// `acl-pubsub-default allchannels`: new selectors start with every channel.
    pub pubsub_all: bool,
}

impl RuleCtx<'_> {
    /// Words per selector bitmap: one bit per command id.
    fn words(&self) -> usize {
        self.reg.len().div_ceil(64)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub flags: u8,
    pub pattern: Vec<u8>,
}

impl KeyPattern {
    fn describe(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self.flags {
            PERM_ALL => b"~".as_slice(),
            PERM_READ => b"%R~",
            _ => b"%W~",
        });
        out.extend_from_slice(&self.pattern);
    }
}

/// One set of permissions (the user's root one, or a `(...)` selector).
#[derive(Clone, Debug)]
pub struct Selector {
    pub root: bool,
    pub allkeys: bool,
    pub allchannels: bool,
    pub allcommands: bool,
    /// Built from `+@all` (Redis's reserved "future commands" bit): described as `+@all ...`.
    future: bool,
    bits: Vec<u64>,
    /// Command id -> first arguments allowed although the command is not (`+select|0`).
    firstargs: Vec<(usize, Vec<Vec<u8>>)>,
    pub patterns: Vec<KeyPattern>,
    pub channels: Vec<Vec<u8>>,
    /// The ordered command and category rules, for describing them back (`+get`, `-@hash`).
    rules: Vec<String>,
}

impl Selector {
    pub fn new(cx: &RuleCtx, root: bool) -> Selector {
        Selector {
            root,
            allkeys: false,
            allchannels: cx.pubsub_all,
            allcommands: false,
            future: false,
            bits: vec![0; cx.words()],
            firstargs: Vec::new(),
            patterns: Vec::new(),
            channels: Vec::new(),
            rules: Vec::new(),
        }
    }

    #[inline]
    pub fn bit(&self, id: usize) -> bool {
        self.bits
            .get(id / 64)
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(w) = self.bits.get_mut(id / 64) {
            if on {
                *w |= 1u64 << (id % 64);
            } else {
                *w &= !(1u64 << (id % 64));
                self.allcommands = false;
            }
        }
    }

    /// The first arguments allowed for command `id` when its bit is clear.
    pub fn firstargs(&self, id: usize) -> Option<&[Vec<u8>]> {
        self.firstargs
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, v)| v.as_slice())
    }

    fn reset_firstargs(&mut self, id: usize) {
        self.firstargs.retain(|(i, _)| *i != id);
    }

    fn add_firstarg(&mut self, id: usize, arg: &[u8]) {
        match self.firstargs.iter_mut().find(|(i, _)| *i == id) {
            Some((_, v)) => {
                if !v.iter().any(|a| a.eq_ignore_ascii_case(arg)) {
                    v.push(arg.to_vec());
                }
            }
            None => self.firstargs.push((id, vec![arg.to_vec()])),
        }
    }

    /// Allow or deny one command; a container's subcommands follow it.
    fn change_perm(&mut self, e: &CmdEntry, allow: bool) {
        self.set_bit(e.id, allow);
        self.reset_firstargs(e.id);
        for s in e.subs.values() {
            self.set_bit(s.id, allow);
        }
    }

    fn set_category(&mut self, cx: &RuleCtx, flag: u64, allow: bool) {
        for e in cx.reg.iter() {
            if e.spec.acl & flag != 0 {
                self.change_perm(e, allow);
            }
            for s in e.subs.values() {
                if s.spec.acl & flag != 0 {
                    self.change_perm(s, allow);
                }
            }
        }
    }

    /// Keep `rule` (lower-cased) last in the rule list, dropping the rules it overrides: the
    /// same one, and the subcommand rules of a whole command.
    fn update_rules(&mut self, rule: &str, allow: bool) {
        let new = rule.to_ascii_lowercase();
        self.rules.retain(|r| {
            let r = &r[1..];
            !(r == new
                || (r.len() > new.len() && r.starts_with(&new) && r.as_bytes()[new.len()] == b'|'))
        });
        self.rules
            .push(format!("{}{}", if allow { '+' } else { '-' }, new));
    }

    /// `+@all -@hash +hget`: the command rules as ACL SETUSER takes them back.
    pub fn describe_commands(&self) -> String {
        let mut s = String::from(if self.future { "+@all" } else { "-@all" });
        for r in &self.rules {
            s.push(' ');
            s.push_str(r);
        }
        s
    }

    /// GETUSER's `keys` field: `~*`, or the patterns separated by spaces.
    pub fn describe_keys(&self) -> Vec<u8> {
        if self.allkeys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, p) in self.patterns.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            p.describe(&mut out);
        }
        out
    }

    /// GETUSER's `channels` field.
    pub fn describe_channels(&self) -> Vec<u8> {
        if self.allchannels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, c) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(c);
        }
        out
    }

    /// The whole selector in ACL LIST form.
    fn describe(&self, out: &mut Vec<u8>) {
        if self.allkeys {
            out.extend_from_slice(b"~* ");
        } else {
            for p in &self.patterns {
                p.describe(out);
                out.push(b' ');
            }
        }
        if self.allchannels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                out.push(b'&');
                out.extend_from_slice(c);
                out.push(b' ');
            }
        }
        out.extend_from_slice(self.describe_commands().as_bytes());
    }

    /// Apply one selector operation (ACLSetSelector).
    pub fn apply(&mut self, cx: &RuleCtx, op: &[u8]) -> Result<(), SetError> {
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("allkeys") || is("~*") {
            self.allkeys = true;
            self.patterns.clear();
        } else if is("resetkeys") {
            self.allkeys = false;
            self.patterns.clear();
        } else if is("allchannels") || is("&*") {
            self.allchannels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.allchannels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.bits.iter_mut().for_each(|w| *w = !0);
            self.allcommands = true;
            self.future = true;
            self.rules.clear();
            self.firstargs.clear();
        } else if is("nocommands") || is("-@all") {
            self.bits.iter_mut().for_each(|w| *w = 0);
            self.allcommands = false;
            self.future = false;
            self.rules.clear();
            self.firstargs.clear();
        } else if op.first().is_some_and(|&c| c == b'~' || c == b'%') {
            if self.allkeys {
                return Err(SetError::KeyAfterAll);
            }
            let mut flags = 0u8;
            let mut offset = 1;
            if op[0] == b'%' {
                while offset < op.len() {
                    let c = op[offset];
                    if c.eq_ignore_ascii_case(&b'R') && flags & PERM_READ == 0 {
                        flags |= PERM_READ;
                    } else if c.eq_ignore_ascii_case(&b'W') && flags & PERM_WRITE == 0 {
                        flags |= PERM_WRITE;
                    } else if c == b'~' && flags != 0 {
                        offset += 1;
                        break;
                    } else {
                        return Err(SetError::Syntax);
                    }
                    offset += 1;
                }
            } else {
                flags = PERM_ALL;
            }
            let pat = &op[offset.min(op.len())..];
            if has_spaces(pat) {
                return Err(SetError::Syntax);
            }
            match self.patterns.iter_mut().find(|p| p.pattern == pat) {
                Some(p) => p.flags |= flags,
                None => self.patterns.push(KeyPattern {
                    flags,
                    pattern: pat.to_vec(),
                }),
            }
            self.allkeys = false;
        } else if op.first() == Some(&b'&') {
            if self.allchannels {
                return Err(SetError::ChannelAfterAll);
            }
            let pat = &op[1..];
            if has_spaces(pat) {
                return Err(SetError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pat) {
                self.channels.push(pat.to_vec());
            }
            self.allchannels = false;
        } else if op.first() == Some(&b'+') && op.get(1) != Some(&b'@') {
            let name = String::from_utf8_lossy(&op[1..]).into_owned();
            match name.rfind('|') {
                None => {
                    let e = lookup(cx, &name).ok_or(SetError::Unknown)?;
                    self.change_perm(e, true);
                    self.update_rules(&e.fullname, true);
                }
                Some(bar) => {
                    let (base, sub) = (&name[..bar], &name[bar + 1..]);
                    let e = lookup(cx, base).ok_or(SetError::Unknown)?;
                    if e.fullname.contains('|') {
                        return Err(SetError::SubcommandFirstArg);
                    }
                    if sub.is_empty() {
                        return Err(SetError::Syntax);
                    }
                    if !e.subs.is_empty() {
                        let s = lookup(cx, &name).ok_or(SetError::Unknown)?;
                        self.change_perm(s, true);
                    } else {
                        crate::log::warning(&format!(
                            "Deprecation warning: Allowing a first arg of an otherwise blocked \
                             command is a misuse of ACL and may get disabled in the future \
                             (offender: +{name})"
                        ));
                        let id = e.id;
                        self.add_firstarg(id, &op[1 + bar + 1..]);
                    }
                    self.update_rules(&name, true);
                }
            }
        } else if op.first() == Some(&b'-') && op.get(1) != Some(&b'@') {
            let name = String::from_utf8_lossy(&op[1..]).into_owned();
            let e = lookup(cx, &name).ok_or(SetError::Unknown)?;
            self.change_perm(e, false);
            self.update_rules(&e.fullname, false);
        } else if matches!(op.first(), Some(b'+' | b'-')) && op.get(1) == Some(&b'@') {
            let allow = op[0] == b'+';
            let name = String::from_utf8_lossy(&op[2..]).into_owned();
            let flag = category_flag(&name).ok_or(SetError::Unknown)?;
            self.update_rules(&format!("@{name}"), allow);
            self.set_category(cx, flag, allow);
        } else {
            return Err(SetError::Syntax);
        }
        Ok(())
    }

    /// A `(...)` selector: the operations inside the parentheses, split as arguments.
    fn from_opset(cx: &RuleCtx, op: &[u8]) -> Result<Selector, SetError> {
        let mut s = Selector::new(cx, false);
        let inner = &op[1..op.len() - 1];
        let mut buf = Vec::new();
        let mut ranges = Vec::new();
        if tern_resp::split_args(inner, &mut buf, &mut ranges).is_ok() {
            for (a, b) in ranges {
                s.apply(cx, &buf[a..b])?;
            }
        }
        Ok(s)
    }
}

/// Look a command up by its original name (`get`, `config|get`), ignoring case.
fn lookup<'r>(cx: &RuleCtx<'r>, name: &str) -> Option<&'r CmdEntry> {
    cx.reg.by_fullname(name)
}

/// `@name` category flag, ignoring case.
pub fn category_flag(name: &str) -> Option<u64> {
    cat::NAMES
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(name))
        .map(|(f, _)| *f)
}

/// Spaces (C isspace) or NUL: not allowed in user names and patterns.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c == b' ' || (b'\t'..=b'\r').contains(&c))
}

/// A user's rules.
#[derive(Clone, Debug)]
pub struct Rules {
    pub enabled: bool,
    pub nopass: bool,
    pub skip_sanitize: bool,
    /// SHA-256 hex digests.
    pub passwords: Vec<String>,
    /// The root selector first.
    pub selectors: Vec<Selector>,
}

impl Rules {
    /// A new user: off, no passwords, no permissions (channels per acl-pubsub-default).
    pub fn new(cx: &RuleCtx) -> Rules {
        Rules {
            enabled: false,
            nopass: false,
            skip_sanitize: false,
            passwords: Vec::new(),
            selectors: vec![Selector::new(cx, true)],
        }
    }

    /// The default user as Redis creates it: `on nopass ~* &* +@all`.
    pub fn default_user(cx: &RuleCtx) -> Rules {
        let mut r = Rules::new(cx);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            let _ = r.apply(cx, op.as_bytes());
        }
        r
    }

    pub fn root(&self) -> &Selector {
        &self.selectors[0]
    }

    /// Apply one ACL SETUSER operation (ACLSetUser).
    pub fn apply(&mut self, cx: &RuleCtx, op: &[u8]) -> Result<(), SetError> {
        if op.is_empty() {
            return Ok(());
        }
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.skip_sanitize = true;
        } else if is("sanitize-payload") {
            self.skip_sanitize = false;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = if op[0] == b'>' {
                hash_password(&op[1..])
            } else {
                check_hash(&op[1..])?
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = if op[0] == b'<' {
                hash_password(&op[1..])
            } else {
                check_hash(&op[1..])?
            };
            match self.passwords.iter().position(|p| *p == hash) {
                Some(i) => {
                    self.passwords.remove(i);
                }
                None => return Err(SetError::NoSuchPassword),
            }
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let s = Selector::from_opset(cx, op)?;
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            for o in ["resetpass", "resetkeys", "resetchannels"] {
                self.apply(cx, o.as_bytes())?;
            }
            if cx.pubsub_all {
                self.apply(cx, b"allchannels")?;
            }
            for o in ["off", "sanitize-payload", "clearselectors", "-@all"] {
                self.apply(cx, o.as_bytes())?;
            }
        } else {
            self.selectors[0].apply(cx, op)?;
        }
        Ok(())
    }

    /// Apply several operations, merging `(...)` selectors spread over several arguments
    /// first. Err carries the failing operation (as merged) and the error; on error the rules
    /// are partly applied (callers work on a copy).
    pub fn apply_all(&mut self, cx: &RuleCtx, ops: &[Vec<u8>]) -> Result<(), ApplyError> {
        let merged = merge_selectors(ops).map_err(ApplyError::Unmatched)?;
        for op in &merged {
            self.apply(cx, op)
                .map_err(|e| ApplyError::Op(op.clone(), e))?;
        }
        Ok(())
    }

    /// Every user flag in Redis's order (`on`/`off`, `nopass`, sanitize).
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut v = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            v.push("nopass");
        }
        v.push(if self.skip_sanitize {
            "skip-sanitize-payload"
        } else {
            "sanitize-payload"
        });
        v
    }

    /// The user in ACL LIST / ACL file form (without `user <name> `).
    pub fn describe(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.flag_names() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(p.as_bytes());
            out.push(b' ');
        }
        for s in &self.selectors {
            if s.root {
                s.describe(&mut out);
            } else {
                out.extend_from_slice(b" (");
                s.describe(&mut out);
                out.push(b')');
            }
        }
        out
    }

    /// True when the password is one of the user's (or the user needs none).
    pub fn password_ok(&self, pass: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let h = hash_password(pass);
        self.passwords
            .iter()
            .any(|p| constant_time_eq(p.as_bytes(), h.as_bytes()))
    }

    /// Some selector may run anything with any key and channel.
    pub fn unrestricted(&self) -> bool {
        self.selectors
            .iter()
            .any(|s| s.allcommands && s.allkeys && s.allchannels)
    }
}

#[derive(Debug)]
pub enum ApplyError {
    /// An opening parenthesis never closed: the argument where it started.
    Unmatched(Vec<u8>),
    Op(Vec<u8>, SetError),
}

/// Join `(...)` selectors given over several arguments into one operation each. Err: the
/// argument opening a selector that is never closed.
pub fn merge_selectors(ops: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, Vec<u8>> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, op) in ops.iter().enumerate() {
        if let Some((_, sel)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                out.push(open.take().map(|(_, s)| s).unwrap_or_default());
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((i, op.clone()));
            continue;
        }
        out.push(op.clone());
    }
    match open {
        Some((i, _)) => Err(ops[i].clone()),
        None => Ok(out),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn check_hash(h: &[u8]) -> Result<String, SetError> {
    if h.len() != 64 || !h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(SetError::BadHash);
    }
    Ok(String::from_utf8_lossy(h).into_owned())
}

/// SHA-256 of the password, in lower-case hex (how Redis stores passwords).
pub fn hash_password(pass: &[u8]) -> String {
    let d = sha256(pass);
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// SHA-256 (FIPS 180-4).
pub fn sha256(data: &[u8]) -> [u8; 32] {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    let bitlen = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bitlen.to_be_bytes());
    for chunk in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in chunk.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 32];
    for (i, v) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_vectors() {
        assert_eq!(
            hash_password(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hash_password(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hash_password(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // The hash Redis's acl.tcl uses for "passwd4".
        assert_eq!(
            hash_password(b"passwd4"),
            "34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6"
        );
    }

    #[test]
    fn merge() {
        let ops: Vec<Vec<u8>> = ["on", "(+get", "~a)", "(~b)"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let m = merge_selectors(&ops).unwrap();
        assert_eq!(
            m,
            vec![b"on".to_vec(), b"(+get ~a)".to_vec(), b"(~b)".to_vec()]
        );
        let bad: Vec<Vec<u8>> = ["(+get", "~a"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        assert_eq!(merge_selectors(&bad).unwrap_err(), b"(+get".to_vec());
    }
}
