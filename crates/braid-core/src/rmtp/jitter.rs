//! The receiver's view of one channel: long-run jitter (§3.2) and
//! packet-pair dispersion (§3.1).
//!
//! **Long-run jitter.** For frames of a channel,
//! `jitter = interarrival − period` and `long_run_jitter += jitter`. A late
//! frame makes the next look early, so the sum hovers around zero while
//! the channel's queue is steady, and grows steadily when a queue builds:
//! that trend is R-MTP's congestion signal, and a loss that comes without
//! it is taken for a transmission (wireless) loss.
//!
//! The paper's period is the channel's send interval `1/rate`, and it
//! computes no inter-arrival across a lost frame. braid's frames carry
//! their send time instead (`sent_us`, whole microseconds of the sender's
//! clock), and the period of a step is the actual send gap between the two
//! frames, lost frames between them or not. Then the sum telescopes: it is
//! the change in one-way delay since the channel's first frame, within a
//! microsecond, however long the run, whatever is lost. Skipping steps
//! across losses, as the paper does, breaks that: a frame that waited
//! behind another (the second of a packet pair, for one) adds a positive
//! step that only its successor's negative step takes back, and when the
//! successor is lost the offset stays; at 30 % loss such offsets summed to
//! a false congestion signal within 1000 frames (measured in the Figs 4-5
//! reproduction). Idle spells, pairs and flow-control stops are exact too.
//! Only a frame older than the latest (reordered) is left out.
//!
//! **Packet pair.** The receiver times the second frame of a pair against
//! the first (they must be consecutive on the channel): that dispersion is
//! the bottleneck's service time of one frame, τ_pp (Keshav).

use crate::rmtp::wire::DataHeader;
use crate::time::Instant;

/// One channel, as its receiver sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitterTracker {
    /// Channel sequence number, arrival time and send time (µs) of the
    /// latest frame.
    last: Option<(u32, Instant, u32)>,
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
        match self.last {
            // A frame older than the latest (reordered) leaves it alone.
            Some((cs, _, _)) if h.chan_seq.wrapping_sub(cs) as i32 <= 0 => {}
            Some((_, at, sent)) => {
                let inter = now.saturating_since(at).as_nanos() as i64;
                let gap = i64::from(h.sent_us.wrapping_sub(sent)) * 1000;
                self.long_run_ns = self.long_run_ns.saturating_add(inter - gap);
                self.samples += 1;
                self.last = Some((h.chan_seq, now, h.sent_us));
            }
            None => self.last = Some((h.chan_seq, now, h.sent_us)),
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

    fn h(chan_seq: u32, sent_us: u32) -> DataHeader {
        DataHeader {
            chan_seq,
            sent_us,
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
            j.on_frame(at, &h(i as u32, i as u32 * 10_000));
            assert!(j.long_run_us().abs() <= 4000, "{}", j.long_run_us());
        }
        // A queue builds: each frame waits 1 ms longer than the one before.
        let mut t = Instant::from_micros(9 * 10_000 + 52_000);
        for i in 10..30u32 {
            t += crate::time::Duration::from_micros(11_000);
            j.on_frame(t, &h(i, i * 10_000));
        }
        assert!(j.long_run_us() >= 19_000, "{}", j.long_run_us());
    }

    #[test]
    fn a_lost_frame_after_a_queued_one_leaves_no_offset() {
        let mut j = JitterTracker::default();
        // A pair at 0 (both sent at once, 9 ms of service each, 5 ms of
        // delay), the frame after it lost, the next sent at 27 ms.
        let mut p1 = h(0, 0);
        p1.pair1 = true;
        let mut p2 = h(1, 0);
        p2.pair2 = true;
        assert_eq!(j.on_frame(Instant::from_millis(14), &p1), None);
        let d = j.on_frame(Instant::from_millis(23), &p2);
        assert_eq!(d, Some(crate::time::Duration::from_millis(9)));
        assert_eq!(j.long_run_us(), 9_000, "the second waited behind the first");
        // Frame 2 (sent at 18 ms) lost; frame 3 sent at 27 ms, no queue.
        j.on_frame(Instant::from_millis(27 + 9 + 5), &h(3, 27_000));
        assert_eq!(j.long_run_us(), 0, "the queue drained: no offset left");
        // A late, reordered frame changes nothing.
        j.on_frame(Instant::from_millis(60), &h(2, 18_000));
        assert_eq!(j.long_run_us(), 0);
        // A second frame of a pair whose first was lost times nothing.
        let mut q2 = h(9, 90_000);
        q2.pair2 = true;
        assert_eq!(j.on_frame(Instant::from_millis(104), &q2), None);
    }
}
