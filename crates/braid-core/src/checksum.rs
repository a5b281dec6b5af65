//! The Internet checksum (RFC 1071): the one's complement of the one's
//! complement sum of 16-bit big-endian words. One place for the sum and
//! its fold, which the IPv4 header checksum of header compression and the
//! TCP checksum PRISM's ACK rewriting recomputes both use (and the lab
//! emulator's tests, to check its incremental update after an ECN mark;
//! the emulator itself does not depend on the protocol core).

/// Adds `bytes` to a running sum as 16-bit big-endian words; an odd last
/// byte counts as the high byte of a word padded with zero.
pub fn add(mut sum: u64, bytes: &[u8]) -> u64 {
    for c in bytes.chunks(2) {
        sum += u64::from(c[0]) << 8 | c.get(1).map_or(0, |&x| u64::from(x));
    }
    sum
}

/// Folds the carries of `sum` into 16 bits and complements it: the
/// checksum to write into a header.
pub fn finish(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071 section 3's example: the words 0001 f203 f4f5 f6f7 sum to
    /// ddf2 after the carries fold in.
    #[test]
    fn the_rfc_example_sums_and_folds() {
        let words = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(finish(add(0, &words)), !0xddf2);
        // An odd byte is the high byte of a padded word.
        assert_eq!(add(0, &[0x12]), 0x1200);
        assert_eq!(add(0x10, &[0x12, 0x34, 0x56]), 0x10 + 0x1234 + 0x5600);
    }
}
