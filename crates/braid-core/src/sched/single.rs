//! Single: the highest-bandwidth path alone (the paper's HBI as a tunnel
//! scheduler). Configured rate wins over the estimate; ties go to the
//! lower index.

use super::{known_or_estimated_rate, Decision, PacketInfo, Scheduler, SendQueues};
use crate::path::PathState;
use crate::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct Single;

impl Scheduler for Single {
    fn name(&self) -> &'static str {
        "Single"
    }

    fn select(
        &mut self,
        _now: Instant,
        _pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        let mut best: Option<(usize, f64)> = None;
        for (i, p) in paths.iter().enumerate().filter(|(_, p)| p.usable) {
            let r = known_or_estimated_rate(p).unwrap_or(0.0);
            if best.is_none_or(|(_, br)| r > br) {
                best = Some((i, r));
            }
        }
        best.map(|(i, _)| Decision::single(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::test_util::known_paths;

    #[test]
    fn picks_fastest_usable() {
        let mut paths = known_paths(&[(50e3, 50), (200e3, 50), (100e3, 50)]);
        let pkt = PacketInfo {
            len: 1500,
            retransmit: false,
            stream: false,
        };
        assert_eq!(
            Single
                .select(Instant::ZERO, &pkt, &paths, &SendQueues::UNPACED)
                .unwrap()
                .index,
            1
        );
        paths[1].usable = false;
        assert_eq!(
            Single
                .select(Instant::ZERO, &pkt, &paths, &SendQueues::UNPACED)
                .unwrap()
                .index,
            2
        );
    }
}
