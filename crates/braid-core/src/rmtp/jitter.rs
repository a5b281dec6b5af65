//! The receiver's view of one channel: long-run jitter (§3.2) and
//! packet-pair dispersion (§3.1).
//!
//! **Long-run jitter.** For consecutive frames of a channel,
//! `jitter = interarrival − period` and `long_run_jitter += jitter`. A late
//! frame makes the next look early, so the sum hovers around zero while
//! the channel's queue is steady, and grows steadily when a queue builds:
//! that trend is R-MTP's congestion signal, and a loss that comes without
//! it is taken for a transmission (wireless) loss. The paper's period is
//! the channel's send interval `1/rate`; braid's frames carry the actual
//! time since the channel's previous frame left (`gap_us`), which equals
//! the period while the channel is paced without pause and keeps the sum
//! honest across idle spells, pairs and flow-control stops. Because the
//! sender computes `gap_us` from its clock rounded to whole microseconds,
//! the gaps telescope: the sum is the change in one-way delay since the
//! channel's first frame, within a microsecond, however long the run.
//! Inter-arrivals are not computed across a lost (or reordered) frame.
//!
//! **Packet pair.** The receiver times the second frame of a pair against
//! the first (they must be consecutive on the channel): that dispersion is
//! the bottleneck's service time of one frame, τ_pp (Keshav).

use crate::rmtp::wire::DataHeader;
use crate::time::Instant;

/// One channel, as its receiver sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitterTracker {
    /// Channel sequence number and arrival time of the latest frame.
    last: Option<(u32, Instant)>,
    /// Σ jitter, nanoseconds.
    long_run_ns: i64,
    /// The first frame of a pair, waiting for its second.
    pair1: Option<(u32, Instant)>,
    /// Inter-arrivals summed (frames counted in `samples`).
    pub samples: u64,
}

impl JitterTracker {
    /// Records a frame arriving at `now`; returns the packet-pair
    /// dispersion when it completes a pair.
    pub fn on_frame(&mut self, now: Instant, h: &DataHeader) -> Option<crate::time::Duration> {
        if let Some((cs, at)) = self.last {
            if h.chan_seq == cs.wrapping_add(1) {
                let inter = now.saturating_since(at).as_nanos() as i64;
                let gap = i64::from(h.gap_us) * 1000;
                self.long_run_ns = self.long_run_ns.saturating_add(inter - gap);
                self.samples += 1;
            }
        }
        // A frame older than the latest (reordered) leaves `last` alone.
        match self.last {
            Some((cs, _)) if h.chan_seq.wrapping_sub(cs) as i32 <= 0 => {}
            _ => self.last = Some((h.chan_seq, now)),
        }
        let mut pair = None;
        if h.pair2 {
            if let Some((cs, at)) = self.pair1.take() {
                if h.chan_seq == cs.wrapping_add(1) {
                    pair = Some(now.saturating_since(at));
                }
            }
        }
        if h.pair1 {
            self.pair1 = Some((h.chan_seq, now));
        }
        pair
    }

    /// Σ jitter in microseconds, saturated to `i32`.
    pub fn long_run_us(&self) -> i32 {
        (self.long_run_ns / 1000).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(chan_seq: u32, gap_us: u32) -> DataHeader {
        DataHeader {
            chan_seq,
            gap_us,
            window_words: 1,
            ..DataHeader::default()
        }
    }

    #[test]
    fn steady_channel_hovers_at_zero_and_a_queue_makes_it_grow() {
        let mut j = JitterTracker::default();
        // Sent every 10 ms, arriving with ±2 ms of noise around a fixed
        // delay: the sum stays within the noise.
        let noise = [0i64, 2, -1, 1, -2, 0, 2, -2, 1, 0];
        for (i, n) in noise.iter().enumerate() {
            let at = Instant::from_micros((i as u64) * 10_000 + 50_000 + (n * 1000 + 2000) as u64);
            j.on_frame(at, &h(i as u32, if i == 0 { 0 } else { 10_000 }));
            assert!(j.long_run_us().abs() <= 4000, "{}", j.long_run_us());
        }
        // A queue builds: each frame waits 1 ms longer than the one before.
        let mut t = Instant::from_micros(9 * 10_000 + 52_000);
        for i in 10..30u32 {
            t += crate::time::Duration::from_micros(11_000);
            j.on_frame(t, &h(i, 10_000));
        }
        assert!(j.long_run_us() >= 19_000, "{}", j.long_run_us());
    }

    #[test]
    fn no_interarrival_across_a_lost_frame_and_pairs_are_timed() {
        let mut j = JitterTracker::default();
        j.on_frame(Instant::from_millis(10), &h(0, 0));
        // Frame 1 lost; frame 2 arrives 500 ms later: not counted.
        j.on_frame(Instant::from_millis(510), &h(2, 10_000));
        assert_eq!(j.long_run_us(), 0);
        assert_eq!(j.samples, 0);
        let mut p1 = h(3, 10_000);
        p1.pair1 = true;
        let mut p2 = h(4, 0);
        p2.pair2 = true;
        assert_eq!(j.on_frame(Instant::from_millis(520), &p1), None);
        let d = j.on_frame(Instant::from_millis(527), &p2);
        assert_eq!(d, Some(crate::time::Duration::from_millis(7)));
        // A second frame of a pair whose first was lost times nothing.
        let mut q2 = h(9, 0);
        q2.pair2 = true;
        assert_eq!(j.on_frame(Instant::from_millis(600), &q2), None);
    }
}
