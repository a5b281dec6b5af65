//! Tunnel frame formats (the plaintext inside the encrypted envelope).
//!
//! Every frame starts with one type byte. Decoding is checked: once
//! [`decode`] returned `Ok`, no accessor panics; malformed input yields a
//! small `Copy` [`WireError`]. Nothing here allocates on decode.
//!
//! ```text
//! DATA      0x01 | flags u8 | path u8 | prev_delta u16 | seq u32 | inner packet...   (9-byte header)
//! FEEDBACK  0x02 | path u8 | count u8 | count x { seq u32 | rx_time_ns u64 }
//! KEEPALIVE 0x03 | path u8 | id u32 | tx_time_ns u64
//! KA_ACK    0x04 | path u8 | id u32 | tx_time_ns u64  (echo of the keepalive)
//! ```
//! All integers big-endian. CONTRACT (to be implemented), see item docs.

pub mod seq;

use crate::path::PathId;

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
    #[error("too many feedback entries: {0}")]
    TooManyEntries(u8),
    /// The output buffer is too small for the frame being written.
    #[error("output buffer too small: need {need} bytes")]
    BufferTooSmall { need: usize },
}

/// Frame type bytes.
pub const TYPE_DATA: u8 = 0x01;
pub const TYPE_FEEDBACK: u8 = 0x02;
pub const TYPE_KEEPALIVE: u8 = 0x03;
pub const TYPE_KEEPALIVE_ACK: u8 = 0x04;

/// Upper bound on entries in one feedback frame (bounds work per frame).
pub const MAX_FEEDBACK_ENTRIES: usize = 64;

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
    /// All defined bits.
    pub const ALL: u8 = 0x0f;
    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
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
    pub const LEN: usize = 9;
    /// Writes the header into `buf[..LEN]`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let _ = buf;
        todo!()
    }
}

/// One per-packet receiver report (the paper's SIG-ACK).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FeedbackEntry {
    /// Low 32 bits of the tunnel sequence number received.
    pub seq: u32,
    /// Receiver's clock at arrival, nanoseconds (arbitrary origin).
    pub rx_time_ns: u64,
}

impl FeedbackEntry {
    pub const LEN: usize = 12;
}

/// Checked view of a feedback frame's entries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FeedbackView<'a> {
    /// The path the reported packets arrived on.
    pub path: PathId,
    entries: &'a [u8],
}

impl<'a> FeedbackView<'a> {
    pub fn len(&self) -> usize {
        todo!()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn entries(&self) -> impl Iterator<Item = FeedbackEntry> + 'a {
        let _ = self.entries;
        std::iter::empty()
    }
}

/// Writes a feedback frame (at most [`MAX_FEEDBACK_ENTRIES`] entries) into
/// `buf`, returning the number of bytes written.
pub fn emit_feedback(path: PathId, entries: &[FeedbackEntry], buf: &mut [u8]) -> Result<usize, WireError> {
    let _ = (path, entries, buf);
    todo!()
}

/// Bytes a feedback frame with `n` entries takes.
pub const fn feedback_len(n: usize) -> usize {
    3 + n * FeedbackEntry::LEN
}

/// A keepalive or its echo.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Keepalive {
    pub path: PathId,
    pub id: u32,
    pub tx_time_ns: u64,
}

impl Keepalive {
    pub const LEN: usize = 14;
    /// Writes a keepalive (`ack` = false) or its echo into `buf[..LEN]`.
    pub fn emit(&self, ack: bool, buf: &mut [u8]) -> Result<(), WireError> {
        let _ = (ack, buf);
        todo!()
    }
}

/// A decoded frame borrowing from the input.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Data(DataHeader, &'a [u8]),
    Feedback(FeedbackView<'a>),
    Keepalive(Keepalive),
    KeepaliveAck(Keepalive),
}

/// Decodes one frame. Never panics, never allocates.
pub fn decode(buf: &[u8]) -> Result<Frame<'_>, WireError> {
    let _ = buf;
    todo!()
}
