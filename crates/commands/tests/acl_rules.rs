//! ACL rules described against the real command table (the runtime's own unit tests have no
//! table: the families live in this crate).
use tern_runtime::acl::rules::{RuleCtx, Rules, SetError};
use tern_runtime::registry::Registry;

fn cx(reg: &Registry) -> RuleCtx<'_> {
    RuleCtx {
        reg,
        pubsub_all: false,
    }
}

fn set(r: &mut Rules, cx: &RuleCtx, ops: &str) {
    for op in ops.split(' ') {
        r.apply(cx, op.as_bytes()).unwrap();
    }
}

#[test]
fn command_rules_compact() {
    tern_commands::install_command_table();
    let reg = Registry::build();
    let cx = cx(&reg);
    let mut r = Rules::new(&cx);
    set(&mut r, &cx, "+@all -@hash -@slow +hget");
    assert_eq!(r.root().describe_commands(), "+@all -@hash -@slow +hget");
    set(&mut r, &cx, "-@hash");
    assert_eq!(r.root().describe_commands(), "+@all -@slow +hget -@hash");
    set(
        &mut r,
        &cx,
        "-@all +client|list +client|list +config|get +config +acl|list -acl",
    );
    assert_eq!(
        r.root().describe_commands(),
        "-@all +client|list +config -acl"
    );
    set(
        &mut r,
        &cx,
        "-@all +select|0 +select|0 +debug|segfault +debug",
    );
    assert_eq!(r.root().describe_commands(), "-@all +select|0 +debug");
    set(&mut r, &cx, "-@all +config +config|get -config|set +config");
    assert_eq!(r.root().describe_commands(), "-@all +config");
}

#[test]
fn describe_user() {
    tern_commands::install_command_table();
    let reg = Registry::build();
    let cx = cx(&reg);
    let mut r = Rules::new(&cx);
    set(&mut r, &cx, "on nopass resetchannels &foo +@all");
    assert_eq!(
        String::from_utf8(r.describe()).unwrap(),
        "on nopass sanitize-payload resetchannels &foo +@all"
    );
    set(&mut r, &cx, "%R~foo %W~foo %RW~bar");
    assert_eq!(r.root().describe_keys(), b"~foo ~bar");
    assert_eq!(
        r.apply(&cx, b"+config|get|appendonly"),
        Err(SetError::SubcommandFirstArg)
    );
    assert_eq!(r.apply(&cx, b"+config|asdf"), Err(SetError::Unknown));
    assert_eq!(r.apply(&cx, b"+get|key1|key2"), Err(SetError::Unknown));
}
