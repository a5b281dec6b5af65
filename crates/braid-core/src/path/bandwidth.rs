//! Bottleneck bandwidth from packet-pair dispersion (PET/BMP Section V-A,
//! Keshav's packet pair): two packets sent back to back on one path leave
//! the bottleneck spaced by L / B, so B = L / dispersion. Samples are
//! smoothed with an EWMA whose weight on the *new* sample is 0.8 (the
//! paper's footnote 3: react fast to current conditions).
//!
//! `estimate <- w * sample + (1 - w) * estimate`, with `w = weight_new`;
//! the first sample initialises the estimate.
//!
//! A second, slow average ([`BandwidthEstimator::steady_bps`], weight
//! [`STEADY_WEIGHT`]) serves the rules that compare two paths' rates and
//! switch on the ratio (PET's near rule, `sched/pet/near.rs`): with the
//! paper's weight one odd pair moves the estimate most of the way to it.
//! In the lab (`lab/sweep-random.sh 40 7` set 22, 34.5 Mbit/s 142 ms away
//! beside 17.1 Mbit/s 10 ms away) one pair on the fast path at the start
//! of a transfer measured about 18 Mbit/s; its estimate fell from 36 to
//! 21-27 Mbit/s, the near rule's lead test (1.5 x) failed for a moment,
//! and the near path's packets that moment reached the inner TCP at the
//! near path's round trip. HyStart took that as its smallest round trip,
//! ended slow start at a window of about 30 packets, and the run measured
//! 27-34 Mbit/s instead of 38-43.

use crate::time::Duration;

/// Weight of a new sample in [`BandwidthEstimator::steady_bps`]: about the
/// last eight pairs count (a transfer sends pairs continuously, so that
/// is a few milliseconds of a busy path).
pub const STEADY_WEIGHT: f64 = 0.125;

/// Packet-pair bottleneck-bandwidth estimator (EWMA of pair samples).
#[derive(Clone, Debug)]
pub struct BandwidthEstimator {
    /// Weight of a new sample, in (0, 1].
    weight_new: f64,
    /// Smoothed estimate, bit/s.
    estimate: Option<f64>,
    /// Slow average of the same samples ([`STEADY_WEIGHT`]), bit/s.
    steady: Option<f64>,
    /// Samples used.
    samples: u64,
}

impl BandwidthEstimator {
    /// `weight_new` in (0, 1]: weight of a new sample (paper: 0.8).
    ///
    /// Values outside (0, 1] (and NaN) are clamped into it: a weight of 0
    /// would never move off the first sample, so the smallest usable
    /// positive weight is taken instead.
    pub fn new(weight_new: f64) -> Self {
        let w = if weight_new.is_nan() {
            0.8
        } else {
            weight_new.clamp(f64::MIN_POSITIVE, 1.0)
        };
        BandwidthEstimator {
            weight_new: w,
            estimate: None,
            steady: None,
            samples: 0,
        }
    }

    /// A pair's second packet had `len_bytes` and arrived `dispersion`
    /// after the first. A zero dispersion is ignored (no information).
    /// Returns the sample in bit/s when it was used.
    pub fn on_pair(&mut self, len_bytes: u32, dispersion: Duration) -> Option<f64> {
        if dispersion.is_zero() {
            return None;
        }
        let sample = len_bytes as f64 * 8.0 / dispersion.as_secs_f64();
        if !sample.is_finite() {
            return None;
        }
        let ewma = |avg: Option<f64>, w: f64| match avg {
            None => sample,
            Some(avg) => w * sample + (1.0 - w) * avg,
        };
        self.estimate = Some(ewma(self.estimate, self.weight_new));
        self.steady = Some(ewma(self.steady, STEADY_WEIGHT));
        self.samples += 1;
        Some(sample)
    }

    /// Smoothed estimate in bit/s; `None` before the first sample.
    pub fn estimate_bps(&self) -> Option<f64> {
        self.estimate
    }

    /// Slow average of the samples in bit/s (weight [`STEADY_WEIGHT`]), for
    /// decisions that must not flip on one pair (module docs); `None`
    /// before the first sample.
    pub fn steady_bps(&self) -> Option<f64> {
        self.steady
    }

    /// Number of samples taken.
    pub fn samples(&self) -> u64 {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_zero_dispersion() {
        let mut b = BandwidthEstimator::new(0.8);
        assert_eq!(b.estimate_bps(), None);
        assert_eq!(b.samples(), 0);
        assert_eq!(b.on_pair(1500, Duration::ZERO), None);
        assert_eq!(b.estimate_bps(), None);
        assert_eq!(b.samples(), 0);
    }

    #[test]
    fn sample_is_length_over_dispersion() {
        let mut b = BandwidthEstimator::new(0.8);
        // 1500 B at 10 Mbit/s leave the bottleneck 1.2 ms apart.
        let s = b.on_pair(1500, Duration::from_micros(1200)).unwrap();
        assert!((s - 10e6).abs() < 1e-3, "{s}");
        assert_eq!(b.estimate_bps(), Some(s));
        assert_eq!(b.samples(), 1);
    }

    #[test]
    fn ewma_weights_new_sample_0_8() {
        let mut b = BandwidthEstimator::new(0.8);
        b.on_pair(1000, Duration::from_millis(8)); // 1 Mbit/s
        b.on_pair(1000, Duration::from_millis(4)); // 2 Mbit/s
                                                   // 0.8 * 2 + 0.2 * 1 = 1.8 Mbit/s
        let e = b.estimate_bps().unwrap();
        assert!((e - 1.8e6).abs() < 1e-3, "{e}");
        assert_eq!(b.samples(), 2);
    }

    #[test]
    fn converges_within_10_percent_of_1_mbps_with_noise() {
        // True capacity 1 Mbit/s: 1250-byte packets are 10 ms apart. Add
        // deterministic pseudo-random jitter of up to +-5% to the dispersion.
        let mut b = BandwidthEstimator::new(0.8);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut max_err: f64 = 0.0;
        for i in 0..500 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64; // [0, 1)
            let jitter = (u - 0.5) * 0.10; // [-5%, +5%)
            let disp_ns = (10_000_000.0 * (1.0 + jitter)) as u64;
            b.on_pair(1250, Duration::from_nanos(disp_ns)).unwrap();
            if i >= 10 {
                let e = b.estimate_bps().unwrap();
                max_err = max_err.max((e - 1e6).abs() / 1e6);
            }
        }
        assert!(max_err < 0.10, "max relative error {max_err}");
        assert_eq!(b.samples(), 500);
    }

    #[test]
    fn follows_a_capacity_change_quickly() {
        let mut b = BandwidthEstimator::new(0.8);
        for _ in 0..10 {
            b.on_pair(1250, Duration::from_millis(10)); // 1 Mbit/s
        }
        for _ in 0..3 {
            b.on_pair(1250, Duration::from_millis(5)); // 2 Mbit/s
        }
        // After 3 samples: 2 - 1 * 0.2^3 = 1.992 Mbit/s.
        let e = b.estimate_bps().unwrap();
        assert!((e - 1.992e6).abs() < 1.0, "{e}");
    }

    #[test]
    fn the_steady_average_barely_moves_on_one_odd_pair() {
        let mut b = BandwidthEstimator::new(0.8);
        for _ in 0..20 {
            b.on_pair(1500, Duration::from_micros(345)); // ~34.8 Mbit/s
        }
        b.on_pair(1500, Duration::from_micros(690)); // one pair at half
        let fast = b.estimate_bps().unwrap();
        let steady = b.steady_bps().unwrap();
        assert!(fast < 0.6 * 34.8e6, "{fast}");
        assert!(steady > 0.9 * 34.8e6, "{steady}");
        // And it follows a lasting change within a few tens of pairs.
        for _ in 0..30 {
            b.on_pair(1500, Duration::from_micros(690));
        }
        let steady = b.steady_bps().unwrap();
        assert!((steady - 17.4e6).abs() < 0.05 * 17.4e6, "{steady}");
    }
}
