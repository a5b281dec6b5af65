//! PET: Packet-pair based Earliest-delivery-path-first for TCP (PET/BMP
//! Section V-A). EDPF (eq. 1) with the ideal parameters replaced by
//! estimates:
//! - B_l from packet-pair dispersion reported by per-packet feedback
//!   (SIG-ACKs), so every packet is treated as part of a pair and the
//!   second packet of a pair always follows the first on the same path;
//! - D_l as the *relative* one-way delay: clock offset cancels because
//!   only differences between paths matter.
//!
//! Until a path has a bandwidth estimate PET is in its initial phase and
//! sends pairs round robin. Retransmissions are never paired (their
//! sample would be ambiguous). A path PET has stopped using gets a pair
//! every `probe_interval` so its estimate stays fresh and a path whose
//! capacity grew is not abandoned for good (Section V-A, last bullet).

use super::edpf::EdpfQueues;
use super::{Decision, PacketInfo, PairRole, Scheduler, SendQueues};
use crate::path::{PathId, PathState, MAX_PATHS};
use crate::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct PetConfig {
    /// A usable path not sent on for this long gets the next pair.
    pub probe_interval: Duration,
    /// Round-robin pairs a path gets in the initial phase before PET gives
    /// up waiting for its estimate and only probes it periodically. The
    /// paper gives no number. Every initial pair on a slow path delays
    /// in-order delivery during slow start (on a 50 kbit/s path a pair is
    /// half a second), while one pair may yield no valid sample; two is the
    /// smallest count that gets every path an estimate in our scenarios.
    pub initial_pairs: u32,
    /// A probe pair is sent only if EDPF predicts it to arrive at most this
    /// much later than on the best path. A probe that arrives later than
    /// the receiver's loss timer (BMP's 0.5 s) would be given up as lost
    /// and make TCP halve its window, so the slack is half that timer. On
    /// a path with a large delay disparity (PET/BMP Section IV's 1 s case)
    /// this means probing only while the fast paths' queues are deep.
    pub probe_slack: Duration,
    /// Gain of the virtual-queue correction (0 = the paper's open-loop PET).
    /// Under fair queueing with changing cross traffic a path's share moves
    /// faster than packet-pair estimates settle, so EDPF's A_l drifts from
    /// the real queue: one base station starves while another holds the
    /// window. Each feedback compares the delivery time EDPF predicted with
    /// the measured one and moves A_l by `gain` x the part of the error not
    /// already corrected since the packet was sent.
    pub queue_correction: f64,
    /// Without a queue to pair behind, the longest gap between the two
    /// packets of a pair.
    pub max_pair_gap: Duration,
    /// Keep each path's virtual backlog within the queueing delay observed
    /// on it (see `Pet::edpf`); false = the paper's unbounded queues.
    pub queue_cap: bool,
    /// With `queue_cap`: the most virtual backlog a path may have to take a
    /// packet only because the earliest-delivery path is full (a *spill*);
    /// at least three packets' service time on that path. Not in the
    /// paper. A spill path is further away than the full one, so every
    /// packet queued on it behind the first few arrives later still and
    /// holds the whole stream in the resequencer: with a slow far path's
    /// buffer (200 ms on a 2 Mbit/s link) TCP's round trip grew to 300 ms
    /// and its window, not the paths, set the rate. A few packets keep the
    /// spill path busy; what TCP sends beyond every path's rate goes to
    /// the earliest path and overflows its buffer, the loss TCP needs to
    /// back off.
    pub spill_backlog: Duration,
    /// With `queue_cap`: a spill goes only to a path where the packet would
    /// arrive at most this much later than on the full path. Not in the
    /// paper. Every packet on a path further away than the near path's
    /// buffer holds the whole stream in the resequencer; used only now and
    /// then (when the near buffer is full) such a path added little rate
    /// but kept TCP's round trip, and with it the RTO, inflated: in the
    /// lab a 2 Mbit/s path 80 ms further away left TCP slower than the
    /// 10 Mbit/s path alone.
    pub spill_max_lateness: Duration,
    /// With `queue_cap`: EDPF compares delivery times as if no path were
    /// further than this fraction of the nearest path's buffer (its largest
    /// observed queueing delay) beyond it; <= 0 disables. Not in the paper.
    /// Eq. (1) only turns to a far path once the near path's backlog
    /// covers the delay difference, but a buffer of one bandwidth-delay
    /// product (40 ms at 10 Mbit/s) never holds the 80 ms that a 100 ms
    /// path is further away: the far path was used only in bursts, just
    /// before the near buffer overflowed, and sat idle otherwise. With the
    /// delay difference clamped, both paths stay busy (the near one with
    /// about this fraction of its buffer queued) and the resequencer hides
    /// the remaining difference. Queue bookkeeping and the virtual-queue
    /// correction keep the true delays; when no queueing has been observed
    /// on the nearest path yet, nothing is clamped. Off by default: in the
    /// lab (fast-slow, three-paths) it made no difference we could measure
    /// beyond run-to-run variation, since sporadic use of the far path is
    /// what hurts TCP (see `spill_max_lateness`).
    pub delay_horizon: f64,
    /// Packets up to this size may go on a path that has no bandwidth
    /// estimate yet, as if it were infinitely fast (EDPF then compares
    /// only delays and queues). Not in the paper. A direction that carries
    /// only TCP ACKs rarely produces a valid pair sample (its pairs leave
    /// the sender about as far apart as they arrive), so whichever path
    /// happened to get one took every ACK: the lab's downlink sent its ACKs
    /// over a 60 ms path instead of the 10 ms one. For such packets the
    /// service time hardly matters. 0 disables.
    pub small_packet_bytes: u32,
}

impl Default for PetConfig {
    fn default() -> Self {
        PetConfig {
            probe_interval: Duration::from_secs(1),
            initial_pairs: 2,
            probe_slack: Duration::from_millis(10),
            queue_correction: 0.5,
            max_pair_gap: Duration::from_millis(5),
            queue_cap: true,
            spill_backlog: Duration::from_millis(20),
            spill_max_lateness: Duration::from_millis(20),
            delay_horizon: 0.0,
            small_packet_bytes: super::SMALL_PACKET_BYTES,
        }
    }
}

/// Relative one-way delay of each path slot ([`Pet::relative_delays`]).
type Delays = [Option<Duration>; MAX_PATHS];

/// The first packet of a pair, waiting for its second.
#[derive(Copy, Clone, Debug)]
struct OpenPair {
    path: PathId,
    /// Until when a second packet sent now would still queue behind the
    /// first at the bottleneck (and so measure it).
    valid_until: Instant,
}

#[derive(Clone, Debug)]
pub struct Pet {
    cfg: PetConfig,
    queues: EdpfQueues,
    /// Path of a pair whose second packet is still to come.
    pending: Option<OpenPair>,
    rr_next: usize,
    initial_pairs_sent: [u32; MAX_PATHS],
    /// Correction applied to each path's A_l so far (ns).
    corrected_ns: [i64; MAX_PATHS],
}

impl Pet {
    pub fn new(cfg: PetConfig) -> Self {
        Pet {
            cfg,
            queues: EdpfQueues::default(),
            pending: None,
            rr_next: 0,
            initial_pairs_sent: [0; MAX_PATHS],
            corrected_ns: [0; MAX_PATHS],
        }
    }

    /// Relative one-way delay of each path (slot-indexed): its base delay
    /// minus the smallest base delay of any path. `None` without samples.
    ///
    /// A path whose data has not been reported yet has no base delay; if
    /// keepalives measured it ([`PathState::owd_hint_raw_ns`] on the side
    /// that receives them, [`PathState::rtt_hint`] on the side that sends
    /// them), its keepalives' one-way delay less the nearest path's, or
    /// half the difference to the nearest path's round trip, stands in. Without it, a path 300 ms further
    /// away counted as being as near as the nearest one until data on it
    /// had been reported: its first packets (the initial pairs, a ping)
    /// went on it as if it were near, held everything behind them in the
    /// resequencer for 300 ms, and the inner TCP, whose RTO had been set
    /// by the near path's 40 ms, timed out spuriously.
    pub fn relative_delays(paths: &[PathState]) -> Delays {
        let mut out = [None; MAX_PATHS];
        let min = paths.iter().filter_map(|p| p.owd.base_raw_ns()).min();
        if let Some(min) = min {
            for p in paths {
                if let Some(b) = p.owd.base_raw_ns() {
                    out[p.id.0 as usize % MAX_PATHS] =
                        Some(Duration::from_nanos((b - min).max(0) as u64));
                }
            }
        }
        // The peer's keepalives give the one-way delays directly (plus a
        // clock offset that cancels against the nearest path's).
        let near_raw = paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| p.owd_hint_raw_ns)
            .min();
        // The nearest round trip: keepalive or data, whichever is smaller.
        let rtt = |p: &PathState| match (p.rtt_hint, p.rtt.min_rtt()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let nearest = paths.iter().filter(|p| p.usable).filter_map(rtt).min();
        for p in paths {
            let s = p.id.0 as usize % MAX_PATHS;
            if out[s].is_some() {
                continue;
            }
            let one_way = p
                .owd_hint_raw_ns
                .zip(near_raw)
                .map(|(h, n)| Duration::from_nanos((h - n).max(0) as u64));
            let half_rtt = p
                .rtt_hint
                .zip(nearest)
                .map(|(h, n)| h.saturating_sub(n) / 2);
            out[s] = one_way.or(half_rtt);
        }
        out
    }

    /// EDPF over the paths that have a bandwidth estimate and room in
    /// their queue.
    ///
    /// Eq. (1) assumes the base station buffers whatever it is sent (the
    /// paper's were ample). Real bottleneck buffers hold about one
    /// bandwidth-delay product, so a fast path overflows long before EDPF
    /// would turn to a path that is much further away. A path is therefore
    /// eligible only while its virtual backlog (A_l - now - D_l) stays a
    /// few packets short of the largest queueing delay recently observed on
    /// it: after an overflow that is about the buffer's size. When the
    /// earliest path is at its bound, the packet spills onto the earliest
    /// path with room and a short backlog (`spill_backlog`); when there is
    /// none, plain EDPF decides, which lets the bound grow again on a
    /// buffer larger than it was credited with.
    fn edpf(
        &self,
        now: Instant,
        len: u32,
        paths: &[PathState],
        delays: &Delays,
        paced: &SendQueues,
    ) -> Option<(usize, Instant)> {
        let small = len <= self.cfg.small_packet_bytes;
        let params = |p: &PathState| {
            let rate = p.bw.estimate_bps().or(small.then_some(f64::INFINITY))?;
            Some((
                delays[p.id.0 as usize % MAX_PATHS].unwrap_or_default(),
                rate,
            ))
        };
        let excess = self.excess_delays(paths, delays);
        // EDPF with each path's delivery time counted `excess` earlier.
        let earliest = |pred: &dyn Fn(&PathState) -> Option<(Duration, f64)>| {
            let mut best: Option<(usize, Instant, Instant)> = None;
            for (i, p) in paths.iter().enumerate().filter(|(_, p)| p.usable) {
                let Some((delay, rate)) = pred(p) else {
                    continue;
                };
                let d = self.delivery_time(p, paced, now, delay, len, rate);
                let score = d - excess[p.id.0 as usize % MAX_PATHS];
                if best.is_none_or(|(_, _, b)| score < b) {
                    best = Some((i, d, score));
                }
            }
            best.map(|(i, d, _)| (i, d))
        };
        let best = earliest(&params);
        if !self.cfg.queue_cap {
            return best;
        }
        let backlog = |p: &PathState, delay: Duration| match paced.free_at(p.id) {
            Some(t) => t.saturating_since(now),
            None => self.queues.free_at(p).saturating_since(now + delay),
        };
        let has_room = |p: &PathState| {
            let Some((delay, rate)) = params(p) else {
                return false;
            };
            if paced.free_at(p.id).is_some() {
                // The sender's own queue, bounded by the sender.
                return true;
            }
            let Some(cap) = p.owd.max_queueing_delay() else {
                return true;
            };
            // The virtual queue only approximates the real one.
            let margin = super::service_time(3 * len.max(1000), rate);
            backlog(p, delay) <= cap.saturating_sub(margin).max(margin)
        };
        let (b, best_d) = best?;
        if has_room(&paths[b]) {
            return best;
        }
        // The earliest path is full: spill onto the earliest path with room
        // whose own backlog is still short (see `spill_backlog`).
        let spill = |p: &PathState| {
            let (delay, rate) = params(p)?;
            let bound = self
                .cfg
                .spill_backlog
                .max(super::service_time(3 * len.max(1000), rate));
            let late = self
                .queues
                .delivery_time(p, now, delay, len, rate)
                .saturating_since(best_d);
            (has_room(p) && backlog(p, delay) <= bound && late <= self.cfg.spill_max_lateness)
                .then_some((delay, rate))
        };
        earliest(&spill).or(best)
    }

    /// How much of each path's relative delay EDPF disregards (see
    /// `PetConfig::delay_horizon`): the part beyond the horizon.
    fn excess_delays(&self, paths: &[PathState], delays: &Delays) -> [Duration; MAX_PATHS] {
        let mut out = [Duration::ZERO; MAX_PATHS];
        if !self.cfg.queue_cap || self.cfg.delay_horizon.is_nan() || self.cfg.delay_horizon <= 0.0 {
            return out;
        }
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        let nearest = paths
            .iter()
            .filter(|p| p.usable && p.bw.estimate_bps().is_some())
            .filter_map(|p| Some((delays[slot(p)]?, p)))
            .min_by_key(|(d, _)| *d);
        let Some((near_delay, near)) = nearest else {
            return out;
        };
        let Some(buffer) = near.owd.max_queueing_delay() else {
            return out;
        };
        let horizon = near_delay + buffer.mul_f64(self.cfg.delay_horizon);
        for p in paths {
            if let Some(d) = delays[slot(p)] {
                out[slot(p)] = d.saturating_sub(horizon);
            }
        }
        out
    }

    /// Books the packet on the path's virtual queue, if PET can model it,
    /// and returns the predicted delivery time net of corrections so far.
    fn commit(
        &mut self,
        now: Instant,
        len: u32,
        paths: &[PathState],
        delays: &Delays,
        paced: &SendQueues,
        i: usize,
    ) -> Option<i64> {
        let p = &paths[i];
        let rate = p.bw.estimate_bps()?;
        let s = p.id.0 as usize % MAX_PATHS;
        let delay = delays[s].unwrap_or_default();
        let d = self.delivery_time(p, paced, now, delay, len, rate);
        self.queues.commit(p, d);
        Some(d.as_nanos() as i64 - self.corrected_ns[s])
    }

    /// A second packet is worth pairing while it would reach the bottleneck
    /// before the first has left it (Section V-A: in congestion avoidance
    /// pairs need not be back to back as long as both queue at the base
    /// station). Without an estimate only a back-to-back burst qualifies.
    fn pair_deadline(
        &self,
        now: Instant,
        paths: &[PathState],
        delays: &Delays,
        paced: &SendQueues,
        i: usize,
    ) -> Instant {
        let p = &paths[i];
        let burst = now + self.cfg.max_pair_gap;
        if p.bw.estimate_bps().is_none() {
            return burst;
        }
        if let Some(t) = paced.free_at(p.id) {
            // Paced: the second leaves back to back with the first if it
            // comes while the first is still in the sender's queue.
            return t.max(burst);
        }
        // free_at is the first packet's predicted departure from the
        // bottleneck; the second must arrive there (now + delay) before it.
        let delay = delays[p.id.0 as usize % MAX_PATHS].unwrap_or_default();
        (self.queues.free_at(p) - delay).max(burst)
    }

    /// Eq. (1) for one path. A path the sender paces (`paced`) has
    /// its backlog in the sender's queue, known exactly, and an (almost)
    /// empty bottleneck: d = max(now, local queue drained) + D_l + L / B_l.
    fn delivery_time(
        &self,
        p: &PathState,
        paced: &SendQueues,
        now: Instant,
        delay: Duration,
        len: u32,
        rate: f64,
    ) -> Instant {
        match paced.free_at(p.id) {
            Some(t) => now.max(t) + delay + super::service_time(len, rate),
            None => self.queues.delivery_time(p, now, delay, len, rate),
        }
    }

    fn round_robin(
        &mut self,
        paths: &[PathState],
        pred: impl Fn(&PathState) -> bool,
    ) -> Option<usize> {
        let n = paths.len();
        (0..n)
            .map(|k| (self.rr_next + k) % n)
            .find(|&i| paths[i].usable && pred(&paths[i]))
            .inspect(|&i| {
                self.rr_next = (i + 1) % n;
            })
    }

    /// Where the first packet of a new pair goes, and whether it is a probe.
    fn place_pair(
        &mut self,
        now: Instant,
        len: u32,
        paths: &[PathState],
        delays: &Delays,
        paced: &SendQueues,
    ) -> Option<(usize, bool)> {
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        // Initial phase: round robin among paths still without an estimate.
        // Only full-size pairs count: pings and handshakes before a transfer
        // used them up unmeasured, leaving far paths to wait for a probe.
        let small = len <= self.cfg.small_packet_bytes;
        let limit = self.cfg.initial_pairs;
        let sent = self.initial_pairs_sent;
        let best = self.edpf(now, len, paths, delays, paced);
        // A path known to be far (its delay from a round trip measured
        // outside the data stream) gets its initial pairs only where they
        // arrive no later than `probe_slack` after the packet would on the
        // measured paths: once the near paths' queues are as long as the
        // delay difference, which happens only when the inner TCP's window
        // is large enough for the far path to add anything. Earlier, each
        // such pair held the whole stream in the resequencer for the delay
        // difference and the inner TCP, clocked by the near path, timed
        // out spuriously (Phatak et al. Section 4: an RTT jump beyond the
        // RTO's smoothing). The first packets of a transfer, before any
        // path's rate is measured, pair round robin among the paths no
        // further than `probe_slack` beyond the nearest known delay (see
        // `Pet::near_enough`).
        let arrives_in_time = Self::arrives_in_time(self.cfg.probe_slack, now, paths, delays, best);
        if let Some(i) = self.round_robin(paths, |p| {
            !small && p.bw.estimate_bps().is_none() && sent[slot(p)] < limit && arrives_in_time(p)
        }) {
            self.initial_pairs_sent[slot(&paths[i])] += 1;
            return Some((i, false));
        }
        // Keep idle paths' estimates fresh.
        let stale = |p: &PathState| {
            p.last_sent
                .is_none_or(|t| now.saturating_since(t) >= self.cfg.probe_interval)
        };
        let rate = |p: &PathState| p.bw.estimate_bps().or(small.then_some(f64::INFINITY));
        let safe = |p: &PathState| match (best, rate(p)) {
            (Some((_, best_d)), Some(rate)) => {
                let delay = delays[slot(p)].unwrap_or_default();
                self.delivery_time(p, paced, now, delay, len, rate) <= best_d + self.cfg.probe_slack
            }
            // Without an estimate of the path only its delay, if known,
            // predicts anything (a small packet is predicted as if the
            // path were infinitely fast: a probe of TCP ACKs onto a far
            // path holds every later ACK in the resequencer).
            _ => arrives_in_time(p),
        };
        if let Some(i) = paths.iter().position(|p| p.usable && stale(p) && safe(p)) {
            if best.is_none_or(|(b, _)| b != i) {
                return Some((i, true));
            }
        }
        match best {
            Some((i, _)) => Some((i, false)),
            // No estimates at all yet (feedback still in flight): keep
            // pairing round robin, on the near paths if any is known.
            None => self.round_robin_near(paths, delays).map(|i| (i, false)),
        }
    }

    /// Whether a packet sent on a path now arrives no later than
    /// `probe_slack` after it would on the best path. Without a best path
    /// (no path has a rate estimate yet) only delays compare: a path whose
    /// delay, from keepalives, is known to exceed the nearest known one by
    /// more than the slack is not in time. A path of unknown delay is.
    ///
    /// At the start of a transfer no path has a rate yet. Pairing the first
    /// flight round robin over every path put a pair on a path 280 ms
    /// further away; the resequencer held the stream behind it for 280 ms,
    /// longer than the inner TCP's minimum RTO of 200 ms, and the spurious
    /// timeout left the inner TCP in congestion avoidance from a window of
    /// 14 packets. CUBIC then took about ten seconds to grow a window that
    /// covers the far path (lab `far.toml`, inner `ss -ti` each second).
    fn arrives_in_time<'a>(
        slack: Duration,
        now: Instant,
        paths: &'a [PathState],
        delays: &'a Delays,
        best: Option<(usize, Instant)>,
    ) -> impl Fn(&PathState) -> bool + 'a {
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        let nearest = paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| delays[slot(p)])
            .min();
        move |p: &PathState| match (best, delays[slot(p)], nearest) {
            (Some((_, best_d)), Some(delay), _) => now + delay <= best_d + slack,
            (None, Some(delay), Some(nearest)) => delay <= nearest + slack,
            _ => true,
        }
    }

    /// Round robin among the usable paths that [`Pet::arrives_in_time`]
    /// with no estimate at all, or among every usable path if none is.
    fn round_robin_near(&mut self, paths: &[PathState], delays: &Delays) -> Option<usize> {
        let near = Self::arrives_in_time(self.cfg.probe_slack, Instant::ZERO, paths, delays, None);
        self.round_robin(paths, near)
            .or_else(|| self.round_robin(paths, |_| true))
    }
}

impl Scheduler for Pet {
    fn name(&self) -> &'static str {
        "PET"
    }

    fn select(
        &mut self,
        now: Instant,
        pkt: &PacketInfo,
        paths: &[PathState],
        paced: &SendQueues,
    ) -> Option<Decision> {
        // The paths do not change during one decision: compute D_l once.
        let delays = &Self::relative_delays(paths);
        if pkt.retransmit {
            // Never paired; a pending pair is abandoned (no longer back to back).
            self.pending = None;
            let i = match self.edpf(now, pkt.len, paths, delays, paced) {
                Some((i, _)) => i,
                None => self.round_robin_near(paths, delays)?,
            };
            let eta_ns = self.commit(now, pkt.len, paths, delays, paced, i);
            return Some(Decision {
                eta_ns,
                ..Decision::single(i)
            });
        }
        if let Some(open) = self.pending.take().filter(|o| now <= o.valid_until) {
            if let Some(i) = paths.iter().position(|p| p.id == open.path && p.usable) {
                let eta_ns = self.commit(now, pkt.len, paths, delays, paced, i);
                return Some(Decision {
                    index: i,
                    pair: PairRole::Second,
                    probe: false,
                    eta_ns,
                });
            }
        }
        let (i, probe) = self.place_pair(now, pkt.len, paths, delays, paced)?;
        let eta_ns = self.commit(now, pkt.len, paths, delays, paced, i);
        self.pending = Some(OpenPair {
            path: paths[i].id,
            valid_until: self.pair_deadline(now, paths, delays, paced, i),
        });
        Some(Decision {
            index: i,
            pair: PairRole::First,
            probe,
            eta_ns,
        })
    }

    fn on_delivery(&mut self, path: &PathState, eta_ns: i64, actual_ns: i64) {
        if self.cfg.queue_correction <= 0.0 {
            return;
        }
        let s = path.id.0 as usize % MAX_PATHS;
        // What is still wrong after the corrections made since it was sent.
        let residual = actual_ns - (eta_ns + self.corrected_ns[s]);
        let step = (residual as f64 * self.cfg.queue_correction) as i64;
        self.corrected_ns[s] += step;
        self.queues.correct(path, step, Instant::ZERO);
    }

    fn paths_changed(&mut self, paths: &[PathState]) {
        if let Some(open) = self.pending {
            if !paths.iter().any(|p| p.id == open.path && p.usable) {
                self.pending = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::test_util::unknown_paths;

    fn pkt(retransmit: bool) -> PacketInfo {
        PacketInfo {
            len: 1500,
            retransmit,
        }
    }

    #[test]
    fn initial_phase_sends_pairs_round_robin() {
        let paths = unknown_paths(3);
        let mut pet = Pet::new(PetConfig::default());
        let got: Vec<(usize, PairRole)> = (0..6)
            .map(|_| {
                pet.select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
                    .unwrap()
            })
            .map(|d| (d.index, d.pair))
            .collect();
        use PairRole::*;
        assert_eq!(
            got,
            vec![
                (0, First),
                (0, Second),
                (1, First),
                (1, Second),
                (2, First),
                (2, Second)
            ]
        );
    }

    #[test]
    fn retransmissions_are_never_paired() {
        let paths = unknown_paths(2);
        let mut pet = Pet::new(PetConfig::default());
        let first = pet
            .select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap();
        assert_eq!(first.pair, PairRole::First);
        let rtx = pet
            .select(Instant::ZERO, &pkt(true), &paths, &SendQueues::UNPACED)
            .unwrap();
        assert_eq!(rtx.pair, PairRole::None);
        // The pair was broken: the next packet starts a new one.
        assert_eq!(
            pet.select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap()
                .pair,
            PairRole::First
        );
    }

    #[test]
    fn small_packets_take_the_nearest_path_without_an_estimate() {
        // Path 0 is measured but 50 ms further away; path 1 has no estimate.
        let mut paths = unknown_paths(2);
        paths[0]
            .bw
            .on_pair(1500, Duration::from_secs_f64(1500.0 * 8.0 / 4e6));
        paths[0].owd.on_sample(Instant::ZERO, 60_000_000);
        paths[1].owd.on_sample(Instant::ZERO, 10_000_000);
        for p in paths.iter_mut() {
            p.last_sent = Some(Instant::ZERO);
        }
        let mut pet = Pet::new(PetConfig {
            initial_pairs: 0,
            ..Default::default()
        });
        let ack = PacketInfo {
            len: 52,
            retransmit: false,
        };
        for k in 0..20 {
            let now = Instant::from_millis(k);
            let d = pet.select(now, &ack, &paths, &SendQueues::UNPACED).unwrap();
            assert_eq!(d.index, 1, "ACK {k} went on the far path");
        }
        // A full-size packet still needs an estimate.
        let d = pet
            .select(
                Instant::from_millis(30),
                &pkt(false),
                &paths,
                &SendQueues::UNPACED,
            )
            .unwrap();
        assert_eq!(d.index, 0);
    }

    #[test]
    fn does_not_spill_onto_a_path_that_delivers_much_later() {
        // Path 1 (10 Mbit/s) is near; path 0 (2 Mbit/s) 80 ms further away.
        // Path 1 has seen 40 ms of queueing: its buffer.
        let mut paths = with_estimates(&[2e6, 10e6]);
        paths[0].owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
        paths[0].owd.on_sample(Instant::ZERO, 130_000_000);
        paths[1].owd.on_sample(Instant::ZERO, 90_000_000);
        let mut pet = Pet::new(PetConfig::default());
        let now = Instant::from_millis(100);
        // A burst beyond what path 1's buffer holds (40 ms), yet short of
        // the 80 ms after which plain EDPF itself turns to path 0.
        for _ in 0..50 {
            let d = pet
                .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap();
            assert_eq!(d.index, 1, "spilled onto the far path");
        }
        // With a generous lateness bound the far path takes the overflow.
        let mut pet = Pet::new(PetConfig {
            spill_max_lateness: Duration::from_millis(200),
            ..Default::default()
        });
        let far = (0..50)
            .filter(|_| {
                pet.select(now, &pkt(false), &paths, &SendQueues::UNPACED)
                    .unwrap()
                    .index
                    == 0
            })
            .count();
        assert!(far > 0);
    }

    fn with_estimates(rates: &[f64]) -> Vec<PathState> {
        let mut paths = unknown_paths(rates.len());
        for (p, &r) in paths.iter_mut().zip(rates) {
            // One pair sample at the wanted rate: 1500 bytes over 1500*8/r seconds.
            p.bw.on_pair(1500, Duration::from_secs_f64(1500.0 * 8.0 / r));
            p.owd.on_sample(Instant::ZERO, 50_000_000);
            p.last_sent = Some(Instant::ZERO);
        }
        paths
    }

    #[test]
    fn with_estimates_splits_like_edpf() {
        let mut paths = with_estimates(&[50e3, 100e3, 200e3]);
        let mut pet = Pet::new(PetConfig::default());
        let mut counts = [0u32; 3];
        let mut now = Instant::ZERO;
        // Offered load above capacity so the virtual queues stay backlogged.
        for _ in 0..700 {
            now += Duration::from_millis(30);
            let d = pet
                .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap();
            counts[d.index] += 1;
            paths[d.index].last_sent = Some(now);
        }
        let total: u32 = counts.iter().sum();
        let share2 = counts[2] as f64 / total as f64;
        assert!(
            (share2 - 4.0 / 7.0).abs() < 0.08,
            "share of the 200k path {share2}, counts {counts:?}"
        );
        assert!(counts[0] > 0);
    }

    #[test]
    fn does_not_probe_a_path_that_would_deliver_far_too_late() {
        let mut paths = with_estimates(&[1e6, 10e6]);
        // Path 0 is 1 s further away than path 1.
        paths[0].owd.on_sample(Instant::ZERO, 1_050_000_000);
        paths[0].owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
        paths[0].owd.on_sample(Instant::ZERO, 1_050_000_000);
        let mut pet = Pet::new(PetConfig::default());
        let mut now = Instant::ZERO;
        for _ in 0..200 {
            now += Duration::from_millis(20);
            let d = pet
                .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap();
            paths[d.index].last_sent = Some(now);
            assert_ne!(d.index, 0, "probed a path 1 s behind at {now:?}");
        }
    }

    #[test]
    fn a_pair_left_open_too_long_is_abandoned() {
        let paths = unknown_paths(2);
        let mut pet = Pet::new(PetConfig::default());
        let first = pet
            .select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap();
        assert_eq!((first.index, first.pair), (0, PairRole::First));
        // A whole RTT later (slow start): no longer a pair; a new one starts elsewhere.
        let next = pet
            .select(
                Instant::from_millis(300),
                &pkt(false),
                &paths,
                &SendQueues::UNPACED,
            )
            .unwrap();
        assert_eq!((next.index, next.pair), (1, PairRole::First));
    }

    #[test]
    fn feedback_corrects_the_virtual_queue() {
        let paths = with_estimates(&[1e6]);
        let mut pet = Pet::new(PetConfig {
            queue_correction: 1.0,
            ..Default::default()
        });
        let d = pet
            .select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap();
        let eta = d.eta_ns.expect("estimated path has a prediction");
        // Predicted: 12 ms of serialisation. It took 100 ms longer: a real queue.
        assert_eq!(eta, 12_000_000);
        pet.on_delivery(&paths[0], eta, eta + 100_000_000);
        assert_eq!(pet.queues.free_at(&paths[0]), Instant::from_millis(112));
        // The same error reported again is already accounted for.
        pet.on_delivery(&paths[0], eta, eta + 100_000_000);
        assert_eq!(pet.queues.free_at(&paths[0]), Instant::from_millis(112));
    }

    #[test]
    fn probes_a_path_left_idle() {
        // Path 0 is slow enough that EDPF never picks it under light load,
        // yet a probe on it arrives within the slack (4.8 ms later).
        let mut paths = with_estimates(&[2e6, 10e6]);
        let mut pet = Pet::new(PetConfig::default());
        let mut probed_at = None;
        let mut now = Instant::ZERO;
        for _ in 0..200 {
            now += Duration::from_millis(20);
            let d = pet
                .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap();
            paths[d.index].last_sent = Some(now);
            if d.index == 0 && d.probe {
                probed_at = Some(now);
                break;
            }
        }
        let t = probed_at.expect("idle path was never probed");
        assert!(
            t >= Instant::from_secs_f64(1.0) && t <= Instant::from_secs_f64(1.05),
            "probe at {t:?}"
        );
    }

    /// Keepalives make a path's delay known before it carries data: its
    /// one-way delay on the side that receives them, half its round trip
    /// on the side that sends them.
    #[test]
    fn keepalives_stand_in_for_an_unmeasured_paths_delay() {
        let mut paths = unknown_paths(3);
        paths[0].rtt_hint = Some(Duration::from_millis(40));
        paths[1].rtt_hint = Some(Duration::from_millis(600));
        let d = Pet::relative_delays(&paths);
        assert_eq!(d[0], Some(Duration::ZERO));
        assert_eq!(d[1], Some(Duration::from_millis(280)));
        assert_eq!(d[2], None);
        paths[0].owd_hint_raw_ns = Some(5_020_000_000);
        paths[2].owd_hint_raw_ns = Some(5_300_000_000);
        let d = Pet::relative_delays(&paths);
        assert_eq!(d[2], Some(Duration::from_millis(280)));
        // Data-based delays win where there are any.
        paths[1].owd.on_sample(Instant::ZERO, 7_000_000);
        paths[0].owd.on_sample(Instant::ZERO, 5_000_000);
        let d = Pet::relative_delays(&paths);
        assert_eq!(d[1], Some(Duration::from_millis(2)));
    }

    /// The first flight of a transfer, before any path has a rate
    /// estimate, pairs only on the paths near the nearest one when
    /// keepalives have measured the delays: a pair on a path 280 ms
    /// further away held the stream longer than the inner TCP's RTO. A
    /// path of unknown delay still gets its pairs.
    #[test]
    fn the_first_flight_keeps_off_a_path_known_to_be_far() {
        let mut paths = unknown_paths(3);
        paths[0].rtt_hint = Some(Duration::from_millis(40));
        paths[1].rtt_hint = Some(Duration::from_millis(600));
        paths[2].rtt_hint = Some(Duration::from_millis(45));
        let mut pet = Pet::new(PetConfig::default());
        let mut used = [0; 3];
        for _ in 0..20 {
            used[pet
                .select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap()
                .index] += 1;
        }
        assert_eq!(used[1], 0, "first flight on the far path: {used:?}");
        assert!(
            used[0] > 0 && used[2] > 0,
            "near paths not both paired: {used:?}"
        );
        let i = pet
            .select(Instant::ZERO, &pkt(true), &paths, &SendQueues::UNPACED)
            .unwrap()
            .index;
        assert_ne!(i, 1, "a retransmission went to the far path");
        // Without any delay known every path is paired, as before.
        let mut pet = Pet::new(PetConfig::default());
        let paths = unknown_paths(2);
        let used: Vec<usize> = (0..4)
            .map(|_| {
                pet.select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
                    .unwrap()
                    .index
            })
            .collect();
        assert!(used.contains(&1), "{used:?}");
    }

    /// Issue 13: a far path known only from its keepalives gets its
    /// initial pair only once the near path's queue is as long as the
    /// delay difference (the pair then arrives in order), and a small
    /// packet on an idle bond goes by the near path.
    #[test]
    fn a_far_path_is_probed_only_when_it_delivers_in_order() {
        let mut paths = with_estimates(&[10e6]);
        paths.extend(unknown_paths(2).into_iter().skip(1));
        paths[0].rtt_hint = Some(Duration::from_millis(40));
        paths[1].rtt_hint = Some(Duration::from_millis(600));
        let mut pet = Pet::new(PetConfig::default());
        let ack = PacketInfo {
            len: 52,
            retransmit: false,
        };
        assert_eq!(
            pet.select(Instant::ZERO, &ack, &paths, &SendQueues::UNPACED)
                .unwrap()
                .index,
            0
        );
        // A burst: each 1500-byte packet adds 1.2 ms to path 0's queue.
        let now = Instant::from_millis(1);
        let first_far = (0..400)
            .position(|_| {
                pet.select(now, &pkt(false), &paths, &SendQueues::UNPACED)
                    .unwrap()
                    .index
                    == 1
            })
            .expect("the far path got its initial pair");
        let queued = Duration::from_secs_f64(first_far as f64 * 1500.0 * 8.0 / 10e6);
        assert!(
            queued + Duration::from_millis(10) >= Duration::from_millis(280),
            "initial pair on the far path behind only {queued:?} of near queue"
        );
    }
}
