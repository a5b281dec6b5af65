//! The feedback frame: per-packet receiver reports (the paper's SIG-ACK),
//! delta-encoded.
//!
//! ```text
//! FEEDBACK 0x02 | path u8 | count u8 | first entry: seq u32 | rx_time_ns u64
//!          | (count - 1) x { seq delta varint | rx_time delta varint }
//! ```
//!
//! Why deltas: feedback runs the reverse direction, which may be busy
//! too; in an upload the client reports every downlink TCP ACK. A full
//! entry is 12 bytes; consecutive entries of one path differ by a few
//! sequence numbers and a few milliseconds, so the deltas take 1 and 3
//! bytes. The deltas are unsigned LEB128 varints of the wrapping
//! differences (`seq - prev_seq` mod 2^32, `rx - prev_rx` mod 2^64), so
//! any entries round-trip exactly, an out-of-order one merely costs up to
//! 15 bytes, and receive times keep their nanosecond precision for packet
//! pairs at high rates.
//!
//! Decoding is strict: a varint that is longer than its type allows, has
//! bits beyond its width, or is not in its shortest form is
//! [`WireError::BadVarint`]; [`super::decode`] checks every entry once, so
//! iterating a [`FeedbackView`] cannot fail.

use core::iter::FusedIterator;

use super::{be_u32, be_u64, check_len, check_no_trailing, field, WireError, TYPE_FEEDBACK};
use crate::path::PathId;

/// Upper bound on entries in one feedback frame (bounds work per frame).
pub const MAX_FEEDBACK_ENTRIES: usize = 64;

/// One per-packet receiver report (the paper's SIG-ACK).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FeedbackEntry {
    /// Low 32 bits of the tunnel sequence number received.
    pub seq: u32,
    /// Receiver's clock at arrival, nanoseconds (arbitrary origin).
    pub rx_time_ns: u64,
}

impl FeedbackEntry {
    /// Bytes of the first entry, which is sent in full.
    pub const FULL_LEN: usize = 12;
    /// Most bytes a delta-encoded entry can take (5 + 10 varint bytes).
    pub const MAX_DELTA_LEN: usize = 15;

    /// Bytes this entry takes after `prev`.
    fn delta_len(&self, prev: &FeedbackEntry) -> usize {
        varint_len(self.seq.wrapping_sub(prev.seq) as u64)
            + varint_len(self.rx_time_ns.wrapping_sub(prev.rx_time_ns))
    }
}

/// Bytes a feedback frame with these entries takes.
pub fn feedback_len(entries: &[FeedbackEntry]) -> usize {
    if entries.is_empty() {
        return field::FB_ENTRIES;
    }
    let deltas: usize = entries.windows(2).map(|w| w[1].delta_len(&w[0])).sum();
    field::FB_ENTRIES + FeedbackEntry::FULL_LEN + deltas
}

/// Most bytes a feedback frame with `n` entries can take: size buffers
/// with `feedback_max_len(MAX_FEEDBACK_ENTRIES)`.
pub const fn feedback_max_len(n: usize) -> usize {
    if n == 0 {
        field::FB_ENTRIES
    } else {
        field::FB_ENTRIES + FeedbackEntry::FULL_LEN + (n - 1) * FeedbackEntry::MAX_DELTA_LEN
    }
}

/// Writes a feedback frame (at most [`MAX_FEEDBACK_ENTRIES`] entries) into
/// `buf`, returning the number of bytes written.
///
/// Errors: [`WireError::TooManyEntries`] for more than
/// [`MAX_FEEDBACK_ENTRIES`] entries; [`WireError::BufferTooSmall`] if `buf`
/// is shorter than [`feedback_len`]`(entries)`. Nothing is written on
/// error.
pub fn emit_feedback(
    path: PathId,
    entries: &[FeedbackEntry],
    buf: &mut [u8],
) -> Result<usize, WireError> {
    if entries.len() > MAX_FEEDBACK_ENTRIES {
        return Err(WireError::TooManyEntries(
            entries.len().min(u8::MAX as usize) as u8,
        ));
    }
    let need = feedback_len(entries);
    let buf = buf
        .get_mut(..need)
        .ok_or(WireError::BufferTooSmall { need })?;
    buf[field::TYPE] = TYPE_FEEDBACK;
    buf[field::FB_PATH] = path.0;
    buf[field::FB_COUNT] = entries.len() as u8;
    let Some(first) = entries.first() else {
        return Ok(need);
    };
    let mut at = field::FB_ENTRIES;
    buf[at..at + 4].copy_from_slice(&first.seq.to_be_bytes());
    buf[at + 4..at + 12].copy_from_slice(&first.rx_time_ns.to_be_bytes());
    at += FeedbackEntry::FULL_LEN;
    for w in entries.windows(2) {
        at += put_varint(w[1].seq.wrapping_sub(w[0].seq) as u64, &mut buf[at..]);
        at += put_varint(
            w[1].rx_time_ns.wrapping_sub(w[0].rx_time_ns),
            &mut buf[at..],
        );
    }
    debug_assert_eq!(at, need);
    Ok(need)
}

/// Checks a feedback frame (type byte already read) and returns its view.
pub(super) fn parse(buf: &[u8]) -> Result<FeedbackView<'_>, WireError> {
    check_len(buf, field::FB_ENTRIES)?;
    let count = buf[field::FB_COUNT];
    if count as usize > MAX_FEEDBACK_ENTRIES {
        return Err(WireError::TooManyEntries(count));
    }
    let view = FeedbackView {
        path: PathId(buf[field::FB_PATH]),
        count,
        bytes: &buf[field::FB_ENTRIES..],
    };
    // Walk every entry once so that iterating the view cannot fail.
    let mut it = view.entries();
    for _ in 0..count {
        it.step().map_err(|e| match e {
            // The frame ends inside an entry: at least one more byte.
            WireError::Truncated { .. } => WireError::Truncated {
                need: buf.len() + 1,
                got: buf.len(),
            },
            e => e,
        })?;
    }
    let end = buf.len() - it.rest.len();
    check_no_trailing(buf, end)?;
    Ok(FeedbackView {
        bytes: &buf[field::FB_ENTRIES..end],
        ..view
    })
}

/// Checked view of a feedback frame's entries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FeedbackView<'a> {
    /// The path the reported packets arrived on.
    pub path: PathId,
    /// Number of entries (at most [`MAX_FEEDBACK_ENTRIES`]).
    count: u8,
    /// The encoded entries, checked by [`super::decode`].
    bytes: &'a [u8],
}

impl<'a> FeedbackView<'a> {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.count as usize
    }
    /// Whether the frame reports no packet.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The entries, in wire order.
    pub fn entries(&self) -> FeedbackEntries<'a> {
        FeedbackEntries {
            rest: self.bytes,
            left: self.count as usize,
            prev: None,
        }
    }
}

/// Iterator over the entries of a [`FeedbackView`], in wire order.
#[derive(Clone, Debug)]
pub struct FeedbackEntries<'a> {
    rest: &'a [u8],
    left: usize,
    prev: Option<FeedbackEntry>,
}

impl FeedbackEntries<'_> {
    /// Decodes the next entry; an error if the bytes are short or bad.
    fn step(&mut self) -> Result<FeedbackEntry, WireError> {
        let e = match self.prev {
            None => {
                if self.rest.len() < FeedbackEntry::FULL_LEN {
                    return Err(self.truncated());
                }
                let (full, rest) = self.rest.split_at(FeedbackEntry::FULL_LEN);
                self.rest = rest;
                FeedbackEntry {
                    seq: be_u32(&full[..4]),
                    rx_time_ns: be_u64(&full[4..]),
                }
            }
            Some(prev) => {
                let ds = self.varint(32)?;
                let dt = self.varint(64)?;
                FeedbackEntry {
                    seq: prev.seq.wrapping_add(ds as u32),
                    rx_time_ns: prev.rx_time_ns.wrapping_add(dt),
                }
            }
        };
        self.prev = Some(e);
        self.left -= 1;
        Ok(e)
    }

    /// The entries end early ([`parse`] fills in the frame's length).
    fn truncated(&self) -> WireError {
        WireError::Truncated {
            need: self.rest.len() + 1,
            got: self.rest.len(),
        }
    }

    /// One unsigned LEB128 varint of a value of `width` bits (32 or 64):
    /// at most `ceil(width / 7)` bytes, no bits beyond `width`.
    fn varint(&mut self, width: u32) -> Result<u64, WireError> {
        let max = width.div_ceil(7) as usize;
        let mut v: u64 = 0;
        for i in 0..max {
            let Some(&b) = self.rest.get(i) else {
                return Err(self.truncated());
            };
            let bits = (b & 0x7f) as u64;
            let shift = 7 * i as u32;
            if shift + 7 > width && bits >> (width - shift) != 0 {
                return Err(WireError::BadVarint);
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                if b == 0 && i > 0 {
                    return Err(WireError::BadVarint); // not the shortest form
                }
                self.rest = &self.rest[i + 1..];
                return Ok(v);
            }
        }
        Err(WireError::BadVarint)
    }
}

impl Iterator for FeedbackEntries<'_> {
    type Item = FeedbackEntry;
    fn next(&mut self) -> Option<FeedbackEntry> {
        if self.left == 0 {
            return None;
        }
        // Checked by decode; an error here cannot happen and ends the walk.
        self.step().map_err(|_| self.left = 0).ok()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for FeedbackEntries<'_> {}
impl FusedIterator for FeedbackEntries<'_> {}

/// Bytes of `v` as an unsigned LEB128 varint.
fn varint_len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// Writes `v` as an unsigned LEB128 varint; `out` must have room
/// ([`varint_len`] bytes). Returns the bytes written.
fn put_varint(mut v: u64, out: &mut [u8]) -> usize {
    let mut i = 0;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = b;
            return i + 1;
        }
        out[i] = b | 0x80;
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_lengths_and_bytes() {
        let mut buf = [0u8; 10];
        for (v, bytes) in [
            (0u64, &[0x00][..]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (1_200_000, &[0x80, 0x9f, 0x49]),
            (u32::MAX as u64, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ] {
            let n = put_varint(v, &mut buf);
            assert_eq!(&buf[..n], bytes, "{v}");
            assert_eq!(varint_len(v), n);
        }
        assert_eq!(put_varint(u64::MAX, &mut buf), 10);
        assert_eq!(buf[9], 0x01);
    }

    fn read(bytes: &[u8], width: u32) -> Result<u64, WireError> {
        let mut it = FeedbackEntries {
            rest: bytes,
            left: 1,
            prev: None,
        };
        let v = it.varint(width)?;
        assert!(it.rest.is_empty(), "consumed exactly the varint");
        Ok(v)
    }

    #[test]
    fn varint_decoding_is_strict() {
        assert_eq!(read(&[0x80, 0x9f, 0x49], 64), Ok(1_200_000));
        assert_eq!(
            read(&[0xff, 0xff, 0xff, 0xff, 0x0f], 32),
            Ok(u32::MAX as u64)
        );
        // Bits beyond 32 in a sequence delta.
        assert_eq!(
            read(&[0xff, 0xff, 0xff, 0xff, 0x1f], 32),
            Err(WireError::BadVarint)
        );
        // Six bytes for a sequence delta.
        assert_eq!(
            read(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 32),
            Err(WireError::BadVarint)
        );
        // Not the shortest form.
        assert_eq!(read(&[0x81, 0x00], 64), Err(WireError::BadVarint));
        // Bits beyond 64.
        let mut big = [0xffu8; 10];
        big[9] = 0x02;
        assert_eq!(read(&big, 64), Err(WireError::BadVarint));
        big[9] = 0x01;
        assert_eq!(read(&big, 64), Ok(u64::MAX));
        assert!(matches!(
            read(&[0x80], 64),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn close_entries_take_four_bytes() {
        let entries: Vec<FeedbackEntry> = (0..16)
            .map(|i| FeedbackEntry {
                seq: 1000 + 2 * i,
                rx_time_ns: 5_000_000_000 + 1_200_000 * i as u64,
            })
            .collect();
        assert_eq!(feedback_len(&entries), 3 + 12 + 15 * 4);
        let mut buf = [0u8; feedback_max_len(16)];
        let n = emit_feedback(PathId(2), &entries, &mut buf).unwrap();
        let v = parse(&buf[..n]).unwrap();
        assert_eq!(v.entries().collect::<Vec<_>>(), entries);
    }
}
