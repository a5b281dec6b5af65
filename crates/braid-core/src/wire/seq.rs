//! 32-bit wire sequence numbers extended to 64 bits by serial-number
//! arithmetic (RFC 1982): the wire value is taken as the 64-bit number
//! closest to `reference`.
//!
//! The candidates are the values `v` with `v mod 2^32 == wire`; the one at
//! the smallest distance from `reference` is chosen. Exactly one candidate
//! lies in `(reference - 2^31, reference + 2^31]`, so a value that is at
//! most 2^31 ahead of `reference` or less than 2^31 behind it is always
//! recovered exactly. At distance 2^31 in both directions (the case RFC 1982
//! Section 3.2 leaves undefined) the later value wins.

/// Half the serial-number space (RFC 1982 `2^(SERIAL_BITS - 1)`).
const HALF: u64 = 1 << 31;
/// The serial-number space (`2^SERIAL_BITS`).
const SPACE: u64 = 1 << 32;

/// The 64-bit value whose low 32 bits are `wire` and that is nearest to
/// `reference` (ties resolve upward); never below zero.
///
/// When the nearest candidate would be negative (`reference` small and
/// `wire` "just below" it in serial terms), the smallest non-negative
/// candidate (`reference` plus the forward distance) is returned instead.
/// Near `u64::MAX`, where the upward candidate would overflow, the downward
/// one is returned.
pub fn extend(wire: u32, reference: u64) -> u64 {
    // Forward distance from reference to wire, in [0, 2^32).
    let ahead = wire.wrapping_sub(reference as u32) as u64;
    if ahead <= HALF {
        match reference.checked_add(ahead) {
            Some(v) => v,
            // Cannot be represented: the downward candidate (reference is
            // above 2^32 here, so this cannot underflow).
            None => reference - (SPACE - ahead),
        }
    } else {
        let behind = SPACE - ahead; // in (0, 2^31)
        match reference.checked_sub(behind) {
            Some(v) => v,
            // Would be negative: the non-negative candidate.
            None => reference + ahead,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_near_reference() {
        assert_eq!(extend(0, 0), 0);
        assert_eq!(extend(5, 3), 5);
        assert_eq!(extend(3, 5), 3);
        assert_eq!(extend(7, (1 << 40) + 7), (1 << 40) + 7);
    }

    #[test]
    fn wraps_forward() {
        // Reference just below a wrap, wire value just after it.
        let r = (3u64 << 32) + 0xffff_fff0;
        assert_eq!(extend(0x10, r), (4u64 << 32) + 0x10);
    }

    #[test]
    fn wraps_backward() {
        // Reference just after a wrap, wire value just before it.
        let r = (4u64 << 32) + 0x10;
        assert_eq!(extend(0xffff_fff0, r), (3u64 << 32) + 0xffff_fff0);
    }

    #[test]
    fn tie_resolves_upward() {
        let r = 5u64 << 32;
        assert_eq!(extend(0x8000_0000, r), r + HALF);
        let r = (5u64 << 32) + 0x8000_0000;
        assert_eq!(extend(0, r), 6u64 << 32);
    }

    #[test]
    fn never_below_zero() {
        // 0xffff_fff0 is "just below" 0x10 in serial terms; -0x20 is not
        // representable, so the non-negative candidate is returned.
        assert_eq!(extend(0xffff_fff0, 0x10), 0xffff_fff0);
        assert_eq!(extend(u32::MAX, 0), u32::MAX as u64);
    }

    #[test]
    fn never_overflows() {
        assert_eq!(extend(u32::MAX, u64::MAX), u64::MAX);
        assert_eq!(extend(0, u64::MAX), u64::MAX - u32::MAX as u64);
        assert_eq!(
            extend(0x10, u64::MAX - 5),
            u64::MAX - (u32::MAX as u64) + 0x10
        );
    }

    #[test]
    fn round_trips_within_half_space() {
        let refs = [
            0u64,
            1,
            1 << 31,
            1 << 32,
            (1 << 32) + 12345,
            1 << 50,
            u64::MAX - (1 << 33),
        ];
        let offs: [i64; 7] = [-(1 << 31) + 1, -1000, -1, 0, 1, 1000, 1 << 31];
        for &r in &refs {
            for &o in &offs {
                let v = r as i128 + o as i128;
                if v < 0 || v > u64::MAX as i128 {
                    continue;
                }
                let v = v as u64;
                assert_eq!(extend(v as u32, r), v, "r={r:#x} o={o}");
            }
        }
    }
}
