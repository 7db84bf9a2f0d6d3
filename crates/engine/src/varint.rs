//! The little-endian base-128 lengths that prefix names in compact buffers (a hash table's
//! field/value pairs, a hash's field times): 7 bits a byte, the high bit saying "more".

/// Append `n`.
pub(crate) fn put(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// Bytes `put` takes for `n`.
pub(crate) fn len(n: usize) -> usize {
    (usize::BITS - n.leading_zeros()).max(1).div_ceil(7) as usize
}

/// The number at the start of `b`, and the bytes it took.
#[inline]
pub(crate) fn get(b: &[u8]) -> (usize, usize) {
    let (mut n, mut shift, mut i) = (0usize, 0, 0);
    loop {
        let c = b[i];
        n |= ((c & 0x7f) as usize) << shift;
        i += 1;
        if c & 0x80 == 0 {
            return (n, i);
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        for n in [0usize, 1, 127, 128, 300, 16383, 16384, usize::MAX >> 1] {
            let mut v = Vec::new();
            super::put(&mut v, n);
            assert_eq!(v.len(), super::len(n));
            assert_eq!(super::get(&v), (n, v.len()));
        }
    }
}
