//! MPLOT frames: a coded packet of a block, and the acknowledgement of one.
//!
//! ```text
//! DATA 0x21 | flags u8 | path u8 | pos u8 | data u8 | total u8 | shard_len u16
//!           | block u32 | seq u64 | offset u64 | block_bytes u32 | shard...   (34-byte header)
//! ACK  0x22 | flags u8 | path u8 | pos u8 | have u8 | ce_paths u16
//!           | block u32 | cum_block u32 | seq u64                             (23 bytes)
//! ```
//! All integers big-endian.
//!
//! A DATA frame carries the four fields MPLOT adds to every packet (§II-B:
//! block id, block size `F + K` as `total`, `F` as `data`, position), the
//! packet's byte sequence number (per session, never reused, §II-B), and
//! where the block's bytes sit in the stream (`offset`, `block_bytes`), so
//! that any `F` packets of a block rebuild it without the others. The shard
//! is `shard_len` bytes; in a simulation the sender may leave it out
//! (`shard` empty, [`DataFlags::VIRTUAL`]) and only the sizes count.
//!
//! An ACK answers one DATA frame (MPLOT acknowledges every packet): which
//! one (`seq`, `path`, `block`, `pos`), how many distinct packets of that
//! block the receiver holds (`have`, saturated at 255) or that it has
//! decoded the block, every block below `cum_block` decoded, and, per
//! forward path, whether a packet marked Congestion Experienced arrived on
//! it lately (`ce_paths`, bit `i` for path `i`: the paper's "ECN bit of the
//! corresponding forward path" read as a bitmap, `SPECS.md` §2.2; see
//! `receiver::CE_ECHOES` for how long a mark is echoed).
//!
//! Decoding is checked as in [`crate::wire`]: lengths first, no panics, no
//! allocation, undefined flags and inconsistent block fields refused.

use crate::fec::mplot::MAX_BLOCK_PACKETS;

/// Frame type byte of a coded data packet.
pub const TYPE_DATA: u8 = 0x21;
/// Frame type byte of an acknowledgement.
pub const TYPE_ACK: u8 = 0x22;
/// Bytes of a DATA header before the shard.
pub const DATA_HEADER_LEN: usize = 34;
/// Bytes of an ACK frame.
pub const ACK_LEN: usize = 23;
/// Most paths a session has: `ce_paths` is a 16-bit map.
pub const MAX_PATHS: usize = 16;

mod field {
    pub type Field = core::ops::Range<usize>;
    pub const TYPE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const PATH: usize = 2;
    pub const POS: usize = 3;
    pub const DATA_F: usize = 4;
    pub const DATA_TOTAL: usize = 5;
    pub const DATA_SHARD_LEN: Field = 6..8;
    pub const DATA_BLOCK: Field = 8..12;
    pub const DATA_SEQ: Field = 12..20;
    pub const DATA_OFFSET: Field = 20..28;
    pub const DATA_BLOCK_BYTES: Field = 28..32;
    pub const DATA_RESERVED: Field = 32..34;
    pub const ACK_HAVE: usize = 4;
    pub const ACK_CE: Field = 5..7;
    pub const ACK_BLOCK: Field = 7..11;
    pub const ACK_CUM: Field = 11..15;
    pub const ACK_SEQ: Field = 15..23;
}

/// Why an MPLOT frame could not be decoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("truncated MPLOT frame: need {need} bytes, got {got}")]
    Truncated { need: usize, got: usize },
    #[error("not an MPLOT frame: type {0:#04x}")]
    UnknownType(u8),
    #[error("undefined flag bits {0:#04x}")]
    BadFlags(u8),
    #[error("path {0} out of range (at most {MAX_PATHS} paths)")]
    BadPath(u8),
    /// `F = 0`, `F > total`, `pos ≥ total`, a zero shard length, or a
    /// block's bytes that do not fit its `F` shards.
    #[error("inconsistent block fields")]
    BadBlock,
    /// The shard is not `shard_len` bytes (and the frame is not virtual).
    #[error("shard is {got} bytes, header says {want}")]
    ShardLength { want: usize, got: usize },
    #[error("{0} trailing bytes after an ACK")]
    TrailingBytes(usize),
    #[error("output buffer too small: need {need} bytes")]
    BufferTooSmall { need: usize },
}

/// Flags of a DATA frame.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DataFlags(pub u8);

impl DataFlags {
    /// The block is the last of the stream.
    pub const FIN: u8 = 0x01;
    /// No shard bytes follow (simulation): only sizes are modelled.
    pub const VIRTUAL: u8 = 0x02;
    const ALL: u8 = Self::FIN | Self::VIRTUAL;
}

/// The header of a DATA frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DataHeader {
    pub fin: bool,
    pub virtual_shard: bool,
    /// Forward path the packet was sent on.
    pub path: u8,
    /// Position in the block: `0..data` data, then PFEC, then RFEC.
    pub pos: u8,
    /// `F`.
    pub data: u8,
    /// `F + K`: every position the block has.
    pub total: u8,
    pub shard_len: u16,
    pub block: u32,
    /// Byte sequence number (per session, never reused).
    pub seq: u64,
    /// Stream offset of the block's first byte.
    pub offset: u64,
    /// Stream bytes in the block (the last shard is zero-padded).
    pub block_bytes: u32,
}

/// A decoded DATA frame, borrowing its shard.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DataView<'a> {
    pub header: DataHeader,
    pub shard: &'a [u8],
}

/// An acknowledgement of one DATA frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ack {
    /// Forward path of the acknowledged packet.
    pub path: u8,
    pub pos: u8,
    /// Distinct packets of `block` the receiver holds (saturated).
    pub have: u8,
    /// The receiver has decoded `block` (or delivered it already).
    pub decoded: bool,
    /// Recent CE marks of each forward path, bit `i` for path `i`.
    pub ce_paths: u16,
    pub block: u32,
    /// Every block below this one is decoded.
    pub cum_block: u32,
    /// Sequence number of the acknowledged packet.
    pub seq: u64,
}

/// A decoded frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Data(DataView<'a>),
    Ack(Ack),
}

fn be16(b: &[u8], f: field::Field) -> u16 {
    u16::from_be_bytes([b[f.start], b[f.start + 1]])
}
fn be32(b: &[u8], f: field::Field) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[f]);
    u32::from_be_bytes(a)
}
fn be64(b: &[u8], f: field::Field) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[f]);
    u64::from_be_bytes(a)
}

impl DataHeader {
    /// Whether the block fields are consistent: `1 ≤ F ≤ total ≤ 255`,
    /// `pos < total`, a shard of at least one byte, and `block_bytes` that
    /// fits `F` shards.
    pub fn is_consistent(&self) -> bool {
        self.data >= 1
            && self.data <= self.total
            && usize::from(self.total) <= MAX_BLOCK_PACKETS
            && self.pos < self.total
            && self.shard_len >= 1
            && usize::from(self.path) < MAX_PATHS
            && u64::from(self.block_bytes) <= u64::from(self.data) * u64::from(self.shard_len)
            && self
                .offset
                .checked_add(u64::from(self.block_bytes))
                .is_some()
    }

    /// Bytes of the frame this header heads (the shard included unless virtual).
    pub fn frame_len(&self) -> usize {
        DATA_HEADER_LEN
            + if self.virtual_shard {
                0
            } else {
                usize::from(self.shard_len)
            }
    }
}

/// Decodes one frame.
pub fn decode(buf: &[u8]) -> Result<Frame<'_>, FrameError> {
    let Some(&ty) = buf.first() else {
        return Err(FrameError::Truncated { need: 1, got: 0 });
    };
    match ty {
        TYPE_DATA => decode_data(buf).map(Frame::Data),
        TYPE_ACK => decode_ack(buf).map(Frame::Ack),
        other => Err(FrameError::UnknownType(other)),
    }
}

fn decode_data(buf: &[u8]) -> Result<DataView<'_>, FrameError> {
    if buf.len() < DATA_HEADER_LEN {
        return Err(FrameError::Truncated {
            need: DATA_HEADER_LEN,
            got: buf.len(),
        });
    }
    let flags = buf[field::FLAGS];
    if flags & !DataFlags::ALL != 0 || buf[field::DATA_RESERVED] != [0, 0] {
        return Err(FrameError::BadFlags(flags));
    }
    let path = buf[field::PATH];
    if usize::from(path) >= MAX_PATHS {
        return Err(FrameError::BadPath(path));
    }
    let header = DataHeader {
        fin: flags & DataFlags::FIN != 0,
        virtual_shard: flags & DataFlags::VIRTUAL != 0,
        path,
        pos: buf[field::POS],
        data: buf[field::DATA_F],
        total: buf[field::DATA_TOTAL],
        shard_len: be16(buf, field::DATA_SHARD_LEN),
        block: be32(buf, field::DATA_BLOCK),
        seq: be64(buf, field::DATA_SEQ),
        offset: be64(buf, field::DATA_OFFSET),
        block_bytes: be32(buf, field::DATA_BLOCK_BYTES),
    };
    if !header.is_consistent() {
        return Err(FrameError::BadBlock);
    }
    let shard = &buf[DATA_HEADER_LEN..];
    let want = if header.virtual_shard {
        0
    } else {
        usize::from(header.shard_len)
    };
    if shard.len() != want {
        return Err(FrameError::ShardLength {
            want,
            got: shard.len(),
        });
    }
    Ok(DataView { header, shard })
}

fn decode_ack(buf: &[u8]) -> Result<Ack, FrameError> {
    if buf.len() < ACK_LEN {
        return Err(FrameError::Truncated {
            need: ACK_LEN,
            got: buf.len(),
        });
    }
    if buf.len() > ACK_LEN {
        return Err(FrameError::TrailingBytes(buf.len() - ACK_LEN));
    }
    let flags = buf[field::FLAGS];
    if flags & !AckFlags::ALL != 0 {
        return Err(FrameError::BadFlags(flags));
    }
    let path = buf[field::PATH];
    if usize::from(path) >= MAX_PATHS {
        return Err(FrameError::BadPath(path));
    }
    Ok(Ack {
        path,
        pos: buf[field::POS],
        have: buf[field::ACK_HAVE],
        decoded: flags & AckFlags::DECODED != 0,
        ce_paths: be16(buf, field::ACK_CE),
        block: be32(buf, field::ACK_BLOCK),
        cum_block: be32(buf, field::ACK_CUM),
        seq: be64(buf, field::ACK_SEQ),
    })
}

/// Flags of an ACK frame.
pub struct AckFlags;
impl AckFlags {
    /// The acknowledged packet's block is decoded.
    pub const DECODED: u8 = 0x01;
    const ALL: u8 = Self::DECODED;
}

/// Writes a DATA frame into `out` and returns its length. `shard` must be
/// `shard_len` bytes, or empty for a virtual frame; the header must be
/// consistent (an inconsistent one is refused, never written).
pub fn emit_data(h: &DataHeader, shard: &[u8], out: &mut [u8]) -> Result<usize, FrameError> {
    if !h.is_consistent() {
        return Err(FrameError::BadBlock);
    }
    let want = if h.virtual_shard {
        0
    } else {
        usize::from(h.shard_len)
    };
    if shard.len() != want {
        return Err(FrameError::ShardLength {
            want,
            got: shard.len(),
        });
    }
    let len = DATA_HEADER_LEN + want;
    if out.len() < len {
        return Err(FrameError::BufferTooSmall { need: len });
    }
    let mut flags = 0;
    if h.fin {
        flags |= DataFlags::FIN;
    }
    if h.virtual_shard {
        flags |= DataFlags::VIRTUAL;
    }
    out[field::TYPE] = TYPE_DATA;
    out[field::FLAGS] = flags;
    out[field::PATH] = h.path;
    out[field::POS] = h.pos;
    out[field::DATA_F] = h.data;
    out[field::DATA_TOTAL] = h.total;
    out[field::DATA_SHARD_LEN].copy_from_slice(&h.shard_len.to_be_bytes());
    out[field::DATA_BLOCK].copy_from_slice(&h.block.to_be_bytes());
    out[field::DATA_SEQ].copy_from_slice(&h.seq.to_be_bytes());
    out[field::DATA_OFFSET].copy_from_slice(&h.offset.to_be_bytes());
    out[field::DATA_BLOCK_BYTES].copy_from_slice(&h.block_bytes.to_be_bytes());
    out[field::DATA_RESERVED].copy_from_slice(&[0, 0]);
    out[DATA_HEADER_LEN..len].copy_from_slice(shard);
    Ok(len)
}

/// Writes an ACK frame into `out` and returns its length ([`ACK_LEN`]).
pub fn emit_ack(a: &Ack, out: &mut [u8]) -> Result<usize, FrameError> {
    if usize::from(a.path) >= MAX_PATHS {
        return Err(FrameError::BadPath(a.path));
    }
    if out.len() < ACK_LEN {
        return Err(FrameError::BufferTooSmall { need: ACK_LEN });
    }
    out[field::TYPE] = TYPE_ACK;
    out[field::FLAGS] = if a.decoded { AckFlags::DECODED } else { 0 };
    out[field::PATH] = a.path;
    out[field::POS] = a.pos;
    out[field::ACK_HAVE] = a.have;
    out[field::ACK_CE].copy_from_slice(&a.ce_paths.to_be_bytes());
    out[field::ACK_BLOCK].copy_from_slice(&a.block.to_be_bytes());
    out[field::ACK_CUM].copy_from_slice(&a.cum_block.to_be_bytes());
    out[field::ACK_SEQ].copy_from_slice(&a.seq.to_be_bytes());
    Ok(ACK_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> DataHeader {
        DataHeader {
            fin: true,
            virtual_shard: false,
            path: 3,
            pos: 7,
            data: 5,
            total: 9,
            shard_len: 4,
            block: 0x0102_0304,
            seq: 0x1122_3344_5566_7788,
            offset: 1000,
            block_bytes: 18,
        }
    }

    #[test]
    fn test_emit_and_parse_data() {
        let h = header();
        let mut buf = [0u8; 64];
        let n = emit_data(&h, &[9, 8, 7, 6], &mut buf).unwrap();
        assert_eq!(n, DATA_HEADER_LEN + 4);
        assert_eq!(&buf[..8], &[TYPE_DATA, 0x01, 3, 7, 5, 9, 0, 4]);
        match decode(&buf[..n]).unwrap() {
            Frame::Data(v) => {
                assert_eq!(v.header, h);
                assert_eq!(v.shard, &[9, 8, 7, 6]);
            }
            other => panic!("{other:?}"),
        }
        // A shard shorter than the header says is refused.
        assert_eq!(
            decode(&buf[..n - 1]),
            Err(FrameError::ShardLength { want: 4, got: 3 })
        );
    }

    #[test]
    fn inconsistent_blocks_are_refused() {
        let mut buf = [0u8; 64];
        for bad in [
            DataHeader {
                data: 0,
                ..header()
            },
            DataHeader {
                data: 10,
                ..header()
            },
            DataHeader { pos: 9, ..header() },
            DataHeader {
                shard_len: 0,
                ..header()
            },
            DataHeader {
                block_bytes: 21,
                ..header()
            },
            DataHeader {
                path: 16,
                ..header()
            },
        ] {
            assert_eq!(
                emit_data(&bad, &[0; 4], &mut buf).err(),
                Some(FrameError::BadBlock),
                "{bad:?}"
            );
        }
        // The same bytes written by hand are refused by the decoder.
        let n = emit_data(&header(), &[0; 4], &mut buf).unwrap();
        buf[field::POS] = 9;
        assert_eq!(decode(&buf[..n]), Err(FrameError::BadBlock));
        buf[field::POS] = 0;
        buf[field::FLAGS] = 0x80;
        assert_eq!(decode(&buf[..n]), Err(FrameError::BadFlags(0x80)));
    }

    #[test]
    fn test_emit_and_parse_ack() {
        let a = Ack {
            path: 2,
            pos: 11,
            have: 40,
            decoded: true,
            ce_paths: 0b101,
            block: 77,
            cum_block: 70,
            seq: 123_456,
        };
        let mut buf = [0u8; ACK_LEN + 1];
        assert_eq!(emit_ack(&a, &mut buf).unwrap(), ACK_LEN);
        assert_eq!(decode(&buf[..ACK_LEN]), Ok(Frame::Ack(a)));
        assert_eq!(decode(&buf), Err(FrameError::TrailingBytes(1)));
        assert!(matches!(
            decode(&buf[..ACK_LEN - 1]),
            Err(FrameError::Truncated { .. })
        ));
        assert_eq!(decode(&[]), Err(FrameError::Truncated { need: 1, got: 0 }));
        assert_eq!(decode(&[0x01]), Err(FrameError::UnknownType(0x01)));
    }

    fn arb_header() -> impl Strategy<Value = DataHeader> {
        (
            any::<(bool, bool)>(),
            0u8..16,
            1u8..=255,
            any::<(u8, u8)>(),
            1u16..2000,
            any::<(u32, u64, u32)>(),
            any::<u64>(),
        )
            .prop_map(
                |((fin, v), path, total, (f, pos), shard_len, (block, seq, bb), off)| {
                    let data = 1 + f % total;
                    let pos = pos % total;
                    let max_bytes = u32::from(data) * u32::from(shard_len);
                    DataHeader {
                        fin,
                        virtual_shard: v,
                        path,
                        pos,
                        data,
                        total,
                        shard_len,
                        block,
                        seq,
                        offset: off / 2,
                        block_bytes: bb % (max_bytes + 1),
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn data_round_trips(h in arb_header(), fill in any::<u8>()) {
            let shard = if h.virtual_shard { vec![] } else { vec![fill; usize::from(h.shard_len)] };
            let mut buf = vec![0u8; h.frame_len()];
            let n = emit_data(&h, &shard, &mut buf).unwrap();
            prop_assert_eq!(n, h.frame_len());
            match decode(&buf).unwrap() {
                Frame::Data(v) => {
                    prop_assert_eq!(v.header, h);
                    prop_assert_eq!(v.shard, &shard[..]);
                }
                Frame::Ack(_) => prop_assert!(false),
            }
        }

        #[test]
        fn ack_round_trips(path in 0u8..16, pos: u8, have: u8, decoded: bool, ce: u16, block: u32, cum: u32, seq: u64) {
            let a = Ack { path, pos, have, decoded, ce_paths: ce, block, cum_block: cum, seq };
            let mut buf = [0u8; ACK_LEN];
            emit_ack(&a, &mut buf).unwrap();
            prop_assert_eq!(decode(&buf), Ok(Frame::Ack(a)));
        }

        /// Whatever arrives, decoding returns and what it accepts is consistent.
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(Frame::Data(v)) = decode(&bytes) {
                prop_assert!(v.header.is_consistent());
            }
        }

        /// Bytes that start like a frame exercise the field checks.
        #[test]
        fn decode_never_panics_on_framed_bytes(ty in prop_oneof![Just(TYPE_DATA), Just(TYPE_ACK)],
                                               bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let mut b = vec![ty];
            b.extend(bytes);
            if let Ok(Frame::Data(v)) = decode(&b) {
                prop_assert!(v.header.is_consistent());
                prop_assert_eq!(v.shard.len(), if v.header.virtual_shard { 0 } else { usize::from(v.header.shard_len) });
            }
        }
    }
}
