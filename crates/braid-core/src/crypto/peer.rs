//! The sessions of one peer across a key rotation.
//!
//! A rekey must not lose packets in flight, and with several paths of
//! different delay there are always packets in flight. So, as WireGuard
//! (paper Section 6.3; wireguard-go `Keypairs`), a peer holds up to three
//! sessions, each addressed by its own receiver index:
//!
//! - `current`: used to send, and to receive;
//! - `previous`: the session `current` replaced; receive only, until it
//!   expires or is replaced again, so late packets still decrypt;
//! - `next` (server side only): a session from a completed handshake that
//!   the server may not send on yet, because only the client's first
//!   packet under it proves the client has it (key confirmation). The first
//!   authenticated packet received on `next` promotes it to `current`.
//!
//! The client installs its new session as `current` at once (message 2
//! confirmed it) and should then send a packet (an empty keepalive if there
//! is no data) so the server can switch over.
//!
//! Routing: the daemon keeps a map receiver index -> peer. Indices of
//! sessions dropped here (replaced or expired) may linger in that map; a
//! packet to such an index gets [`CryptoError::UnknownIndex`] from
//! [`PeerSessions::decrypt`], which is the daemon's cue to remove the
//! entry. [`PeerSessions::local_indices`] lists the live ones.

use super::packet::MAX_PLAINTEXT_LEN;
use super::session::{check_transport, CryptoError, Session};
use crate::time::Instant;

/// Previous, current and next session of one peer.
#[derive(Debug, Default)]
pub struct PeerSessions {
    previous: Option<Session>,
    current: Option<Session>,
    next: Option<Session>,
}

impl PeerSessions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs a session from a completed handshake. An initiator's
    /// session becomes `current` (the old one becomes `previous`); a
    /// responder's becomes `next` until the peer uses it.
    pub fn install(&mut self, session: Session) {
        if session.is_initiator() {
            self.previous = self.current.take();
            self.current = Some(session);
            self.next = None;
        } else {
            self.next = Some(session);
        }
    }

    /// The session used for sending, if any.
    pub fn current(&self) -> Option<&Session> {
        self.current.as_ref()
    }

    /// Whether `index` is the receiver index of one of the sessions held.
    pub fn has_index(&self, index: u32) -> bool {
        self.local_indices().any(|i| i == index)
    }

    /// Receiver indices of the sessions held (at most 3).
    pub fn local_indices(&self) -> impl Iterator<Item = u32> + '_ {
        [&self.previous, &self.current, &self.next]
            .into_iter()
            .filter_map(|s| s.as_ref().map(Session::local_index))
    }

    /// Whether the client should start a new handshake: there is no usable
    /// current session, or it [needs rekeying](Session::needs_rekey). The
    /// caller does not start a second handshake while one is in flight
    /// ([`super::Initiator::should_retry`] says when to retry).
    pub fn needs_rekey(&self, now: Instant) -> bool {
        match &self.current {
            Some(s) => s.needs_rekey(now) || s.is_expired(now),
            None => true,
        }
    }

    /// Encrypts with the current session (see [`Session::encrypt`]).
    pub fn encrypt(
        &mut self,
        plaintext: &[u8],
        out: &mut Vec<u8>,
        now: Instant,
    ) -> Result<(), CryptoError> {
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(CryptoError::TooLarge);
        }
        match &mut self.current {
            Some(session) => session.encrypt(plaintext, out, now),
            None => Err(CryptoError::NoSession),
        }
    }

    /// Decrypts with whichever session the receiver index names (see
    /// [`Session::decrypt`]). An authenticated packet on `next` promotes
    /// it: `current` becomes `previous`, `next` becomes `current`.
    pub fn decrypt(
        &mut self,
        packet: &[u8],
        out: &mut Vec<u8>,
        now: Instant,
    ) -> Result<(), CryptoError> {
        let header = check_transport(packet)?;
        let index = header.receiver_index;
        let owns = |s: &Option<Session>| s.as_ref().is_some_and(|s| s.local_index() == index);
        if owns(&self.current) {
            self.current
                .as_mut()
                .expect("checked")
                .decrypt_checked(header, packet, out, now)
        } else if owns(&self.next) {
            self.next
                .as_mut()
                .expect("checked")
                .decrypt_checked(header, packet, out, now)?;
            self.previous = self.current.take();
            self.current = self.next.take();
            Ok(())
        } else if owns(&self.previous) {
            self.previous
                .as_mut()
                .expect("checked")
                .decrypt_checked(header, packet, out, now)
        } else {
            Err(CryptoError::UnknownIndex)
        }
    }

    /// Drops expired sessions (their keys are wiped on drop). Extra calls
    /// are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        for slot in [&mut self.previous, &mut self.current, &mut self.next] {
            if slot.as_ref().is_some_and(|s| s.is_expired(now)) {
                *slot = None;
            }
        }
    }

    /// When [`PeerSessions::handle_timeout`] next has work: the earliest
    /// expiry of a held session.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [&self.previous, &self.current, &self.next]
            .into_iter()
            .filter_map(|s| s.as_ref().map(Session::expires_at))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    /// Client and server sessions sharing keys `k`, indices `ci` / `si`.
    fn pair(k: u8, ci: u32, si: u32, now: Instant) -> (Session, Session) {
        let (a, b) = ([k; 32], [k.wrapping_add(1); 32]);
        (
            Session::new(&a, &b, ci, si, true, now),
            Session::new(&b, &a, si, ci, false, now),
        )
    }

    fn send(from: &mut PeerSessions, data: &[u8], now: Instant) -> Vec<u8> {
        let mut p = vec![];
        from.encrypt(data, &mut p, now).unwrap();
        p
    }

    fn recv(to: &mut PeerSessions, packet: &[u8], now: Instant) -> Result<Vec<u8>, CryptoError> {
        let mut out = vec![];
        to.decrypt(packet, &mut out, now).map(|()| out)
    }

    #[test]
    fn rotation_keeps_packets_in_flight() {
        let t0 = Instant::ZERO;
        let (mut client, mut server) = (PeerSessions::new(), PeerSessions::new());
        assert!(client.needs_rekey(t0));
        assert_eq!(
            client.encrypt(b"", &mut vec![], t0),
            Err(CryptoError::NoSession)
        );

        let (c1, s1) = pair(1, 11, 21, t0);
        client.install(c1);
        server.install(s1);
        assert_eq!(
            server.encrypt(b"", &mut vec![], t0),
            Err(CryptoError::NoSession)
        );
        let first = send(&mut client, b"a", t0);
        assert_eq!(recv(&mut server, &first, t0).unwrap(), b"a");
        assert_eq!(server.current().unwrap().local_index(), 21, "next promoted");
        let old_down = send(&mut server, b"old-down", t0);
        let old_up = send(&mut client, b"old-up", t0);

        // Rekey at 120 s.
        let t1 = t0 + Duration::from_secs(120);
        assert!(client.needs_rekey(t1));
        let (c2, s2) = pair(2, 12, 22, t1);
        client.install(c2);
        server.install(s2);
        assert!(!client.needs_rekey(t1));
        assert_eq!(client.local_indices().collect::<Vec<_>>(), vec![11, 12]);
        assert_eq!(server.local_indices().collect::<Vec<_>>(), vec![21, 22]);

        // The server still sends on the old session until confirmed; the
        // client still receives on it.
        let mid_down = send(&mut server, b"mid-down", t1);
        assert_eq!(
            mid_down[4],
            12 - 1,
            "addressed to the client's old index 11"
        );
        assert_eq!(recv(&mut client, &mid_down, t1).unwrap(), b"mid-down");
        assert_eq!(recv(&mut client, &old_down, t1).unwrap(), b"old-down");
        // A late packet on the old session reaches the server.
        assert_eq!(recv(&mut server, &old_up, t1).unwrap(), b"old-up");
        assert_eq!(server.current().unwrap().local_index(), 21);

        // First packet on the new session confirms it.
        let new_up = send(&mut client, b"new-up", t1);
        assert_eq!(recv(&mut server, &new_up, t1).unwrap(), b"new-up");
        assert_eq!(server.current().unwrap().local_index(), 22);
        let new_down = send(&mut server, b"new-down", t1);
        assert_eq!(recv(&mut client, &new_down, t1).unwrap(), b"new-down");

        // A replayed packet on either session is still refused.
        assert_eq!(recv(&mut server, &old_up, t1), Err(CryptoError::Replay));
        assert_eq!(recv(&mut server, &new_up, t1), Err(CryptoError::Replay));

        // Expiry drops the old sessions.
        assert_eq!(client.poll_timeout(), Some(t0 + Duration::from_secs(180)));
        client.handle_timeout(t0 + Duration::from_secs(180));
        client.handle_timeout(t0 + Duration::from_secs(180));
        assert_eq!(client.local_indices().collect::<Vec<_>>(), vec![12]);
        assert_eq!(
            recv(&mut client, &mid_down, t1),
            Err(CryptoError::UnknownIndex)
        );
    }

    #[test]
    fn unconfirmed_next_is_replaced_and_forged_packets_do_not_promote() {
        let t0 = Instant::ZERO;
        let mut server = PeerSessions::new();
        let (mut c1, s1) = pair(1, 11, 21, t0);
        let (mut c2, s2) = pair(2, 12, 22, t0);
        server.install(s1);
        server.install(s2);
        assert_eq!(server.local_indices().collect::<Vec<_>>(), vec![22]);
        let mut p = vec![];
        c1.encrypt(b"", &mut p, t0).unwrap();
        assert_eq!(recv(&mut server, &p, t0), Err(CryptoError::UnknownIndex));
        p.clear();
        c2.encrypt(b"x", &mut p, t0).unwrap();
        let mut forged = p.clone();
        forged[20] ^= 1;
        assert_eq!(recv(&mut server, &forged, t0), Err(CryptoError::AuthFailed));
        assert!(server.current().is_none());
        assert_eq!(recv(&mut server, &p, t0).unwrap(), b"x");
        assert!(server.current().is_some());
    }

    #[test]
    fn garbage_is_refused_cheaply() {
        let mut s = PeerSessions::new();
        let mut out = vec![];
        assert_eq!(
            s.decrypt(&[], &mut out, Instant::ZERO),
            Err(CryptoError::Truncated)
        );
        assert_eq!(
            s.decrypt(&[0x11; 64], &mut out, Instant::ZERO),
            Err(CryptoError::BadType)
        );
        assert_eq!(
            s.decrypt(&[0x10; 64], &mut out, Instant::ZERO),
            Err(CryptoError::UnknownIndex)
        );
        assert_eq!(s.poll_timeout(), None);
    }
}
