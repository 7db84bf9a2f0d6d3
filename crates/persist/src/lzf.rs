//! LZF, the compression format of RDB strings: literal runs (control byte < 32: that many
//! plus one bytes follow) and back references (length in the top 3 bits, extended by a
//! byte when 7; a 13-bit distance minus one).

const MAX_LIT: usize = 32;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);
const HBITS: u32 = 14;

/// Compress `input`; None when the result would not fit in `max_out` bytes.
pub fn compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    let n = input.len();
    let mut out = Vec::with_capacity(max_out.min(n + n / 16 + 8));
    // Hash table of positions + 1 (0 = empty), sized to the input: small strings are the
    // common case and must not pay for clearing a large table.
    let hbits = (usize::BITS - n.max(2).leading_zeros()).clamp(8, HBITS);
    let mut table = vec![0u32; 1 << hbits];
    let mut lit_start = 0usize; // index in out of the current literal run's control byte
    let mut lit = 0usize;
    out.push(0);
    let hash = |p: usize| -> usize {
        let v = ((input[p] as u32) << 16) | ((input[p + 1] as u32) << 8) | input[p + 2] as u32;
        (v.wrapping_mul(2654435761) >> (32 - hbits)) as usize
    };
    let mut i = 0usize;
    while i < n {
        if i + 2 < n {
            let h = hash(i);
            let cand = table[h] as usize;
            table[h] = (i + 1) as u32;
            if cand > 0 {
                let r = cand - 1;
                let off = i - r - 1;
                if off < MAX_OFF && input[r..r + 3] == input[i..i + 3] {
                    let maxlen = (n - i).min(MAX_REF);
                    let mut len = 3;
                    while len < maxlen && input[r + len] == input[i + len] {
                        len += 1;
                    }
                    // close the literal run
                    if lit == 0 {
                        out.pop();
                    } else {
                        out[lit_start] = (lit - 1) as u8;
                    }
                    let l = len - 2;
                    if l < 7 {
                        out.push(((l << 5) | (off >> 8)) as u8);
                    } else {
                        out.push(((7 << 5) | (off >> 8)) as u8);
                        out.push((l - 7) as u8);
                    }
                    out.push(off as u8);
                    // index the positions inside the match
                    let end = i + len;
                    let mut j = i + 1;
                    while j < end && j + 2 < n {
                        table[hash(j)] = (j + 1) as u32;
                        j += 1;
                    }
                    i = end;
                    lit_start = out.len();
                    lit = 0;
                    out.push(0);
                    if out.len() > max_out {
                        return None;
                    }
                    continue;
                }
            }
        }
        out.push(input[i]);
        lit += 1;
        i += 1;
        if lit == MAX_LIT {
            out[lit_start] = (lit - 1) as u8;
            lit_start = out.len();
            lit = 0;
            out.push(0);
        }
        if out.len() > max_out + 1 {
            return None;
        }
    }
    if lit == 0 {
        out.pop();
    } else {
        out[lit_start] = (lit - 1) as u8;
    }
    (out.len() <= max_out && !out.is_empty()).then_some(out)
}

/// Decompress to exactly `out_len` bytes; None when the data is malformed.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            out.extend_from_slice(input.get(i..i + n)?);
            i += n;
        } else {
            let mut n = ctrl >> 5;
            if n == 7 {
                n += *input.get(i)? as usize;
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(back)?;
            for j in 0..n + 2 {
                let c = out[start + j];
                out.push(c);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_backref() {
        let c = [2, b'a', b'b', b'c', 0x80, 2];
        assert_eq!(decompress(&c, 9).unwrap(), b"abcabcabc");
    }

    #[test]
    fn round_trips() {
        let mut rng = 12345u64;
        for len in [0usize, 1, 2, 3, 31, 32, 33, 100, 1000, 10000, 70000] {
            for kind in 0..3 {
                let data: Vec<u8> = (0..len)
                    .map(|i| {
                        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
                        match kind {
                            0 => (rng >> 60) as u8,
                            1 => (i % 7) as u8,
                            _ => (rng >> 33) as u8,
                        }
                    })
                    .collect();
                if let Some(c) = compress(&data, len + len / 8 + 16) {
                    assert_eq!(decompress(&c, len).unwrap(), data, "len {len} kind {kind}");
                } else {
                    assert_eq!(len, 0);
                }
            }
        }
        let rep = vec![b'a'; 1000];
        let c = compress(&rep, 100).unwrap();
        assert!(c.len() < 40);
        assert_eq!(decompress(&c, 1000).unwrap(), rep);
    }
}
