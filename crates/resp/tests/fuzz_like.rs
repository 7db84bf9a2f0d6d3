//! Randomized, deterministic version of the cargo-fuzz target (fuzz/fuzz_targets/resp_parser.rs)
//! so the parser properties run in every `cargo test` without nightly: random mutations of valid
//! and invalid requests, parsed one-shot and in random chunks, must agree (see fuzz/check.rs).

#[path = "../../../fuzz/check.rs"]
mod check;

use rand::{rngs::SmallRng, Rng, SeedableRng};
use tern_resp::Limits;

const TOKENS: &[&[u8]] = &[
    b"\r\n",
    b"\r",
    b"\n",
    b"*",
    b"$",
    b"*1\r\n",
    b"*2\r\n",
    b"*3\r\n",
    b"$0\r\n\r\n",
    b"$3\r\nSET\r\n",
    b"$-1\r\n",
    b"*-1\r\n",
    b"*0\r\n",
    b"\"",
    b"'",
    b"\\x41",
    b"\\\"",
    b" ",
    b"\t",
    b"PING",
    b"9223372036854775807",
    b"2147483648",
    b"-",
    b"x",
    b"\0",
];

fn valid_command(rng: &mut SmallRng, out: &mut Vec<u8>) {
    let n = 1 + rng.gen_range(0..4);
    if rng.gen_range(0..4) == 0 {
        // inline
        for i in 0..n {
            if i > 0 {
                out.push(b' ');
            }
            match rng.gen_range(0..3) {
                0 => out.extend_from_slice(b"arg"),
                1 => out.extend_from_slice(b"\"q \\x41\\n\""),
                _ => out.extend_from_slice(b"'s\\'q'"),
            }
        }
        out.extend_from_slice(if rng.gen_range(0..2) == 0 {
            b"\r\n"
        } else {
            b"\n"
        });
        return;
    }
    out.extend_from_slice(format!("*{n}\r\n").as_bytes());
    for _ in 0..n {
        let len = rng.gen_range(0..20);
        out.extend_from_slice(format!("${len}\r\n").as_bytes());
        for _ in 0..len {
            out.push(rng.gen::<u64>() as u8);
        }
        out.extend_from_slice(b"\r\n");
    }
}

fn random_input(rng: &mut SmallRng) -> Vec<u8> {
    let mut data = Vec::new();
    for _ in 0..1 + rng.gen_range(0..6) {
        valid_command(rng, &mut data);
    }
    // mutate
    for _ in 0..rng.gen_range(0..4) {
        if data.is_empty() {
            break;
        }
        let at = rng.gen_range(0..data.len() + 1);
        match rng.gen_range(0..5) {
            0 => {
                let t = TOKENS[rng.gen_range(0..TOKENS.len())];
                data.splice(at..at, t.iter().copied());
            }
            1 if at < data.len() => data[at] = rng.gen::<u64>() as u8,
            2 if at < data.len() => {
                data.remove(at);
            }
            3 => data.truncate(at),
            _ => {
                let from = rng.gen_range(0..data.len());
                let len = rng.gen_range(0..data.len() - from + 1);
                let piece = data[from..from + len].to_vec();
                data.splice(at..at, piece);
            }
        }
    }
    data
}

#[test]
fn random_requests_one_shot_equals_chunked() {
    let mut rng = SmallRng::seed_from_u64(0x9E37_79B9_7F4A_7C15);
    for _ in 0..100_000 {
        let data = random_input(&mut rng);
        let chunks: Vec<usize> = (0..1 + rng.gen_range(0..5))
            .map(|_| 1 + rng.gen_range(0..16))
            .collect();
        let limits = Limits {
            max_bulk_len: if rng.gen_range(0..4) == 0 {
                rng.gen_range(0..16) as i64
            } else {
                512 << 20
            },
            auth_required: rng.gen_range(0..8) == 0,
        };
        check::check(&data, &chunks, &limits);
        check::check(&data, &[1], &Limits::default());
    }
}

#[test]
fn size_limits_across_reads() {
    let big_inline = vec![b'a'; 70_000];
    let mut mbulk = b"*".to_vec();
    mbulk.extend(std::iter::repeat_n(b'1', 70_000));
    let mut bulk = b"*1\r\n$".to_vec();
    bulk.extend(std::iter::repeat_n(b'1', 70_000));
    let mut ok_inline = vec![b'a'; 60_000];
    ok_inline.extend_from_slice(b"\r\nPING\r\n");
    for data in [big_inline, mbulk, bulk, ok_inline] {
        for chunk in [1000usize, 4096, 16384, 65536, 100_000] {
            check::check(&data, &[chunk], &Limits::default());
        }
    }
}
