//! Pareto on/off cross traffic (PRISM §8.3.2, Fig 12: background flows of
//! 400 and 800 kbit/s whose on time is Pareto and whose off time is a
//! fixed 1 s). During an on period the source emits packets of
//! `packet_bytes` at `rate_mbit`; a Pareto period with mean `m` and shape
//! `a > 1` has scale `x_m = m (a - 1) / a` and is drawn by inversion,
//! `x_m / U^(1/a)`.

use braid_core::time::{tx_time, Duration, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::params::{ms, ParetoOnOffParams};

/// A Pareto on/off packet source; [`Self::next_at`] is when its next
/// packet arrives at the link.
#[derive(Clone, Debug)]
pub struct ParetoOnOff {
    p: ParetoOnOffParams,
    gap: Duration,
    next: Instant,
    on_until: Instant,
}

fn pareto(mean_ms: f64, shape: f64, rng: &mut ChaCha8Rng) -> Duration {
    let xm = mean_ms * (shape - 1.0) / shape;
    let u: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
    ms(xm / u.powf(1.0 / shape))
}

impl ParetoOnOff {
    /// A source whose first on period starts at `start`.
    pub fn new(p: ParetoOnOffParams, start: Instant, rng: &mut ChaCha8Rng) -> Self {
        let gap = tx_time(p.packet_bytes, p.rate_mbit * 1e6);
        let on = pareto(p.mean_on_ms, p.shape, rng);
        ParetoOnOff {
            p,
            gap,
            next: start,
            on_until: start + on,
        }
    }

    pub fn packet_bytes(&self) -> u32 {
        self.p.packet_bytes
    }

    pub fn next_at(&self) -> Instant {
        self.next
    }

    /// Consumes the packet at [`Self::next_at`] and schedules the next.
    pub fn advance(&mut self, rng: &mut ChaCha8Rng) {
        let mut t = self.next + self.gap;
        while t >= self.on_until {
            let off = if self.p.off_pareto {
                pareto(self.p.off_ms, self.p.shape, rng)
            } else {
                ms(self.p.off_ms)
            };
            let start = self.on_until + off;
            let on = pareto(self.p.mean_on_ms, self.p.shape, rng);
            self.on_until = start + on.max(self.gap);
            t = start;
        }
        self.next = t;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Long-run rate = rate x E[on] / (E[on] + off); Pareto with shape 1.5
    /// converges slowly, so the bound is loose, but a source that ignored
    /// its off periods (twice the rate) or its on periods would fail it.
    #[test]
    fn long_run_rate_follows_on_fraction() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let p = ParetoOnOffParams {
            rate_mbit: 0.8,
            packet_bytes: 1000,
            mean_on_ms: 500.0,
            shape: 1.9,
            off_ms: 500.0,
            off_pareto: false,
        };
        let mut s = ParetoOnOff::new(p, Instant::ZERO, &mut rng);
        let end = Instant::from_millis(2_000_000);
        let mut bytes = 0u64;
        let mut last = Instant::ZERO;
        while s.next_at() < end {
            assert!(s.next_at() >= last);
            last = s.next_at();
            bytes += 1000;
            s.advance(&mut rng);
        }
        let rate = bytes as f64 * 8.0 / 2000.0 / 1e6;
        assert!((rate - 0.4).abs() < 0.08, "{rate} Mbit/s");
    }

    #[test]
    fn pareto_periods_have_the_asked_mean_and_minimum() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let n = 200_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| pareto(100.0, 3.0, &mut rng).as_secs_f64() * 1e3)
            .collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        assert!((mean - 100.0).abs() < 3.0, "{mean}");
        let min = xs.iter().cloned().fold(f64::MAX, f64::min);
        assert!((66.66..67.5).contains(&min), "{min}");
    }
}
