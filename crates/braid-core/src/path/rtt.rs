//! Smoothed RTT and RTT variation, RFC 6298 Section 2.
//!
//! The estimator follows RFC 6298 literally, in integer nanoseconds:
//!
//! - Section 2.2, first measurement `R`: `SRTT <- R`, `RTTVAR <- R/2`.
//! - Section 2.3, every later measurement `R'`, with alpha = 1/8 and
//!   beta = 1/4 (RTTVAR is updated *before* SRTT, using the old SRTT):
//!   `RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|`,
//!   `SRTT <- (1 - alpha) * SRTT + alpha * R'`.
//! - Sections 2.2-2.5: `RTO <- SRTT + max(G, K * RTTVAR)` with K = 4, then
//!   rounded up to a minimum (2.4) and capped at a maximum (2.5); both bounds
//!   are left to the caller of [`RttEstimator::rto`].
//!
//! It additionally tracks the minimum and the most recent sample, which the
//! schedulers use (EDPF/MinRtt want the propagation-dominated minimum).

use crate::time::Duration;

/// RFC 6298 estimator. Before the first sample `srtt()` is the initial value.
///
/// Before the first sample `rttvar()` is half the initial value, as if the
/// initial value had been a measurement (RFC 6298 2.2). With the default
/// initial SRTT of 333 ms this makes the pre-sample RTO about 1 s, the
/// initial RTO of RFC 6298 Section 2.1.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// SRTT in nanoseconds.
    srtt_ns: u64,
    /// RTTVAR in nanoseconds.
    rttvar_ns: u64,
    /// Smallest sample, nanoseconds.
    min_ns: Option<u64>,
    /// Latest sample, nanoseconds.
    latest_ns: Option<u64>,
}

/// A `Duration` in nanoseconds, saturated to `u64`.
fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

impl RttEstimator {
    /// `initial`: the value `srtt()` reports before any sample (RFC 6298 uses 1 s for the RTO).
    pub fn new(initial: Duration) -> Self {
        let init = nanos(initial);
        RttEstimator {
            srtt_ns: init,
            rttvar_ns: init / 2,
            min_ns: None,
            latest_ns: None,
        }
    }

    /// Feeds one RTT measurement (RFC 6298 2.2 / 2.3, alpha 1/8, beta 1/4).
    ///
    /// The first measurement sets `SRTT = R`, `RTTVAR = R/2` (2.2); later ones
    /// apply `RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R'|` and then
    /// `SRTT = 7/8 SRTT + 1/8 R'` (2.3). Arithmetic is done in 128 bits, so it
    /// cannot overflow; results are truncated to whole nanoseconds.
    pub fn update(&mut self, sample: Duration) {
        let r = nanos(sample);
        if self.latest_ns.is_none() {
            // RFC 6298 2.2.
            self.srtt_ns = r;
            self.rttvar_ns = r / 2;
        } else {
            // RFC 6298 2.3: RTTVAR first, with the old SRTT.
            let srtt = self.srtt_ns as u128;
            let rttvar = self.rttvar_ns as u128;
            let err = (srtt as i128 - r as i128).unsigned_abs();
            self.rttvar_ns = ((3 * rttvar + err) / 4) as u64;
            self.srtt_ns = ((7 * srtt + r as u128) / 8) as u64;
        }
        self.min_ns = Some(self.min_ns.map_or(r, |m| m.min(r)));
        self.latest_ns = Some(r);
    }

    /// SRTT (RFC 6298 2.2/2.3); the initial value before any sample.
    pub fn srtt(&self) -> Duration {
        Duration::from_nanos(self.srtt_ns)
    }

    /// RTTVAR (RFC 6298 2.2/2.3); half the initial value before any sample.
    pub fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar_ns)
    }

    /// Smallest sample seen; `None` before the first.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_ns.map(Duration::from_nanos)
    }

    /// Forgets the smallest sample for the latest one: the path's delay
    /// stepped up (`OwdEstimator::follow_rise`) and what it measured before
    /// no longer describes it. Without it the nearest round trip of the
    /// bond (`sender::pacing_bound`'s lower end, PET's ramp) stayed the
    /// moved path's old one: on change set 7/24 of `lab/sweep-changes.sh
    /// 30 7`, a 1.2 Mbit/s path 7 ms away that moves to 198 ms beside
    /// 19.6 Mbit/s 145 ms away, the pacing bound (twice the largest
    /// relative delay plus the nearest round trip) fell at the step from
    /// about 290 to 120 ms where it should have grown to about 400, the
    /// pacing queue dropped 139 of the inner TCP's packets, and CUBIC, cut
    /// twice to 443 packets, took the rest of the run to grow back. A
    /// later, smaller sample lowers it again as any new minimum does.
    pub fn restart_min(&mut self) {
        self.min_ns = self.latest_ns;
    }

    /// Most recent sample; `None` before the first.
    pub fn latest(&self) -> Option<Duration> {
        self.latest_ns.map(Duration::from_nanos)
    }

    /// Whether any sample arrived.
    pub fn has_samples(&self) -> bool {
        self.latest_ns.is_some()
    }

    /// RTO = SRTT + max(G, 4 RTTVAR) clamped to [min, max] (RFC 6298 2.3, 2.4).
    ///
    /// `granularity` is the clock granularity G of RFC 6298 2.2/2.3; `min` is
    /// the lower bound of 2.4 (the RFC recommends 1 s; tunnels commonly use
    /// less) and `max` the upper bound permitted by 2.5. If `min > max`,
    /// `max` wins.
    pub fn rto(&self, granularity: Duration, min: Duration, max: Duration) -> Duration {
        let k_rttvar = Duration::from_nanos(self.rttvar_ns).saturating_mul(4);
        let rto = Duration::from_nanos(self.srtt_ns).saturating_add(granularity.max(k_rttvar));
        rto.max(min).min(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn before_samples_reports_initial() {
        let e = RttEstimator::new(ms(333));
        assert!(!e.has_samples());
        assert_eq!(e.srtt(), ms(333));
        assert_eq!(e.rttvar(), Duration::from_micros(166_500));
        assert_eq!(e.min_rtt(), None);
        assert_eq!(e.latest(), None);
        // 333 + 4 * 166.5 = 999 ms: the RFC 6298 2.1 initial RTO of ~1 s.
        assert_eq!(
            e.rto(Duration::from_millis(1), Duration::ZERO, ms(60_000)),
            ms(999)
        );
    }

    #[test]
    fn first_sample_rfc6298_2_2() {
        let mut e = RttEstimator::new(ms(333));
        e.update(ms(100));
        assert!(e.has_samples());
        assert_eq!(e.srtt(), ms(100));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.min_rtt(), Some(ms(100)));
        assert_eq!(e.latest(), Some(ms(100)));
        // 100 + max(1 ms, 200 ms) = 300 ms.
        assert_eq!(e.rto(ms(1), Duration::ZERO, ms(60_000)), ms(300));
    }

    #[test]
    fn later_samples_match_hand_computed_rfc6298_2_3() {
        let mut e = RttEstimator::new(ms(333));
        e.update(ms(100)); // SRTT 100, RTTVAR 50
        e.update(ms(200));
        // RTTVAR = 3/4*50 + 1/4*|100-200| = 37.5 + 25 = 62.5
        // SRTT   = 7/8*100 + 1/8*200 = 87.5 + 25 = 112.5
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Duration::from_micros(112_500));
        e.update(ms(80));
        // RTTVAR = 3/4*62.5 + 1/4*|112.5-80| = 46.875 + 8.125 = 55
        // SRTT   = 7/8*112.5 + 1/8*80 = 98.4375 + 10 = 108.4375
        assert_eq!(e.rttvar(), ms(55));
        assert_eq!(e.srtt(), Duration::from_nanos(108_437_500));
        assert_eq!(e.min_rtt(), Some(ms(80)));
        assert_eq!(e.latest(), Some(ms(80)));
        // RTO = 108.4375 + 4*55 = 328.4375 ms
        assert_eq!(
            e.rto(ms(1), Duration::ZERO, ms(60_000)),
            Duration::from_nanos(328_437_500)
        );
    }

    #[test]
    fn rto_clamps_and_uses_granularity() {
        let mut e = RttEstimator::new(ms(333));
        for _ in 0..200 {
            e.update(ms(10));
        }
        // RTTVAR has decayed to (almost) nothing: G dominates.
        assert_eq!(e.srtt(), ms(10));
        assert!(e.rttvar() < Duration::from_micros(1));
        assert_eq!(e.rto(ms(5), Duration::ZERO, ms(60_000)), ms(15));
        // RFC 6298 2.4 lower bound.
        assert_eq!(e.rto(ms(5), ms(1000), ms(60_000)), ms(1000));
        // RFC 6298 2.5 upper bound.
        assert_eq!(e.rto(ms(5), Duration::ZERO, ms(12)), ms(12));
    }

    /// After a restart the smallest sample is the latest; later samples
    /// lower it as before, and a restart before any sample keeps none.
    #[test]
    fn a_restarted_minimum_starts_from_the_latest_sample() {
        let mut e = RttEstimator::new(ms(333));
        e.restart_min();
        assert_eq!(e.min_rtt(), None);
        e.update(ms(30));
        e.update(ms(400));
        assert_eq!(e.min_rtt(), Some(ms(30)));
        e.restart_min();
        assert_eq!(e.min_rtt(), Some(ms(400)));
        e.update(ms(410));
        assert_eq!(e.min_rtt(), Some(ms(400)));
        e.update(ms(390));
        assert_eq!(e.min_rtt(), Some(ms(390)));
    }

    #[test]
    fn converges_to_constant_rtt() {
        let mut e = RttEstimator::new(ms(333));
        e.update(ms(500));
        for _ in 0..100 {
            e.update(ms(40));
        }
        let srtt = e.srtt().as_secs_f64();
        assert!((srtt - 0.040).abs() < 1e-4, "srtt {srtt}");
        assert_eq!(e.min_rtt(), Some(ms(40)));
    }

    #[test]
    fn huge_samples_do_not_overflow() {
        let mut e = RttEstimator::new(Duration::MAX);
        e.update(Duration::MAX);
        e.update(Duration::ZERO);
        e.update(Duration::MAX);
        let _ = e.rto(Duration::MAX, Duration::ZERO, Duration::MAX);
    }
}
