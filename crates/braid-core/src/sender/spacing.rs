//! A path's rate as the spacing of its latest arrivals shows it: what
//! the stranded rule (`sender/stranded.rs`) drains a path's packets in
//! flight at, when it is lower than the pair samples' median.
//!
//! Why: the pacing rate is the median of the path's 31 latest pair
//! samples (`PairSamples`), so that a radio link's retransmissions do not
//! move it. After a fall of the path's rate it moves only once 16 pairs
//! at the new rate have been reported, and a thin path takes few: set
//! 1/12 of `lab/sweep-changes.sh` (3.83 Mbit/s 94 ms away falling to
//! 0.55 beside 33.86 Mbit/s) took 0.93 s. Meanwhile the 100 packets the
//! path held, 1.3 s of its new rate, kept the peer's resequencer
//! waiting, the stranded rule saw them drain at the old rate and copied
//! none, and the inner TCP timed out: 29.45 Mbit/s where the other path
//! alone carries 32.69.
//!
//! The packets the pacer sent at the old rate arrive spaced by the new
//! one, a fall shows in every pair of consecutive arrivals. A pair whose
//! arrivals are spaced more than [`STRETCH`] times their departures
//! gives a sample, the bytes that arrived on the path in the gap (the
//! second packet's and any repair's between them) over the gap; any
//! other pair says the path kept up. The rate is the median of the
//! latest [`SPACING_SAMPLES`] pairs, so at least half of them must be
//! stretched: one gap a delay step, a held radio block or a burst of
//! losses opens does not count, and a path the scheduler gives packets
//! now and then (sent spaced, arriving spaced) never looks slow.
//!
//! Both the pacer (`Sender::pacing_rate`) and the stranded rule take the
//! lower of this rate and the median: the pacer whenever there is one
//! (until arrivals that keep up outnumber the stretched ones), the
//! stranded rule once the path's packets in flight would take long to
//! drain at it (`Sender::spacing_fall`). The stranded
//! rule alone, with the pacer still at the old rate, did worse (the
//! change sweeps: six sets worse by more than 3 %, set 2/17 36.64 ->
//! 31.06 Mbit/s): it moved the packets the path held while the pacer went
//! on filling its queue. Together, set 1/12 carries 31.51 Mbit/s (29.45
//! before) and four sets are better by more than 3 %, none worse
//! (README, "A fall seen in the spacing of arrivals").

use crate::time::{Duration, Instant};

/// Consecutive arrival pairs the rate is the median of: about 0.2 s of
/// a path that fell to half a megabit per second.
pub(super) const SPACING_SAMPLES: usize = 9;

/// How much more than their departures a pair's arrivals must be spaced
/// to be a sample of a slower path: more than the jitter of a paced
/// sender's timers, and a path that keeps up spaces them as they left.
pub(super) const STRETCH: f64 = 1.25;

/// The latest arrivals of one path's originals (see the module).
#[derive(Clone, Debug, Default)]
pub(super) struct ArrivalSpacing {
    /// The latest original reported: its sequence number, when it left
    /// and when it arrived (receiver clock, ns).
    last: Option<(u64, Instant, u64)>,
    /// Bytes reported arriving on the path after `last` (the next
    /// original's own included, [`ArrivalSpacing::on_report`]): what the
    /// bottleneck carried in the gap to the next original.
    between: u64,
    /// Samples in bit/s, `f64::INFINITY` for a pair that kept up.
    samples: [f64; SPACING_SAMPLES],
    count: usize,
    /// [`ArrivalSpacing::rate`], taken at each arrival: the pacer reads
    /// it for every packet, the samples change only with a report.
    rate: Option<f64>,
}

impl ArrivalSpacing {
    /// Counts a report of `len` bytes that arrived on the path at `rx_ns`,
    /// whatever it was (an original, a repair, a late original): call it
    /// for every report from the path, before [`Self::on_arrival`].
    ///
    /// Why: a sample is the bytes the bottleneck carried over the gap
    /// between two originals' arrivals, and repairs sent on the path
    /// between them take their part of that gap. Counting the second
    /// original alone, the spacing read a path at a third of its rate:
    /// set 14/36 of `lab/sweep-changes.sh` (5.69 Mbit/s 158 ms away with
    /// a 450 kB queue, 240 ms further from 8.6 s, beside 1.01 Mbit/s), where
    /// the step's timeouts put 19 repairs on the path between its
    /// originals, it read 1.90 Mbit/s, and the stranded rule copied 100
    /// packets the path would deliver in time to the thin path, whose
    /// pacing queue then dropped 102 of the inner TCP's.
    pub(super) fn on_report(&mut self, rx_ns: u64, len: u32) {
        if self.last.is_some_and(|(_, _, r)| rx_ns > r) {
            self.between = self.between.saturating_add(u64::from(len));
        }
    }

    /// Takes the report of original `seq` on the path, `len` bytes sent
    /// at `sent_at` and arrived at `rx_ns` (already given to
    /// [`Self::on_report`]). Reports out of the path's order (a copy's, a
    /// late original's) are not given here.
    pub(super) fn on_arrival(&mut self, seq: u64, sent_at: Instant, rx_ns: u64, len: u32) {
        if let Some((q, s, r)) = self.last {
            if seq <= q || rx_ns < r {
                return;
            }
            let rx = Duration::from_nanos(rx_ns - r);
            let tx = sent_at.saturating_since(s);
            let bytes = self.between.max(u64::from(len));
            let sample = if rx.as_secs_f64() > STRETCH * tx.as_secs_f64() && !rx.is_zero() {
                bytes as f64 * 8.0 / rx.as_secs_f64()
            } else {
                f64::INFINITY
            };
            self.samples[self.count % SPACING_SAMPLES] = sample;
            self.count += 1;
            if self.count >= SPACING_SAMPLES {
                let mut v = self.samples;
                v.sort_by(|a, b| a.total_cmp(b));
                self.rate = Some(v[SPACING_SAMPLES / 2]).filter(|r| r.is_finite());
            }
        }
        self.last = Some((seq, sent_at, rx_ns));
        self.between = 0;
    }

    /// The median of the latest [`SPACING_SAMPLES`] pairs in bit/s, if at
    /// least half of them were stretched (`None` otherwise, or before
    /// there are that many).
    pub(super) fn rate(&self) -> Option<f64> {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: f64) -> Instant {
        Instant::from_nanos((ms * 1e6) as u64)
    }

    /// Packets `seqs` sent `tx_ms` apart from `t0` arriving `rx_ms` apart
    /// from `rx0` (both in ms).
    fn feed(
        s: &mut ArrivalSpacing,
        seqs: std::ops::Range<u64>,
        t0: f64,
        tx_ms: f64,
        rx0: f64,
        rx_ms: f64,
    ) {
        for (k, q) in seqs.enumerate() {
            let k = k as f64;
            let rx = ((rx0 + k * rx_ms) * 1e6) as u64;
            s.on_report(rx, 1500);
            s.on_arrival(q, at(t0 + k * tx_ms), rx, 1500);
        }
    }

    #[test]
    fn a_path_that_keeps_up_shows_no_rate() {
        let mut s = ArrivalSpacing::default();
        feed(&mut s, 0..40, 0.0, 3.0, 50.0, 3.0);
        assert_eq!(s.rate(), None);
    }

    #[test]
    fn a_fall_shows_within_the_samples() {
        let mut s = ArrivalSpacing::default();
        feed(&mut s, 0..40, 0.0, 3.0, 50.0, 3.0);
        // Sent 3 ms apart, arriving 22 ms apart: 0.55 Mbit/s.
        // The first leaves 3 ms after the last and arrives 22 ms after it.
        feed(&mut s, 40..44, 120.0, 3.0, 189.0, 22.0);
        assert_eq!(s.rate(), None, "four stretched pairs of nine");
        feed(&mut s, 44..45, 132.0, 3.0, 277.0, 22.0);
        let r = s.rate().expect("five of nine");
        assert!((r - 1500.0 * 8.0 / 0.022).abs() < 1.0, "{r}");
    }

    #[test]
    fn one_long_gap_is_not_a_fall() {
        let mut s = ArrivalSpacing::default();
        feed(&mut s, 0..20, 0.0, 3.0, 50.0, 3.0);
        // A delay step: one gap of 250 ms, then the old spacing.
        feed(&mut s, 20..40, 60.0, 3.0, 360.0, 3.0);
        assert_eq!(s.rate(), None);
    }

    #[test]
    fn packets_sent_spaced_arrive_spaced_without_a_fall() {
        let mut s = ArrivalSpacing::default();
        feed(&mut s, 0..20, 0.0, 40.0, 50.0, 40.0);
        assert_eq!(s.rate(), None);
    }

    /// Repairs sent on the path between its originals (a delay step's
    /// timeouts) share the bottleneck with them: the arrivals of the
    /// originals are spaced by both, and the rate counts both.
    #[test]
    fn repairs_between_originals_count_towards_the_rate() {
        let mut s = ArrivalSpacing::default();
        feed(&mut s, 0..20, 0.0, 3.0, 50.0, 3.0);
        // Originals sent 3 ms apart on a path of 1500 bytes per 3 ms
        // (4 Mbit/s), each followed by a repair of an older packet: the
        // originals arrive 6 ms apart, the repairs between them.
        for k in 0..12u64 {
            let rx = 110.0 + 6.0 * k as f64;
            s.on_report(((rx - 3.0) * 1e6) as u64, 1500); // the repair
            s.on_report((rx * 1e6) as u64, 1500);
            s.on_arrival(20 + k, at(60.0 + 3.0 * k as f64), (rx * 1e6) as u64, 1500);
        }
        let r = s.rate().expect("stretched: sent faster than the path");
        assert!((r - 4e6).abs() < 1e3, "{r}: the path's 4 Mbit/s, not 2");
    }

    #[test]
    fn reports_out_of_order_are_left_out() {
        let mut s = ArrivalSpacing::default();
        feed(&mut s, 10..30, 0.0, 3.0, 50.0, 3.0);
        s.on_arrival(5, at(0.0), 200_000_000, 1500);
        assert_eq!(s.count, 19);
    }
}
