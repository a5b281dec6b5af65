//! The two facts the server needs from an inner IPv4 header: source (for
//! client isolation) and destination (for routing to a client). Checked:
//! anything that is not an IPv4 header of at least 20 bytes yields `None`.

use std::net::Ipv4Addr;

/// Smallest IPv4 header.
const IPV4_MIN_HEADER: usize = 20;

fn ipv4_field(packet: &[u8], at: usize) -> Option<Ipv4Addr> {
    if packet.len() < IPV4_MIN_HEADER || packet[0] >> 4 != 4 {
        return None;
    }
    let o: [u8; 4] = packet.get(at..at + 4)?.try_into().ok()?;
    Some(Ipv4Addr::from(o))
}

/// Source address of an IPv4 packet.
pub(crate) fn ipv4_source(packet: &[u8]) -> Option<Ipv4Addr> {
    ipv4_field(packet, 12)
}

/// Destination address of an IPv4 packet.
pub(crate) fn ipv4_destination(packet: &[u8]) -> Option<Ipv4Addr> {
    ipv4_field(packet, 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_addresses_of_ipv4_only() {
        let mut p = [0u8; 20];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&[10, 0, 0, 2]);
        p[16..20].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(ipv4_source(&p), Some(Ipv4Addr::new(10, 0, 0, 2)));
        assert_eq!(ipv4_destination(&p), Some(Ipv4Addr::new(1, 2, 3, 4)));
        assert_eq!(ipv4_source(&p[..19]), None);
        p[0] = 0x60;
        assert_eq!(ipv4_source(&p), None);
        assert_eq!(ipv4_destination(&[]), None);
    }
}
