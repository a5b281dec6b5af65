//! The TCP model's packets as real IPv4/TCP packets, so that the shipped
//! tunnel carries what a TUN device would hand it: the server checks the
//! inner source address and routes by the destination, and the sender's
//! retransmission detector (`braid_core::flow`) reads TCP sequence numbers.
//!
//! Layout as Linux sends with timestamps: IPv4 (20) + TCP (20) + options
//! (NOP, NOP, timestamps: 12), so a full segment is `mss + 52` bytes; ACKs
//! add a SACK option (NOP, NOP, kind 5, 2 + 8 n) for `n` blocks. Sequence
//! numbers are bytes, `packet number × mss` modulo 2^32, unwrapped on
//! decoding against the receiver's or sender's position. The IPv4 header
//! checksum is computed, as a host's is, since the tunnel compresses only
//! headers that it can rebuild byte for byte (`braid_core::compress`); the
//! TCP checksum is left zero: nothing on the simulated path checks it, and
//! the tunnel carries it as it is.
//!
//! Every packet carries a 48-bit tag, unique per packet handed to the
//! tunnel, in the IPv4 identification (low 16 bits) and the timestamp
//! value (high 32 bits), so that a check can tell a tunnel duplicate from
//! a TCP retransmission. The model's timestamps ride in the echo slot: a
//! segment's TSval, an ACK's TSecr.

use std::net::Ipv4Addr;

use crate::tcp::{Ack, Segment};

/// IPv4 + TCP + timestamp option.
pub const HEADER_BYTES: u32 = 52;
const TCP_PORT: u16 = 5201;

fn ip_header(buf: &mut [u8], total: usize, src: Ipv4Addr, dst: Ipv4Addr, tag: u64) {
    buf[0] = 0x45;
    buf[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    buf[4..6].copy_from_slice(&(tag as u16).to_be_bytes());
    // TSval of the timestamp option.
    buf[44..48].copy_from_slice(&((tag >> 16) as u32).to_be_bytes());
    buf[6] = 0x40; // DF
    buf[8] = 64;
    buf[9] = 6;
    buf[12..16].copy_from_slice(&src.octets());
    buf[16..20].copy_from_slice(&dst.octets());
}

/// Writes the IPv4 header checksum (RFC 791) of `buf`'s first 20 bytes.
fn seal(buf: &mut [u8]) {
    braid_core::compress::header::write_ipv4_checksum(buf);
}

fn tcp_header(buf: &mut [u8], flow: u32, seq: u32, ack: u32, opt_len: usize, to_sender: bool) {
    let (sp, dp) = if to_sender {
        (TCP_PORT, 40_000 + flow as u16)
    } else {
        (40_000 + flow as u16, TCP_PORT)
    };
    buf[0..2].copy_from_slice(&sp.to_be_bytes());
    buf[2..4].copy_from_slice(&dp.to_be_bytes());
    buf[4..8].copy_from_slice(&seq.to_be_bytes());
    buf[8..12].copy_from_slice(&ack.to_be_bytes());
    buf[12] = (((20 + opt_len) / 4) as u8) << 4;
    buf[13] = 0x10; // ACK
    buf[14..16].copy_from_slice(&0xffffu16.to_be_bytes());
    // NOP NOP TIMESTAMP(8, 10)
    buf[20] = 1;
    buf[21] = 1;
    buf[22] = 8;
    buf[23] = 10;
}

/// Encodes a data segment; the payload repeats `pattern` from the
/// segment's byte offset (so a receiver can check content).
pub fn encode_segment(
    seg: &Segment,
    mss: u32,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    tag: u64,
    pattern: &[u8],
    out: &mut Vec<u8>,
) {
    let total = (HEADER_BYTES + seg.payload_bytes) as usize;
    out.clear();
    out.resize(total, 0);
    ip_header(out, total, src, dst, tag);
    let seq = (seg.seq.wrapping_mul(u64::from(mss))) as u32;
    tcp_header(&mut out[20..], seg.flow, seq, 0, 12, false);
    // ECN field of the IP header (RFC 3168 Section 5) and the CWR flag.
    out[1] = if seg.ce { 3 } else { 2 * u8::from(seg.ect) };
    if seg.cwr {
        out[33] |= 0x80;
    }
    // The TSval slot carries the tag; the model's TSval rides in the TSecr
    // slot, which a data segment of a one-way transfer does not need.
    out[48..52].copy_from_slice(&seg.tsval.to_be_bytes());
    fill_payload(
        &mut out[HEADER_BYTES as usize..],
        seg.seq * u64::from(mss),
        pattern,
    );
    seal(out);
}

/// Encodes the opening of the connection: the sender's SYN (`reply`
/// false) or the receiver's SYN-ACK (`reply` true). Header only, with the
/// timestamp option ([`HEADER_BYTES`]; Linux's also carry MSS,
/// SACK-permitted and window-scale options, which nothing on the
/// simulated path reads). Small and without data, as the tunnel's startup
/// hold expects of a connection's opening (`braid_core::conn` startup).
pub fn encode_opening(
    flow: u32,
    reply: bool,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    tag: u64,
    out: &mut Vec<u8>,
) {
    let total = HEADER_BYTES as usize;
    out.clear();
    out.resize(total, 0);
    ip_header(out, total, src, dst, tag);
    tcp_header(&mut out[20..], flow, 0, 0, 12, reply);
    out[33] = if reply { 0x12 } else { 0x02 };
    seal(out);
}

/// Whether `packet` opens a connection ([`encode_opening`]): `Some(false)`
/// for a SYN, `Some(true)` for a SYN-ACK, `None` for anything else.
pub fn opening_of(packet: &[u8]) -> Option<bool> {
    let t = tcp(packet)?;
    match t[13] & 0x12 {
        0x02 => Some(false),
        0x12 => Some(true),
        _ => None,
    }
}

/// Writes the content of the stream from byte `offset` into `dst`.
pub fn fill_payload(dst: &mut [u8], offset: u64, pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    let mut at = (offset % pattern.len() as u64) as usize;
    let mut i = 0;
    while i < dst.len() {
        let n = (pattern.len() - at).min(dst.len() - i);
        dst[i..i + n].copy_from_slice(&pattern[at..at + n]);
        i += n;
        at = 0;
    }
}

/// Encodes an ACK (with its SACK blocks) from the receiver to the sender.
pub fn encode_ack(ack: &Ack, mss: u32, src: Ipv4Addr, dst: Ipv4Addr, tag: u64, out: &mut Vec<u8>) {
    let blocks = ack.sack_blocks();
    let sack_len = if blocks.is_empty() {
        0
    } else {
        4 + 8 * blocks.len()
    };
    let opt = 12 + sack_len;
    let total = 40 + opt;
    out.clear();
    out.resize(total, 0);
    ip_header(out, total, src, dst, tag);
    let a = (ack.ack.wrapping_mul(u64::from(mss))) as u32;
    tcp_header(&mut out[20..], ack.flow, 0, a, opt, true);
    if ack.ece {
        out[33] |= 0x40;
    }
    // TSecr; zero stands for none (a TSval of 0 ms is then not echoed).
    out[48..52].copy_from_slice(&ack.tsecr.unwrap_or(0).to_be_bytes());
    if !blocks.is_empty() {
        let o = &mut out[52..];
        o[0] = 1;
        o[1] = 1;
        o[2] = 5;
        o[3] = (2 + 8 * blocks.len()) as u8;
        for (k, &(l, r)) in blocks.iter().enumerate() {
            let at = 4 + 8 * k;
            o[at..at + 4].copy_from_slice(&((l.wrapping_mul(u64::from(mss))) as u32).to_be_bytes());
            o[at + 4..at + 8]
                .copy_from_slice(&((r.wrapping_mul(u64::from(mss))) as u32).to_be_bytes());
        }
    }
    seal(out);
}

/// The packet number nearest to `reference` whose byte sequence number
/// is `seq32` modulo 2^32.
fn unwrap(seq32: u32, mss: u32, reference: u64) -> u64 {
    let ref_bytes = reference.wrapping_mul(u64::from(mss));
    let diff = seq32.wrapping_sub(ref_bytes as u32) as i32 as i64;
    let bytes = (ref_bytes as i64 + diff).max(0) as u64;
    bytes / u64::from(mss)
}

/// The tag [`encode_segment`] or [`encode_ack`] wrote.
pub fn tag_of(packet: &[u8]) -> Option<u64> {
    if packet.len() < 48 {
        return None;
    }
    let lo = u64::from(u16::from_be_bytes([packet[4], packet[5]]));
    let hi = u64::from(u32::from_be_bytes(packet[44..48].try_into().ok()?));
    Some(hi << 16 | lo)
}

fn tcp(packet: &[u8]) -> Option<&[u8]> {
    if packet.len() < 40 || packet[0] != 0x45 || packet[9] != 6 {
        return None;
    }
    let tcp = &packet[20..];
    let off = usize::from(tcp[12] >> 4) * 4;
    (off >= 20 && tcp.len() >= off).then_some(tcp)
}

/// Decodes a data segment; `reference` is the receiver's next expected
/// packet. Returns the segment and its payload.
pub fn decode_segment(packet: &[u8], mss: u32, reference: u64) -> Option<(Segment, &[u8])> {
    let t = tcp(packet)?;
    let flow = u32::from(u16::from_be_bytes([t[0], t[1]]).checked_sub(40_000)?);
    let seq32 = u32::from_be_bytes(t[4..8].try_into().ok()?);
    let off = usize::from(t[12] >> 4) * 4;
    let payload = &t[off..];
    Some((
        Segment {
            flow,
            seq: unwrap(seq32, mss, reference),
            payload_bytes: payload.len() as u32,
            wire_bytes: packet.len() as u32,
            retransmit: false,
            ect: packet[1] & 3 != 0,
            ce: packet[1] & 3 == 3,
            cwr: t[13] & 0x80 != 0,
            tsval: u32::from_be_bytes(t[28..32].try_into().ok()?),
        },
        payload,
    ))
}

/// Decodes an ACK; `reference` is the sender's oldest unacknowledged
/// packet.
pub fn decode_ack(packet: &[u8], mss: u32, reference: u64) -> Option<Ack> {
    let t = tcp(packet)?;
    let flow = u32::from(u16::from_be_bytes([t[2], t[3]]).checked_sub(40_000)?);
    let a32 = u32::from_be_bytes(t[8..12].try_into().ok()?);
    let off = usize::from(t[12] >> 4) * 4;
    let mut ack = Ack::cumulative(flow, unwrap(a32, mss, reference), packet.len() as u32);
    ack.ece = t[13] & 0x40 != 0;
    ack.tsecr = Some(u32::from_be_bytes(t[28..32].try_into().ok()?)).filter(|&v| v != 0);
    let opts = &t[20..off];
    if opts.len() >= 16 && opts[14] == 5 {
        let n = (usize::from(opts[15]).saturating_sub(2) / 8).min(3);
        for k in 0..n {
            let at = 16 + 8 * k;
            if opts.len() < at + 8 {
                break;
            }
            let l = u32::from_be_bytes(opts[at..at + 4].try_into().ok()?);
            let r = u32::from_be_bytes(opts[at + 4..at + 8].try_into().ok()?);
            ack.sack[k] = (unwrap(l, mss, ack.ack), unwrap(r, mss, ack.ack));
            ack.n_sack += 1;
        }
    }
    Some(ack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_and_acks_round_trip_across_the_wrap() {
        let (a, b) = (Ipv4Addr::new(10, 77, 0, 2), Ipv4Addr::new(198, 51, 100, 7));
        let mss = 1386;
        let pattern: Vec<u8> = (0..=250u8).collect();
        let mut buf = Vec::new();
        // Packet 3_100_000 is past 2^32 bytes.
        for seq in [0u64, 5, 3_098_000, 3_100_000] {
            let s = Segment {
                flow: 1,
                seq,
                payload_bytes: mss,
                wire_bytes: mss + HEADER_BYTES,
                retransmit: false,
                ect: false,
                ce: false,
                cwr: false,
                tsval: 7_000 + seq as u32,
            };
            let tag = seq * 77_777 + 1;
            encode_segment(&s, mss, a, b, tag, &pattern, &mut buf);
            assert_eq!(buf.len(), (mss + HEADER_BYTES) as usize);
            assert_eq!(tag_of(&buf), Some(tag));
            let (d, payload) = decode_segment(&buf, mss, seq.saturating_sub(100)).unwrap();
            assert_eq!((d.flow, d.seq, d.payload_bytes), (1, seq, mss));
            assert_eq!(d.tsval, s.tsval);
            let mut want = vec![0u8; mss as usize];
            fill_payload(&mut want, seq * mss as u64, &pattern);
            assert_eq!(payload, &want[..]);
            let mut ack = Ack::cumulative(1, seq, 0);
            ack.sack[0] = (seq + 2, seq + 5);
            ack.sack[1] = (seq + 7, seq + 9);
            ack.n_sack = 2;
            ack.tsecr = Some(s.tsval);
            encode_ack(&ack, mss, b, a, tag + 1, &mut buf);
            assert_eq!(buf.len(), 52 + 4 + 16);
            assert_eq!(tag_of(&buf), Some(tag + 1));
            let d = decode_ack(&buf, mss, seq.saturating_sub(50)).unwrap();
            assert_eq!(d.ack, seq);
            assert_eq!(d.tsecr, Some(s.tsval));
            assert_eq!(d.sack_blocks(), &[(seq + 2, seq + 5), (seq + 7, seq + 9)]);
        }
        assert!(decode_ack(&[0u8; 30], mss, 0).is_none());
    }

    /// A SYN and a SYN-ACK are told apart from each other and from data
    /// and ACKs, and carry the flow's ports each way.
    #[test]
    fn openings_are_recognised() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut buf = Vec::new();
        encode_opening(3, false, a, b, 9, &mut buf);
        assert_eq!(buf.len(), HEADER_BYTES as usize);
        assert_eq!(opening_of(&buf), Some(false));
        assert_eq!(tag_of(&buf), Some(9));
        assert_eq!(u16::from_be_bytes([buf[20], buf[21]]), 40_003);
        encode_opening(3, true, b, a, 10, &mut buf);
        assert_eq!(opening_of(&buf), Some(true));
        assert_eq!(u16::from_be_bytes([buf[22], buf[23]]), 40_003);
        let seg = Segment {
            flow: 3,
            seq: 1,
            payload_bytes: 100,
            wire_bytes: 152,
            retransmit: false,
            ect: false,
            ce: false,
            cwr: false,
            tsval: 0,
        };
        encode_segment(&seg, 100, a, b, 11, &[1, 2, 3], &mut buf);
        assert_eq!(opening_of(&buf), None);
        encode_ack(&Ack::cumulative(3, 1, 0), 100, b, a, 12, &mut buf);
        assert_eq!(opening_of(&buf), None);
        assert_eq!(opening_of(&[0u8; 10]), None);
    }
}
