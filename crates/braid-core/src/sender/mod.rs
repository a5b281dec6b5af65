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
//! `poll_timeout` is due. A queued packet has one owner, the sender: it
//! keeps the payload (`P`, the inner packet in the tunnel) in the path's
//! queue and hands it back with the packet's header when it is due.

use std::collections::VecDeque;

use crate::path::{PathId, PathParams, PathState, MAX_PATHS};
use crate::sched::{Decision, PacketInfo, PairRole, Scheduler, SendQueues};
use crate::time::{Duration, Instant};
use crate::wire::{DataFlags, DataHeader};
use bound::retransmit_bound;
use loss::LossCause;
use pacing::PairSamples;
use path_sender::{Paced, PathSender};

pub use config::SenderConfig;
pub use repair::Repair;
pub use stats::{PathRepairStats, SenderStats};

/// A scheduled packet: put `header` in front of the inner packet and send
/// it on `path`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub path: PathId,
    pub seq: u64,
    pub header: DataHeader,
}

impl Transmit {
    /// Another copy of packet `seq` on `path`: a repair or a redundant
    /// copy. Flagged `REPAIR`, with no previous-on-path link, so that the
    /// receiver's per-path loss detection does not count on it.
    pub(crate) fn copy(path: PathId, seq: u64) -> Transmit {
        Transmit {
            path,
            seq,
            header: DataHeader {
                flags: DataFlags(DataFlags::REPAIR),
                path,
                prev_delta: 0,
                seq: seq as u32,
            },
        }
    }
}

/// What [`Sender::send_paced`] did with a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    /// Send it now.
    Transmit(Transmit),
    /// Queued on `path` with its payload; [`Sender::poll_transmit`]
    /// releases both later as sequence number `seq`.
    Queued { seq: u64, path: PathId },
    /// Its path's pacing queue is over the bound: dropped.
    Dropped,
    /// No usable path.
    NoPath,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Fate {
    InFlight,
    Acked { rx_ns: u64 },
    Lost,
}

#[derive(Copy, Clone, Debug)]
pub(super) struct Record {
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
    /// When the packet's original left (queued for pacing: when the pacer
    /// released it); repairs keep it, `sent_at` moves.
    first_sent_at: Instant,
    /// The path of the first transmission while no other copy has gone on
    /// it: a report from that path is then the original's, and its round
    /// trip a sound sample even after a repair (see `ack_other_copy`).
    original: Option<PathId>,
    /// A path its repair must not take: the one it is stranded on
    /// (`stranded.rs`).
    avoid: Option<PathId>,
    /// Repair copies sent so far.
    attempts: u8,
    /// Copies sent on `path` (the latest copy's) since a copy last went
    /// on another path; the original counts.
    here_copies: u8,
    /// Reports from `path` of those copies so far.
    here_reports: u8,
    /// Waiting in the repair queue.
    repair_queued: bool,
    /// The packet sent on the same path before this one: its arrival
    /// tells whether this one arrived in a burst released after a hold
    /// (see `Sender::compressed_pair`).
    prev_on_path: Option<u64>,
}

impl Record {
    /// A copy of the packet goes on `path`: a report from there may now be
    /// either copy's, so it no longer names the original (`original`).
    fn copy_on(&mut self, path: PathId) {
        if self.original == Some(path) {
            self.original = None;
        }
        if self.path == path {
            self.here_copies = self.here_copies.saturating_add(1);
        } else {
            self.here_copies = 1;
            self.here_reports = 0;
        }
    }

    /// Counts a report from the latest copy's path; whether it is that
    /// copy's own. Paths are FIFO, so the copies on one path arrive in
    /// the order they left, and the report that brings their count to
    /// the number sent there is the latest copy's: its round trip is
    /// unambiguous although the packet was repaired.
    fn report_here(&mut self) -> bool {
        self.here_reports = self.here_reports.saturating_add(1);
        self.here_reports == self.here_copies
    }
}

/// The sender of one direction. `P` is the payload a packet waiting in a
/// pacing queue carries (the inner packet in the tunnel; `()` where the
/// caller keeps no payload).
pub struct Sender<P = ()> {
    cfg: SenderConfig,
    paths: Vec<PathState>,
    sched: Box<dyn Scheduler>,
    next_seq: u64,
    ring: Vec<Option<Record>>,
    /// The sender's own state of each path, by slot ([`slot`]).
    per_path: Vec<PathSender<P>>,
    /// Lost packets waiting for a repair copy, oldest loss first.
    repair_queue: VecDeque<u64>,
    /// Lost packets that will not be repaired, to tell the receiver.
    unrepaired: Vec<u64>,
    stats: SenderStats,
    /// Send time of the latest-sent packet reported so far (`rack`).
    rack_sent_at: Option<Instant>,
    /// The bound held after a path left use, and the first send after
    /// the leave (`Sender::note_paths_left`): the pacing bound at the last
    /// send before it, or what the remaining paths then had to deliver
    /// (`Sender::window_at_leave`) if longer. The bound stays there for
    /// `BOUND_HOLD_AFTER_LEAVE` and then falls gradually
    /// (`Sender::pacing_bound_now`). A quiet path's delay, if it went
    /// quiet before it left, is part of it. Until that send, repairs and
    /// copies see the remaining paths' bound.
    bound_at_leave: Option<(Duration, Instant)>,
    /// The pacing bound at the last send, and the usable paths then (a
    /// bit per slot).
    bound_last: Option<(Duration, u32)>,
}

impl Sender {
    /// Schedules one packet of `pkt.len` bytes, for a caller that keeps no
    /// payload. `None` when no path is usable (the caller drops the
    /// packet; TCP recovers it), and with pacing also when the packet was
    /// queued or dropped (use [`Sender::send_paced`]).
    pub fn send(&mut self, now: Instant, pkt: &PacketInfo) -> Option<Transmit> {
        match self.send_paced(now, pkt, || ()) {
            SendOutcome::Transmit(t) => Some(t),
            _ => None,
        }
    }
}

fn slot(id: PathId) -> usize {
    id.0 as usize % MAX_PATHS
}

impl<P> Sender<P> {
    pub fn new(cfg: SenderConfig, sched: Box<dyn Scheduler>) -> Self {
        let cap = cfg.max_in_flight.next_power_of_two().max(16);
        Sender {
            ring: vec![None; cap],
            per_path: (0..MAX_PATHS).map(|_| PathSender::default()).collect(),
            cfg,
            paths: Vec::new(),
            sched,
            next_seq: 0,
            repair_queue: VecDeque::new(),
            unrepaired: Vec::new(),
            stats: SenderStats::default(),
            rack_sent_at: None,
            bound_at_leave: None,
            bound_last: None,
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
        self.per_path[slot(id)].quiet = None;
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
        let n = self.per_path[slot(id)].unacked.len();
        self.declare_lost_front(id, n, now, LossCause::Timeout);
        self.paths.retain(|p| p.id != id);
        self.per_path[slot(id)].reset_removed();
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
                if usable {
                    self.per_path[slot(id)].back_from = Some(self.next_seq);
                }
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

    /// Schedules one packet of `pkt.len` bytes; with pacing it may be
    /// queued (or dropped) instead of sent now. `payload` is called only
    /// when the packet is queued: its result waits in the queue and
    /// [`Sender::poll_transmit`] returns it with the packet's header.
    pub fn send_paced(
        &mut self,
        now: Instant,
        pkt: &PacketInfo,
        payload: impl FnOnce() -> P,
    ) -> SendOutcome {
        let bound = self.note_paths_left(now);
        self.note_overdue(now);
        let queues = self.send_queues(now);
        let d = match self.sched.select(now, pkt, &self.paths, &queues) {
            Some(d) => d,
            None => {
                let Some(index) = self.blind_path() else {
                    self.stats.no_path += 1;
                    return SendOutcome::NoPath;
                };
                self.stats.sent_blind += 1;
                Decision::single(index)
            }
        };
        self.send_decided(now, pkt, d, &queues, bound, payload)
    }

    /// With no path usable, the path last heard from (its latest report),
    /// if any was: a packet goes on it as it would go on a link without a
    /// tunnel, rather than being dropped.
    ///
    /// Why: a path is taken out of use after a silence and comes back only
    /// when something from it arrives, a keepalive's answer a round trip
    /// after the link returned at best. Everything the inner TCP sends
    /// meanwhile was dropped, and while every path is down that is its
    /// retransmission timer's resend, its only packet for a second and
    /// more: one that left in the half second between the link's return
    /// and the path's cost it its next, doubled timer. One 32.19 Mbit/s
    /// path 166 ms away, dark for 2.4 s (change set 18/13's fast path
    /// alone, simulated after 3 s idle): the inner TCP resent 0.04 s after
    /// the link came back, the tunnel still held the path down, and the
    /// next resend came 3 s later: 14.46 Mbit/s where TCP alone, whose
    /// second resend left 0.10 s after the link came back and went
    /// through, carries 24.33.
    /// Sent blind, a packet on a link still dark is lost as it would have
    /// been dropped; one on a link that is back brings the path up at the
    /// peer as well.
    fn blind_path(&self) -> Option<usize> {
        if self.paths.iter().any(|p| p.usable) {
            return None;
        }
        self.paths
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((p.last_feedback?, i)))
            .max()
            .map(|(_, i)| i)
    }

    /// Sends one packet of a rate probe pair on path `id`, outside the
    /// scheduler: the tunnel measures a path it has no rate estimate for
    /// while nothing else is in flight (`conn::tunnel`'s rate probes). The
    /// packet is numbered, paired and reported like any other; the caller
    /// sends the `First` and then at once the `Second`. The path need not
    /// be usable yet: as the client's startup hold keeps its first packet,
    /// a path not up yet is probed, so that the pair's reports come back
    /// about when the path comes up (`conn::tunnel`'s rate probes).
    pub fn send_rate_probe(
        &mut self,
        now: Instant,
        id: PathId,
        role: PairRole,
        pkt: &PacketInfo,
        payload: impl FnOnce() -> P,
    ) -> SendOutcome {
        let Some(index) = self.paths.iter().position(|p| p.id == id) else {
            return SendOutcome::NoPath;
        };
        let queues = self.send_queues(now);
        let d = Decision {
            index,
            pair: role,
            probe: true,
            eta_ns: None,
        };
        self.send_decided(now, pkt, d, &queues, None, payload)
    }

    /// Packet `seq` and its partner no longer make a pair: their reports
    /// give no rate sample (a sample already taken stays). For a rate
    /// probe whose answer would come too late to be of use
    /// (`conn::tunnel`'s early probes, given up when data ends the
    /// startup hold).
    pub fn unpair(&mut self, seq: u64) {
        let partner = self.record_mut(seq).and_then(|r| r.partner.take());
        if let Some(r) = partner.and_then(|p| self.record_mut(p)) {
            r.partner = None;
        }
    }

    /// Whether no packet is in flight on any path, queued by the pacer or
    /// waiting for repair.
    pub fn is_idle(&self) -> bool {
        self.paths.iter().all(|p| p.in_flight_packets == 0)
            && self.per_path.iter().all(|s| s.paced.is_empty())
            && !self.has_repairs()
    }

    /// Sends a packet where `d` says (the scheduler's decision, or a rate
    /// probe's). `bound` is the pacing bound at `now` if the caller has it
    /// (`Sender::note_paths_left`); otherwise it is computed if needed.
    fn send_decided(
        &mut self,
        now: Instant,
        pkt: &PacketInfo,
        d: Decision,
        queues: &SendQueues,
        bound: Option<Duration>,
        payload: impl FnOnce() -> P,
    ) -> SendOutcome {
        // Pacing: when this packet may leave.
        let mut release_at = None;
        let chosen = &self.paths[d.index];
        let s = slot(chosen.id);
        if let (Some(_), Some(rate)) = (queues.free_at(chosen.id), self.pacing_rate(s)) {
            let free = self.per_path[s].pacer_free.unwrap_or(now).max(now);
            // The two packets of a pair leave back to back (the pair must
            // queue at the bottleneck to measure it); the pacer is charged
            // for both.
            let at = match (
                d.pair,
                self.per_path[s].open_pair,
                self.per_path[s].last_release,
            ) {
                (PairRole::Second, Some(first), Some((last, t))) if first == last => t.max(now),
                _ => free,
            };
            let bound = bound.unwrap_or_else(|| self.pacing_bound_now(now));
            let wait = at.saturating_since(now);
            let limit = retransmit_bound(&self.cfg, bound);
            let over = if pkt.retransmit {
                wait > limit
            } else {
                let past = self.per_path[s].retransmits_past_bound.queued(now);
                wait.saturating_sub(past) > bound || wait > limit
            };
            if over {
                self.stats.pacing_drops += 1;
                if d.pair == PairRole::First {
                    self.per_path[s].open_pair = None;
                }
                return SendOutcome::Dropped;
            }
            let gap = crate::time::tx_time(pkt.len, rate);
            if pkt.retransmit && wait > bound {
                self.per_path[s].retransmits_past_bound.push(now, at, gap);
            }
            self.per_path[s].pacer_free = Some(free + gap);
            self.per_path[s].last_release = Some((self.next_seq, at));
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

        let prev_on_path = self.per_path[s].last_seq;
        let prev_delta = match prev_on_path {
            Some(prev) if seq - prev <= u16::MAX as u64 => (seq - prev) as u16,
            _ => 0,
        };
        self.per_path[s].last_seq = Some(seq);

        let mut flags = 0;
        let mut partner = None;
        match d.pair {
            PairRole::First => {
                flags |= DataFlags::PAIR_FIRST;
                self.per_path[s].open_pair = Some(seq);
            }
            PairRole::Second => {
                flags |= DataFlags::PAIR_SECOND;
                partner = self.per_path[s].open_pair.take();
                if let Some(first) = partner {
                    if let Some(r) = self.record_mut(first) {
                        r.partner = Some(seq);
                    }
                    // A held first packet leaves now, this one right behind it.
                    if unpaced {
                        if let Some(q) = self.per_path[s]
                            .paced
                            .iter_mut()
                            .find(|q| q.tx.seq == first)
                        {
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
            original: Some(id),
            avoid: None,
            attempts: 0,
            here_copies: 1,
            here_reports: 0,
            repair_queued: false,
            prev_on_path,
        });
        self.per_path[s].unacked.push_back(seq);
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
            Some(at) if at > now || !self.per_path[s].paced.is_empty() => {
                self.per_path[s].paced.push_back(Paced {
                    tx,
                    release_at: at,
                    payload: payload(),
                });
                self.stats.paced += 1;
                SendOutcome::Queued { seq, path: id }
            }
            // Not paced, but must not overtake what is queued on the path.
            _ if !self.per_path[s].paced.is_empty() => {
                self.per_path[s].paced.push_back(Paced {
                    tx,
                    release_at: now,
                    payload: payload(),
                });
                self.stats.paced += 1;
                SendOutcome::Queued { seq, path: id }
            }
            _ => SendOutcome::Transmit(tx),
        }
    }

    pub(super) fn record(&self, seq: u64) -> Option<&Record> {
        let idx = (seq as usize) & (self.ring.len() - 1);
        self.ring[idx].as_ref().filter(|r| r.seq == seq)
    }

    pub(super) fn record_mut(&mut self, seq: u64) -> Option<&mut Record> {
        let idx = (seq as usize) & (self.ring.len() - 1);
        self.ring[idx].as_mut().filter(|r| r.seq == seq)
    }
}

mod bound;
mod config;
pub mod fec;
mod feedback;
mod loss;
mod overdue;
mod pace_samples;
mod pacing;
mod path_sender;
mod quiet;
mod rack;
mod redundancy;
mod repair;
mod repair_copy;
mod requeue;
mod share;
mod spacing;
mod stats;
mod stranded;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bound;
#[cfg(test)]
mod tests_copies;
#[cfg(test)]
mod tests_late;
#[cfg(test)]
mod tests_overdue;
#[cfg(test)]
mod tests_quiet;
#[cfg(test)]
mod tests_repair;
#[cfg(test)]
mod tests_requeue;
#[cfg(test)]
mod tests_stranded;
