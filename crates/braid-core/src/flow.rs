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

/// The connection key, sequence number and payload length of an IPv4 or
/// IPv6 TCP packet, or `None` for anything else (or anything malformed).
pub fn tcp_segment(packet: &[u8]) -> Option<(u64, u32, u32)> {
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
    let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
    let mut key = 0xcbf29ce484222325u64;
    for &b in addr.iter().chain(&tcp[0..4]) {
        key = (key ^ b as u64).wrapping_mul(0x100000001b3);
    }
    Some((key, seq, (tcp.len() - off) as u32))
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
}
