//! Retransmission timer estimator, in ns-2's fixed-point tick arithmetic.
//!
//! ns-2 (`TcpAgent::rtt_update`, `rtt_timeout`, `rtt_backoff` in tcp.cc)
//! keeps the BSD representation: RTT samples are whole clock ticks, `srtt`
//! is stored times 8 and `rttvar` times 4, and the timeout is
//! `(srtt + 4 * rttvar)` ticks. That is RFC 6298 Section 2 (alpha = 1/8,
//! beta = 1/4, K = 4, first sample: SRTT = R, RTTVAR = R/2) with clock
//! granularity G = one tick. Reproducing the integer arithmetic, rather
//! than using floating point, keeps RTO values, and hence timeout instants,
//! identical to ns-2's for the same packet timings.

use braid_core::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub(crate) struct RtoEstimator {
    tick_ns: u64,
    /// Smoothed RTT in ticks, times 8 (ns-2 `t_srtt_`); 0 = no sample yet.
    srtt8: i64,
    /// RTT variation in ticks, times 4 (ns-2 `t_rttvar_`).
    rttvar4: i64,
    /// Current un-backed-off timeout (ns-2 `t_rtxcur_`).
    rtxcur: Duration,
    /// Backoff multiplier (ns-2 `t_backoff_`), a power of two.
    backoff: u32,
    max_backoff: u32,
    min_rto: Duration,
    /// Linux's floor: `min_rto` bounds the variation term, not the sum
    /// (`TcpConfig::min_rto_on_variation`).
    min_rto_on_variation: bool,
    max_rto: Duration,
}

impl RtoEstimator {
    pub(crate) fn new(
        initial: Duration,
        min_rto: Duration,
        max_rto: Duration,
        tick: Duration,
        max_backoff: u32,
    ) -> Self {
        RtoEstimator {
            tick_ns: (tick.as_nanos() as u64).max(1),
            srtt8: 0,
            rttvar4: 0,
            rtxcur: initial,
            backoff: 1,
            max_backoff: max_backoff.max(1),
            min_rto,
            min_rto_on_variation: false,
            max_rto,
        }
    }

    /// Floors the variation term instead of the whole timeout, as Linux
    /// does (see `TcpConfig::min_rto_on_variation`).
    pub(crate) fn with_min_rto_on_variation(mut self, on: bool) -> Self {
        self.min_rto_on_variation = on;
        self
    }

    /// Feeds one RTT measurement of a packet sent at `sent` and acknowledged
    /// at `now`. The sample is the number of clock ticks between the two
    /// (what a BSD kernel counting `tcpTick_` interrupts sees; ns-2 computes
    /// the same with its `boot_time_` offset set to zero), at least one.
    pub(crate) fn sample(&mut self, sent: Instant, now: Instant) {
        let ticks = (now.as_nanos() / self.tick_ns).saturating_sub(sent.as_nanos() / self.tick_ns);
        let m = ticks.clamp(1, i32::MAX as u64) as i64;
        if self.srtt8 != 0 {
            let mut delta = m - (self.srtt8 >> 3); // RFC 6298 (2.3): SRTT += (R' - SRTT)/8
            self.srtt8 += delta;
            if self.srtt8 <= 0 {
                self.srtt8 = 1;
            }
            delta = delta.abs() - (self.rttvar4 >> 2); // RTTVAR += (|SRTT - R'| - RTTVAR)/4
            self.rttvar4 += delta;
            if self.rttvar4 <= 0 {
                self.rttvar4 = 1;
            }
        } else {
            self.srtt8 = m << 3; // RFC 6298 (2.2): SRTT = R
            self.rttvar4 = m << 1; // RTTVAR = R/2
        }
        let ticks = ((self.rttvar4 << 3) + self.srtt8) >> 3; // SRTT + 4 * RTTVAR
        self.rtxcur = Duration::from_nanos(ticks as u64 * self.tick_ns);
    }

    /// The timeout to arm now: RFC 6298 (2.4) floor applied before the
    /// backoff (ns-2 `rfc2988_`), then the (2.5) ceiling, and never less
    /// than two ticks.
    pub(crate) fn rto(&self) -> Duration {
        let base = if self.min_rto_on_variation && self.srtt8 > 0 {
            // SRTT + max(4 RTTVAR, min_rto): rttvar4 is 4 RTTVAR in ticks.
            let srtt = Duration::from_nanos((self.srtt8 >> 3) as u64 * self.tick_ns);
            let var = Duration::from_nanos(self.rttvar4 as u64 * self.tick_ns);
            srtt + var.max(self.min_rto)
        } else {
            self.rtxcur.max(self.min_rto)
        };
        let t = base.saturating_mul(self.backoff).min(self.max_rto);
        t.max(Duration::from_nanos(2 * self.tick_ns))
    }

    /// RFC 6298 (5.5): double the timer after it expires. Like ns-2 (and
    /// BSD), once backed off more than 8 times the smoothed RTT is folded
    /// into the variation and forgotten, so the next sample restarts the
    /// estimator.
    pub(crate) fn back_off(&mut self) {
        if self.backoff < self.max_backoff {
            self.backoff = (self.backoff * 2).min(self.max_backoff);
        }
        if self.backoff > 8 {
            self.rttvar4 += self.srtt8 >> 3;
            self.srtt8 = 0;
        }
    }

    /// Ends the backoff once new data is acknowledged with a valid sample.
    pub(crate) fn reset_backoff(&mut self) {
        self.backoff = 1;
    }

    pub(crate) fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Smoothed RTT, if any sample has been taken.
    pub(crate) fn srtt(&self) -> Option<Duration> {
        (self.srtt8 > 0).then(|| Duration::from_nanos((self.srtt8 as u64 * self.tick_ns) / 8))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RtoEstimator {
        RtoEstimator::new(
            Duration::from_secs(3),
            Duration::from_millis(200),
            Duration::from_secs(64),
            Duration::from_millis(10),
            64,
        )
    }

    #[test]
    fn linux_floors_the_variation_not_the_sum() {
        let ms = Duration::from_millis;
        let t = |v| Instant::from_millis(v);
        let mut rfc = RtoEstimator::new(ms(1000), ms(200), ms(120_000), ms(1), 64);
        let mut linux = rfc.clone().with_min_rto_on_variation(true);
        // A steady 250 ms round trip: RTTVAR decays towards zero.
        for i in 0..40 {
            rfc.sample(t(i * 1000), t(i * 1000 + 250));
            linux.sample(t(i * 1000), t(i * 1000 + 250));
        }
        assert!(rfc.rto() < ms(260), "RFC 6298 floor: {:?}", rfc.rto());
        assert_eq!(linux.rto(), ms(450));
        // Both floors agree on a short round trip with little variation.
        let mut rfc = RtoEstimator::new(ms(1000), ms(200), ms(120_000), ms(1), 64);
        let mut linux = rfc.clone().with_min_rto_on_variation(true);
        for i in 0..40 {
            rfc.sample(t(i * 1000), t(i * 1000 + 2));
            linux.sample(t(i * 1000), t(i * 1000 + 2));
        }
        assert_eq!(rfc.rto(), ms(200));
        assert_eq!(linux.rto(), ms(202));
        // Before any sample both use the initial timeout, and both back off.
        let mut l = RtoEstimator::new(ms(1000), ms(200), ms(120_000), ms(1), 64)
            .with_min_rto_on_variation(true);
        assert_eq!(l.rto(), ms(1000));
        l.back_off();
        assert_eq!(l.rto(), ms(2000));
    }

    #[test]
    fn initial_rto_backs_off_by_doubling_up_to_the_ceiling() {
        let mut e = est();
        assert_eq!(e.rto(), Duration::from_secs(3));
        e.back_off();
        assert_eq!(e.rto(), Duration::from_secs(6));
        e.back_off();
        assert_eq!(e.rto(), Duration::from_secs(12));
        for _ in 0..10 {
            e.back_off();
        }
        assert_eq!(e.backoff(), 64);
        assert_eq!(e.rto(), Duration::from_secs(64));
        e.reset_backoff();
        assert_eq!(e.rto(), Duration::from_secs(3));
    }

    #[test]
    fn first_sample_gives_three_rtt_and_steady_samples_converge_to_floor() {
        let mut e = est();
        e.sample(Instant::ZERO, Instant::from_millis(100));
        // srtt 10 ticks, rttvar 5 ticks -> 30 ticks
        assert_eq!(e.rto(), Duration::from_millis(300));
        assert_eq!(e.srtt(), Some(Duration::from_millis(100)));
        for i in 1..50 {
            let t = Instant::from_millis(1000 * i);
            e.sample(t, t + Duration::from_millis(100));
        }
        // rttvar decays below one tick; srtt + 4 * rttvar = 130 ms < 200 ms floor
        assert_eq!(e.rto(), Duration::from_millis(200));
    }

    #[test]
    fn samples_are_whole_ticks_of_at_least_one() {
        let mut e = est();
        e.sample(Instant::from_micros(9_999), Instant::from_micros(10_001));
        assert_eq!(e.srtt(), Some(Duration::from_millis(10)));
        let mut e = est();
        e.sample(Instant::from_micros(10_001), Instant::from_micros(10_002));
        assert_eq!(e.srtt(), Some(Duration::from_millis(10)));
    }
}
