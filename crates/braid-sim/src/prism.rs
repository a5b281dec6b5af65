//! The schedulers PRISM compares ADAS with: its WRR (Section 4.2.1, in
//! rounds) and, in Fig 12 (Section 8.3.2), a random link per packet, hRTT
//! alone and utilization alone. They are baselines of those experiments,
//! not schedulers braid would ship, so they live in the simulator. ADAS
//! itself, RR and the interleaved (smooth) WRR are braid-core's.

use braid_core::path::PathState;
use braid_core::sched::{known_or_estimated_rate, Decision, PacketInfo, Scheduler, SendQueues};
use braid_core::time::Instant;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A uniformly random usable link per packet.
pub struct RandomLink {
    rng: ChaCha8Rng,
}

impl RandomLink {
    pub fn new(rng: ChaCha8Rng) -> Self {
        RandomLink { rng }
    }
}

impl Scheduler for RandomLink {
    fn name(&self) -> &'static str {
        "RANDOM"
    }

    fn select(
        &mut self,
        _now: Instant,
        _pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        let n = paths.iter().filter(|p| p.usable).count();
        if n == 0 {
            return None;
        }
        let k = self.rng.gen_range(0..n);
        paths
            .iter()
            .enumerate()
            .filter(|(_, p)| p.usable)
            .nth(k)
            .map(|(i, _)| Decision::single(i))
    }
}

/// ADAS's Rule 3 alone: the smallest expected arrival time `hRTT_i`
/// (half the smoothed RTT, as ADAS reads it), whatever is in flight. The
/// paper finds it the worst scheme: a fast link of little bandwidth takes
/// everything and drops it.
#[derive(Default)]
pub struct HrttOnly;

impl Scheduler for HrttOnly {
    fn name(&self) -> &'static str {
        "HRTT-ONLY"
    }

    fn select(
        &mut self,
        _now: Instant,
        _pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        paths
            .iter()
            .enumerate()
            .filter(|(_, p)| p.usable)
            .min_by_key(|(_, p)| p.rtt.srtt())
            .map(|(i, _)| Decision::single(i))
    }
}

/// ADAS's Rule 2 alone: the smallest `U_i = floor(N_i / W_i)` with the
/// original weights `W_i = B_i / min B` (no AIMD, no hRTT tie-break; ties
/// go to the lowest index).
#[derive(Default)]
pub struct UOnly;

impl Scheduler for UOnly {
    fn name(&self) -> &'static str {
        "U-ONLY"
    }

    fn select(
        &mut self,
        _now: Instant,
        _pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        let min_b = slowest_usable_rate(paths);
        paths
            .iter()
            .enumerate()
            .filter(|(_, p)| p.usable)
            .min_by_key(|(_, p)| {
                (f64::from(p.in_flight_packets) * min_b / link_rate(p)).floor() as u64
            })
            .map(|(i, _)| Decision::single(i))
    }
}

/// A link's rate `B_i` as ADAS weighs it (its known rate, else its
/// estimate; at least 1 bit/s so that weights stay finite).
fn link_rate(p: &PathState) -> f64 {
    known_or_estimated_rate(p).unwrap_or(1.0).max(1.0)
}

/// `min_j B_j` over the usable links, the unit of the weights
/// `W_i = B_i / min_j B_j`; infinite when no link is usable.
fn slowest_usable_rate(paths: &[PathState]) -> f64 {
    paths
        .iter()
        .filter(|p| p.usable)
        .map(link_rate)
        .fold(f64::INFINITY, f64::min)
}

/// PRISM's WRR (Section 4.2.1, Fig 3 Case A): time is divided into rounds,
/// and in each round link `i` is given its quantum of `W_i` packets *in a
/// row* before the next link's turn (weights 1:2 send p1 and p2 on ℓ2, then
/// p3 on ℓ1: "the quantum of ℓ2 has already been exhausted by p1 and p2").
/// The weights are ADAS's, `W_i = B_i / min_j B_j` (see `braid_core::sched::adas`);
/// fractional quanta carry over between rounds (deficit counters), so the
/// long-run split is exactly proportional to the rates.
#[derive(Default)]
pub struct RoundWrr {
    /// Link whose turn it is (index into the path list).
    turn: usize,
    /// Packets link `turn` may still send in this round.
    credit: [f64; braid_core::path::MAX_PATHS],
    /// Whether `turn`'s quantum for the current round has been added.
    started: bool,
}

impl Scheduler for RoundWrr {
    fn name(&self) -> &'static str {
        "WRR"
    }

    fn select(
        &mut self,
        _now: Instant,
        _pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        let min_b = slowest_usable_rate(paths);
        if !min_b.is_finite() {
            return None;
        }
        let n = paths.len();
        // At most two passes: every usable link gains at least one packet
        // of credit per pass (its weight is >= 1).
        for _ in 0..=2 * n {
            let i = self.turn % n;
            let p = &paths[i];
            if p.usable {
                if !self.started {
                    self.credit[i] += link_rate(p) / min_b;
                    self.started = true;
                }
                if self.credit[i] >= 1.0 {
                    self.credit[i] -= 1.0;
                    return Some(Decision::single(i));
                }
            } else {
                self.credit[i] = 0.0;
            }
            self.turn = (i + 1) % n;
            self.started = false;
        }
        None
    }

    fn paths_changed(&mut self, _paths: &[PathState]) {
        *self = RoundWrr::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_core::path::{EstimatorConfig, PathId, PathParams};
    use rand::SeedableRng;

    fn paths(rates: &[f64]) -> Vec<PathState> {
        rates
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                PathState::new(
                    PathId(i as u8),
                    PathParams {
                        rate_bps: Some(r),
                        delay: None,
                    },
                    &EstimatorConfig::default(),
                )
            })
            .collect()
    }

    const PKT: PacketInfo = PacketInfo {
        len: 1500,
        retransmit: false,
        stream: false,
    };

    #[test]
    fn u_only_fills_links_in_proportion_to_their_weight() {
        let mut p = paths(&[600e3, 1200e3]);
        let mut s = UOnly;
        let mut count = [0; 2];
        for _ in 0..6 {
            let d = s
                .select(Instant::ZERO, &PKT, &p, &SendQueues::UNPACED)
                .unwrap();
            p[d.index].in_flight_packets += 1;
            count[d.index] += 1;
        }
        assert_eq!(count, [2, 4]);
    }

    /// Section 4.2.1's Case A: weights 1:2 give the faster link its two
    /// packets in a row, then the slower its one; a fractional quantum
    /// carries over, so 1 : 1.5 sends 2 and 3 of every 5.
    #[test]
    fn round_wrr_gives_each_link_its_quantum_in_a_row() {
        let p = paths(&[1200e3, 600e3]);
        let mut s = RoundWrr::default();
        let picks: Vec<usize> = (0..6)
            .map(|_| {
                s.select(Instant::ZERO, &PKT, &p, &SendQueues::UNPACED)
                    .unwrap()
                    .index
            })
            .collect();
        assert_eq!(picks, vec![0, 0, 1, 0, 0, 1]);
        let p = paths(&[600e3, 900e3]);
        let mut s = RoundWrr::default();
        let mut count = [0; 2];
        for _ in 0..500 {
            count[s
                .select(Instant::ZERO, &PKT, &p, &SendQueues::UNPACED)
                .unwrap()
                .index] += 1;
        }
        assert_eq!(count, [200, 300]);
    }

    #[test]
    fn random_uses_every_usable_link_and_only_those() {
        let mut p = paths(&[1e6, 1e6, 1e6]);
        p[1].usable = false;
        let mut s = RandomLink::new(ChaCha8Rng::seed_from_u64(7));
        let mut count = [0; 3];
        for _ in 0..300 {
            count[s
                .select(Instant::ZERO, &PKT, &p, &SendQueues::UNPACED)
                .unwrap()
                .index] += 1;
        }
        assert_eq!(count[1], 0);
        assert!(count[0] > 100 && count[2] > 100, "{count:?}");
    }

    #[test]
    fn hrtt_only_ignores_what_is_in_flight() {
        let mut p = paths(&[1e6, 1e6]);
        p[1].in_flight_packets = 1000;
        p[0].rtt
            .update(braid_core::time::Duration::from_millis(300));
        p[1].rtt
            .update(braid_core::time::Duration::from_millis(100));
        assert_eq!(
            HrttOnly
                .select(Instant::ZERO, &PKT, &p, &SendQueues::UNPACED)
                .unwrap()
                .index,
            1
        );
    }
}
