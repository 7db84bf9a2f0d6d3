//! CRC-64/Jones as Redis computes it (reflected, polynomial 0xad93d23594c935a9, init 0).

use std::sync::LazyLock;

static TABLE: LazyLock<[u64; 256]> = LazyLock::new(|| {
    let mut t = [0u64; 256];
    for (i, slot) in t.iter_mut().enumerate() {
        let mut c = i as u64;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x95ac_9329_ac4b_c9b5
            } else {
                c >> 1
            };
        }
        *slot = c;
    }
    t
});

/// Continue a CRC over more bytes (start with 0).
pub fn update(mut crc: u64, data: &[u8]) -> u64 {
    let t = &*TABLE;
    for &b in data {
        crc = t[((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

pub fn crc64(data: &[u8]) -> u64 {
    update(0, data)
}

#[cfg(test)]
mod tests {
    #[test]
    fn check_value() {
        assert_eq!(super::crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        let a = super::update(0, b"1234");
        assert_eq!(super::update(a, b"56789"), 0xe9c6_d914_c4b8_d9ca);
    }
}
