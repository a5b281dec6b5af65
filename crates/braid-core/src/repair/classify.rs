//! Congestion or random loss, per path (R-MTP §3.2).
//!
//! R-MTP keeps a per-channel long-run jitter, the running sum of
//! (inter-arrival - send period): it hovers around zero while the path's
//! queue is stable and grows steadily while a queue builds. A loss that
//! comes with that growth is congestion; a loss without it is a
//! transmission (wireless) loss. The sender here sees the same thing
//! directly in its one-way-delay samples: the queueing delay (sample minus
//! the path's base delay, `OwdEstimator::queueing_delay`) rises exactly
//! when the long-run jitter grows. The classifier compares a fast and a
//! slow average of it (a trend), and also takes a standing queue of more
//! than half the path's minimum RTT as congestion (a full drop-tail buffer
//! no longer rises, but its drops are still congestion).
//!
//! The averages describe the queue as it was when the last sample came
//! in. A queue that has not been seen for a while is no evidence: after
//! an outage (or any time the path delivered nothing), the queue the
//! samples measured has drained or been dropped, and a loss then is no
//! congestion signal. [`LossClassifier::expire`] forgets averages older
//! than the lost packet by more than the path's loss timeout; without it a
//! datagram corrupted just after a 2.5 s outage was taken for congestion
//! by the standing queue measured before the outage, left unrepaired, and
//! the inner TCP, its RTO backed off by the outage, waited 6.4 s more.
//!
//! The paper's classifier and thresholds are in the part of its text that
//! is missing (SPECS.md §4.1); the thresholds below are this
//! implementation's.

use crate::time::{Duration, Instant};

/// Gain of the fast average of queueing delay samples.
const FAST_GAIN: f64 = 1.0 / 4.0;
/// Gain of the slow average.
const SLOW_GAIN: f64 = 1.0 / 32.0;
/// A rise of the fast over the slow average by more than this fraction of
/// the minimum RTT (and at least [`MIN_RISE`]) is a rising trend.
const RISE_FRACTION: f64 = 0.05;
const MIN_RISE: Duration = Duration::from_millis(2);
/// A standing queue of more than this fraction of the minimum RTT (and at
/// least [`MIN_STANDING`]) is congestion even without a rise.
const STANDING_FRACTION: f64 = 0.5;
const MIN_STANDING: Duration = Duration::from_millis(10);

/// What a loss was taken for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LossKind {
    /// No delay trend: a random (transmission) loss; the path's rate stays.
    Random,
    /// A rising or standing queue: congestion; the path's rate is lowered.
    Congestion,
}

/// The delay trend of one path.
#[derive(Copy, Clone, Debug, Default)]
pub struct LossClassifier {
    /// Fast and slow averages of the queueing delay, seconds.
    fast: Option<f64>,
    slow: Option<f64>,
    /// When the last sample came in.
    last_sample: Option<Instant>,
    /// When the path's rate was last lowered for a congestion loss.
    last_cut: Option<Instant>,
}

impl LossClassifier {
    /// One queueing-delay sample (one-way delay minus the path's base),
    /// taken at `now`.
    pub fn on_queueing_sample(&mut self, now: Instant, q: Duration) {
        self.last_sample = Some(now);
        let v = q.as_secs_f64();
        self.fast = Some(self.fast.map_or(v, |f| f + FAST_GAIN * (v - f)));
        self.slow = Some(self.slow.map_or(v, |s| s + SLOW_GAIN * (v - s)));
    }

    /// What a loss now would be taken for, on a path whose minimum RTT is
    /// `min_rtt`.
    pub fn classify(&self, min_rtt: Duration) -> LossKind {
        let (Some(fast), Some(slow)) = (self.fast, self.slow) else {
            return LossKind::Random;
        };
        let rise = (min_rtt.as_secs_f64() * RISE_FRACTION).max(MIN_RISE.as_secs_f64());
        if fast - slow > rise || self.standing(min_rtt) {
            LossKind::Congestion
        } else {
            LossKind::Random
        }
    }

    /// Whether the path holds a standing queue of more than half its
    /// minimum RTT (`min_rtt`): a buffer kept full, by this sender or by
    /// other flows sharing the bottleneck, rather than a queue that is
    /// only rising for a moment.
    pub fn standing(&self, min_rtt: Duration) -> bool {
        let standing = (min_rtt.as_secs_f64() * STANDING_FRACTION).max(MIN_STANDING.as_secs_f64());
        self.fast.is_some_and(|f| f > standing)
    }

    /// Forgets the averages when the last sample came in more than
    /// `horizon` before a lost packet left at `sent_at`.
    ///
    /// Why: on a path that delivers anything, feedback on the packets sent
    /// before the lost one keeps the samples fresh (a full drop-tail queue
    /// still delivers at the path's rate). A packet that left `horizon`
    /// (the path's loss timeout) after the last sample left after a span
    /// in which the path delivered nothing it was given, or was given
    /// nothing: an outage or an idle path, whose old queue has drained or
    /// been dropped. The averages say nothing about the queue it met, so
    /// its loss is taken as random (and repaired) until new samples come.
    pub fn expire(&mut self, sent_at: Instant, horizon: Duration) {
        if self
            .last_sample
            .is_some_and(|t| sent_at.saturating_since(t) > horizon)
        {
            self.fast = None;
            self.slow = None;
            self.last_sample = None;
        }
    }

    /// A loss at `now`: whether it is congestion and the path's rate should
    /// be lowered now (at most once per `min_rtt`, as TCP cuts its window
    /// once per round trip).
    pub fn on_loss(&mut self, now: Instant, min_rtt: Duration) -> bool {
        if self.classify(min_rtt) == LossKind::Random {
            return false;
        }
        if self
            .last_cut
            .is_some_and(|t| now.saturating_since(t) < min_rtt)
        {
            // Congestion, but the rate was just lowered.
            return true;
        }
        self.last_cut = Some(now);
        true
    }

    /// Whether the rate was lowered at `now` by the last `on_loss`.
    pub fn cut_at(&self, now: Instant) -> bool {
        self.last_cut == Some(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    #[test]
    fn flat_delay_means_random_loss() {
        let mut c = LossClassifier::default();
        assert_eq!(c.classify(ms(40.0)), LossKind::Random, "no samples yet");
        for i in 0..200 {
            // Jitter of a millisecond around a small queue.
            c.on_queueing_sample(Instant::ZERO, ms(if i % 2 == 0 { 0.5 } else { 1.5 }));
        }
        assert_eq!(c.classify(ms(40.0)), LossKind::Random);
        assert!(!c.on_loss(Instant::from_millis(1), ms(40.0)));
    }

    #[test]
    fn rising_delay_means_congestion() {
        let mut c = LossClassifier::default();
        for _ in 0..100 {
            c.on_queueing_sample(Instant::ZERO, ms(1.0));
        }
        // A queue builds by 0.5 ms per sample.
        for i in 0..20 {
            c.on_queueing_sample(Instant::ZERO, ms(1.0 + 0.5 * i as f64));
        }
        assert_eq!(c.classify(ms(40.0)), LossKind::Congestion);
        let t = Instant::from_millis(100);
        assert!(c.on_loss(t, ms(40.0)));
        assert!(c.cut_at(t));
        // Still congestion 10 ms later, but no second cut within the RTT.
        let t2 = Instant::from_millis(110);
        assert!(c.on_loss(t2, ms(40.0)));
        assert!(!c.cut_at(t2));
    }

    #[test]
    fn a_full_standing_queue_is_congestion() {
        let mut c = LossClassifier::default();
        for _ in 0..500 {
            c.on_queueing_sample(Instant::ZERO, ms(30.0));
        }
        assert_eq!(c.classify(ms(40.0)), LossKind::Congestion);
        assert_eq!(c.classify(ms(100.0)), LossKind::Random);
    }

    /// A standing queue measured before an outage says nothing about a
    /// packet sent after it: its loss is random once the samples are
    /// older than the horizon, and congestion again after new samples.
    #[test]
    fn a_queue_not_seen_since_before_an_outage_is_no_congestion() {
        let mut c = LossClassifier::default();
        for i in 0..100 {
            c.on_queueing_sample(Instant::from_millis(1000 + i), ms(500.0));
        }
        assert_eq!(c.classify(ms(200.0)), LossKind::Congestion);
        // A packet sent within the horizon of the last sample: kept.
        c.expire(Instant::from_millis(1500), Duration::from_secs(1));
        assert_eq!(c.classify(ms(200.0)), LossKind::Congestion);
        // Sent 6 s after the last sample (a 2.5 s outage between).
        c.expire(Instant::from_millis(7188), Duration::from_secs(1));
        assert_eq!(c.classify(ms(200.0)), LossKind::Random);
        assert!(!c.on_loss(Instant::from_millis(8160), ms(200.0)));
        // New samples of a standing queue are evidence again.
        for i in 0..100 {
            c.on_queueing_sample(Instant::from_millis(8200 + i), ms(500.0));
        }
        assert!(c.on_loss(Instant::from_millis(8400), ms(200.0)));
    }

    proptest! {
        /// Any samples within a 1 ms band never read as congestion on a
        /// path of 20 ms or more.
        #[test]
        fn bounded_jitter_is_never_congestion(samples in proptest::collection::vec(0.0f64..1.0, 1..500)) {
            let mut c = LossClassifier::default();
            for s in samples {
                c.on_queueing_sample(Instant::ZERO, ms(s));
            }
            prop_assert_eq!(c.classify(ms(20.0)), LossKind::Random);
        }
    }
}
