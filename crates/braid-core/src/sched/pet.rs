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

mod config;
mod delays;
mod late;
mod near;
mod ramp;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_late;
#[cfg(test)]
mod tests_near;
#[cfg(test)]
mod tests_ramp;
mod thin;

pub use config::PetConfig;
use delays::Delays;

/// The first packet of a pair, waiting for its second.
#[derive(Copy, Clone, Debug)]
struct OpenPair {
    path: PathId,
    /// Until when a second packet sent now would still queue behind the
    /// first at the bottleneck (and so measure it).
    valid_until: Instant,
    /// The first packet was a probe (its second follows it anywhere).
    probe: bool,
    /// The first packet went to the path although the near-floor rule
    /// raised the path's delay for it (`Pet::near_raise`): EDPF chose
    /// the path for a packet that counts it as far, and the second,
    /// counted the same way, may follow it there.
    raised: bool,
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
    /// Whether each path's last packet was predicted from the sender's
    /// pacing queue, which the corrections do not enter (`on_delivery`).
    /// The path's, not each packet's: the packets in flight when a path
    /// starts or stops being paced (rare: it is paced from its first
    /// full-size pairs on) are taken by the new rule.
    paced: [bool; MAX_PATHS],
    /// When each path last got the first packet of a pair: what keeps its
    /// estimate fresh (`probe_interval`).
    last_pair_at: [Option<Instant>; MAX_PATHS],
    /// Paths whose packets came late, and their probes (`late.rs`).
    late: late::Late,
    /// The rate PET places and the paths its ramp keeps out (`ramp.rs`).
    ramp: ramp::Ramp,
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
            paced: [false; MAX_PATHS],
            last_pair_at: [None; MAX_PATHS],
            late: late::Late::default(),
            ramp: ramp::Ramp::default(),
        }
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
        pkt: &PacketInfo,
        paths: &[PathState],
        delays: &Delays,
        paced: &SendQueues,
    ) -> Option<(usize, Instant)> {
        let len = pkt.len;
        let small = len <= self.cfg.small_packet_bytes;
        // Small packets may use a thin path: skip the rule's scans for them
        // (every TCP ACK of the reverse direction comes here).
        let thin = (!small).then(|| self.thin_and_lossy(paths));
        let params = |p: &PathState| {
            if thin.as_ref().is_some_and(|thin| thin(p)) {
                return None;
            }
            let rate = p.bw.estimate_bps().or(small.then_some(f64::INFINITY))?;
            Some((
                delays[p.id.0 as usize % MAX_PATHS].unwrap_or_default(),
                rate,
            ))
        };
        // The ramp keeps small paths out of the data while the best path
        // alone carries the bond's rate (`ramp.rs`); a spill, when that
        // path is full, ignores it.
        let ramp_params = |p: &PathState| {
            if self.ramp_keeps_out(pkt, p) {
                return None;
            }
            params(p)
        };
        let excess = self.excess_delays(paths, delays);
        // Paths nearer than the fastest count as far as it
        // (`PetConfig::near_floor`); small packets that carry no TCP
        // payload keep their delays.
        let raised = self.near_raise(pkt, paths, delays, &excess);
        // EDPF with each path's delivery time counted `excess` earlier and
        // `raised` later.
        let earliest = |pred: &dyn Fn(&PathState) -> Option<(Duration, f64)>| {
            let mut best: Option<(usize, Instant, Instant)> = None;
            for (i, p) in paths.iter().enumerate().filter(|(_, p)| p.usable) {
                let Some((delay, rate)) = pred(p) else {
                    continue;
                };
                let d = self.delivery_time(p, paced, now, delay, len, rate);
                let slot = p.id.0 as usize % MAX_PATHS;
                let score = d - excess[slot] + raised[slot];
                if best.is_none_or(|(_, _, b)| score < b) {
                    best = Some((i, d, score));
                }
            }
            best.map(|(i, d, _)| (i, d))
        };
        let best = earliest(&ramp_params);
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
        self.paced[s] = paced.free_at(p.id).is_some();
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
        pkt: &PacketInfo,
        paths: &[PathState],
        delays: &Delays,
        paced: &SendQueues,
    ) -> Option<(usize, bool)> {
        let len = pkt.len;
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        // Initial phase: round robin among paths still without an estimate.
        // Only full-size pairs count: pings and handshakes before a transfer
        // used them up unmeasured, leaving far paths to wait for a probe.
        let small = len <= self.cfg.small_packet_bytes;
        let limit = self.cfg.initial_pairs;
        let sent = self.initial_pairs_sent;
        let best = self.edpf(now, pkt, paths, delays, paced);
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
        // further than `first_flight_lateness` beyond the nearest known delay (see
        // `Pet::near_enough`).
        let arrives_in_time = Self::arrives_in_time(&self.cfg, now, paths, delays, best);
        if let Some(i) = self.round_robin(paths, |p| {
            !small && p.bw.estimate_bps().is_none() && sent[slot(p)] < limit && arrives_in_time(p)
        }) {
            self.initial_pairs_sent[slot(&paths[i])] += 1;
            return Some((i, false));
        }
        // A path whose packets came late is due a probe (`late.rs`).
        let late = |p: &PathState| !small && self.late_probe_due(now, p);
        // Keep idle paths' estimates fresh. Idle means no pair: packets
        // that are never paired (the tunnel's repair copies, TCP
        // retransmissions) measure nothing. Counting them, a path that
        // only carried repairs (the 4 Mbit/s, 3 %-loss path of
        // `lab/cellular.toml`, chosen for copies because its queue was
        // empty) was never probed and stayed without an estimate for a
        // whole run: 0.2 of its 4 Mbit/s used (seed 6: 0.768 of the sum,
        // 0.896 with pairs counted).
        let stale = |p: &PathState| {
            self.last_pair_at[slot(p)]
                .is_none_or(|t| now.saturating_since(t) >= self.cfg.probe_interval)
        };
        let rate = |p: &PathState| p.bw.estimate_bps().or(small.then_some(f64::INFINITY));
        // A raised near path's probe counts as far as the fastest path,
        // and waits behind a packet of it (`Pet::near_probe_waits`).
        let raised = self.near_raise(pkt, paths, delays, &[Duration::ZERO; MAX_PATHS]);
        let safe = |p: &PathState| match (best, rate(p)) {
            (Some((_, best_d)), Some(rate)) => {
                let delay = delays[slot(p)].unwrap_or_default();
                let raise = raised[slot(p)];
                self.delivery_time(p, paced, now, delay, len, rate) + raise
                    <= best_d + self.cfg.probe_slack
                    && self.near_probe_waits(now, paths, raise)
            }
            // Without an estimate of the path only its delay, if known,
            // predicts anything (a small packet is predicted as if the
            // path were infinitely fast: a probe of TCP ACKs onto a far
            // path holds every later ACK in the resequencer).
            _ => arrives_in_time(p),
        };
        // A late path is probed where EDPF puts the packet anyway (unpaired,
        // it would measure nothing), or elsewhere where any probe may go;
        // then a path due its periodic probe, unless the ramp keeps it out
        // of the data: a probe carries data too, and its loss holds the
        // stream as any other would (`ramp.rs`).
        let best_i = best.map(|(b, _)| b);
        let probe = best_i
            .filter(|&b| late(&paths[b]))
            .or_else(|| {
                (0..paths.len()).find(|&i| {
                    Some(i) != best_i && paths[i].usable && late(&paths[i]) && safe(&paths[i])
                })
            })
            .or_else(|| {
                paths
                    .iter()
                    .position(|p| p.usable && stale(p) && safe(p) && !self.ramp_keeps_out(pkt, p))
                    .filter(|&i| best_i != Some(i))
            });
        if let Some(i) = probe {
            if late(&paths[i]) {
                self.late_probe_sent(now, &paths[i]);
            }
            return Some((i, true));
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
    /// more than `first_flight_lateness` is not in time. A path of unknown
    /// delay is.
    ///
    /// At the start of a transfer no path has a rate yet. Pairing the first
    /// flight round robin over every path put a pair on a path 280 ms
    /// further away; the resequencer held the stream behind it for 280 ms,
    /// longer than the inner TCP's minimum RTO of 200 ms, and the spurious
    /// timeout left the inner TCP in congestion avoidance from a window of
    /// 14 packets. CUBIC then took about ten seconds to grow a window that
    /// covers the far path (lab `far.toml`, inner `ss -ti` each second).
    fn arrives_in_time<'a>(
        cfg: &PetConfig,
        now: Instant,
        paths: &'a [PathState],
        delays: &'a Delays,
        best: Option<(usize, Instant)>,
    ) -> impl Fn(&PathState) -> bool + use<'a> {
        let (slack, first) = (cfg.probe_slack, cfg.first_flight_lateness);
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        let nearest = paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| delays[slot(p)])
            .min();
        move |p: &PathState| match (best, delays[slot(p)], nearest) {
            (Some((_, best_d)), Some(delay), _) => now + delay <= best_d + slack,
            (None, Some(delay), Some(nearest)) => delay <= nearest + first,
            _ => true,
        }
    }

    /// Round robin among the usable paths that [`Pet::arrives_in_time`]
    /// with no estimate at all, or among every usable path if none is.
    fn round_robin_near(&mut self, paths: &[PathState], delays: &Delays) -> Option<usize> {
        let near = Self::arrives_in_time(&self.cfg, Instant::ZERO, paths, delays, None);
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
        // Where a packet goes, a quiet path counts farther; what it is
        // predicted to take there (`commit`) is the path's measured delay.
        let choice = &Self::choice_delays(paths, delays);
        self.update_ramp(now, pkt.len, paths, delays);
        if pkt.retransmit {
            // Never paired; a pending pair is abandoned (no longer back to back).
            self.pending = None;
            let i = match self.edpf(now, pkt, paths, choice, paced) {
                Some((i, _)) => i,
                None => self.round_robin_near(paths, choice)?,
            };
            let eta_ns = self.commit(now, pkt.len, paths, delays, paced, i);
            return Some(Decision {
                eta_ns,
                ..Decision::single(i)
            });
        }
        if let Some(open) = self.pending.take().filter(|o| now <= o.valid_until) {
            // A packet the near-floor rule places far does not follow a
            // pair that a packet exempt from the rule opened on a raised
            // path: a pure ACK opened one on the near path and the
            // transfer's first data packet, right behind it, went there as
            // its second (`Pet::near_raise`). A pair whose first packet
            // went there under the rule completes, so that the path keeps
            // measuring its rate while it carries data
            // (`tests_near::data_on_a_raised_near_path_goes_in_pairs`).
            let raised = || {
                let slot = open.path.0 as usize % MAX_PATHS;
                !open.probe && !open.raised && self.raises(pkt, paths, delays, slot)
            };
            // Nor onto a path the ramp keeps out (`ramp.rs`): a pair opened
            // there by a pure ACK or a spill would pull the data behind it
            // onto that path.
            let ramped_out = |p: &PathState| !open.probe && self.ramp_keeps_out(pkt, p);
            if let Some(i) = paths
                .iter()
                .position(|p| p.id == open.path && p.usable)
                .filter(|&i| !ramped_out(&paths[i]) && !raised())
            {
                let eta_ns = self.commit(now, pkt.len, paths, delays, paced, i);
                return Some(Decision {
                    index: i,
                    pair: PairRole::Second,
                    probe: false,
                    eta_ns,
                });
            }
        }
        let (i, probe) = self.place_pair(now, pkt, paths, choice, paced)?;
        let slot = paths[i].id.0 as usize % MAX_PATHS;
        self.last_pair_at[slot] = Some(now);
        let eta_ns = self.commit(now, pkt.len, paths, delays, paced, i);
        self.pending = Some(OpenPair {
            path: paths[i].id,
            valid_until: self.pair_deadline(now, paths, delays, paced, i),
            probe,
            raised: self.raises(pkt, paths, delays, slot),
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
        self.note_late(path, residual);
        // A paced path's predictions start from its pacing queue, which
        // the corrections do not enter: correcting it would only hide
        // how late its packets still come. Its bottleneck queue, which
        // the pacer should keep empty, fills when the path's rate falls
        // below the pacing rate; every packet then comes as late as the
        // queue is long, and each correction (half the residual) took
        // its share off the next packet's residual. With about ten
        // packets in flight the residual of a 300 ms queue stayed near
        // 50 ms, at `late_probe`: on change set 7/12 of
        // `lab/sweep-changes.sh` (1.23 Mbit/s 5 ms away falling to 0.39)
        // the path was first found late 1.4 s after the fall, and 0.27 s
        // after it without the corrections.
        if self.paced[s] {
            return;
        }
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
