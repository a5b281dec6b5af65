//! The client end of the tunnel: one [`Connection`] to one server over
//! several paths.
//!
//! Handshakes: the client initiates (Noise IK, [`crate::crypto`]), sending
//! message 1 on every path at once so that one working path suffices; the
//! server answers the first copy and refuses the others as replays. The
//! path the response arrives on is up at once; a keepalive on every path
//! then confirms the session to the server and brings the other paths up.
//! Unanswered handshakes are retried every `handshake_timeout`, forever
//! (a daemon should keep trying); a rekey starts when the session needs it
//! while the old session keeps carrying traffic, and also when every path
//! went down (the server may have restarted and forgotten the session).
//! A rekey is retried sooner when the old session would otherwise expire
//! before the next attempt (`Connection::retry_wait`), and a session's
//! life is counted from when its message 1 went out, so that the client
//! never outlives the server's copy.
//!
//! Cookies: a server under load answers a message 1 without a valid MAC2
//! with a cookie reply ([`crate::crypto::cookie`]) instead of a response.
//! The cookie is for the source address of the path it came on, so the
//! client keeps one per path and stamps MAC2 with it into every message 1
//! it sends on that path while the cookie is fresh. A cookie reply to the
//! current attempt starts a new attempt at once (not after
//! `handshake_timeout`: a client restarted during a flood should get
//! through within a round trip or two), but only once per attempt that
//! the timer started; a cookie that arrives for a path after the retry
//! went out gets the current message resent on that path, once.

use std::net::SocketAddr;

use rand_chacha::rand_core::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::hello::{ClientHello, HelloError, ServerHello};
use super::tunnel::{Arrival, Role, Tunnel};
use super::{ClientStatus, ConnConfig, Event, Output, Outputs, TunnelParams};
use crate::crypto::{
    peek_receiver_index, Cookie, CookieOpener, Initiator, PacketType, PrivateKey, PublicKey, Tai64n,
};
use crate::path::{PathId, MAX_PATHS};
use crate::time::{Duration, Instant};
use crate::wire::Control;

/// The shortest wait before an unanswered handshake is retried (see
/// [`Connection::retry_wait`]); well above the 20 ms within which the
/// server refuses a second initiation of one client as a flood
/// (`MIN_INIT_INTERVAL` of the handshake).
pub const MIN_RETRY_WAIT: Duration = Duration::from_millis(200);

/// Why a path cannot be added.
#[derive(Copy, Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Path ids must be below [`MAX_PATHS`].
    #[error("path id {0} is out of range (at most {max} paths, ids 0..{max})", max = MAX_PATHS)]
    OutOfRange(u8),
    /// The connection already has a path with this id.
    #[error("path id {0} is already in use")]
    Duplicate(u8),
}

/// A handshake in flight.
struct Pending {
    initiator: Initiator,
    /// Message 1 without MAC2, resent on paths added meanwhile (stamped
    /// with the path's cookie, if any).
    message: Vec<u8>,
    sent_at: Instant,
    /// When an unanswered attempt is replaced by a new one (see
    /// [`Connection::retry_wait`]).
    retry_at: Instant,
    /// This attempt was started by a cookie reply (no second such retry).
    cookie_retry: bool,
    /// The attempt this one replaced because of a cookie reply: its index
    /// and MAC1, to open replies to it still arriving on other paths.
    previous: Option<(u32, [u8; 16])>,
    /// Paths on which the message was resent after a cookie arrived.
    resent: u32,
}

/// The client's tunnel connection.
pub struct Connection {
    cfg: ConnConfig,
    local_key: PrivateKey,
    server_key: PublicKey,
    /// Opens the server's cookie replies.
    cookies: CookieOpener,
    /// The latest cookie per path (cookies are per source address).
    path_cookies: Vec<Option<Cookie>>,
    rng: ChaCha20Rng,
    /// Wall clock (Unix nanoseconds) at `Instant::ZERO`, for handshake
    /// timestamps.
    unix_nanos_at_zero: u64,
    /// Last handshake timestamp used (they must strictly grow).
    last_timestamp_ns: u64,
    conn_id: u64,
    tunnel: Tunnel,
    pending: Option<Pending>,
    /// With no session and no handshake in flight (a failed attempt), the
    /// next attempt starts here.
    retry_at: Instant,
    /// The server's epoch from the last handshake.
    server_epoch: Option<u64>,
    /// Handshake attempts started with no session in hand since the last
    /// success (see [`Connection::retry_wait`]).
    blocked_attempts: u32,
    /// The version byte of the last server hello refused for its version
    /// (see [`HelloError::Version`]); cleared by a handshake that succeeds.
    server_version_refused: Option<u8>,
    params: Option<TunnelParams>,
    out: Outputs,
    closed: bool,
}

impl Connection {
    /// A client connection to the server with static key `server_key`,
    /// over `paths` (id and the server's address on that path; ids below
    /// [`MAX_PATHS`], distinct). Starts the handshake at once: drain
    /// [`Connection::poll_output`] afterwards.
    ///
    /// `unix_nanos_at_zero` is the wall clock, in nanoseconds since the Unix
    /// epoch, at `Instant::ZERO` (handshake timestamps must grow across
    /// client restarts, see [`Tai64n`]). All randomness (connection id,
    /// ephemeral keys, session indices) comes from a ChaCha20 stream
    /// seeded from `rng`.
    #[allow(clippy::too_many_arguments)]
    pub fn client<R: RngCore + CryptoRng>(
        cfg: ConnConfig,
        local_key: PrivateKey,
        server_key: PublicKey,
        paths: &[(PathId, SocketAddr)],
        unix_nanos_at_zero: u64,
        now: Instant,
        rng: &mut R,
    ) -> Result<Connection, PathError> {
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let mut rng = ChaCha20Rng::from_seed(seed);
        let mut c = Connection {
            tunnel: Tunnel::new(Role::Client, None, &cfg, None),
            out: Outputs::new(cfg.max_outputs),
            cfg,
            local_key,
            cookies: CookieOpener::new(&server_key),
            path_cookies: vec![None; MAX_PATHS],
            server_key,
            conn_id: rng.next_u64(),
            rng,
            unix_nanos_at_zero,
            last_timestamp_ns: 0,
            pending: None,
            retry_at: now,
            server_epoch: None,
            blocked_attempts: 0,
            server_version_refused: None,
            params: None,
            closed: false,
        };
        for &(id, remote) in paths {
            c.check_new_path(id)?;
            c.tunnel.add_link(id, remote);
        }
        c.start_handshake(now, None);
        Ok(c)
    }

    fn check_new_path(&self, id: PathId) -> Result<(), PathError> {
        if id.0 as usize >= MAX_PATHS {
            return Err(PathError::OutOfRange(id.0));
        }
        if self.tunnel.has_link(id) {
            return Err(PathError::Duplicate(id.0));
        }
        Ok(())
    }

    /// Adds a path at run time. It is probed at once (handshake message if
    /// one is in flight, else a keepalive) and used once it answers.
    pub fn add_path(
        &mut self,
        now: Instant,
        id: PathId,
        remote: SocketAddr,
    ) -> Result<(), PathError> {
        self.check_new_path(id)?;
        self.tunnel.add_link(id, remote);
        if let Some(p) = &self.pending {
            let bytes = self.stamped(id, &p.message, now);
            self.push_raw(id, remote, bytes);
        } else {
            self.tunnel.handle_timeout(now, &mut self.out);
        }
        Ok(())
    }

    /// Names path `id` (at most `wire::MAX_PATH_NAME` bytes are kept): the
    /// client tells the server after every handshake, so that the
    /// server's status shows the same names. No-op for unknown paths.
    pub fn set_path_name(&mut self, id: PathId, name: &str) {
        self.tunnel.set_link_name(id, name);
    }

    /// The daemon could not send on path `id` (e.g. `ENETUNREACH`: its
    /// interface went down): take it out of use at once instead of after
    /// `path_timeout`. Keepalives keep probing it; the first answer brings
    /// it back. No-op for unknown or already-down paths.
    pub fn path_unreachable(&mut self, now: Instant, id: PathId) {
        self.tunnel.mark_down(now, id, &mut self.out);
    }

    /// Removes a path (the interface is gone); its packets in flight are
    /// written off.
    pub fn remove_path(&mut self, now: Instant, id: PathId) {
        self.tunnel.remove_link(now, id);
    }

    /// The connection id this client sends in its handshakes.
    pub fn conn_id(&self) -> u64 {
        self.conn_id
    }

    /// What the server assigned, once established.
    pub fn params(&self) -> Option<TunnelParams> {
        self.params
    }

    /// Whether a session exists to send on.
    pub fn is_established(&self) -> bool {
        self.tunnel.sessions.current().is_some()
    }

    fn push_raw(&mut self, path: PathId, dest: SocketAddr, bytes: Vec<u8>) {
        let len = bytes.len() as u64;
        if self.out.push(Output::Transmit(super::Transmit {
            path: Some(path),
            dest,
            bytes,
        })) {
            self.tunnel.counters.tx_datagrams += 1;
            self.tunnel.counters.tx_bytes += len;
            self.tunnel
                .count_handshake_tx(Some(path), dest, len as usize);
        }
    }

    fn timestamp(&mut self, now: Instant) -> Tai64n {
        let ns = self
            .unix_nanos_at_zero
            .saturating_add(now.as_nanos())
            .max(self.last_timestamp_ns + 1);
        self.last_timestamp_ns = ns;
        Tai64n::from_unix_nanos(ns)
    }

    /// Message 1 as sent on path `id`: with MAC2 if the path has a fresh
    /// cookie.
    fn stamped(&self, id: PathId, message: &[u8], now: Instant) -> Vec<u8> {
        let mut bytes = message.to_vec();
        if let Some(Some(c)) = self.path_cookies.get(id.0 as usize) {
            if c.is_fresh(now) {
                c.stamp(&mut bytes);
            }
        }
        bytes
    }

    /// Datagrams from an address other than the server's arrived on a
    /// path's socket (counted as `stray_datagrams`; the daemon still hands
    /// them in, and they count only if they authenticate).
    pub fn count_stray(&mut self, n: u64) {
        self.tunnel.counters.stray_datagrams += n;
    }

    /// Starts a handshake attempt; `after_cookie` names the attempt it
    /// replaces because a cookie reply arrived for it.
    fn start_handshake(&mut self, now: Instant, after_cookie: Option<(u32, [u8; 16])>) {
        self.retry_at = now + self.cfg.handshake_timeout;
        let retry_at = now + self.retry_wait(now);
        if self.tunnel.sessions.current().is_none() {
            self.blocked_attempts = self.blocked_attempts.saturating_add(1);
        }
        let ts = self.timestamp(now);
        let hello = ClientHello {
            conn_id: self.conn_id,
        }
        .to_bytes();
        let Ok((initiator, message)) = Initiator::new(
            &self.local_key,
            &self.server_key,
            ts,
            &hello,
            &mut self.rng,
            now,
        ) else {
            // Only an internal snow failure gets here; retry later.
            self.tunnel.counters.handshake_failed += 1;
            self.pending = None;
            return;
        };
        let dests: Vec<(PathId, SocketAddr)> = self.tunnel.link_remotes().collect();
        for (id, dest) in dests {
            let bytes = self.stamped(id, &message, now);
            self.push_raw(id, dest, bytes);
        }
        self.pending = Some(Pending {
            initiator,
            message,
            sent_at: now,
            retry_at,
            cookie_retry: after_cookie.is_some(),
            previous: after_cookie,
            resent: 0,
        });
    }

    /// How long an attempt started at `now` may go unanswered before the
    /// next one: `handshake_timeout` (WireGuard's `REKEY_TIMEOUT`), but no
    /// longer than a third of the time the session in hand has left, so
    /// that a rekey whose message 1 or 2 was lost is retried several times
    /// before that session expires. WireGuard's limits leave 60 s between
    /// `Rekey-After-Time` and `Reject-After-Time` for 5 s retries (paper
    /// Section 6.2); with shorter limits a single lost handshake datagram
    /// would otherwise end the session before the one retry, and the
    /// server, whose copy of the session is older by a one-way delay,
    /// would drop the client's last packets as addressed to an unknown
    /// index. Never below [`MIN_RETRY_WAIT`] nor twice the largest
    /// smoothed RTT of the paths up: a response must have time to come
    /// back, since one to a replaced attempt is refused.
    ///
    /// Once the session has expired with no successor (an outage outlasted
    /// it), the tunnel carries nothing until a handshake succeeds, and the
    /// handshake is the only probe of the paths: attempts then back off
    /// from that floor by doubling up to `handshake_timeout`, so that the
    /// tunnel comes back within about the outage's length after it ends
    /// rather than up to 5 s later, as TCP's own timer backs off. The very
    /// first connection keeps the plain `handshake_timeout`.
    fn retry_wait(&self, now: Instant) -> Duration {
        let full = self.cfg.handshake_timeout;
        let floor = MIN_RETRY_WAIT.max(self.tunnel.max_srtt() * 2);
        let Some(s) = self.tunnel.sessions.current() else {
            if self.server_epoch.is_none() {
                return full;
            }
            let doubling = 1u32 << self.blocked_attempts.min(16);
            return full.min(floor.saturating_mul(doubling));
        };
        let left = s.expires_at().saturating_since(now);
        full.min((left / 3).max(floor))
    }

    /// One datagram arrived on path `path`'s socket (from the server: the
    /// daemon connects each path's socket to the server's address).
    pub fn handle_datagram(&mut self, now: Instant, path: PathId, datagram: &[u8]) {
        if self.closed {
            return;
        }
        self.tunnel.counters.rx_datagrams += 1;
        self.tunnel.counters.rx_bytes += datagram.len() as u64;
        match PacketType::of(datagram) {
            Some(PacketType::Transport) => {
                let control =
                    self.tunnel
                        .handle_transport(now, Arrival::Path(path), datagram, &mut self.out);
                // The server sends no control messages today; ignore kinds.
                let _ = control;
            }
            Some(PacketType::HandshakeResponse) => self.handle_response(now, path, datagram),
            Some(PacketType::CookieReply) => self.handle_cookie_reply(now, path, datagram),
            _ => self.tunnel.counters.drop_malformed += 1,
        }
        self.maybe_rekey(now);
    }

    /// A cookie reply: the server is under load and wants MAC2 from this
    /// path (see the module doc).
    fn handle_cookie_reply(&mut self, now: Instant, path: PathId, datagram: &[u8]) {
        let Some(p) = self.pending.as_ref() else {
            // No handshake in flight: late, duplicate or forged.
            self.tunnel.counters.handshake_failed += 1;
            return;
        };
        let index = peek_receiver_index(datagram);
        let current = (p.initiator.local_index(), *p.initiator.mac1());
        let (for_current, (i, mac1)) = match (index, p.previous) {
            (Some(i), Some(prev)) if i == prev.0 => (false, prev),
            _ => (true, current),
        };
        let cookie = match self.cookies.open(datagram, i, &mac1, now) {
            Ok(c) => c,
            Err(_) => {
                self.tunnel.counters.handshake_failed += 1;
                return;
            }
        };
        self.tunnel.counters.handshake_cookie += 1;
        let Some(slot) = self.path_cookies.get_mut(path.0 as usize) else {
            return;
        };
        *slot = Some(cookie);
        let bit = 1u32 << (path.0 as u32 % 32);
        if for_current && !p.cookie_retry {
            self.start_handshake(now, Some(current));
        } else if p.resent & bit == 0 {
            let message = p.message.clone();
            let dest = self
                .tunnel
                .link_remotes()
                .find(|(id, _)| *id == path)
                .map(|(_, d)| d);
            if let Some(dest) = dest {
                let bytes = self.stamped(path, &message, now);
                self.push_raw(path, dest, bytes);
            }
            if let Some(p) = self.pending.as_mut() {
                p.resent |= bit;
            }
        }
    }

    fn handle_response(&mut self, now: Instant, path: PathId, datagram: &[u8]) {
        let Some(p) = self.pending.as_mut() else {
            // A duplicate or late response: the handshake is done.
            self.tunnel.counters.handshake_failed += 1;
            return;
        };
        // The session's life is counted from when message 1 went out, not
        // from now: the server started its copy when message 1 arrived, up
        // to a round trip ago, and refuses it `reject_after_time` after
        // that. Counting from the send keeps this side's rekey and expiry
        // no later than the server's, so the client never sends on a
        // session the server has already dropped.
        let est = match p.initiator.handle_response(datagram, p.sent_at) {
            Ok(e) => e,
            Err(_) => {
                self.tunnel.counters.handshake_failed += 1;
                return;
            }
        };
        let sent_at = p.sent_at;
        let hello = match ServerHello::parse(&est.payload) {
            Ok(h) => h,
            Err(e) => {
                // Authenticated but unintelligible: a server of another
                // version (named in the status) or a broken one. Keep
                // retrying; the operator sees the counter and the reason.
                if let HelloError::Version { got } = e {
                    self.server_version_refused = Some(got);
                }
                self.tunnel.counters.handshake_failed += 1;
                self.pending = None;
                return;
            }
        };
        self.server_version_refused = None;
        self.pending = None;
        self.blocked_attempts = 0;
        self.tunnel.counters.handshakes += 1;
        let mut params = hello.params;
        params.mtu = params.mtu.min(self.cfg.inner_mtu);
        let reset = self.server_epoch.is_some_and(|e| e != hello.epoch);
        if reset {
            // The server lost our state: number from zero again, and forget
            // sessions it no longer has.
            self.tunnel.clear_sessions();
            self.tunnel.reset_data(now);
        }
        let first = self.server_epoch.is_none();
        self.server_epoch = Some(hello.epoch);
        self.tunnel.install(est.session);
        self.tunnel
            .mark_rx(now, path, datagram.len(), &mut self.out);
        self.tunnel.keepalive_all(now, &mut self.out);
        self.tunnel
            .arm_startup_hold(now, now.saturating_since(sent_at));
        if first || reset || self.params != Some(params) {
            self.params = Some(params);
            self.out.push(Output::Event(Event::Established { params }));
        }
    }

    fn maybe_rekey(&mut self, now: Instant) {
        if self.closed {
            return;
        }
        match &self.pending {
            Some(p) => {
                if now >= p.retry_at {
                    self.start_handshake(now, None);
                }
            }
            None if self.tunnel.sessions.current().is_none() => {
                if now >= self.retry_at {
                    self.start_handshake(now, None);
                }
            }
            None => {
                // All paths silent with a session in hand: the server may
                // have restarted and lost it (its answers would say
                // "unknown index" by silence). A new handshake finds out;
                // it is retried every `handshake_timeout` while unanswered.
                if self.tunnel.sessions.needs_rekey(now) || self.tunnel.all_down() {
                    self.start_handshake(now, None);
                }
            }
        }
    }

    /// Sends one inner IP packet (from the TUN device) to the server.
    /// Dropped and counted if there is no session, no usable path, or it
    /// exceeds the inner MTU.
    pub fn send_packet(&mut self, now: Instant, packet: &[u8]) {
        if self.closed {
            self.tunnel.counters.drop_no_session += 1;
            return;
        }
        self.tunnel.send_packet(now, packet, &mut self.out);
        self.maybe_rekey(now);
    }

    /// Runs due timers. Extra calls are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.closed {
            return;
        }
        self.tunnel.handle_timeout(now, &mut self.out);
        self.maybe_rekey(now);
    }

    /// When `handle_timeout` next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.closed {
            return None;
        }
        let own = match (&self.pending, self.tunnel.sessions.current()) {
            (Some(p), _) => Some(p.retry_at),
            (None, Some(s)) => Some(s.created_at() + s.limits().rekey_after_time),
            // After a failed attempt.
            (None, None) => Some(self.retry_at),
        };
        match (own, self.tunnel.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next output: a datagram to send, an inner packet for the TUN
    /// device, or an event.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop()
    }

    /// Says goodbye to the server on every path (it frees our state at
    /// once) and stops: no further handshakes, packets or timers; inputs
    /// are ignored. Drain `poll_output` once more to send the goodbye.
    pub fn close(&mut self, now: Instant) {
        if !self.closed && self.is_established() {
            self.tunnel
                .send_control(now, Control::CLOSE, &[], &mut self.out);
        }
        self.closed = true;
        self.pending = None;
    }

    pub fn status(&self, now: Instant) -> ClientStatus {
        let mut tunnel = self.tunnel.status(now);
        tunnel.counters.drop_output_overflow += self.out.overflow;
        ClientStatus {
            params: self.params,
            handshaking: self.pending.is_some(),
            server_version_refused: self.server_version_refused,
            tunnel,
        }
    }
}
