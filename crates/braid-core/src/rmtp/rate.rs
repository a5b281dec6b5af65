//! One channel's sending rate (§3.1, §3.2; `SPECS.md` §4.1).
//!
//! **Start.** The channel is probed with a packet pair; the dispersion
//! τ_pp of the pair is the smallest send interval that causes no queueing,
//! so the *ideal* rate is `1/τ_pp` frames per second. The channel starts at
//! **half** of it, "because the measurement may be wrong". Pairs are
//! repeated while the channel runs; the ideal rate is the largest of the
//! latest [`PAIR_SAMPLES`] (cross traffic can only stretch a pair, never
//! shrink it, so the largest rate is the least disturbed sample).
//!
//! **Rate-update rule — braid's design; the supplied text of the paper
//! breaks off before it (`SPECS.md` §4: "VAGUE (missing text)").** Once per
//! smoothed RTT (an *epoch*), on an acknowledgement:
//! - *congestion* — the channel's long-run jitter exceeds its baseline
//!   (the smallest value seen in the last [`BASE_WINDOW`]) by more than
//!   `J = max(jitter_floor, jitter_periods · period)` **and** it grew over
//!   the epoch (the paper's "steadily growing"): the rate is **halved**
//!   (never below `min_rate_fps`) and held for two epochs while the queue
//!   drains;
//! - otherwise the rate closes **half the gap** to the ideal rate (at most
//!   `max_rate_fps`, the negotiated *maximum rate*: "probing stops there"),
//!   and snaps to it within 1 %: from half it is at 3/4 after one epoch,
//!   7/8 after two, and at the ideal after seven;
//! - a lower ideal rate (a new pair sample) lowers the rate at once.
//!
//! **Losses never move the rate.** That is the loss classification: a loss
//! that comes with a growing long-run jitter is congestion and the jitter
//! rule above has already acted on it; a loss without it is a transmission
//! (wireless) loss, which slowing down would not prevent. Losses only cause
//! retransmission (see `sender`).
//!
//! **Pacing.** Frames leave a channel one period `1/rate` apart; the
//! sender keeps the next send time.

use std::collections::VecDeque;

use crate::time::{Duration, Instant};

/// Pair samples kept for the ideal rate.
pub const PAIR_SAMPLES: usize = 4;
/// How long a long-run jitter baseline stays valid; a fresh one is taken
/// after it, so that clock drift between the ends (100 ppm is 1 ms in
/// 10 s) is never read as a queue.
pub const BASE_WINDOW: Duration = Duration::from_secs(10);

/// Settings of the rate controller.
#[derive(Clone, Debug, PartialEq)]
pub struct RateConfig {
    /// The negotiated *maximum rate* per channel, frames/s (§3.4 (1)).
    pub max_rate_fps: f64,
    /// The rate is never cut below this, frames/s.
    pub min_rate_fps: f64,
    /// Congestion threshold floor.
    pub jitter_floor: Duration,
    /// Congestion threshold in periods of the current rate.
    pub jitter_periods: f64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            max_rate_fps: f64::INFINITY,
            min_rate_fps: 1.0,
            jitter_floor: Duration::from_millis(5),
            jitter_periods: 4.0,
        }
    }
}

/// What an epoch decided.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Epoch {
    /// Not yet the end of an epoch.
    Running,
    /// Congestion: the rate was halved.
    Cut,
    /// The rate moved toward the ideal (or stayed at it).
    Probe,
    /// Held after a cut.
    Hold,
}

/// One channel's rate.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelRate {
    cfg: RateConfig,
    pairs: VecDeque<f64>,
    ideal_fps: Option<f64>,
    rate_fps: f64,
    epoch_start: Option<(Instant, i32)>,
    base: Option<(Instant, i32)>,
    hold_until: Instant,
    /// Congestion cuts so far.
    pub cuts: u64,
}

impl ChannelRate {
    pub fn new(cfg: RateConfig) -> Self {
        let r = cfg.min_rate_fps;
        ChannelRate {
            cfg,
            pairs: VecDeque::new(),
            ideal_fps: None,
            rate_fps: r,
            epoch_start: None,
            base: None,
            hold_until: Instant::ZERO,
            cuts: 0,
        }
    }

    /// The current rate, frames/s.
    pub fn rate_fps(&self) -> f64 {
        self.rate_fps
    }

    /// The ideal rate from packet pairs, if measured.
    pub fn ideal_fps(&self) -> Option<f64> {
        self.ideal_fps
    }

    /// The send interval.
    pub fn period(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.rate_fps.max(1e-3))
    }

    fn ceiling(&self) -> f64 {
        self.ideal_fps
            .unwrap_or(self.cfg.min_rate_fps)
            .min(self.cfg.max_rate_fps)
            .max(self.cfg.min_rate_fps)
    }

    /// A packet-pair dispersion. The first sets the rate to half the
    /// ideal; later ones refresh the ideal (and lower the rate if it fell).
    pub fn on_pair(&mut self, tau: Duration) {
        let secs = tau.as_secs_f64().max(1e-7);
        self.pairs.push_back(1.0 / secs);
        while self.pairs.len() > PAIR_SAMPLES {
            self.pairs.pop_front();
        }
        let first = self.ideal_fps.is_none();
        self.ideal_fps = Some(self.pairs.iter().copied().fold(0.0, f64::max));
        let ceil = self.ceiling();
        if first {
            self.rate_fps = (ceil / 2.0).max(self.cfg.min_rate_fps);
        } else {
            self.rate_fps = self.rate_fps.min(ceil);
        }
    }

    /// The channel's long-run jitter from an acknowledgement, at `now`,
    /// with the channel's smoothed RTT; runs the rate-update rule once per
    /// epoch.
    pub fn on_jitter(&mut self, now: Instant, jitter_us: i32, srtt: Duration) -> Epoch {
        match self.base {
            Some((at, b)) if jitter_us >= b && now.saturating_since(at) < BASE_WINDOW => {}
            _ => self.base = Some((now, jitter_us)),
        }
        let Some((start, j0)) = self.epoch_start else {
            self.epoch_start = Some((now, jitter_us));
            return Epoch::Running;
        };
        if now.saturating_since(start) < srtt.max(Duration::from_millis(1)) {
            return Epoch::Running;
        }
        self.epoch_start = Some((now, jitter_us));
        let base = self.base.map_or(jitter_us, |(_, b)| b);
        let threshold = self
            .cfg
            .jitter_floor
            .as_secs_f64()
            .max(self.cfg.jitter_periods * self.period().as_secs_f64())
            * 1e6;
        let excess = f64::from(jitter_us) - f64::from(base);
        if excess > threshold && jitter_us > j0 {
            self.rate_fps = (self.rate_fps / 2.0).max(self.cfg.min_rate_fps);
            self.hold_until = now + srtt * 2;
            self.cuts += 1;
            return Epoch::Cut;
        }
        if now < self.hold_until {
            return Epoch::Hold;
        }
        let ceil = self.ceiling();
        if self.ideal_fps.is_some() {
            let next = self.rate_fps + (ceil - self.rate_fps) / 2.0;
            self.rate_fps = if ceil - next <= 0.01 * ceil {
                ceil
            } else {
                next
            };
        }
        Epoch::Probe
    }

    /// The receiver queue is full (§3.4 (2)): halve the rate.
    pub fn halve(&mut self) {
        self.rate_fps = (self.rate_fps / 2.0).max(self.cfg.min_rate_fps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Duration = Duration::from_millis(100);

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn starts_at_half_the_pair_rate_and_converges_to_it() {
        let mut r = ChannelRate::new(RateConfig::default());
        // 10 ms dispersion: ideal 100 frames/s.
        r.on_pair(Duration::from_millis(10));
        assert!((r.ideal_fps().unwrap() - 100.0).abs() < 1e-9);
        assert!((r.rate_fps() - 50.0).abs() < 1e-9);
        let mut rates = Vec::new();
        for e in 0..10u64 {
            r.on_jitter(at(e * 100), 0, RTT);
            rates.push(r.rate_fps());
        }
        // Epoch ends at 100, 200, ...: 75, 87.5, ..., then exactly 100.
        assert!((rates[1] - 75.0).abs() < 1e-9, "{rates:?}");
        assert!((rates[2] - 87.5).abs() < 1e-9, "{rates:?}");
        assert_eq!(rates[9], 100.0, "{rates:?}");
        assert!(rates.windows(2).all(|w| w[1] >= w[0]));
    }

    #[test]
    fn max_rate_caps_the_probe() {
        let mut r = ChannelRate::new(RateConfig {
            max_rate_fps: 60.0,
            ..RateConfig::default()
        });
        r.on_pair(Duration::from_millis(10));
        assert!((r.rate_fps() - 30.0).abs() < 1e-9);
        for e in 0..20u64 {
            r.on_jitter(at(e * 100), 0, RTT);
        }
        assert_eq!(r.rate_fps(), 60.0);
    }

    #[test]
    fn growing_jitter_halves_the_rate_and_flat_jitter_does_not() {
        let mut r = ChannelRate::new(RateConfig::default());
        r.on_pair(Duration::from_millis(10));
        for e in 0..10u64 {
            r.on_jitter(at(e * 100), 0, RTT);
        }
        assert_eq!(r.rate_fps(), 100.0);
        // A high but flat jitter (a constant offset) is no trend… but it is
        // above the baseline; flat means it did not grow over the epoch.
        r.on_jitter(at(1000), 3_000, RTT);
        assert_eq!(r.rate_fps(), 100.0);
        // Growing 10 ms per epoch: a cut at the first epoch end past the
        // threshold (5 ms floor; 4 periods = 40 ms at 100 frames/s).
        let mut cut_at = None;
        for e in 11..20u64 {
            if r.on_jitter(at(e * 100), ((e - 10) * 10_000) as i32, RTT) == Epoch::Cut {
                cut_at = Some(e);
                break;
            }
        }
        assert_eq!(cut_at, Some(15), "threshold 40 ms above a base of 0");
        assert_eq!(r.rate_fps(), 50.0);
        assert_eq!(r.cuts, 1);
        // Held for two epochs, then back toward the ideal.
        assert_eq!(r.on_jitter(at(1600), 50_000, RTT), Epoch::Hold);
        assert_eq!(r.on_jitter(at(1750), 40_000, RTT), Epoch::Probe);
        assert!((r.rate_fps() - 75.0).abs() < 1e-9);
    }

    #[test]
    fn losses_alone_leave_the_rate() {
        // The controller has no loss input at all: only pairs, jitter and
        // flow control move the rate. A lossy channel with a flat jitter
        // (wireless losses) keeps its rate epoch after epoch.
        let mut r = ChannelRate::new(RateConfig::default());
        r.on_pair(Duration::from_millis(10));
        for e in 0..50u64 {
            r.on_jitter(at(e * 100), if e % 2 == 0 { 800 } else { -800 }, RTT);
        }
        assert_eq!(r.rate_fps(), 100.0);
        assert_eq!(r.cuts, 0);
    }

    #[test]
    fn a_slower_pair_lowers_the_rate_once_the_fast_samples_age_out() {
        let mut r = ChannelRate::new(RateConfig::default());
        r.on_pair(Duration::from_millis(10));
        for e in 0..10u64 {
            r.on_jitter(at(e * 100), 0, RTT);
        }
        for _ in 0..PAIR_SAMPLES - 1 {
            r.on_pair(Duration::from_millis(20));
            assert_eq!(r.rate_fps(), 100.0, "largest of the latest samples");
        }
        r.on_pair(Duration::from_millis(20));
        assert!((r.rate_fps() - 50.0).abs() < 1e-9);
        r.halve();
        assert!((r.rate_fps() - 25.0).abs() < 1e-9);
    }
}
