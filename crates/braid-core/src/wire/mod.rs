//! Tunnel frame formats (the plaintext inside the encrypted envelope).
//!
//! Every frame starts with one type byte. Decoding is checked: once
//! [`decode`] returned `Ok`, no accessor panics; malformed input yields a
//! small `Copy` [`WireError`]. Nothing here allocates on decode.
//!
//! ```text
//! DATA      0x01 | flags u8 | path u8 | prev_delta u16 | seq u32 | inner packet...   (9-byte header)
//!                  (flag INSTALL: the inner packet's header context, 13 bytes, then
//!                  its compressed headers and payload; flag COMPRESSED: compressed
//!                  headers and payload; see [`crate::compress`])
//! FEEDBACK  0x02 | path u8 | count u8 | seq u32 | rx_time_ns u64 | deltas (see [`feedback`])
//! KEEPALIVE 0x03 | path u8 | id u32 | tx_time_ns u64
//! KA_ACK    0x04 | path u8 | id u32 | tx_time_ns u64  (echo of the keepalive)
//! CONTROL   0x05 | kind u8 | body...                   (session control, see [`Control`])
//! NACK      0x06 | version u8 | nranges u8 | nrates u8 | ... (loss report, see [`nack`])
//! PARITY    0x07 | version u8 | path u8 | first u32 | data u8 | parity u8 | index u8
//!                | shard...                            (FEC parity, see [`parity`])
//! ```
//! All integers big-endian.
//!
//! Layout conventions follow smoltcp: byte ranges of every field are
//! constants in the private `field` module, emitters write exactly the
//! bytes a frame occupies, and decoding validates lengths before any field
//! is read.
//!
//! Decoding is strict: undefined data flag bits, a feedback count above
//! [`MAX_FEEDBACK_ENTRIES`], and bytes after the end of a feedback or
//! keepalive frame are errors. A data frame's header is followed by the
//! inner packet, which extends to the end of the buffer (it may be empty);
//! a control frame's body likewise extends to the end of the buffer. Unknown
//! control kinds decode fine (the connection layer ignores them), so new
//! control messages can be added without a version bump.

pub mod feedback;
pub mod nack;
pub mod parity;
pub mod seq;

pub use feedback::{
    emit_feedback, feedback_len, feedback_max_len, FeedbackEntries, FeedbackEntry, FeedbackView,
    MAX_FEEDBACK_ENTRIES,
};
pub use nack::{
    emit_nack, nack_len, NackRange, NackRate, NackView, MAX_NACK_RANGES, MAX_NACK_RATES,
    NACK_VERSION,
};
pub use parity::{ParityHeader, PARITY_HEADER_LEN, PARITY_VERSION};

use crate::path::PathId;

/// Byte ranges (and single-byte offsets) of every field, smoltcp style.
mod field {
    #![allow(dead_code)]
    pub type Field = core::ops::Range<usize>;

    /// Frame type, common to all frames.
    pub const TYPE: usize = 0;

    /// DATA: flags.
    pub const DATA_FLAGS: usize = 1;
    /// DATA: path id.
    pub const DATA_PATH: usize = 2;
    /// DATA: sequence delta to the previous packet on the same path.
    pub const DATA_PREV_DELTA: Field = 3..5;
    /// DATA: low 32 bits of the tunnel sequence number.
    pub const DATA_SEQ: Field = 5..9;
    /// DATA: the inner packet, from here to the end of the buffer.
    pub const DATA_PAYLOAD: usize = 9;

    /// FEEDBACK: path id.
    pub const FB_PATH: usize = 1;
    /// FEEDBACK: number of entries.
    pub const FB_COUNT: usize = 2;
    /// FEEDBACK: first entry.
    pub const FB_ENTRIES: usize = 3;

    /// KEEPALIVE / KA_ACK: path id.
    pub const KA_PATH: usize = 1;
    /// KEEPALIVE / KA_ACK: identifier.
    pub const KA_ID: Field = 2..6;
    /// KEEPALIVE / KA_ACK: sender's transmit time.
    pub const KA_TX_TIME: Field = 6..14;

    /// CONTROL: message kind.
    pub const CTRL_KIND: usize = 1;
    /// CONTROL: the body, from here to the end of the buffer.
    pub const CTRL_BODY: usize = 2;
}

/// Why a frame could not be decoded. Small and `Copy` so that counting
/// drops costs nothing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The buffer ended before the frame did.
    #[error("truncated frame: need {need} bytes, got {got}")]
    Truncated { need: usize, got: usize },
    /// The first byte names no frame type.
    #[error("unknown frame type {0:#04x}")]
    UnknownType(u8),
    /// Flag bits that this version does not define are set.
    #[error("undefined flag bits {0:#04x}")]
    BadFlags(u8),
    /// A feedback frame announces more entries than [`MAX_FEEDBACK_ENTRIES`].
    /// When emitting, the number of entries offered (saturated to 255).
    #[error("too many feedback entries: {0}")]
    TooManyEntries(u8),
    /// The output buffer is too small for the frame being written.
    #[error("output buffer too small: need {need} bytes")]
    BufferTooSmall { need: usize },
    /// A fixed-length frame (feedback, keepalive, keepalive echo) is
    /// followed by this many extra bytes. Frames are never padded, so
    /// trailing bytes mean the frame is corrupt or not what it claims.
    #[error("{0} trailing bytes after frame")]
    TrailingBytes(usize),
    /// A feedback entry's varint is too long, too large for its field, or
    /// not in its shortest form.
    #[error("malformed varint in a feedback entry")]
    BadVarint,
    /// A versioned frame (NACK) carries a layout version this code does
    /// not know.
    #[error("unknown frame version {0}")]
    UnknownVersion(u8),
    /// A field that its flags mark as absent is not zero (a NACK range
    /// without `AFTER_KNOWN` whose `after` bytes are set): decoding is
    /// canonical, so such a frame is refused rather than re-encoded
    /// differently.
    #[error("non-zero bytes in a field marked absent")]
    NonCanonical,
    /// A parity frame's block shape is not a valid code (no data shard,
    /// more than [`crate::fec::MAX_SHARDS`] shards) or its index is not one
    /// of the block's parity shards.
    #[error("invalid FEC block shape or parity index")]
    BadBlock,
}

/// Frame type bytes.
pub const TYPE_DATA: u8 = 0x01;
/// Frame type byte of a feedback frame.
pub const TYPE_FEEDBACK: u8 = 0x02;
/// Frame type byte of a keepalive.
pub const TYPE_KEEPALIVE: u8 = 0x03;
/// Frame type byte of a keepalive echo.
pub const TYPE_KEEPALIVE_ACK: u8 = 0x04;
/// Frame type byte of a control message.
pub const TYPE_CONTROL: u8 = 0x05;
/// Frame type byte of a loss report.
pub const TYPE_NACK: u8 = 0x06;
/// Frame type byte of an FEC parity shard.
pub const TYPE_PARITY: u8 = 0x07;

/// Flags of a data frame.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DataFlags(pub u8);

impl DataFlags {
    /// First packet of a PET packet pair.
    pub const PAIR_FIRST: u8 = 0x01;
    /// Second packet of a PET packet pair.
    pub const PAIR_SECOND: u8 = 0x02;
    /// The sender judged the inner packet a retransmission.
    pub const RETRANSMIT: u8 = 0x04;
    /// Sent to keep an unused path's estimate fresh.
    pub const PROBE: u8 = 0x08;
    /// A copy of a packet reported lost, resent by the tunnel's own
    /// repair (ARQ). Its `prev_delta` is 0: it is not part of the path's
    /// chain of previous-on-path links.
    pub const REPAIR: u8 = 0x10;
    /// The inner packet's header context (13 bytes) comes ahead of its
    /// compressed headers: the receiver learns the context from it
    /// ([`crate::compress`]).
    pub const INSTALL: u8 = 0x20;
    /// The inner packet's IPv4/TCP headers are compressed against a
    /// context the receiver holds ([`crate::compress::header`]).
    pub const COMPRESSED: u8 = 0x40;
    /// All defined bits.
    pub const ALL: u8 = 0x7f;
    /// Whether any bit of `bit` is set.
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }
    /// Whether only defined bits are set, and not both header forms.
    pub fn is_valid(self) -> bool {
        self.invalid_bits() == 0
    }
    /// The bits that make these flags invalid: undefined ones, else both
    /// header forms when both are set, else none.
    pub fn invalid_bits(self) -> u8 {
        let both = Self::INSTALL | Self::COMPRESSED;
        match self.0 & !Self::ALL {
            0 if self.0 & both == both => both,
            undefined => undefined,
        }
    }
}

/// Header of a data frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DataHeader {
    pub flags: DataFlags,
    pub path: PathId,
    /// This packet's tunnel sequence number minus the previous one sent on
    /// the same path; 0 when unknown (first on the path or too far back).
    pub prev_delta: u16,
    /// Low 32 bits of the tunnel sequence number ([`seq::extend`] recovers it).
    pub seq: u32,
}

impl DataHeader {
    /// Bytes of the header; the inner packet follows.
    pub const LEN: usize = 9;

    /// Writes the header into `buf[..LEN]`.
    ///
    /// Errors: [`WireError::BufferTooSmall`] if `buf` is shorter than
    /// [`DataHeader::LEN`]; [`WireError::BadFlags`] if `flags` has bits
    /// outside [`DataFlags::ALL`] (the frame would not decode). Nothing is
    /// written on error.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        if !self.flags.is_valid() {
            return Err(WireError::BadFlags(self.flags.invalid_bits()));
        }
        let buf = buf
            .get_mut(..Self::LEN)
            .ok_or(WireError::BufferTooSmall { need: Self::LEN })?;
        buf[field::TYPE] = TYPE_DATA;
        buf[field::DATA_FLAGS] = self.flags.0;
        buf[field::DATA_PATH] = self.path.0;
        buf[field::DATA_PREV_DELTA].copy_from_slice(&self.prev_delta.to_be_bytes());
        buf[field::DATA_SEQ].copy_from_slice(&self.seq.to_be_bytes());
        Ok(())
    }

    /// Parses the header of a data frame whose length is already checked.
    fn parse(buf: &[u8]) -> Result<DataHeader, WireError> {
        let flags = buf[field::DATA_FLAGS];
        if !DataFlags(flags).is_valid() {
            return Err(WireError::BadFlags(DataFlags(flags).invalid_bits()));
        }
        Ok(DataHeader {
            flags: DataFlags(flags),
            path: PathId(buf[field::DATA_PATH]),
            prev_delta: u16::from_be_bytes([
                buf[field::DATA_PREV_DELTA.start],
                buf[field::DATA_PREV_DELTA.start + 1],
            ]),
            seq: be_u32(&buf[field::DATA_SEQ]),
        })
    }
}

/// A keepalive or its echo.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Keepalive {
    pub path: PathId,
    pub id: u32,
    pub tx_time_ns: u64,
}

impl Keepalive {
    /// Bytes of a keepalive or keepalive echo frame.
    pub const LEN: usize = 14;

    /// Writes a keepalive (`ack` = false) or its echo into `buf[..LEN]`.
    ///
    /// Errors: [`WireError::BufferTooSmall`] if `buf` is shorter than
    /// [`Keepalive::LEN`]; nothing is written then.
    pub fn emit(&self, ack: bool, buf: &mut [u8]) -> Result<(), WireError> {
        let buf = buf
            .get_mut(..Self::LEN)
            .ok_or(WireError::BufferTooSmall { need: Self::LEN })?;
        buf[field::TYPE] = if ack {
            TYPE_KEEPALIVE_ACK
        } else {
            TYPE_KEEPALIVE
        };
        buf[field::KA_PATH] = self.path.0;
        buf[field::KA_ID].copy_from_slice(&self.id.to_be_bytes());
        buf[field::KA_TX_TIME].copy_from_slice(&self.tx_time_ns.to_be_bytes());
        Ok(())
    }

    /// Parses a keepalive whose length is already checked.
    fn parse(buf: &[u8]) -> Keepalive {
        Keepalive {
            path: PathId(buf[field::KA_PATH]),
            id: be_u32(&buf[field::KA_ID]),
            tx_time_ns: be_u64(&buf[field::KA_TX_TIME]),
        }
    }
}

/// Longest path name a [`Control::PATH_NAME`] frame carries, in bytes.
pub const MAX_PATH_NAME: usize = 32;

/// A session control message: a kind byte and a kind-specific body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Control<'a> {
    /// One of the `Control::*` kinds, or a kind this version does not know.
    pub kind: u8,
    /// Kind-specific bytes (empty for [`Control::CLOSE`]).
    pub body: &'a [u8],
}

impl<'a> Control<'a> {
    /// The client is going away: the server may free its state and tunnel
    /// address at once instead of waiting for the idle timeout. Empty body.
    pub const CLOSE: u8 = 0x01;
    /// The client took a path out of use (its interface failed or it went
    /// silent); the server should stop sending on it too rather than wait
    /// for the silence to tell it. Body: the path id (1 byte), and a
    /// second byte [`Control::DOWN_SILENT`] when it went silent (the
    /// server keeps a path it still hears from). Sent on the paths still
    /// up.
    pub const PATH_DOWN: u8 = 0x02;
    /// Second body byte of [`Control::PATH_DOWN`]: the path went silent
    /// for the client's silence limit (rather than failing locally).
    pub const DOWN_SILENT: u8 = 0x01;
    /// The sender will not repair these packets (their loss was taken for
    /// congestion, or they are too old): the receiver's resequencer should
    /// stop holding their gaps. Body: the low 32 bits of each tunnel
    /// sequence number, big-endian, 4 bytes each (a partial last one is
    /// ignored).
    pub const SKIP: u8 = 0x03;
    /// Most entries a sender puts in one [`Control::SKIP`] frame (a 1 kB
    /// body); a receiver takes whatever a frame holds.
    pub const SKIP_MAX_ENTRIES: usize = 256;
    /// The client's name for a path (its configuration's `[[path]] name`),
    /// so that the server's status names the paths as the client's does.
    /// Body: the path id (1 byte), then the name in UTF-8, at most
    /// [`MAX_PATH_NAME`] bytes (the server cuts a longer one and drops
    /// control characters). Sent on that path after every handshake; a
    /// server that does not know the kind ignores it.
    pub const PATH_NAME: u8 = 0x04;
    /// Bytes of a control frame's fixed part (type and kind).
    pub const HEADER_LEN: usize = 2;

    /// Bytes this frame takes on the wire.
    pub fn buffer_len(&self) -> usize {
        Self::HEADER_LEN + self.body.len()
    }

    /// Writes the frame into `buf[..buffer_len()]`, returning its length.
    ///
    /// Errors: [`WireError::BufferTooSmall`] if `buf` is shorter than
    /// [`Control::buffer_len`]; nothing is written then.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let need = self.buffer_len();
        let buf = buf
            .get_mut(..need)
            .ok_or(WireError::BufferTooSmall { need })?;
        buf[field::TYPE] = TYPE_CONTROL;
        buf[field::CTRL_KIND] = self.kind;
        buf[field::CTRL_BODY..].copy_from_slice(self.body);
        Ok(need)
    }
}

/// A decoded frame borrowing from the input.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A data frame: header and inner packet (possibly empty).
    Data(DataHeader, &'a [u8]),
    /// Per-packet receiver reports.
    Feedback(FeedbackView<'a>),
    /// A keepalive.
    Keepalive(Keepalive),
    /// The echo of a keepalive.
    KeepaliveAck(Keepalive),
    /// A session control message.
    Control(Control<'a>),
    /// A loss report.
    Nack(NackView<'a>),
    /// One parity shard of an FEC block, and the shard.
    Parity(ParityHeader, &'a [u8]),
}

/// Decodes one frame. Never panics, never allocates.
///
/// Errors, in the order they are checked:
/// - [`WireError::Truncated`]: empty buffer, or shorter than the frame's
///   fixed part (data header, feedback header, keepalive, control kind), or than the
///   entries a feedback frame announces;
/// - [`WireError::UnknownType`]: the first byte is no `TYPE_*`;
/// - [`WireError::BadFlags`]: a data frame sets flag bits outside
///   [`DataFlags::ALL`] (the value carries the offending bits);
/// - [`WireError::TooManyEntries`]: a feedback count above
///   [`MAX_FEEDBACK_ENTRIES`] (checked before the length of the entries);
/// - [`WireError::BadVarint`]: a feedback entry's delta is malformed;
/// - [`WireError::TrailingBytes`]: bytes after a feedback or keepalive frame.
/// - NACK frames: [`WireError::UnknownVersion`], then the count, length,
///   trailing-byte and range-flag checks of [`nack`].
/// - PARITY frames: [`WireError::UnknownVersion`], then length, then
///   [`WireError::BadBlock`] (see [`parity`]).
pub fn decode(buf: &[u8]) -> Result<Frame<'_>, WireError> {
    let ty = *buf
        .first()
        .ok_or(WireError::Truncated { need: 1, got: 0 })?;
    match ty {
        TYPE_DATA => {
            check_len(buf, DataHeader::LEN)?;
            let header = DataHeader::parse(buf)?;
            Ok(Frame::Data(header, &buf[field::DATA_PAYLOAD..]))
        }
        TYPE_FEEDBACK => Ok(Frame::Feedback(feedback::parse(buf)?)),
        TYPE_KEEPALIVE | TYPE_KEEPALIVE_ACK => {
            check_len(buf, Keepalive::LEN)?;
            check_no_trailing(buf, Keepalive::LEN)?;
            let ka = Keepalive::parse(buf);
            Ok(if ty == TYPE_KEEPALIVE {
                Frame::Keepalive(ka)
            } else {
                Frame::KeepaliveAck(ka)
            })
        }
        TYPE_CONTROL => {
            check_len(buf, Control::HEADER_LEN)?;
            Ok(Frame::Control(Control {
                kind: buf[field::CTRL_KIND],
                body: &buf[field::CTRL_BODY..],
            }))
        }
        TYPE_NACK => Ok(Frame::Nack(nack::parse(buf)?)),
        TYPE_PARITY => {
            let (h, shard) = parity::parse(buf)?;
            Ok(Frame::Parity(h, shard))
        }
        other => Err(WireError::UnknownType(other)),
    }
}

/// `Truncated` unless `buf` holds at least `need` bytes.
fn check_len(buf: &[u8], need: usize) -> Result<(), WireError> {
    if buf.len() < need {
        Err(WireError::Truncated {
            need,
            got: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// `TrailingBytes` if `buf` is longer than the frame's `len` bytes.
fn check_no_trailing(buf: &[u8], len: usize) -> Result<(), WireError> {
    match buf.len() - len {
        0 => Ok(()),
        extra => Err(WireError::TrailingBytes(extra)),
    }
}

/// Big-endian `u32` from exactly 4 bytes.
fn be_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    u32::from_be_bytes(a)
}

/// Big-endian `u64` from exactly 8 bytes.
fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_be_bytes(a)
}

#[cfg(test)]
mod tests;
