//! Repair of path losses by retransmission inside the tunnel (ARQ).
//!
//! Why: every loss on a path otherwise reaches the inner TCP as a
//! congestion signal, so one TCP flow over the bond runs at the rate its
//! loss response allows for the combined loss (Mathis et al.), far below
//! the paths' sum. The tunnel knows which path lost a packet and why; it
//! repairs what the paths lose and passes on only what it cannot or must
//! not repair.
//!
//! - A packet is declared lost by the FIFO rule on feedback (PRISM §5.2.3:
//!   a later packet on the same path was reported; threshold 1), by a NACK
//!   from the receiver (which sees the gap one reverse trip earlier than
//!   batched feedback would), or by its path's timeout (tail losses).
//! - A lost packet is queued for repair unless it was first sent more
//!   than `RepairConfig::max_age` ago or has had `max_attempts` copies.
//!   A loss that looks like congestion (R-MTP §3.2,
//!   [`crate::repair::LossClassifier`]) lowers the path's rate estimate,
//!   and is repaired too (see [`Sender::consider_repair`] for why); with
//!   a standing queue it also caps the path's rate as a TCP flow's
//!   window would be cut (`super::share`), so that the path yields to
//!   other traffic on its bottleneck. The
//!   tunnel's own pacing-queue drops never get here: they are dropped
//!   before they are numbered, so the inner TCP still sees the tunnel's
//!   congestion.
//! - The caller drains [`Sender::next_repair`] at once, ahead of new data
//!   (PRISM ADAS rule 1), and [`Sender::resend`] puts each copy on the
//!   path that delivers it earliest, ahead of that path's pacing queue.
//!
//! The copy keeps the packet's tunnel sequence number, so the receiver's
//! resequencer fills the gap the moment it arrives.

use super::{slot, Fate, LossCause, PathRepairStats, Sender, Transmit};
use crate::path::{PathId, MAX_PATHS};
use crate::repair::RepairMode;
use crate::time::{Duration, Instant};
use crate::wire::{self, NackRange, NackRate};

/// Where [`Sender::resend`] put a repair copy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    /// Send it now.
    Sent(Transmit),
    /// Queued on `path` ahead of its data, to leave at `at` with its
    /// payload through [`Sender::poll_transmit`].
    Queued { path: PathId, at: Instant },
}

impl Repair {
    /// The path the copy goes on.
    pub fn path(&self) -> PathId {
        match self {
            Repair::Sent(tx) => tx.path,
            Repair::Queued { path, .. } => *path,
        }
    }

    /// The copy to send now, if it is not queued.
    pub fn sent(self) -> Option<Transmit> {
        match self {
            Repair::Sent(tx) => Some(tx),
            Repair::Queued { .. } => None,
        }
    }
}

/// Most entries of the repair queue; older ones are given up beyond it.
const MAX_REPAIR_QUEUE: usize = 1 << 14;
/// Most unrepaired losses waiting to be announced: one notice's worth
/// (the caller takes them after every event, `conn::tunnel`'s skips).
const MAX_UNREPAIRED: usize = wire::Control::SKIP_MAX_ENTRIES;

impl<P> Sender<P> {
    /// Queues a just-lost packet for repair if the configuration allows.
    ///
    /// A loss taken for congestion is counted, lowers the path's rate
    /// estimate by `RepairConfig::congestion_rate_factor` (R-MTP §3.2;
    /// 0.9, not compounding), and is repaired. If the path also holds a
    /// standing queue (a buffer kept full, by other flows or by us), the
    /// loss cuts the path's share cap (`RepairConfig::share_cap`,
    /// `super::share`): only a standing queue, because a queue that is
    /// merely rising comes with the random losses of `bursty`: a version
    /// that cut on a rising queue too took its simulated share (seed 1)
    /// from 0.90 to 0.75, and its lab share to 0.72. Leaving it unrepaired, so that the
    /// inner TCP saw it, was tried first: with the delay trend of a
    /// filling queue the classifier cannot tell a random loss from an
    /// overflow, and while the inner TCP ramps up every path's delay
    /// rises, so random losses then were passed on as congestion. One such
    /// loss in the first second set the inner CUBIC's ssthresh at 35-80
    /// packets where the paths needed 300, and the rest of a 15 s run was
    /// spent growing back (`braid sim run lab/cellular.toml`, seeds 1-30:
    /// mean 0.847 of the sum, worst 0.511; with the repair 0.878 and
    /// 0.659, the rest of the gap closed by the tail-loss rule in
    /// `sender/rack.rs` and PET's probing). The inner TCP still backs
    /// off where the tunnel is the bottleneck: the lowered rate fills the
    /// pacing queue, whose drops are never repaired.
    pub(super) fn consider_repair(&mut self, path: PathId, seq: u64, now: Instant) {
        if self.cfg.repair.mode == RepairMode::Off {
            return;
        }
        let s = slot(path);
        let min_rtt = self
            .path(path)
            .and_then(|p| p.rtt.min_rtt())
            .unwrap_or(Duration::from_millis(100));
        // Queue samples older than the packet by a loss timeout describe a
        // queue the packet never met (an outage between): forget them.
        let sent_at = self.record_mut(seq).map(|r| r.sent_at);
        let horizon = self.path(path).map(|p| self.loss_timeout(p));
        if let (Some(sent_at), Some(horizon)) = (sent_at, horizon) {
            self.per_path[s].classifier.expire(sent_at, horizon);
        }
        if self.cfg.repair.classify && self.per_path[s].classifier.on_loss(now, min_rtt) {
            // Congestion: lower the path's rate, and repair it all the same.
            self.stats.losses_congestion += 1;
            self.per_path[s].repair.losses_congestion += 1;
            if self.per_path[s].classifier.cut_at(now) {
                if self.cfg.repair.share_cap && self.per_path[s].classifier.standing(min_rtt) {
                    if let Some(rate) = self.pacing_rate(s) {
                        let srtt = self.path(path).map_or(min_rtt, |p| p.rtt.srtt());
                        self.per_path[s].share.cut(now, rate, srtt.max(min_rtt));
                    }
                }
                self.per_path[s]
                    .pair_samples
                    .cut(self.cfg.repair.congestion_rate_factor);
            }
        }
        if self.queue_repair(now, seq) {
            self.per_path[s].repair.losses_repaired += 1;
        }
    }

    /// Puts lost packet `seq` in the repair queue, or gives it up if it is
    /// too old or has had its copies; whether it was queued.
    pub(super) fn queue_repair(&mut self, now: Instant, seq: u64) -> bool {
        let idx = (seq as usize) & (self.ring.len() - 1);
        let cfg = &self.cfg.repair;
        let Some(r) = self.ring[idx].as_mut().filter(|r| r.seq == seq) else {
            return false;
        };
        if r.repair_queued {
            return false;
        }
        if r.attempts >= cfg.max_attempts || now.saturating_since(r.first_sent_at) > cfg.max_age {
            self.stats.repairs_abandoned += 1;
            self.note_unrepaired(seq);
            return false;
        }
        r.repair_queued = true;
        self.repair_queue.push_back(seq);
        if self.repair_queue.len() > MAX_REPAIR_QUEUE {
            self.repair_queue.pop_front();
            self.stats.repairs_abandoned += 1;
        }
        true
    }

    /// The next lost packet to resend, oldest loss first: the caller looks
    /// up its payload and calls [`Sender::resend`], or
    /// [`Sender::abandon_repair`] if it no longer has it. Call until
    /// `None` after every `handle_*` call, before sending new data.
    pub fn next_repair(&mut self) -> Option<u64> {
        while let Some(seq) = self.repair_queue.pop_front() {
            let Some(r) = self.record_mut(seq) else {
                continue;
            };
            r.repair_queued = false;
            if r.fate == Fate::Lost {
                return Some(seq);
            }
        }
        None
    }

    /// The path packet `seq` was (last) sent on, while its record is kept.
    pub fn sent_path(&self, seq: u64) -> Option<PathId> {
        let idx = (seq as usize) & (self.ring.len() - 1);
        self.ring[idx]
            .as_ref()
            .filter(|r| r.seq == seq)
            .map(|r| r.path)
    }

    /// Gives up the repair of `seq` without a SKIP notice: another repair
    /// (FEC) covers it, and the receiver should keep holding its gap.
    pub fn repair_elsewhere(&mut self, seq: u64) {
        let _ = seq;
        self.stats.repairs_fec += 1;
    }

    /// Whether lost packets wait in the repair queue.
    pub fn has_repairs(&self) -> bool {
        !self.repair_queue.is_empty()
    }

    /// The caller no longer holds the payload of `seq`: give it up.
    pub fn abandon_repair(&mut self, seq: u64) {
        self.stats.repairs_abandoned += 1;
        self.note_unrepaired(seq);
    }

    /// Tells the receiver not to wait for `seq` (with the next
    /// [`Sender::take_unrepaired`]): a packet it need not resequence, such
    /// as a rate probe's filler sent during a transfer.
    pub fn skip_notice(&mut self, seq: u64) {
        self.note_unrepaired(seq);
    }

    /// Remembers a loss that will not be repaired, for [`Sender::take_unrepaired`].
    fn note_unrepaired(&mut self, seq: u64) {
        if self.unrepaired.len() < MAX_UNREPAIRED {
            self.unrepaired.push(seq);
        }
    }

    /// Lost packets that will not be repaired since the last call: the
    /// caller tells the receiver (`Control::SKIP`) so that its
    /// resequencer stops holding their gaps and the inner transport sees
    /// the loss at once. If the notice is lost, the hold still ends.
    pub fn take_unrepaired(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.unrepaired)
    }

    /// Sends a copy of lost packet `seq` on the path expected to deliver
    /// it earliest, never the one it is stranded on (`Record::avoid`,
    /// `sender/stranded.rs`); `None` if no path is usable or the packet is
    /// not lost (any more). `payload` is called only when the copy is
    /// queued.
    ///
    /// Earliest: the path's relative one-way delay, plus its serialisation
    /// of the packet, plus the chance of losing the copy times the
    /// path's smoothed RTT (a lost copy costs another round), plus the
    /// time its pacer is already booked for. The copy goes ahead of the
    /// path's queued data and is charged to its pacer, so the path's rate
    /// is kept.
    ///
    /// It leaves at once while the path's pacer is booked no further ahead
    /// than its catch-up allowance (`Sender::catch_up_allowance`, a
    /// quarter of its round trip): a burst the bottleneck buffer of a
    /// paced path holds. Beyond that it waits in the pacing queue, ahead
    /// of the data and behind earlier copies ([`Repair::Queued`]), and
    /// leaves at the path's rate, when the cost above said it would. Sent
    /// all at once, a burst of copies overflowed a thin near path's
    /// buffer: on a random set with a 1.84 Mbit/s path 27 ms away (a
    /// 15 kB buffer) beside a 27.6 Mbit/s path that lost 5 %, 29 losses
    /// found together put 12-29 copies on the thin path at once, 20 of
    /// them were dropped there, their own repair waited for the thin
    /// path's timeout, and the inner TCP timed out behind the hole (6.1
    /// Mbit/s where the best path alone carries 34.1).
    ///
    /// A copy whose best path's pacer is booked further ahead than the
    /// pacing bound that data is held to is given up instead (counted in
    /// `repairs_abandoned`, and announced by [`Sender::take_unrepaired`]):
    /// it would leave at more than the path's rate and overflow its
    /// bottleneck, and the bookings would starve new data. When a fast
    /// path failed next to a 1 Mbit/s one (the fault swarm's seed 80), the
    /// packets it had in flight were repaired onto the slow path within
    /// 1.5 s (635 copies, 7 s of that path's rate); every new packet the
    /// inner TCP sent met a pacing queue over its bound and was dropped,
    /// and the transfer stalled 12.5 s.
    pub fn resend(
        &mut self,
        now: Instant,
        seq: u64,
        payload: impl FnOnce() -> P,
    ) -> Option<Repair> {
        let rec = *self.record_mut(seq)?;
        if rec.fate != Fate::Lost || seq >= self.next_seq {
            return None;
        }
        let delays = self.relative_delays();
        let queues = self.send_queues(now);
        let booked = |p: &crate::path::PathState| {
            queues
                .free_at(p.id)
                .map_or(Duration::ZERO, |t| t.saturating_since(now))
        };
        let cost = |p: &crate::path::PathState| {
            Self::delivery_cost(p, rec.len, &delays) + booked(p).as_secs_f64()
        };
        let best = self
            .paths
            .iter()
            .enumerate()
            .filter(|(_, p)| p.usable && Some(p.id) != rec.avoid)
            .min_by(|a, b| cost(a.1).total_cmp(&cost(b.1)))
            .map(|(i, _)| i);
        let bound = self.pacing_bound_now(now);
        let Some(i) = best.filter(|&i| booked(&self.paths[i]) <= bound) else {
            match rec.avoid {
                // Stranded, and no other path can take it: its original
                // is still coming.
                Some(path) => self.unstrand(seq, path),
                None if best.is_some() => self.abandon_repair(seq),
                None => {}
            }
            return None;
        };
        let wait = booked(&self.paths[i]);
        let id = self.paths[i].id;
        let s = slot(id);
        self.book_copy(now, i, seq, rec.len);
        self.stats.repairs_sent += 1;
        self.per_path[s].repair.repairs_carried += 1;
        let tx = Transmit::copy(id, seq);
        let paced = queues.free_at(id).is_some() && wait > self.catch_up_allowance(s);
        if let Some(rate) = self.pacing_rate(s).filter(|_| paced) {
            let at = self.queue_ahead_of_data(now, s, tx, rec.len, rate, payload());
            self.stats.repairs_paced += 1;
            return Some(Repair::Queued { path: id, at });
        }
        // On the wire it goes before the packets still in the pacing queue.
        let front = self.per_path[s].paced.front().map(|q| q.tx.seq);
        self.insert_unacked_before(id, seq, front);
        self.charge_pacer(now, id, rec.len as usize);
        Some(Repair::Sent(tx))
    }

    /// Counts a copy of `seq` (`len` bytes) as sent at `now` on the path
    /// at index `i` and makes it the packet's latest copy: in flight
    /// there, one more attempt, out of any pair.
    pub(super) fn book_copy(&mut self, now: Instant, i: usize, seq: u64, len: u32) {
        let p = &mut self.paths[i];
        let id = p.id;
        p.in_flight_packets += 1;
        p.in_flight_bytes += u64::from(len);
        p.sent_packets += 1;
        p.sent_bytes += u64::from(len);
        p.last_sent = Some(now);
        if let Some(r) = self.record_mut(seq) {
            r.copy_on(id);
            r.path = id;
            r.sent_at = now;
            r.fate = Fate::InFlight;
            r.attempts = r.attempts.saturating_add(1);
            r.pair = crate::sched::PairRole::None;
            r.partner = None;
            r.eta_ns = None;
        }
    }

    /// A report of `seq` from path `on`, other than the one its latest
    /// copy went on: the packet arrived (that copy, or an earlier one after
    /// all).
    pub(super) fn ack_other_copy(
        &mut self,
        now: Instant,
        on: PathId,
        seq: u64,
        rec: super::Record,
        rx_ns: u64,
    ) {
        self.stats.feedback_other_copy += 1;
        self.late_original(now, on, seq, rec, rx_ns);
        if rec.fate == Fate::InFlight {
            if let Some(p) = self.paths.iter_mut().find(|p| p.id == rec.path) {
                p.in_flight_packets = p.in_flight_packets.saturating_sub(1);
                p.in_flight_bytes = p.in_flight_bytes.saturating_sub(rec.len as u64);
            }
        } else {
            self.stats.spurious_losses += 1;
        }
        if let Some(r) = self.record_mut(seq) {
            r.fate = Fate::Acked { rx_ns };
        }
        self.stats.acked += 1;
    }

    /// A report of `seq` from path `on` after the packet was repaired
    /// (the repair may already be acknowledged). If `on` carried the
    /// original and no other copy (`Record::original`), the report is the
    /// original's, late: it was given up and repaired elsewhere before it
    /// arrived. Its round trip and one-way delay are then sound samples of
    /// `on` (Karn's ambiguity needs two copies on one path), and the only
    /// ones the path gets while its delay is above what its timeout
    /// assumes. Without them a path whose delay jumped (a handover, a
    /// reroute: 27 -> 427 ms round trip on a random set with a delay step)
    /// had every packet declared lost and repaired, every report was
    /// dropped, and the path kept its old round trip for good: the bond
    /// carried 7.5 Mbit/s where its other path alone carried 26.
    pub(super) fn late_original(
        &mut self,
        now: Instant,
        on: PathId,
        seq: u64,
        rec: super::Record,
        rx_ns: u64,
    ) {
        if rec.attempts == 0 || rec.original != Some(on) {
            return;
        }
        // One sample per original, however often its report comes.
        if let Some(r) = self.record_mut(seq) {
            r.original = None;
        }
        self.stats.late_originals += 1;
        self.measure_copy(now, on, rec.first_sent_at, rec.len, rx_ns);
    }

    /// Processes a loss report from the peer's receiver: every range
    /// names a run of packets one path lost (see [`crate::wire::nack`]).
    /// Repeated reports are harmless: packets already declared lost,
    /// repaired or acknowledged are left alone.
    pub fn handle_nack(
        &mut self,
        now: Instant,
        ranges: impl IntoIterator<Item = NackRange>,
        rates: impl IntoIterator<Item = NackRate>,
    ) {
        let top = self.next_seq.saturating_sub(1);
        for r in ranges {
            let path = r.path;
            if (path.0 as usize) >= MAX_PATHS || self.path(path).is_none() {
                continue;
            }
            let upto = wire::seq::extend(r.upto, top);
            let after = r.after.map(|a| wire::seq::extend(a, top));
            // Originals go on a path in increasing sequence order, so the
            // run is the path's originals numbered after `after` up to
            // `upto`. Repair copies are not in the receiver's
            // previous-on-path chain, so the range says nothing about
            // them (a NACK repeated after a repair went on the same path
            // must not reach back over it): the FIFO rule on feedback
            // judges them.
            let s = slot(path);
            let run: Vec<u64> = self.per_path[s]
                .unacked
                .iter()
                .copied()
                .filter(|&q| q <= upto && !matches!(after, Some(a) if q <= a))
                .filter(|&q| {
                    let idx = (q as usize) & (self.ring.len() - 1);
                    self.ring[idx].is_some_and(|r| r.seq == q && r.attempts == 0)
                })
                .collect();
            if run.is_empty() {
                continue;
            }
            self.per_path[s].unacked.retain(|q| !run.contains(q));
            for seq in run {
                self.mark_lost(path, seq, now, LossCause::Nack);
            }
        }
        for r in rates {
            if (r.path.0 as usize) < MAX_PATHS {
                self.per_path[slot(r.path)].repair.peer_loss_rate = r.fraction();
            }
        }
    }

    /// Whether the payload of `seq` is no longer needed for repair: it was
    /// acknowledged, or its record is gone.
    pub fn is_acked(&self, seq: u64) -> bool {
        let idx = (seq as usize) & (self.ring.len() - 1);
        match self.ring[idx] {
            Some(r) if r.seq == seq => matches!(r.fate, Fate::Acked { .. }),
            _ => true,
        }
    }

    /// Repair counters of one path.
    pub fn path_repair_stats(&self, path: PathId) -> PathRepairStats {
        self.per_path[slot(path)].repair
    }
}
