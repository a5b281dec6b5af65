//! One run of an MPLOT experiment: `sessions` sources sharing `M` paths,
//! each source the shipped `braid_core::mplot` sender and receiver in
//! virtual coding (sizes only; a block decodes when any `F` distinct packets
//! arrive, `SPECS.md` §2.8).
//!
//! A path is, in each direction, one bottleneck of `braid-net`:
//! - forward: the path's rate, half the RTT of delay, a queue of one
//!   bandwidth-delay product managed by RED with ECN marking (the paper's
//!   setting, §IV; its RED parameters are not given: `min_th` = BDP/4,
//!   `max_th` = 3/4 BDP, `max_p` = 0.1, `w_q` = 0.002), then the random
//!   loss of the channel (i.i.d., Markov-modulated with DOWN, or
//!   correlated across paths with θ^|i-j|). The loss comes *after* the
//!   bottleneck, as on a lossy last hop, so lost packets use capacity: a
//!   10 Mbit/s path at 50 % loss carries 5 Mbit/s of effective capacity,
//!   the paper's "2.75 of 5 Mb/s effective" for Fig 3.
//! - reverse: the same rate and delay, loss-free (ACKs are 40 bytes).
//!
//! The paper's paths have 4–6 links each; one bottleneck per direction
//! stands for them (the other links are not loaded).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use braid_core::mplot::{
    Ack, Coding, DataHeader, DataView, Mapping, Receiver, ReceiverConfig, Sender, SenderConfig,
};
use braid_core::time::{Duration, Instant};
use braid_net::{CorrelatedLinks, Link, LinkParams, MarkovParams, MarkovState, RedParams, Verdict};

use super::scenario::MplotScheme;

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
    /// Per-session goodput, Mbit/s.
    pub session_goodput_mbps: Vec<f64>,
    /// Block delay, first send to in-order delivery: mean and standard
    /// deviation, ms.
    pub delay_mean_ms: f64,
    pub delay_std_ms: f64,
    pub blocks: u64,
    /// Standard deviation of the senders' `p̂_agg` sampled every 100 ms.
    pub loss_estimate_std: f64,
    pub events: u64,
}

enum Ev {
    Data(usize, DataHeader, bool),
    Ack(usize, Ack),
    Timer(usize),
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
        channel: CorrelatedLinks::new(
            (0..m)
                .map(|j| {
                    let mut p = cp.clone();
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
        rev: (0..m)
            .map(|j| Link::new(&rp, spec.seed * 1000 + 200 + j as u64, start))
            .collect(),
    };
    let mut sessions = Vec::new();
    for s in 0..spec.sessions {
        let groups: Vec<Vec<usize>> = if spec.scheme == MplotScheme::PerPath {
            (0..m).map(|j| vec![j]).collect()
        } else {
            vec![(0..m).collect()]
        };
        for paths in groups {
            let mut sc = SenderConfig::new(paths.len());
            sc.coding = Coding::Virtual;
            match spec.scheme {
                MplotScheme::Blind => sc.mapping = Mapping::Blind,
                MplotScheme::Ptcp => {
                    sc.mapping = Mapping::Blind;
                    sc.arq = true;
                }
                _ => {}
            }
            let mut rc = ReceiverConfig::new(paths.len(), spec.seed * 7919 + sessions.len() as u64);
            rc.coding = Coding::Virtual;
            rc.ack_on_arrival_path = spec.scheme == MplotScheme::Ptcp;
            rc.max_blocks_ahead = 1024;
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
                    if let Some(at) = net.rev[g].offer(now, ACK_BYTES, false).delivered_at() {
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
        };
        // Send what the sender will, then re-arm its timer.
        let sess = &mut sessions[s];
        if sess.sender.buffered() < BACKLOG {
            let _ = sess.sender.write_virtual(BACKLOG);
        }
        while let Ok(Some(t)) = sess.sender.poll_transmit(now) {
            sess.first_sent.entry(t.header.block).or_insert(now);
            let g = sess.paths[t.path];
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
    let secs = spec.duration_s - spec.warmup_s;
    out.goodput_mbps /= secs * 1e6;
    out.throughput_mbps /= secs * 1e6;
    for v in out
        .path_throughput_mbps
        .iter_mut()
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
