//! Weighted round robin: packets in proportion to each path's capacity,
//! ignoring delay and queueing (PET/BMP Section IV, criterion 2: the scheme
//! whose reordering motivates PET). Implemented as smooth WRR (nginx's
//! algorithm) so that the split is interleaved rather than in runs.
//! Weights come from the configured rate, else the packet-pair estimate,
//! else 1.

use super::{known_or_estimated_rate, Decision, PacketInfo, Scheduler, SendQueues};
use crate::path::{PathState, MAX_PATHS};
use crate::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct WeightedRoundRobin {
    current: [f64; MAX_PATHS],
}

impl Scheduler for WeightedRoundRobin {
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
        let mut total = 0.0;
        let mut best: Option<usize> = None;
        for (i, p) in paths.iter().enumerate().filter(|(_, p)| p.usable) {
            let slot = p.id.0 as usize % MAX_PATHS;
            let w = known_or_estimated_rate(p).unwrap_or(1.0).max(1.0);
            total += w;
            self.current[slot] += w;
            if best.is_none_or(|b| {
                self.current[slot] > self.current[paths[b].id.0 as usize % MAX_PATHS]
            }) {
                best = Some(i);
            }
        }
        let b = best?;
        self.current[paths[b].id.0 as usize % MAX_PATHS] -= total;
        Some(Decision::single(b))
    }

    fn paths_changed(&mut self, _paths: &[PathState]) {
        self.current = [0.0; MAX_PATHS];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::test_util::known_paths;

    #[test]
    fn splits_in_proportion_to_rate() {
        let paths = known_paths(&[(50e3, 50), (100e3, 50), (200e3, 50)]);
        let mut wrr = WeightedRoundRobin::default();
        let pkt = PacketInfo {
            len: 1500,
            retransmit: false,
            stream: false,
        };
        let mut counts = [0; 3];
        for _ in 0..700 {
            counts[wrr
                .select(Instant::ZERO, &pkt, &paths, &SendQueues::UNPACED)
                .unwrap()
                .index] += 1;
        }
        assert_eq!(counts, [100, 200, 400]);
    }

    #[test]
    fn interleaves_rather_than_runs() {
        let paths = known_paths(&[(100e3, 50), (100e3, 50)]);
        let mut wrr = WeightedRoundRobin::default();
        let pkt = PacketInfo {
            len: 1500,
            retransmit: false,
            stream: false,
        };
        let picks: Vec<usize> = (0..6)
            .map(|_| {
                wrr.select(Instant::ZERO, &pkt, &paths, &SendQueues::UNPACED)
                    .unwrap()
                    .index
            })
            .collect();
        assert_eq!(picks, vec![0, 1, 0, 1, 0, 1]);
    }
}
