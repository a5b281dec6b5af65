//! One simulated run: the topology of PET/BMP Fig. 1 for one scheme, one
//! seed and one cross-traffic scenario, driven event by event.
//!
//! ```text
//! server --L_sp--> proxy --L_pb[i]--> BS_i --L_w[i] (WFQ, bottleneck)--> client
//!        <-L_ps--        <-L_bp[i]--       <-L_wu[i]------------------
//! cross servers --L_xin[i]--> BS_i, <-L_xout[i]--
//! ```
//! Every link is a [`braid_net::QueuedLink`]: FIFO on the wired hops and
//! uplinks, the base station's equal-weight fair queue on `L_w[i]` with
//! the path's random loss drawn when a transmission ends. A link's end of
//! transmission is an event (`Ev::TxDone`), as fair queueing needs.
//! In tunnelled schemes the proxy and the client run `braid-core`'s
//! [`Sender`] and [`Receiver`] unchanged: frames are encoded and decoded
//! with the real wire format. The client's TCP ACKs return over the path
//! with the smallest wired delay (ties: the fastest); feedback for a path
//! returns over that path.

use braid_core::flow::RetransmitDetector;
use braid_core::receiver::Receiver;
use braid_core::reorder::ReorderStats;
use braid_core::sched::PacketInfo;
use braid_core::sender::{SendOutcome, Sender, SenderStats};
use braid_core::time::{Duration, Instant};
use braid_core::wire::{self, DataHeader, Frame};
use braid_net::QueuedLink;
use rand_chacha::ChaCha8Rng;

mod build;
mod prism;

use crate::cross;
use crate::event::EventQueue;
use crate::packet::{Body, Dst, Packet, Route, FEEDBACK_INLINE};
use crate::tcp::{Ack, Segment, TcpReceiver, TcpSender};

/// Bytes of outer IP/UDP headers charged to a feedback frame.
const FEEDBACK_OVERHEAD: u32 = 28;
/// Class of the tunnel at the base stations' fair queues.
const TUNNEL_CLASS: u32 = u32::MAX;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Node {
    Src(u32),
    Sink(u32),
    Proxy,
    Client,
}

enum Ev {
    Arrive(Packet),
    TxDone(u16),
    Timer(Node),
    /// Start (or restart, for web clients) flow `i`.
    Start(u32),
    /// On/off background source `k` sends its next packet or turns.
    OnOff(u16),
    /// A path joins (`true`) or leaves the community (PRISM Fig 8).
    PathActive(u8, bool),
}

#[derive(Clone, Debug, PartialEq)]
enum FlowRole {
    /// The measured connection (or one MTCP subflow, tagged with its path).
    Main {
        path: u8,
    },
    Ftp {
        start_s: f64,
    },
    Web {
        stream: u64,
    },
}

struct Flow {
    role: FlowRole,
    tx: TcpSender,
    rx: TcpReceiver,
    fwd: Route,
    rev: Route,
    /// Generation: bumps when a web client starts a new object, so stale
    /// packets of the previous one are ignored.
    gen: u32,
    started: bool,
    web_rng: Option<ChaCha8Rng>,
    /// Delivered bytes of earlier generations.
    delivered_before: u64,
    /// Bytes it had delivered when the scenario's `warmup_s` ended (taken
    /// at its first delivery from then on; `None` before).
    at_warmup: Option<u64>,
}

impl Flow {
    fn key(&self, index: u32) -> u32 {
        index | (self.gen << 20)
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub goodput_kbps: f64,
    pub dupacks: u64,
    pub retransmits: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    /// Goodput of each main flow (MTCP subflows; one entry otherwise).
    pub flow_goodput_kbps: Vec<f64>,
    pub flow_dupacks: Vec<u64>,
    pub flow_retransmits: Vec<u64>,
    pub flow_timeouts: Vec<u64>,
    /// Main-flow throughput arriving at the client per path, per second (kbit/s).
    pub series_kbps: Vec<Vec<f64>>,
    pub reorder: Option<ReorderStats>,
    pub sender: Option<SenderStats>,
    /// The proxy's packet-pair bandwidth estimate of each path at the end (bit/s).
    pub path_bw_estimates_bps: Vec<Option<f64>>,
    pub bs_drops_queue: u64,
    pub bs_drops_loss: u64,
    pub events: u64,
    /// Goodput of the main connection per second of the run, kbit/s.
    pub goodput_series_kbps: Vec<f64>,
    /// PRISM Fig 14's re-sequencing buffer at the TCP receiver of the main
    /// connection, highest packet received + 1 − next expected, averaged
    /// over the packets arriving there.
    pub mean_buffer_pkts: f64,
    /// The reverse-path controller's counters, when it ran.
    pub rpc: Option<braid_core::rpc::RpcStats>,
}

struct Braid {
    /// Owns the segments it holds (a pair's first packet waiting for its
    /// partner, `SenderConfig::hold_unmeasured_pairs`), with their tunnel
    /// length.
    sender: Sender<(Segment, u32)>,
    receiver: Receiver<Segment>,
    retx: RetransmitDetector,
    overhead: u32,
    /// Wired+wireless route of each path from the proxy; uplink back.
    down: Vec<Route>,
    up: Vec<Route>,
    /// PRISM's reverse-path controller, when the scheme runs one: the main
    /// connection's ACKs come to the proxy and leave for the server over
    /// `to_src`.
    rpc: Option<braid_core::rpc::Rpc<Ack>>,
    to_src: Route,
}

pub struct World {
    q: EventQueue<Ev>,
    /// Every link of the topology, in the order `build.rs` adds them;
    /// routes name them by index.
    links: Vec<QueuedLink<Packet>>,
    /// The channel errors of every link, one seeded stream.
    link_rng: ChaCha8Rng,
    flows: Vec<Flow>,
    timers: Vec<Option<Instant>>,
    braid: Option<Braid>,
    n_main: usize,
    end: Instant,
    /// Goodput counts what main flows deliver from here on
    /// (`Scenario::warmup_s`).
    warmup: Instant,
    series: Vec<Vec<f64>>,
    wireless: Vec<u16>,
    scratch: Vec<Segment>,
    cross_spec: Option<crate::scenario::CrossSpec>,
    mss: u32,
    onoff: Vec<prism::OnOff>,
    /// Nominal rate of each path (bit/s), for PRISM's `p`.
    path_rates_bps: Vec<f64>,
    /// Highest packet the main connection's receiver got, plus one.
    rcv_high: u64,
    buffer_sum: f64,
    buffer_samples: u64,
    goodput_series: Vec<f64>,
}

impl World {
    fn node_index(&self, n: Node) -> usize {
        let nf = self.flows.len();
        match n {
            Node::Src(i) => i as usize,
            Node::Sink(i) => nf + i as usize,
            Node::Proxy => 2 * nf,
            Node::Client => 2 * nf + 1,
        }
    }

    fn poll_node(&self, n: Node) -> Option<Instant> {
        match n {
            Node::Src(i) => self.flows[i as usize].tx.poll_timeout(),
            Node::Sink(i) => self.flows[i as usize].rx.poll_timeout(),
            Node::Proxy => {
                let b = self.braid.as_ref()?;
                let r = b.rpc.as_ref().and_then(|r| r.poll_timeout());
                match (b.sender.poll_timeout(), r) {
                    (Some(a), Some(c)) => Some(a.min(c)),
                    (a, c) => a.or(c),
                }
            }
            Node::Client => self.braid.as_ref()?.receiver.poll_timeout(),
        }
    }

    /// Makes sure a timer event is pending no later than the node's deadline.
    fn arm(&mut self, n: Node) {
        let Some(t) = self.poll_node(n) else { return };
        let idx = self.node_index(n);
        if self.timers[idx].is_none_or(|s| t < s) {
            self.timers[idx] = Some(t);
            self.q.push(t, Ev::Timer(n));
        }
    }

    fn inject(&mut self, now: Instant, p: Packet) {
        self.q.push(now, Ev::Arrive(p));
    }

    fn send_segments(&mut self, now: Instant, flow: u32) {
        let f = &self.flows[flow as usize];
        let (route, class) = (f.fwd, flow);
        for seg in self.scratch.drain(..) {
            let len = seg.wire_bytes;
            self.q.push(
                now,
                Ev::Arrive(Packet {
                    body: Body::Seg(seg),
                    len,
                    class,
                    route,
                    hop: 0,
                    tag: 0,
                }),
            );
        }
    }

    /// Runs to the end of the scenario.
    pub fn run(mut self) -> RunResult {
        while let Some(t) = self.q.peek_time() {
            if t > self.end {
                break;
            }
            let (now, ev) = self.q.pop().expect("peeked");
            match ev {
                Ev::Arrive(p) => self.arrive(now, p),
                Ev::TxDone(l) => self.tx_done(now, l),
                Ev::Timer(n) => self.timer(now, n),
                Ev::Start(i) => self.start(now, i),
                Ev::OnOff(k) => self.onoff_tick(now, k),
                Ev::PathActive(path, up) => self.path_active(now, path, up),
            }
        }
        self.finish()
    }

    fn arrive(&mut self, now: Instant, p: Packet) {
        if p.hop < p.route.n {
            let l = p.route.hops[p.hop as usize];
            let (class, len) = (p.class, p.len);
            if let Some(done) = self.links[l as usize].enqueue(now, class, len, p) {
                self.q.push(done, Ev::TxDone(l));
            }
            return;
        }
        match p.route.dst {
            Dst::Sink(i) => self.at_sink(now, i, p),
            Dst::Src(i) => self.at_src(now, i, p),
            Dst::Proxy => self.at_proxy(now, p),
            Dst::Client => self.at_client(now, p),
            Dst::Drop => {}
        }
    }

    fn tx_done(&mut self, now: Instant, l: u16) {
        let done = self.links[l as usize].tx_done(now, &mut self.link_rng);
        if let Some(t) = done.next_done {
            self.q.push(t, Ev::TxDone(l));
        }
        if let Some((at, mut p)) = done.delivered {
            p.hop += 1;
            self.q.push(at, Ev::Arrive(p));
        }
    }

    fn record_series(&mut self, now: Instant, path: usize, bytes: u32) {
        let bin = now.as_secs_f64() as usize;
        if let Some(b) = self.series.get_mut(path).and_then(|s| s.get_mut(bin)) {
            *b += bytes as f64 * 8.0 / 1000.0;
        }
    }

    fn at_sink(&mut self, now: Instant, i: u32, p: Packet) {
        let Body::Seg(seg) = p.body else { return };
        self.deliver_segment(now, i, seg);
    }

    fn deliver_segment(&mut self, now: Instant, i: u32, seg: Segment) {
        let f = &mut self.flows[i as usize];
        if seg.flow != f.key(i) {
            return; // a previous web object's straggler
        }
        if let FlowRole::Main { path } = f.role {
            if (path as usize) < self.series.len() {
                let (path, bytes) = (path as usize, seg.payload_bytes);
                self.record_series(now, path, bytes);
            }
        }
        let warm = now >= self.warmup;
        let f = &mut self.flows[i as usize];
        let before = f.rx.delivered_bytes();
        if warm && f.at_warmup.is_none() {
            f.at_warmup = Some(before + f.delivered_before);
        }
        let ack = f.rx.on_segment(now, &seg);
        if (i as usize) < self.n_main {
            let f = &self.flows[i as usize];
            let gained = f.rx.delivered_bytes() - before;
            if self.braid.is_some() {
                // One connection through the tunnel (MTCP's subflows have
                // sequence spaces of their own).
                self.rcv_high = self.rcv_high.max(seg.seq + 1);
                let nxt = f.rx.rcv_nxt();
                self.buffer_sum += self.rcv_high.saturating_sub(nxt) as f64;
                self.buffer_samples += 1;
            }
            let bin = now.as_secs_f64() as usize;
            if let Some(b) = self.goodput_series.get_mut(bin) {
                *b += gained as f64 * 8.0 / 1000.0;
            }
        }
        if let Some(ack) = ack {
            self.send_ack(now, i, ack);
        }
        self.arm(Node::Sink(i));
    }

    fn send_ack(&mut self, now: Instant, i: u32, ack: Ack) {
        let route = self.flows[i as usize].rev;
        let len = ack.wire_bytes;
        self.inject(
            now,
            Packet {
                body: Body::Ack(ack),
                len,
                class: i,
                route,
                hop: 0,
                tag: 0,
            },
        );
    }

    fn at_src(&mut self, now: Instant, i: u32, p: Packet) {
        let Body::Ack(ack) = p.body else { return };
        let f = &mut self.flows[i as usize];
        if ack.flow != f.key(i) {
            return;
        }
        f.tx.on_ack(now, &ack, &mut self.scratch);
        let done = f.tx.is_done();
        self.send_segments(now, i);
        self.arm(Node::Src(i));
        if done {
            self.object_done(now, i);
        }
    }

    /// A web client finished an object: think, then fetch the next.
    fn object_done(&mut self, now: Instant, i: u32) {
        let Some(cs) = &self.cross_spec else { return };
        let f = &mut self.flows[i as usize];
        if let (FlowRole::Web { .. }, Some(rng)) = (&f.role, f.web_rng.as_mut()) {
            let think = cross::think_s(rng, cs.web_think_mean_s);
            self.q
                .push(now + Duration::from_secs_f64(think), Ev::Start(i));
        }
    }

    fn start(&mut self, now: Instant, i: u32) {
        let mss = self.mss;
        let cs = self.cross_spec.clone();
        let f = &mut self.flows[i as usize];
        if f.started {
            // Web client: next object on a fresh connection.
            let (Some(cs), Some(rng)) = (cs, f.web_rng.as_mut()) else {
                return;
            };
            let pkts = cross::object_packets(rng, cs.web_size_mean_kbytes, cs.web_size_shape, mss);
            f.delivered_before += f.rx.delivered_bytes();
            f.gen = (f.gen + 1) & 0x7ff;
            let cfg = f.tx.config().clone();
            let key = f.key(i);
            f.tx = TcpSender::new(cfg.clone(), key, Some(pkts));
            f.rx = TcpReceiver::new(&cfg, key);
        } else if let (FlowRole::Web { .. }, Some(cs), Some(rng)) =
            (&f.role, cs, f.web_rng.as_mut())
        {
            let pkts = cross::object_packets(rng, cs.web_size_mean_kbytes, cs.web_size_shape, mss);
            let cfg = f.tx.config().clone();
            f.tx = TcpSender::new(cfg.clone(), i, Some(pkts));
        }
        f.started = true;
        f.tx.start(now, &mut self.scratch);
        self.send_segments(now, i);
        self.arm(Node::Src(i));
    }

    fn timer(&mut self, now: Instant, n: Node) {
        let idx = self.node_index(n);
        if self.timers[idx] != Some(now) {
            return; // superseded by an earlier deadline
        }
        self.timers[idx] = None;
        match n {
            Node::Src(i) => {
                self.flows[i as usize]
                    .tx
                    .handle_timeout(now, &mut self.scratch);
                self.send_segments(now, i);
            }
            Node::Sink(i) => {
                if let Some(ack) = self.flows[i as usize].rx.handle_timeout(now) {
                    self.send_ack(now, i, ack);
                }
            }
            Node::Proxy => {
                if let Some(b) = self.braid.as_mut() {
                    b.sender.handle_timeout(now);
                    if let Some(r) = b.rpc.as_mut() {
                        r.handle_timeout(now);
                    }
                }
                self.rpc_output(now);
                self.release_held(now);
            }
            Node::Client => {
                if let Some(b) = self.braid.as_mut() {
                    b.receiver.handle_timeout(now);
                }
                self.client_output(now);
            }
        }
        self.arm(n);
    }

    fn at_proxy(&mut self, now: Instant, p: Packet) {
        let Some(b) = self.braid.as_mut() else { return };
        match p.body {
            Body::Seg(seg) => {
                let retransmit = b.retx.observe(
                    seg.flow as u64,
                    (seg.seq as u32).wrapping_mul(seg.payload_bytes.max(1)),
                    seg.payload_bytes.max(1),
                );
                let len = seg.wire_bytes + b.overhead;
                match b.sender.send_paced(
                    now,
                    &PacketInfo {
                        len,
                        retransmit,
                        stream: false,
                    },
                    || (seg, len),
                ) {
                    SendOutcome::Transmit(tx) => self.tunnel_out(now, tx, seg, len),
                    SendOutcome::Queued { .. } => self.release_held(now),
                    SendOutcome::Dropped | SendOutcome::NoPath => {}
                }
            }
            Body::Feedback(bytes, n) => {
                if let Ok(Frame::Feedback(view)) = wire::decode(&bytes[..n as usize]) {
                    b.sender.handle_feedback(now, view.entries());
                }
            }
            Body::Ack(ack) => {
                if let Some(r) = b.rpc.as_mut() {
                    let view = braid_core::rpc::AckView::new(ack.ack, ack.sack_blocks());
                    r.handle_ack(now, &view, ack);
                }
                self.rpc_output(now);
            }
            _ => {}
        }
        self.arm(Node::Proxy);
    }

    /// Puts one tunnelled segment on its path.
    fn tunnel_out(
        &mut self,
        now: Instant,
        tx: braid_core::sender::Transmit,
        seg: Segment,
        len: u32,
    ) {
        let Some(b) = self.braid.as_mut() else { return };
        let mut hdr = [0u8; DataHeader::LEN];
        tx.header.emit(&mut hdr).expect("header fits");
        if let Some(r) = b.rpc.as_mut() {
            r.on_data_sent(now, seg.seq, tx.path);
        }
        let route = b.down[tx.path.0 as usize];
        let tag = tx.path.0;
        self.inject(
            now,
            Packet {
                body: Body::Tunnel(hdr, seg),
                len,
                class: TUNNEL_CLASS,
                route,
                hop: 0,
                tag,
            },
        );
    }

    /// Sends the held segments the sender releases now.
    fn release_held(&mut self, now: Instant) {
        loop {
            let Some(b) = self.braid.as_mut() else { return };
            let Some((tx, (seg, len))) = b.sender.poll_transmit(now) else {
                return;
            };
            self.tunnel_out(now, tx, seg, len);
        }
    }

    fn at_client(&mut self, now: Instant, p: Packet) {
        let Body::Tunnel(hdr, seg) = p.body else {
            return;
        };
        let Some(b) = self.braid.as_mut() else { return };
        let Ok(Frame::Data(h, _)) = wire::decode(&hdr) else {
            return;
        };
        b.receiver.handle_data(now, &h, p.len as usize, seg);
        self.record_series(now, p.tag as usize, seg.payload_bytes);
        self.client_output(now);
        self.arm(Node::Client);
    }

    /// Sends due feedback and hands released segments to TCP.
    fn client_output(&mut self, now: Instant) {
        let mut buf = [0u8; FEEDBACK_INLINE];
        loop {
            let Some(b) = self.braid.as_mut() else { return };
            let Some((path, n)) = b.receiver.poll_feedback(now, &mut buf) else {
                break;
            };
            let route = b.up[path.0 as usize];
            let len = n as u32 + FEEDBACK_OVERHEAD;
            self.inject(
                now,
                Packet {
                    body: Body::Feedback(buf, n as u8),
                    len,
                    class: TUNNEL_CLASS,
                    route,
                    hop: 0,
                    tag: path.0,
                },
            );
        }
        while let Some(seg) = self
            .braid
            .as_mut()
            .and_then(|b| b.receiver.poll_release(now))
        {
            self.deliver_segment(now, 0, seg);
        }
    }

    fn finish(self) -> RunResult {
        let secs = self.end.as_secs_f64();
        // The measured time (validation keeps the warm-up shorter than the
        // run; the max guards a caller that shortened the run after it).
        let measured_s = (secs - self.warmup.as_secs_f64()).max(f64::MIN_POSITIVE);
        let mut r = RunResult {
            events: self.q.processed(),
            ..Default::default()
        };
        for f in &self.flows[..self.n_main] {
            let st = f.tx.stats();
            let total = f.rx.delivered_bytes() + f.delivered_before;
            let kbps = (total - f.at_warmup.unwrap_or(total)) as f64 * 8.0 / measured_s / 1000.0;
            r.flow_goodput_kbps.push(kbps);
            r.flow_dupacks.push(st.dupacks);
            r.flow_retransmits.push(st.retransmits);
            r.flow_timeouts.push(st.timeouts);
            r.goodput_kbps += kbps;
            r.dupacks += st.dupacks;
            r.retransmits += st.retransmits;
            r.fast_retransmits += st.fast_retransmits;
            r.timeouts += st.timeouts;
        }
        for &l in &self.wireless {
            r.bs_drops_queue += self.links[l as usize].stats.drops_queue;
            r.bs_drops_loss += self.links[l as usize].stats.drops_loss;
        }
        if let Some(b) = &self.braid {
            r.reorder = Some(b.receiver.reorder_stats().clone());
            r.sender = Some(b.sender.stats().clone());
            r.path_bw_estimates_bps = b
                .sender
                .paths()
                .iter()
                .map(|p| p.bw.estimate_bps())
                .collect();
        }
        if let Some(b) = &self.braid {
            r.rpc = b.rpc.as_ref().map(|x| x.stats());
        }
        r.series_kbps = self.series;
        r.goodput_series_kbps = self.goodput_series;
        r.mean_buffer_pkts = if self.buffer_samples > 0 {
            self.buffer_sum / self.buffer_samples as f64
        } else {
            0.0
        };
        r
    }
}
