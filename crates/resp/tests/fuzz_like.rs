//! Randomized, deterministic version of the cargo-fuzz target (fuzz/fuzz_targets/resp_parser.rs)
//! so the parser properties run in every `cargo test` without nightly: random mutations of valid
//! and invalid requests, parsed one-shot and in random chunks, must agree (see fuzz/check.rs).

#[path = "../../../fuzz/check.rs"]
mod check;

use tern_resp::Limits;

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

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

fn valid_command(rng: &mut Rng, out: &mut Vec<u8>) {
    let n = 1 + rng.below(4);
    if rng.below(4) == 0 {
        // inline
        for i in 0..n {
            if i > 0 {
                out.push(b' ');
            }
            match rng.below(3) {
                0 => out.extend_from_slice(b"arg"),
                1 => out.extend_from_slice(b"\"q \\x41\\n\""),
                _ => out.extend_from_slice(b"'s\\'q'"),
            }
        }
        out.extend_from_slice(if rng.below(2) == 0 { b"\r\n" } else { b"\n" });
        return;
    }
    out.extend_from_slice(format!("*{n}\r\n").as_bytes());
    for _ in 0..n {
        let len = rng.below(20);
        out.extend_from_slice(format!("${len}\r\n").as_bytes());
        for _ in 0..len {
            out.push(rng.next() as u8);
        }
        out.extend_from_slice(b"\r\n");
    }
}

fn random_input(rng: &mut Rng) -> Vec<u8> {
    let mut data = Vec::new();
    for _ in 0..1 + rng.below(6) {
        valid_command(rng, &mut data);
    }
    // mutate
    for _ in 0..rng.below(4) {
        if data.is_empty() {
            break;
        }
        let at = rng.below(data.len() + 1);
        match rng.below(5) {
            0 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                data.splice(at..at, t.iter().copied());
            }
            1 if at < data.len() => data[at] = rng.next() as u8,
            2 if at < data.len() => {
                data.remove(at);
            }
            3 => data.truncate(at),
            _ => {
                let from = rng.below(data.len());
                let len = rng.below(data.len() - from + 1);
                let piece = data[from..from + len].to_vec();
                data.splice(at..at, piece);
            }
        }
    }
    data
}

#[test]
fn random_requests_one_shot_equals_chunked() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..100_000 {
        let data = random_input(&mut rng);
        let chunks: Vec<usize> = (0..1 + rng.below(5)).map(|_| 1 + rng.below(16)).collect();
        let limits = Limits {
            max_bulk_len: if rng.below(4) == 0 {
                rng.below(16) as i64
            } else {
                512 << 20
            },
            auth_required: rng.below(8) == 0,
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
