//! The loss report (NACK): which packets a path lost, as the receiver saw
//! it, and the receiver's per-path loss rates (PRISM §5.2.3 per-link loss
//! detection, reported at once as in PRISM §6.2.1 (i)).
//!
//! ```text
//! NACK 0x06 | version u8 | nranges u8 | nrates u8
//!      | nranges x { path u8 | flags u8 | after u32 | upto u32 }
//!      | nrates  x { path u8 | loss u16 }
//! ```
//!
//! A range names a run of one path's packets in the order they were sent
//! on it: every packet the sender put on `path` after the packet numbered
//! `after` (the last one that arrived there) up to and including the one
//! numbered `upto` (the predecessor, by the data header's previous-on-path
//! link, of a packet that did arrive) is lost. Paths deliver in order, so
//! the receiver knows this the moment a later packet arrives on the path;
//! it does not know how many packets the run holds (other paths' numbers
//! interleave), the sender does. Without [`NackRange::AFTER_KNOWN`] (nothing
//! has arrived on the path yet) the run starts at the path's first packet.
//! Numbers are the low 32 bits of the tunnel sequence number, like data
//! headers. Ranges name the path, so the frame may travel on any path: the
//! receiver sends it on the one that returns earliest (see
//! `Receiver::poll_nack`).
//!
//! `loss` is the receiver's smoothed rate of loss events on the path,
//! in units of 1/65535.
//!
//! Versioned: [`NACK_VERSION`] is 1. A decoder rejects other versions with
//! [`WireError::UnknownVersion`] (the connection drops such a frame and
//! counts it), so the layout can change without being misread. Decoding is
//! strict like the rest of [`super`]: counts above [`MAX_NACK_RANGES`] or
//! [`MAX_NACK_RATES`], undefined range flags and trailing bytes are errors.

use super::{be_u32, check_len, check_no_trailing, field, WireError, TYPE_NACK};
use crate::path::PathId;

/// The layout version this code writes and reads.
pub const NACK_VERSION: u8 = 1;
/// Most loss ranges in one frame.
pub const MAX_NACK_RANGES: usize = 32;
/// Most per-path rates in one frame (one per possible path).
pub const MAX_NACK_RATES: usize = crate::path::MAX_PATHS;

/// Bytes of the fixed part: type, version and the two counts.
const HEADER_LEN: usize = 4;
/// Bytes of one range.
const RANGE_LEN: usize = 10;
/// Bytes of one rate.
const RATE_LEN: usize = 3;

/// One run of lost packets on one path (see the module documentation).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NackRange {
    pub path: PathId,
    /// The last packet that arrived on the path before the run; `None`
    /// when none has (the run starts at the path's first packet).
    pub after: Option<u32>,
    /// The last packet of the run.
    pub upto: u32,
}

impl NackRange {
    /// Range flag: `after` is meaningful.
    pub const AFTER_KNOWN: u8 = 0x01;
}

/// The receiver's loss rate of one path.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NackRate {
    pub path: PathId,
    /// Loss events per packet, in units of 1/65535.
    pub loss: u16,
}

impl NackRate {
    /// The rate as a fraction in [0, 1].
    pub fn fraction(&self) -> f64 {
        self.loss as f64 / u16::MAX as f64
    }

    /// Encodes a fraction (clamped into [0, 1]; NaN as 0).
    pub fn from_fraction(path: PathId, f: f64) -> NackRate {
        let f = if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) };
        NackRate {
            path,
            loss: (f * u16::MAX as f64).round() as u16,
        }
    }
}

/// Bytes a NACK frame with these counts takes.
pub const fn nack_len(ranges: usize, rates: usize) -> usize {
    HEADER_LEN + ranges * RANGE_LEN + rates * RATE_LEN
}

/// Writes a NACK frame, returning its length.
///
/// Errors: [`WireError::TooManyEntries`] for more than [`MAX_NACK_RANGES`]
/// ranges or [`MAX_NACK_RATES`] rates; [`WireError::BufferTooSmall`] if
/// `buf` is shorter than [`nack_len`]. Nothing is written on error.
pub fn emit_nack(
    ranges: &[NackRange],
    rates: &[NackRate],
    buf: &mut [u8],
) -> Result<usize, WireError> {
    if ranges.len() > MAX_NACK_RANGES || rates.len() > MAX_NACK_RATES {
        let n = ranges.len().max(rates.len()).min(u8::MAX as usize);
        return Err(WireError::TooManyEntries(n as u8));
    }
    let need = nack_len(ranges.len(), rates.len());
    let buf = buf
        .get_mut(..need)
        .ok_or(WireError::BufferTooSmall { need })?;
    buf[field::TYPE] = TYPE_NACK;
    buf[1] = NACK_VERSION;
    buf[2] = ranges.len() as u8;
    buf[3] = rates.len() as u8;
    let mut at = HEADER_LEN;
    for r in ranges {
        let b = &mut buf[at..at + RANGE_LEN];
        b[0] = r.path.0;
        b[1] = if r.after.is_some() {
            NackRange::AFTER_KNOWN
        } else {
            0
        };
        b[2..6].copy_from_slice(&r.after.unwrap_or(0).to_be_bytes());
        b[6..10].copy_from_slice(&r.upto.to_be_bytes());
        at += RANGE_LEN;
    }
    for r in rates {
        let b = &mut buf[at..at + RATE_LEN];
        b[0] = r.path.0;
        b[1..3].copy_from_slice(&r.loss.to_be_bytes());
        at += RATE_LEN;
    }
    debug_assert_eq!(at, need);
    Ok(need)
}

/// Checked view of a NACK frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NackView<'a> {
    nranges: u8,
    nrates: u8,
    /// Ranges then rates, lengths checked.
    bytes: &'a [u8],
}

impl<'a> NackView<'a> {
    /// The loss ranges, in wire order.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = NackRange> + 'a {
        let n = self.nranges as usize;
        self.bytes[..n * RANGE_LEN]
            .chunks_exact(RANGE_LEN)
            .map(|b| NackRange {
                path: PathId(b[0]),
                after: (b[1] & NackRange::AFTER_KNOWN != 0).then(|| be_u32(&b[2..6])),
                upto: be_u32(&b[6..10]),
            })
    }

    /// The per-path loss rates, in wire order.
    pub fn rates(&self) -> impl ExactSizeIterator<Item = NackRate> + 'a {
        let start = self.nranges as usize * RANGE_LEN;
        self.bytes[start..]
            .chunks_exact(RATE_LEN)
            .map(|b| NackRate {
                path: PathId(b[0]),
                loss: u16::from_be_bytes([b[1], b[2]]),
            })
    }
}

/// Checks a NACK frame (type byte already read) and returns its view.
pub(super) fn parse(buf: &[u8]) -> Result<NackView<'_>, WireError> {
    check_len(buf, HEADER_LEN)?;
    if buf[1] != NACK_VERSION {
        return Err(WireError::UnknownVersion(buf[1]));
    }
    let (nranges, nrates) = (buf[2], buf[3]);
    if nranges as usize > MAX_NACK_RANGES {
        return Err(WireError::TooManyEntries(nranges));
    }
    if nrates as usize > MAX_NACK_RATES {
        return Err(WireError::TooManyEntries(nrates));
    }
    let len = nack_len(nranges as usize, nrates as usize);
    check_len(buf, len)?;
    check_no_trailing(buf, len)?;
    let bytes = &buf[HEADER_LEN..len];
    for r in bytes[..nranges as usize * RANGE_LEN].chunks_exact(RANGE_LEN) {
        if r[1] & !NackRange::AFTER_KNOWN != 0 {
            return Err(WireError::BadFlags(r[1] & !NackRange::AFTER_KNOWN));
        }
        // Without AFTER_KNOWN the `after` field is absent and emitted as
        // zero; anything else would decode and re-encode differently.
        if r[1] & NackRange::AFTER_KNOWN == 0 && r[2..6] != [0; 4] {
            return Err(WireError::NonCanonical);
        }
    }
    Ok(NackView {
        nranges,
        nrates,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode, Frame};

    /// Found by the `wire_decode` fuzz target: a range without
    /// `AFTER_KNOWN` but with `after` bytes set decoded, and re-encoded
    /// with them cleared.
    #[test]
    fn absent_after_must_be_zero() {
        let frame = [6, 1, 1, 0, 0, 0, 0, 0, 0, 32, 0, 0, 0, 239];
        assert_eq!(parse(&frame).err(), Some(WireError::NonCanonical));
        let mut ok = frame;
        ok[9] = 0;
        assert!(parse(&ok).is_ok());
    }

    fn sample() -> (Vec<NackRange>, Vec<NackRate>) {
        (
            vec![
                NackRange {
                    path: PathId(1),
                    after: Some(41),
                    upto: 44,
                },
                NackRange {
                    path: PathId(0),
                    after: None,
                    upto: u32::MAX,
                },
            ],
            vec![
                NackRate::from_fraction(PathId(0), 0.0),
                NackRate::from_fraction(PathId(1), 0.05),
            ],
        )
    }

    #[test]
    fn round_trips() {
        let (ranges, rates) = sample();
        let mut buf = [0u8; nack_len(MAX_NACK_RANGES, MAX_NACK_RATES)];
        let n = emit_nack(&ranges, &rates, &mut buf).unwrap();
        assert_eq!(n, 4 + 2 * 10 + 2 * 3);
        let Ok(Frame::Nack(v)) = decode(&buf[..n]) else {
            panic!("not a nack");
        };
        assert_eq!(v.ranges().collect::<Vec<_>>(), ranges);
        assert_eq!(v.rates().collect::<Vec<_>>(), rates);
        assert!((v.rates().nth(1).unwrap().fraction() - 0.05).abs() < 1e-4);
    }

    #[test]
    fn decoding_is_strict() {
        let (ranges, rates) = sample();
        let mut buf = [0u8; 64];
        let n = emit_nack(&ranges, &rates, &mut buf).unwrap();
        // Another version.
        let mut b = buf;
        b[1] = 2;
        assert_eq!(decode(&b[..n]), Err(WireError::UnknownVersion(2)));
        // An undefined range flag.
        let mut b = buf;
        b[5] = 0x03;
        assert_eq!(decode(&b[..n]), Err(WireError::BadFlags(0x02)));
        // Too many ranges announced.
        let mut b = buf;
        b[2] = MAX_NACK_RANGES as u8 + 1;
        assert_eq!(
            decode(&b[..n]),
            Err(WireError::TooManyEntries(MAX_NACK_RANGES as u8 + 1))
        );
        // Short and long.
        assert!(matches!(
            decode(&buf[..n - 1]),
            Err(WireError::Truncated { .. })
        ));
        assert_eq!(decode(&buf[..n + 1]), Err(WireError::TrailingBytes(1)));
        assert!(matches!(
            decode(&buf[..3]),
            Err(WireError::Truncated { .. })
        ));
        // Emitting too much or into too little.
        let many = vec![ranges[0]; MAX_NACK_RANGES + 1];
        assert!(matches!(
            emit_nack(&many, &[], &mut [0u8; 1024]),
            Err(WireError::TooManyEntries(_))
        ));
        assert_eq!(
            emit_nack(&ranges, &rates, &mut [0u8; 10]),
            Err(WireError::BufferTooSmall { need: n })
        );
    }
}
