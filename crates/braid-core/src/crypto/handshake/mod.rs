//! The Noise IK handshake between client (initiator) and server (responder).
//!
//! `Noise_IK_25519_ChaChaPoly_BLAKE2s` with prologue `"braid v2"`, as
//! WireGuard (paper Section 5.4) minus its PSK extension:
//!
//! ```text
//! IK:  <- s                      (the client knows the server's static key)
//!      ...
//!      -> e, es, s, ss   payload: timestamp (12) | application payload
//!      <- e, ee, se      payload: application payload
//! ```
//!
//! Why IK (Noise spec Section 7.5): one round trip, mutual authentication
//! with static keys, and the client's identity is encrypted to the server's
//! static key so an observer of the paths cannot tell which client
//! connects. The prologue binds the protocol version: a peer speaking
//! another version fails to decrypt instead of misinterpreting.
//!
//! Message 1 (type 0x11) carries the client's random session index,
//! message 2 (type 0x12) the server's and the client's (see
//! [`super::packet`]). The server decrypts the client's static key from
//! message 1, asks the caller whether that key is allowed, and replies only
//! if so.
//!
//! Replay of message 1: an attacker could resend a recorded message 1 and
//! make the server create a session (it could not use it, but it would
//! waste state and displace the real one). As WireGuard (paper Section
//! 5.1), message 1 carries an encrypted, authenticated TAI64N timestamp
//! and the server keeps, per client, the greatest one it accepted; a
//! message 1 that is not strictly newer is refused. The server also
//! refuses a client's message 1 arriving within [`MIN_INIT_INTERVAL`] of
//! the previous accepted one (WireGuard's flood limit). The table has one
//! entry per *authenticated, allowed* client key, so it is bounded by the
//! number of configured clients.
//!
//! Sans-IO: no clock (the caller passes `now` for session timers and the
//! wall-clock [`Tai64n`] for the timestamp), no OS randomness (ephemeral
//! keys and session indices come from the caller's RNG through
//! a snow resolver seeded from it).
//!
//! CPU floods: message 1 ends in WireGuard's MAC1 and MAC2 (paper
//! Sections 5.3 and 5.4.4; [`super::cookie`]). The server checks MAC1
//! before any Diffie-Hellman, so datagrams from anyone who does not know
//! its public key cost one hash. MAC1 does not stop a replayed message 1
//! or one from an unknown key: for those, a server under load first asks
//! for MAC2 with a cookie reply ([`Responder::gate_init`]), which costs no
//! DH, and the caller limits the rate of initiations per source address.
//! `MIN_INIT_INTERVAL` also limits each allowed client.
//!
//! Versions: prologue `braid v1` had MAC1 only. `braid v2` added MAC2;
//! a v1 message 1 fails the v2 server's MAC1 (the field moved) and is
//! counted as noise, so clients and server must be upgraded together.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use rand_core::{CryptoRng, RngCore};
use snow::{Builder, HandshakeState};
use zeroize::Zeroizing;

use super::cookie::{self, CookieChecker, MAC_LEN};
use super::keys::{PrivateKey, PublicKey};
use super::packet::{
    self, INIT_HEADER_LEN, NOISE_INIT_OVERHEAD, NOISE_RESPONSE_OVERHEAD, RESPONSE_HEADER_LEN,
    TYPE_HANDSHAKE_INIT, TYPE_HANDSHAKE_RESPONSE,
};
use super::resolver::{SeededResolver, StaticPair, NOISE_PARAMS};
use super::session::Session;
use crate::time::{Duration, Instant};

/// Noise prologue: both sides must agree on it or the handshake fails.
pub const PROLOGUE: &[u8] = b"braid v2";
/// Largest application payload in a handshake message (e.g. the tunnel
/// address the server assigns); keeps handshake packets well below any
/// path MTU.
pub const MAX_HANDSHAKE_PAYLOAD: usize = 512;
/// Length of the encoded timestamp in message 1.
pub const TIMESTAMP_LEN: usize = 12;
/// Resend message 1 if no response came within this (WireGuard
/// `Rekey-Timeout`).
pub const REKEY_TIMEOUT: Duration = Duration::from_secs(5);
/// Give up retrying a handshake after this (WireGuard `Rekey-Attempt-Time`).
pub const REKEY_ATTEMPT_TIME: Duration = Duration::from_secs(90);
/// The server accepts at most one message 1 per client per this interval
/// (WireGuard: 50 initiations per second).
pub const MIN_INIT_INTERVAL: Duration = Duration::from_millis(20);

/// Bytes of message 1's MAC1 (and of its MAC2).
pub const MAC1_LEN: usize = MAC_LEN;

/// Smallest and largest handshake packets.
pub const INIT_MIN_LEN: usize = INIT_HEADER_LEN + NOISE_INIT_OVERHEAD + TIMESTAMP_LEN + 2 * MAC_LEN;
pub const INIT_MAX_LEN: usize = INIT_MIN_LEN + MAX_HANDSHAKE_PAYLOAD;
const RESPONSE_MIN_LEN: usize = RESPONSE_HEADER_LEN + NOISE_RESPONSE_OVERHEAD;
const RESPONSE_MAX_LEN: usize = RESPONSE_MIN_LEN + MAX_HANDSHAKE_PAYLOAD;

/// Why a handshake message was not produced or not accepted. Small and
/// `Copy`; the daemon drops and counts failures.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum HandshakeError {
    /// Shorter than the smallest valid message of its type.
    #[error("handshake packet too short")]
    Truncated,
    /// Longer than the largest valid message of its type.
    #[error("handshake packet too long")]
    TooLong,
    /// Wrong type byte for this step.
    #[error("wrong handshake packet type")]
    BadType,
    /// A response whose receiver index is not this handshake's.
    #[error("response for another handshake")]
    UnknownIndex,
    /// An application payload larger than [`MAX_HANDSHAKE_PAYLOAD`].
    #[error("handshake payload too large")]
    PayloadTooLarge,
    /// Noise decryption or DH failed: corrupted or forged message, wrong
    /// server key on the client, or a different protocol version.
    #[error("handshake decryption failed")]
    Decrypt,
    /// Message 1's MAC1 is wrong: the sender does not know the server's
    /// public key (or the packet was corrupted). Checked before any DH.
    #[error("handshake MAC1 mismatch")]
    BadMac,
    /// The client's static key is not in the allowed set.
    #[error("unknown client key")]
    UnknownClient,
    /// Message 1's timestamp is not newer than the last accepted one from
    /// this client (a replay, or the client's clock went backwards).
    #[error("replayed handshake initiation")]
    Replay,
    /// Message 1 from this client too soon after the previous one.
    #[error("handshake initiation flood")]
    Flood,
    /// This initiator already completed.
    #[error("handshake already finished")]
    Finished,
    /// snow refused for another reason (a bug, not an input problem).
    #[error("internal handshake error")]
    Internal,
}

/// A TAI64N timestamp (seconds since 1970 offset by 2^62 + 10, then
/// nanoseconds), encoded big-endian so that byte order is time order. The
/// client must take it from the wall clock, not from [`Instant`]: it has
/// to keep growing across client restarts for the server to accept it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tai64n {
    secs: u64,
    nanos: u32,
}

/// The client side of one handshake attempt.
pub struct Initiator {
    /// `None` once the handshake completed.
    state: Option<Box<HandshakeState>>,
    local_index: u32,
    remote: PublicKey,
    started_at: Instant,
    /// MAC1 of message 1: the associated data of a cookie reply to it.
    mac1: [u8; MAC_LEN],
}

/// What the client gets from a valid message 2.
#[derive(Debug)]
pub struct Established {
    /// The new session; install it in [`super::PeerSessions`].
    pub session: Session,
    /// The server's application payload.
    pub payload: Vec<u8>,
}

/// The server side: its static key and the per-client replay state.
pub struct Responder {
    local: PrivateKey,
    local_public: PublicKey,
    /// The static key pair, derived once for every handshake state.
    pair: Arc<StaticPair>,
    /// MAC1, MAC2 and cookie replies.
    cookies: CookieChecker,
    /// Greatest accepted timestamp and time of acceptance per client.
    clients: HashMap<PublicKey, ClientRecord>,
}

#[derive(Copy, Clone, Debug)]
struct ClientRecord {
    timestamp: Tai64n,
    accepted_at: Instant,
}

/// A verified message 1 from an allowed client, waiting for the server's
/// reply payload (which may depend on who the client is).
pub struct PendingInit {
    state: Box<HandshakeState>,
    client: PublicKey,
    payload: Vec<u8>,
    timestamp: Tai64n,
    local_index: u32,
    remote_index: u32,
}

/// What the server gets from [`PendingInit::accept`].
#[derive(Debug)]
pub struct Accepted {
    /// The new session; install it in [`super::PeerSessions`] (it can send
    /// only after the client's first packet confirms it).
    pub session: Session,
    /// Message 2, to send back to where message 1 came from.
    pub response: Vec<u8>,
    /// The authenticated client.
    pub client: PublicKey,
    /// The client's application payload from message 1.
    pub payload: Vec<u8>,
}

impl Tai64n {
    /// TAI64 label of the Unix epoch, as wireguard-go's `tai64n` package.
    const BASE: u64 = 0x4000_0000_0000_000a;

    /// From nanoseconds since the Unix epoch (the daemon reads
    /// `SystemTime`; the simulator can use its `Instant`).
    pub fn from_unix_nanos(nanos: u64) -> Self {
        Tai64n {
            secs: Self::BASE + nanos / 1_000_000_000,
            nanos: (nanos % 1_000_000_000) as u32,
        }
    }
    pub fn to_bytes(self) -> [u8; TIMESTAMP_LEN] {
        let mut b = [0u8; TIMESTAMP_LEN];
        b[..8].copy_from_slice(&self.secs.to_be_bytes());
        b[8..].copy_from_slice(&self.nanos.to_be_bytes());
        b
    }
    pub fn from_bytes(b: &[u8; TIMESTAMP_LEN]) -> Self {
        Tai64n {
            secs: u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
            nanos: u32::from_be_bytes(b[8..].try_into().expect("4 bytes")),
        }
    }
}

impl Initiator {
    /// Starts a handshake with the server `remote`: returns the initiator
    /// state and message 1 to send. `timestamp` must grow with every call
    /// for the same server (wall clock, see [`Tai64n`]); `payload` is
    /// delivered to the server with the handshake.
    pub fn new<R: RngCore + CryptoRng>(
        local: &PrivateKey,
        remote: &PublicKey,
        timestamp: Tai64n,
        payload: &[u8],
        rng: &mut R,
        now: Instant,
    ) -> Result<(Initiator, Vec<u8>), HandshakeError> {
        if payload.len() > MAX_HANDSHAKE_PAYLOAD {
            return Err(HandshakeError::PayloadTooLarge);
        }
        let mut state = builder(rng)?
            .local_private_key(local.as_bytes())
            .remote_public_key(remote.as_bytes())
            .build_initiator()
            .map_err(|_| HandshakeError::Internal)?;
        let local_index = rng.next_u32();

        let mut plaintext = Zeroizing::new(Vec::with_capacity(TIMESTAMP_LEN + payload.len()));
        plaintext.extend_from_slice(&timestamp.to_bytes());
        plaintext.extend_from_slice(payload);
        let mut packet = vec![0u8; INIT_MIN_LEN + payload.len()];
        packet[0] = TYPE_HANDSHAKE_INIT;
        packet[1..INIT_HEADER_LEN].copy_from_slice(&local_index.to_be_bytes());
        let len = state
            .write_message(&plaintext, &mut packet[INIT_HEADER_LEN..])
            .map_err(|_| HandshakeError::Internal)?;
        packet.truncate(INIT_HEADER_LEN + len + 2 * MAC_LEN);
        // MAC2 stays zero: the caller stamps it with a cookie it holds for
        // the path it sends on (`Cookie::stamp`).
        let mac1 = cookie::write_mac1(&cookie::mac1_key(remote), &mut packet);

        let initiator = Initiator {
            state: Some(Box::new(state)),
            local_index,
            remote: *remote,
            started_at: now,
            mac1,
        };
        Ok((initiator, packet))
    }

    /// The index the server will address message 2 and transport packets
    /// to; route responses with [`super::peek_receiver_index`].
    pub fn local_index(&self) -> u32 {
        self.local_index
    }
    /// The server's static key this handshake is for.
    pub fn remote(&self) -> &PublicKey {
        &self.remote
    }
    /// When message 1 was created.
    pub fn started_at(&self) -> Instant {
        self.started_at
    }
    /// MAC1 of message 1, to open a cookie reply to it
    /// ([`super::CookieOpener::open`]).
    pub fn mac1(&self) -> &[u8; MAC_LEN] {
        &self.mac1
    }
    /// Whether message 1 went unanswered for [`REKEY_TIMEOUT`]: start a new
    /// `Initiator` (with a new timestamp) rather than resending the same
    /// bytes, which the server would refuse as a replay.
    pub fn should_retry(&self, now: Instant) -> bool {
        self.state.is_some() && now.saturating_since(self.started_at) >= REKEY_TIMEOUT
    }

    /// Processes message 2. Cheap checks (length, type, receiver index)
    /// come first and leave the initiator untouched; a message that fails
    /// decryption also leaves it usable (snow restores its state), so a
    /// forged response cannot abort a genuine handshake.
    pub fn handle_response(
        &mut self,
        packet: &[u8],
        now: Instant,
    ) -> Result<Established, HandshakeError> {
        if packet.len() < RESPONSE_MIN_LEN {
            return Err(HandshakeError::Truncated);
        }
        if packet.len() > RESPONSE_MAX_LEN {
            return Err(HandshakeError::TooLong);
        }
        if packet[0] != TYPE_HANDSHAKE_RESPONSE {
            return Err(HandshakeError::BadType);
        }
        if packet::response_receiver_index(packet) != self.local_index {
            return Err(HandshakeError::UnknownIndex);
        }
        let state = self.state.as_mut().ok_or(HandshakeError::Finished)?;
        let remote_index = packet::sender_index(packet);
        let mut payload = vec![0u8; packet.len() - RESPONSE_MIN_LEN];
        let len = state
            .read_message(&packet[RESPONSE_HEADER_LEN..], &mut payload)
            .map_err(|_| HandshakeError::Decrypt)?;
        payload.truncate(len);
        if !state.is_handshake_finished() {
            return Err(HandshakeError::Internal);
        }
        let (send, recv) = split(state);
        self.state = None;
        let session = Session::new(&send, &recv, self.local_index, remote_index, true, now);
        Ok(Established { session, payload })
    }
}

impl Responder {
    /// A responder with the server's static key.
    pub fn new(local: PrivateKey) -> Self {
        let pair = Arc::new(StaticPair::new(local.as_bytes()));
        let local_public = PublicKey::from_bytes(*pair.public());
        Responder {
            local,
            cookies: CookieChecker::new(&local_public),
            pair,
            local_public,
            clients: HashMap::new(),
        }
    }

    /// The server's public key (what clients configure).
    pub fn public_key(&self) -> &PublicKey {
        &self.local_public
    }

    /// The cheap checks of message 1 from `from`, before any DH: length,
    /// type, MAC1 (else [`HandshakeError::BadMac`]) and, when the server is
    /// `under_load`, MAC2. A message 1 without a valid MAC2 under load gets
    /// [`Gate::CookieReply`]: send it back to `from` and do nothing else.
    /// The secret of the cookies comes from `rng` and is replaced every
    /// [`super::cookie::COOKIE_SECRET_LIFETIME`].
    pub fn gate_init<R: RngCore + CryptoRng>(
        &mut self,
        packet: &[u8],
        from: SocketAddr,
        under_load: bool,
        rng: &mut R,
        now: Instant,
    ) -> Result<Gate, HandshakeError> {
        check_init_shape(packet)?;
        if !self.cookies.check_mac1(packet) {
            return Err(HandshakeError::BadMac);
        }
        if !under_load || self.cookies.check_mac2(packet, from, now) {
            return Ok(Gate::Proceed);
        }
        self.cookies
            .create_reply(packet, from, rng, now)
            .map(Gate::CookieReply)
            .ok_or(HandshakeError::Internal)
    }

    /// Verifies message 1: decrypts it, checks that the client's static key
    /// is `allowed` (before any reply is built), that its timestamp is newer
    /// than the last accepted one and that it is not a flood. On success the
    /// timestamp is recorded and the caller decides the reply payload with
    /// [`PendingInit::accept`]. Ephemeral key and session index come from
    /// `rng`.
    pub fn read_init<R: RngCore + CryptoRng>(
        &mut self,
        packet: &[u8],
        allowed: impl Fn(&PublicKey) -> bool,
        rng: &mut R,
        now: Instant,
    ) -> Result<PendingInit, HandshakeError> {
        check_init_shape(packet)?;
        if !self.cookies.check_mac1(packet) {
            return Err(HandshakeError::BadMac);
        }
        let packet = &packet[..packet.len() - 2 * MAC_LEN];
        let remote_index = packet::sender_index(packet);
        let resolver = SeededResolver::with_static(rng, self.pair.clone());
        let mut state = builder_with(resolver)?
            .local_private_key(self.local.as_bytes())
            .build_responder()
            .map_err(|_| HandshakeError::Internal)?;
        let mut plaintext = Zeroizing::new(vec![
            0u8;
            packet.len() + 2 * MAC_LEN - INIT_MIN_LEN
                + TIMESTAMP_LEN
        ]);
        let len = state
            .read_message(&packet[INIT_HEADER_LEN..], &mut plaintext)
            .map_err(|_| HandshakeError::Decrypt)?;
        let client = state
            .get_remote_static()
            .and_then(PublicKey::from_slice)
            .ok_or(HandshakeError::Internal)?;
        if !allowed(&client) {
            return Err(HandshakeError::UnknownClient);
        }
        if len < TIMESTAMP_LEN {
            return Err(HandshakeError::Truncated);
        }
        let timestamp =
            Tai64n::from_bytes(plaintext[..TIMESTAMP_LEN].try_into().expect("12 bytes"));
        if let Some(record) = self.clients.get(&client) {
            if timestamp <= record.timestamp {
                return Err(HandshakeError::Replay);
            }
            if now.saturating_since(record.accepted_at) < MIN_INIT_INTERVAL {
                return Err(HandshakeError::Flood);
            }
        }
        self.clients.insert(
            client,
            ClientRecord {
                timestamp,
                accepted_at: now,
            },
        );
        Ok(PendingInit {
            state: Box::new(state),
            client,
            payload: plaintext[TIMESTAMP_LEN..len].to_vec(),
            timestamp,
            local_index: rng.next_u32(),
            remote_index,
        })
    }

    /// Forgets a client's replay state (e.g. when it is removed from the
    /// configuration). Keep it otherwise: forgetting re-opens the door to
    /// replays of its old message 1.
    pub fn forget_client(&mut self, client: &PublicKey) {
        self.clients.remove(client);
    }

    /// [`Responder::read_init`] followed by [`PendingInit::accept`], for
    /// when the reply payload does not depend on the client.
    pub fn handle_init<R: RngCore + CryptoRng>(
        &mut self,
        packet: &[u8],
        allowed: impl Fn(&PublicKey) -> bool,
        reply_payload: &[u8],
        rng: &mut R,
        now: Instant,
    ) -> Result<Accepted, HandshakeError> {
        if reply_payload.len() > MAX_HANDSHAKE_PAYLOAD {
            return Err(HandshakeError::PayloadTooLarge);
        }
        self.read_init(packet, allowed, rng, now)?
            .accept(reply_payload, now)
    }
}

impl PendingInit {
    /// The authenticated client's static key.
    pub fn client(&self) -> &PublicKey {
        &self.client
    }
    /// The client's application payload.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }
    /// The client's timestamp.
    pub fn timestamp(&self) -> Tai64n {
        self.timestamp
    }
    /// The index the new session will have on this side (random). If the
    /// daemon finds it already in use, drop this `PendingInit`; the client
    /// retries after [`REKEY_TIMEOUT`].
    pub fn local_index(&self) -> u32 {
        self.local_index
    }

    /// Builds message 2 carrying `reply_payload` and the server's session.
    pub fn accept(
        mut self,
        reply_payload: &[u8],
        now: Instant,
    ) -> Result<Accepted, HandshakeError> {
        if reply_payload.len() > MAX_HANDSHAKE_PAYLOAD {
            return Err(HandshakeError::PayloadTooLarge);
        }
        let mut response = vec![0u8; RESPONSE_MIN_LEN + reply_payload.len()];
        response[0] = TYPE_HANDSHAKE_RESPONSE;
        response[1..5].copy_from_slice(&self.local_index.to_be_bytes());
        response[5..RESPONSE_HEADER_LEN].copy_from_slice(&self.remote_index.to_be_bytes());
        let len = self
            .state
            .write_message(reply_payload, &mut response[RESPONSE_HEADER_LEN..])
            .map_err(|_| HandshakeError::Internal)?;
        response.truncate(RESPONSE_HEADER_LEN + len);
        if !self.state.is_handshake_finished() {
            return Err(HandshakeError::Internal);
        }
        // Split(): the first key is the initiator's sending key.
        let (recv, send) = split(&mut self.state);
        let session = Session::new(
            &send,
            &recv,
            self.local_index,
            self.remote_index,
            false,
            now,
        );
        Ok(Accepted {
            session,
            response,
            client: self.client,
            payload: self.payload,
        })
    }
}

/// What [`Responder::gate_init`] decided about a message 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Go on with [`Responder::read_init`].
    Proceed,
    /// Under load and no valid MAC2: send this cookie reply to the sender
    /// and drop the message.
    CookieReply(Vec<u8>),
}

/// Length and type of a message 1.
fn check_init_shape(packet: &[u8]) -> Result<(), HandshakeError> {
    if packet.len() < INIT_MIN_LEN {
        return Err(HandshakeError::Truncated);
    }
    if packet.len() > INIT_MAX_LEN {
        return Err(HandshakeError::TooLong);
    }
    if packet[0] != TYPE_HANDSHAKE_INIT {
        return Err(HandshakeError::BadType);
    }
    Ok(())
}

/// A snow builder for braid's Noise parameters with the caller-seeded RNG.
fn builder<R: RngCore + CryptoRng>(rng: &mut R) -> Result<Builder<'static>, HandshakeError> {
    builder_with(SeededResolver::from_rng(rng))
}

fn builder_with(resolver: SeededResolver) -> Result<Builder<'static>, HandshakeError> {
    let params = NOISE_PARAMS.parse().map_err(|_| HandshakeError::Internal)?;
    Ok(Builder::with_resolver(params, Box::new(resolver)).prologue(PROLOGUE))
}

/// Noise `Split()` (spec Section 5.2): (initiator-to-responder key,
/// responder-to-initiator key), wiped when dropped.
fn split(state: &mut HandshakeState) -> (Zeroizing<[u8; 32]>, Zeroizing<[u8; 32]>) {
    let (k1, k2) = state.dangerously_get_raw_split();
    (Zeroizing::new(k1), Zeroizing::new(k2))
}

impl core::fmt::Debug for Initiator {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Initiator")
            .field("local_index", &self.local_index)
            .field("remote", &self.remote)
            .field("started_at", &self.started_at)
            .field("finished", &self.state.is_none())
            .finish()
    }
}

impl core::fmt::Debug for Responder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Responder")
            .field("public", &self.local_public)
            .field("clients", &self.clients.len())
            .finish_non_exhaustive()
    }
}

impl core::fmt::Debug for PendingInit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PendingInit")
            .field("client", &self.client)
            .field("local_index", &self.local_index)
            .field("remote_index", &self.remote_index)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
