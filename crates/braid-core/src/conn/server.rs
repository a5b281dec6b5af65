//! The server end: one [`Server`] for all clients, on one UDP port.
//!
//! Routing of an incoming datagram, cheapest checks first:
//! - transport packet: receiver index -> client (a map of the indices of
//!   every client's live sessions), then that client's tunnel decrypts;
//! - handshake initiation: MAC1 first (one hash; a wrong one is noise,
//!   `handshake_bad_mac`); when the daemon says the server is under load
//!   ([`Server::handle_datagram_loaded`]), a valid MAC2 next, else a
//!   cookie reply and no Diffie-Hellman ([`crate::crypto::cookie`]), then
//!   the per-source-address rate limit ([`super::ratelimit`]); then
//!   [`Responder::read_init`] admits only configured client keys, refuses
//!   replays and floods, and the client's hello decides between a rekey
//!   (same connection id: keep the tunnel state) and a new connection
//!   (fresh state, new epoch);
//! - anything else: dropped and counted.
//!
//! Downlink: an inner packet from the TUN device goes to the client whose
//! assigned address is its IPv4 destination. Uplink: a client's inner
//! packets are delivered only if their IPv4 source is its own address, so
//! clients cannot spoof each other or the outside.
//!
//! State is bounded by the configuration: only configured clients get a
//! tunnel, each holds at most three sessions, and a client that sent
//! nothing authenticated for `peer_idle_timeout` (or said goodbye) is
//! dropped. Maps are ordered (`BTreeMap`) so that runs are deterministic.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};

use rand_chacha::rand_core::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::hello::{ClientHello, HelloError, ServerHello};
use super::ip::ipv4_destination;
use super::pool::{Ipv4Net, PoolError};
use super::ratelimit::RateLimiter;
use super::tunnel::{Arrival, Role, Tunnel};
use super::{
    ConnConfig, Counters, Event, Output, Outputs, PeerStatus, ServerStatus, Transmit, TunnelParams,
};
use crate::crypto::{
    peek_receiver_index, Gate, HandshakeError, PacketType, PrivateKey, PublicKey, Responder,
};
use crate::time::{Duration, Instant};
use crate::wire::Control;

/// A client the server admits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientEntry {
    /// For logs and status.
    pub name: String,
    pub key: PublicKey,
    /// A fixed tunnel address, or `None` for the next free one of the pool.
    pub address: Option<Ipv4Addr>,
}

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub conn: ConnConfig,
    /// The tunnel network; the server is its first host.
    pub network: Ipv4Net,
    pub clients: Vec<ClientEntry>,
    /// Drop a client's state after this long without an authenticated
    /// datagram (it can reconnect any time).
    pub peer_idle_timeout: Duration,
}

impl ServerConfig {
    /// Defaults for everything but the network and the clients.
    pub fn new(network: Ipv4Net, clients: Vec<ClientEntry>) -> Self {
        ServerConfig {
            conn: ConnConfig::default(),
            network,
            clients,
            peer_idle_timeout: crate::crypto::REJECT_AFTER_TIME,
        }
    }
}

/// Why the server turned a handshake initiation away, for an operator:
/// these are the failures a misconfiguration causes (replays and floods
/// are not).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RejectReason {
    /// MAC1 did not match: the sender computed it with another server
    /// public key (the client's `server_public_key` is wrong).
    WrongServerKey,
    /// A well-formed initiation from a key that is not configured.
    UnknownClient(PublicKey),
    /// The Noise message did not decrypt: corrupted, or another version.
    Undecryptable,
    /// An admitted client speaks another version of the tunnel protocol
    /// (the version byte of its hello): one side needs upgrading.
    Version { got: u8 },
}

/// The latest rejected initiation and how many were rejected in all.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub at: Instant,
    pub from: SocketAddr,
    pub reason: RejectReason,
    /// Rejections of any reason since the server started.
    pub count: u64,
}

/// A configured client: its assigned address.
#[derive(Clone, Debug)]
struct Admitted {
    name: String,
    address: Ipv4Addr,
}

/// A client with tunnel state.
struct Peer {
    tunnel: Tunnel,
    conn_id: u64,
    epoch: u64,
    address: Ipv4Addr,
    /// Receiver indices registered in `Server::by_index` for this peer.
    indices: Vec<u32>,
    connected_at: Instant,
}

pub struct Server {
    cfg: ServerConfig,
    responder: Responder,
    rng: ChaCha20Rng,
    admitted: BTreeMap<PublicKey, Admitted>,
    by_address: BTreeMap<Ipv4Addr, PublicKey>,
    peers: BTreeMap<PublicKey, Peer>,
    by_index: BTreeMap<u32, PublicKey>,
    /// Initiations processed per source address under load.
    limiter: RateLimiter,
    /// What the daemon dropped before handing datagrams in.
    intake: IntakeDrops,
    counters: Counters,
    out: Outputs,
    last_rejection: Option<Rejection>,
}

/// Datagrams the daemon dropped before they reached the core, as running
/// totals (the daemon sets them with [`Server::set_intake_drops`]; they
/// appear in the status counters of the same names).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct IntakeDrops {
    /// Initiations that found the handshake queue full.
    pub handshake_queue: u64,
    /// Datagrams older than the queue's time bound.
    pub stale: u64,
    /// Kernel receive-queue overflows (`SO_RXQ_OVFL`).
    pub kernel_rxq: u64,
    /// Datagrams the kernel dropped on the daemon's handshake socket: its
    /// small receive buffer full, or refused by its filter as no
    /// initiation.
    pub kernel_handshake: u64,
    /// Datagrams (and their bytes) the daemon's reader found to be neither
    /// a transport packet nor a handshake initiation, by the checks
    /// [`Server::handle_datagram`] would make first (type byte, transport
    /// header), and dropped before copying or queueing them. Counted as
    /// the core counts them: in `rx_datagrams`/`rx_bytes` and
    /// `drop_malformed`.
    pub malformed: u64,
    pub malformed_bytes: u64,
}

impl Server {
    /// A server with static key `local_key`. Assigns every configured
    /// client its address (see [`Ipv4Net::assign`]); fails if the
    /// assignment is impossible. Randomness (epochs, ephemeral keys,
    /// indices) comes from a ChaCha20 stream seeded from `rng`.
    pub fn new<R: RngCore + CryptoRng>(
        cfg: ServerConfig,
        local_key: PrivateKey,
        rng: &mut R,
    ) -> Result<Server, PoolError> {
        let fixed: Vec<Option<Ipv4Addr>> = cfg.clients.iter().map(|c| c.address).collect();
        let addresses = cfg.network.assign(&fixed)?;
        let mut admitted = BTreeMap::new();
        let mut by_address = BTreeMap::new();
        for (c, a) in cfg.clients.iter().zip(addresses) {
            admitted.insert(
                c.key,
                Admitted {
                    name: c.name.clone(),
                    address: a,
                },
            );
            by_address.insert(a, c.key);
        }
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        Ok(Server {
            out: Outputs::new(cfg.conn.max_outputs),
            cfg,
            responder: Responder::new(local_key),
            rng: ChaCha20Rng::from_seed(seed),
            admitted,
            by_address,
            peers: BTreeMap::new(),
            by_index: BTreeMap::new(),
            limiter: RateLimiter::default(),
            intake: IntakeDrops::default(),
            counters: Counters::default(),
            last_rejection: None,
        })
    }

    /// The latest handshake initiation turned away for a reason an
    /// operator can fix (see [`RejectReason`]); the daemon logs it.
    pub fn last_rejection(&self) -> Option<&Rejection> {
        self.last_rejection.as_ref()
    }

    fn note_rejection(
        &mut self,
        now: Instant,
        from: SocketAddr,
        e: &HandshakeError,
        key: Option<PublicKey>,
    ) {
        let reason = match (e, key) {
            (HandshakeError::BadMac, _) => RejectReason::WrongServerKey,
            (HandshakeError::UnknownClient, Some(k)) => RejectReason::UnknownClient(k),
            (HandshakeError::Decrypt, _) => RejectReason::Undecryptable,
            _ => return,
        };
        self.note_reason(now, from, reason);
    }

    /// Records `reason` as the latest rejection.
    fn note_reason(&mut self, now: Instant, from: SocketAddr, reason: RejectReason) {
        let count = self.last_rejection.map_or(0, |r| r.count) + 1;
        self.last_rejection = Some(Rejection {
            at: now,
            from,
            reason,
            count,
        });
    }

    /// The server's public key (what clients configure).
    pub fn public_key(&self) -> &PublicKey {
        self.responder.public_key()
    }

    /// The address assigned to a configured client.
    pub fn address_of(&self, key: &PublicKey) -> Option<Ipv4Addr> {
        self.admitted.get(key).map(|a| a.address)
    }

    /// The server's own tunnel address and the network's prefix length.
    pub fn gateway(&self) -> (Ipv4Addr, u8) {
        (self.cfg.network.gateway(), self.cfg.network.prefix_len())
    }

    /// The remote addresses of every connected client's paths: where
    /// authenticated traffic came from. The daemon lets handshakes from
    /// these addresses past its per-address admission limit, so that a
    /// client that restarts during a flood from spoofed addresses still
    /// gets its initiation into the queue.
    pub fn peer_addresses(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.peers
            .values()
            .flat_map(|p| p.tunnel.link_remotes().map(|(_, a)| a))
    }

    /// Number of clients with tunnel state.
    pub fn peer_count(&self) -> usize {
        self.peers.len()
    }

    /// One datagram arrived from `from`, with the server not under load.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        self.handle_datagram_loaded(now, from, datagram, false)
    }

    /// One datagram arrived from `from`. `under_load` is the daemon's
    /// judgement (e.g. its handshake queue is filling up): then a
    /// handshake initiation is processed only with a valid MAC2 (else it
    /// gets a cookie reply) and within the per-address rate limit. The core
    /// cannot tell load itself: it does not see the queue, the CPU or the
    /// clock beyond `now`.
    pub fn handle_datagram_loaded(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
        under_load: bool,
    ) {
        match PacketType::of(datagram) {
            Some(PacketType::Transport) => self.handle_transport(now, from, datagram),
            Some(PacketType::HandshakeInit) => {
                self.count_rx(datagram.len());
                self.handle_init(now, from, datagram, under_load)
            }
            _ => {
                self.count_rx(datagram.len());
                self.counters.drop_malformed += 1
            }
        }
    }

    fn count_rx(&mut self, len: usize) {
        self.counters.rx_datagrams += 1;
        self.counters.rx_bytes += len as u64;
    }

    fn handle_transport(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        let peer = peek_receiver_index(datagram).and_then(|i| self.by_index.get(&i).copied());
        let Some(key) = peer else {
            self.count_rx(datagram.len());
            if peek_receiver_index(datagram).is_some() {
                self.counters.drop_unknown_index += 1;
            } else {
                self.counters.drop_malformed += 1;
            }
            return;
        };
        let Some(p) = self.peers.get_mut(&key) else {
            self.count_rx(datagram.len());
            self.counters.drop_unknown_index += 1;
            return;
        };
        p.tunnel.counters.rx_datagrams += 1;
        p.tunnel.counters.rx_bytes += datagram.len() as u64;
        let control = p
            .tunnel
            .handle_transport(now, Arrival::From(from), datagram, &mut self.out);
        // A session may have been promoted (next -> current), which can
        // drop the previous one.
        self.reindex(&key);
        if control == Some(Control::CLOSE) {
            self.remove_peer(&key);
        }
    }

    /// Sets the running totals of what the daemon dropped before the core
    /// (reported in `status()`).
    pub fn set_intake_drops(&mut self, drops: IntakeDrops) {
        self.intake = drops;
    }

    fn handle_init(&mut self, now: Instant, from: SocketAddr, datagram: &[u8], under_load: bool) {
        match self
            .responder
            .gate_init(datagram, from, under_load, &mut self.rng, now)
        {
            Ok(Gate::Proceed) => {}
            Ok(Gate::CookieReply(reply)) => {
                self.counters.handshake_cookie += 1;
                self.transmit_raw(from, reply);
                return;
            }
            Err(e) => {
                // A wrong MAC1 is also how a client configured with
                // another server key shows up: recorded for the log.
                self.note_rejection(now, from, &e, None);
                self.count_handshake_error(e);
                return;
            }
        }
        if under_load && !self.limiter.allow(from.ip(), now) {
            self.counters.handshake_rate_limited += 1;
            return;
        }
        let admitted = &self.admitted;
        let rejected_key = std::cell::Cell::new(None);
        let result = self.responder.read_init(
            datagram,
            |k| {
                let known = admitted.contains_key(k);
                if !known {
                    rejected_key.set(Some(*k));
                }
                known
            },
            &mut self.rng,
            now,
        );
        if let Err(e) = &result {
            self.note_rejection(now, from, e, rejected_key.get());
        }
        let pending = match result {
            Ok(p) => p,
            Err(e) => {
                self.count_handshake_error(e);
                return;
            }
        };
        let key = *pending.client();
        let hello = match ClientHello::parse(pending.payload()) {
            Ok(h) => h,
            Err(e) => {
                if let HelloError::Version { got } = e {
                    self.note_reason(now, from, RejectReason::Version { got });
                }
                self.counters.handshake_failed += 1;
                return;
            }
        };
        if self.by_index.contains_key(&pending.local_index()) {
            // Index collision (1 in 2^32 per live session): the client
            // retries with a new handshake.
            self.counters.handshake_failed += 1;
            return;
        }
        let Some(adm) = self.admitted.get(&key).cloned() else {
            self.counters.handshake_unknown_client += 1;
            return;
        };
        let rekey = self
            .peers
            .get(&key)
            .is_some_and(|p| p.conn_id == hello.conn_id);
        let epoch = match self.peers.get(&key) {
            Some(p) if rekey => p.epoch,
            _ => self.rng.next_u64(),
        };
        let params = TunnelParams {
            address: adm.address,
            prefix_len: self.cfg.network.prefix_len(),
            gateway: self.cfg.network.gateway(),
            mtu: self.cfg.conn.inner_mtu,
        };
        let reply = ServerHello { epoch, params }.to_bytes();
        let accepted = match pending.accept(&reply, now) {
            Ok(a) => a,
            Err(_) => {
                self.counters.handshake_failed += 1;
                return;
            }
        };
        if !rekey {
            // New connection (or the client restarted): fresh state.
            if self.peers.contains_key(&key) {
                self.remove_peer_quietly(&key);
            }
            let tunnel = Tunnel::new(Role::Server, Some(key), &self.cfg.conn, Some(adm.address));
            self.peers.insert(
                key,
                Peer {
                    tunnel,
                    conn_id: hello.conn_id,
                    epoch,
                    address: adm.address,
                    indices: Vec::new(),
                    connected_at: now,
                },
            );
            self.out.push(Output::Event(Event::PeerConnected {
                peer: key,
                address: adm.address,
            }));
        }
        let p = self.peers.get_mut(&key).expect("inserted above");
        p.tunnel.install(accepted.session);
        if !rekey {
            p.tunnel.arm_startup_probes(now);
        }
        p.tunnel.counters.handshakes += 1;
        p.tunnel.last_rx = Some(now);
        self.reindex(&key);
        let len = accepted.response.len();
        if self.transmit_raw(from, accepted.response) {
            if let Some(p) = self.peers.get_mut(&key) {
                p.tunnel.count_handshake_tx(None, from, len);
            }
        }
    }

    /// Sorts a refused initiation into its counter: noise (wrong MAC1,
    /// impossible length or type), an unknown key, a replay or flood, or a
    /// real failure.
    fn count_handshake_error(&mut self, e: HandshakeError) {
        let c = &mut self.counters;
        match e {
            HandshakeError::BadMac
            | HandshakeError::Truncated
            | HandshakeError::TooLong
            | HandshakeError::BadType => c.handshake_bad_mac += 1,
            HandshakeError::UnknownClient => c.handshake_unknown_client += 1,
            HandshakeError::Replay | HandshakeError::Flood => c.handshake_replay += 1,
            _ => c.handshake_failed += 1,
        }
    }

    /// Queues a handshake message (response or cookie reply) to `dest`;
    /// false if the output queue was full.
    fn transmit_raw(&mut self, dest: SocketAddr, bytes: Vec<u8>) -> bool {
        let len = bytes.len() as u64;
        let queued = self.out.push(Output::Transmit(Transmit {
            path: None,
            dest,
            bytes,
        }));
        if queued {
            self.counters.tx_datagrams += 1;
            self.counters.tx_bytes += len;
        }
        queued
    }

    /// Makes `by_index` match the sessions `key` holds.
    fn reindex(&mut self, key: &PublicKey) {
        let Some(p) = self.peers.get_mut(key) else {
            return;
        };
        let live: Vec<u32> = p.tunnel.sessions.local_indices().collect();
        if live == p.indices {
            return;
        }
        for i in &p.indices {
            if self.by_index.get(i) == Some(key) {
                self.by_index.remove(i);
            }
        }
        for &i in &live {
            self.by_index.insert(i, *key);
        }
        p.indices = live;
    }

    fn remove_peer_quietly(&mut self, key: &PublicKey) -> Option<Peer> {
        let p = self.peers.remove(key)?;
        for i in &p.indices {
            if self.by_index.get(i) == Some(key) {
                self.by_index.remove(i);
            }
        }
        // Keep what it counted.
        self.counters.add(&p.tunnel.counters);
        Some(p)
    }

    fn remove_peer(&mut self, key: &PublicKey) {
        if let Some(p) = self.remove_peer_quietly(key) {
            self.out.push(Output::Event(Event::PeerDisconnected {
                peer: *key,
                address: p.address,
            }));
        }
    }

    /// One inner IP packet from the TUN device: sent to the client whose
    /// address is its destination, or dropped and counted.
    pub fn send_packet(&mut self, now: Instant, packet: &[u8]) {
        let Some(dst) = ipv4_destination(packet) else {
            self.counters.drop_not_ipv4 += 1;
            return;
        };
        let peer = self
            .by_address
            .get(&dst)
            .and_then(|k| self.peers.get_mut(k));
        match peer {
            Some(p) => p.tunnel.send_packet(now, packet, &mut self.out),
            None => self.counters.drop_no_route += 1,
        }
    }

    /// Runs due timers of every client. Extra calls are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        let idle = self.cfg.peer_idle_timeout;
        let mut gone = Vec::new();
        let keys: Vec<PublicKey> = self.peers.keys().copied().collect();
        for key in keys {
            let Some(p) = self.peers.get_mut(&key) else {
                continue;
            };
            p.tunnel.handle_timeout(now, &mut self.out);
            let last = p.tunnel.last_rx.unwrap_or(p.connected_at);
            if now >= last + idle {
                gone.push(key);
            }
            self.reindex(&key);
        }
        for key in gone {
            self.remove_peer(&key);
        }
    }

    /// When `handle_timeout` next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let idle = self.cfg.peer_idle_timeout;
        self.peers
            .values()
            .flat_map(|p| {
                let last = p.tunnel.last_rx.unwrap_or(p.connected_at);
                [p.tunnel.poll_timeout(), Some(last + idle)]
            })
            .flatten()
            .min()
    }

    /// The next output: a datagram to send, an inner packet for the TUN
    /// device, or an event.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop()
    }

    pub fn status(&self, now: Instant) -> ServerStatus {
        let mut counters = self.counters.clone();
        counters.drop_output_overflow += self.out.overflow;
        counters.drop_handshake_queue += self.intake.handshake_queue;
        counters.drop_stale += self.intake.stale;
        counters.drop_kernel_rxq += self.intake.kernel_rxq;
        counters.drop_kernel_handshake += self.intake.kernel_handshake;
        counters.rx_datagrams += self.intake.malformed;
        counters.rx_bytes += self.intake.malformed_bytes;
        counters.drop_malformed += self.intake.malformed;
        for p in self.peers.values() {
            counters.add(&p.tunnel.counters);
        }
        let peers = self
            .peers
            .iter()
            .map(|(key, p)| PeerStatus {
                key: *key,
                name: self
                    .admitted
                    .get(key)
                    .map(|a| a.name.clone())
                    .unwrap_or_default(),
                address: p.address,
                tunnel: p.tunnel.status(now),
            })
            .collect();
        ServerStatus { counters, peers }
    }
}
