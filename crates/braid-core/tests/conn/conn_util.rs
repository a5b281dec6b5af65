//! An in-memory client/server pair for `braid_core::conn`, in the style of
//! quinn-proto's `Pair`: datagrams travel over simulated paths (rate,
//! delay, blackhole switch) modelled by `braid-net`, the link model the
//! simulator shares, time jumps to the next event or wake-up, and tests
//! read like scripts. Deterministic: in-flight datagrams are ordered
//! by `(arrival time, id)` and all randomness comes from one seed.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};

use braid_core::conn::{
    ClientEntry, ConnConfig, Connection, Endpoint, Event, Ipv4Net, Output, Server, ServerConfig,
    Transmit,
};
use braid_core::crypto::{PrivateKey, PublicKey};
use braid_core::path::PathId;
use braid_core::time::{Duration, Instant};
use braid_net::{Link, LinkParams};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Wall clock at `Instant::ZERO` for handshake timestamps.
pub const UNIX_AT_ZERO: u64 = 1_700_000_000_000_000_000;
/// Size of the dummy inner packets (distinct from any control datagram
/// size, so the blackhole can count data it swallowed).
pub const INNER_LEN: usize = 200;
/// Outer UDP payload of one data datagram: transport header + 9 + inner + 16.
pub const DATA_DATAGRAM_LEN: usize =
    braid_core::crypto::packet::TRANSPORT_HEADER_LEN + 9 + INNER_LEN + 16;

pub fn server_addr() -> SocketAddr {
    "192.0.2.1:51820".parse().unwrap()
}

pub fn client_addr(path: usize) -> SocketAddr {
    SocketAddr::new(
        Ipv4Addr::new(10, 0, path as u8, 2).into(),
        4000 + path as u16,
    )
}

/// One simulated path, both directions alike.
#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub rate_bps: f64,
    pub delay: Duration,
}

impl LinkSpec {
    /// The shared model's parameters of one direction: no queue limit, no
    /// random loss.
    fn params(&self) -> LinkParams {
        LinkParams::new(
            self.rate_bps / 1e6,
            self.delay.as_secs_f64() * 1e3,
            u64::MAX,
        )
    }
}

#[derive(Clone, Debug)]
struct LinkState {
    spec: LinkSpec,
    /// Drop everything in both directions.
    blackhole: bool,
    /// Drop each datagram with this probability, both directions
    /// (Bernoulli, from the pair's seeded RNG).
    loss: f64,
    /// The two directions (up, down).
    dirs: [Link; 2],
}

impl LinkState {
    fn new(spec: LinkSpec, seed: u64, start: Instant) -> Self {
        let p = spec.params();
        LinkState {
            dirs: [
                Link::new(&p, seed * 2, start),
                Link::new(&p, seed * 2 + 1, start),
            ],
            spec,
            blackhole: false,
            loss: 0.0,
        }
    }
}

#[derive(Clone, Debug)]
enum Flight {
    ToServer { from: SocketAddr, bytes: Vec<u8> },
    ToClient { path: PathId, bytes: Vec<u8> },
}

/// What the blackhole swallowed: (time, path, direction 0 = up, datagram length).
pub type Swallowed = (Instant, usize, u8, usize);

/// What a [`Fault`] does to one datagram.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    Deliver,
    Drop,
    /// Arrives this much later than the link would deliver it.
    Delay(Duration),
    /// Arrives as usual, and a copy this much later.
    Duplicate(Duration),
}

/// Decides the fate of each datagram after the link carried it: given the
/// time, the path, the direction (0 = up) and the bytes. Tests use it to
/// lose, reorder and duplicate chosen datagrams (e.g. only handshakes).
pub type Fault = Box<dyn FnMut(Instant, usize, u8, &[u8]) -> Fate>;

pub struct Pair {
    pub now: Instant,
    pub client: Connection,
    pub server: Server,
    pub client_key: PrivateKey,
    pub server_pub: PublicKey,
    links: Vec<LinkState>,
    flights: BTreeMap<(Instant, u64), Flight>,
    next_id: u64,
    /// Inner packets delivered at the client (downlink) and server (uplink).
    pub client_rx: Vec<Vec<u8>>,
    pub server_rx: Vec<Vec<u8>>,
    pub client_events: Vec<(Instant, Event)>,
    pub server_events: Vec<(Instant, Event)>,
    pub swallowed: Vec<Swallowed>,
    /// Datagrams dropped by random loss (`set_loss`).
    pub lost_random: u64,
    /// Every datagram the client sent, if capturing: (path, bytes).
    pub capture: Option<Vec<(usize, Vec<u8>)>>,
    /// What the server's daemon would say about load (passed to
    /// `handle_datagram_loaded`).
    pub server_under_load: bool,
    /// What the server sent to addresses other than the client's paths
    /// (answers to injected datagrams).
    pub to_others: Vec<Transmit>,
    /// Applied to every datagram the links deliver, if set.
    pub fault: Option<Fault>,
    rng: ChaCha20Rng,
}

pub fn keys(seed: u64) -> (ChaCha20Rng, PrivateKey, PrivateKey) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let c = PrivateKey::generate(&mut rng);
    let s = PrivateKey::generate(&mut rng);
    (rng, c, s)
}

pub fn three_links() -> Vec<LinkSpec> {
    vec![
        LinkSpec {
            rate_bps: 10e6,
            delay: Duration::from_millis(10),
        },
        LinkSpec {
            rate_bps: 5e6,
            delay: Duration::from_millis(25),
        },
        LinkSpec {
            rate_bps: 3e6,
            delay: Duration::from_millis(40),
        },
    ]
}

pub fn server_config(client_pub: PublicKey, conn: ConnConfig) -> ServerConfig {
    let mut cfg = ServerConfig::new(
        Ipv4Net::parse("10.77.0.0/24").unwrap(),
        vec![ClientEntry {
            name: "laptop".into(),
            key: client_pub,
            address: None,
        }],
    );
    cfg.conn = conn;
    cfg
}

impl Pair {
    /// Client and server with default configurations over `links`.
    pub fn new(seed: u64, links: Vec<LinkSpec>) -> Pair {
        Self::with_config(seed, links, ConnConfig::default(), ConnConfig::default())
    }

    pub fn with_config(
        seed: u64,
        links: Vec<LinkSpec>,
        client_cfg: ConnConfig,
        server_cfg: ConnConfig,
    ) -> Pair {
        let (mut rng, ck, sk) = keys(seed);
        let server_pub = sk.public_key();
        let server = Server::new(server_config(ck.public_key(), server_cfg), sk, &mut rng).unwrap();
        Self::from_parts(rng, ck, server_pub, server, links, client_cfg)
    }

    /// A pair from a ready server and the client's view of the server key
    /// (tests of wrong keys pass a mismatching one).
    pub fn from_parts(
        mut rng: ChaCha20Rng,
        client_key: PrivateKey,
        server_pub: PublicKey,
        server: Server,
        links: Vec<LinkSpec>,
        client_cfg: ConnConfig,
    ) -> Pair {
        let paths: Vec<(PathId, SocketAddr)> = (0..links.len())
            .map(|i| (PathId(i as u8), server_addr()))
            .collect();
        let client = Connection::client(
            client_cfg,
            client_key.clone(),
            server_pub,
            &paths,
            UNIX_AT_ZERO,
            Instant::ZERO,
            &mut rng,
        )
        .unwrap();
        let mut p = Pair {
            now: Instant::ZERO,
            client,
            server,
            client_key,
            server_pub,
            links: links
                .into_iter()
                .enumerate()
                .map(|(i, spec)| LinkState::new(spec, i as u64, Instant::ZERO))
                .collect(),
            flights: BTreeMap::new(),
            next_id: 0,
            client_rx: Vec::new(),
            server_rx: Vec::new(),
            client_events: Vec::new(),
            server_events: Vec::new(),
            swallowed: Vec::new(),
            lost_random: 0,
            capture: None,
            server_under_load: false,
            to_others: Vec::new(),
            fault: None,
            rng,
        };
        p.drain();
        p
    }

    /// Replaces the client by a new one (a client restart), same key.
    pub fn restart_client(&mut self, cfg: ConnConfig) {
        let paths: Vec<(PathId, SocketAddr)> = (0..self.links.len())
            .map(|i| (PathId(i as u8), server_addr()))
            .collect();
        self.client = Connection::client(
            cfg,
            self.client_key.clone(),
            self.server_pub,
            &paths,
            UNIX_AT_ZERO,
            self.now,
            &mut self.rng,
        )
        .unwrap();
        self.drain();
    }

    pub fn set_blackhole(&mut self, path: usize, on: bool) {
        self.links[path].blackhole = on;
    }

    /// Random loss on a path: each datagram, either way, is dropped with
    /// probability `p` after it was serialised (it used the link's time).
    pub fn set_loss(&mut self, path: usize, p: f64) {
        self.links[path].loss = p;
    }

    /// Adds a link (the caller adds the path to the client).
    pub fn add_link(&mut self, spec: LinkSpec) -> usize {
        let i = self.links.len() as u64;
        self.links.push(LinkState::new(spec, i, self.now));
        self.links.len() - 1
    }

    fn path_of_client_addr(&self, a: SocketAddr) -> Option<usize> {
        (0..self.links.len()).find(|&i| client_addr(i) == a)
    }

    fn launch(&mut self, path: usize, dir: u8, flight: Flight, len: usize) {
        let link = &mut self.links[path];
        if link.blackhole {
            self.swallowed.push((self.now, path, dir, len));
            return;
        }
        // The model counts IP bytes: the UDP payload plus 28.
        let Some(at) = link.dirs[dir as usize]
            .offer(self.now, len as u64 + 28, false)
            .delivered_at()
        else {
            return; // the model has no loss or limit here; kept for clarity
        };
        if link.loss > 0.0 {
            let u = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            if u < link.loss {
                self.lost_random += 1;
                return;
            }
        }
        let fate = match (self.fault.as_mut(), &flight) {
            (None, _) => Fate::Deliver,
            (Some(f), Flight::ToServer { bytes, .. } | Flight::ToClient { bytes, .. }) => {
                f(self.now, path, dir, bytes)
            }
        };
        match fate {
            Fate::Deliver => {}
            Fate::Drop => return,
            Fate::Delay(d) => {
                self.flights.insert((at + d, self.next_id), flight);
                self.next_id += 1;
                return;
            }
            Fate::Duplicate(d) => {
                self.flights.insert((at + d, self.next_id), flight.clone());
                self.next_id += 1;
            }
        }
        self.flights.insert((at, self.next_id), flight);
        self.next_id += 1;
    }

    fn client_transmit(&mut self, t: Transmit) {
        let path = t.path.expect("client transmits name their path").0 as usize;
        assert_eq!(t.dest, server_addr());
        if let Some(c) = self.capture.as_mut() {
            c.push((path, t.bytes.clone()));
        }
        let len = t.bytes.len();
        let flight = Flight::ToServer {
            from: client_addr(path),
            bytes: t.bytes,
        };
        self.launch(path, 0, flight, len);
    }

    fn server_transmit(&mut self, t: Transmit) {
        let Some(path) = self.path_of_client_addr(t.dest) else {
            // Answers to datagrams injected from other addresses.
            self.to_others.push(t);
            return;
        };
        let len = t.bytes.len();
        let flight = Flight::ToClient {
            path: PathId(path as u8),
            bytes: t.bytes,
        };
        self.launch(path, 1, flight, len);
    }

    /// Routes every pending output of both ends.
    pub fn drain(&mut self) {
        loop {
            let mut any = false;
            // Through the driving contract, as the daemon and the simulator.
            while let Some(o) = Endpoint::poll_output(&mut self.client) {
                any = true;
                match o {
                    Output::Transmit(t) => self.client_transmit(t),
                    Output::Deliver(p) => self.client_rx.push(p),
                    Output::Event(e) => self.client_events.push((self.now, e)),
                }
            }
            while let Some(o) = Endpoint::poll_output(&mut self.server) {
                any = true;
                match o {
                    Output::Transmit(t) => self.server_transmit(t),
                    Output::Deliver(p) => self.server_rx.push(p),
                    Output::Event(e) => self.server_events.push((self.now, e)),
                }
            }
            if !any {
                break;
            }
        }
    }

    /// Delivers a datagram to the server now, as if from path `path`.
    pub fn inject_to_server(&mut self, path: usize, bytes: &[u8]) {
        self.inject_from(client_addr(path), bytes);
    }

    /// Delivers a datagram to the server now from `from`.
    pub fn inject_from(&mut self, from: SocketAddr, bytes: &[u8]) {
        Endpoint::handle_datagram_loaded(
            &mut self.server,
            self.now,
            from,
            bytes,
            self.server_under_load,
        );
        self.drain();
    }

    /// Advances to the next event no later than `deadline`; false when
    /// there is none before it (time is then `deadline`).
    fn step(&mut self, deadline: Instant) -> bool {
        let next = [
            self.flights.keys().next().map(|k| k.0),
            Endpoint::poll_timeout(&self.client),
            Endpoint::poll_timeout(&self.server),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next.filter(|&t| t <= deadline) else {
            self.now = self.now.max(deadline);
            return false;
        };
        self.now = self.now.max(next);
        while let Some(entry) = self.flights.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            match entry.remove() {
                Flight::ToServer { from, bytes } => Endpoint::handle_datagram_loaded(
                    &mut self.server,
                    self.now,
                    from,
                    &bytes,
                    self.server_under_load,
                ),
                Flight::ToClient { path, bytes } => {
                    Endpoint::handle_datagram(&mut self.client, self.now, path, &bytes)
                }
            }
            self.drain();
        }
        if self.client.poll_timeout().is_some_and(|t| t <= self.now) {
            self.client.handle_timeout(self.now);
        }
        if self.server.poll_timeout().is_some_and(|t| t <= self.now) {
            self.server.handle_timeout(self.now);
        }
        self.drain();
        true
    }

    /// Runs until `t`. Panics if the endpoints spin without time passing.
    pub fn run_until(&mut self, t: Instant) {
        let mut spins = 0u32;
        let mut last = self.now;
        while self.step(t) {
            if self.now == last {
                spins += 1;
                assert!(spins < 10_000, "endpoints spin at {:?}", self.now);
            } else {
                spins = 0;
                last = self.now;
            }
        }
    }

    pub fn run_for(&mut self, d: Duration) {
        let t = self.now + d;
        self.run_until(t);
    }

    pub fn client_established(&self) -> bool {
        self.client_events
            .iter()
            .any(|(_, e)| matches!(e, Event::Established { .. }))
    }

    /// The client's tunnel address once established.
    pub fn client_address(&self) -> Ipv4Addr {
        self.client.params().expect("established").address
    }

    /// Sends numbered packet `n` up (client to the internet) and down.
    pub fn send_both(&mut self, n: u64) {
        let me = self.client_address();
        let far = Ipv4Addr::new(198, 51, 100, 7);
        self.client.send_packet(self.now, &dummy(me, far, n));
        self.server.send_packet(self.now, &dummy(far, me, n));
        self.drain();
    }

    /// Sends numbered packet `n` of `len` bytes up only.
    pub fn send_up_sized(&mut self, n: u64, len: usize) {
        self.send_sized(true, n, len);
    }

    /// Sends numbered packet `n` of `len` bytes down only (the internet to
    /// the client).
    pub fn send_down_sized(&mut self, n: u64, len: usize) {
        self.send_sized(false, n, len);
    }

    /// Sends numbered packet `n` of `len` bytes one way: up from the
    /// client, or down from the server.
    fn send_sized(&mut self, up: bool, n: u64, len: usize) {
        let me = self.client_address();
        let far = Ipv4Addr::new(198, 51, 100, 7);
        if up {
            self.client
                .send_packet(self.now, &dummy_sized(me, far, n, len));
        } else {
            self.server
                .send_packet(self.now, &dummy_sized(far, me, n, len));
        }
        self.drain();
    }

    /// Sends packets `range` both ways, one each way every `gap`.
    pub fn stream(&mut self, range: std::ops::Range<u64>, gap: Duration) {
        for n in range {
            self.send_both(n);
            self.run_for(gap);
        }
    }
}

/// A dummy IPv4/UDP packet of [`INNER_LEN`] bytes numbered `n`.
pub fn dummy(src: Ipv4Addr, dst: Ipv4Addr, n: u64) -> Vec<u8> {
    let mut p = vec![0u8; INNER_LEN];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(INNER_LEN as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    p[28..36].copy_from_slice(&n.to_be_bytes());
    p
}

/// A dummy IPv4/UDP packet of `len` (at least 36) bytes numbered `n`.
pub fn dummy_sized(src: Ipv4Addr, dst: Ipv4Addr, n: u64, len: usize) -> Vec<u8> {
    let mut p = dummy(src, dst, n);
    p.resize(len.max(36), 0);
    let total = p.len() as u16;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p
}

/// The number in a dummy packet.
pub fn number(p: &[u8]) -> u64 {
    u64::from_be_bytes(p[28..36].try_into().unwrap())
}

pub fn numbers(ps: &[Vec<u8>]) -> Vec<u64> {
    ps.iter().map(|p| number(p)).collect()
}

/// `v` milliseconds of simulated time.
pub fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Fraction of `0..n` missing from `got`, and whether `got` is strictly
/// increasing (in order, no duplicates).
pub fn residual(got: &[u64], n: u64) -> (f64, bool) {
    let increasing = got.windows(2).all(|w| w[1] > w[0]);
    let have = got.iter().filter(|&&x| x < n).count() as f64;
    (1.0 - have / n as f64, increasing)
}
