//! The cluster commands that read the keyspace by slot or steer how a client is routed:
//! CLUSTER KEYSLOT, COUNTKEYSINSLOT, GETKEYSINSLOT (through the dicts' per-slot index, never a
//! scan), ASKING, READONLY, READWRITE.

use tern_cluster::{key_hash_slot, CLUSTER_SLOTS};
use tern_runtime::args::{parse_i64, Args};
use tern_runtime::clients::cflags;
use tern_runtime::ctx::Ctx;

const DISABLED: &str = "ERR This instance has cluster support disabled";
const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";

/// False (and the error answered) unless the server runs in cluster mode.
fn cluster_mode(ctx: &mut Ctx) -> bool {
    let on = ctx.srv.cluster.get().is_some();
    if !on {
        ctx.error(DISABLED);
    }
    on
}

pub fn keyslot(ctx: &mut Ctx, args: &Args) {
    if cluster_mode(ctx) {
        ctx.out.int(key_hash_slot(&args[2]) as i64);
    }
}

pub fn countkeysinslot(ctx: &mut Ctx, args: &Args) {
    if !cluster_mode(ctx) {
        return;
    }
    let Some(slot) = parse_i64(&args[2]) else {
        return ctx.error(NOT_AN_INTEGER);
    };
    if !(0..CLUSTER_SLOTS as i64).contains(&slot) {
        return ctx.error("ERR Invalid slot");
    }
    let slot = slot as u16;
    let n = ctx.srv.store.lock_slot(0, slot).dict().count_in_slot(slot);
    ctx.out.int(n as i64);
}

pub fn getkeysinslot(ctx: &mut Ctx, args: &Args) {
    if !cluster_mode(ctx) {
        return;
    }
    let (Some(slot), Some(max)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
        return ctx.error(NOT_AN_INTEGER);
    };
    if !(0..CLUSTER_SLOTS as i64).contains(&slot) || max < 0 {
        return ctx.error("ERR Invalid slot or number of keys");
    }
    let slot = slot as u16;
    let keys = ctx
        .srv
        .store
        .lock_slot(0, slot)
        .dict()
        .keys_in_slot(slot, max as usize);
    ctx.out.array(keys.len());
    for k in &keys {
        ctx.out.bulk(k);
    }
}

pub fn asking(ctx: &mut Ctx, _args: &Args) {
    if cluster_mode(ctx) {
        ctx.conn.asking = true;
        ctx.out.ok();
    }
}

pub fn readonly(ctx: &mut Ctx, _args: &Args) {
    if cluster_mode(ctx) {
        ctx.conn.handle.set_flag(cflags::READONLY, true);
        ctx.out.ok();
    }
}

pub fn readwrite(ctx: &mut Ctx, _args: &Args) {
    if cluster_mode(ctx) {
        ctx.conn.handle.set_flag(cflags::READONLY, false);
        ctx.out.ok();
    }
}
