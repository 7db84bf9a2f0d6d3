//! Fuzz the RESP request parser: arbitrary bytes, split at arbitrary points, arbitrary limits.
//! Checks: no panic, progress, argument ranges in bounds, and incremental == one-shot parsing
//! (see ../check.rs). Run: `cd fuzz && cargo +nightly fuzz run resp_parser`.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use tern_resp::Limits;

#[path = "../check.rs"]
mod check;

#[derive(Arbitrary, Debug)]
struct Input {
    data: Vec<u8>,
    /// Sizes of successive reads (cycled).
    chunks: Vec<u16>,
    /// Small proto-max-bulk-len values exercise the "invalid bulk length" bound.
    max_bulk_len: u32,
    auth_required: bool,
    /// Optional filler (`pad_len % 70_000` copies of `pad_byte` inserted at `pad_at`, only when
    /// `pad_on == 0xA5` so most runs stay small and fast), so that the 64 KiB inline /
    /// count-string limits are reachable from small inputs.
    pad_on: u8,
    pad_at: u16,
    pad_byte: u8,
    pad_len: u32,
}

fuzz_target!(|inp: Input| {
    let mut data = inp.data;
    let pad = if inp.pad_on == 0xA5 {
        (inp.pad_len % 70_000) as usize
    } else {
        0
    };
    if pad > 0 {
        let at = (inp.pad_at as usize).min(data.len());
        data.splice(at..at, std::iter::repeat(inp.pad_byte).take(pad));
    }
    let limits = Limits {
        max_bulk_len: inp.max_bulk_len as i64,
        auth_required: inp.auth_required,
    };
    // Keep the number of reads bounded for padded inputs (re-scanning a growing buffer on every
    // read is quadratic, as in Redis).
    let min_chunk = data.len() / 64;
    let chunks: Vec<usize> = inp
        .chunks
        .iter()
        .map(|&c| (c as usize).max(min_chunk))
        .collect();
    check::check(&data, &chunks, &limits);
    // default limits too, with one-byte reads
    check::check(&data[..data.len().min(512)], &[1], &Limits::default());
});
