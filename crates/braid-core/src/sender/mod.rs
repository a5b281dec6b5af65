//! The sending half of one tunnel direction: the proxy for the downlink,
//! the client for the uplink (PET/BMP Section II: "the roles of PET and BMP
//! reversed").
//!
//! For each inner packet the [`Sender`] asks its scheduler for a path,
//! numbers the packet, and remembers it until the receiver's per-packet
//! feedback (the paper's SIG-ACK) reports its arrival. Feedback feeds the
//! path estimators: RTT, packet-pair bandwidth (pairs flagged by the
//! scheduler), relative one-way delay and loss. A packet is taken as lost
//! when a later packet on the same path is reported (paths are FIFO) or
//! when no report came within the path's RTO.
//!
//! Call order: `send` for each packet to transmit, `handle_feedback` for
//! each feedback frame, `handle_timeout` when `poll_timeout` is due.
//!
//! With `SenderConfig::pacing` the sender keeps a local queue per path and
//! releases it at slightly below the path's estimated rate: use
//! [`Sender::send_paced`] and drain [`Sender::poll_transmit`] whenever
//! `poll_timeout` is due (the caller holds the payloads, keyed by sequence
//! number).

use std::collections::VecDeque;

use crate::path::{EstimatorConfig, PathId, PathParams, PathState, MAX_PATHS};
use crate::repair::{LossClassifier, RepairConfig};
use crate::sched::{PacketInfo, PairRole, Scheduler};
use crate::time::{tx_time, Duration, Instant};
use crate::wire::{self, DataFlags, DataHeader, FeedbackEntry};
use pacing::PairSamples;

/// Sender tuning.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub estimators: EstimatorConfig,
    /// Packets remembered while awaiting feedback (a power of two). The
    /// oldest is given up as lost when the table wraps.
    pub max_in_flight: usize,
    /// Lower bound on how long to wait for feedback before a packet counts as lost.
    pub min_loss_timeout: Duration,
    /// Upper bound on the same.
    pub max_loss_timeout: Duration,
    /// A pair yields a bandwidth sample only if its packets were sent at
    /// most this fraction of their arrival dispersion apart (1.0 = any
    /// dispersion larger than the send gap, the plain packet-pair test).
    /// Not in the paper, whose pairs were back to back. When the packets
    /// left the sender about as far apart as they arrived, the gap is the
    /// sender's spacing plus jitter, not the bottleneck's service time:
    /// downlink TCP ACK pairs (120-byte packets sent one ACK interval
    /// apart) measured a 10 Mbit/s path at 0.4 Mbit/s, and EDPF then
    /// pushed ACKs onto a far path where they held every later ACK in the
    /// client's resequencer.
    pub pair_gap_fraction: f64,
    /// Pace each path with a bandwidth estimate at `pacing_gain` x the
    /// estimate from a local queue, instead of sending at once. Not in the
    /// paper. EDPF's in-order schedule needs a near path to hold a backlog
    /// as long as the delay difference to a far path; a bottleneck buffer
    /// of one bandwidth-delay product (40 ms on a 10 Mbit/s path) cannot
    /// hold the 80 ms a 100 ms path is further away, so PET used a far path
    /// only in bursts, every such packet arrived behind the near queue and
    /// held the stream in the resequencer, and the single TCP's window paid
    /// (MPTCP has a window per subflow). Pacing keeps the bottleneck queue
    /// near empty and moves the backlog into the tunnel, where its length
    /// is known exactly (EDPF's A_l is the local queue, see
    /// `PathState::pacer_free_at`) and as long as EDPF needs, up to the
    /// bound below. Paths without an estimate are not paced. Off by default
    /// (the simulator reproduces the paper); the tunnel turns it on
    /// (`ConnConfig::pacing`).
    pub pacing: bool,
    /// Pacing rate as a fraction of the packet-pair estimate (see
    /// `pacing_rate`): below 1 so that estimation error does not build a
    /// queue at the bottleneck. In the lab the median pair sample was
    /// within 1% of the link rate; 0.97 cost 2-3% of the paths' sum, and
    /// 0.99 and 0.995 both left the bottlenecks without drops (fast-slow,
    /// 15 s: none, at most five packets queued), 0.995 with half a percent
    /// more goodput. A path whose estimate runs high builds a queue that
    /// PET's queue correction sees in its feedback.
    pub pacing_gain: f64,
    /// A packet whose local queue delay would exceed the bound is dropped
    /// (TCP must still see congestion). The bound is `pacing_delay_factor`
    /// x the largest relative one-way delay D among usable paths, plus the
    /// nearest path's minimum RTT R, within [`pacing_min_backlog`,
    /// `pacing_max_backlog`]. EDPF needs a queue of D on the near path to
    /// use the farthest one; after TCP halves its window at a drop (Reno;
    /// CUBIC cuts to 0.7) a queue of Q leaves about Q/2 - R/2, so Q = 2D + R
    /// keeps the far path busy through the sawtooth. With 2D alone, the
    /// fast-slow lab's 2 Mbit/s path fell idle for seconds after a loss.
    ///
    /// [`pacing_min_backlog`, `pacing_max_backlog`]: SenderConfig::pacing_min_backlog
    pub pacing_delay_factor: f64,
    /// Lower end of the pacing queue bound: room for TCP's sawtooth when
    /// the paths are equally far (like a bottleneck buffer).
    pub pacing_min_backlog: Duration,
    /// Upper end of the pacing queue bound. It must exceed twice the
    /// largest delay difference the bond is to use: with 300 ms (the
    /// earlier default) a path 280 ms further away than the near one was
    /// used only while the near queue was between 280 and 300 ms long, so
    /// after every loss TCP's window shrank below the far path and it sat
    /// idle; a path 580 ms further away was never used at all. The
    /// resequencer's largest hold (2 s by default) bounds what a far path
    /// can add anyway, and only a TCP window large enough to fill the
    /// queue ever makes it this long.
    pub pacing_max_backlog: Duration,
    /// A path is paced only while its latest pair sample came from packets
    /// of at least this many bytes. A direction carrying only TCP ACKs
    /// measures its paths with ACK pairs, whose samples can be far off
    /// (see `pair_gap_fraction`; the lab's downlink once estimated a
    /// 8 Mbit/s path at 1.7 Mbit/s): pacing ACKs at such a rate would
    /// delay them for nothing. ACKs need no pacing anyway.
    pub pacing_min_pair_len: u32,
    /// With `pacing`, the first packet of a full-size pair (at least
    /// `pacing_min_pair_len` bytes) on a path that is not paced yet waits
    /// up to this long in the path's queue for its partner, so that the
    /// two leave back to back. Without it the pair leaves as the inner
    /// packets arrive: a TCP flow clocked at about one path's rate hands
    /// them over one service time apart, the pair fails the
    /// `pair_gap_fraction` test, and in the lab a second path without an
    /// estimate stayed unused for up to 3 s after the transfer started
    /// (PET keeps a pair open this long on such a path: `max_pair_gap`).
    pub pair_hold: Duration,
    /// Without pacing, hold the first packet of a full-size pair on a path
    /// that has no bandwidth estimate yet for its partner (up to
    /// `pair_hold`), as `pair_hold` does with pacing. Off by default (the
    /// papers' open-loop PET sends at once); the caller must then use
    /// [`Sender::send_paced`] and [`Sender::poll_transmit`]. The
    /// simulator's worlds turn it on for PET: Phatak et al.'s Fig 4
    /// (a TCP flow clocked at the slower path's rate hands over its packets
    /// one slower-path service time apart) otherwise never measured the
    /// faster path at 8 of 15 bandwidth ratios, and PET-BMP ran at the
    /// slower path's rate.
    pub hold_unmeasured_pairs: bool,
    /// Repair of path losses inside the tunnel (ARQ): off by default (the
    /// simulator reproduces the papers without it); the tunnel turns it
    /// on (`ConnConfig::repair`). See [`crate::repair`].
    pub repair: RepairConfig,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            estimators: EstimatorConfig::default(),
            max_in_flight: 1 << 16,
            min_loss_timeout: Duration::from_millis(200),
            max_loss_timeout: Duration::from_secs(4),
            pair_gap_fraction: 0.5,
            pacing: false,
            pacing_gain: 0.995,
            pacing_delay_factor: 2.0,
            pacing_min_backlog: Duration::from_millis(50),
            pacing_max_backlog: Duration::from_millis(2000),
            pacing_min_pair_len: 1000,
            pair_hold: Duration::from_millis(5),
            hold_unmeasured_pairs: false,
            repair: RepairConfig::default(),
        }
    }
}

/// A scheduled packet: put `header` in front of the inner packet and send
/// it on `path`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub path: PathId,
    pub seq: u64,
    pub header: DataHeader,
}

/// Sender-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub sent: u64,
    pub acked: u64,
    pub lost_fifo: u64,
    pub lost_timeout: u64,
    pub lost_evicted: u64,
    /// Feedback entries that matched nothing in flight (late, duplicate, forged).
    pub feedback_unmatched: u64,
    pub pair_samples: u64,
    /// Packets declared lost whose feedback came after all.
    pub spurious_losses: u64,
    /// No usable path when a packet was offered.
    pub no_path: u64,
    /// Packets put in a pacing queue (not sent at once).
    pub paced: u64,
    /// Packets dropped because their pacing queue was over its bound.
    pub pacing_drops: u64,
    /// Times a paced packet left later than its path's catch-up allowance
    /// and the rest of the path's schedule slipped, and by how much in
    /// all (`Sender::catch_up_allowance`): how often the sending process
    /// ran too late to keep its pace.
    pub pacing_slips: u64,
    pub pacing_slip_ns: u64,
    /// First packets of pairs held for their partner (`SenderConfig::pair_hold`).
    pub pair_holds: u64,
    /// Packets declared lost because a NACK named them.
    pub lost_nack: u64,
    /// Repair copies sent (ARQ).
    pub repairs_sent: u64,
    /// Lost packets not repaired because the loss came with a rising
    /// delay trend (congestion: the inner transport must see it).
    pub repairs_skipped_congestion: u64,
    /// Lost packets given up: too old, too many attempts, or their payload
    /// was no longer retained.
    pub repairs_abandoned: u64,
    /// Losses left to FEC (reactive parity) instead of a resend.
    pub repairs_fec: u64,
    /// Feedback entries reporting a copy on another path than the one the
    /// packet was last sent on (the original arrived after all, or the repair did).
    pub feedback_other_copy: u64,
    /// Redundant copies sent (the redundant mode, `crate::redundancy`),
    /// and their bytes on the paths (inner packet plus tunnel overhead):
    /// what redundancy cost.
    pub redundant_copies: u64,
    pub redundant_bytes: u64,
}

/// What [`Sender::send_paced`] did with a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    /// Send it now.
    Transmit(Transmit),
    /// Queued on `path`; [`Sender::poll_transmit`] releases it later as
    /// sequence number `seq`. The caller keeps the payload until then.
    Queued { seq: u64, path: PathId },
    /// Its path's pacing queue is over the bound: dropped.
    Dropped,
    /// No usable path.
    NoPath,
}

/// A packet in a pacing queue.
#[derive(Copy, Clone, Debug)]
struct Paced {
    tx: Transmit,
    release_at: Instant,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Fate {
    InFlight,
    Acked { rx_ns: u64 },
    Lost,
}

#[derive(Copy, Clone, Debug)]
struct Record {
    seq: u64,
    path: PathId,
    len: u32,
    sent_at: Instant,
    pair: PairRole,
    /// The other packet of the pair.
    partner: Option<u64>,
    /// The scheduler's predicted delivery time.
    eta_ns: Option<i64>,
    fate: Fate,
    /// When the packet was first sent (repairs keep it; `sent_at` moves).
    first_sent_at: Instant,
    /// Repair copies sent so far.
    attempts: u8,
    /// Waiting in the repair queue.
    repair_queued: bool,
}

pub struct Sender {
    cfg: SenderConfig,
    paths: Vec<PathState>,
    sched: Box<dyn Scheduler>,
    next_seq: u64,
    ring: Vec<Option<Record>>,
    /// In-flight sequence numbers of each path slot, in send order.
    unacked: Vec<VecDeque<u64>>,
    last_on_path: [Option<u64>; MAX_PATHS],
    /// First packet of the pair currently open on each path slot.
    open_pair: [Option<u64>; MAX_PATHS],
    /// Pacing queues per path slot, in release order.
    paced: Vec<VecDeque<Paced>>,
    /// When each slot's pacer is free for the next packet.
    pacer_free: [Option<Instant>; MAX_PATHS],
    /// Release time of the last packet queued on each slot, and its seq.
    last_release: [Option<(u64, Instant)>; MAX_PATHS],
    /// The path's latest pair sample came from packets large enough to pace on.
    pace_ok: [bool; MAX_PATHS],
    /// The latest full-size pair samples of each path and their median.
    pair_samples: [PairSamples; MAX_PATHS],
    /// Lost packets waiting for a repair copy, oldest loss first.
    repair_queue: VecDeque<u64>,
    /// Lost packets that will not be repaired, to tell the receiver.
    unrepaired: Vec<u64>,
    /// Per path slot: congestion or random loss (R-MTP §3.2).
    classifier: [LossClassifier; MAX_PATHS],
    /// Per path slot repair counters.
    path_repair: [PathRepairStats; MAX_PATHS],
    stats: SenderStats,
    /// Send time of the latest-sent packet reported so far (`rack`).
    rack_sent_at: Option<Instant>,
}

/// Repair counters of one path.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct PathRepairStats {
    /// Losses of this path that were repaired (a copy was sent).
    pub losses_repaired: u64,
    /// Losses of this path taken for congestion and left to the inner transport.
    pub losses_congestion: u64,
    /// Repair copies this path carried.
    pub repairs_carried: u64,
    /// The latest loss rate the peer's receiver reported for this path
    /// (NACK frames; loss events per packet).
    pub peer_loss_rate: f64,
    /// Redundant copies this path carried, and their bytes.
    pub copies_carried: u64,
    pub copy_bytes_carried: u64,
}

fn slot(id: PathId) -> usize {
    id.0 as usize % MAX_PATHS
}

impl Sender {
    pub fn new(cfg: SenderConfig, sched: Box<dyn Scheduler>) -> Self {
        let cap = cfg.max_in_flight.next_power_of_two().max(16);
        Sender {
            ring: vec![None; cap],
            unacked: (0..MAX_PATHS).map(|_| VecDeque::new()).collect(),
            cfg,
            paths: Vec::new(),
            sched,
            next_seq: 0,
            last_on_path: [None; MAX_PATHS],
            open_pair: [None; MAX_PATHS],
            paced: (0..MAX_PATHS).map(|_| VecDeque::new()).collect(),
            pacer_free: [None; MAX_PATHS],
            last_release: [None; MAX_PATHS],
            pace_ok: [false; MAX_PATHS],
            pair_samples: [PairSamples::default(); MAX_PATHS],
            repair_queue: VecDeque::new(),
            unrepaired: Vec::new(),
            classifier: [LossClassifier::default(); MAX_PATHS],
            path_repair: [PathRepairStats::default(); MAX_PATHS],
            stats: SenderStats::default(),
            rack_sent_at: None,
        }
    }

    /// A loss on `path` found by a detector outside the sender (PRISM's
    /// reverse-path controller, `crate::rpc`), passed to the scheduler's
    /// [`Scheduler::on_loss`] (ADAS halves the link's weight).
    pub fn report_loss(&mut self, path: PathId) {
        self.sched.on_loss(path);
    }

    pub fn scheduler_name(&self) -> &'static str {
        self.sched.name()
    }

    /// Adds a path (or resets one with the same id). At most [`MAX_PATHS`].
    pub fn add_path(&mut self, id: PathId, params: PathParams) {
        let st = PathState::new(id, params, &self.cfg.estimators);
        if let Some(i) = self.paths.iter().position(|p| p.id == id) {
            self.paths[i] = st;
        } else if self.paths.len() < MAX_PATHS {
            self.paths.push(st);
        } else {
            return;
        }
        self.sched.paths_changed(&self.paths);
    }

    /// Removes a path; its packets in flight count as lost.
    pub fn remove_path(&mut self, now: Instant, id: PathId) {
        let n = self.unacked[slot(id)].len();
        self.declare_lost_front(id, n, now, LossCause::Timeout);
        self.paths.retain(|p| p.id != id);
        self.last_on_path[slot(id)] = None;
        self.open_pair[slot(id)] = None;
        self.paced[slot(id)].clear();
        self.pacer_free[slot(id)] = None;
        self.last_release[slot(id)] = None;
        self.pace_ok[slot(id)] = false;
        self.pair_samples[slot(id)] = PairSamples::default();
        self.classifier[slot(id)] = LossClassifier::default();
        self.sched.paths_changed(&self.paths);
    }

    /// A round trip measured on the path outside the data stream (a
    /// keepalive and its echo): kept as the path's [`PathState::rtt_hint`]
    /// (the smallest seen).
    pub fn on_path_rtt_sample(&mut self, id: PathId, rtt: Duration) {
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == id) {
            p.rtt_hint = Some(p.rtt_hint.map_or(rtt, |h| h.min(rtt)));
        }
    }

    /// The connection sent on a path it has never heard from (`Some`, the
    /// first time), or heard from it (`None`): see
    /// [`PathState::silent_since`].
    pub fn set_path_silent_since(&mut self, id: PathId, since: Option<Instant>) {
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == id) {
            p.silent_since = since.and(p.silent_since.or(since));
        }
    }

    /// A keepalive from the peer arrived on the path: `raw_ns` is the
    /// arrival time less its send time in the peer's clock (kept as the
    /// path's [`PathState::owd_hint_raw_ns`], the smallest seen).
    pub fn on_path_owd_sample(&mut self, id: PathId, raw_ns: i64) {
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == id) {
            p.owd_hint_raw_ns = Some(p.owd_hint_raw_ns.map_or(raw_ns, |h| h.min(raw_ns)));
        }
    }

    /// Allows or forbids scheduling on a path (liveness decisions are the caller's).
    pub fn set_usable(&mut self, id: PathId, usable: bool) {
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == id) {
            if p.usable != usable {
                p.usable = usable;
                self.sched.paths_changed(&self.paths);
            }
        }
    }

    pub fn paths(&self) -> &[PathState] {
        &self.paths
    }

    pub fn path(&self, id: PathId) -> Option<&PathState> {
        self.paths.iter().find(|p| p.id == id)
    }

    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// The next sequence number `send` will assign.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Schedules one packet of `pkt.len` bytes. `None` when no path is usable
    /// (the caller drops the packet; TCP recovers it), and with pacing also
    /// when the packet was queued or dropped (use [`Sender::send_paced`]).
    pub fn send(&mut self, now: Instant, pkt: &PacketInfo) -> Option<Transmit> {
        match self.send_paced(now, pkt) {
            SendOutcome::Transmit(t) => Some(t),
            _ => None,
        }
    }

    /// Schedules one packet of `pkt.len` bytes; with pacing it may be
    /// queued (or dropped) instead of sent now.
    pub fn send_paced(&mut self, now: Instant, pkt: &PacketInfo) -> SendOutcome {
        if self.cfg.pacing {
            for i in 0..self.paths.len() {
                let s = slot(self.paths[i].id);
                let paced =
                    self.pacing_rate(s).is_some() && self.paths[i].bw.estimate_bps().is_some();
                self.paths[i].pacer_free_at = paced.then(|| self.pacer_free[s].unwrap_or(now));
            }
        }
        let Some(d) = self.sched.select(now, pkt, &self.paths) else {
            self.stats.no_path += 1;
            return SendOutcome::NoPath;
        };
        // Pacing: when this packet may leave.
        let mut release_at = None;
        let chosen = &self.paths[d.index];
        let s = slot(chosen.id);
        if let (Some(_), Some(rate)) = (chosen.pacer_free_at, self.pacing_rate(s)) {
            let free = self.pacer_free[s].unwrap_or(now).max(now);
            // The two packets of a pair leave back to back (the pair must
            // queue at the bottleneck to measure it); the pacer is charged
            // for both.
            let at = match (d.pair, self.open_pair[s], self.last_release[s]) {
                (PairRole::Second, Some(first), Some((last, t))) if first == last => t.max(now),
                _ => free,
            };
            if at.saturating_since(now) > self.pacing_bound(now) {
                self.stats.pacing_drops += 1;
                if d.pair == PairRole::First {
                    self.open_pair[s] = None;
                }
                return SendOutcome::Dropped;
            }
            let gap = crate::time::tx_time(pkt.len, rate);
            self.pacer_free[s] = Some(free + gap);
            self.last_release[s] = Some((self.next_seq, at));
            release_at = Some(at);
        }
        // Not paced: hold the first packet of a full-size pair for its partner.
        let unpaced = release_at.is_none();
        let may_hold = if self.cfg.pacing {
            true
        } else {
            self.cfg.hold_unmeasured_pairs && self.paths[d.index].bw.estimate_bps().is_none()
        };
        if unpaced
            && may_hold
            && d.pair == PairRole::First
            && pkt.len >= self.cfg.pacing_min_pair_len
            && self.cfg.pair_hold > Duration::ZERO
        {
            release_at = Some(now + self.cfg.pair_hold);
            self.stats.pair_holds += 1;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let p = &mut self.paths[d.index];
        let id = p.id;
        let s = slot(id);
        p.in_flight_packets += 1;
        p.in_flight_bytes += pkt.len as u64;
        p.sent_packets += 1;
        p.sent_bytes += pkt.len as u64;
        p.last_sent = Some(now);

        let prev_delta = match self.last_on_path[s] {
            Some(prev) if seq - prev <= u16::MAX as u64 => (seq - prev) as u16,
            _ => 0,
        };
        self.last_on_path[s] = Some(seq);

        let mut flags = 0;
        let mut partner = None;
        match d.pair {
            PairRole::First => {
                flags |= DataFlags::PAIR_FIRST;
                self.open_pair[s] = Some(seq);
            }
            PairRole::Second => {
                flags |= DataFlags::PAIR_SECOND;
                partner = self.open_pair[s].take();
                if let Some(first) = partner {
                    if let Some(r) = self.record_mut(first) {
                        r.partner = Some(seq);
                    }
                    // A held first packet leaves now, this one right behind it.
                    if unpaced {
                        if let Some(q) = self.paced[s].iter_mut().find(|q| q.tx.seq == first) {
                            q.release_at = q.release_at.min(now);
                        }
                    }
                }
            }
            PairRole::None => {}
        }
        if pkt.retransmit {
            flags |= DataFlags::RETRANSMIT;
        }
        if d.probe {
            flags |= DataFlags::PROBE;
        }

        let idx = (seq as usize) & (self.ring.len() - 1);
        if let Some(old) = self.ring[idx] {
            if old.fate == Fate::InFlight {
                self.stats.lost_evicted += 1;
                if let Some(i) = self.position(old.path, old.seq) {
                    self.declare_lost_front(old.path, i + 1, now, LossCause::Evicted);
                }
            }
        }
        self.ring[idx] = Some(Record {
            seq,
            path: id,
            len: pkt.len,
            sent_at: now,
            pair: d.pair,
            partner,
            eta_ns: d.eta_ns,
            fate: Fate::InFlight,
            first_sent_at: now,
            attempts: 0,
            repair_queued: false,
        });
        self.unacked[s].push_back(seq);
        self.stats.sent += 1;
        let tx = Transmit {
            path: id,
            seq,
            header: DataHeader {
                flags: DataFlags(flags),
                path: id,
                prev_delta,
                seq: seq as u32,
            },
        };
        match release_at {
            Some(at) if at > now || !self.paced[s].is_empty() => {
                self.paced[s].push_back(Paced { tx, release_at: at });
                self.stats.paced += 1;
                SendOutcome::Queued { seq, path: id }
            }
            // Not paced, but must not overtake what is queued on the path.
            _ if !self.paced[s].is_empty() => {
                self.paced[s].push_back(Paced {
                    tx,
                    release_at: now,
                });
                self.stats.paced += 1;
                SendOutcome::Queued { seq, path: id }
            }
            _ => SendOutcome::Transmit(tx),
        }
    }

    fn record_mut(&mut self, seq: u64) -> Option<&mut Record> {
        let idx = (seq as usize) & (self.ring.len() - 1);
        self.ring[idx].as_mut().filter(|r| r.seq == seq)
    }

    /// Processes the entries of one feedback frame.
    pub fn handle_feedback(
        &mut self,
        now: Instant,
        entries: impl IntoIterator<Item = FeedbackEntry>,
    ) {
        for e in entries {
            self.on_entry(now, None, e);
        }
    }

    /// Processes the entries of one feedback frame that reports arrivals
    /// on `path` (the frame's path field). With repair a packet may have
    /// copies on two paths; an entry from another path than the packet's
    /// latest copy acknowledges it without applying the FIFO rule or
    /// taking delay samples on the wrong path.
    pub fn handle_feedback_on(
        &mut self,
        now: Instant,
        path: PathId,
        entries: impl IntoIterator<Item = FeedbackEntry>,
    ) {
        for e in entries {
            self.on_entry(now, Some(path), e);
        }
    }

    fn on_entry(&mut self, now: Instant, on: Option<PathId>, e: FeedbackEntry) {
        let seq = wire::seq::extend(e.seq, self.next_seq.saturating_sub(1));
        let Some(rec) = self.record_mut(seq).copied() else {
            self.stats.feedback_unmatched += 1;
            return;
        };
        if seq >= self.next_seq || matches!(rec.fate, Fate::Acked { .. }) {
            self.stats.feedback_unmatched += 1;
            return;
        }
        if on.is_some_and(|p| p != rec.path) {
            self.ack_other_copy(seq, rec, e.rx_time_ns);
            return;
        }
        let was_in_flight = rec.fate == Fate::InFlight;
        if was_in_flight {
            // Paths are FIFO: anything sent before this on the same path and
            // still unreported was lost (PRISM §5.2.3, threshold 1).
            if let Some(i) = self.position(rec.path, seq) {
                self.declare_lost_front(rec.path, i, now, LossCause::Fifo);
                self.unacked[slot(rec.path)].pop_front();
            }
        } else {
            // Given up too early (the path is slower than its timeout
            // assumed): the report still measures the path.
            self.stats.spurious_losses += 1;
        }
        if let Some(r) = self.record_mut(seq) {
            r.fate = Fate::Acked {
                rx_ns: e.rx_time_ns,
            };
        }
        self.stats.acked += 1;
        self.rack_on_delivered(rec.sent_at);

        let Some(p) = self.paths.iter_mut().find(|p| p.id == rec.path) else {
            return;
        };
        if was_in_flight {
            p.in_flight_packets = p.in_flight_packets.saturating_sub(1);
            p.in_flight_bytes = p.in_flight_bytes.saturating_sub(rec.len as u64);
            p.loss.on_delivered(1);
        }
        p.acked_packets += 1;
        p.acked_bytes += rec.len as u64;
        p.last_feedback = Some(now);
        if rec.attempts > 0 {
            // Karn: a repaired packet's report may belong to either copy.
            return;
        }
        p.rtt.update(now.saturating_since(rec.sent_at));
        // Relative one-way delay: receiver clock minus sender clock, less
        // this packet's own serialisation so that D_l is the wireline part.
        let ser =
            p.bw.estimate_bps()
                .map(|r| tx_time(rec.len, r).as_nanos() as i64)
                .unwrap_or(0);
        p.owd.on_sample(
            now,
            e.rx_time_ns as i64 - rec.sent_at.as_nanos() as i64 - ser,
        );
        let queueing = p.owd.queueing_delay();
        self.classifier[slot(rec.path)].on_queueing_sample(queueing);
        if let Some(eta) = rec.eta_ns {
            // Arrival in the scheduler's frame (relative delays): receiver
            // clock minus the smallest base offset of any path.
            if let Some(min_base) = self.paths.iter().filter_map(|q| q.owd.base_raw_ns()).min() {
                let p = self
                    .paths
                    .iter()
                    .find(|p| p.id == rec.path)
                    .expect("found above");
                self.sched
                    .on_delivery(p, eta, e.rx_time_ns as i64 - min_base);
            }
        }

        // Packet pair: dispersion of the two arrivals (PET/BMP Section V-A).
        let Some(partner) = rec.partner else { return };
        let Some(other) = self.record_mut(partner).copied() else {
            return;
        };
        let Fate::Acked { rx_ns: other_rx } = other.fate else {
            return;
        };
        let (first, second, rx1, rx2) = if rec.pair == PairRole::Second {
            (other, rec, other_rx, e.rx_time_ns)
        } else {
            (rec, other, e.rx_time_ns, other_rx)
        };
        if rx2 <= rx1 {
            return;
        }
        let dispersion = Duration::from_nanos(rx2 - rx1);
        let tx_gap = second.sent_at.saturating_since(first.sent_at);
        // Only a gap the bottleneck created measures it: if the sender
        // spaced the packets more than they arrived, they never queued together.
        if dispersion <= tx_gap
            || tx_gap.as_secs_f64() > dispersion.as_secs_f64() * self.cfg.pair_gap_fraction
        {
            return;
        }
        let p = self
            .paths
            .iter_mut()
            .find(|p| p.id == rec.path)
            .expect("path checked above");
        if let Some(sample) = p.bw.on_pair(second.len, dispersion) {
            self.stats.pair_samples += 1;
            let s = slot(rec.path);
            self.pace_ok[s] = second.len >= self.cfg.pacing_min_pair_len;
            if self.pace_ok[s] {
                self.pair_samples[s].push(sample);
            }
        }
    }

    /// Where `seq` stands in the path's queue of unreported packets (send order).
    fn position(&self, path: PathId, seq: u64) -> Option<usize> {
        self.unacked[slot(path)].iter().position(|&x| x == seq)
    }

    /// Takes the first `n` entries of the path's queue of unreported
    /// packets (send order) and declares those still in flight lost.
    fn declare_lost_front(&mut self, path: PathId, n: usize, now: Instant, cause: LossCause) {
        let s = slot(path);
        for _ in 0..n {
            let Some(front) = self.unacked[s].pop_front() else {
                break;
            };
            self.mark_lost(path, front, now, cause);
        }
    }

    /// Declares one packet lost if it is still in flight on `path`, and
    /// queues its repair when that is allowed.
    fn mark_lost(&mut self, path: PathId, seq: u64, now: Instant, cause: LossCause) {
        let idx = (seq as usize) & (self.ring.len() - 1);
        let Some(r) = self.ring[idx].as_mut().filter(|r| r.seq == seq) else {
            return;
        };
        if r.fate != Fate::InFlight || r.path != path {
            return;
        }
        r.fate = Fate::Lost;
        let len = r.len;
        match cause {
            LossCause::Fifo => self.stats.lost_fifo += 1,
            LossCause::Timeout => self.stats.lost_timeout += 1,
            LossCause::Nack => self.stats.lost_nack += 1,
            LossCause::Evicted => {}
        }
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == path) {
            p.in_flight_packets = p.in_flight_packets.saturating_sub(1);
            p.in_flight_bytes = p.in_flight_bytes.saturating_sub(len as u64);
            p.loss.on_lost(1);
        }
        if cause != LossCause::Evicted {
            self.consider_repair(path, seq, now);
        }
    }

    fn loss_timeout(&self, p: &PathState) -> Duration {
        if !p.rtt.has_samples() {
            let repair = self.cfg.repair.mode != crate::repair::RepairMode::Off;
            return match p.rtt_hint {
                // No data reported yet, but keepalives measured the path:
                // RFC 6298 2.2's first RTO from that round trip (SRTT = R,
                // RTTVAR = R/2), with repair's half RTT of margin. Waiting
                // the longest here held the first losses on a lossy path
                // (the server's first TCP ACKs on it) for 4 s, and the
                // inner TCP's RTO backed off to seconds.
                Some(h) if repair => (h * 3 + h / 2)
                    .max(self.cfg.min_loss_timeout)
                    .min(self.cfg.max_loss_timeout),
                // Nothing known about the path yet: it may be far slower
                // than the default RTT (a 1 s satellite hop); wait the longest.
                _ => self.cfg.max_loss_timeout,
            };
        }
        let rto = p.rtt.rto(
            Duration::from_millis(1),
            self.cfg.min_loss_timeout,
            self.cfg.max_loss_timeout,
        );
        if self.cfg.repair.mode == crate::repair::RepairMode::Off {
            return rto;
        }
        // With repair a spurious timeout costs a copy of the packet on
        // another path, and the receiver's NACKs find every loss that a
        // later packet on the path reveals: the timeout is left for tail
        // losses, with half the RTT more margin against feedback jitter.
        (rto + p.rtt.srtt() / 2).min(self.cfg.max_loss_timeout)
    }

    /// The oldest in-flight packet of a path and when it times out.
    ///
    /// A packet still in the path's pacing queue has not left: its
    /// timeout starts when it does (`Instant::FAR_FUTURE` until then).
    /// Counting from when it was queued declared packets behind a long
    /// pacing queue on a far path lost while they were still on their
    /// way, and with repair each such packet was sent twice.
    fn oldest_deadline(&self, p: &PathState) -> Option<(u64, Instant)> {
        let s = slot(p.id);
        let q = &self.unacked[s];
        let &seq = q.front()?;
        let idx = (seq as usize) & (self.ring.len() - 1);
        let r = self.ring[idx].filter(|r| r.seq == seq)?;
        if self.paced[s].front().is_some_and(|q| q.tx.seq == seq) {
            return Some((seq, Instant::FAR_FUTURE));
        }
        let timeout = r.sent_at + self.loss_timeout(p);
        let rack = self.rack_deadline(p, r.sent_at);
        Some((seq, rack.map_or(timeout, |t| t.min(timeout))))
    }

    /// Declares packets lost whose feedback is overdue. Extra calls are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        for i in 0..self.paths.len() {
            loop {
                let p = &self.paths[i];
                match self.oldest_deadline(p) {
                    Some((_, deadline)) if deadline <= now => {
                        let id = p.id;
                        self.declare_lost_front(id, 1, now, LossCause::Timeout);
                    }
                    Some(_) => break,
                    None => {
                        // Stale head entry (already acked or evicted): drop it.
                        let s = slot(p.id);
                        if self.unacked[s].pop_front().is_none() {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// When `handle_timeout` next has work.
    /// Also when the next paced packet is due for `poll_transmit`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let pacing = self
            .paced
            .iter()
            .filter_map(|q| q.front().map(|p| p.release_at));
        self.paths
            .iter()
            .filter_map(|p| self.oldest_deadline(p).map(|(_, d)| d))
            .filter(|&d| d != Instant::FAR_FUTURE)
            .chain(pacing)
            .min()
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LossCause {
    Fifo,
    Timeout,
    Evicted,
    /// The peer's receiver reported it (NACK).
    Nack,
}

pub mod fec;
mod pacing;
mod rack;
mod redundancy;
mod repair;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_copies;
