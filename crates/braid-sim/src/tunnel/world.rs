//! The event loop of the tunnel lab modes: TCP through the shipped tunnel
//! (TCP directly over the paths is in `direct.rs`).
//!
//! Links are `braid_net::Link`s, pure functions of their arrivals, so the
//! only events are datagrams arriving; timers are the endpoints' and the
//! TCP model's own `poll_timeout`s, and the loop jumps to the earliest.

use std::collections::{BTreeMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use braid_core::conn::{
    ClientEntry, ConnConfig, Connection, Endpoint, Event, Ipv4Net, Output, Server, ServerConfig,
};
use braid_core::crypto::PrivateKey;
use braid_core::path::PathId;
use braid_core::sched::SchedulerKind;
use braid_core::time::{Duration, Instant};
use braid_lab::config::{Direction, LabConfig};
use braid_net::Link;
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::{ChaCha20Rng, ChaCha8Rng};
use sha2::{Digest, Sha256};

use super::cross::CrossFlow;
use super::inner::{
    decode_ack, decode_segment, encode_ack, encode_segment, fill_payload, opening_of, tag_of,
};
use super::{lab_tcp, link_params, link_seed, LabResult, LabRunOptions};
use crate::event::EventQueue;
use crate::tcp::{Segment, TcpConfig, TcpReceiver, TcpSender, TcpSenderStats};

/// Wall clock at `Instant::ZERO` for handshake timestamps.
const UNIX_AT_ZERO: u64 = 1_700_000_000_000_000_000;
/// The far end of the upload (the lab's iperf3 server behind the proxy).
const FAR: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);

fn server_addr() -> SocketAddr {
    "192.0.2.1:51820".parse().unwrap()
}

fn client_addr(path: usize) -> SocketAddr {
    SocketAddr::new(
        Ipv4Addr::new(10, 0, path as u8, 2).into(),
        4000 + path as u16,
    )
}

fn path_of(addr: SocketAddr) -> Option<usize> {
    let i = usize::from(addr.port().checked_sub(4000)?);
    (addr.ip() == IpAddr::from(Ipv4Addr::new(10, 0, i as u8, 2))).then_some(i)
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Payload delivered in order within the measured interval, and its
    /// length.
    pub bytes: u64,
    pub seconds: f64,
    /// With `LabRunOptions::from_s`: payload delivered in order from then
    /// to the end, and that interval's length.
    pub from: Option<(u64, f64)>,
    /// IP bytes each uplink delivered during the transfer, and its length.
    pub path_bytes: Vec<u64>,
    /// With `LabRunOptions::from_s`: IP bytes each uplink delivered from
    /// then to the end (the interval of `from`).
    pub path_from_bytes: Option<Vec<u64>>,
    pub transfer_seconds: f64,
    pub tcp: TcpSenderStats,
    pub segments_sent: u64,
    pub segments_arrived: u64,
    /// Segments still unacknowledged at the end (possibly in flight).
    pub segments_outstanding: u64,
    pub link_drops: u64,
    pub packets: u64,
    pub wall_seconds: f64,
    pub sim_seconds: f64,
    /// With `LabRunOptions::cross_tcp`: the competing flow's goodput.
    pub cross_tcp_mbps: Option<f64>,
}

impl Outcome {
    pub fn goodput_mbps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.seconds.max(1e-9) / 1e6
    }

    pub(super) fn into_result(self, mode: String, sum_mbps: f64) -> LabResult {
        let g = self.goodput_mbps();
        let from = self.from.map(|(b, s)| b as f64 * 8.0 / s.max(1e-9) / 1e6);
        LabResult {
            mode,
            goodput_mbps: g,
            share_of_sum: g / sum_mbps,
            goodput_from_mbps: from,
            share_from: from.map(|f| f / sum_mbps),
            path_mbps: self
                .path_bytes
                .iter()
                .map(|&b| b as f64 * 8.0 / self.transfer_seconds.max(1e-9) / 1e6)
                .collect(),
            path_from_mbps: self
                .path_from_bytes
                .as_ref()
                .zip(self.from)
                .map(|(v, (_, s))| {
                    v.iter()
                        .map(|&b| b as f64 * 8.0 / s.max(1e-9) / 1e6)
                        .collect()
                }),
            retransmits: self.tcp.retransmits,
            dupacks: self.tcp.dupacks,
            timeouts: self.tcp.timeouts,
            fast_retransmits: self.tcp.fast_retransmits,
            residual_loss: 1.0 - self.segments_arrived as f64 / (self.segments_sent.max(1)) as f64,
            link_drops: self.link_drops,
            speed: self.sim_seconds / self.wall_seconds.max(1e-9),
            packets: self.packets,
            cross_tcp_mbps: self.cross_tcp_mbps,
        }
    }
}

pub(super) fn links(cfg: &LabConfig, dir: Direction) -> Vec<Link> {
    let seed = cfg.seed.unwrap_or(1);
    (0..cfg.paths.len())
        .map(|i| {
            Link::new(
                &link_params(cfg, i, dir),
                link_seed(seed, i, dir),
                Instant::ZERO,
            )
        })
        .collect()
}

pub(crate) enum Flight {
    ToServer(usize, Vec<u8>),
    ToClient(usize, Vec<u8>),
}

/// Datagram faults a swarm world adds after the links: extra delay
/// (reordering), duplicates and corrupted bytes. All zero for lab files.
#[derive(Clone, Debug, Default)]
pub(crate) struct Faults {
    pub reorder: f64,
    pub reorder_max: Duration,
    pub duplicate: f64,
    pub corrupt: f64,
}

/// What builds a [`TunnelWorld`].
pub(crate) struct TunnelSetup {
    pub up: Vec<Link>,
    pub down: Vec<Link>,
    pub conn: ConnConfig,
    pub tcp: TcpConfig,
    /// Packets to transfer, or forever.
    pub total_packets: Option<u64>,
    pub seed: u64,
    pub faults: Faults,
}

/// End-to-end checks of what the tunnel delivers (the swarm's
/// invariants): every inner packet at most once, payloads intact, and the
/// in-order byte stream's SHA-256.
pub(crate) struct Check {
    pub seen_up: HashSet<u64>,
    pub seen_down: HashSet<u64>,
    pub duplicates: u64,
    pub corrupted: u64,
    /// Out-of-order payloads not yet hashed, by packet number.
    pub pending: BTreeMap<u64, Vec<u8>>,
    pub hashed_upto: u64,
    pub hasher: Sha256,
    /// When the hashed prefix last grew.
    pub progress: Vec<Instant>,
}

impl Check {
    pub fn new() -> Self {
        Check {
            seen_up: HashSet::new(),
            seen_down: HashSet::new(),
            duplicates: 0,
            corrupted: 0,
            pending: BTreeMap::new(),
            hashed_upto: 0,
            hasher: Sha256::new(),
            progress: Vec::new(),
        }
    }
}

/// TCP through the shipped tunnel.
pub(crate) struct TunnelWorld {
    pub now: Instant,
    pub client: Connection,
    pub server: Server,
    pub up: Vec<Link>,
    pub down: Vec<Link>,
    flights: EventQueue<Flight>,
    pub tx: TcpSender,
    pub rx: TcpReceiver,
    pub mss: u32,
    /// The client's tunnel address, once established.
    me: Option<Ipv4Addr>,
    pub started: Option<Instant>,
    segs: Vec<Segment>,
    buf: Vec<u8>,
    pub pattern: Vec<u8>,
    pub arrived: u64,
    pub packets: u64,
    next_tag: u64,
    faults: Faults,
    fault_rng: ChaCha8Rng,
    pub check: Option<Check>,
    /// A competing TCP flow on one path, started when the tunnel is
    /// established.
    pub(crate) cross: Option<CrossFlow>,
    /// How long after the tunnel is established the transfer starts (the
    /// competing flow's head start, `LabRunOptions::cross_lead_s`, or the
    /// tunnel's idle time before it, `LabRunOptions::idle_s`).
    lead: Duration,
    /// When the tunnel was established.
    established: Option<Instant>,
    /// The longest the transfer waits after establishment for every path
    /// to be up (`LabRunOptions::wait_paths_s`); zero: it does not wait.
    wait_paths: Duration,
    /// Whether the transfer opens with a SYN and SYN-ACK
    /// (`LabRunOptions::handshake`).
    handshake: bool,
    /// The SYN: when it was last sent and how often in all.
    syn: Option<(Instant, u32)>,
}

impl TunnelWorld {
    fn new(cfg: &LabConfig, kind: SchedulerKind, opts: &LabRunOptions) -> Self {
        let mut w = Self::build(TunnelSetup {
            up: links(cfg, Direction::Up),
            down: links(cfg, Direction::Down),
            conn: ConnConfig {
                scheduler: kind,
                ..ConnConfig::default()
            },
            tcp: lab_tcp(u32::from(braid_core::conn::DEFAULT_INNER_MTU), opts),
            total_packets: None,
            seed: opts.seed,
            faults: Faults::default(),
        });
        w.cross = CrossFlow::for_run(opts);
        if w.cross.is_some() {
            w.lead = secs(opts.cross_lead_s);
        }
        w.wait_paths = secs(opts.wait_paths_s);
        w.lead = w.lead.max(secs(opts.idle_s));
        w.handshake = opts.handshake;
        w
    }

    pub(crate) fn build(setup: TunnelSetup) -> Self {
        let mut rng = ChaCha20Rng::seed_from_u64(setup.seed);
        let ck = PrivateKey::generate(&mut rng);
        let sk = PrivateKey::generate(&mut rng);
        let conn = setup.conn;
        let mut scfg = ServerConfig::new(
            Ipv4Net::parse("10.77.0.0/24").expect("valid network"),
            vec![ClientEntry {
                name: "lab".into(),
                key: ck.public_key(),
                address: None,
            }],
        );
        scfg.conn = conn.clone();
        let server_pub = sk.public_key();
        let server = Server::new(scfg, sk, &mut rng).expect("valid server configuration");
        let paths: Vec<(PathId, SocketAddr)> = (0..setup.up.len())
            .map(|i| (PathId(i as u8), server_addr()))
            .collect();
        let client = Connection::client(
            conn,
            ck,
            server_pub,
            &paths,
            UNIX_AT_ZERO,
            Instant::ZERO,
            &mut rng,
        )
        .expect("valid client configuration");
        let tcp = setup.tcp;
        TunnelWorld {
            now: Instant::ZERO,
            client,
            server,
            up: setup.up,
            down: setup.down,
            flights: EventQueue::default(),
            tx: TcpSender::new(tcp.clone(), 0, setup.total_packets),
            rx: TcpReceiver::new(&tcp, 0),
            mss: tcp.mss_bytes,
            me: None,
            started: None,
            segs: Vec::new(),
            buf: Vec::new(),
            pattern: (0..=250u8).collect(),
            arrived: 0,
            packets: 0,
            next_tag: 1,
            faults: setup.faults,
            fault_rng: ChaCha8Rng::seed_from_u64(setup.seed ^ 0xfa17),
            check: None,
            cross: None,
            lead: Duration::ZERO,
            established: None,
            wait_paths: Duration::ZERO,
            handshake: false,
            syn: None,
        }
    }

    /// When the transfer is to start: `lead` after the tunnel is
    /// established, and not before every path is up or `wait_paths` has
    /// passed. `None` once it has started or before establishment.
    fn transfer_at(&self) -> Option<Instant> {
        if self.syn.is_some() {
            return None;
        }
        match (self.started, self.established) {
            (None, Some(e)) if self.wait_paths > Duration::ZERO && !self.all_paths_up() => {
                Some(e + self.lead.max(self.wait_paths))
            }
            (None, Some(e)) => Some(e + self.lead),
            _ => None,
        }
    }

    /// Whether every path of the client's tunnel is up.
    fn all_paths_up(&self) -> bool {
        self.client
            .status(self.now)
            .tunnel
            .paths
            .iter()
            .all(|p| p.up)
    }

    /// Starts the inner TCP transfer if it is time: at once, or with the
    /// handshake by sending the SYN (the transfer starts when the SYN-ACK
    /// arrives, `world/handshake.rs`).
    fn start_transfer(&mut self) {
        if self.transfer_at().is_some_and(|t| t <= self.now) {
            if self.handshake {
                self.send_opening(false);
                self.syn = Some((self.now, 1));
                return;
            }
            self.begin();
        }
    }

    fn begin(&mut self) {
        self.started = Some(self.now);
        self.tx.start(self.now, &mut self.segs);
        self.send_segments();
    }

    fn tag(&mut self) -> u64 {
        self.next_tag += 1;
        self.next_tag
    }

    fn send_segments(&mut self) {
        let Some(me) = self.me else { return };
        let segs = std::mem::take(&mut self.segs);
        for s in &segs {
            let tag = self.tag();
            encode_segment(s, self.mss, me, FAR, tag, &self.pattern, &mut self.buf);
            Endpoint::send_packet(&mut self.client, self.now, &self.buf);
        }
        self.segs = segs;
        self.segs.clear();
    }

    fn send_ack(&mut self, ack: &crate::tcp::Ack) {
        let Some(me) = self.me else { return };
        let tag = self.tag();
        encode_ack(ack, self.mss, FAR, me, tag, &mut self.buf);
        Endpoint::send_packet(&mut self.server, self.now, &self.buf);
    }

    fn schedule(&mut self, at: Instant, to_server: bool, path: usize, bytes: Vec<u8>) {
        let f = if to_server {
            Flight::ToServer(path, bytes)
        } else {
            Flight::ToClient(path, bytes)
        };
        self.flights.push(at, f);
    }

    fn launch(&mut self, to_server: bool, path: usize, mut bytes: Vec<u8>) {
        let links = if to_server {
            &mut self.up
        } else {
            &mut self.down
        };
        let Some(link) = links.get_mut(path) else {
            return;
        };
        self.packets += 1;
        let Some(mut at) = link
            .offer(self.now, bytes.len() as u64 + 28, false)
            .delivered_at()
        else {
            return;
        };
        let f = &self.faults;
        if f.reorder > 0.0 || f.duplicate > 0.0 || f.corrupt > 0.0 {
            let r = &mut self.fault_rng;
            if r.gen::<f64>() < f.reorder {
                at += f.reorder_max.mul_f64(r.gen::<f64>());
            }
            if r.gen::<f64>() < f.corrupt && !bytes.is_empty() {
                let i = r.gen_range(0..bytes.len());
                bytes[i] ^= 1 << r.gen_range(0..8);
            }
            if r.gen::<f64>() < f.duplicate {
                let later = at + f.reorder_max.mul_f64(r.gen::<f64>());
                self.schedule(later, to_server, path, bytes.clone());
            }
        }
        self.schedule(at, to_server, path, bytes);
    }

    /// The server delivered inner packet `p`: check it and give it to TCP.
    fn deliver_up(&mut self, p: &[u8]) {
        if opening_of(p) == Some(false) {
            // A SYN, the first or a retransmitted one: answer it.
            self.send_opening(true);
            return;
        }
        let Some((seg, payload)) = decode_segment(p, self.mss, self.rx.rcv_nxt()) else {
            return;
        };
        self.arrived += 1;
        if let Some(c) = self.check.as_mut() {
            if !tag_of(p).is_some_and(|t| c.seen_up.insert(t)) {
                c.duplicates += 1;
            }
            let mut want = vec![0u8; payload.len()];
            fill_payload(&mut want, seg.seq * u64::from(self.mss), &self.pattern);
            if want != payload {
                c.corrupted += 1;
            } else if seg.seq >= c.hashed_upto && c.pending.len() < 1 << 16 {
                c.pending.entry(seg.seq).or_insert_with(|| payload.to_vec());
                let before = c.hashed_upto;
                while let Some(d) = c.pending.remove(&c.hashed_upto) {
                    c.hasher.update(&d);
                    c.hashed_upto += 1;
                }
                if c.hashed_upto > before {
                    c.progress.push(self.now);
                }
            }
        }
        if let Some(ack) = self.rx.on_segment(self.now, &seg) {
            self.send_ack(&ack);
        }
    }

    /// Routes every pending output of both ends.
    fn drain(&mut self) {
        loop {
            let mut any = false;
            while let Some(o) = Endpoint::poll_output(&mut self.client) {
                any = true;
                match o {
                    Output::Transmit(t) => {
                        let path = t.path.map_or(0, |p| usize::from(p.0));
                        self.launch(true, path, t.bytes);
                    }
                    Output::Deliver(p) if opening_of(&p) == Some(true) => {
                        if self.syn.is_some() && self.started.is_none() {
                            self.begin();
                        }
                    }
                    Output::Deliver(p) => {
                        if let Some(c) = self.check.as_mut() {
                            if !tag_of(&p).is_some_and(|t| c.seen_down.insert(t)) {
                                c.duplicates += 1;
                            }
                        }
                        if let Some(ack) = decode_ack(&p, self.mss, self.tx.snd_una()) {
                            self.tx.on_ack(self.now, &ack, &mut self.segs);
                            self.send_segments();
                        }
                    }
                    Output::Event(Event::Established { params }) => {
                        self.me = Some(params.address);
                        if self.established.is_none() {
                            self.established = Some(self.now);
                            if let Some(c) = self.cross.as_mut() {
                                c.start(self.now, &mut self.up);
                            }
                        }
                        self.start_transfer();
                    }
                    Output::Event(_) => {}
                }
            }
            while let Some(o) = Endpoint::poll_output(&mut self.server) {
                any = true;
                match o {
                    Output::Transmit(t) => {
                        if let Some(path) = path_of(t.dest) {
                            self.launch(false, path, t.bytes);
                        }
                    }
                    Output::Deliver(p) => self.deliver_up(&p),
                    Output::Event(_) => {}
                }
            }
            if !any {
                break;
            }
        }
    }

    fn next_time(&self) -> Option<Instant> {
        [
            self.flights.peek_time(),
            Endpoint::poll_timeout(&self.client),
            Endpoint::poll_timeout(&self.server),
            self.tx.poll_timeout(),
            self.rx.poll_timeout(),
            self.cross.as_ref().and_then(CrossFlow::poll_timeout),
            self.transfer_at(),
            self.syn_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    pub(crate) fn run_until(&mut self, until: Instant) {
        let mut spins = 0u32;
        loop {
            self.drain();
            let Some(t) = self.next_time().filter(|&t| t <= until) else {
                self.now = self.now.max(until);
                return;
            };
            if t <= self.now {
                spins += 1;
                assert!(spins < 100_000, "endpoints spin at {:?}", self.now);
            } else {
                spins = 0;
            }
            self.now = self.now.max(t);
            while self.flights.peek_time().is_some_and(|t| t <= self.now) {
                let Some((_, f)) = self.flights.pop() else {
                    break;
                };
                match f {
                    Flight::ToServer(path, b) => {
                        Endpoint::handle_datagram(&mut self.server, self.now, client_addr(path), &b)
                    }
                    Flight::ToClient(path, b) => Endpoint::handle_datagram(
                        &mut self.client,
                        self.now,
                        PathId(path as u8),
                        &b,
                    ),
                }
                self.drain();
            }
            if let Some(c) = self.cross.as_mut() {
                c.advance(self.now, &mut self.up, &mut self.down);
            }
            self.start_transfer();
            self.retry_syn();
            if Endpoint::poll_timeout(&self.client).is_some_and(|t| t <= self.now) {
                Endpoint::handle_timeout(&mut self.client, self.now);
            }
            if Endpoint::poll_timeout(&self.server).is_some_and(|t| t <= self.now) {
                Endpoint::handle_timeout(&mut self.server, self.now);
            }
            if self.tx.poll_timeout().is_some_and(|t| t <= self.now) {
                self.tx.handle_timeout(self.now, &mut self.segs);
                self.send_segments();
            }
            if self.rx.poll_timeout().is_some_and(|t| t <= self.now) {
                if let Some(ack) = self.rx.handle_timeout(self.now) {
                    self.send_ack(&ack);
                }
            }
        }
    }
}

/// Packets `links` dropped for any reason (loss, queue, down, RED).
pub(super) fn link_drops(links: &[Link]) -> u64 {
    links
        .iter()
        .map(|l| l.stats.drops_loss + l.stats.drops_queue + l.stats.drops_down + l.stats.drops_red)
        .sum()
}

pub(super) fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

/// TCP through the shipped tunnel with scheduler `kind`.
pub fn run_tunnel(cfg: &LabConfig, kind: SchedulerKind, opts: &LabRunOptions) -> Outcome {
    let wall = std::time::Instant::now();
    let mut w = TunnelWorld::new(cfg, kind, opts);
    // The handshake: retried every few seconds if lost, so allow a while.
    let mut t = Instant::ZERO;
    let give_up = Instant::from_millis(60_000) + secs(opts.cross_lead_s.max(opts.idle_s));
    while w.started.is_none() && t < give_up {
        t += Duration::from_millis(50);
        w.run_until(t);
    }
    let Some(start) = w.started else {
        return Outcome::default();
    };
    let up0: Vec<u64> = w.up.iter().map(|l| l.stats.delivered_bytes).collect();
    // Byte counts at the interval starts, earliest first.
    let mut marks: Vec<f64> = std::iter::once(opts.omit_s).chain(opts.from_s).collect();
    marks.sort_by(f64::total_cmp);
    let mut at = Vec::new();
    let mut up_from = None;
    for &m in &marks {
        w.run_until(start + secs(m.min(opts.duration_s)));
        at.push((m, w.rx.delivered_bytes()));
        if m == opts.omit_s {
            if let Some(c) = w.cross.as_mut() {
                c.mark_omit(w.now);
            }
        }
        if Some(m) == opts.from_s {
            up_from = Some(
                w.up.iter()
                    .map(|l| l.stats.delivered_bytes)
                    .collect::<Vec<_>>(),
            );
        }
    }
    let count = |s: f64| at.iter().find(|(m, _)| *m == s).map_or(0, |(_, b)| *b);
    let end = start + secs(opts.duration_s);
    w.run_until(end);
    let tcp = w.tx.stats();
    let total = w.rx.delivered_bytes();
    Outcome {
        bytes: total - count(opts.omit_s),
        seconds: opts.duration_s - opts.omit_s,
        from: opts
            .from_s
            .map(|f| (total - count(f), (opts.duration_s - f).max(0.0))),
        path_bytes: w
            .up
            .iter()
            .zip(&up0)
            .map(|(l, b)| l.stats.delivered_bytes - b)
            .collect(),
        path_from_bytes: up_from.map(|v| {
            w.up.iter()
                .zip(&v)
                .map(|(l, b)| l.stats.delivered_bytes - b)
                .collect()
        }),
        transfer_seconds: opts.duration_s,
        segments_sent: tcp.segments_sent,
        segments_arrived: w.arrived,
        segments_outstanding: w.tx.snd_max() - w.tx.snd_una(),
        tcp,
        link_drops: link_drops(&w.up),
        packets: w.packets,
        wall_seconds: wall.elapsed().as_secs_f64(),
        sim_seconds: end.as_secs_f64(),
        cross_tcp_mbps: w.cross.as_ref().map(|c| c.goodput_mbps(end)),
    }
}

mod handshake;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_probes;

#[cfg(test)]
mod trace;
