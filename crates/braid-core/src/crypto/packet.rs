//! The outer (UDP payload) packet formats, parsed as checked views.
//!
//! ```text
//! TRANSPORT  0x10 | receiver_index u32 | counter u32 (low bits) | ciphertext (plaintext + 16-byte tag)
//! INIT       0x11 | sender_index u32   | Noise IK message 1 (108 + payload bytes) | MAC1 (16) | MAC2 (16)
//! RESPONSE   0x12 | sender_index u32   | receiver_index u32 | Noise IK message 2 (48 + payload bytes)
//! COOKIE     0x13 | receiver_index u32 | nonce (24) | encrypted cookie (16 + 16)
//! ```
//!
//! MAC2 and the cookie reply are [`super::cookie`]'s; they came with the
//! Noise prologue `braid v2` (a `braid v1` message 1 fails MAC1, whose
//! position moved, and would fail decryption anyway).
//!
//! All integers big-endian (as in [`crate::wire`]). The type bytes do not
//! overlap the inner frame types (0x01..0x04), so a misrouted plaintext
//! frame is never taken for an envelope. Indices are the session
//! identifiers each side chose at random (WireGuard paper Section 5.4.2):
//! the receiver index lets a server with many clients find the session, and
//! so the key, without trial decryption and before spending any AEAD work.
//!
//! A transport packet carries only the low 32 bits of its 64-bit counter,
//! as DTLS 1.3 carries a truncated record number (RFC 9147 Section 4.2.2):
//! the receiver takes the full counter nearest the newest it accepted
//! ([`crate::wire::seq::extend`]). Anything more than the replay window
//! ([`super::replay::WINDOW_SIZE`]) behind the newest is refused anyway,
//! and 2^31 packets ahead would take a session hours at a million packets
//! a second, while sessions are replaced every two minutes. The nonce and
//! replay check use the full counter, so a wrong reconstruction fails
//! authentication rather than reusing a nonce. This saves 4 bytes on
//! every packet, a quarter of a percent of a 1500-byte path MTU.
//!
//! Once a `*::parse` returned `Some`, no accessor panics.

/// Type byte of a transport (data) packet.
pub const TYPE_TRANSPORT: u8 = 0x10;
/// Type byte of handshake message 1 (client to server).
pub const TYPE_HANDSHAKE_INIT: u8 = 0x11;
/// Type byte of handshake message 2 (server to client).
pub const TYPE_HANDSHAKE_RESPONSE: u8 = 0x12;
/// Type byte of a cookie reply (server under load to client).
pub const TYPE_COOKIE_REPLY: u8 = 0x13;

/// Length of the AEAD tag (Poly1305).
pub const TAG_LEN: usize = 16;
/// Transport header: type, receiver index, low 32 bits of the counter.
pub const TRANSPORT_HEADER_LEN: usize = 9;
/// Smallest transport packet: header and tag of an empty (keepalive) body.
pub const TRANSPORT_MIN_LEN: usize = TRANSPORT_HEADER_LEN + TAG_LEN;
/// Largest plaintext one transport packet may carry (a UDP payload cannot
/// be larger); bounds the work per packet.
pub const MAX_PLAINTEXT_LEN: usize = 65_535 - TRANSPORT_MIN_LEN;

/// Handshake init header: type, sender index.
pub const INIT_HEADER_LEN: usize = 5;
/// Handshake response header: type, sender index, receiver index.
pub const RESPONSE_HEADER_LEN: usize = 9;
/// Noise IK message 1 without payload: `e` (32) + encrypted `s` (32 + 16)
/// + the payload's tag (16).
pub const NOISE_INIT_OVERHEAD: usize = 32 + 32 + TAG_LEN + TAG_LEN;
/// Noise IK message 2 without payload: `e` (32) + the payload's tag (16).
pub const NOISE_RESPONSE_OVERHEAD: usize = 32 + TAG_LEN;

/// Field offsets (smoltcp style).
mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const TRANSPORT_RECEIVER: Range<usize> = 1..5;
    pub const TRANSPORT_COUNTER: Range<usize> = 5..9;
    pub const SENDER: Range<usize> = 1..5;
    pub const RESPONSE_RECEIVER: Range<usize> = 5..9;
}

/// What kind of outer packet this is, by its type byte.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// Encrypted tunnel data ([`TYPE_TRANSPORT`]).
    Transport,
    /// Handshake message 1 ([`TYPE_HANDSHAKE_INIT`]).
    HandshakeInit,
    /// Handshake message 2 ([`TYPE_HANDSHAKE_RESPONSE`]).
    HandshakeResponse,
    /// Cookie reply ([`TYPE_COOKIE_REPLY`]).
    CookieReply,
}

impl PacketType {
    /// The type of `packet`, or `None` for an empty packet or unknown type.
    pub fn of(packet: &[u8]) -> Option<PacketType> {
        match *packet.first()? {
            TYPE_TRANSPORT => Some(PacketType::Transport),
            TYPE_HANDSHAKE_INIT => Some(PacketType::HandshakeInit),
            TYPE_HANDSHAKE_RESPONSE => Some(PacketType::HandshakeResponse),
            TYPE_COOKIE_REPLY => Some(PacketType::CookieReply),
            _ => None,
        }
    }
}

/// The index of the session a transport packet or handshake response is
/// addressed to, read without any cryptography so the daemon can route a
/// packet to the right peer first. `None` for handshake inits (they are
/// addressed to the server's static key, not to a session), unknown types,
/// and packets too short to be valid.
pub fn peek_receiver_index(packet: &[u8]) -> Option<u32> {
    match PacketType::of(packet)? {
        PacketType::Transport => TransportHeader::parse(packet).map(|h| h.receiver_index),
        PacketType::HandshakeResponse => {
            if packet.len() < RESPONSE_HEADER_LEN + NOISE_RESPONSE_OVERHEAD {
                return None;
            }
            Some(read_u32(packet, field::RESPONSE_RECEIVER))
        }
        PacketType::CookieReply => super::cookie::cookie_reply_receiver(packet),
        PacketType::HandshakeInit => None,
    }
}

/// The header of a transport packet that passed the length and type checks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct TransportHeader {
    pub receiver_index: u32,
    /// The low 32 bits of the sender's counter (see the module doc).
    pub counter_low: u32,
}

impl TransportHeader {
    /// `Some` iff `packet` is long enough for header and tag and has the
    /// transport type.
    pub fn parse(packet: &[u8]) -> Option<TransportHeader> {
        if packet.len() < TRANSPORT_MIN_LEN || packet[field::TYPE] != TYPE_TRANSPORT {
            return None;
        }
        Some(TransportHeader {
            receiver_index: read_u32(packet, field::TRANSPORT_RECEIVER),
            counter_low: read_u32(packet, field::TRANSPORT_COUNTER),
        })
    }

    /// Appends the 9 header bytes to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(TYPE_TRANSPORT);
        out.extend_from_slice(&self.receiver_index.to_be_bytes());
        out.extend_from_slice(&self.counter_low.to_be_bytes());
    }
}

/// Sender index of a handshake packet (init or response); the caller
/// checked the length.
pub(crate) fn sender_index(packet: &[u8]) -> u32 {
    read_u32(packet, field::SENDER)
}

/// Receiver index of a handshake response; the caller checked the length.
pub(crate) fn response_receiver_index(packet: &[u8]) -> u32 {
    read_u32(packet, field::RESPONSE_RECEIVER)
}

fn read_u32(packet: &[u8], range: core::ops::Range<usize>) -> u32 {
    u32::from_be_bytes(packet[range].try_into().expect("4-byte field"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_transport_header() {
        let mut packet = vec![0x10, 0xde, 0xad, 0xbe, 0xef, 0, 0, 1, 2];
        packet.extend_from_slice(&[0xaa; TAG_LEN]);
        let h = TransportHeader::parse(&packet).unwrap();
        assert_eq!(
            h,
            TransportHeader {
                receiver_index: 0xdead_beef,
                counter_low: 0x0102
            }
        );
        assert_eq!(peek_receiver_index(&packet), Some(0xdead_beef));
        assert_eq!(PacketType::of(&packet), Some(PacketType::Transport));
        assert_eq!(
            TransportHeader::parse(&packet[..TRANSPORT_MIN_LEN - 1]),
            None
        );
        packet[0] = 0x11;
        assert_eq!(TransportHeader::parse(&packet), None);
    }

    #[test]
    fn test_emit_transport_header() {
        let mut out = vec![];
        TransportHeader {
            receiver_index: 0x0102_0304,
            counter_low: 5,
        }
        .emit(&mut out);
        assert_eq!(out, [0x10, 1, 2, 3, 4, 0, 0, 0, 5]);
    }

    #[test]
    fn peek_on_short_or_unknown_input() {
        assert_eq!(peek_receiver_index(&[]), None);
        assert_eq!(peek_receiver_index(&[0x10, 1, 2, 3, 4]), None);
        assert_eq!(peek_receiver_index(&[0x12, 1, 2, 3, 4, 5, 6, 7, 8]), None);
        assert_eq!(peek_receiver_index(&[0x11; 200]), None);
        assert_eq!(peek_receiver_index(&[0x01; 200]), None);
        let mut response = vec![0x12, 0, 0, 0, 9, 0, 0, 0, 7];
        response.resize(RESPONSE_HEADER_LEN + NOISE_RESPONSE_OVERHEAD, 0);
        assert_eq!(peek_receiver_index(&response), Some(7));
        assert_eq!(sender_index(&response), 9);
    }
}
