use tern_runtime::args::Args;
use tern_runtime::ctx::Ctx;

// Until cluster mode is wired in, as a Redis with `cluster-enabled no` answers.
const DISABLED: &str = "ERR This instance has cluster support disabled";

pub fn asking(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn countkeysinslot(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn getkeysinslot(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn keyslot(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn readonly(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}

pub fn readwrite(ctx: &mut Ctx, _args: &Args) {
    ctx.error(DISABLED);
}
