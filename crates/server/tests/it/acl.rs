//! ACL against the real binary: ACL SETUSER rules and their description (LIST, GETUSER),
//! AUTH / HELLO AUTH as users, NOPERM refusals for commands, keys (%R / %W), channels and
//! selectors with Redis's exact texts, MULTI (queue-time and EXEC-time refusals), scripts
//! (redis.call, redis.acl_check_cmd), the ACL log, DELUSER / CLIENT KILL USER disconnecting,
//! requirepass as the default user's password, and users from the config file and aclfile.
use crate::common::{fresh_dir, wait_for, Raw, Server};
use std::time::Duration;
use tern_runtime::acl::rules::hash_password;

/// A connection authenticated as `user` (any password: the users below are nopass unless set).
fn login(port: u16, user: &str, pass: &str) -> Raw<false> {
    let mut c = Raw::<false>::new(port);
    assert_eq!(c.q(&format!("AUTH {user} {pass}")), "OK");
    c
}

#[test]
fn setuser_getuser_list_users_whoami() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    assert_eq!(c.q("ACL WHOAMI"), "default");
    assert_eq!(c.q("ACL USERS"), "[default]");
    assert_eq!(
        c.q("ACL LIST"),
        "[user default on nopass sanitize-payload ~* &* +@all]"
    );
    assert_eq!(c.q("ACL SETUSER alice"), "OK");
    assert_eq!(
        c.q("ACL GETUSER alice"),
        "[flags,[off,sanitize-payload],passwords,[],commands,-@all,keys,,channels,,selectors,[]]"
    );
    assert_eq!(
        c.q("ACL SETUSER alice on >pw1 #34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6 ~k:* %R~r:* %W~w:* %RW~x &chan +@all -@hash +hget"),
        "OK"
    );
    assert_eq!(
        c.q("ACL LIST"),
        format!(
            "[user alice on sanitize-payload #{} \
             #34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6 ~k:* %R~r:* %W~w:* \
             ~x resetchannels &chan +@all -@hash +hget,\
             user default on nopass sanitize-payload ~* &* +@all]",
            hash_password(b"pw1")
        )
    );
    assert_eq!(c.q("ACL USERS"), "[alice,default]");
    // Rules are compacted as Redis keeps them.
    c.q("ACL SETUSER alice -@hash");
    assert_eq!(
        c.q("ACL GETUSER alice")
            .split(",commands,")
            .nth(1)
            .unwrap()
            .split(",keys")
            .next()
            .unwrap(),
        "+@all +hget -@hash"
    );
    c.q("ACL SETUSER alice -@all +client|list +config|get +config +acl|list -acl");
    let u = c.q("ACL GETUSER alice");
    assert!(
        u.contains(",commands,-@all +client|list +config -acl,"),
        "{u}"
    );
    // Selectors.
    assert_eq!(
        c.qa(&[
            b"ACL",
            b"SETUSER",
            b"alice",
            b"(+get ~sel*)",
            b"(+set",
            b"%W~w*)"
        ]),
        "OK"
    );
    let u = c.q("ACL GETUSER alice");
    assert!(
        u.ends_with(",selectors,[[commands,-@all +get,keys,~sel*,channels,],[commands,-@all +set,keys,%W~w*,channels,]]]"),
        "{u}"
    );
    c.q("ACL SETUSER alice clearselectors");
    assert!(c.q("ACL GETUSER alice").ends_with(",selectors,[]]"));
    assert_eq!(c.q("ACL GETUSER nobody"), "(nil)");
    // WHOAMI as another user.
    let mut a = login(s.port, "alice", "pw1");
    a.q("ACL WHOAMI");
    c.q("ACL SETUSER alice +acl|whoami");
    assert_eq!(a.q("ACL WHOAMI"), "alice");
}

#[test]
fn setuser_errors() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    assert_eq!(
        c.qa(&[b"ACL", b"SETUSER", b"a a"]),
        "!ERR Usernames can't contain spaces or null characters"
    );
    assert_eq!(
        c.q("ACL SETUSER u +nosuchcmd"),
        "!ERR Error in ACL SETUSER modifier '+nosuchcmd': Unknown command or category name in ACL"
    );
    assert_eq!(
        c.q("ACL SETUSER u bogus"),
        "!ERR Error in ACL SETUSER modifier 'bogus': Syntax error"
    );
    assert_eq!(
        c.q("ACL SETUSER u #abc"),
        "!ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
    );
    assert_eq!(
        c.q("ACL SETUSER u <nopw"),
        "!ERR Error in ACL SETUSER modifier '<nopw': The password you are trying to remove from the user does not exist"
    );
    assert_eq!(
        c.q("ACL SETUSER u allkeys ~foo"),
        "!ERR Error in ACL SETUSER modifier '~foo': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
    );
    assert_eq!(
        c.q("ACL SETUSER u +config|get|x"),
        "!ERR Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported"
    );
    assert_eq!(
        c.q("ACL SETUSER u (+get"),
        "!ERR Unmatched parenthesis in acl selector starting at '(+get'."
    );
    // Nothing of a failed SETUSER is applied.
    assert_eq!(c.q("ACL GETUSER u"), "(nil)");
    assert_eq!(
        c.q("ACL DELUSER default"),
        "!ERR The 'default' user cannot be removed"
    );
    assert_eq!(c.q("ACL CAT nosuch"), "!ERR Unknown category 'nosuch'");
    assert_eq!(
        c.q("ACL CAT a b"),
        "!ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP."
    );
    assert_eq!(
        c.q("ACL GENPASS 5000"),
        "!ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096"
    );
    assert_eq!(c.q("ACL GENPASS").len(), 64);
    assert_eq!(c.q("ACL GENPASS 5").len(), 2);
    assert_eq!(
        c.q("ACL LOAD"),
        "!ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
    );
    let cat = c.q("ACL CAT transaction");
    assert!(cat.contains("multi") && cat.contains("exec") && !cat.contains("get,"));
    assert!(c
        .q("ACL CAT")
        .starts_with("[keyspace,read,write,set,sortedset,list,hash,string,"));
}

#[test]
fn auth_users_and_requirepass() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    assert_eq!(
        c.q("AUTH x"),
        "!ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
    );
    c.q("ACL SETUSER bob >secret");
    // Users start disabled.
    assert_eq!(
        c.q("AUTH bob secret"),
        "!WRONGPASS invalid username-password pair or user is disabled."
    );
    c.q("ACL SETUSER bob on +@all ~*");
    assert_eq!(
        c.q("AUTH bob wrong"),
        "!WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(c.q("AUTH bob secret"), "OK");
    assert_eq!(c.q("ACL WHOAMI"), "bob");
    assert!(c.q("CLIENT INFO").contains(" user=bob "));
    // HELLO AUTH: the last pair counts; a failure changes nothing.
    let mut h = Raw::<false>::new(s.port);
    h.q("HELLO 2 AUTH bob secret SETNAME n1");
    assert_eq!(h.q("ACL WHOAMI"), "bob");
    assert_eq!(
        h.q("HELLO 2 AUTH bob nope SETNAME n2"),
        "!WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(h.q("CLIENT GETNAME"), "n1");
    // requirepass is the default user's password.
    let mut admin = Raw::<false>::new(s.port);
    assert_eq!(admin.q("CONFIG SET requirepass foo"), "OK");
    let mut n = Raw::<false>::new(s.port);
    assert_eq!(n.q("GET x"), "!NOAUTH Authentication required.");
    assert_eq!(
        n.q("AUTH bar"),
        "!WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(n.q("AUTH foo"), "OK");
    assert_eq!(n.q("ACL WHOAMI"), "default");
    assert!(n.q("ACL GETUSER default").contains("[on,sanitize-payload]"));
    // RESET goes back to the default user, unauthenticated.
    assert_eq!(n.q("RESET"), "RESET");
    assert_eq!(n.q("PING"), "!NOAUTH Authentication required.");
    assert_eq!(admin.q("CONFIG SET requirepass \"\""), "OK");
    // "" as one word: the raw client sends the two quote characters; set it properly.
    admin.qa(&[b"CONFIG", b"SET", b"requirepass", b""]);
    assert_eq!(Raw::<false>::new(s.port).q("PING"), "PONG");
    // The default user off: new connections are not authenticated.
    admin.q("ACL SETUSER default off");
    assert_eq!(
        Raw::<false>::new(s.port).q("PING"),
        "!NOAUTH Authentication required."
    );
    admin.q("ACL SETUSER default on");
    assert_eq!(Raw::<false>::new(s.port).q("PING"), "PONG");
}

#[test]
fn command_key_and_channel_permissions() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    c.q("ACL SETUSER u on nopass +get +set +mget +publish +subscribe +psubscribe +client|id ~k:* &news.*");
    let mut u = login(s.port, "u", "x");
    assert_eq!(
        u.q("INCR k:1"),
        "!NOPERM User u has no permissions to run the 'incr' command"
    );
    assert_eq!(
        u.q("CLIENT LIST"),
        "!NOPERM User u has no permissions to run the 'client|list' command"
    );
    assert!(u.q("CLIENT ID").starts_with(':'));
    assert_eq!(u.q("SET k:1 v"), "OK");
    assert_eq!(u.q("SET other v"), "!NOPERM No permissions to access a key");
    assert_eq!(
        u.q("MGET k:1 k:2 other"),
        "!NOPERM No permissions to access a key"
    );
    assert_eq!(u.q("PUBLISH news.a m"), ":0");
    assert_eq!(
        u.q("PUBLISH sport m"),
        "!NOPERM No permissions to access a channel"
    );
    assert_eq!(
        u.q("SUBSCRIBE sport"),
        "!NOPERM No permissions to access a channel"
    );
    // A pattern subscription must be one of the patterns, literally.
    assert_eq!(
        u.q("PSUBSCRIBE news.x*"),
        "!NOPERM No permissions to access a channel"
    );
    assert_eq!(u.q("PSUBSCRIBE news.*"), "[psubscribe,news.*,:1]");
    // Read / write key permissions.
    c.q("ACL SETUSER rw on nopass +@all %R~r* %W~w*");
    let mut rw = login(s.port, "rw", "x");
    c.q("SET rkey 1");
    assert_eq!(rw.q("GET rkey"), "1");
    assert_eq!(rw.q("SET rkey 2"), "!NOPERM No permissions to access a key");
    assert_eq!(rw.q("LPUSH wlist 1"), ":1");
    assert_eq!(
        rw.q("LRANGE wlist 0 -1"),
        "!NOPERM No permissions to access a key"
    );
    assert_eq!(rw.q("COPY rkey wkey"), ":1");
    assert_eq!(
        rw.q("COPY wkey rkey2"),
        "!NOPERM No permissions to access a key"
    );
    // SET with GET reads the key.
    assert_eq!(
        rw.q("SET wkey2 v GET"),
        "!NOPERM No permissions to access a key"
    );
    // Selectors: each is all-or-nothing.
    c.q("ACL SETUSER sel on nopass resetkeys -@all (+get ~r*) (+set ~w*)");
    let mut sel = login(s.port, "sel", "x");
    assert_eq!(sel.q("GET rkey"), "1");
    assert_eq!(sel.q("SET wkey v"), "OK");
    assert_eq!(sel.q("GET wkey"), "!NOPERM No permissions to access a key");
    assert_eq!(
        sel.q("PING"),
        "!NOPERM User sel has no permissions to run the 'ping' command"
    );
    // First-arg rules.
    c.q("ACL SETUSER fa on nopass -@all +select|0");
    let mut fa = login(s.port, "fa", "x");
    assert_eq!(fa.q("SELECT 0"), "OK");
    assert_eq!(
        fa.q("SELECT 1"),
        "!NOPERM User fa has no permissions to run the 'select' command"
    );
    // Changes apply to connections already logged in.
    c.q("ACL SETUSER u -get");
    assert_eq!(
        u.q("GET k:1"),
        "!NOPERM User u has no permissions to run the 'get' command"
    );
    // SORT BY / GET need access to every key.
    c.q("ACL SETUSER srt on nopass +sort +lpush ~mylist");
    let mut srt = login(s.port, "srt", "x");
    srt.q("LPUSH mylist 1");
    assert_eq!(
        srt.q("SORT mylist BY v*"),
        "!ERR BY option of SORT denied due to insufficient ACL permissions."
    );
    assert_eq!(
        srt.q("SORT mylist GET v*"),
        "!ERR GET option of SORT denied due to insufficient ACL permissions."
    );
    assert_eq!(srt.q("SORT mylist"), "[1]");
}

#[test]
fn dryrun() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    c.q("ACL SETUSER t +@all %R~read* %W~write* %RW~rw* resetchannels &chan");
    assert_eq!(c.q("ACL DRYRUN t GET read"), "OK");
    assert_eq!(
        c.q("ACL DRYRUN t SET read v"),
        "User t has no permissions to access the 'read' key"
    );
    assert_eq!(
        c.q("ACL DRYRUN t PUBLISH other m"),
        "User t has no permissions to access the 'other' channel"
    );
    assert_eq!(c.q("ACL DRYRUN t EVAL x 1 rw1"), "OK");
    assert_eq!(
        c.q("ACL DRYRUN t EVAL x 1 read"),
        "User t has no permissions to access the 'read' key"
    );
    assert_eq!(c.q("ACL DRYRUN t EVAL_RO x 1 read"), "OK");
    // numkeys that does not fit: no keys, as Redis.
    assert_eq!(c.q("ACL DRYRUN t EVAL x 3 rw read"), "OK");
    assert_eq!(c.q("ACL DRYRUN t SORT read STORE write"), "OK");
    assert_eq!(
        c.q("ACL DRYRUN t SORT read STORE read"),
        "User t has no permissions to access the 'read' key"
    );
    assert_eq!(
        c.q("ACL DRYRUN nobody GET x"),
        "!ERR User 'nobody' not found"
    );
    assert_eq!(
        c.q("ACL DRYRUN t NOSUCH x"),
        "!ERR Command 'NOSUCH' not found"
    );
    assert_eq!(
        c.q("ACL DRYRUN t SET v"),
        "!ERR wrong number of arguments for 'set' command"
    );
    c.q("ACL SETUSER t -@all");
    assert_eq!(
        c.q("ACL DRYRUN t GET x"),
        "User t has no permissions to run the 'get' command"
    );
}

#[test]
fn multi_refusals() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    c.q("ACL SETUSER m on nopass +multi +exec +discard +incr +publish ~obj:* resetchannels");
    let mut m = login(s.port, "m", "x");
    // Queue time: the command is refused and EXEC aborts.
    assert_eq!(m.q("MULTI"), "OK");
    assert_eq!(
        m.q("GET obj:1"),
        "!NOPERM User m has no permissions to run the 'get' command"
    );
    assert_eq!(m.q("INCR obj:1"), "QUEUED");
    assert_eq!(
        m.q("EXEC"),
        "!EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(m.q("MULTI"), "OK");
    assert_eq!(
        m.q("PUBLISH ch x"),
        "!NOPERM No permissions to access a channel"
    );
    assert_eq!(m.q("DISCARD"), "OK");
    // Rules changed between queueing and EXEC.
    assert_eq!(m.q("MULTI"), "OK");
    assert_eq!(m.q("INCR obj:1"), "QUEUED");
    assert_eq!(m.q("INCR obj:2"), "QUEUED");
    c.q("ACL SETUSER m -incr");
    assert_eq!(
        m.q("EXEC"),
        "[!NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand,\
         !NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand]"
    );
    let log = c.q("ACL LOG 1");
    assert!(log.contains("context,multi,object,incr"), "{log}");
    assert!(log.contains("cmd=exec"), "{log}");
}

#[test]
fn scripts() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    c.q("ACL SETUSER sc on nopass +@scripting +set ~x*");
    let mut sc = login(s.port, "sc", "x");
    let e = sc.qa(&[b"EVAL", b"return redis.call('incr','x1')", b"0"]);
    assert!(
        e.starts_with(
            "!ERR ACL failure in script: User sc has no permissions to run the 'incr' command script:"
        ),
        "{e}"
    );
    let e = sc.qa(&[b"EVAL", b"return redis.call('set','y1','v')", b"0"]);
    assert!(
        e.starts_with("!ERR ACL failure in script: No permissions to access a key script:"),
        "{e}"
    );
    assert_eq!(
        sc.qa(&[
            b"EVAL",
            b"return redis.call('set',KEYS[1],'v')",
            b"1",
            b"x1"
        ]),
        "OK"
    );
    // The key given to EVAL is checked before the script runs.
    assert_eq!(
        sc.qa(&[b"EVAL", b"return 1", b"1", b"y1"]),
        "!NOPERM No permissions to access a key"
    );
    // pcall returns the refusal instead of raising it.
    let e = sc.qa(&[
        b"EVAL",
        b"local r = redis.pcall('incr','x1'); return r['err']",
        b"0",
    ]);
    assert!(e.starts_with("ERR ACL failure in script:"), "{e}");
    assert_eq!(
        sc.qa(&[b"EVAL", b"return redis.acl_check_cmd('set','xx',1)", b"0"]),
        ":1"
    );
    assert_eq!(
        sc.qa(&[
            b"EVAL",
            b"return redis.acl_check_cmd('hset','xx','f',1)",
            b"0"
        ]),
        "(nil)"
    );
    assert_eq!(
        sc.qa(&[b"EVAL", b"return redis.acl_check_cmd('set','yy',1)", b"0"]),
        "(nil)"
    );
    let e = sc.qa(&[b"EVAL", b"return redis.acl_check_cmd('nosuch')", b"0"]);
    assert!(
        e.contains("Invalid command passed to redis.acl_check_cmd()"),
        "{e}"
    );
    let log = c.q("ACL LOG 1");
    assert!(
        log.contains("context,lua,object,hset") || log.contains("context,lua"),
        "{log}"
    );
    let log = c.q("ACL LOG");
    assert!(
        log.contains("reason,command,context,lua,object,incr"),
        "{log}"
    );
    assert!(log.contains("cmd=eval"), "{log}");
}

#[test]
fn acl_log() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    c.q("ACL SETUSER lg on >pw +get ~obj:*");
    let mut u = login(s.port, "lg", "pw");
    assert_eq!(c.q("ACL LOG"), "[]");
    for _ in 0..3 {
        u.q("SET obj:1 v");
    }
    u.q("GET other");
    let log = c.q("ACL LOG");
    assert!(
        log.starts_with(
            "[[count,:1,reason,key,context,toplevel,object,other,username,lg,age-seconds,"
        ),
        "{log}"
    );
    assert!(
        log.contains("[count,:3,reason,command,context,toplevel,object,set,username,lg,"),
        "{log}"
    );
    assert!(log.contains("cmd=get user=lg"), "{log}");
    for f in [
        "entry-id",
        "timestamp-created",
        "timestamp-last-updated",
        "client-info",
    ] {
        assert!(log.contains(f), "{f}: {log}");
    }
    assert_eq!(c.q("ACL LOG 1").matches("count").count(), 1);
    // Failed logins are logged under the user they tried.
    assert_eq!(
        Raw::<false>::new(s.port).q("AUTH lg bad"),
        "!WRONGPASS invalid username-password pair or user is disabled."
    );
    assert!(c
        .q("ACL LOG 1")
        .contains("reason,auth,context,toplevel,object,AUTH,username,lg"));
    let info = c.q("INFO stats");
    assert!(info.contains("acl_access_denied_auth:1"), "{info}");
    assert!(info.contains("acl_access_denied_cmd:3"), "{info}");
    assert!(info.contains("acl_access_denied_key:1"), "{info}");
    assert_eq!(c.q("ACL LOG RESET"), "OK");
    assert_eq!(c.q("ACL LOG"), "[]");
    // acllog-max-len bounds it.
    c.q("CONFIG SET acllog-max-len 2");
    for i in 0..5 {
        u.q(&format!("GET k{i}"));
    }
    assert_eq!(c.q("ACL LOG").matches("count").count(), 2);
}

#[test]
fn deluser_and_kill_disconnect() {
    let s = Server::tern(&[]);
    let mut c = Raw::<false>::new(s.port);
    c.q("ACL SETUSER gone on nopass +@all ~*");
    let mut g1 = login(s.port, "gone", "x");
    assert_eq!(g1.q("PING"), "PONG");
    assert_eq!(c.q("ACL DELUSER gone nosuch"), ":1");
    wait_for(
        "client of a deleted user gone",
        Duration::from_secs(3),
        || !c.q("CLIENT LIST").contains("user=gone"),
    );
    // The deleting client gets its reply, then is closed.
    c.q("ACL SETUSER gone2 on nopass +@all ~*");
    let mut d = login(s.port, "gone2", "x");
    assert_eq!(d.q("ACL DELUSER gone2"), ":1");
    wait_for("the deleting client closed", Duration::from_secs(3), || {
        !c.q("CLIENT LIST").contains("user=gone2")
    });
    // CLIENT KILL USER.
    c.q("ACL SETUSER k on nopass +@all ~*");
    let _k = login(s.port, "k", "x");
    assert_eq!(c.q("CLIENT KILL USER k"), ":1");
    assert_eq!(c.q("CLIENT KILL USER nosuch"), "!ERR No such user 'nosuch'");
    // Revoking channels disconnects the subscribers that lose theirs.
    c.q("ACL SETUSER ps on nopass +@all ~* resetchannels &a &b");
    let mut p1 = login(s.port, "ps", "x");
    p1.q("CLIENT SETNAME keep");
    p1.q("SUBSCRIBE a");
    let mut p2 = login(s.port, "ps", "x");
    p2.q("CLIENT SETNAME lose");
    p2.q("SUBSCRIBE b");
    c.q("ACL SETUSER ps resetchannels &a &c");
    let list = c.q("CLIENT LIST");
    assert!(
        list.contains("name=keep") && !list.contains("name=lose"),
        "{list}"
    );
}

#[test]
fn aclfile_save_and_load() {
    let dir = fresh_dir("acl-aclfile");
    let file = dir.join("users.acl");
    std::fs::write(
        &file,
        "user alice on >alice ~* &* +@all\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let s = Server::tern(&["--aclfile", f]);
    let mut c = Raw::<false>::new(s.port);
    assert_eq!(c.q("ACL USERS"), "[alice,default]");
    let mut a = login(s.port, "alice", "alice");
    assert_eq!(c.q("ACL SETUSER eve on >eve +get ~* (+set ~w*)"), "OK");
    assert_eq!(c.q("ACL SAVE"), "OK");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        saved,
        format!(
            "user alice on sanitize-payload #{} ~* &* +@all\n\
             user default on nopass sanitize-payload ~* &* +@all\n\
             user eve on sanitize-payload #{} ~* resetchannels -@all +get \
             (~w* resetchannels -@all +set)\n",
            hash_password(b"alice"),
            hash_password(b"eve")
        )
    );
    // A bad file changes nothing.
    std::fs::write(&file, "user bob on +nosuch\nuser bob on\n").unwrap();
    let e = c.q("ACL LOAD");
    assert!(
        e.starts_with(&format!(
            "!ERR {f}:1: Error in applying operation '+nosuch': Unknown command or category name in ACL. "
        )),
        "{e}"
    );
    assert!(
        e.contains("WARNING: Duplicate user 'bob' found on line 2."),
        "{e}"
    );
    assert_eq!(c.q("ACL USERS"), "[alice,default,eve]");
    // A good one replaces every user and disconnects the others' clients.
    std::fs::write(&file, saved.replace("user eve", "user zed")).unwrap();
    assert_eq!(c.q("ACL LOAD"), "OK");
    assert_eq!(c.q("ACL USERS"), "[alice,default,zed]");
    a.send_cmd("PING");
    wait_for("alice's client closed", Duration::from_secs(3), || {
        !c.q("CLIENT LIST").contains("user=alice")
    });
    let mut z = login(s.port, "zed", "eve");
    assert_eq!(z.q("GET w1"), "(nil)");
    assert_eq!(z.q("SET w1 v"), "OK");
    assert_eq!(z.q("SET x v"), "!NOPERM No permissions to access a key");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn users_from_config_and_rewrite() {
    let dir = fresh_dir("acl-conf");
    let conf = dir.join("tern.conf");
    std::fs::write(
        &conf,
        "user default on nopass ~* +@all -flushdb\nuser carol on >c (+get ~c*)\n",
    )
    .unwrap();
    let port = crate::common::free_port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .arg(conf.to_str().unwrap())
        .args(["--port", &port.to_string(), "--save", "", "--dir"])
        .arg(dir.to_str().unwrap())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for("server up", Duration::from_secs(3), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let mut c = Raw::<false>::new(port);
    assert_eq!(
        c.q("FLUSHDB"),
        "!NOPERM User default has no permissions to run the 'flushdb' command"
    );
    // acl-pubsub-default resetchannels: no channels for the default user defined this way.
    assert_eq!(
        c.q("PUBLISH x y"),
        "!NOPERM No permissions to access a channel"
    );
    let mut k = login(port, "carol", "c");
    assert_eq!(k.q("GET c1"), "(nil)");
    assert_eq!(c.q("CONFIG REWRITE"), "OK");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(
        text.contains("user default on nopass sanitize-payload ~* resetchannels +@all -flushdb\n"),
        "{text}"
    );
    assert!(text.contains(&format!(
        "user carol on sanitize-payload #{} resetchannels -@all (~c* resetchannels -@all +get)\n",
        hash_password(b"c")
    )));
    let _ = child.kill();
    let _ = child.wait();
    // Duplicate users in the configuration stop the start-up.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tern-server"))
        .args([
            "--port",
            &crate::common::free_port().to_string(),
            "--user",
            "foo",
            "--user",
            "foo",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let msg =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(msg.contains("Duplicate user"), "{msg}");
    let _ = std::fs::remove_dir_all(&dir);
}
