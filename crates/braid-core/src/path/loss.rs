//! Per-path loss: totals and an EWMA of the loss rate over packet outcomes.
//!
//! Each packet outcome `x` (1 = lost, 0 = delivered) applies
//! `rate <- (1 - g) * rate + g * x`. A batch of `n` equal outcomes is
//! applied in closed form: `rate <- x + (rate - x) * (1 - g)^n`.

/// Loss totals and smoothed loss rate of one path.
#[derive(Clone, Debug)]
pub struct LossEstimator {
    /// EWMA gain per outcome, in [0, 1].
    gain: f64,
    /// Smoothed loss rate, in [0, 1]; starts at 0.
    rate: f64,
    delivered: u64,
    lost: u64,
}

impl LossEstimator {
    /// `gain`: EWMA gain per packet outcome (e.g. 1/64).
    ///
    /// Clamped into [0, 1]; NaN is taken as 1/64.
    pub fn new(gain: f64) -> Self {
        let gain = if gain.is_nan() {
            1.0 / 64.0
        } else {
            gain.clamp(0.0, 1.0)
        };
        LossEstimator {
            gain,
            rate: 0.0,
            delivered: 0,
            lost: 0,
        }
    }

    /// Applies `n` equal outcomes (`target` 1.0 for lost, 0.0 for delivered).
    fn apply(&mut self, n: u64, target: f64) {
        if n == 0 {
            return;
        }
        let keep = (1.0 - self.gain).powf(n as f64);
        self.rate = (target + (self.rate - target) * keep).clamp(0.0, 1.0);
    }

    /// `packets` more packets were delivered.
    pub fn on_delivered(&mut self, packets: u64) {
        self.delivered = self.delivered.saturating_add(packets);
        self.apply(packets, 0.0);
    }

    /// `packets` more packets were lost.
    pub fn on_lost(&mut self, packets: u64) {
        self.lost = self.lost.saturating_add(packets);
        self.apply(packets, 1.0);
    }

    /// Smoothed loss rate in [0, 1].
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Total packets delivered.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Total packets lost.
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_zero() {
        let l = LossEstimator::new(1.0 / 64.0);
        assert_eq!(l.rate(), 0.0);
        assert_eq!(l.delivered(), 0);
        assert_eq!(l.lost(), 0);
    }

    #[test]
    fn single_outcomes_follow_the_ewma() {
        let mut l = LossEstimator::new(0.25);
        l.on_lost(1);
        assert!((l.rate() - 0.25).abs() < 1e-12);
        l.on_delivered(1);
        assert!((l.rate() - 0.1875).abs() < 1e-12);
        assert_eq!((l.delivered(), l.lost()), (1, 1));
    }

    #[test]
    fn batch_equals_repeated_single_outcomes() {
        let mut a = LossEstimator::new(1.0 / 64.0);
        let mut b = LossEstimator::new(1.0 / 64.0);
        a.on_lost(7);
        a.on_delivered(40);
        a.on_lost(3);
        for _ in 0..7 {
            b.on_lost(1);
        }
        for _ in 0..40 {
            b.on_delivered(1);
        }
        for _ in 0..3 {
            b.on_lost(1);
        }
        assert!((a.rate() - b.rate()).abs() < 1e-12);
        assert_eq!((a.delivered(), a.lost()), (b.delivered(), b.lost()));
        assert_eq!((a.delivered(), a.lost()), (40, 10));
    }

    #[test]
    fn converges_to_true_loss_rate() {
        // 1 loss in every 20 packets: 5 %.
        let mut l = LossEstimator::new(1.0 / 64.0);
        for _ in 0..2000 {
            l.on_delivered(19);
            l.on_lost(1);
        }
        assert!((l.rate() - 0.05).abs() < 0.02, "{}", l.rate());
        assert_eq!(l.lost(), 2000);
        assert_eq!(l.delivered(), 38_000);
    }

    #[test]
    fn stays_in_unit_interval_and_handles_huge_batches() {
        let mut l = LossEstimator::new(1.0 / 64.0);
        l.on_lost(u64::MAX);
        assert!((l.rate() - 1.0).abs() < 1e-12);
        l.on_lost(5);
        assert_eq!(l.lost(), u64::MAX);
        l.on_delivered(u64::MAX);
        assert!(l.rate().abs() < 1e-12);
        let mut z = LossEstimator::new(0.0);
        z.on_lost(100);
        assert_eq!(z.rate(), 0.0);
        let mut one = LossEstimator::new(2.0);
        one.on_lost(1);
        assert_eq!(one.rate(), 1.0);
    }
}
