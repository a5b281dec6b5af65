//! The FEC parity frame: one parity shard of a Reed-Solomon block over
//! consecutive tunnel packets (MPLOT §II-A/B; the code is
//! [`crate::fec::BlockCode`]).
//!
//! ```text
//! PARITY 0x07 | version u8 | path u8 | first u32 | data u8 | parity u8 | index u8
//!        | shard...                                                (10-byte header)
//! ```
//!
//! The block is the `data` packets numbered `first, first + 1, ...,
//! first + data − 1` (low 32 bits of the tunnel sequence number, as in
//! data headers); the code has `data` data shards and `parity` parity
//! shards (MPLOT's `F` and `K`: the proactive ones and the reserve for
//! reactive repair), and this frame carries parity shard `index`
//! (`0..parity`). MPLOT's per-packet block fields (§II-B) are not needed
//! on data packets: the tunnel sequence number already places a data
//! packet in its block, so the systematic data go out unchanged and only
//! parity carries the block's shape.
//!
//! A data shard is the inner packet behind a 2-byte big-endian length,
//! zero-padded to the block's shard length (the longest packet plus 2);
//! the shard here has that length, so a rebuilt packet is cut to its own
//! length again ([`data_shard`], [`packet_of_shard`]).
//!
//! `path` is the path the frame is sent on, as in data frames (the server
//! learns paths from what arrives).
//!
//! Versioned: [`PARITY_VERSION`] is 1, and a decoder refuses others with
//! [`WireError::UnknownVersion`]. Strict: a block with no data shard or
//! more than [`crate::fec::MAX_SHARDS`] shards, an index outside the
//! parity shards, or a shard shorter than a length prefix is
//! [`WireError::BadBlock`].

use super::{be_u32, check_len, field, WireError, TYPE_PARITY};
use crate::fec::MAX_SHARDS;
use crate::path::PathId;

/// The layout version this code writes and reads.
pub const PARITY_VERSION: u8 = 1;
/// Bytes of the header; the shard follows.
pub const PARITY_HEADER_LEN: usize = 10;
/// Bytes of the length prefix of a data shard.
pub const SHARD_PREFIX: usize = 2;

/// The header of a parity frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ParityHeader {
    /// The path the frame is sent on.
    pub path: PathId,
    /// Low 32 bits of the block's first tunnel sequence number.
    pub first: u32,
    /// Data packets in the block (`F`, at least 1).
    pub data: u8,
    /// Parity shards of the block's code (`K`, proactive and reserve).
    pub parity: u8,
    /// Which parity shard this is, `0..parity`.
    pub index: u8,
}

impl ParityHeader {
    /// Whether the shape is one [`crate::fec::BlockCode`] accepts and
    /// the index is one of its parity shards.
    pub fn is_valid(&self) -> bool {
        self.data >= 1
            && self.index < self.parity
            && self.data as usize + self.parity as usize <= MAX_SHARDS
    }

    /// Writes the header and `shard` into `buf`, returning the length.
    ///
    /// Errors: [`WireError::BadBlock`] for an invalid shape or index or a
    /// shard shorter than [`SHARD_PREFIX`] (it would not decode);
    /// [`WireError::BufferTooSmall`] if `buf` cannot hold the frame.
    /// Nothing is written on error.
    pub fn emit(&self, shard: &[u8], buf: &mut [u8]) -> Result<usize, WireError> {
        if !self.is_valid() || shard.len() < SHARD_PREFIX {
            return Err(WireError::BadBlock);
        }
        let need = PARITY_HEADER_LEN + shard.len();
        let buf = buf
            .get_mut(..need)
            .ok_or(WireError::BufferTooSmall { need })?;
        buf[field::TYPE] = TYPE_PARITY;
        buf[1] = PARITY_VERSION;
        buf[2] = self.path.0;
        buf[3..7].copy_from_slice(&self.first.to_be_bytes());
        buf[7] = self.data;
        buf[8] = self.parity;
        buf[9] = self.index;
        buf[PARITY_HEADER_LEN..].copy_from_slice(shard);
        Ok(need)
    }
}

/// Checks a parity frame (type byte already read): its header and shard.
pub(super) fn parse(buf: &[u8]) -> Result<(ParityHeader, &[u8]), WireError> {
    check_len(buf, 2)?;
    if buf[1] != PARITY_VERSION {
        return Err(WireError::UnknownVersion(buf[1]));
    }
    check_len(buf, PARITY_HEADER_LEN + SHARD_PREFIX)?;
    let h = ParityHeader {
        path: PathId(buf[2]),
        first: be_u32(&buf[3..7]),
        data: buf[7],
        parity: buf[8],
        index: buf[9],
    };
    if !h.is_valid() {
        return Err(WireError::BadBlock);
    }
    Ok((h, &buf[PARITY_HEADER_LEN..]))
}

/// The data shard of `packet` for a block whose shards are `shard_len`
/// bytes: length prefix, packet, zero padding. `None` if the packet does
/// not fit (or is longer than a 2-byte length).
pub fn data_shard(packet: &[u8], shard_len: usize) -> Option<Vec<u8>> {
    let n = u16::try_from(packet.len()).ok()?;
    if SHARD_PREFIX + packet.len() > shard_len {
        return None;
    }
    let mut v = Vec::with_capacity(shard_len);
    v.extend_from_slice(&n.to_be_bytes());
    v.extend_from_slice(packet);
    v.resize(shard_len, 0);
    Some(v)
}

/// The packet inside a rebuilt data shard: `None` if its length prefix
/// points past the shard (a corrupt block) or the packet is empty.
pub fn packet_of_shard(shard: &[u8]) -> Option<&[u8]> {
    let n = u16::from_be_bytes([*shard.first()?, *shard.get(1)?]) as usize;
    let end = SHARD_PREFIX.checked_add(n)?;
    (n > 0).then_some(())?;
    shard.get(SHARD_PREFIX..end)
}

#[cfg(test)]
mod tests {
    use super::super::{decode, Frame};
    use super::*;

    fn header() -> ParityHeader {
        ParityHeader {
            path: PathId(2),
            first: 0x0102_0304,
            data: 10,
            parity: 4,
            index: 3,
        }
    }

    #[test]
    fn round_trip_and_layout() {
        let mut b = [0u8; 32];
        let n = header().emit(&[0, 1, 0xaa], &mut b).unwrap();
        assert_eq!(
            &b[..n],
            &[0x07, 1, 2, 1, 2, 3, 4, 10, 4, 3, 0, 1, 0xaa],
            "type, version, path, first, data, parity, index, shard"
        );
        assert_eq!(
            decode(&b[..n]),
            Ok(Frame::Parity(header(), &[0, 1, 0xaa][..]))
        );
    }

    #[test]
    fn decoding_is_strict() {
        let mut b = [0u8; 32];
        let n = header().emit(&[0, 1, 0xaa], &mut b).unwrap();
        let mut v = b[..n].to_vec();
        v[1] = 2;
        assert_eq!(decode(&v), Err(WireError::UnknownVersion(2)));
        assert!(matches!(decode(&b[..11]), Err(WireError::Truncated { .. })));
        assert!(matches!(decode(&b[..1]), Err(WireError::Truncated { .. })));
        for (at, val) in [(7, 0u8), (9, 4), (8, 250)] {
            let mut v = b[..n].to_vec();
            v[at] = val;
            assert_eq!(decode(&v), Err(WireError::BadBlock), "byte {at} = {val}");
        }
    }

    #[test]
    fn emit_refuses_what_would_not_decode() {
        let mut b = [0u8; 32];
        let bad = ParityHeader {
            index: 4,
            ..header()
        };
        assert_eq!(bad.emit(&[0, 1], &mut b), Err(WireError::BadBlock));
        assert_eq!(header().emit(&[0], &mut b), Err(WireError::BadBlock));
        assert_eq!(
            header().emit(&[0; 30], &mut b),
            Err(WireError::BufferTooSmall { need: 40 })
        );
    }

    #[test]
    fn shards_carry_their_length() {
        let s = data_shard(b"abc", 8).unwrap();
        assert_eq!(s, [0, 3, b'a', b'b', b'c', 0, 0, 0]);
        assert_eq!(packet_of_shard(&s), Some(&b"abc"[..]));
        assert_eq!(data_shard(b"abcdefg", 8), None, "does not fit");
        assert_eq!(packet_of_shard(&[0, 9, 1]), None, "length past the end");
        assert_eq!(packet_of_shard(&[0, 0, 1]), None, "empty packet");
        assert_eq!(packet_of_shard(&[0]), None);
    }
}
