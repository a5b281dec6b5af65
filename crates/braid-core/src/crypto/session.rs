//! Transport encryption after the handshake: one [`Session`] per key pair.
//!
//! # Packet format
//!
//! ```text
//! 0x10 | receiver_index u32 | counter u32 | ciphertext of plaintext | tag (16)
//! ```
//!
//! 9 bytes of header and a 16-byte tag: 25 bytes of overhead. The
//! `receiver_index` is the index the *receiving* side chose for this session
//! (so it can find the key without trial decryption); `counter` is the low
//! 32 bits of the sender's 64-bit per-session packet number, starting at 0,
//! which the receiver extends to 64 bits around the newest counter it
//! accepted (see [`super::packet`]).
//!
//! The AEAD is ChaCha20-Poly1305 (RFC 8439) under the keys of the Noise
//! `Split()` (Noise spec Section 5.2), with the nonce formed as Noise does:
//! 32 zero bits followed by the 64-bit counter in little-endian (Noise
//! spec Section 12.3). The 9 header bytes are the associated data, so the
//! index and counter are authenticated as well as bound by key and nonce
//! (the nonce holds the full 64-bit counter).
//! Sending the counter explicitly, rather than keeping an implicit nonce as
//! Noise's transport phase does, is what lets packets arrive out of order
//! over several paths (WireGuard paper Section 5.4.6); duplicates and
//! replays are caught by the RFC 6479 window of [`super::replay`].
//!
//! # Failure is cheap
//!
//! [`Session::decrypt`] rejects on length, type, index, age and replay
//! window before any cryptography, so garbage and replays cost a few
//! comparisons. Only a packet that passes all of them is decrypted, and
//! only an authenticated packet moves the replay window.
//!
//! # Lifetime
//!
//! As in WireGuard (paper Section 6.2), the initiator starts a new
//! handshake once the session is older than [`REKEY_AFTER_TIME`] or has
//! carried [`REKEY_AFTER_MESSAGES`]; a session older than
//! [`REJECT_AFTER_TIME`] or past [`REJECT_AFTER_MESSAGES`] is refused in
//! both directions, which bounds how much traffic one key protects and
//! gives forward secrecy within minutes. [`super::PeerSessions`] keeps the
//! previous, current and next sessions during the switch-over.

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};

use super::packet::{TransportHeader, MAX_PLAINTEXT_LEN, TAG_LEN, TRANSPORT_HEADER_LEN};
use super::replay::ReplayWindow;
use crate::time::{Duration, Instant};

/// Start a new handshake after this much time (WireGuard `Rekey-After-Time`).
pub const REKEY_AFTER_TIME: Duration = Duration::from_secs(120);
/// Refuse a session older than this (WireGuard `Reject-After-Time`).
pub const REJECT_AFTER_TIME: Duration = Duration::from_secs(180);
/// Start a new handshake after this many packets (WireGuard
/// `Rekey-After-Messages`, 2^60).
pub const REKEY_AFTER_MESSAGES: u64 = 1 << 60;
/// Never use a counter at or past this (WireGuard `Reject-After-Messages`,
/// 2^64 - 2^13 - 1: far from nonce wrap-around, beyond the window).
pub const REJECT_AFTER_MESSAGES: u64 = u64::MAX - (1 << 13);

/// Why a transport packet was not produced or not accepted. Small and
/// `Copy`: the daemon drops failures silently and counts them by kind.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum CryptoError {
    /// Shorter than header plus tag (25 bytes).
    #[error("packet too short for a transport packet")]
    Truncated,
    /// Not a transport packet (first byte is not 0x10).
    #[error("not a transport packet")]
    BadType,
    /// The receiver index names no session held here.
    #[error("unknown receiver index")]
    UnknownIndex,
    /// The counter was seen already, is behind the replay window, or is
    /// past [`SessionLimits::reject_after_messages`].
    #[error("replayed or stale counter")]
    Replay,
    /// The tag did not verify: corrupted, forged, or for another key.
    #[error("authentication failed")]
    AuthFailed,
    /// The session is past its time or message limit; a new handshake is
    /// needed.
    #[error("session expired")]
    Expired,
    /// No session can send yet (no handshake completed, or the responder
    /// has not yet received the initiator's first packet).
    #[error("no session established")]
    NoSession,
    /// Plaintext or packet larger than [`MAX_PLAINTEXT_LEN`] allows.
    #[error("packet too large")]
    TooLarge,
}

/// When a session must be replaced. [`Default`] is WireGuard's values;
/// tests shrink them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    pub rekey_after_time: Duration,
    pub reject_after_time: Duration,
    pub rekey_after_messages: u64,
    pub reject_after_messages: u64,
}

/// One direction pair of transport keys with its counters and replay
/// window. Created by the handshake ([`super::Initiator::handle_response`],
/// [`super::PendingInit::accept`]).
pub struct Session {
    /// Index the peer puts in packets for us (we chose it).
    local_index: u32,
    /// Index we put in packets for the peer (it chose it).
    remote_index: u32,
    send: ChaCha20Poly1305,
    recv: ChaCha20Poly1305,
    /// Counter of the next packet to send.
    send_counter: u64,
    replay: ReplayWindow,
    /// Whether we sent handshake message 1 for this session.
    is_initiator: bool,
    created_at: Instant,
    limits: SessionLimits,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            rekey_after_time: REKEY_AFTER_TIME,
            reject_after_time: REJECT_AFTER_TIME,
            rekey_after_messages: REKEY_AFTER_MESSAGES,
            reject_after_messages: REJECT_AFTER_MESSAGES,
        }
    }
}

impl Session {
    /// From the two `Split()` keys. The ChaCha20Poly1305 instances zeroize
    /// their keys on drop; the caller wipes its copies.
    pub(crate) fn new(
        send_key: &[u8; 32],
        recv_key: &[u8; 32],
        local_index: u32,
        remote_index: u32,
        is_initiator: bool,
        now: Instant,
    ) -> Session {
        Session {
            local_index,
            remote_index,
            send: ChaCha20Poly1305::new(Key::from_slice(send_key)),
            recv: ChaCha20Poly1305::new(Key::from_slice(recv_key)),
            send_counter: 0,
            replay: ReplayWindow::new(),
            is_initiator,
            created_at: now,
            limits: SessionLimits::default(),
        }
    }

    /// The index peers address this session by (the `receiver_index` of
    /// packets we receive); route incoming packets with it.
    pub fn local_index(&self) -> u32 {
        self.local_index
    }
    /// The index the peer chose (the `receiver_index` of packets we send).
    pub fn remote_index(&self) -> u32 {
        self.remote_index
    }
    /// Whether this side sent handshake message 1 (the client).
    pub fn is_initiator(&self) -> bool {
        self.is_initiator
    }
    /// When the handshake completed on this side.
    pub fn created_at(&self) -> Instant {
        self.created_at
    }
    /// Packets sent so far (the next counter).
    pub fn sent_count(&self) -> u64 {
        self.send_counter
    }
    pub fn limits(&self) -> SessionLimits {
        self.limits
    }
    /// Replaces the rekey/reject limits (tests use small ones).
    pub fn set_limits(&mut self, limits: SessionLimits) {
        self.limits = limits;
    }

    /// Whether a new handshake should start: the session is older than
    /// `rekey_after_time`, or either direction's counter reached
    /// `rekey_after_messages`. Counting the *received* counter too lets the
    /// client (the only side that initiates in braid) notice that the
    /// server's direction is wearing out a key.
    pub fn needs_rekey(&self, now: Instant) -> bool {
        now.saturating_since(self.created_at) >= self.limits.rekey_after_time
            || self.send_counter >= self.limits.rekey_after_messages
            || self.replay.last() >= self.limits.rekey_after_messages
    }

    /// Whether the session is past `reject_after_time` and must not be used
    /// in either direction.
    pub fn is_expired(&self, now: Instant) -> bool {
        now.saturating_since(self.created_at) >= self.limits.reject_after_time
    }

    /// When [`Session::is_expired`] becomes true.
    pub fn expires_at(&self) -> Instant {
        self.created_at + self.limits.reject_after_time
    }

    /// Encrypts `plaintext` (empty for a keepalive) and appends the whole
    /// transport packet (9-byte header, ciphertext, 16-byte tag) to `out`.
    /// On error `out` is unchanged.
    pub fn encrypt(
        &mut self,
        plaintext: &[u8],
        out: &mut Vec<u8>,
        now: Instant,
    ) -> Result<(), CryptoError> {
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(CryptoError::TooLarge);
        }
        if self.is_expired(now) || self.send_counter >= self.limits.reject_after_messages {
            return Err(CryptoError::Expired);
        }
        let counter = self.send_counter;
        self.send_counter += 1;

        let start = out.len();
        out.reserve(TRANSPORT_HEADER_LEN + plaintext.len() + TAG_LEN);
        TransportHeader {
            receiver_index: self.remote_index,
            counter_low: counter as u32,
        }
        .emit(out);
        out.extend_from_slice(plaintext);
        let (header, body) = out[start..].split_at_mut(TRANSPORT_HEADER_LEN);
        match self
            .send
            .encrypt_in_place_detached(&nonce(counter), header, body)
        {
            Ok(tag) => {
                out.extend_from_slice(&tag);
                Ok(())
            }
            Err(_) => {
                // Unreachable for plaintexts below the RFC 8439 limit.
                out.truncate(start);
                Err(CryptoError::TooLarge)
            }
        }
    }

    /// Checks and decrypts a transport packet, appending the plaintext to
    /// `out` (nothing for a keepalive). On error `out` is unchanged and the
    /// session state is unchanged. Checks, cheapest first: length, type,
    /// receiver index, age, replay window; then authentication; only then
    /// is the counter marked as seen.
    pub fn decrypt(
        &mut self,
        packet: &[u8],
        out: &mut Vec<u8>,
        now: Instant,
    ) -> Result<(), CryptoError> {
        let header = check_transport(packet)?;
        if header.receiver_index != self.local_index {
            return Err(CryptoError::UnknownIndex);
        }
        self.decrypt_checked(header, packet, out, now)
    }

    /// [`Session::decrypt`] after the header was parsed and routed here.
    pub(crate) fn decrypt_checked(
        &mut self,
        header: TransportHeader,
        packet: &[u8],
        out: &mut Vec<u8>,
        now: Instant,
    ) -> Result<(), CryptoError> {
        if self.is_expired(now) {
            return Err(CryptoError::Expired);
        }
        let counter = crate::wire::seq::extend(header.counter_low, self.replay.last());
        if counter >= self.limits.reject_after_messages || !self.replay.will_accept(counter) {
            return Err(CryptoError::Replay);
        }
        let (aad, rest) = packet.split_at(TRANSPORT_HEADER_LEN);
        let (ciphertext, tag) = rest.split_at(rest.len() - TAG_LEN);
        let start = out.len();
        out.extend_from_slice(ciphertext);
        let result = self.recv.decrypt_in_place_detached(
            &nonce(counter),
            aad,
            &mut out[start..],
            Tag::from_slice(tag),
        );
        if result.is_err() {
            out.truncate(start);
            return Err(CryptoError::AuthFailed);
        }
        if !self.replay.mark(counter) {
            // Cannot happen after will_accept with exclusive access; kept so
            // that a logic slip fails closed.
            out.truncate(start);
            return Err(CryptoError::Replay);
        }
        Ok(())
    }
}

/// Length, type and size checks of a transport packet.
pub(crate) fn check_transport(packet: &[u8]) -> Result<TransportHeader, CryptoError> {
    if packet.len() > TRANSPORT_HEADER_LEN + MAX_PLAINTEXT_LEN + TAG_LEN {
        return Err(CryptoError::TooLarge);
    }
    match TransportHeader::parse(packet) {
        Some(header) => Ok(header),
        None if packet.len() < super::packet::TRANSPORT_MIN_LEN => Err(CryptoError::Truncated),
        None => Err(CryptoError::BadType),
    }
}

/// Noise ChaChaPoly nonce: 4 zero bytes, then the counter little-endian
/// (Noise spec Section 12.3).
fn nonce(counter: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&counter.to_le_bytes());
    Nonce::from(n)
}

impl core::fmt::Debug for Session {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Session")
            .field("local_index", &self.local_index)
            .field("remote_index", &self.remote_index)
            .field("is_initiator", &self.is_initiator)
            .field("created_at", &self.created_at)
            .field("send_counter", &self.send_counter)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected pair without a handshake: keys are arbitrary here.
    fn pair(now: Instant) -> (Session, Session) {
        let (k1, k2) = ([1u8; 32], [2u8; 32]);
        (
            Session::new(&k1, &k2, 100, 200, true, now),
            Session::new(&k2, &k1, 200, 100, false, now),
        )
    }

    #[test]
    fn round_trip_and_format() {
        let now = Instant::ZERO;
        let (mut a, mut b) = pair(now);
        let mut packet = vec![0xee]; // pre-existing content is kept
        a.encrypt(b"hello", &mut packet, now).unwrap();
        let packet = &packet[1..];
        assert_eq!(packet.len(), TRANSPORT_HEADER_LEN + 5 + TAG_LEN);
        assert_eq!(&packet[..9], &[0x10, 0, 0, 0, 200, 0, 0, 0, 0]);
        let mut out = vec![];
        b.decrypt(packet, &mut out, now).unwrap();
        assert_eq!(out, b"hello");
        assert_eq!(b.decrypt(packet, &mut out, now), Err(CryptoError::Replay));
        assert_eq!(out, b"hello");

        let mut second = vec![];
        a.encrypt(b"", &mut second, now).unwrap();
        assert_eq!(second[8], 1, "counter increments");
        b.decrypt(&second, &mut out, now).unwrap();
        assert_eq!(out, b"hello", "keepalive appends nothing");
    }

    #[test]
    fn truncated_counter_is_extended_across_the_32_bit_wrap() {
        let now = Instant::ZERO;
        let (mut a, mut b) = pair(now);
        a.send_counter = (1 << 32) - 3;
        let packets: Vec<Vec<u8>> = (0..6)
            .map(|i| {
                let mut p = vec![];
                a.encrypt(&[i], &mut p, now).unwrap();
                p
            })
            .collect();
        // Out of order, jumping over the wrap and back.
        let mut out = vec![];
        for i in [0, 5, 2, 1, 4, 3] {
            out.clear();
            b.decrypt(&packets[i], &mut out, now).unwrap();
            assert_eq!(out, [i as u8]);
        }
        assert_eq!(b.replay.last(), (1 << 32) + 2);
        assert_eq!(
            b.decrypt(&packets[1], &mut out, now),
            Err(CryptoError::Replay)
        );
        // A packet from 2^32 counters earlier has the same low bits as a
        // fresh one; it is taken for the fresh counter, whose nonce it was
        // not sealed with, so it fails authentication.
        let (mut old, _) = pair(now);
        old.send_counter = 7;
        let mut stale = vec![];
        old.encrypt(b"old", &mut stale, now).unwrap();
        assert_eq!(
            b.decrypt(&stale, &mut out, now),
            Err(CryptoError::AuthFailed)
        );
        assert_eq!(
            b.replay.last(),
            (1 << 32) + 2,
            "a failed packet moves nothing"
        );
    }

    #[test]
    fn rejects_cheaply_before_decrypting() {
        let now = Instant::ZERO;
        let (mut a, mut b) = pair(now);
        let mut packet = vec![];
        a.encrypt(b"x", &mut packet, now).unwrap();
        let mut out = vec![];
        assert_eq!(
            b.decrypt(&packet[..24], &mut out, now),
            Err(CryptoError::Truncated)
        );
        assert_eq!(b.decrypt(&[], &mut out, now), Err(CryptoError::Truncated));
        let mut bad = packet.clone();
        bad[0] = 0x11;
        assert_eq!(b.decrypt(&bad, &mut out, now), Err(CryptoError::BadType));
        let mut bad = packet.clone();
        bad[4] ^= 1;
        assert_eq!(
            b.decrypt(&bad, &mut out, now),
            Err(CryptoError::UnknownIndex)
        );
        let mut bad = packet.clone();
        bad[8] ^= 1; // the counter is authenticated
        assert_eq!(b.decrypt(&bad, &mut out, now), Err(CryptoError::AuthFailed));
        let mut bad = packet.clone();
        *bad.last_mut().unwrap() ^= 0x80;
        assert_eq!(b.decrypt(&bad, &mut out, now), Err(CryptoError::AuthFailed));
        assert!(out.is_empty());
        // The forged packets did not consume the counter.
        b.decrypt(&packet, &mut out, now).unwrap();
        assert_eq!(out, b"x");
        // Wrong direction: a's own packet is not addressed to a.
        assert_eq!(
            a.decrypt(&packet, &mut out, now),
            Err(CryptoError::UnknownIndex)
        );
    }

    #[test]
    fn time_limits() {
        let t0 = Instant::from_millis(1_000);
        let (mut a, mut b) = pair(t0);
        assert!(!a.needs_rekey(t0 + Duration::from_secs(119)));
        assert!(a.needs_rekey(t0 + REKEY_AFTER_TIME));
        let mut packet = vec![];
        a.encrypt(b"late", &mut packet, t0 + Duration::from_secs(179))
            .unwrap();
        let mut out = vec![];
        assert_eq!(
            b.decrypt(&packet, &mut out, t0 + REJECT_AFTER_TIME),
            Err(CryptoError::Expired)
        );
        assert_eq!(
            a.encrypt(b"", &mut packet, t0 + REJECT_AFTER_TIME),
            Err(CryptoError::Expired)
        );
        assert_eq!(a.expires_at(), t0 + REJECT_AFTER_TIME);
    }

    #[test]
    fn message_limits() {
        let now = Instant::ZERO;
        let (mut a, mut b) = pair(now);
        let limits = SessionLimits {
            rekey_after_messages: 3,
            reject_after_messages: 5,
            ..SessionLimits::default()
        };
        a.set_limits(limits);
        b.set_limits(limits);
        let mut packets = vec![];
        for i in 0..5 {
            assert_eq!(a.needs_rekey(now), i >= 3);
            let mut p = vec![];
            a.encrypt(&[i as u8], &mut p, now).unwrap();
            packets.push(p);
        }
        assert_eq!(a.encrypt(b"", &mut vec![], now), Err(CryptoError::Expired));
        let mut out = vec![];
        for p in &packets[..3] {
            b.decrypt(p, &mut out, now).unwrap();
        }
        assert!(!b.needs_rekey(now));
        b.decrypt(&packets[3], &mut out, now).unwrap();
        assert!(
            b.needs_rekey(now),
            "receiver sees the peer's counter wearing out the key"
        );
        // A counter at the reject limit is refused by the receiver even if
        // authentic (here: forged header fails anyway, checked before AEAD).
        let mut forged = packets[4].clone();
        forged[5..13].copy_from_slice(&5u64.to_be_bytes());
        assert_eq!(b.decrypt(&forged, &mut out, now), Err(CryptoError::Replay));
    }

    #[test]
    fn oversized_refused() {
        let now = Instant::ZERO;
        let (mut a, mut b) = pair(now);
        let big = vec![0u8; MAX_PLAINTEXT_LEN + 1];
        let mut out = vec![];
        assert_eq!(a.encrypt(&big, &mut out, now), Err(CryptoError::TooLarge));
        assert!(out.is_empty());
        let mut p = vec![];
        a.encrypt(&big[..MAX_PLAINTEXT_LEN], &mut p, now).unwrap();
        assert_eq!(p.len(), 65_535);
        b.decrypt(&p, &mut out, now).unwrap();
        p.push(0);
        assert_eq!(b.decrypt(&p, &mut out, now), Err(CryptoError::TooLarge));
    }

    #[test]
    fn nonce_layout_matches_noise() {
        let n = nonce(0x0102_0304_0506_0708);
        assert_eq!(n.as_slice(), &[0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1]);
    }
}
