//! The application payloads of the handshake, as checked views.
//!
//! ```text
//! ClientHello (message 1)  version u8 | conn_id u64                                   (9 bytes)
//! ServerHello (message 2)  version u8 | epoch u64 | address [4] | prefix_len u8
//!                          | gateway [4] | mtu u16                                    (20 bytes)
//! ```
//! All integers big-endian. Both are encrypted and authenticated by the
//! Noise handshake. `conn_id` is chosen at random by each new client
//! [`super::Connection`]; `epoch` at random by the server for each client
//! state it creates. A change of either tells the other side that its
//! peer lost its tunnel state (see the module doc of [`super`]).
//!
//! Parsing is strict (exact length, known version, prefix length <= 32,
//! MTU >= 576) and never panics; a bad payload fails the handshake.

use std::net::Ipv4Addr;

use super::TunnelParams;

/// Version of the hello payloads (and so of the tunnel protocol on top of
/// the Noise prologue's `braid v2`).
pub const HELLO_VERSION: u8 = 1;

/// Smallest MTU an IPv4 host must accept (RFC 791); a smaller advertised
/// tunnel MTU is refused.
const MIN_MTU: u16 = 576;

mod field {
    use core::ops::Range;
    pub const VERSION: usize = 0;
    pub const CONN_ID: Range<usize> = 1..9;
    pub const CLIENT_LEN: usize = 9;

    pub const EPOCH: Range<usize> = 1..9;
    pub const ADDRESS: Range<usize> = 9..13;
    pub const PREFIX: usize = 13;
    pub const GATEWAY: Range<usize> = 14..18;
    pub const MTU: Range<usize> = 18..20;
    pub const SERVER_LEN: usize = 20;
}

/// The client's handshake payload.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ClientHello {
    /// Random per client connection instance.
    pub conn_id: u64,
}

/// The server's handshake payload.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ServerHello {
    /// Random per client state on the server.
    pub epoch: u64,
    pub params: TunnelParams,
}

impl ClientHello {
    pub const LEN: usize = field::CLIENT_LEN;

    pub fn to_bytes(self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[field::VERSION] = HELLO_VERSION;
        b[field::CONN_ID].copy_from_slice(&self.conn_id.to_be_bytes());
        b
    }

    /// `None` unless `b` is exactly a version-1 client hello.
    pub fn parse(b: &[u8]) -> Option<ClientHello> {
        if b.len() != Self::LEN || b[field::VERSION] != HELLO_VERSION {
            return None;
        }
        Some(ClientHello {
            conn_id: u64::from_be_bytes(b[field::CONN_ID].try_into().ok()?),
        })
    }
}

impl ServerHello {
    pub const LEN: usize = field::SERVER_LEN;

    pub fn to_bytes(self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[field::VERSION] = HELLO_VERSION;
        b[field::EPOCH].copy_from_slice(&self.epoch.to_be_bytes());
        b[field::ADDRESS].copy_from_slice(&self.params.address.octets());
        b[field::PREFIX] = self.params.prefix_len;
        b[field::GATEWAY].copy_from_slice(&self.params.gateway.octets());
        b[field::MTU].copy_from_slice(&self.params.mtu.to_be_bytes());
        b
    }

    /// `None` unless `b` is exactly a valid version-1 server hello.
    pub fn parse(b: &[u8]) -> Option<ServerHello> {
        if b.len() != Self::LEN || b[field::VERSION] != HELLO_VERSION {
            return None;
        }
        let addr = |r: core::ops::Range<usize>| -> Option<Ipv4Addr> {
            let o: [u8; 4] = b[r].try_into().ok()?;
            Some(Ipv4Addr::from(o))
        };
        let prefix_len = b[field::PREFIX];
        let mtu = u16::from_be_bytes(b[field::MTU].try_into().ok()?);
        if prefix_len > 32 || mtu < MIN_MTU {
            return None;
        }
        Some(ServerHello {
            epoch: u64::from_be_bytes(b[field::EPOCH].try_into().ok()?),
            params: TunnelParams {
                address: addr(field::ADDRESS)?,
                prefix_len,
                gateway: addr(field::GATEWAY)?,
                mtu,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static SERVER_BYTES: [u8; 20] = [
        0x01, // version
        0, 0, 0, 0, 0, 0, 0x12, 0x34, // epoch
        10, 77, 0, 2,  // address
        24, // prefix
        10, 77, 0, 1, // gateway
        0x05, 0x9a, // mtu 1434
    ];

    fn server_hello() -> ServerHello {
        ServerHello {
            epoch: 0x1234,
            params: TunnelParams {
                address: Ipv4Addr::new(10, 77, 0, 2),
                prefix_len: 24,
                gateway: Ipv4Addr::new(10, 77, 0, 1),
                mtu: 1434,
            },
        }
    }

    #[test]
    fn test_emit_and_parse_server_hello() {
        assert_eq!(server_hello().to_bytes(), SERVER_BYTES);
        assert_eq!(ServerHello::parse(&SERVER_BYTES), Some(server_hello()));
    }

    #[test]
    fn test_parse_server_hello_errors() {
        assert_eq!(ServerHello::parse(&SERVER_BYTES[..19]), None);
        let mut b = SERVER_BYTES;
        b[0] = 2;
        assert_eq!(ServerHello::parse(&b), None, "version");
        let mut b = SERVER_BYTES;
        b[13] = 33;
        assert_eq!(ServerHello::parse(&b), None, "prefix");
        let mut b = SERVER_BYTES;
        b[18..20].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(ServerHello::parse(&b), None, "mtu");
    }

    #[test]
    fn client_hello_round_trip() {
        let h = ClientHello {
            conn_id: 0xdead_beef_0102_0304,
        };
        let b = h.to_bytes();
        assert_eq!(b, [1, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4]);
        assert_eq!(ClientHello::parse(&b), Some(h));
        assert_eq!(ClientHello::parse(&b[..8]), None);
        assert_eq!(ClientHello::parse(&[]), None);
    }
}
