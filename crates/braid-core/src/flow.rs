//! Retransmission detection from the inner packets, so that PET can keep
//! retransmissions out of packet pairs (PET/BMP Section V-A) without any
//! help from the endpoints: a TCP segment whose data ends at or before the
//! highest sequence number already seen for its connection repeats data.
//!
//! State is a fixed-size table indexed by a hash of the connection, so
//! memory is bounded whatever the traffic; a collision only makes one
//! decision wrong (a retransmission paired, or a pair broken).

/// Bounded per-connection memory of the highest TCP sequence number seen.
#[derive(Clone, Debug)]
pub struct RetransmitDetector {
    table: Vec<(u64, u32)>,
}

impl RetransmitDetector {
    /// `slots` is rounded up to a power of two.
    pub fn new(slots: usize) -> Self {
        RetransmitDetector {
            table: vec![(u64::MAX, 0); slots.next_power_of_two().max(1)],
        }
    }

    /// Records a segment of connection `key` carrying `len` bytes from
    /// `seq`; returns whether it is a retransmission. Segments without data
    /// (pure ACKs) are never retransmissions.
    pub fn observe(&mut self, key: u64, seq: u32, len: u32) -> bool {
        if len == 0 {
            return false;
        }
        let mask = self.table.len() - 1;
        let slot = &mut self.table[(mix(key) as usize) & mask];
        let end = seq.wrapping_add(len);
        if slot.0 != key {
            *slot = (key, end);
            return false;
        }
        // Serial-number comparison (RFC 1982): end <= highest means old data.
        if (end.wrapping_sub(slot.1) as i32) <= 0 {
            return true;
        }
        slot.1 = end;
        false
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x
}

/// The TCP header (with options) and the connection key's address bytes
/// of an IPv4 or IPv6 TCP packet, and its payload length, or `None` for
/// anything else (or anything malformed, or a fragment).
fn tcp_parts(packet: &[u8]) -> Option<(&[u8], &[u8], usize)> {
    let version = packet.first()? >> 4;
    let (proto, l4, payload_end, addr) = match version {
        4 => {
            let ihl = ((packet[0] & 0x0f) as usize) * 4;
            let total = u16::from_be_bytes([*packet.get(2)?, *packet.get(3)?]) as usize;
            if ihl < 20 || total < ihl || total > packet.len() {
                return None;
            }
            let frag = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
            if frag != 0 {
                return None;
            }
            (packet[9], ihl, total, &packet[12..20])
        }
        6 => {
            if packet.len() < 40 {
                return None;
            }
            let plen = u16::from_be_bytes([packet[4], packet[5]]) as usize;
            if 40 + plen > packet.len() {
                return None;
            }
            (packet[6], 40, 40 + plen, &packet[8..40])
        }
        _ => return None,
    };
    if proto != 6 {
        return None;
    }
    let tcp = packet.get(l4..payload_end)?;
    if tcp.len() < 20 {
        return None;
    }
    let off = ((tcp[12] >> 4) as usize) * 4;
    if off < 20 || off > tcp.len() {
        return None;
    }
    Some((&tcp[..off], addr, tcp.len() - off))
}

/// The connection key, sequence number and payload length of an IPv4 or
/// IPv6 TCP packet, or `None` for anything else (or anything malformed).
pub fn tcp_segment(packet: &[u8]) -> Option<(u64, u32, u32)> {
    let (tcp, addr, len) = tcp_parts(packet)?;
    let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
    let mut key = 0xcbf29ce484222325u64;
    for &b in addr.iter().chain(&tcp[0..4]) {
        key = (key ^ b as u64).wrapping_mul(0x100000001b3);
    }
    Some((key, seq, len as u32))
}

/// Whether `packet` is a pure TCP ACK: no payload, ACK set, none of SYN,
/// FIN, RST and URG. Such a packet needs no order: a later cumulative ACK
/// carries all it says, and TCP ignores one older than the latest.
/// (Its SACK blocks are only repeated by later ACKs while the holes stay
/// open, which is when it matters; a window update also travels in the
/// next ACK.)
pub fn pure_tcp_ack(packet: &[u8]) -> bool {
    const FIN: u8 = 0x01;
    const SYN: u8 = 0x02;
    const RST: u8 = 0x04;
    const ACK: u8 = 0x10;
    const URG: u8 = 0x20;
    tcp_parts(packet).is_some_and(|(tcp, _, len)| {
        len == 0 && tcp[13] & ACK != 0 && tcp[13] & (FIN | SYN | RST | URG) == 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_data_is_a_retransmission() {
        let mut d = RetransmitDetector::new(64);
        assert!(!d.observe(1, 0, 1000));
        assert!(!d.observe(1, 1000, 1000));
        assert!(d.observe(1, 0, 1000));
        assert!(!d.observe(2, 0, 1000), "other connection");
        assert!(!d.observe(1, 2000, 0), "pure ACK");
        // Across the 32-bit wrap.
        assert!(!d.observe(3, u32::MAX - 99, 100));
        assert!(!d.observe(3, 0, 100));
        assert!(d.observe(3, u32::MAX - 99, 100));
    }

    fn ipv4_tcp(seq: u32, payload: usize) -> Vec<u8> {
        let total = 40 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..22].copy_from_slice(&1234u16.to_be_bytes());
        p[22..24].copy_from_slice(&80u16.to_be_bytes());
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[32] = 5 << 4;
        p
    }

    #[test]
    fn parses_ipv4_tcp() {
        let (k, seq, len) = tcp_segment(&ipv4_tcp(77, 100)).unwrap();
        assert_eq!((seq, len), (77, 100));
        assert_eq!(tcp_segment(&ipv4_tcp(5, 0)).unwrap().0, k);
        assert!(tcp_segment(&ipv4_tcp(5, 10)[..30]).is_none());
        let mut udp = ipv4_tcp(0, 10);
        udp[9] = 17;
        assert!(tcp_segment(&udp).is_none());
    }

    #[test]
    fn tells_a_pure_ack() {
        let with_flags = |payload: usize, flags: u8| {
            let mut p = ipv4_tcp(1, payload);
            p[33] = flags;
            p
        };
        assert!(pure_tcp_ack(&with_flags(0, 0x10)));
        assert!(pure_tcp_ack(&with_flags(0, 0x18)), "PSH is harmless");
        assert!(pure_tcp_ack(&with_flags(0, 0x50)), "ECE too");
        assert!(!pure_tcp_ack(&with_flags(1, 0x10)), "it carries data");
        for f in [0x12, 0x11, 0x14, 0x30, 0x00] {
            assert!(!pure_tcp_ack(&with_flags(0, f)), "flags {f:#x}");
        }
        let ack = with_flags(0, 0x10);
        assert!(!pure_tcp_ack(&ack[..39]), "truncated");
        let mut udp = ack.clone();
        udp[9] = 17;
        assert!(!pure_tcp_ack(&udp));
        let mut frag = ack.clone();
        frag[7] = 1;
        assert!(!pure_tcp_ack(&frag), "a fragment");
        assert!(!pure_tcp_ack(&[]));
    }
}
