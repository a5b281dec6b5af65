//! Round robin: path after path regardless of capacity. The naive baseline.

use super::{Decision, PacketInfo, Scheduler, SendQueues};
use crate::path::PathState;
use crate::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    next: usize,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "RR"
    }

    fn select(
        &mut self,
        _now: Instant,
        _pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        let n = paths.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            if paths[i].usable {
                self.next = (i + 1) % n;
                return Some(Decision::single(i));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::test_util::unknown_paths;

    #[test]
    fn cycles_and_skips_unusable() {
        let mut paths = unknown_paths(3);
        paths[1].usable = false;
        let mut rr = RoundRobin::default();
        let pkt = PacketInfo {
            len: 1500,
            retransmit: false,
            stream: false,
        };
        let picks: Vec<usize> = (0..4)
            .map(|_| {
                rr.select(Instant::ZERO, &pkt, &paths, &SendQueues::UNPACED)
                    .unwrap()
                    .index
            })
            .collect();
        assert_eq!(picks, vec![0, 2, 0, 2]);
    }
}
