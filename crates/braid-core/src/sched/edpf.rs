//! Earliest Delivery Path First (PET/BMP Section III-B, eq. 1).
//!
//! Each path l has a one-way wireline delay D_l, a bottleneck rate B_l and
//! A_l, the time its bottleneck becomes free. A packet of L bytes arriving
//! at the proxy at a_i would reach the client over l at
//!
//! ```text
//! d_i^l = max(a_i + D_l, A_l) + L / B_l            (eq. 1)
//! ```
//!
//! EDPF sends it on the path with the smallest d and sets A_l = d. With
//! exact D and B and equal packet sizes it never reorders: every packet's
//! delivery time is at least that of the one before it. This module holds
//! the A_l bookkeeping ([`EdpfQueues`], shared with PET) and the ideal
//! scheduler [`Edpf`], which uses configured path parameters.

use super::{service_time, Decision, PacketInfo, Scheduler, SendQueues};
use crate::path::{PathState, MAX_PATHS};
use crate::time::{Duration, Instant};

/// The virtual bottleneck queues: A_l of eq. (1) per path slot.
#[derive(Clone, Debug)]
pub struct EdpfQueues {
    free_at: [Instant; MAX_PATHS],
}

impl Default for EdpfQueues {
    fn default() -> Self {
        EdpfQueues {
            free_at: [Instant::ZERO; MAX_PATHS],
        }
    }
}

impl EdpfQueues {
    fn slot(p: &PathState) -> usize {
        p.id.0 as usize % MAX_PATHS
    }

    /// d = max(now + delay, A_l) + len / rate (eq. 1).
    pub fn delivery_time(
        &self,
        p: &PathState,
        now: Instant,
        delay: Duration,
        len: u32,
        rate_bps: f64,
    ) -> Instant {
        let start = (now + delay).max(self.free_at[Self::slot(p)]);
        start + service_time(len, rate_bps)
    }

    /// Records that the path's bottleneck is busy until `d`.
    pub fn commit(&mut self, p: &PathState, d: Instant) {
        self.free_at[Self::slot(p)] = d;
    }

    /// A_l for the path.
    pub fn free_at(&self, p: &PathState) -> Instant {
        self.free_at[Self::slot(p)]
    }

    /// Shifts A_l by a measured prediction error, never below `floor`.
    pub fn correct(&mut self, p: &PathState, error_ns: i64, floor: Instant) {
        let s = Self::slot(p);
        let a = self.free_at[s].as_nanos() as i64 + error_ns;
        self.free_at[s] = Instant::from_nanos(a.max(floor.as_nanos() as i64).max(0) as u64);
    }

    pub fn reset(&mut self) {
        self.free_at = [Instant::ZERO; MAX_PATHS];
    }
}

/// EDPF with known path parameters: the paper's idealised scheduler.
/// Paths without a configured rate fall back to the packet-pair estimate;
/// without a configured delay, to half the smoothed RTT.
#[derive(Clone, Debug, Default)]
pub struct Edpf {
    queues: EdpfQueues,
}

impl Edpf {
    /// The earliest-delivery usable path and its delivery time, given a
    /// way to read each path's (delay, rate).
    pub(crate) fn earliest(
        queues: &EdpfQueues,
        now: Instant,
        len: u32,
        paths: &[PathState],
        params: impl Fn(&PathState) -> Option<(Duration, f64)>,
    ) -> Option<(usize, Instant)> {
        let mut best: Option<(usize, Instant)> = None;
        for (i, p) in paths.iter().enumerate().filter(|(_, p)| p.usable) {
            let Some((delay, rate)) = params(p) else {
                continue;
            };
            let d = queues.delivery_time(p, now, delay, len, rate);
            if best.is_none_or(|(_, bd)| d < bd) {
                best = Some((i, d));
            }
        }
        best
    }
}

impl Scheduler for Edpf {
    fn name(&self) -> &'static str {
        "EDPF"
    }

    fn select(
        &mut self,
        now: Instant,
        pkt: &PacketInfo,
        paths: &[PathState],
        _queues: &SendQueues,
    ) -> Option<Decision> {
        let known = |p: &PathState| {
            let rate = super::known_or_estimated_rate(p)?;
            let delay = p.params.delay.unwrap_or_else(|| p.rtt.srtt() / 2);
            Some((delay, rate))
        };
        match Self::earliest(&self.queues, now, pkt.len, paths, known) {
            Some((i, d)) => {
                self.queues.commit(&paths[i], d);
                Some(Decision::single(i))
            }
            // Nothing known about any path: first usable one.
            None => paths.iter().position(|p| p.usable).map(Decision::single),
        }
    }

    fn paths_changed(&mut self, _paths: &[PathState]) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::test_util::known_paths;
    use crate::time::tx_time;

    /// Simulates the bottlenecks exactly as eq. (1) models them and checks
    /// arrival order: with equal sizes EDPF never reorders.
    #[test]
    fn never_reorders_equal_sized_packets() {
        let paths = known_paths(&[(50e3, 50), (100e3, 50), (200e3, 1000)]);
        let mut edpf = Edpf::default();
        let mut link_free = [Instant::ZERO; 3];
        let mut last_arrival = Instant::ZERO;
        let mut used = [0u32; 3];
        // Arrivals at varying spacings, sometimes bursts.
        let mut now = Instant::ZERO;
        for k in 0..2000u64 {
            now += Duration::from_micros(if k % 7 == 0 {
                0
            } else {
                20_000 + (k * 7919 % 50_000)
            });
            let pkt = PacketInfo {
                len: 1500,
                retransmit: false,
                stream: false,
            };
            let i = edpf
                .select(now, &pkt, &paths, &SendQueues::UNPACED)
                .unwrap()
                .index;
            used[i] += 1;
            let delay = paths[i].params.delay.unwrap();
            let start = (now + delay).max(link_free[i]);
            let arrive = start + tx_time(1500, paths[i].params.rate_bps.unwrap());
            link_free[i] = arrive;
            assert!(arrive >= last_arrival, "packet {k} overtook an earlier one");
            last_arrival = arrive;
        }
        assert!(used.iter().all(|&u| u > 0), "all paths used: {used:?}");
    }

    #[test]
    fn prefers_the_path_that_delivers_first() {
        let paths = known_paths(&[(1e6, 100), (1e6, 10)]);
        let mut edpf = Edpf::default();
        let pkt = PacketInfo {
            len: 1000,
            retransmit: false,
            stream: false,
        };
        assert_eq!(
            edpf.select(Instant::ZERO, &pkt, &paths, &SendQueues::UNPACED)
                .unwrap()
                .index,
            1
        );
    }

    #[test]
    fn delivery_time_is_eq_1() {
        let paths = known_paths(&[(8e3, 0)]);
        let mut q = EdpfQueues::default();
        let now = Instant::from_millis(10);
        // 1000 bytes at 8 kbit/s = 1 s, link free immediately.
        let d = q.delivery_time(&paths[0], now, Duration::from_millis(50), 1000, 8e3);
        assert_eq!(d, Instant::from_millis(1060));
        q.commit(&paths[0], d);
        // Next one queues behind: starts at A_l.
        let d2 = q.delivery_time(&paths[0], now, Duration::from_millis(50), 1000, 8e3);
        assert_eq!(d2, Instant::from_millis(2060));
    }
}
