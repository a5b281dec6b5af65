//! One run of an MPLOT experiment: `sessions` sources sharing `M` paths,
//! each source the shipped `braid_core::mplot` sender and receiver in
//! virtual coding (sizes only; a block decodes when any `F` distinct packets
//! arrive, `SPECS.md` §2.8).
//!
//! A path is, in each direction, one bottleneck of `braid-net`:
//! - forward: the path's rate, half the RTT of delay, a queue of one
//!   bandwidth-delay product managed by RED with ECN marking (the paper's
//!   setting, §IV; its RED parameters are not given: `min_th` = BDP/4,
//!   `max_th` = 3/4 BDP, `max_p` = 0.1, `w_q` = 0.002, and "gentle" as
//!   ns-2's RED is by default, so an average above `max_th` marks
//!   ECN-capable packets with a rising probability rather than dropping
//!   every packet: MPLOT answers marks, not losses, and with every packet
//!   dropped above `max_th` the lossless runs of Fig 12 lost 27 % of
//!   their packets at the queues), then the random
//!   loss of the channel (i.i.d., Markov-modulated with DOWN, or
//!   correlated across paths with θ^|i-j|). The loss comes *after* the
//!   bottleneck, as on a lossy last hop, so lost packets use capacity: a
//!   10 Mbit/s path at 50 % loss carries 5 Mbit/s of effective capacity,
//!   the paper's "2.75 of 5 Mb/s effective" for Fig 3.
//! - reverse: the same rate and delay, loss-free (ACKs are 40 bytes).
//!
//! The paper's paths have 4–6 links each; one bottleneck per direction
//! stands for them (the other links are not loaded).
//!
//! PTCP's subflows and Fig 7's competing TCP-SACK flows are braid-sim's
//! ns-2 TCP model on the same links ([`super::tcp_flows`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use braid_core::mplot::{
    Ack, Coding, DataHeader, DataView, Mapping, Receiver, ReceiverConfig, Sender, SenderConfig,
};
use braid_core::time::{Duration, Instant};
use braid_net::{CorrelatedLinks, Link, LinkParams, MarkovParams, MarkovState, RedParams, Verdict};

use super::scenario::MplotScheme;
use super::tcp_flows::{PtcpAgg, TcpFlow, TCP_PAYLOAD};
use crate::tcp::{Ack as TcpAck, Segment};

/// Bytes of an ACK on the reverse path.
pub const ACK_BYTES: u64 = 40;

/// How a path loses packets.
#[derive(Clone, Debug, PartialEq)]
pub enum LossModel {
    Iid(f64),
    Markov(MarkovParams),
}

/// Everything one run needs.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    pub scheme: MplotScheme,
    pub paths: usize,
    pub path_rate_mbit: f64,
    pub rtt_ms: f64,
    pub loss: LossModel,
    pub theta: f64,
    pub sessions: usize,
    /// ECN-capable TCP-SACK flows on every path besides the sessions
    /// (§IV-D, Fig 7).
    pub tcp_per_path: usize,
    /// ACKs cross a lossy channel too (the forward loss model, its own
    /// draws and states per path): see `MplotSpec::reverse_loss`.
    pub reverse_loss: bool,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub seed: u64,
}

/// What one run measured (after the warm-up).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// Stream bytes delivered in order, all sessions, Mbit/s.
    pub goodput_mbps: f64,
    /// Bytes of data packets (FEC and duplicates included) arriving at the
    /// receivers, all sessions, Mbit/s.
    pub throughput_mbps: f64,
    pub path_throughput_mbps: Vec<f64>,
    /// Bytes of data packets the sources put on the paths (packet size,
    /// header budget included; FEC, resends and packets the queue or the
    /// channel later lose all count), all sessions, Mbit/s: the sending
    /// rate, Table III's "throughput" (its per-path figures, 16.83 of a
    /// 16.67 Mbit/s path, exceed what could arrive after 5-15 % loss, so
    /// they count packets before the loss, `SPECS.md` §2.8).
    pub sent_mbps: f64,
    pub path_sent_mbps: Vec<f64>,
    /// Per-session goodput, Mbit/s.
    pub session_goodput_mbps: Vec<f64>,
    /// Block delay, first send to in-order delivery: mean and standard
    /// deviation, ms.
    pub delay_mean_ms: f64,
    pub delay_std_ms: f64,
    pub blocks: u64,
    /// Standard deviation of the senders' `p̂_agg` sampled every 100 ms.
    pub loss_estimate_std: f64,
    /// Payload bytes of the `tcp_per_path` TCP-SACK flows arriving (all
    /// flows, retransmissions included), Mbit/s.
    pub tcp_throughput_mbps: f64,
    /// Their bytes delivered in order, Mbit/s.
    pub tcp_goodput_mbps: f64,
    /// Per-path timeouts of all sources (MPLOT's paths or PTCP's subflows).
    pub timeouts: u64,
    /// Packets the sources sent.
    pub packets_sent: u64,
    /// MPLOT packets that arrived for blocks already decoded (all sources).
    pub duplicates: u64,
    /// MPLOT packets arriving at the receivers.
    pub arrived: u64,
    /// RFEC packets queued (eq 10), all sources.
    pub rfec: u64,
    pub events: u64,
}

enum Ev {
    Data(usize, DataHeader, bool),
    Ack(usize, Ack),
    Timer(usize),
    TcpStart(usize),
    TcpData(usize, Segment),
    TcpAck(usize, TcpAck),
    TcpTimer(usize),
}

struct Session {
    sender: Sender,
    receiver: Receiver,
    /// Global path index of each local path.
    paths: Vec<usize>,
    /// Which reported session it counts for (PER-PATH has M per source).
    owner: usize,
    timer_at: Option<Instant>,
    first_sent: HashMap<u32, Instant>,
}

struct Net {
    fwd: Vec<Link>,
    channel: CorrelatedLinks,
    rev: Vec<Link>,
    /// The reverse paths' lossy channels (`RunSpec::reverse_loss`).
    rev_channel: Vec<Link>,
}

impl Net {
    /// An ACK of `bytes` sent back on path `g` at `now`: when it arrives.
    fn ack(&mut self, g: usize, now: Instant, bytes: u64) -> Option<Instant> {
        let at = self.rev[g].offer(now, bytes, false).delivered_at()?;
        match self.rev_channel.get_mut(g) {
            Some(ch) => ch.offer(at, bytes, false).delivered_at(),
            None => Some(at),
        }
    }
}

fn params(spec: &RunSpec) -> (LinkParams, LinkParams, LinkParams) {
    let bdp = (spec.path_rate_mbit * 1e6 * spec.rtt_ms / 1e3 / 8.0) as u64;
    let bdp = bdp.max(3000);
    let mut fwd = LinkParams::new(spec.path_rate_mbit, spec.rtt_ms / 2.0, bdp);
    fwd.red = Some(RedParams {
        min_th_bytes: bdp / 4,
        max_th_bytes: bdp * 3 / 4,
        max_p: 0.1,
        weight: 0.002,
        ecn: true,
        gentle: true,
        // Byte mode over the largest packet (MPLOT's 750 B, also the TCP
        // flows'): MPLOT's 250- and 550-byte packets would otherwise take
        // up to three times the marks per byte of a 750-byte TCP flow, and
        // since each window halves at most once per round trip, a source
        // of small packets is cut in nearly every round (Fig 7 at M = 1:
        // 0.63 x TCP's share in packet mode; 1.05 in byte mode, with
        // MPLOT's byte-counted window growth, `braid_core::mplot::cc`).
        max_packet_bytes: Some(750),
    });
    let mut ch = LinkParams::new(1e5, 0.0, u64::MAX);
    match &spec.loss {
        LossModel::Iid(p) => ch.loss = *p,
        LossModel::Markov(m) => ch.markov = Some(m.clone()),
    }
    let rev = LinkParams::new(spec.path_rate_mbit, spec.rtt_ms / 2.0, 1 << 20);
    (fwd, ch, rev)
}

/// A two-state loss process of `lo` and `hi`, 250 ms mean holding each
/// (§IV-C reads "between 5 % and 15 %" as this).
pub fn bimodal(lo: f64, hi: f64) -> MarkovParams {
    MarkovParams {
        states: vec![
            MarkovState {
                loss: lo,
                mean_holding_ms: 250.0,
            },
            MarkovState {
                loss: hi,
                mean_holding_ms: 250.0,
            },
        ],
        jump: Vec::new(),
        initial: 0,
    }
}

/// The time slot of the correlated losses (§IV-E): one 750-byte packet's
/// transmission at the path rate, so packets that cross their lossy
/// channels together share a draw (`CorrelatedLinks::with_slot`).
fn correlation_slot(spec: &RunSpec) -> Duration {
    Duration::from_secs_f64(750.0 * 8.0 / (spec.path_rate_mbit * 1e6))
}

/// The paths' lossy channels. When correlated (§IV-E), the draws are
/// indexed by time and a Markov-modulated loss has its states coupled
/// across paths by the same θ (`braid_net::coupled`): the paper's "correlated
/// loss rates across the paths", as on a shared lossy link. Without the
/// coupling the 25 %/75 % states switch independently per path, and θ,
/// acting only on packets that cross their channels in the same slot (most
/// of them another source's), left goodput flat within 3 % (2.75, 2.79,
/// 2.88 Mbit/s at θ = 0.05, 0.5, 0.99).
fn correlated(links: CorrelatedLinks, spec: &RunSpec) -> CorrelatedLinks {
    if spec.theta <= 0.0 {
        return links;
    }
    let links = links.with_slot(correlation_slot(spec));
    match &spec.loss {
        LossModel::Markov(mk) => links.with_states(mk, spec.seed),
        LossModel::Iid(_) => links,
    }
}

/// Keep this many bytes waiting in every sender (an infinite backlog).
const BACKLOG: u64 = 4 << 20;

/// Runs one experiment.
pub fn run(spec: &RunSpec) -> RunOutput {
    let m = spec.paths;
    let (fp, cp, rp) = params(spec);
    let start = Instant::ZERO;
    let mut net = Net {
        fwd: (0..m)
            .map(|j| Link::new(&fp, spec.seed * 1000 + j as u64, start))
            .collect(),
        channel: correlated(
            CorrelatedLinks::new(
                (0..m)
                    .map(|j| {
                        let mut p = cp.clone();
                        // Coupled states decide the loss (`correlated`).
                        if spec.theta > 0.0 && p.markov.is_some() {
                            p.markov = None;
                        }
                        // Markov chains start in a random state per path.
                        if let Some(mk) = p.markov.as_mut() {
                            mk.initial = ((spec.seed as usize) + j * 7) % mk.states.len().min(2);
                        }
                        Link::new(&p, spec.seed * 1000 + 100 + j as u64, start)
                    })
                    .collect(),
                spec.theta,
                spec.seed,
            ),
            spec,
        ),
        rev: (0..m)
            .map(|j| Link::new(&rp, spec.seed * 1000 + 200 + j as u64, start))
            .collect(),
        rev_channel: if spec.reverse_loss {
            (0..m)
                .map(|j| {
                    let mut p = cp.clone();
                    if let Some(mk) = p.markov.as_mut() {
                        mk.initial = ((spec.seed as usize) + j * 7 + 1) % mk.states.len().min(2);
                    }
                    Link::new(&p, spec.seed * 1000 + 300 + j as u64, start)
                })
                .collect()
        } else {
            Vec::new()
        },
    };
    let mut sessions = Vec::new();
    let mut flows: Vec<TcpFlow> = Vec::new();
    let mut aggs: Vec<PtcpAgg> = Vec::new();
    if spec.scheme == MplotScheme::Ptcp {
        for s in 0..spec.sessions {
            aggs.push(PtcpAgg::new(s));
            for j in 0..m {
                flows.push(TcpFlow::new(j, flows.len() as u32, Some(s)));
            }
        }
    }
    for j in 0..m {
        for _ in 0..spec.tcp_per_path {
            flows.push(TcpFlow::new(j, flows.len() as u32, None));
        }
    }
    let mplot_sessions = if spec.scheme == MplotScheme::Ptcp {
        0
    } else {
        spec.sessions
    };
    for s in 0..mplot_sessions {
        let groups: Vec<Vec<usize>> = if spec.scheme == MplotScheme::PerPath {
            (0..m).map(|j| vec![j]).collect()
        } else {
            vec![(0..m).collect()]
        };
        for paths in groups {
            let mut sc = SenderConfig::new(paths.len());
            sc.coding = Coding::Virtual;
            // The paper's sources have no block limit: the sender's span
            // and the receiver's window are both far above what a run
            // holds unrecovered.
            sc.max_blocks = 1024;
            if spec.scheme == MplotScheme::Blind {
                sc.mapping = Mapping::Blind;
            }
            let mut rc = ReceiverConfig::new(paths.len(), spec.seed * 7919 + sessions.len() as u64);
            rc.coding = Coding::Virtual;
            rc.max_blocks_ahead = sc.max_blocks as u32;
            sessions.push(Session {
                sender: Sender::new(sc).expect("valid sender config"),
                receiver: Receiver::new(rc),
                paths,
                owner: s,
                timer_at: None,
                first_sent: HashMap::new(),
            });
        }
    }
    let end = Instant::from_secs_f64(spec.duration_s);
    let warm = Instant::from_secs_f64(spec.warmup_s);
    let mut heap: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut evs: HashMap<u64, Ev> = HashMap::new();
    let mut next_id = 0u64;
    let mut push = |heap: &mut BinaryHeap<Reverse<(Instant, u64)>>,
                    evs: &mut HashMap<u64, Ev>,
                    at: Instant,
                    ev: Ev| {
        heap.push(Reverse((at, next_id)));
        evs.insert(next_id, ev);
        next_id += 1;
    };
    let mut out = RunOutput {
        path_throughput_mbps: vec![0.0; m],
        path_sent_mbps: vec![0.0; m],
        session_goodput_mbps: vec![0.0; spec.sessions],
        ..Default::default()
    };
    let mut delays: Vec<f64> = Vec::new();
    let mut est: Vec<f64> = Vec::new();
    let mut next_sample = warm;
    // Stagger the sources' starts over the first RTT.
    for s in 0..sessions.len() {
        let at = Instant::from_secs_f64(spec.rtt_ms / 1e3 * s as f64 / sessions.len() as f64);
        push(&mut heap, &mut evs, at, Ev::Timer(s));
        sessions[s].timer_at = Some(at);
    }
    for f in 0..flows.len() {
        let at = Instant::from_secs_f64(spec.rtt_ms / 1e3 * f as f64 / flows.len() as f64);
        push(&mut heap, &mut evs, at, Ev::TcpStart(f));
    }
    let mut segs: Vec<Segment> = Vec::new();
    while let Some(Reverse((now, id))) = heap.pop() {
        if now > end {
            break;
        }
        out.events += 1;
        while now >= next_sample {
            for sess in &sessions {
                est.push(sess.sender.loss_stats().mean);
            }
            next_sample += Duration::from_millis(100);
        }
        let ev = evs.remove(&id).expect("event");
        let tcp_flow = match &ev {
            Ev::TcpStart(f) | Ev::TcpData(f, _) | Ev::TcpAck(f, _) | Ev::TcpTimer(f) => Some(*f),
            _ => None,
        };
        if let Some(f) = tcp_flow {
            segs.clear();
            let flow = &mut flows[f];
            match ev {
                Ev::TcpStart(_) => flow.tx.start(now, &mut segs),
                Ev::TcpTimer(_) => {
                    if flow.timer_at != Some(now) {
                        continue;
                    }
                    flow.timer_at = None;
                    flow.tx.handle_timeout(now, &mut segs);
                }
                Ev::TcpAck(_, ack) => flow.tx.on_ack(now, &ack, &mut segs),
                Ev::TcpData(_, seg) => {
                    let before = flow.rx.delivered_bytes();
                    let ack = flow.rx.on_segment(now, &seg);
                    if now >= warm {
                        let bits = f64::from(seg.payload_bytes) * 8.0;
                        out.path_throughput_mbps[flow.path] += bits;
                        match flow.agg {
                            Some(_) => out.throughput_mbps += bits,
                            None => {
                                out.tcp_throughput_mbps += bits;
                                out.tcp_goodput_mbps +=
                                    (flow.rx.delivered_bytes() - before) as f64 * 8.0;
                            }
                        }
                    }
                    if let Some(a) = flow.agg {
                        let c = flow.chunk_of[seg.seq as usize];
                        let agg = &mut aggs[a];
                        let mut d = Vec::new();
                        let n = agg.arrive(c, now, &mut d);
                        if now >= warm {
                            let bits = n as f64 * f64::from(TCP_PAYLOAD) * 8.0;
                            out.goodput_mbps += bits;
                            out.session_goodput_mbps[agg.owner] += bits;
                            delays.extend(d);
                        }
                    }
                    if let Some(ack) = ack {
                        let g = flow.path;
                        let bytes = u64::from(ack.wire_bytes);
                        if let Some(at) = net.ack(g, now, bytes) {
                            push(&mut heap, &mut evs, at, Ev::TcpAck(f, ack));
                        }
                    }
                    continue;
                }
                _ => unreachable!("a TCP event"),
            }
            let flow = &mut flows[f];
            for seg in segs.iter_mut() {
                if let Some(a) = flow.agg {
                    aggs[a].chunk_for(flow, seg.seq, now);
                }
                out.packets_sent += 1;
                let g = flow.path;
                let v = net.fwd[g].offer(now, u64::from(seg.wire_bytes), seg.ect);
                if let Verdict::Deliver { at, ce } = v {
                    seg.ce |= ce;
                    if let Some(at2) = net
                        .channel
                        .offer(g, at, u64::from(seg.wire_bytes), false)
                        .delivered_at()
                    {
                        push(&mut heap, &mut evs, at2, Ev::TcpData(f, *seg));
                    }
                }
            }
            let t = flow.tx.poll_timeout();
            if t.is_some() && t != flow.timer_at {
                let at = t.unwrap_or(now).max(now);
                flow.timer_at = Some(at);
                push(&mut heap, &mut evs, at, Ev::TcpTimer(f));
            }
            continue;
        }
        let s = match ev {
            Ev::Timer(s) => {
                if sessions[s].timer_at != Some(now) {
                    continue;
                }
                sessions[s].timer_at = None;
                sessions[s].sender.handle_timeout(now);
                s
            }
            Ev::Ack(s, ack) => {
                sessions[s].sender.handle_ack(now, &ack);
                s
            }
            Ev::Data(s, header, ce) => {
                let sess = &mut sessions[s];
                if now >= warm {
                    let g = sess.paths[usize::from(header.path)];
                    out.path_throughput_mbps[g] += (header.shard_len as f64) * 8.0;
                    out.throughput_mbps += (header.shard_len as f64) * 8.0;
                }
                let view = DataView { header, shard: &[] };
                let _ = sess.receiver.handle_data(now, ce, &view);
                while let Some((rp, ack)) = sess.receiver.poll_ack() {
                    let g = sess.paths[rp];
                    if let Some(at) = net.ack(g, now, ACK_BYTES) {
                        push(&mut heap, &mut evs, at, Ev::Ack(s, ack));
                    }
                }
                while let Some(c) = sess.receiver.poll_read() {
                    let first = sess.first_sent.remove(&c.block);
                    if now >= warm {
                        out.goodput_mbps += c.len as f64 * 8.0;
                        out.session_goodput_mbps[sess.owner] += c.len as f64 * 8.0;
                        if let Some(t) = first {
                            delays.push(now.saturating_since(t).as_secs_f64() * 1e3);
                        }
                    }
                }
                continue;
            }
            _ => unreachable!("TCP events are handled above"),
        };
        // Send what the sender will, then re-arm its timer.
        let sess = &mut sessions[s];
        if sess.sender.buffered() < BACKLOG {
            let _ = sess.sender.write_virtual(BACKLOG);
        }
        while let Ok(Some(t)) = sess.sender.poll_transmit(now) {
            sess.first_sent.entry(t.header.block).or_insert(now);
            let g = sess.paths[t.path];
            if now >= warm {
                out.sent_mbps += t.size as f64 * 8.0;
                out.path_sent_mbps[g] += t.size as f64 * 8.0;
            }
            let v = net.fwd[g].offer(now, t.size as u64, true);
            if let Verdict::Deliver { at, ce } = v {
                if let Some(at2) = net
                    .channel
                    .offer(g, at, t.size as u64, false)
                    .delivered_at()
                {
                    push(&mut heap, &mut evs, at2, Ev::Data(s, t.header, ce));
                }
            }
        }
        let t = sess.sender.poll_timeout();
        if t.is_some() && t != sess.timer_at {
            let at = t.unwrap_or(now).max(now);
            sess.timer_at = Some(at);
            push(&mut heap, &mut evs, at, Ev::Timer(s));
        }
    }
    for sess in &sessions {
        out.duplicates += sess.receiver.stats.duplicates;
        out.arrived += sess.receiver.stats.packets;
        out.rfec += sess.sender.stats.rfec_queued;
        out.timeouts += sess.sender.stats.timeouts;
        out.packets_sent += sess.sender.stats.packets_sent;
    }
    for f in flows.iter().filter(|f| f.agg.is_some()) {
        out.timeouts += f.tx.stats().timeouts;
    }
    let secs = spec.duration_s - spec.warmup_s;
    out.goodput_mbps /= secs * 1e6;
    out.throughput_mbps /= secs * 1e6;
    out.sent_mbps /= secs * 1e6;
    out.tcp_throughput_mbps /= secs * 1e6;
    out.tcp_goodput_mbps /= secs * 1e6;
    for v in out
        .path_throughput_mbps
        .iter_mut()
        .chain(out.path_sent_mbps.iter_mut())
        .chain(out.session_goodput_mbps.iter_mut())
    {
        *v /= secs * 1e6;
    }
    out.blocks = delays.len() as u64;
    if !delays.is_empty() {
        let n = delays.len() as f64;
        let mean = delays.iter().sum::<f64>() / n;
        out.delay_mean_ms = mean;
        out.delay_std_ms = (delays.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n).sqrt();
    }
    if !est.is_empty() {
        let n = est.len() as f64;
        let mean = est.iter().sum::<f64>() / n;
        out.loss_estimate_std = (est.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n).sqrt();
    }
    out
}
