//! Properties of `tern_resp::RequestParser`, shared by the cargo-fuzz target
//! (`fuzz/fuzz_targets/resp_parser.rs`) and the randomized test `crates/resp/tests/fuzz_like.rs`.
//!
//! For any input, parsed one-shot (all bytes at once) and incrementally (the bytes arriving in
//! arbitrary chunks, the caller keeping unconsumed bytes at the front, as a connection does):
//! - nothing panics and every call makes progress (`Some(n)` has `n > 0`, within the buffer);
//! - every argument range lies inside the consumed bytes (or inside `inline_buf`);
//! - both ways yield the same commands and end the same way (incomplete, or the same error).
//!   The one allowed difference is Redis's own: the 64 KiB "too big ..." limits apply to what
//!   has been buffered without a newline, so a chunked stream may hit them where one-shot
//!   parsing finds the newline; then the chunked commands are a prefix of the one-shot ones.

use tern_resp::{Limits, ProtocolError, RequestParser};

pub type Command = Vec<Vec<u8>>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// All input consumed, or a partial command pending.
    Incomplete {
        pending: usize,
    },
    Error(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub commands: Vec<Command>,
    pub end: End,
}

/// Parse one command at the front of `buf` and check the invariants.
fn step(
    p: &mut RequestParser,
    buf: &[u8],
    limits: &Limits,
) -> Result<Option<(usize, Command)>, ProtocolError> {
    match p.parse(buf, limits)? {
        None => Ok(None),
        Some(n) => {
            assert!(n > 0, "parse returned Some(0): no progress");
            assert!(n <= buf.len(), "consumed {n} > buffer {}", buf.len());
            let base = p.arg_base(&buf[..n]);
            let mut cmd = Vec::with_capacity(p.ranges().len());
            for &(a, b) in p.ranges() {
                assert!(
                    a <= b && b <= base.len(),
                    "range {a}..{b} outside {}",
                    base.len()
                );
                cmd.push(base[a..b].to_vec());
            }
            assert!(
                !p.in_progress(),
                "a completed command left the parser in progress"
            );
            Ok(Some((n, cmd)))
        }
    }
}

pub fn one_shot(data: &[u8], limits: &Limits) -> Outcome {
    let mut p = RequestParser::new();
    let mut pos = 0;
    let mut commands = Vec::new();
    loop {
        match step(&mut p, &data[pos..], limits) {
            Ok(Some((n, cmd))) => {
                pos += n;
                commands.push(cmd);
            }
            Ok(None) => {
                return Outcome {
                    commands,
                    end: End::Incomplete {
                        pending: data.len() - pos,
                    },
                }
            }
            Err(e) => {
                return Outcome {
                    commands,
                    end: End::Error(e.0),
                }
            }
        }
    }
}

/// Feed `data` in chunks whose sizes come from `chunks` (cycled; 0 means 1 byte).
pub fn chunked(data: &[u8], chunks: &[usize], limits: &Limits) -> Outcome {
    let mut p = RequestParser::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut ci = 0;
    let mut commands = Vec::new();
    loop {
        // Parse everything complete in the buffer.
        loop {
            match step(&mut p, &buf, limits) {
                Ok(Some((n, cmd))) => {
                    buf.drain(..n);
                    commands.push(cmd);
                }
                Ok(None) => break,
                Err(e) => {
                    return Outcome {
                        commands,
                        end: End::Error(e.0),
                    }
                }
            }
        }
        if fed == data.len() {
            return Outcome {
                commands,
                end: End::Incomplete { pending: buf.len() },
            };
        }
        let size = if chunks.is_empty() {
            data.len() - fed
        } else {
            chunks[ci % chunks.len()].max(1)
        };
        ci += 1;
        let end = (fed + size).min(data.len());
        buf.extend_from_slice(&data[fed..end]);
        fed = end;
    }
}

fn is_too_big(end: &End) -> bool {
    matches!(end, End::Error(e) if e.starts_with("ERR Protocol error: too big"))
}

/// Run both ways and assert they agree (see the module docs).
pub fn check(data: &[u8], chunks: &[usize], limits: &Limits) {
    let a = one_shot(data, limits);
    let b = chunked(data, chunks, limits);
    if let End::Error(e) = &a.end {
        assert!(
            e.starts_with("ERR Protocol error: "),
            "odd error text {e:?}"
        );
    }
    if is_too_big(&b.end) && a != b {
        assert!(
            b.commands.len() <= a.commands.len()
                && a.commands[..b.commands.len()] == b.commands[..],
            "chunked hit a size limit but its commands are not a prefix of one-shot's\n\
             one-shot: {a:?}\nchunked: {b:?}"
        );
        return;
    }
    assert_eq!(
        a, b,
        "one-shot and chunked parsing differ for chunks {chunks:?}"
    );
}
