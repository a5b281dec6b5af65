//! MinRtt: the Linux MPTCP default scheduler, as a peer. It sends on the
//! path with the lowest smoothed RTT among those with room in their window.
//! A tunnel has no per-path congestion window, so the window is taken as
//! the path's estimated bandwidth-delay product (packet-pair rate times
//! minimum RTT) times `window_gain`, or `initial_window_packets` before an
//! estimate exists. Queueing raises a path's SRTT, so traffic spills to
//! slower paths as the fast one fills, as in MPTCP.

use super::{Decision, PacketInfo, Scheduler, SendQueues};
use crate::path::PathState;
use crate::time::Instant;

#[derive(Clone, Debug)]
pub struct MinRtt {
    pub window_gain: f64,
    pub initial_window_packets: u32,
}

impl Default for MinRtt {
    fn default() -> Self {
        MinRtt {
            window_gain: 2.0,
            initial_window_packets: 10,
        }
    }
}

impl MinRtt {
    fn window_bytes(&self, p: &PathState, len: u32) -> f64 {
        match (p.bw.estimate_bps(), p.rtt.min_rtt()) {
            (Some(bps), Some(rtt)) => {
                (bps / 8.0 * rtt.as_secs_f64() * self.window_gain).max(2.0 * len as f64)
            }
            _ => self.initial_window_packets as f64 * len as f64,
        }
    }
}

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "MinRtt"
    }

    fn select(
        &mut self,
        _now: Instant,
        pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        let mut best_open: Option<usize> = None;
        let mut best_any: Option<usize> = None;
        for (i, p) in paths.iter().enumerate().filter(|(_, p)| p.usable) {
            let better = |b: Option<usize>| b.is_none_or(|b| p.rtt.srtt() < paths[b].rtt.srtt());
            if better(best_any) {
                best_any = Some(i);
            }
            let open =
                (p.in_flight_bytes as f64) + (pkt.len as f64) <= self.window_bytes(p, pkt.len);
            if open && better(best_open) {
                best_open = Some(i);
            }
        }
        best_open.or(best_any).map(Decision::single)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::test_util::unknown_paths;
    use crate::time::Duration;

    #[test]
    fn lowest_rtt_until_its_window_fills() {
        let mut paths = unknown_paths(2);
        paths[0].rtt.update(Duration::from_millis(100));
        paths[1].rtt.update(Duration::from_millis(20));
        let mut s = MinRtt::default();
        let pkt = PacketInfo {
            len: 1000,
            retransmit: false,
            stream: false,
        };
        assert_eq!(
            s.select(Instant::ZERO, &pkt, &paths, &SendQueues::UNPACED)
                .unwrap()
                .index,
            1
        );
        paths[1].in_flight_bytes = 10_000; // initial window of 10 packets is full
        assert_eq!(
            s.select(Instant::ZERO, &pkt, &paths, &SendQueues::UNPACED)
                .unwrap()
                .index,
            0
        );
    }
}
