//! 32-bit wire sequence numbers extended to 64 bits by serial-number
//! arithmetic (RFC 1982): the wire value is taken as the 64-bit number
//! closest to `reference`. CONTRACT (to be implemented).

/// The 64-bit value whose low 32 bits are `wire` and that is nearest to
/// `reference` (ties resolve upward); never below zero.
pub fn extend(wire: u32, reference: u64) -> u64 {
    let _ = (wire, reference);
    todo!()
}
