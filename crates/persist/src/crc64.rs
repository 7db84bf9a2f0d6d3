//! CRC-64/Jones as Redis computes it (reflected, polynomial 0xad93d23594c935a9, init 0), with
//! the `crc` crate's slice-by-16 tables: RDB loads and saves checksum every byte, and a
//! byte-at-a-time table made the checksum most of a load's time.

use crc::{Crc, Table, CRC_64_REDIS};

const REDIS: Crc<u64, Table<16>> = Crc::<u64, Table<16>>::new(&CRC_64_REDIS);

/// Continue a CRC over more bytes (start with 0).
pub fn update(crc: u64, data: &[u8]) -> u64 {
    // The crate reflects the initial value of a reflected algorithm; undo that so the
    // running value carries over unchanged (no final xor or reflection for this CRC).
    let mut d = REDIS.digest_with_initial(crc.reverse_bits());
    d.update(data);
    d.finalize()
}

pub fn crc64(data: &[u8]) -> u64 {
    REDIS.checksum(data)
}

#[cfg(test)]
mod tests {
    #[test]
    fn check_value() {
        assert_eq!(super::crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        let a = super::update(0, b"1234");
        assert_eq!(super::update(a, b"56789"), 0xe9c6_d914_c4b8_d9ca);
        assert_eq!(super::update(0, b""), 0);
    }
}
