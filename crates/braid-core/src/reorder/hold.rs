//! How long the resequencer holds a gap: measured, not fixed (issue 13
//! point 1; replaces PET/BMP's fixed 0.5 s timer where enabled).
//!
//! A gap is waited for because the packet is still on a farther path (the
//! paths' one-way-delay spread) or because it was lost and its repair is
//! on the way (detection, a NACK's trip back and the copy's trip forward).
//! Both show up in one measurement: the time from when a gap is first
//! seen (the arrival of the earliest packet buffered above it) to when it
//! fills. Packets that come after their gap was given up ("late") are
//! measured too, from the same first sighting, so a hold that was too
//! short corrects itself at the next such arrival.
//!
//! The hold is the largest such wait over the last one to two windows
//! (10 s each, two buckets, constant memory), times 1.25 plus 10 ms, within
//! [`ReorderConfig::min_hold`, `max_hold`]. The largest, not an average:
//! one gap in a hundred that needs a second repair round must still be
//! covered, or it reaches the inner TCP as a loss. Before the first sample
//! the hold is `loss_timeout` (the paper's 0.5 s), within the same bounds.
//!
//! [`ReorderConfig::min_hold`, `max_hold`]: super::ReorderConfig::min_hold

use crate::time::{Duration, Instant};

/// Length of one bucket of the windowed maximum.
const WINDOW: Duration = Duration::from_secs(10);
/// Headroom over the largest wait measured.
const FACTOR: f64 = 1.25;
const MARGIN: Duration = Duration::from_millis(10);

/// Windowed maximum of gap-fill waits.
#[derive(Copy, Clone, Debug, Default)]
pub struct HoldEstimator {
    /// Start of the current bucket and its largest wait.
    cur_start: Option<Instant>,
    cur_max: Duration,
    /// Largest wait of the previous bucket.
    prev_max: Duration,
    samples: u64,
}

impl HoldEstimator {
    /// A gap first seen `wait` before `now` filled (or its packet came late).
    pub fn on_sample(&mut self, now: Instant, wait: Duration) {
        match self.cur_start {
            Some(t) if now.saturating_since(t) < WINDOW => {}
            Some(t) => {
                // A whole idle window drops the old bucket too.
                self.prev_max = if now.saturating_since(t) < WINDOW * 2 {
                    self.cur_max
                } else {
                    Duration::ZERO
                };
                self.cur_max = Duration::ZERO;
                self.cur_start = Some(now);
            }
            None => self.cur_start = Some(now),
        }
        self.cur_max = self.cur_max.max(wait);
        self.samples += 1;
    }

    /// The hold for a gap: from the measured waits within `[min, max]`,
    /// `initial` before any.
    pub fn hold(&self, initial: Duration, min: Duration, max: Duration) -> Duration {
        let max = max.max(min);
        if self.samples == 0 {
            return initial.clamp(min, max);
        }
        let m = self.cur_max.max(self.prev_max);
        (m.mul_f64(FACTOR) + MARGIN).clamp(min, max)
    }

    /// Samples taken.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn follows_the_largest_recent_wait() {
        let (min, max) = (ms(20), ms(2000));
        let mut h = HoldEstimator::default();
        assert_eq!(h.hold(ms(500), min, max), ms(500));
        let t = Instant::from_millis(1000);
        h.on_sample(t, ms(40));
        h.on_sample(t, ms(80));
        h.on_sample(t, ms(60));
        assert_eq!(h.hold(ms(500), min, max), ms(110));
        // Still remembered in the next window, forgotten after two.
        h.on_sample(t + ms(10_500), ms(10));
        assert_eq!(h.hold(ms(500), min, max), ms(110));
        h.on_sample(t + ms(21_000), ms(10));
        assert_eq!(
            h.hold(ms(500), min, max),
            ms(22) + Duration::from_micros(500)
        );
        // Bounded.
        h.on_sample(t + ms(21_000), ms(10_000));
        assert_eq!(h.hold(ms(500), min, max), max);
        h.on_sample(t + ms(60_000), ms(0));
        assert_eq!(h.hold(ms(500), min, max), min);
    }

    proptest! {
        #[test]
        fn always_within_bounds(
            waits in proptest::collection::vec((0u64..5000, 0u64..20_000), 0..100),
            min in 0u64..500, span in 0u64..3000,
        ) {
            let (min, max) = (ms(min), ms(min + span));
            let mut h = HoldEstimator::default();
            let mut now = Instant::ZERO;
            for (w, dt) in waits {
                now += ms(dt);
                h.on_sample(now, ms(w));
                let v = h.hold(ms(500), min, max);
                prop_assert!(v >= min && v <= max);
            }
        }
    }
}
