//! The compressed form of an inner IPv4/TCP header, as a checked codec.
//!
//! Of the 52 bytes of header a Linux TCP segment with timestamps carries
//! (IPv4 20, TCP 20, NOP NOP TIMESTAMP 12), the addresses, ports and TTL
//! are the same for every packet of a connection in one direction (the
//! [`FlowKey`], held by both ends as a context), the IPv4 total length
//! follows from the frame's length, and the IPv4 header checksum from the
//! other fields. What is left, the fields that change from packet to
//! packet ([`Varying`]), takes 26 bytes, or 18 without timestamps:
//!
//! ```text
//! cid u8 | ctl u8 | tos u8 | ip_id u16 | seq u32 | ack u32 | tcp_flags u8
//!        | window u16 | tcp_checksum u16 | [tsval u32 | tsecr u32]   then the TCP payload
//! ctl: 0x01 timestamps present (TCP data offset 8, options NOP NOP TS)
//!      0x02 IPv4 "don't fragment"
//! ```
//!
//! The same scheme as RFC 6846's (ROHC-TCP) static and dynamic chains,
//! without its delta encodings: every varying field is sent whole, so a
//! packet decompresses on its own, in any order and after any loss, which
//! a tunnel that stripes a connection over paths of different delays
//! needs. The TCP checksum is carried as it was: it covers the payload and
//! the rebuilt header, so the end host still checks the whole packet.
//!
//! Only packets that rebuild byte for byte are compressed ([`split`]
//! refuses the rest): IPv4 without options or fragmentation, a correct
//! header checksum, TCP with no options or exactly the timestamp option,
//! no urgent data, no reserved or AE bits. Anything else (SYNs with their
//! options, ACKs with SACK blocks, UDP) goes uncompressed.

/// Bytes of an IPv4 header without options.
pub const IPV4_LEN: usize = 20;
/// Bytes of a TCP header without options.
pub const TCP_LEN: usize = 20;
/// The timestamp option as Linux lays it out: NOP, NOP, kind 8, length 10.
const TS_OPTION: [u8; 4] = [1, 1, 8, 10];
/// Bytes of the timestamp option with its two NOPs.
const TS_LEN: usize = 12;
/// Most bytes a rebuilt packet is longer than its compressed form.
pub const MAX_GAIN: usize = IPV4_LEN + TCP_LEN + TS_LEN - field::TS_LEN;
/// TCP's URG flag: urgent data is never compressed.
const TCP_URG: u8 = 0x20;
/// IPv4 flags and fragment offset of an unfragmented packet with DF set.
const IP_DF: u16 = 0x4000;
/// IPv4 protocol number of TCP.
const PROTO_TCP: u8 = 6;

/// Byte ranges of the compressed header, smoltcp style.
mod field {
    use core::ops::Range;
    pub const CID: usize = 0;
    pub const CTL: usize = 1;
    pub const TOS: usize = 2;
    pub const IP_ID: Range<usize> = 3..5;
    pub const SEQ: Range<usize> = 5..9;
    pub const ACK: Range<usize> = 9..13;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    /// Without timestamps the payload starts here.
    pub const BASE_LEN: usize = 18;
    pub const TSVAL: Range<usize> = 18..22;
    pub const TSECR: Range<usize> = 22..26;
    /// With timestamps the payload starts here.
    pub const TS_LEN: usize = 26;
}

/// Bits of the compressed header's control byte.
pub struct Ctl;

impl Ctl {
    /// The TCP header carries the timestamp option (and only it).
    pub const TIMESTAMPS: u8 = 0x01;
    /// The IPv4 header has "don't fragment" set.
    pub const DF: u8 = 0x02;
    /// All defined bits.
    pub const ALL: u8 = 0x03;
}

/// Why a compressed header could not be read or rebuilt. Small and `Copy`
/// so that counting drops costs nothing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompressError {
    /// The frame ended before the header did.
    #[error("truncated compressed header: need {need} bytes, got {got}")]
    Truncated { need: usize, got: usize },
    /// Control bits this version does not define are set.
    #[error("undefined control bits {0:#04x} in a compressed header")]
    BadControl(u8),
    /// The packet would be longer than an IPv4 total length can say.
    #[error("rebuilt packet too long: {0} bytes")]
    TooLong(usize),
    /// No context of this id is installed (its install never arrived, or
    /// the peer's state was reset).
    #[error("no header context {0}")]
    UnknownContext(u8),
}

/// What one direction of a TCP connection keeps the same in every packet:
/// the context both ends hold under a context id.
///
/// An install sends it ahead of the compressed header:
/// `src [4] | dst [4] | src_port u16 | dst_port u16 | ttl u8` (13 bytes),
/// so that even an install (39 bytes of header with timestamps) is
/// shorter than the headers it stands for, and fits wherever the packet
/// did.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub src_port: u16,
    pub dst_port: u16,
    pub ttl: u8,
}

impl FlowKey {
    /// Bytes of a context on the wire.
    pub const LEN: usize = 13;

    /// Appends the context's 13 bytes to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.src);
        out.extend_from_slice(&self.dst);
        out.extend_from_slice(&self.src_port.to_be_bytes());
        out.extend_from_slice(&self.dst_port.to_be_bytes());
        out.push(self.ttl);
    }

    /// A context read from the front of `buf`, and what follows it.
    ///
    /// Errors: [`CompressError::Truncated`] if `buf` is shorter than
    /// [`FlowKey::LEN`].
    pub fn parse(buf: &[u8]) -> Result<(FlowKey, &[u8]), CompressError> {
        if buf.len() < Self::LEN {
            return Err(CompressError::Truncated {
                need: Self::LEN,
                got: buf.len(),
            });
        }
        let key = FlowKey {
            src: [buf[0], buf[1], buf[2], buf[3]],
            dst: [buf[4], buf[5], buf[6], buf[7]],
            src_port: be16(buf, 8),
            dst_port: be16(buf, 10),
            ttl: buf[12],
        };
        Ok((key, &buf[Self::LEN..]))
    }
}

/// The fields that change from packet to packet, sent whole.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Varying {
    /// IPv4 type of service byte (DSCP and ECN).
    pub tos: u8,
    pub ip_id: u16,
    /// IPv4 "don't fragment".
    pub df: bool,
    pub seq: u32,
    pub ack: u32,
    /// TCP flags byte (CWR ECE URG ACK PSH RST SYN FIN; URG never set).
    pub flags: u8,
    pub window: u16,
    /// The TCP checksum, as the sending host computed it.
    pub checksum: u16,
    /// TSval and TSecr, when the segment carries the timestamp option.
    pub timestamps: Option<(u32, u32)>,
}

impl Varying {
    /// Bytes of the compressed header that carries these fields.
    pub fn compressed_len(&self) -> usize {
        if self.timestamps.is_some() {
            field::TS_LEN
        } else {
            field::BASE_LEN
        }
    }

    /// Bytes of the IPv4 and TCP headers these fields rebuild.
    pub fn full_len(&self) -> usize {
        IPV4_LEN + TCP_LEN + if self.timestamps.is_some() { TS_LEN } else { 0 }
    }
}

/// An inner packet that [`split`] found compressible.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Split<'a> {
    pub key: FlowKey,
    pub varying: Varying,
    /// The TCP payload.
    pub payload: &'a [u8],
}

/// A compressed header read by [`parse`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Compressed<'a> {
    /// The context id.
    pub cid: u8,
    pub varying: Varying,
    pub payload: &'a [u8],
}

/// The one's complement checksum of an IPv4 header (RFC 791), with its
/// checksum field taken as zero.
fn ipv4_checksum(h: &[u8]) -> u16 {
    use crate::checksum::{add, finish};
    finish(add(add(0, &h[..10]), &h[12..IPV4_LEN]))
}

/// Writes the IPv4 header checksum into `packet` (at least 20 bytes;
/// anything shorter is left as it is), as a host's IP layer does: for
/// tests and the simulator, whose packets the tunnel then compresses.
pub fn write_ipv4_checksum(packet: &mut [u8]) {
    if packet.len() >= IPV4_LEN {
        let sum = ipv4_checksum(packet);
        packet[10..12].copy_from_slice(&sum.to_be_bytes());
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// `packet` split into its context and varying fields, if it rebuilds
/// byte for byte from them (see the module doc); `None` otherwise.
pub fn split(packet: &[u8]) -> Option<Split<'_>> {
    if packet.len() < IPV4_LEN + TCP_LEN || packet[0] != 0x45 || packet[9] != PROTO_TCP {
        return None;
    }
    if usize::from(be16(packet, 2)) != packet.len() {
        return None;
    }
    let frag = be16(packet, 6);
    if frag != 0 && frag != IP_DF {
        return None;
    }
    if be16(packet, 10) != ipv4_checksum(packet) {
        return None;
    }
    let tcp = &packet[IPV4_LEN..];
    if tcp[12] & 0x0f != 0 || tcp[13] & TCP_URG != 0 || be16(tcp, 18) != 0 {
        return None;
    }
    let timestamps = match tcp[12] >> 4 {
        5 => None,
        8 if tcp.len() >= TCP_LEN + TS_LEN && tcp[20..24] == TS_OPTION => {
            Some((be32(tcp, 24), be32(tcp, 28)))
        }
        _ => return None,
    };
    let varying = Varying {
        tos: packet[1],
        ip_id: be16(packet, 4),
        df: frag == IP_DF,
        seq: be32(tcp, 4),
        ack: be32(tcp, 8),
        flags: tcp[13],
        window: be16(tcp, 14),
        checksum: be16(tcp, 16),
        timestamps,
    };
    let key = FlowKey {
        src: [packet[12], packet[13], packet[14], packet[15]],
        dst: [packet[16], packet[17], packet[18], packet[19]],
        src_port: be16(tcp, 0),
        dst_port: be16(tcp, 2),
        ttl: packet[8],
    };
    Some(Split {
        key,
        payload: &packet[varying.full_len()..],
        varying,
    })
}

/// Appends the compressed header of context `cid` and then `payload` to
/// `out`.
pub fn emit(cid: u8, v: &Varying, payload: &[u8], out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + v.compressed_len(), 0);
    let h = &mut out[at..];
    h[field::CID] = cid;
    h[field::CTL] = if v.timestamps.is_some() {
        Ctl::TIMESTAMPS
    } else {
        0
    } | if v.df { Ctl::DF } else { 0 };
    h[field::TOS] = v.tos;
    h[field::IP_ID].copy_from_slice(&v.ip_id.to_be_bytes());
    h[field::SEQ].copy_from_slice(&v.seq.to_be_bytes());
    h[field::ACK].copy_from_slice(&v.ack.to_be_bytes());
    h[field::FLAGS] = v.flags;
    h[field::WINDOW].copy_from_slice(&v.window.to_be_bytes());
    h[field::CHECKSUM].copy_from_slice(&v.checksum.to_be_bytes());
    if let Some((val, ecr)) = v.timestamps {
        h[field::TSVAL].copy_from_slice(&val.to_be_bytes());
        h[field::TSECR].copy_from_slice(&ecr.to_be_bytes());
    }
    out.extend_from_slice(payload);
}

/// Reads a compressed header and the payload after it.
///
/// Errors: [`CompressError::Truncated`] when `buf` is shorter than the
/// header its control byte announces; [`CompressError::BadControl`] for
/// undefined control bits; a set URG flag is refused the same way, since
/// [`split`] never compresses one.
pub fn parse(buf: &[u8]) -> Result<Compressed<'_>, CompressError> {
    let truncated = |need| CompressError::Truncated {
        need,
        got: buf.len(),
    };
    let ctl = *buf.get(field::CTL).ok_or(truncated(field::BASE_LEN))?;
    if ctl & !Ctl::ALL != 0 {
        return Err(CompressError::BadControl(ctl & !Ctl::ALL));
    }
    let ts = ctl & Ctl::TIMESTAMPS != 0;
    let need = if ts { field::TS_LEN } else { field::BASE_LEN };
    if buf.len() < need {
        return Err(truncated(need));
    }
    if buf[field::FLAGS] & TCP_URG != 0 {
        return Err(CompressError::BadControl(TCP_URG));
    }
    let varying = Varying {
        tos: buf[field::TOS],
        ip_id: be16(buf, field::IP_ID.start),
        df: ctl & Ctl::DF != 0,
        seq: be32(buf, field::SEQ.start),
        ack: be32(buf, field::ACK.start),
        flags: buf[field::FLAGS],
        window: be16(buf, field::WINDOW.start),
        checksum: be16(buf, field::CHECKSUM.start),
        timestamps: ts.then(|| (be32(buf, field::TSVAL.start), be32(buf, field::TSECR.start))),
    };
    Ok(Compressed {
        cid: buf[field::CID],
        varying,
        payload: &buf[need..],
    })
}

/// Appends to `out` the packet that `key`, `v` and `payload` came from:
/// the inverse of [`split`].
///
/// Errors: [`CompressError::TooLong`] when the packet would exceed the
/// 65535 bytes an IPv4 total length can hold; nothing is appended then.
pub fn rebuild(
    key: &FlowKey,
    v: &Varying,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), CompressError> {
    let total = v.full_len() + payload.len();
    let total16 = u16::try_from(total).map_err(|_| CompressError::TooLong(total))?;
    let at = out.len();
    out.resize(at + v.full_len(), 0);
    let p = &mut out[at..];
    p[0] = 0x45;
    p[1] = v.tos;
    p[2..4].copy_from_slice(&total16.to_be_bytes());
    p[4..6].copy_from_slice(&v.ip_id.to_be_bytes());
    let frag = if v.df { IP_DF } else { 0 };
    p[6..8].copy_from_slice(&frag.to_be_bytes());
    p[8] = key.ttl;
    p[9] = PROTO_TCP;
    p[12..16].copy_from_slice(&key.src);
    p[16..20].copy_from_slice(&key.dst);
    let sum = ipv4_checksum(p);
    p[10..12].copy_from_slice(&sum.to_be_bytes());
    let t = &mut p[IPV4_LEN..];
    t[0..2].copy_from_slice(&key.src_port.to_be_bytes());
    t[2..4].copy_from_slice(&key.dst_port.to_be_bytes());
    t[4..8].copy_from_slice(&v.seq.to_be_bytes());
    t[8..12].copy_from_slice(&v.ack.to_be_bytes());
    t[13] = v.flags;
    t[14..16].copy_from_slice(&v.window.to_be_bytes());
    t[16..18].copy_from_slice(&v.checksum.to_be_bytes());
    match v.timestamps {
        None => t[12] = 5 << 4,
        Some((val, ecr)) => {
            t[12] = 8 << 4;
            t[20..24].copy_from_slice(&TS_OPTION);
            t[24..28].copy_from_slice(&val.to_be_bytes());
            t[28..32].copy_from_slice(&ecr.to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    Ok(())
}
