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
//! MTU >= 576) and never panics; a bad payload fails the handshake. The
//! version byte is read first and reported on its own
//! ([`HelloError::Version`]), so a peer of another version is refused
//! with a reason an operator can act on instead of an unexplained
//! failure.
//!
//! Versions:
//! - 1: data, feedback, keepalive and control frames.
//! - 2: lossy-path repair. A version-1 decoder refuses every one of its
//!   additions (unknown frame type, undefined data flag) or ignores it (an
//!   unknown control kind), so a mixed pair would silently lose the
//!   repair and count every repair frame as a decode error; the two
//!   versions therefore do not talk. Added: the NACK frame (type 0x06,
//!   [`crate::wire::nack`]), the `REPAIR` data flag, the `SKIP` control
//!   message and the FEC parity frame (type 0x07, [`crate::wire::parity`]).
//! - 3: rate probes. Added: filler inner packets (first byte 0, IP version
//!   0) that a tunnel sends in pairs on a path it has no rate estimate for
//!   while it is quiet (`conn::tunnel::rate_probe`), and drops when it
//!   receives them. A version-2 receiver would hand them to its TUN device,
//!   which refuses them, and count them as delivered.
//! - 4: inner header compression ([`crate::compress`]). Added: the
//!   `INSTALL` and `COMPRESSED` data flags, whose frames a version-3
//!   decoder refuses (undefined flags), losing every compressed packet.

use std::net::Ipv4Addr;

use super::TunnelParams;

/// Version of the hello payloads (and so of the tunnel protocol on top of
/// the Noise prologue's `braid v2`); see the module doc for what each
/// version carries.
pub const HELLO_VERSION: u8 = 4;

/// Why a hello payload was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HelloError {
    /// The peer speaks another version of the tunnel protocol (the
    /// version byte it sent). Checked before anything else, on a payload
    /// of any length, since another version may have another layout.
    #[error("peer speaks tunnel protocol version {got}, this side speaks {HELLO_VERSION}: run the same braid release on client and server")]
    Version { got: u8 },
    /// Right version, but the wrong length or an invalid field.
    #[error("malformed hello payload")]
    Malformed,
}

/// The version byte of `b`, refused unless it is [`HELLO_VERSION`].
fn check_version(b: &[u8]) -> Result<(), HelloError> {
    match b.get(field::VERSION) {
        None => Err(HelloError::Malformed),
        Some(&HELLO_VERSION) => Ok(()),
        Some(&got) => Err(HelloError::Version { got }),
    }
}

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

    /// `b` as a client hello of [`HELLO_VERSION`].
    ///
    /// Errors: [`HelloError::Version`] for another version byte,
    /// [`HelloError::Malformed`] for an empty payload or a wrong length.
    pub fn parse(b: &[u8]) -> Result<ClientHello, HelloError> {
        check_version(b)?;
        if b.len() != Self::LEN {
            return Err(HelloError::Malformed);
        }
        let id: [u8; 8] = b[field::CONN_ID]
            .try_into()
            .map_err(|_| HelloError::Malformed)?;
        Ok(ClientHello {
            conn_id: u64::from_be_bytes(id),
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

    /// `b` as a valid server hello of [`HELLO_VERSION`].
    ///
    /// Errors: [`HelloError::Version`] for another version byte,
    /// [`HelloError::Malformed`] for a wrong length, a prefix length above
    /// 32 or an MTU below 576.
    pub fn parse(b: &[u8]) -> Result<ServerHello, HelloError> {
        check_version(b)?;
        if b.len() != Self::LEN {
            return Err(HelloError::Malformed);
        }
        let bad = |_| HelloError::Malformed;
        let addr = |r: core::ops::Range<usize>| -> Result<Ipv4Addr, HelloError> {
            let o: [u8; 4] = b[r].try_into().map_err(bad)?;
            Ok(Ipv4Addr::from(o))
        };
        let prefix_len = b[field::PREFIX];
        let mtu = u16::from_be_bytes(b[field::MTU].try_into().map_err(bad)?);
        if prefix_len > 32 || mtu < MIN_MTU {
            return Err(HelloError::Malformed);
        }
        Ok(ServerHello {
            epoch: u64::from_be_bytes(b[field::EPOCH].try_into().map_err(bad)?),
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
        0x04, // version
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
        assert_eq!(ServerHello::parse(&SERVER_BYTES), Ok(server_hello()));
    }

    #[test]
    fn test_parse_server_hello_errors() {
        let malformed = Err(HelloError::Malformed);
        assert_eq!(ServerHello::parse(&SERVER_BYTES[..19]), malformed);
        assert_eq!(ServerHello::parse(&[]), malformed);
        let mut b = SERVER_BYTES;
        b[0] = 5;
        assert_eq!(
            ServerHello::parse(&b),
            Err(HelloError::Version { got: 5 }),
            "version"
        );
        let mut b = SERVER_BYTES;
        b[13] = 33;
        assert_eq!(ServerHello::parse(&b), malformed, "prefix");
        let mut b = SERVER_BYTES;
        b[18..20].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(ServerHello::parse(&b), malformed, "mtu");
    }

    #[test]
    fn client_hello_round_trip() {
        let h = ClientHello {
            conn_id: 0xdead_beef_0102_0304,
        };
        let b = h.to_bytes();
        assert_eq!(b, [4, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4]);
        assert_eq!(ClientHello::parse(&b), Ok(h));
        assert_eq!(ClientHello::parse(&b[..8]), Err(HelloError::Malformed));
        assert_eq!(ClientHello::parse(&[]), Err(HelloError::Malformed));
    }

    /// A version-1 peer (no NACK, REPAIR or SKIP) is refused by
    /// its version, whatever the length of the rest, and the error names
    /// both versions.
    #[test]
    fn version_one_hellos_are_refused_by_version() {
        let v1_client = [1, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4];
        assert_eq!(
            ClientHello::parse(&v1_client),
            Err(HelloError::Version { got: 1 })
        );
        let mut v1_server = SERVER_BYTES;
        v1_server[0] = 1;
        assert_eq!(
            ServerHello::parse(&v1_server),
            Err(HelloError::Version { got: 1 })
        );
        assert_eq!(
            ClientHello::parse(&[1]),
            Err(HelloError::Version { got: 1 })
        );
        let text = HelloError::Version { got: 1 }.to_string();
        assert!(
            text.contains("version 1") && text.contains("speaks 4"),
            "{text}"
        );
    }
}
