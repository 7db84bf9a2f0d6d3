use tern_runtime::args::Args;
use tern_runtime::ctx::Ctx;

// Until cluster mode is wired in, as a Redis with `cluster-enabled no` answers.
const DISABLED: &str = "ERR This instance has cluster support disabled";

pub fn addslots(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn addslotsrange(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn bumpepoch(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn count_failure_reports(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn delslots(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn delslotsrange(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn failover(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn flushslots(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn forget(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn help(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn info(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn links(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn meet(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn myid(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn myshardid(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn nodes(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn replicas(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn replicate(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn reset(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn saveconfig(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn set_config_epoch(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn setslot(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn shards(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn slaves(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn slots(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}
