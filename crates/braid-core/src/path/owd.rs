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
    /// A run of samples all well above the base ([`OwdEstimator::follow_rise`]).
    rise: Option<Rise>,
    /// The queueing seen before the latest run began.
    calm: Option<Calm>,
}

/// Samples that have stayed above `base + threshold_ns` since `since_ns`
/// (`count` of them); `low` and `high` are the smallest and largest.
#[derive(Copy, Clone, Debug)]
struct Rise {
    since_ns: u64,
    count: u32,
    low: i64,
    high: i64,
    threshold_ns: i64,
}

impl Rise {
    /// Enough samples, spread over less than half the rise above `base`
    /// (a step, not a queue that builds).
    fn is_step(&self, base: i64) -> bool {
        self.count >= MIN_RISE_SAMPLES
            && self.high.saturating_sub(self.low) <= self.low.saturating_sub(base) / 2
    }
}

/// The largest queueing delay seen before a run of high samples began, and
/// when: a run that breaks and starts again within the window is judged
/// against it, not against a maximum its own samples have raised.
#[derive(Copy, Clone, Debug)]
struct Calm {
    t_ns: u64,
    queue_ns: i64,
}

/// Samples a rise must have before the base follows it: two or three in
/// a row can be one burst. A path the scheduler has left gets only its
/// probe pairs, one a second: its rise is followed after two of them, with
/// no report near the old base between.
const MIN_RISE_SAMPLES: u32 = 4;

impl OwdEstimator {
    /// `window`: how long a minimum is remembered (windowed-min filter, so a
    /// path whose route lengthens is noticed after at most `window`).
    pub fn new(window: Duration) -> Self {
        OwdEstimator {
            window_ns: window.as_nanos().min(u64::MAX as u128) as u64,
            min: None,
            smoothed: None,
            neg_queueing: None,
            rise: None,
            calm: None,
        }
    }

    /// Follows a lasting rise of the path's delay (a reroute, a handover)
    /// at once instead of after the minimum filter's window. Call it with
    /// each raw sample before [`OwdEstimator::on_sample`], and only for a
    /// sender that keeps its backlog on its side (the tunnel paces each
    /// path at its rate, and its other direction carries little but ACKs),
    /// so that a sample far above the base is the path's delay, not the
    /// sender's own queue at the bottleneck. A sender that leaves its
    /// backlog in the network (the papers' unpaced model, whose scheduler
    /// predicts that queue itself) would take it for a longer path.
    ///
    /// A run begins with a sample more than `threshold` above the base:
    /// the larger of `min_rise` and twice the largest queueing delay seen
    /// in the window before it (before the previous run, if that began
    /// within the window, so that a run broken by one low sample is not
    /// judged against its own samples). The base follows, restarting from
    /// the run's smallest sample, once the run has lasted `hold` with at
    /// least `MIN_RISE_SAMPLES` samples and is a step, not a ramp: its
    /// samples spread over less than half the rise (a queue that builds,
    /// when the path's rate fell or another flow fills it, grows sample by
    /// sample and is left to count as queueing). The queueing seen
    /// against the old base is replaced by the maximum from before the
    /// run. Returns whether the base followed.
    /// A later, lower sample lowers the base again at once, as any new
    /// minimum does.
    ///
    /// Why: the base is the minimum over `window` (10 s in braid). A path
    /// whose one-way delay rose by 200 ms kept its old base that long, and
    /// PET went on predicting its packets 200 ms early: everything behind
    /// them waited in the peer's resequencer, and the inner TCP's round
    /// trip was the slow path's (a random set with a delay step, 7.5
    /// Mbit/s where its other path alone carried 26).
    pub fn follow_rise(
        &mut self,
        now: Instant,
        raw_ns: i64,
        hold: Duration,
        min_rise: Duration,
    ) -> bool {
        let Some(base) = self.base_raw_ns() else {
            return false;
        };
        let t = now.as_nanos();
        let hold_ns = hold.as_nanos().min(u64::MAX as u128) as u64;
        let above = raw_ns.saturating_sub(base);
        if let Some(r) = self.rise.as_mut() {
            if above > r.threshold_ns {
                r.low = r.low.min(raw_ns);
                r.high = r.high.max(raw_ns);
                r.count = r.count.saturating_add(1);
                if t.saturating_sub(r.since_ns) >= hold_ns && r.is_step(base) {
                    self.take_rise(t);
                    return true;
                }
                return false;
            }
            // A sample near the base: the run ends.
            self.rise = None;
        }
        let calm = match self.calm {
            Some(c) if t.saturating_sub(c.t_ns) <= self.window_ns => c,
            _ => Calm {
                t_ns: t,
                queue_ns: self
                    .max_queueing_delay()
                    .map_or(0, |q| q.as_nanos().min(i64::MAX as u128) as i64),
            },
        };
        let threshold =
            (min_rise.as_nanos().min(i64::MAX as u128) as i64).max(calm.queue_ns.saturating_mul(2));
        if above > threshold {
            self.calm = Some(calm);
            self.rise = Some(Rise {
                since_ns: t,
                count: 1,
                low: raw_ns,
                high: raw_ns,
                threshold_ns: threshold,
            });
        }
        false
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

    /// Whether a run of samples above the base is under way that
    /// [`OwdEstimator::follow_rise`] has not yet followed or ended.
    pub fn rise_pending(&self) -> bool {
        self.rise.is_some()
    }

    /// Follows the pending run of high samples at once, without its hold,
    /// if it is a step of at least `MIN_RISE_SAMPLES` samples; whether
    /// the base followed. For a caller that knows otherwise that the
    /// path's delay changed: a path that went quiet for a round trip and
    /// then delivered what it held late (`sender/quiet.rs`) has shown its
    /// new delay for longer than any hold.
    pub fn follow_pending_rise(&mut self, now: Instant) -> bool {
        let (Some(base), Some(r)) = (self.base_raw_ns(), self.rise) else {
            return false;
        };
        if !r.is_step(base) {
            return false;
        }
        self.take_rise(now.as_nanos());
        true
    }

    /// The base restarts from the run's smallest sample; the queueing seen
    /// against the old base is replaced by the maximum from before the run.
    fn take_rise(&mut self, t: u64) {
        let Some(r) = self.rise.take() else { return };
        let calm = self.calm.map_or(0, |c| c.queue_ns);
        self.min = Some(WindowedMin::new(t, r.low));
        self.neg_queueing = Some(WindowedMin::new(t, -calm));
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

    /// Feeds a sample through `follow_rise` then `on_sample`, as the
    /// sender does for a paced path; returns whether the base followed.
    fn paced_sample(e: &mut OwdEstimator, t_ms: u64, raw: i64) -> bool {
        let rose = e.follow_rise(
            at_ms(t_ms),
            raw,
            Duration::from_millis(200),
            Duration::from_millis(50),
        );
        e.on_sample(at_ms(t_ms), raw);
        rose
    }

    const MS: i64 = 1_000_000;

    /// An estimator that has seen 1 s of a path 20 ms away, one paced
    /// sample every 10 ms.
    fn steady_at_20_ms() -> OwdEstimator {
        let mut e = OwdEstimator::new(Duration::from_secs(10));
        for t in 0..100 {
            paced_sample(&mut e, t * 10, 20 * MS);
        }
        e
    }

    #[test]
    fn a_lasting_rise_moves_the_base_after_the_hold() {
        let mut e = OwdEstimator::new(Duration::from_secs(10));
        for t in 0..100 {
            assert!(!paced_sample(&mut e, t * 10, 20 * MS + (t as i64 % 3) * MS));
        }
        // The delay rises by 200 ms at 1 s; the base follows 200 ms later.
        let mut followed = None;
        for t in 100..200u64 {
            if paced_sample(&mut e, t * 10, 220 * MS + (t as i64 % 3) * MS) {
                followed.get_or_insert(t * 10);
            }
        }
        assert_eq!(followed, Some(1200));
        assert_eq!(e.base_raw_ns(), Some(220 * MS));
        assert!(e.queueing_delay() < Duration::from_millis(3));
        // The delay falls back: the first low sample is the base again.
        paced_sample(&mut e, 2000, 20 * MS);
        assert_eq!(e.base_raw_ns(), Some(20 * MS));
    }

    #[test]
    fn a_spike_shorter_than_the_hold_is_queueing() {
        let mut e = steady_at_20_ms();
        // 150 ms of samples 300 ms late (a radio link stalled), then normal.
        for t in 100..115 {
            assert!(!paced_sample(&mut e, t * 10, 320 * MS));
        }
        for t in 115..300 {
            assert!(!paced_sample(&mut e, t * 10, 20 * MS));
        }
        assert_eq!(e.base_raw_ns(), Some(20 * MS));
        assert_eq!(e.max_queueing_delay(), Some(Duration::from_millis(300)));
    }

    #[test]
    fn a_rise_within_twice_the_queueing_seen_is_not_followed() {
        let mut e = OwdEstimator::new(Duration::from_secs(10));
        // The path's queue has reached 40 ms now and then.
        for t in 0..100 {
            let q = if t % 10 == 0 { 40 } else { 0 };
            paced_sample(&mut e, t * 10, (20 + q) * MS);
        }
        // A standing 70 ms for two seconds: under twice 40 ms, kept as
        // queueing over the old base; 100 ms is beyond it and followed.
        for t in 100..300 {
            assert!(!paced_sample(&mut e, t * 10, 90 * MS));
        }
        assert_eq!(e.base_raw_ns(), Some(20 * MS));
        let mut e2 = e.clone();
        let mut followed = false;
        for t in 300..400 {
            followed |= paced_sample(&mut e2, t * 10, 120 * MS);
        }
        assert!(
            !followed,
            "the queueing seen is now 70 ms: 100 is within twice it"
        );
        let mut followed = false;
        for t in 300..400 {
            followed |= paced_sample(&mut e, t * 10, 200 * MS);
        }
        assert!(followed);
        assert_eq!(e.base_raw_ns(), Some(200 * MS));
    }

    #[test]
    fn a_queue_that_builds_is_not_followed() {
        let mut e = steady_at_20_ms();
        // The path's rate fell: its queue grows by 2 ms every 10 ms, to 400 ms.
        for t in 0..200u64 {
            assert!(!paced_sample(
                &mut e,
                1000 + t * 10,
                (20 + 2 * t as i64) * MS
            ));
        }
        assert_eq!(e.base_raw_ns(), Some(20 * MS));
    }

    /// A caller that knows the path's delay changed follows a pending
    /// step at once, but not a run too short to tell, nor a ramp.
    #[test]
    fn a_pending_step_is_followed_at_once_when_asked() {
        let mut e = steady_at_20_ms();
        assert!(!e.follow_pending_rise(at_ms(1000)), "nothing pending");
        for t in 0..3 {
            paced_sample(&mut e, 1000 + t, 220 * MS + t as i64 * MS);
        }
        assert!(e.rise_pending());
        assert!(!e.follow_pending_rise(at_ms(1003)), "three samples");
        paced_sample(&mut e, 1003, 220 * MS);
        assert!(e.follow_pending_rise(at_ms(1004)));
        assert!(!e.rise_pending());
        assert_eq!(e.base_raw_ns(), Some(220 * MS));

        let mut e = steady_at_20_ms();
        for t in 0..20u64 {
            paced_sample(&mut e, 1000 + t * 10, (100 + 20 * t as i64) * MS);
        }
        assert!(e.rise_pending());
        assert!(!e.follow_pending_rise(at_ms(1200)), "a ramp");
        assert_eq!(e.base_raw_ns(), Some(20 * MS));
    }

    #[test]
    fn a_step_broken_by_one_low_sample_is_still_followed() {
        let mut e = steady_at_20_ms();
        let mut followed = None;
        for t in 100..200u64 {
            // One report of a packet that took the old route, 100 ms in.
            let raw = if t == 110 { 25 * MS } else { 220 * MS };
            if paced_sample(&mut e, t * 10, raw) {
                followed.get_or_insert(t * 10);
            }
        }
        // The run restarts at 1.11 s against the threshold from before
        // it, not against its own samples: followed 200 ms later.
        assert_eq!(followed, Some(1310));
        assert_eq!(e.base_raw_ns(), Some(220 * MS));
        assert_eq!(e.max_queueing_delay(), Some(Duration::ZERO));
    }

    #[test]
    fn late_reports_among_normal_ones_do_not_move_the_base() {
        let mut e = steady_at_20_ms();
        // Three late reports in a row a second, the rest on time.
        for t in 100..600u64 {
            let raw = if t % 100 < 3 { 220 * MS } else { 20 * MS };
            assert!(!paced_sample(&mut e, t * 10, raw));
        }
        assert_eq!(e.base_raw_ns(), Some(20 * MS));
    }

    #[test]
    fn a_probed_path_whose_delay_rose_is_followed_after_two_probes() {
        let mut e = steady_at_20_ms();
        // The scheduler left the path: a probe pair a second, 200 ms late.
        let mut followed = None;
        for k in 0..4u64 {
            for (dt, raw) in [(0, 220 * MS), (1, 221 * MS)] {
                if paced_sample(&mut e, 2000 + k * 1000 + dt, raw) {
                    followed.get_or_insert(k);
                }
            }
        }
        assert_eq!(followed, Some(1));
        assert_eq!(e.base_raw_ns(), Some(220 * MS));
    }
}
