//! MAC1, MAC2 and the cookie reply: how a server under load makes a
//! sender prove that it receives at its source address before the server
//! spends a Diffie-Hellman on its handshake (WireGuard paper Section 5.3;
//! wireguard-go `device/cookie.go`).
//!
//! Message 1 ends in two MACs:
//!
//! ```text
//! INIT  0x11 | sender_index u32 | Noise IK message 1 | MAC1 (16) | MAC2 (16)
//! MAC1 = MAC(HASH("mac1----" || S_pub), everything before MAC1)
//! MAC2 = MAC(cookie, everything before MAC2)      (zeros without a cookie)
//! ```
//!
//! MAC1 proves only that the sender knows the server's public key, and a
//! captured message 1 carries a valid one: replaying it at the server costs
//! the server an X25519 (about 127 µs) before the replay is noticed. So a
//! server *under load* (the daemon decides, from the depth of its
//! handshake queue) processes a message 1 only with a valid MAC2. Without
//! one it answers with a cookie reply and spends no DH:
//!
//! ```text
//! COOKIE_REPLY  0x13 | receiver_index u32 | nonce (24) | XAEAD(cookie) (16 + 16)   (61 bytes)
//! cookie = MAC(R, source IP address || source port)      R: random, replaced every 2 minutes
//! XAEAD  = XChaCha20-Poly1305, key HASH("cookie--" || S_pub), AD = the MAC1 it answers
//! ```
//!
//! The reply goes to the source address of the message 1, so only a
//! sender that receives there learns the cookie; a flood from spoofed
//! addresses gets no MAC2 and no DH. The reply is smaller than the message
//! it answers (61 against 154 or more bytes), so it amplifies nothing. The
//! client keeps the cookie for [`COOKIE_SECRET_LIFETIME`] and stamps MAC2
//! into its next message 1 sent from that path (each path has its own
//! source address and so its own cookie). The AD binds the reply to the
//! client's own MAC1, so nobody who has not seen that message 1 can plant
//! a cookie.
//!
//! Sans-IO: the secret comes from the caller's RNG, time from `now`.

use std::net::{IpAddr, SocketAddr};

use blake2::digest::consts::U16;
use blake2::digest::{Digest, KeyInit, Mac};
use blake2::{Blake2s256, Blake2sMac};
use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand_core::{CryptoRng, RngCore};
use zeroize::Zeroizing;

use super::handshake::HandshakeError;
use super::keys::PublicKey;
use super::packet::{TAG_LEN, TYPE_COOKIE_REPLY};
use crate::time::{Duration, Instant};

/// Bytes of MAC1 and of MAC2.
pub const MAC_LEN: usize = 16;
/// Bytes of a cookie.
pub const COOKIE_LEN: usize = 16;
/// Bytes of the cookie reply's nonce (XChaCha20).
pub const COOKIE_NONCE_LEN: usize = 24;
/// Length of a cookie reply: type, receiver index, nonce, encrypted cookie.
pub const COOKIE_REPLY_LEN: usize = 1 + 4 + COOKIE_NONCE_LEN + COOKIE_LEN + TAG_LEN;
/// How long the server's cookie secret lives, and how long a client uses a
/// cookie (WireGuard `Cookie-Refresh-Time`): a cookie is worth nothing two
/// minutes after its secret was drawn.
pub const COOKIE_SECRET_LIFETIME: Duration = Duration::from_secs(120);

/// WireGuard's labels of the MAC1 key and the cookie encryption key.
const LABEL_MAC1: &[u8] = b"mac1----";
const LABEL_COOKIE: &[u8] = b"cookie--";

/// Field offsets of the cookie reply.
mod field {
    use core::ops::Range;
    pub const RECEIVER: Range<usize> = 1..5;
    pub const NONCE: Range<usize> = 5..29;
    pub const COOKIE: Range<usize> = 29..61;
}

/// `HASH(label || server public key)`: the MAC1 and the cookie key.
fn keyed_hash(label: &[u8], server: &PublicKey) -> [u8; 32] {
    let mut h = Blake2s256::new();
    h.update(label);
    h.update(server.as_bytes());
    h.finalize().into()
}

/// Keyed BLAKE2s-128 (WireGuard's `Mac`); keys of 16 (a cookie) or 32 bytes.
fn mac(key: &[u8], msg: &[u8]) -> [u8; MAC_LEN] {
    let mut m = <Blake2sMac<U16> as KeyInit>::new_from_slice(key).expect("key of 16 or 32 bytes");
    Mac::update(&mut m, msg);
    m.finalize().into_bytes().into()
}

/// Constant-time check of a keyed BLAKE2s-128.
fn mac_matches(key: &[u8], msg: &[u8], tag: &[u8]) -> bool {
    let mut m = <Blake2sMac<U16> as KeyInit>::new_from_slice(key).expect("key of 16 or 32 bytes");
    Mac::update(&mut m, msg);
    m.verify_slice(tag).is_ok()
}

/// The bytes of a source address the cookie is keyed to: IP then port.
fn address_bytes(addr: SocketAddr) -> ([u8; 18], usize) {
    let mut b = [0u8; 18];
    let n = match addr.ip() {
        IpAddr::V4(ip) => {
            b[..4].copy_from_slice(&ip.octets());
            4
        }
        IpAddr::V6(ip) => {
            b[..16].copy_from_slice(&ip.octets());
            16
        }
    };
    b[n..n + 2].copy_from_slice(&addr.port().to_be_bytes());
    (b, n + 2)
}

/// The two MAC fields at the end of message 1; `None` if it is too short
/// to hold them.
fn split_macs(msg: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let n = msg.len().checked_sub(2 * MAC_LEN)?;
    let (body, macs) = msg.split_at(n);
    let (mac1, mac2) = macs.split_at(MAC_LEN);
    Some((body, mac1, mac2))
}

/// Writes MAC1 into `msg`, whose last `2 * MAC_LEN` bytes are the MAC
/// fields, and zeros into MAC2. Returns MAC1 (the AD of a cookie reply to
/// this message). Panics if `msg` is shorter than the MAC fields (only
/// called on messages this crate built).
pub(crate) fn write_mac1(mac1_key: &[u8; 32], msg: &mut [u8]) -> [u8; MAC_LEN] {
    let n = msg.len() - 2 * MAC_LEN;
    let m1 = mac(mac1_key, &msg[..n]);
    msg[n..n + MAC_LEN].copy_from_slice(&m1);
    msg[n + MAC_LEN..].fill(0);
    m1
}

/// The MAC1 key of the server with public key `server`.
pub(crate) fn mac1_key(server: &PublicKey) -> [u8; 32] {
    keyed_hash(LABEL_MAC1, server)
}

/// Whether `msg` (a complete message 1) carries a valid MAC1 for the MAC1
/// key `key`. One keyed hash; checked before anything else.
pub(crate) fn mac1_valid(key: &[u8; 32], msg: &[u8]) -> bool {
    match split_macs(msg) {
        Some((body, mac1, _)) => mac_matches(key, body, mac1),
        None => false,
    }
}

/// The server's side: checks MAC1 and MAC2, and makes cookie replies.
pub struct CookieChecker {
    mac1_key: [u8; 32],
    cookie_key: Zeroizing<[u8; 32]>,
    /// The random secret cookies are keyed to, and when it was drawn.
    secret: Zeroizing<[u8; 32]>,
    secret_at: Option<Instant>,
}

impl CookieChecker {
    /// The checker of the server with public key `server`.
    pub fn new(server: &PublicKey) -> Self {
        CookieChecker {
            mac1_key: mac1_key(server),
            cookie_key: Zeroizing::new(keyed_hash(LABEL_COOKIE, server)),
            secret: Zeroizing::new([0; 32]),
            secret_at: None,
        }
    }

    /// Whether message 1 `msg` carries a valid MAC1.
    pub fn check_mac1(&self, msg: &[u8]) -> bool {
        mac1_valid(&self.mac1_key, msg)
    }

    /// Whether message 1 `msg`, received from `from`, carries a valid MAC2:
    /// one made with the cookie for `from` under the current secret, which
    /// must be younger than [`COOKIE_SECRET_LIFETIME`]. Call after
    /// [`CookieChecker::check_mac1`]; costs two keyed hashes.
    pub fn check_mac2(&self, msg: &[u8], from: SocketAddr, now: Instant) -> bool {
        let Some(at) = self.secret_at else {
            return false;
        };
        if now.saturating_since(at) >= COOKIE_SECRET_LIFETIME {
            return false;
        }
        let Some((body, mac1, mac2)) = split_macs(msg) else {
            return false;
        };
        let cookie = self.cookie(from);
        let covered = &msg[..body.len() + mac1.len()];
        mac_matches(&*cookie, covered, mac2)
    }

    /// The cookie for source address `from` under the current secret.
    fn cookie(&self, from: SocketAddr) -> Zeroizing<[u8; COOKIE_LEN]> {
        let (addr, n) = address_bytes(from);
        Zeroizing::new(mac(&*self.secret, &addr[..n]))
    }

    /// The cookie reply to message 1 `msg` from `from`: the cookie for
    /// `from`, encrypted under a random nonce with the message's MAC1 as
    /// associated data, addressed to the message's sender index. Draws a
    /// new secret first if the current one is older than
    /// [`COOKIE_SECRET_LIFETIME`]. `None` if `msg` is too short to be a
    /// message 1 (the caller checked MAC1, so it is not).
    pub fn create_reply<R: RngCore + CryptoRng>(
        &mut self,
        msg: &[u8],
        from: SocketAddr,
        rng: &mut R,
        now: Instant,
    ) -> Option<Vec<u8>> {
        if msg.len() < 5 + 2 * MAC_LEN {
            return None;
        }
        let (_, mac1, _) = split_macs(msg)?;
        let stale = match self.secret_at {
            Some(at) => now.saturating_since(at) >= COOKIE_SECRET_LIFETIME,
            None => true,
        };
        if stale {
            rng.fill_bytes(&mut *self.secret);
            self.secret_at = Some(now);
        }
        let cookie = self.cookie(from);
        let mut reply = Vec::with_capacity(COOKIE_REPLY_LEN);
        reply.push(TYPE_COOKIE_REPLY);
        reply.extend_from_slice(&msg[1..5]);
        let mut nonce = [0u8; COOKIE_NONCE_LEN];
        rng.fill_bytes(&mut nonce);
        reply.extend_from_slice(&nonce);
        let aead = XChaCha20Poly1305::new((&*self.cookie_key).into());
        let sealed = aead
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: &*cookie,
                    aad: mac1,
                },
            )
            .ok()?;
        reply.extend_from_slice(&sealed);
        debug_assert_eq!(reply.len(), COOKIE_REPLY_LEN);
        Some(reply)
    }
}

/// A cookie the client received on one path, and when.
#[derive(Clone)]
pub struct Cookie {
    value: Zeroizing<[u8; COOKIE_LEN]>,
    received_at: Instant,
}

impl Cookie {
    /// Whether it is still worth sending (younger than
    /// [`COOKIE_SECRET_LIFETIME`]).
    pub fn is_fresh(&self, now: Instant) -> bool {
        now.saturating_since(self.received_at) < COOKIE_SECRET_LIFETIME
    }

    /// When it arrived.
    pub fn received_at(&self) -> Instant {
        self.received_at
    }

    /// Writes MAC2 under this cookie into message 1 `msg` (whose MAC1 is
    /// already in place). No-op on a message too short to hold the MACs.
    pub fn stamp(&self, msg: &mut [u8]) {
        let Some(n) = msg.len().checked_sub(MAC_LEN) else {
            return;
        };
        let m2 = mac(&*self.value, &msg[..n]);
        msg[n..].copy_from_slice(&m2);
    }
}

impl core::fmt::Debug for Cookie {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Cookie")
            .field("received_at", &self.received_at)
            .finish_non_exhaustive()
    }
}

/// The client's side: opens cookie replies from one server.
pub struct CookieOpener {
    cookie_key: Zeroizing<[u8; 32]>,
}

impl CookieOpener {
    /// For the server with public key `server`.
    pub fn new(server: &PublicKey) -> Self {
        CookieOpener {
            cookie_key: Zeroizing::new(keyed_hash(LABEL_COOKIE, server)),
        }
    }

    /// Decrypts cookie reply `reply` to the message 1 whose MAC1 was `mac1`
    /// and whose sender index was `index`. Checked: length, type, receiver
    /// index, then the AEAD (which fails for a reply to another message 1
    /// or from anyone without the server's public key and that MAC1).
    pub fn open(
        &self,
        reply: &[u8],
        index: u32,
        mac1: &[u8; MAC_LEN],
        now: Instant,
    ) -> Result<Cookie, HandshakeError> {
        if reply.len() < COOKIE_REPLY_LEN {
            return Err(HandshakeError::Truncated);
        }
        if reply.len() > COOKIE_REPLY_LEN {
            return Err(HandshakeError::TooLong);
        }
        if reply[0] != TYPE_COOKIE_REPLY {
            return Err(HandshakeError::BadType);
        }
        if cookie_reply_receiver(reply) != Some(index) {
            return Err(HandshakeError::UnknownIndex);
        }
        let aead = XChaCha20Poly1305::new((&*self.cookie_key).into());
        let opened = Zeroizing::new(
            aead.decrypt(
                XNonce::from_slice(&reply[field::NONCE]),
                Payload {
                    msg: &reply[field::COOKIE],
                    aad: mac1,
                },
            )
            .map_err(|_| HandshakeError::Decrypt)?,
        );
        let mut value = Zeroizing::new([0u8; COOKIE_LEN]);
        value.copy_from_slice(&opened);
        Ok(Cookie {
            value,
            received_at: now,
        })
    }
}

/// The receiver index of a cookie reply of the right length, else `None`.
pub fn cookie_reply_receiver(reply: &[u8]) -> Option<u32> {
    if reply.len() != COOKIE_REPLY_LEN || reply[0] != TYPE_COOKIE_REPLY {
        return None;
    }
    Some(u32::from_be_bytes(
        reply[field::RECEIVER].try_into().expect("4 bytes"),
    ))
}

#[cfg(test)]
mod tests;
