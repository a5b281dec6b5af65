//! Per-path loss: totals, an EWMA of the loss rate over packet outcomes,
//! and the ratio over a window of recent outcomes.
//!
//! Each packet outcome `x` (1 = lost, 0 = delivered) applies
//! `rate <- (1 - g) * rate + g * x`. A batch of `n` equal outcomes is
//! applied in closed form: `rate <- x + (rate - x) * (1 - g)^n`.
//!
//! The EWMA (gain 1/64 by default) answers "is this path losing now"; at
//! a loss rate of 0.5 % it swings between 0 and 3 % with every loss. The
//! window ([`LossEstimator::recent_ratio`]) answers "does this path lose
//! packets at all": one loss in the first few hundred packets puts it
//! above a tenth of a percent at once, and over tens of thousands of
//! packets it settles on the path's rate.
//!
//! A second window counts at most [`RUN_CAP`] losses of each run (losses
//! with no delivery reported between them): an outage is one event
//! there, not a rate.

/// Loss totals and smoothed loss rate of one path.
#[derive(Clone, Debug)]
pub struct LossEstimator {
    /// EWMA gain per outcome, in [0, 1].
    gain: f64,
    /// Smoothed loss rate, in [0, 1]; starts at 0.
    rate: f64,
    delivered: u64,
    lost: u64,
    /// Every outcome of the recent past.
    recent: Window,
    /// The same, with each run of losses counted at most [`RUN_CAP`].
    recent_runs: Window,
    /// Losses since the last delivery reported.
    run: u64,
}

/// Outcomes at which the window's counts are halved: the window covers
/// the last 32768-65536 outcomes (seconds of a busy path, minutes of one
/// that carries only probes), so a loss long ago does not mark a path
/// for the tunnel's whole life.
pub const RECENT_WINDOW: u64 = 1 << 16;

/// Losses of one run (no delivery reported between them: a path's
/// reports come in batches, so losses a few packets apart in one batch
/// make one run too) that
/// [`LossEstimator::run_capped_lower_bound`] counts.
///
/// Why: a path that goes dark loses every packet in flight and every
/// packet sent until it is found down, hundreds on a fast or far path.
/// Counted one by one they put its window at several percent for
/// minutes, and the thin rule (`PetConfig::thin_share`) took the path
/// for one that loses packets at random: change set 7/39 of
/// `lab/sweep-changes.sh 40 7` (4.67 Mbit/s 15 ms away beside 42.5
/// Mbit/s 116 ms away, the near path dark for 0.7 s at 9.5 s) lost 250
/// packets there, and the clean path carried nothing for the rest of the
/// run: 38.72 Mbit/s against 40.99 for the far path alone (41.05 with
/// the cap). What that rule weighs is the holds in the resequencer, one
/// per run whatever its length. Three keeps the bursts of a path with
/// bursty loss (two or three packets, set 7/29 of
/// `lab/sweep-random.sh 40 7`) counted whole.
///
/// The near rule and the ramp read the whole window
/// ([`LossEstimator::recent_ratio`]): the late packets of a path whose
/// delay stepped up are declared lost in a run too, and read as a lossy
/// path they keep nearer paths from counting as far as it. Capped there
/// as well, change sets 1/24, 3/28 and 1/32 lost 3.64, 2.67 and 1.48
/// Mbit/s.
pub const RUN_CAP: u64 = 3;

/// Lost and all outcomes over the recent past: both halved whenever the
/// outcomes reach [`RECENT_WINDOW`].
#[derive(Clone, Debug, Default)]
struct Window {
    lost: u64,
    total: u64,
}

impl Window {
    fn count(&mut self, n: u64, lost: u64) {
        self.lost = self.lost.saturating_add(lost);
        self.total = self.total.saturating_add(n);
        while self.total >= RECENT_WINDOW {
            self.lost /= 2;
            self.total /= 2;
        }
    }

    fn ratio(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        self.lost as f64 / self.total as f64
    }

    /// The Wilson score interval's lower bound, `z` standard deviations
    /// down; 0 before any outcome.
    fn lower_bound(&self, z: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let n = self.total as f64;
        let p = self.ratio();
        let z2 = z * z;
        let centre = p + z2 / (2.0 * n);
        let spread = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
        ((centre - spread) / (1.0 + z2 / n)).max(0.0)
    }
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
            recent: Window::default(),
            recent_runs: Window::default(),
            run: 0,
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
        if packets > 0 {
            self.run = 0;
        }
        self.recent.count(packets, 0);
        self.recent_runs.count(packets, 0);
        self.apply(packets, 0.0);
    }

    /// `packets` more packets were lost.
    pub fn on_lost(&mut self, packets: u64) {
        self.lost = self.lost.saturating_add(packets);
        let capped = packets.min(RUN_CAP.saturating_sub(self.run));
        self.run = self.run.saturating_add(packets);
        self.recent.count(packets, packets);
        self.recent_runs.count(capped, capped);
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

    /// Lost packets over all outcomes in the recent window (module doc);
    /// 0 before any outcome.
    pub fn recent_ratio(&self) -> f64 {
        self.recent.ratio()
    }

    /// The Wilson score interval's lower bound, `z` standard deviations
    /// down, on the loss rate over the recent window with each run of
    /// losses counted at most [`RUN_CAP`]: a rate the window's outcomes
    /// show with some confidence (one loss in a few hundred packets does
    /// not show 0.5 %), where [`LossEstimator::recent_ratio`] is only the
    /// likeliest one, and how often the path loses packets rather than how
    /// many it lost going dark. 0 before any outcome.
    pub fn run_capped_lower_bound(&self, z: f64) -> f64 {
        self.recent_runs.lower_bound(z)
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

    /// The window marks a path at its first loss and forgets losses that
    /// are a window's worth of outcomes old; the EWMA has forgotten a lone
    /// loss within a few hundred packets.
    #[test]
    fn the_recent_ratio_marks_a_path_at_its_first_loss_and_forgets_old_ones() {
        let mut l = LossEstimator::new(1.0 / 64.0);
        assert_eq!(l.recent_ratio(), 0.0);
        l.on_delivered(299);
        l.on_lost(1);
        assert!((l.recent_ratio() - 1.0 / 300.0).abs() < 1e-12);
        l.on_delivered(700);
        assert!(l.rate() < 1e-5, "the EWMA still holds the loss");
        assert!(l.recent_ratio() > 0.0009, "{}", l.recent_ratio());
        // Steady 0.5 %: the window settles on it.
        for _ in 0..2000 {
            l.on_delivered(199);
            l.on_lost(1);
        }
        assert!(
            (l.recent_ratio() - 0.005).abs() < 0.0005,
            "{}",
            l.recent_ratio()
        );
        // Two windows of clean outcomes: the losses are gone.
        for _ in 0..4 {
            l.on_delivered(RECENT_WINDOW / 2);
        }
        assert!(l.recent_ratio() < 0.0005, "{}", l.recent_ratio());
        l.on_lost(u64::MAX);
        assert!(l.recent_ratio() <= 1.0);
    }

    /// The Wilson lower bound: under the ratio, closer to it with more
    /// outcomes, 0 with none or no loss, within [0, 1] at the extremes.
    /// Values checked against the closed form: one loss in 100 outcomes
    /// 0.22 %, two in 157 0.42 %, four in 200 0.90 % at z = 1.645.
    #[test]
    fn the_lower_bound_needs_evidence() {
        let z = 1.645;
        let mut l = LossEstimator::new(1.0 / 64.0);
        assert_eq!(l.run_capped_lower_bound(z), 0.0);
        l.on_delivered(99);
        assert_eq!(l.run_capped_lower_bound(z), 0.0);
        l.on_lost(1);
        let one = l.run_capped_lower_bound(z);
        assert!((one - 0.0022).abs() < 0.0001, "{one}");
        assert!(one < l.recent_ratio());
        let mut two = LossEstimator::new(1.0 / 64.0);
        two.on_delivered(155);
        two.on_lost(2);
        let b = two.run_capped_lower_bound(z);
        assert!((b - 0.0042).abs() < 0.0001, "{b}");
        let mut four = LossEstimator::new(1.0 / 64.0);
        for _ in 0..4 {
            four.on_delivered(49);
            four.on_lost(1);
        }
        let b = four.run_capped_lower_bound(z);
        assert!((b - 0.0090).abs() < 0.0001, "{b}");
        // The same ratio over ten times the outcomes: a tighter bound.
        let mut many = LossEstimator::new(1.0 / 64.0);
        for _ in 0..40 {
            many.on_delivered(49);
            many.on_lost(1);
        }
        assert!(many.run_capped_lower_bound(z) > b);
        let mut all = LossEstimator::new(1.0 / 64.0);
        all.on_lost(u64::MAX);
        let b = all.run_capped_lower_bound(z);
        assert!((0.0..=1.0).contains(&b), "{b}");
    }

    /// A run of losses counts at most RUN_CAP in the capped bound, in one
    /// batch or one by one, and the next delivery starts a new run; the
    /// totals, the EWMA and the whole window count every loss.
    #[test]
    fn an_outage_counts_as_one_run_in_the_capped_bound() {
        let z = 1.645;
        let mut dark = LossEstimator::new(1.0 / 64.0);
        dark.on_delivered(3000);
        for _ in 0..250 {
            dark.on_lost(1);
        }
        let mut three = LossEstimator::new(1.0 / 64.0);
        three.on_delivered(3000);
        three.on_lost(3);
        assert_eq!(
            dark.run_capped_lower_bound(z),
            three.run_capped_lower_bound(z)
        );
        assert!(dark.run_capped_lower_bound(z) < 0.0005);
        assert_eq!(dark.lost(), 250);
        assert!(dark.rate() > 0.9 && dark.recent_ratio() > 0.07);
        let mut batch = LossEstimator::new(1.0 / 64.0);
        batch.on_delivered(3000);
        batch.on_lost(100);
        // A report that delivers nothing does not end the run.
        batch.on_delivered(0);
        batch.on_lost(150);
        assert_eq!(
            batch.run_capped_lower_bound(z),
            dark.run_capped_lower_bound(z)
        );
        // A huge batch is one run too.
        let mut huge = LossEstimator::new(1.0 / 64.0);
        huge.on_delivered(3000);
        huge.on_lost(u64::MAX);
        assert_eq!(
            huge.run_capped_lower_bound(z),
            dark.run_capped_lower_bound(z)
        );
        // Runs apart: each counts again.
        for _ in 0..20 {
            dark.on_delivered(1);
            dark.on_lost(2);
        }
        assert!(dark.run_capped_lower_bound(z) > 0.005);
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
