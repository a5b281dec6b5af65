//! R-MTP frames: a data frame on one channel, and the selective
//! acknowledgement of one.
//!
//! The paper leaves the header format out "for space" (`SPECS.md` §4); this
//! is braid's, carrying exactly what its mechanisms read:
//!
//! ```text
//! DATA 0x31 | ver u8 | flags u8 | channel u8 | window_words u8 | len u16
//!           | chan_seq u32 | sent_us u32 | seq u64 | payload...        (24-byte header)
//! ACK  0x32 | ver u8 | flags u8 | channel u8 | words u8 | queue_free u16
//!           | chan_seq u32 | pair_us u32 | jitter_us i32 | seq u64 | cum u64
//!           | bitmap (words × u32)                                    (36 + 4·words bytes)
//! ```
//! All integers big-endian. `ver` is [`VERSION`]; a frame of another
//! version is refused, so a later layout cannot be misread. The type bytes
//! differ from MPLOT's (0x21, 0x22), so a receiver learns the mode from the
//! first frame it sees.
//!
//! DATA: `seq` numbers frames across all channels (the reliability window
//! and the resequencer read it); `chan_seq` numbers them on their channel
//! (pairs and lost frames are found by it); `sent_us` is the sender's
//! clock in whole microseconds when the frame left, modulo 2^32 (the
//! paper carries the channel's period instead; the send time gives the
//! actual send gap between any two frames of a channel, see `jitter`);
//! `window_words` is the sender's reliability window in 32-frame words,
//! the size of the bitmap it wants back. Flags: [`DataFlags`].
//!
//! ACK: answers one DATA frame (`channel`, `chan_seq`, `seq`: one RTT
//! sample), and says what the receiver holds: every frame below `cum` has
//! been taken into the receiver queue, and bit `i` of the bitmap (word
//! `i / 32`, most significant bit first) is frame `cum + i` held in the
//! reliability buffer. `queue_free` is the receiver queue's free slots
//! (§3.4), `jitter_us` the channel's long-run jitter (§3.2, saturated),
//! `pair_us` the latest packet-pair dispersion measured on the channel (0:
//! none yet). An ACK with [`AckFlags::UPDATE`] answers no frame: it only
//! reports free space after the receiver queue was full. An ACK with
//! [`AckFlags::CE`] echoes a Congestion Experienced mark (RFC 3168) on
//! the frame it answers, for the sender's rate rule (`rate`).
//!
//! Decoding is checked: lengths first, no panics, no allocation (the
//! bitmap is a fixed array of [`MAX_WORDS`]), undefined flags refused.

/// Frame type byte of a data frame.
pub const TYPE_DATA: u8 = 0x31;
/// Frame type byte of an acknowledgement.
pub const TYPE_ACK: u8 = 0x32;
/// The layout version these functions read and write.
pub const VERSION: u8 = 1;
/// Bytes of a DATA header before the payload.
pub const DATA_HEADER_LEN: usize = 24;
/// Bytes of an ACK before its bitmap.
pub const ACK_FIXED_LEN: usize = 36;
/// Most bitmap words: a reliability window of at most 2048 frames.
pub const MAX_WORDS: usize = 64;
/// Most channels a session has.
pub const MAX_CHANNELS: usize = 16;

/// Why an R-MTP frame could not be decoded or written.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("truncated R-MTP frame: need {need} bytes, got {got}")]
    Truncated { need: usize, got: usize },
    #[error("not an R-MTP frame: type {0:#04x}")]
    UnknownType(u8),
    #[error("R-MTP frame version {0}, this build speaks version {VERSION}; upgrade the older end")]
    Version(u8),
    #[error("undefined flag bits {0:#04x}")]
    BadFlags(u8),
    #[error("channel {0} out of range (at most {MAX_CHANNELS} channels)")]
    BadChannel(u8),
    #[error("bitmap of {0} words, at most {MAX_WORDS} allowed (and at least 1)")]
    BadWords(u8),
    #[error("payload is {got} bytes, header says {want}")]
    PayloadLength { want: usize, got: usize },
    #[error("{0} trailing bytes after an ACK")]
    TrailingBytes(usize),
    #[error("output buffer too small: need {need} bytes")]
    BufferTooSmall { need: usize },
}

/// Flags of a DATA frame.
pub struct DataFlags;
impl DataFlags {
    /// The last frame of the stream.
    pub const FIN: u8 = 0x01;
    /// No payload bytes follow (simulation): only `len` counts.
    pub const VIRTUAL: u8 = 0x02;
    /// First frame of a packet pair (sent back to back with the next).
    pub const PAIR1: u8 = 0x04;
    /// Second frame of a packet pair.
    pub const PAIR2: u8 = 0x08;
    /// A resend of a frame sent before.
    pub const RETX: u8 = 0x10;
    const ALL: u8 = Self::FIN | Self::VIRTUAL | Self::PAIR1 | Self::PAIR2 | Self::RETX;
}

/// Flags of an ACK frame.
pub struct AckFlags;
impl AckFlags {
    /// Answers no data frame: a receiver-queue space report.
    pub const UPDATE: u8 = 0x01;
    /// Every frame of the stream, FIN included, has been received.
    pub const DONE: u8 = 0x02;
    /// The acknowledged frame arrived with ECN's Congestion Experienced
    /// mark.
    pub const CE: u8 = 0x04;
    const ALL: u8 = Self::UPDATE | Self::DONE | Self::CE;
}

/// The header of a DATA frame.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DataHeader {
    pub fin: bool,
    pub virtual_payload: bool,
    pub pair1: bool,
    pub pair2: bool,
    pub retx: bool,
    pub channel: u8,
    /// The sender's reliability window, in words of 32 frames.
    pub window_words: u8,
    /// Payload bytes.
    pub len: u16,
    pub chan_seq: u32,
    /// The sender's clock when the frame left, µs, modulo 2^32.
    pub sent_us: u32,
    pub seq: u64,
}

/// A decoded DATA frame, borrowing its payload.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DataView<'a> {
    pub header: DataHeader,
    pub payload: &'a [u8],
}

/// A selective acknowledgement.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ack {
    pub update: bool,
    pub done: bool,
    /// The acknowledged frame was CE-marked.
    pub ce: bool,
    /// Channel of the acknowledged frame.
    pub channel: u8,
    /// Bitmap words that are meaningful (1..=[`MAX_WORDS`]).
    pub words: u8,
    /// Free slots of the receiver queue (saturated).
    pub queue_free: u16,
    pub chan_seq: u32,
    /// Latest packet-pair dispersion on the channel, µs (0: none).
    pub pair_us: u32,
    /// The channel's long-run jitter, µs (saturated).
    pub jitter_us: i32,
    /// The acknowledged frame.
    pub seq: u64,
    /// Every frame below this one is in the receiver queue or read.
    pub cum: u64,
    pub bitmap: [u32; MAX_WORDS],
}

impl Ack {
    /// Whether frame `seq` is held, by `cum` or by the bitmap.
    pub fn has(&self, seq: u64) -> bool {
        if seq < self.cum {
            return true;
        }
        let i = seq - self.cum;
        if i >= u64::from(self.words) * 32 {
            return false;
        }
        let (w, b) = ((i / 32) as usize, (i % 32) as u32);
        self.bitmap[w] & (1u32 << (31 - b)) != 0
    }

    /// Bytes of this ACK on the wire.
    pub fn wire_len(&self) -> usize {
        ACK_FIXED_LEN + 4 * usize::from(self.words)
    }
}

/// A decoded frame. The ACK's bitmap is a fixed array so that decoding
/// never allocates (the fuzz targets and the receiver loop rely on it);
/// the size difference between the variants is the price.
#[allow(clippy::large_enum_variant)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Data(DataView<'a>),
    Ack(Ack),
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// Whether `buf` starts like an R-MTP frame (either type byte), so a
/// receiver can pick the transport mode from the first frame.
pub fn is_rmtp(buf: &[u8]) -> bool {
    matches!(buf.first(), Some(&TYPE_DATA) | Some(&TYPE_ACK))
}

/// Decodes one frame.
pub fn decode(buf: &[u8]) -> Result<Frame<'_>, FrameError> {
    if buf.len() < 2 {
        return Err(FrameError::Truncated {
            need: 2,
            got: buf.len(),
        });
    }
    let ty = buf[0];
    if ty != TYPE_DATA && ty != TYPE_ACK {
        return Err(FrameError::UnknownType(ty));
    }
    if buf[1] != VERSION {
        return Err(FrameError::Version(buf[1]));
    }
    if ty == TYPE_DATA {
        decode_data(buf).map(Frame::Data)
    } else {
        decode_ack(buf).map(Frame::Ack)
    }
}

fn check_words(w: u8) -> Result<(), FrameError> {
    if w == 0 || usize::from(w) > MAX_WORDS {
        return Err(FrameError::BadWords(w));
    }
    Ok(())
}

fn decode_data(buf: &[u8]) -> Result<DataView<'_>, FrameError> {
    if buf.len() < DATA_HEADER_LEN {
        return Err(FrameError::Truncated {
            need: DATA_HEADER_LEN,
            got: buf.len(),
        });
    }
    let flags = buf[2];
    if flags & !DataFlags::ALL != 0
        || (flags & DataFlags::PAIR1 != 0 && flags & DataFlags::PAIR2 != 0)
    {
        return Err(FrameError::BadFlags(flags));
    }
    let channel = buf[3];
    if usize::from(channel) >= MAX_CHANNELS {
        return Err(FrameError::BadChannel(channel));
    }
    check_words(buf[4])?;
    let header = DataHeader {
        fin: flags & DataFlags::FIN != 0,
        virtual_payload: flags & DataFlags::VIRTUAL != 0,
        pair1: flags & DataFlags::PAIR1 != 0,
        pair2: flags & DataFlags::PAIR2 != 0,
        retx: flags & DataFlags::RETX != 0,
        channel,
        window_words: buf[4],
        len: be16(buf, 5),
        chan_seq: be32(buf, 7),
        sent_us: be32(buf, 11),
        seq: be64(buf, 15),
    };
    if buf[23] != 0 {
        return Err(FrameError::BadFlags(buf[23]));
    }
    let payload = &buf[DATA_HEADER_LEN..];
    let want = if header.virtual_payload {
        0
    } else {
        usize::from(header.len)
    };
    if payload.len() != want {
        return Err(FrameError::PayloadLength {
            want,
            got: payload.len(),
        });
    }
    Ok(DataView { header, payload })
}

fn decode_ack(buf: &[u8]) -> Result<Ack, FrameError> {
    if buf.len() < ACK_FIXED_LEN {
        return Err(FrameError::Truncated {
            need: ACK_FIXED_LEN,
            got: buf.len(),
        });
    }
    let flags = buf[2];
    if flags & !AckFlags::ALL != 0 {
        return Err(FrameError::BadFlags(flags));
    }
    let channel = buf[3];
    if usize::from(channel) >= MAX_CHANNELS {
        return Err(FrameError::BadChannel(channel));
    }
    let words = buf[4];
    check_words(words)?;
    let len = ACK_FIXED_LEN + 4 * usize::from(words);
    if buf.len() < len {
        return Err(FrameError::Truncated {
            need: len,
            got: buf.len(),
        });
    }
    if buf.len() > len {
        return Err(FrameError::TrailingBytes(buf.len() - len));
    }
    let mut bitmap = [0u32; MAX_WORDS];
    for (i, w) in bitmap.iter_mut().take(usize::from(words)).enumerate() {
        *w = be32(buf, ACK_FIXED_LEN + 4 * i);
    }
    Ok(Ack {
        update: flags & AckFlags::UPDATE != 0,
        done: flags & AckFlags::DONE != 0,
        ce: flags & AckFlags::CE != 0,
        channel,
        words,
        queue_free: be16(buf, 5),
        chan_seq: be32(buf, 7),
        pair_us: be32(buf, 11),
        jitter_us: be32(buf, 15) as i32,
        seq: be64(buf, 19),
        cum: be64(buf, 27),
        bitmap,
    })
    .and_then(|a| {
        if buf[35] != 0 {
            Err(FrameError::BadFlags(buf[35]))
        } else {
            Ok(a)
        }
    })
}

/// Writes a DATA frame into `out` and returns its length. `payload` must
/// be `len` bytes, or empty for a virtual frame.
pub fn emit_data(h: &DataHeader, payload: &[u8], out: &mut [u8]) -> Result<usize, FrameError> {
    if usize::from(h.channel) >= MAX_CHANNELS {
        return Err(FrameError::BadChannel(h.channel));
    }
    check_words(h.window_words)?;
    let want = if h.virtual_payload {
        0
    } else {
        usize::from(h.len)
    };
    if payload.len() != want {
        return Err(FrameError::PayloadLength {
            want,
            got: payload.len(),
        });
    }
    let mut flags = 0;
    for (on, bit) in [
        (h.fin, DataFlags::FIN),
        (h.virtual_payload, DataFlags::VIRTUAL),
        (h.pair1, DataFlags::PAIR1),
        (h.pair2, DataFlags::PAIR2),
        (h.retx, DataFlags::RETX),
    ] {
        if on {
            flags |= bit;
        }
    }
    if h.pair1 && h.pair2 {
        return Err(FrameError::BadFlags(flags));
    }
    let len = DATA_HEADER_LEN + want;
    if out.len() < len {
        return Err(FrameError::BufferTooSmall { need: len });
    }
    out[0] = TYPE_DATA;
    out[1] = VERSION;
    out[2] = flags;
    out[3] = h.channel;
    out[4] = h.window_words;
    out[5..7].copy_from_slice(&h.len.to_be_bytes());
    out[7..11].copy_from_slice(&h.chan_seq.to_be_bytes());
    out[11..15].copy_from_slice(&h.sent_us.to_be_bytes());
    out[15..23].copy_from_slice(&h.seq.to_be_bytes());
    out[23] = 0;
    out[DATA_HEADER_LEN..len].copy_from_slice(payload);
    Ok(len)
}

/// Writes an ACK into `out` and returns its length.
pub fn emit_ack(a: &Ack, out: &mut [u8]) -> Result<usize, FrameError> {
    if usize::from(a.channel) >= MAX_CHANNELS {
        return Err(FrameError::BadChannel(a.channel));
    }
    check_words(a.words)?;
    let len = a.wire_len();
    if out.len() < len {
        return Err(FrameError::BufferTooSmall { need: len });
    }
    let mut flags = 0;
    if a.update {
        flags |= AckFlags::UPDATE;
    }
    if a.done {
        flags |= AckFlags::DONE;
    }
    if a.ce {
        flags |= AckFlags::CE;
    }
    out[0] = TYPE_ACK;
    out[1] = VERSION;
    out[2] = flags;
    out[3] = a.channel;
    out[4] = a.words;
    out[5..7].copy_from_slice(&a.queue_free.to_be_bytes());
    out[7..11].copy_from_slice(&a.chan_seq.to_be_bytes());
    out[11..15].copy_from_slice(&a.pair_us.to_be_bytes());
    out[15..19].copy_from_slice(&a.jitter_us.to_be_bytes());
    out[19..27].copy_from_slice(&a.seq.to_be_bytes());
    out[27..35].copy_from_slice(&a.cum.to_be_bytes());
    out[35] = 0;
    for i in 0..usize::from(a.words) {
        let at = ACK_FIXED_LEN + 4 * i;
        out[at..at + 4].copy_from_slice(&a.bitmap[i].to_be_bytes());
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack() -> Ack {
        let mut bitmap = [0u32; MAX_WORDS];
        bitmap[0] = 0xA000_0001;
        bitmap[1] = 0x8000_0000;
        Ack {
            update: false,
            done: true,
            ce: true,
            channel: 3,
            words: 2,
            queue_free: 17,
            chan_seq: 9,
            pair_us: 12_000,
            jitter_us: -250,
            seq: 41,
            cum: 40,
            bitmap,
        }
    }

    #[test]
    fn ack_round_trips_and_reads_its_bitmap() {
        let a = ack();
        let mut buf = [0u8; 64];
        let n = emit_ack(&a, &mut buf).unwrap();
        assert_eq!(n, ACK_FIXED_LEN + 8);
        let Frame::Ack(b) = decode(&buf[..n]).unwrap() else {
            panic!("not an ack")
        };
        assert_eq!(a, b);
        assert!(b.has(39), "below cum");
        assert!(b.has(40) && !b.has(41) && b.has(42));
        assert!(b.has(40 + 31) && b.has(40 + 32) && !b.has(40 + 33));
        assert!(!b.has(40 + 64), "past the bitmap");
    }

    #[test]
    fn data_round_trips() {
        let h = DataHeader {
            pair2: true,
            channel: 2,
            window_words: 3,
            len: 5,
            chan_seq: 7,
            sent_us: 1234,
            seq: 99,
            ..DataHeader::default()
        };
        let mut buf = [0u8; 64];
        let n = emit_data(&h, b"hello", &mut buf).unwrap();
        let Frame::Data(v) = decode(&buf[..n]).unwrap() else {
            panic!("not data")
        };
        assert_eq!(v.header, h);
        assert_eq!(v.payload, b"hello");
    }

    #[test]
    fn bad_frames_are_refused_with_their_reason() {
        let mut buf = [0u8; 64];
        let n = emit_ack(&ack(), &mut buf).unwrap();
        assert_eq!(
            decode(&buf[..n - 1]),
            Err(FrameError::Truncated {
                need: n,
                got: n - 1
            })
        );
        let mut v = buf;
        v[1] = 2;
        assert_eq!(decode(&v[..n]), Err(FrameError::Version(2)));
        let mut v = buf;
        v[4] = 0;
        assert_eq!(decode(&v[..n]), Err(FrameError::BadWords(0)));
        let mut v = buf;
        v[4] = 65;
        assert_eq!(decode(&v[..n]), Err(FrameError::BadWords(65)));
        let mut v = buf;
        v[3] = 16;
        assert_eq!(decode(&v[..n]), Err(FrameError::BadChannel(16)));
        let mut v = buf;
        v[2] = 0x80;
        assert_eq!(decode(&v[..n]), Err(FrameError::BadFlags(0x80)));
        let h = DataHeader {
            pair1: true,
            window_words: 1,
            len: 4,
            ..DataHeader::default()
        };
        let n = emit_data(&h, b"abcd", &mut buf).unwrap();
        assert_eq!(
            decode(&buf[..n - 1]),
            Err(FrameError::PayloadLength { want: 4, got: 3 })
        );
        let mut v = buf;
        v[2] |= DataFlags::PAIR2;
        assert!(matches!(decode(&v[..n]), Err(FrameError::BadFlags(_))));
        assert_eq!(decode(&[0x21, 1]), Err(FrameError::UnknownType(0x21)));
        assert_eq!(decode(&[]), Err(FrameError::Truncated { need: 2, got: 0 }));
    }
}
