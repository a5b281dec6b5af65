//! Per-path loss detection at the receiver (PRISM §5.2.3).
//!
//! Packets on one path arrive in the order they were sent. Every data
//! header names its predecessor on the same path (`prev_delta`), so when a
//! packet arrives whose predecessor is not the last packet that arrived on
//! that path, the packets in between were lost: the run after the last
//! arrival up to the named predecessor. That is known once `threshold`
//! later packets have arrived on the path (PRISM: 1, against TCP's three
//! duplicate ACKs; "any threshold can be set"). A larger threshold
//! tolerates paths that reorder a little, and a suspect that arrives
//! before the threshold is reached is not reported.
//!
//! Tail losses (nothing later arrives on the path) cannot be seen here;
//! the sender's per-path timeout finds them.
//!
//! Repair copies carry no link (`prev_delta` 0, flag `REPAIR`) and are left
//! out of the chains.

use crate::path::MAX_PATHS;

/// Most suspected runs remembered per path while waiting for the threshold.
const MAX_SUSPECTS: usize = 8;

/// A run of lost packets on one path: after the packet numbered `after`
/// (`None`: from the path's first) up to and including `upto`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LostRun {
    pub after: Option<u64>,
    pub upto: u64,
}

#[derive(Copy, Clone, Debug)]
struct Suspect {
    run: LostRun,
    /// Later packets seen on the path since.
    seen: u32,
}

#[derive(Clone, Debug, Default)]
struct PathChain {
    /// Highest number that arrived on the path (not counting repairs).
    last: Option<u64>,
    suspects: Vec<Suspect>,
    /// Smoothed loss events per packet.
    rate: f64,
    received: u64,
    lost_runs: u64,
}

/// Per-path chains of previous-on-path links.
#[derive(Clone, Debug)]
pub struct PathLossDetector {
    threshold: u32,
    /// EWMA gain per packet of the loss-event rate.
    gain: f64,
    paths: Vec<PathChain>,
}

impl PathLossDetector {
    /// `threshold`: later packets on the path before a gap counts (at least 1).
    pub fn new(threshold: u32) -> Self {
        PathLossDetector {
            threshold: threshold.max(1),
            gain: 1.0 / 64.0,
            paths: vec![PathChain::default(); MAX_PATHS],
        }
    }

    /// A data packet `seq` arrived on path slot `path`; `prev` is its
    /// predecessor on the path if the header names one. Returns a run of
    /// lost packets when one reaches the threshold.
    pub fn on_data(&mut self, path: usize, seq: u64, prev: Option<u64>) -> Option<LostRun> {
        let threshold = self.threshold;
        let gain = self.gain;
        let c = self.paths.get_mut(path)?;
        c.received += 1;
        c.rate *= 1.0 - gain;
        // An arrival settles a suspect that named it (the path reordered).
        c.suspects
            .retain(|s| !(s.run.upto == seq || (s.run.after < Some(seq) && seq < s.run.upto)));
        for s in &mut c.suspects {
            s.seen += 1;
        }
        if let Some(prev) = prev {
            let gap = match c.last {
                Some(l) => l < prev,
                None => true,
            };
            if gap && prev < seq {
                if c.suspects.len() >= MAX_SUSPECTS {
                    c.suspects.remove(0);
                }
                c.suspects.push(Suspect {
                    run: LostRun {
                        after: c.last,
                        upto: prev,
                    },
                    seen: 1,
                });
            }
        }
        if !matches!(c.last, Some(l) if seq <= l) {
            c.last = Some(seq);
        }
        let i = c.suspects.iter().position(|s| s.seen >= threshold)?;
        let s = c.suspects.remove(i);
        c.lost_runs += 1;
        c.rate += gain * (1.0 - c.rate);
        Some(s.run)
    }

    /// The smoothed rate of loss events per packet on path slot `path`.
    pub fn loss_rate(&self, path: usize) -> f64 {
        self.paths.get(path).map_or(0.0, |c| c.rate)
    }

    /// Packets received and loss runs detected on path slot `path`.
    pub fn counts(&self, path: usize) -> (u64, u64) {
        self.paths
            .get(path)
            .map_or((0, 0), |c| (c.received, c.lost_runs))
    }

    /// Whether any packet arrived on path slot `path`.
    pub fn seen(&self, path: usize) -> bool {
        self.paths.get(path).is_some_and(|c| c.received > 0)
    }

    /// Forgets a path.
    pub fn reset_path(&mut self, path: usize) {
        if let Some(c) = self.paths.get_mut(path) {
            *c = PathChain::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Sends numbers round-robin over `paths` paths, dropping those in
    /// `lost`; returns what the detector reports.
    fn run(paths: usize, n: u64, lost: &[u64], threshold: u32) -> Vec<(usize, LostRun)> {
        let mut d = PathLossDetector::new(threshold);
        let mut prev = vec![None; paths];
        let mut out = vec![];
        for seq in 0..n {
            let p = seq as usize % paths;
            let link = prev[p];
            prev[p] = Some(seq);
            if lost.contains(&seq) {
                continue;
            }
            if let Some(r) = d.on_data(p, seq, link) {
                out.push((p, r));
            }
        }
        out
    }

    #[test]
    fn a_gap_is_reported_at_the_next_packet_on_the_path() {
        // Path 0 carries 0, 2, 4, 6, ...; 4 is lost; 6 names 4.
        let r = run(2, 20, &[4], 1);
        assert_eq!(
            r,
            vec![(
                0,
                LostRun {
                    after: Some(2),
                    upto: 4
                }
            )]
        );
    }

    #[test]
    fn a_burst_is_one_run_from_the_last_arrival() {
        // 4, 6 and 8 lost on path 0: 10 names 8; the run starts after 2.
        let r = run(2, 20, &[4, 6, 8], 1);
        assert_eq!(
            r,
            vec![(
                0,
                LostRun {
                    after: Some(2),
                    upto: 8
                }
            )]
        );
    }

    #[test]
    fn threshold_waits_for_more_packets() {
        let mut d = PathLossDetector::new(3);
        assert_eq!(d.on_data(0, 0, None), None);
        assert_eq!(d.on_data(0, 2, Some(1)), None, "1 missing, 1 later");
        assert_eq!(d.on_data(0, 3, Some(2)), None, "2 later");
        assert_eq!(
            d.on_data(0, 4, Some(3)),
            Some(LostRun {
                after: Some(0),
                upto: 1
            })
        );
        // A suspect that arrives before the threshold is not reported.
        assert_eq!(d.on_data(0, 6, Some(5)), None);
        assert_eq!(d.on_data(0, 5, None), None, "5 arrived late");
        assert_eq!(d.on_data(0, 7, Some(6)), None);
        assert_eq!(d.on_data(0, 8, Some(7)), None);
    }

    #[test]
    fn loss_rate_follows_loss_events() {
        let lost: Vec<u64> = (0..20_000).filter(|s| s % 100 == 50).collect();
        let mut d = PathLossDetector::new(1);
        let mut prev = None;
        for seq in 0..20_000u64 {
            let link = prev;
            prev = Some(seq);
            if !lost.contains(&seq) {
                d.on_data(0, seq, link);
            }
        }
        assert!((d.loss_rate(0) - 0.01).abs() < 0.01, "{}", d.loss_rate(0));
        assert_eq!(d.counts(0).1, 200);
    }

    proptest! {
        /// With threshold 1, every lost packet that has a later arrival on
        /// its path lies in exactly one reported run, and no reported run
        /// holds a packet that arrived.
        #[test]
        fn reports_exactly_the_lost(
            paths in 1usize..4,
            lost in proptest::collection::btree_set(0u64..300, 0..60),
        ) {
            let lost: Vec<u64> = lost.into_iter().collect();
            let n = 300u64;
            let runs = run(paths, n, &lost, 1);
            for &(p, r) in &runs {
                for seq in (r.after.map_or(0, |a| a + 1)..=r.upto).filter(|s| *s as usize % paths == p) {
                    prop_assert!(lost.contains(&seq), "{seq} reported but arrived");
                }
            }
            for &seq in &lost {
                let p = seq as usize % paths;
                let later = (seq + 1..n).any(|s| s as usize % paths == p && !lost.contains(&s));
                let covered = runs.iter().filter(|(q, r)| *q == p && !matches!(r.after, Some(a) if a >= seq) && seq <= r.upto).count();
                if later {
                    prop_assert_eq!(covered, 1, "{} not reported once", seq);
                } else {
                    prop_assert_eq!(covered, 0);
                }
            }
        }
    }
}
