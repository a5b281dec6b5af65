//! ADAS, PRISM's adaptive scheduler (PRISM Section 4; SPECS.md §1.1).
//!
//! ADAS places each packet by how full each link is *now*, not by how many
//! packets it has been given so far (WRR). Per link it keeps the four
//! values of Section 4.3: the in-flight count `N_i`, the weight `W_i`, the
//! utilization `U_i = floor(N_i / W_i)` (Section 4.2.1) and the expected
//! arrival time `hRTT_i` (Section 4.2.2). Its rules (Algorithm 1, rebuilt
//! from the prose in SPECS.md §1.1):
//!
//! 1. Retransmissions get priority.
//! 2. Candidates are the links with the smallest `U_i`.
//! 3. Among two or more candidates, the smallest `hRTT_i` wins (SPECS.md
//!    reads the paper's "more than two" / "more than one" as `>= 2`).
//!
//! and the weights follow AIMD (Section 4.2.3): halved on a loss detected on
//! the link, grown back per identified ACK, never above the original.
//!
//! # Readings where Section 4 is vague
//!
//! - **`N_i`** is [`PathState::in_flight_packets`]: the sender adds one when
//!   it sends on the path and removes it when a feedback entry reports the
//!   packet delivered or its per-path loss detection gives it up. braid's
//!   feedback names the exact packet, which is what PRISM's RPC rebuilds
//!   from the inner TCP's ACKs (Section 5.2.1, "ACK identification").
//! - **Original weight `W_i^0`.** The paper takes "the ratio of the link
//!   bandwidth to the least common denominator/factor of all links'
//!   bandwidths", i.e. `B_i / gcd(B)` (SPECS.md §1.1). We use
//!   `W_i^0 = B_i / min_j B_j`: the same ratios, and the same weights as the
//!   paper whenever the slowest rate divides the others (3:1 in Figs 6 and
//!   7). Where it does not, the gcd gives weights such as 31:36:36:43
//!   (Fig 14) or, for measured rates, near-arbitrary integers; then `U_i`
//!   stays 0 until dozens of packets are in flight and ADAS degenerates to
//!   hRTT-only, which Section 8.3.2 shows is the worst scheme. Normalising
//!   by the slowest link keeps the smallest weight at 1 so `U` moves with
//!   every packet on it.
//! - **`B_i`** is the configured rate (SPECS.md's suggestion: nominal,
//!   configured), else the packet-pair estimate, else equal weights, the
//!   same source as WRR ([`known_or_estimated_rate`]).
//! - **`hRTT_i`** is half the path's smoothed RTT ([`PathState::rtt`], the
//!   sender's RFC 6298 SRTT from identified feedback), SPECS.md's
//!   suggestion. It breaks ties only, so queueing already in SRTT is
//!   enough; the backlog is not added (U already accounts for it).
//! - **`δ`**, the additive increase, is `ai_gain / W_i` per identified ACK
//!   (SPECS.md: like TCP congestion avoidance), with `W_i` kept fractional
//!   and `U_i` taking the floor. A cut weight never falls below
//!   `min_weight_fraction · W_i^0`, so `U_i` stays finite.
//! - **Rule 1.** braid's schedulers place each packet as it arrives and hold
//!   no queue, so "priority" cannot mean jumping a queue here. A
//!   retransmission instead goes on the link where it is expected to arrive
//!   first, `hRTT_i` plus the time to drain the link's in-flight bytes at
//!   `B_i`, regardless of `U` and of weight cuts: the inner TCP is stalled
//!   on it, so its delivery time matters more than the split. The sender
//!   marks retransmissions in [`PacketInfo::retransmit`].
//!
//! # Where the AIMD events come from
//!
//! ACKs and losses the sender itself identifies (feedback entries, FIFO
//! and timeout losses, and NACK-detected losses as long as they are counted
//! in [`PathState::loss`]) reach ADAS without any call: at every `select`
//! it compares each path's [`PathState::acked_packets`] and
//! [`LossEstimator::lost`](crate::path::LossEstimator::lost) with the values
//! it saw last, one halving per loss event (see below) and one increase per
//! newly acked packet. Losses found *outside* those counters, such as
//! PRISM's reverse-path controller identifying a hole per link from the
//! inner TCP's SACK blocks (Section 5.2.3), are reported through
//! [`Scheduler::on_loss`] at the point they are identified; the cut applies
//! at the next `select`. A detector that counts a loss in `PathState::loss`
//! need not call `on_loss` as well (doing both still halves once if they
//! land before the same `select`, twice otherwise).
//!
//! Losses counted together at one `select` (a FIFO gap that gives up
//! several packets at once) are one congestion event and halve the weight
//! once, as TCP halves once per window.

use super::{known_or_estimated_rate, Decision, PacketInfo, Scheduler, SendQueues};
use crate::path::{PathId, PathState, MAX_PATHS};
use crate::time::Instant;

/// Tuning of [`Adas`].
#[derive(Clone, Debug, PartialEq)]
pub struct AdasConfig {
    /// Additive increase per identified ACK is `ai_gain / W_i` (δ).
    pub ai_gain: f64,
    /// A cut weight stays at or above this fraction of the original.
    pub min_weight_fraction: f64,
}

impl Default for AdasConfig {
    fn default() -> Self {
        AdasConfig {
            ai_gain: 1.0,
            min_weight_fraction: 1.0 / 64.0,
        }
    }
}

/// Per-link state ADAS keeps beyond what [`PathState`] holds.
#[derive(Copy, Clone, Debug, Default)]
struct Link {
    /// The current weight when an AIMD cut is in effect, `None` at the
    /// original weight. Kept absolute (in the units of `W_i^0`) so that
    /// δ = ai_gain / W_i applies directly.
    cut: Option<f64>,
    /// `PathState::acked_packets` when last seen.
    seen_acked: u64,
    /// `PathState::loss.lost()` when last seen.
    seen_lost: u64,
    /// [`Scheduler::on_loss`] reported a loss not yet applied.
    reported_loss: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Adas {
    cfg: AdasConfig,
    links: [Link; MAX_PATHS],
}

fn slot(p: &PathState) -> usize {
    p.id.0 as usize % MAX_PATHS
}

impl Adas {
    pub fn new(cfg: AdasConfig) -> Self {
        Adas {
            cfg,
            links: [Link::default(); MAX_PATHS],
        }
    }

    /// `B_i`: the configured rate, else the estimate, else 1 (equal weights).
    fn bandwidth(p: &PathState) -> f64 {
        known_or_estimated_rate(p).unwrap_or(1.0).max(1.0)
    }

    /// `W_i^0 = B_i / min_j B_j` over the usable paths (module docs).
    fn original_weight(p: &PathState, min_b: f64) -> f64 {
        Self::bandwidth(p) / min_b
    }

    fn min_bandwidth(paths: &[PathState]) -> f64 {
        paths
            .iter()
            .filter(|p| p.usable)
            .map(Self::bandwidth)
            .fold(f64::INFINITY, f64::min)
    }

    /// The current weight `W_i` of a path whose original weight is `w0`.
    fn weight(&self, p: &PathState, w0: f64) -> f64 {
        self.links[slot(p)].cut.map_or(w0, |w| w.min(w0))
    }

    /// `U_i = floor(N_i / W_i)` (Section 4.2.1).
    fn utilization(&self, p: &PathState, w0: f64) -> u64 {
        (p.in_flight_packets as f64 / self.weight(p, w0)).floor() as u64
    }

    /// `hRTT_i = SRTT_i / 2` in nanoseconds (module docs).
    fn hrtt_ns(p: &PathState) -> u128 {
        p.rtt.srtt().as_nanos() / 2
    }

    /// Multiplicative decrease (Section 4.2.3): `W_i <- W_i / 2`.
    fn halve(&mut self, p: &PathState, w0: f64) {
        let cfg_min = self.cfg.min_weight_fraction * w0;
        let w = self.weight(p, w0);
        self.links[slot(p)].cut = Some((w / 2.0).max(cfg_min));
    }

    /// Additive increase per identified ACK (Section 4.2.3):
    /// `W_i <- min(W_i^0, W_i + ai_gain / W_i)`.
    fn grow(&mut self, p: &PathState, w0: f64, acks: u64) {
        let l = &mut self.links[slot(p)];
        let Some(mut w) = l.cut else { return };
        for _ in 0..acks {
            w += self.cfg.ai_gain / w;
            if w >= w0 {
                l.cut = None;
                return;
            }
        }
        l.cut = Some(w);
    }

    /// Applies the ACKs and losses the sender counted since the last call.
    fn absorb_counters(&mut self, paths: &[PathState], min_b: f64) {
        for p in paths {
            let s = slot(p);
            let (acked, lost) = (p.acked_packets, p.loss.lost());
            let new_acks = acked.saturating_sub(self.links[s].seen_acked);
            let new_losses = lost.saturating_sub(self.links[s].seen_lost)
                + u64::from(self.links[s].reported_loss);
            self.links[s].seen_acked = acked;
            self.links[s].seen_lost = lost;
            self.links[s].reported_loss = false;
            let w0 = Self::original_weight(p, min_b);
            // Grow first: the ACKs that revealed the losses (FIFO detection)
            // arrived with them, and the cut must be the last word.
            self.grow(p, w0, new_acks);
            if new_losses > 0 {
                self.halve(p, w0);
            }
        }
    }

    /// The current weight of `path` relative to the slowest usable link,
    /// for reports and tests.
    pub fn current_weight(&self, path: &PathState, paths: &[PathState]) -> f64 {
        self.weight(
            path,
            Self::original_weight(path, Self::min_bandwidth(paths)),
        )
    }
}

impl Scheduler for Adas {
    fn name(&self) -> &'static str {
        "ADAS"
    }

    fn select(
        &mut self,
        _now: Instant,
        pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        let min_b = Self::min_bandwidth(paths);
        if !min_b.is_finite() {
            return None; // no usable path
        }
        self.absorb_counters(paths, min_b);
        let usable = paths.iter().enumerate().filter(|(_, p)| p.usable);
        let best = if pkt.retransmit {
            // Rule 1: earliest expected arrival, hRTT plus draining what is
            // already in flight on the link.
            let eta = |p: &PathState| {
                Self::hrtt_ns(p) as f64 + p.in_flight_bytes as f64 * 8e9 / Self::bandwidth(p)
            };
            usable
                .min_by(|(_, a), (_, b)| eta(a).total_cmp(&eta(b)))
                .map(|(i, _)| i)
        } else {
            // Rules 2 and 3: smallest U, then smallest hRTT, then lowest
            // index (so that equal links are taken in a fixed order).
            usable
                .min_by_key(|(_, p)| {
                    let w0 = Self::original_weight(p, min_b);
                    (self.utilization(p, w0), Self::hrtt_ns(p))
                })
                .map(|(i, _)| i)
        };
        best.map(Decision::single)
    }

    fn paths_changed(&mut self, paths: &[PathState]) {
        // Weights of a new path set start at their originals; the counters
        // are re-based so that history before the change is not replayed.
        for p in paths {
            self.links[slot(p)] = Link {
                cut: None,
                seen_acked: p.acked_packets,
                seen_lost: p.loss.lost(),
                reported_loss: false,
            };
        }
    }

    fn on_loss(&mut self, path: PathId) {
        self.links[path.0 as usize % MAX_PATHS].reported_loss = true;
    }
}

#[cfg(test)]
mod tests;
