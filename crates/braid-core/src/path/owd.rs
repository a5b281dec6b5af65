//! Relative one-way delay without synchronised clocks (PET/BMP Section V-A:
//! "only the relative delay between the different paths matters").
//! A raw sample is `receiver_clock_at_arrival - sender_clock_at_send` in
//! nanoseconds, signed: it equals the one-way delay plus an unknown clock
//! offset common to every path of a session. The base (propagation) delay
//! of a path is the minimum of the raw samples over a sliding window; the
//! difference of two paths' bases is their relative one-way delay.
//!
//! The windowed minimum uses Kathleen Nichols' three-sample running min/max
//! filter (as in BBR and Linux `lib/minmax.c`): it keeps the best, second
//! best and third best samples from successive sub-windows, so memory is
//! constant regardless of the sample rate, and a minimum older than
//! `window` is forgotten at the first sample after it expires.

use crate::time::{Duration, Instant};

/// One (time, value) entry of the windowed-min filter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct MinSample {
    t_ns: u64,
    v: i64,
}

/// Kathleen Nichols' windowed-min filter: `s[0]` is the minimum over the
/// window, `s[1]`/`s[2]` are the best candidates from later sub-windows that
/// take over when `s[0]` ages out.
#[derive(Copy, Clone, Debug)]
struct WindowedMin {
    s: [MinSample; 3],
}

impl WindowedMin {
    fn new(t_ns: u64, v: i64) -> Self {
        WindowedMin {
            s: [MinSample { t_ns, v }; 3],
        }
    }

    fn get(&self) -> i64 {
        self.s[0].v
    }

    fn update(&mut self, win: u64, t_ns: u64, v: i64) {
        let val = MinSample { t_ns, v };
        // New overall minimum, or nothing left in the window: restart.
        if v <= self.s[0].v || t_ns.saturating_sub(self.s[2].t_ns) > win {
            *self = WindowedMin::new(t_ns, v);
            return;
        }
        if v <= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if v <= self.s[2].v {
            self.s[2] = val;
        }
        // Sub-window maintenance.
        let dt = t_ns.saturating_sub(self.s[0].t_ns);
        if dt > win {
            // The best sample aged out: promote the later choices. The 2nd
            // choice may be out of the window too (the 3rd is in it, checked
            // above), hence the second round.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t_ns.saturating_sub(self.s[0].t_ns) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t_ns == self.s[0].t_ns && dt > win / 4 {
            // A quarter window without a new 2nd choice: take one from the
            // second quarter.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t_ns == self.s[1].t_ns && dt > win / 2 {
            // Half a window without a new 3rd choice: take one from the
            // second half.
            self.s[2] = val;
        }
    }
}

/// Relative one-way-delay estimator of one path: windowed minimum (base)
/// and EWMA (smoothed) of the raw, offset-carrying samples.
#[derive(Clone, Debug)]
pub struct OwdEstimator {
    /// Window length, nanoseconds.
    window_ns: u64,
    /// Windowed minimum; `None` before the first sample.
    min: Option<WindowedMin>,
    /// EWMA of the raw samples; `None` before the first sample.
    smoothed: Option<i64>,
    /// Windowed minimum of the *negated* queueing delays (sample - base),
    /// i.e. their windowed maximum.
    neg_queueing: Option<WindowedMin>,
}

impl OwdEstimator {
    /// `window`: how long a minimum is remembered (windowed-min filter, so a
    /// path whose route lengthens is noticed after at most `window`).
    pub fn new(window: Duration) -> Self {
        OwdEstimator {
            window_ns: window.as_nanos().min(u64::MAX as u128) as u64,
            min: None,
            smoothed: None,
            neg_queueing: None,
        }
    }

    /// One raw sample (offset included) observed at `now`.
    ///
    /// The first sample initialises both the base and the smoothed value;
    /// later ones update the windowed minimum and apply
    /// `smoothed += (raw - smoothed) / 8`. `now` should not go backwards; if
    /// it does, elapsed times are taken as zero.
    pub fn on_sample(&mut self, now: Instant, raw_ns: i64) {
        let t = now.as_nanos();
        match &mut self.min {
            None => self.min = Some(WindowedMin::new(t, raw_ns)),
            Some(m) => m.update(self.window_ns, t, raw_ns),
        }
        if let Some(base) = self.base_raw_ns() {
            let neg_q = -(raw_ns.saturating_sub(base)).max(0);
            match &mut self.neg_queueing {
                None => self.neg_queueing = Some(WindowedMin::new(t, neg_q)),
                Some(m) => m.update(self.window_ns, t, neg_q),
            }
        }
        self.smoothed = Some(match self.smoothed {
            None => raw_ns,
            Some(s) => {
                let s = s as i128;
                let next = s + (raw_ns as i128 - s) / 8;
                next.clamp(i64::MIN as i128, i64::MAX as i128) as i64
            }
        });
    }

    /// Windowed minimum of the raw samples; `None` before the first.
    pub fn base_raw_ns(&self) -> Option<i64> {
        self.min.as_ref().map(WindowedMin::get)
    }

    /// EWMA (weight 1/8) of the raw samples; `None` before the first.
    pub fn smoothed_raw_ns(&self) -> Option<i64> {
        self.smoothed
    }

    /// The largest queueing delay (sample - base at the time) seen within
    /// the window: on a path whose queue overflowed, about the time its
    /// buffer holds. `None` before the first sample.
    pub fn max_queueing_delay(&self) -> Option<Duration> {
        self.neg_queueing
            .as_ref()
            .map(|m| Duration::from_nanos(m.get().unsigned_abs()))
    }

    /// smoothed - base: the queueing delay currently added on this path.
    ///
    /// Zero before the first sample, and never negative (the smoothed value
    /// can briefly lie below a base that just rose when an old minimum aged
    /// out).
    pub fn queueing_delay(&self) -> Duration {
        match (self.smoothed, self.base_raw_ns()) {
            (Some(s), Some(b)) => {
                let d = s as i128 - b as i128;
                if d <= 0 {
                    Duration::ZERO
                } else {
                    Duration::from_nanos(d.min(u64::MAX as i128) as u64)
                }
            }
            _ => Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_largest_queueing_delay_for_a_window() {
        let mut o = OwdEstimator::new(Duration::from_secs(10));
        assert_eq!(o.max_queueing_delay(), None);
        o.on_sample(Instant::from_millis(0), 20_000_000);
        o.on_sample(Instant::from_millis(100), 70_000_000); // 50 ms of queue
        o.on_sample(Instant::from_millis(200), 25_000_000);
        assert_eq!(o.max_queueing_delay(), Some(Duration::from_millis(50)));
        // Forgotten once the window has passed without a larger one.
        // Later samples: the base stays at 20 ms, queueing at most 10 ms.
        for k in 0..40 {
            let raw = if k % 2 == 0 { 20_000_000 } else { 30_000_000 };
            o.on_sample(Instant::from_millis(10_300 + k * 300), raw);
        }
        assert_eq!(o.max_queueing_delay(), Some(Duration::from_millis(10)));
    }

    fn at_ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    #[test]
    fn empty() {
        let e = OwdEstimator::new(Duration::from_secs(10));
        assert_eq!(e.base_raw_ns(), None);
        assert_eq!(e.smoothed_raw_ns(), None);
        assert_eq!(e.queueing_delay(), Duration::ZERO);
    }

    #[test]
    fn first_sample_sets_both_negative_offsets_ok() {
        let mut e = OwdEstimator::new(Duration::from_secs(10));
        e.on_sample(at_ms(0), -5_000_000);
        assert_eq!(e.base_raw_ns(), Some(-5_000_000));
        assert_eq!(e.smoothed_raw_ns(), Some(-5_000_000));
        assert_eq!(e.queueing_delay(), Duration::ZERO);
    }

    #[test]
    fn ewma_one_eighth_and_queueing_delay() {
        let mut e = OwdEstimator::new(Duration::from_secs(10));
        e.on_sample(at_ms(0), 1_000);
        e.on_sample(at_ms(1), 9_000);
        // 1000 + (9000 - 1000) / 8 = 2000
        assert_eq!(e.smoothed_raw_ns(), Some(2_000));
        assert_eq!(e.base_raw_ns(), Some(1_000));
        assert_eq!(e.queueing_delay(), Duration::from_nanos(1_000));
    }

    #[test]
    fn minimum_within_window_is_kept() {
        let mut e = OwdEstimator::new(Duration::from_secs(10));
        e.on_sample(at_ms(0), 100);
        for i in 1..=99 {
            e.on_sample(at_ms(i * 100), 200 + i as i64);
        }
        assert_eq!(e.base_raw_ns(), Some(100));
    }

    #[test]
    fn windowed_min_forgets_old_minimum_after_window() {
        let window = Duration::from_secs(10);
        let mut e = OwdEstimator::new(window);
        // Route with 20 ms one-way delay (offset -1 s) for 5 s...
        let offset: i64 = -1_000_000_000;
        let mut t = 0u64;
        while t < 5_000 {
            e.on_sample(at_ms(t), offset + 20_000_000);
            t += 10;
        }
        assert_eq!(e.base_raw_ns(), Some(offset + 20_000_000));
        // ...then the route lengthens to 50 ms.
        let change = t;
        while t <= change + 20_000 {
            e.on_sample(at_ms(t), offset + 50_000_000);
            if t < 10_000 {
                // The old minimum (last seen at 4.99 s) is still within its window.
                assert_eq!(e.base_raw_ns(), Some(offset + 20_000_000), "t={t}");
            }
            t += 10;
        }
        // The old 20 ms minimum is gone: the new base is 50 ms.
        assert_eq!(e.base_raw_ns(), Some(offset + 50_000_000));
        // Smoothed converged to the same value: no queueing delay.
        assert_eq!(e.queueing_delay(), Duration::ZERO);
    }

    #[test]
    fn forgotten_within_one_window_of_last_low_sample() {
        // The bound promised by the contract: once a low sample is older
        // than `window`, the next sample no longer reports it.
        let mut e = OwdEstimator::new(Duration::from_millis(1000));
        e.on_sample(at_ms(0), 10);
        e.on_sample(at_ms(500), 30);
        e.on_sample(at_ms(1000), 40);
        assert_eq!(e.base_raw_ns(), Some(10));
        e.on_sample(at_ms(1001), 40);
        assert_ne!(e.base_raw_ns(), Some(10));
        assert!(e.base_raw_ns().unwrap() >= 30);
    }

    #[test]
    fn queueing_delay_tracks_a_standing_queue() {
        let mut e = OwdEstimator::new(Duration::from_secs(10));
        e.on_sample(at_ms(0), 5_000_000);
        for i in 1..200 {
            e.on_sample(at_ms(i), 15_000_000);
        }
        let q = e.queueing_delay();
        assert!(
            q > Duration::from_micros(9_990) && q <= Duration::from_millis(10),
            "{q:?}"
        );
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let mut e = OwdEstimator::new(Duration::MAX);
        e.on_sample(Instant::from_nanos(0), i64::MIN);
        e.on_sample(Instant::from_nanos(u64::MAX), i64::MAX);
        e.on_sample(Instant::from_nanos(5), i64::MAX);
        let _ = e.queueing_delay();
        assert_eq!(e.base_raw_ns(), Some(i64::MIN));
    }
}
