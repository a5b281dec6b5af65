//! The security layer: authenticated key exchange and packet protection,
//! sans-IO like the rest of the core (no sockets, no clock, no global RNG).
//!
//! - [`keys`]: static X25519 keys, base64 text as WireGuard, key-file mode
//!   policy.
//! - [`cookie`]: MAC1, MAC2 and the cookie reply that make a flooding
//!   sender prove its address before the server spends a DH on it.
//! - [`handshake`]: `Noise_IK_25519_ChaChaPoly_BLAKE2s` between client
//!   ([`Initiator`]) and server ([`Responder`]); the server admits only
//!   allowed client keys and refuses replayed initiations.
//! - [`session`]: transport packets under the handshake's keys, with
//!   explicit counters so multipath reordering is fine.
//! - [`replay`]: the RFC 6479 anti-replay window the sessions use.
//! - [`peer`]: previous/current/next sessions across a key rotation.
//! - [`packet`]: the outer packet formats and routing helpers.
//!
//! # How the daemon drives it
//!
//! ```text
//! client                                       server
//! Initiator::new(..) -> msg1  ---------------> PacketType::of == HandshakeInit
//!   (Cookie::stamp(msg1) with a fresh cookie)  Responder::gate_init(msg1, from, under_load, ..)
//!                         <------------------- Gate::CookieReply (under load, no valid MAC2)
//! CookieOpener::open(reply, index, mac1)       (no DH spent; the client retries with MAC2)
//!                                              Gate::Proceed:
//!                                              Responder::read_init(msg1, allowed, ..)
//!                                              PendingInit::accept(reply) -> msg2
//!                                              PeerSessions::install(session)   (as `next`)
//! peek_receiver_index(msg2) -> Initiator
//! Initiator::handle_response(msg2)
//! PeerSessions::install(session) (as `current`)
//! PeerSessions::encrypt(..) -> packet -------> peek_receiver_index -> peer
//!                                              PeerSessions::decrypt (promotes `next`)
//! ```
//!
//! Randomness: every call that needs it takes the caller's
//! `RngCore + CryptoRng` (the daemon seeds a ChaCha RNG from the OS, the
//! simulator from its seed). Time: `now` for session timers; the
//! handshake timestamp is wall-clock [`Tai64n`] passed in by the caller.

pub mod cookie;
pub mod handshake;
pub mod keys;
pub mod packet;
pub mod peer;
pub mod replay;
mod resolver;
pub mod session;

pub use cookie::{Cookie, CookieChecker, CookieOpener, COOKIE_REPLY_LEN, COOKIE_SECRET_LIFETIME};
pub use handshake::{
    Accepted, Established, Gate, HandshakeError, Initiator, PendingInit, Responder, Tai64n,
    INIT_MAX_LEN, INIT_MIN_LEN, MAX_HANDSHAKE_PAYLOAD, PROLOGUE, REKEY_ATTEMPT_TIME, REKEY_TIMEOUT,
};
pub use keys::{check_key_file_mode, KeyError, PrivateKey, PublicKey};
pub use packet::{peek_receiver_index, PacketType};
pub use peer::PeerSessions;
pub use replay::ReplayWindow;
pub use resolver::NOISE_PARAMS;
pub use session::{
    CryptoError, Session, SessionLimits, REJECT_AFTER_MESSAGES, REJECT_AFTER_TIME,
    REKEY_AFTER_MESSAGES, REKEY_AFTER_TIME,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// The daemon moves these between tasks.
    #[test]
    fn state_is_send() {
        fn send<T: Send>() {}
        send::<Session>();
        send::<PeerSessions>();
        send::<Initiator>();
        send::<Responder>();
        send::<PendingInit>();
        send::<PrivateKey>();
    }
}
