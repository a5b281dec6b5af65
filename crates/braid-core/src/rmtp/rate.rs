//! One channel's sending rate (§3.1, §3.2; `SPECS.md` §4.1).
//!
//! **Start.** The channel is probed with a packet pair; the dispersion
//! τ_pp of the pair is the smallest send interval that causes no queueing,
//! so the *ideal* rate is `1/τ_pp` frames per second. The channel starts at
//! **half** of it, "because the measurement may be wrong". Pairs are
//! repeated while the channel runs; the ideal rate is the **median** of the
//! latest [`PAIR_SAMPLES`]. In a simulation cross traffic can only stretch
//! a pair, and the largest rate would be the least disturbed sample; on
//! real sockets the receiver's timer also *shrinks* pairs: a receiver that
//! was asleep or busy when the first frame came reads both frames in one
//! batch, microseconds apart. In the lab (`lab/two-equal.toml`, 10 Mbit/s
//! paths) the largest of four samples read 90-280 Mbit/s for seconds at a
//! time, and the channel was paced at up to 9 × its path; the median
//! ignores a minority of such samples either way.
//!
//! **Rate-update rule — braid's design; the supplied text of the paper
//! breaks off before it (`SPECS.md` §4: "VAGUE (missing text)").** Once per
//! smoothed RTT (an *epoch*), on an acknowledgement:
//! - *congestion* — the smallest long-run jitter of the epoch exceeds the
//!   baseline (the smallest value seen in the last [`BASE_WINDOW`]) by
//!   more than `J = max(jitter_floor, jitter_periods · period)` **and**
//!   that epoch minimum grew since the last epoch (the paper's "steadily
//!   growing"): the rate is **halved** (never below `min_rate_fps`) and
//!   held for two epochs while the queue drains. The epoch's *minimum* is
//!   read, not its latest value, because a receiver that reads a frame
//!   late (asleep, descheduled) only ever makes it look later: the minimum
//!   is the standing queue, the rest is the receiver's own timer noise,
//!   which on a loaded host is several milliseconds and read as congestion;
//! - otherwise the rate closes **half the gap** to its target (at most
//!   `max_rate_fps`, the negotiated *maximum rate*: "probing stops there"),
//!   and snaps to it within 1 %: from half it is at 3/4 after one epoch,
//!   7/8 after two, and at the ideal after seven;
//! - the target is the ideal rate until the first cut. A cut shows that
//!   the rate it cut was above what the channel carries, whatever the
//!   pairs said; the target becomes a *plateau* of `plateau` (7/8) of that
//!   rate, reached by half gaps, and above it the rate grows by only
//!   `plateau_step` (1/32) of the ideal per epoch up to the ideal. Without
//!   it a pair estimate a few percent above the path (the lab's read 4-9 %
//!   high) brought the rate back over the path within a few epochs of
//!   every cut, and the channel halved four times a second;
//! - a lower ideal rate (a new pair sample) lowers the rate at once.
//!
//! **ECN.** A Congestion Experienced mark echoed by the receiver
//! ([`ChannelRate::on_ce`]) is congestion without waiting for the jitter
//! trend: the same cut, at most once per epoch (one cut per queue
//! overflow, as RFC 3168 asks of TCP). Sockets that do not read the mark
//! never call it.
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

/// Pair samples kept for the ideal rate (their median).
pub const PAIR_SAMPLES: usize = 5;
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
    /// After a cut, the rate returns quickly to this fraction of the rate
    /// that was cut.
    pub plateau: f64,
    /// Above the plateau, growth per epoch as a fraction of the ideal rate.
    pub plateau_step: f64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            max_rate_fps: f64::INFINITY,
            min_rate_fps: 1.0,
            jitter_floor: Duration::from_millis(5),
            jitter_periods: 4.0,
            plateau: 7.0 / 8.0,
            plateau_step: 1.0 / 32.0,
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
    /// Start of the epoch and the previous epoch's smallest jitter.
    epoch_start: Option<(Instant, i32)>,
    /// The smallest jitter of the current epoch.
    epoch_min: i32,
    base: Option<(Instant, i32)>,
    hold_until: Instant,
    last_cut: Option<Instant>,
    /// Where half-gap probing stops after a cut (see the module doc).
    plateau_fps: Option<f64>,
    /// Congestion cuts so far (jitter trend or ECN).
    pub cuts: u64,
    /// Of those, cuts for an ECN mark.
    pub ce_cuts: u64,
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
            epoch_min: i32::MAX,
            base: None,
            hold_until: Instant::ZERO,
            last_cut: None,
            plateau_fps: None,
            cuts: 0,
            ce_cuts: 0,
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
        let mut v: Vec<f64> = self.pairs.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        // The median; of an even count, the lower middle (the slower).
        self.ideal_fps = Some(v[(v.len() - 1) / 2]);
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
        let Some((start, prev_min)) = self.epoch_start else {
            self.epoch_start = Some((now, jitter_us));
            return Epoch::Running;
        };
        self.epoch_min = self.epoch_min.min(jitter_us);
        if now.saturating_since(start) < srtt.max(Duration::from_millis(1)) {
            return Epoch::Running;
        }
        let m = std::mem::replace(&mut self.epoch_min, i32::MAX);
        self.epoch_start = Some((now, m));
        let base = self.base.map_or(m, |(_, b)| b);
        let threshold = self
            .cfg
            .jitter_floor
            .as_secs_f64()
            .max(self.cfg.jitter_periods * self.period().as_secs_f64())
            * 1e6;
        let excess = f64::from(m) - f64::from(base);
        if excess > threshold && m > prev_min {
            self.cut(now, srtt);
            return Epoch::Cut;
        }
        if now < self.hold_until {
            return Epoch::Hold;
        }
        let ceil = self.ceiling();
        if self.ideal_fps.is_some() {
            let target = self.plateau_fps.map_or(ceil, |p| p.min(ceil));
            self.rate_fps = if self.rate_fps >= target * 0.99 {
                // At the plateau (or the ideal): creep toward the ideal.
                (self.rate_fps.max(target) + self.cfg.plateau_step * ceil).min(ceil)
            } else {
                let next = self.rate_fps + (target - self.rate_fps) / 2.0;
                if target - next <= 0.01 * target {
                    target
                } else {
                    next
                }
            };
        }
        Epoch::Probe
    }

    /// Congestion: halve the rate, hold it two epochs, and remember the
    /// plateau to return to.
    fn cut(&mut self, now: Instant, srtt: Duration) {
        self.plateau_fps = Some((self.rate_fps * self.cfg.plateau).max(self.cfg.min_rate_fps));
        self.rate_fps = (self.rate_fps / 2.0).max(self.cfg.min_rate_fps);
        self.hold_until = now + srtt * 2;
        self.last_cut = Some(now);
        self.cuts += 1;
    }

    /// The receiver echoed a Congestion Experienced mark (RFC 3168) on a
    /// frame of this channel, at `now`: the jitter rule's cut, at once,
    /// unless the channel was cut less than an epoch (`srtt`) ago, so
    /// that the marks of one queue build-up cut once.
    pub fn on_ce(&mut self, now: Instant, srtt: Duration) -> Epoch {
        if self
            .last_cut
            .is_some_and(|t| now.saturating_since(t) < srtt)
        {
            return Epoch::Hold;
        }
        self.cut(now, srtt);
        self.ce_cuts += 1;
        // A new epoch starts after the cut: the jitter trend is read
        // afresh.
        if let Some((_, prev)) = self.epoch_start {
            self.epoch_start = Some((now, prev));
        }
        Epoch::Cut
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
        // Held for two epochs, then back by half gaps to the plateau, 7/8
        // of the rate that was cut (87.5), not to the ideal.
        assert_eq!(r.on_jitter(at(1600), 50_000, RTT), Epoch::Hold);
        assert_eq!(r.on_jitter(at(1750), 40_000, RTT), Epoch::Probe);
        assert!((r.rate_fps() - 68.75).abs() < 1e-9, "{}", r.rate_fps());
        let mut rates = Vec::new();
        for e in 18..40u64 {
            assert_eq!(r.on_jitter(at(e * 100 + 50), 40_000, RTT), Epoch::Probe);
            rates.push(r.rate_fps());
        }
        let at_plateau = rates.iter().position(|&x| x == 87.5).expect("reaches 87.5");
        assert!(at_plateau <= 6, "{rates:?}");
        // Above it, 1/32 of the ideal (3.125 frames/s) per epoch, up to it.
        assert!((rates[at_plateau + 1] - 90.625).abs() < 1e-9, "{rates:?}");
        assert_eq!(*rates.last().unwrap(), 100.0, "{rates:?}");
        assert!(rates.windows(2).all(|w| w[1] >= w[0]), "{rates:?}");
    }

    #[test]
    fn late_reads_are_not_a_trend_but_a_standing_queue_is() {
        let mut r = ChannelRate::new(RateConfig::default());
        r.on_pair(Duration::from_millis(10));
        // Ten ACKs an epoch; every other frame read up to 30 ms late (a
        // busy receiver), the minimum flat at 0: never a cut.
        let mut t = 0;
        for e in 0..40u64 {
            for k in 0..10u64 {
                t = e * 100 + k * 10;
                let late = if k % 2 == 1 {
                    (e % 4 * 10_000) as i32
                } else {
                    0
                };
                assert_ne!(r.on_jitter(at(t), late, RTT), Epoch::Cut, "epoch {e}");
            }
        }
        assert_eq!(r.rate_fps(), 100.0);
        // A queue that grows 2 ms per epoch under the same noise is cut
        // once the minimum stands 5 ms... 40 ms (4 periods) above the base.
        let mut cut = None;
        for e in 1..40u64 {
            for k in 0..10u64 {
                let q = (e * 2_000 + k * 200) as i32;
                let late = if k % 2 == 1 { 30_000 } else { 0 };
                if r.on_jitter(at(t + e * 100 + k * 10), q + late, RTT) == Epoch::Cut {
                    cut.get_or_insert(e);
                }
            }
        }
        assert_eq!(cut, Some(21), "the first epoch whose minimum is past 40 ms");
    }

    #[test]
    fn a_ce_mark_cuts_once_per_epoch() {
        let mut r = ChannelRate::new(RateConfig::default());
        r.on_pair(Duration::from_millis(10));
        for e in 0..10u64 {
            r.on_jitter(at(e * 100), 0, RTT);
        }
        assert_eq!(r.rate_fps(), 100.0);
        assert_eq!(r.on_ce(at(1005), RTT), Epoch::Cut);
        assert_eq!(r.rate_fps(), 50.0);
        // The rest of the same build-up's marks cut nothing.
        assert_eq!(r.on_ce(at(1050), RTT), Epoch::Hold);
        assert_eq!(r.on_ce(at(1104), RTT), Epoch::Hold);
        assert_eq!(r.rate_fps(), 50.0);
        // A mark an epoch later is a new event.
        assert_eq!(r.on_ce(at(1106), RTT), Epoch::Cut);
        assert_eq!(r.rate_fps(), 25.0);
        assert_eq!((r.cuts, r.ce_cuts), (2, 2));
        // No mark and a flat jitter: back up to the plateau and on.
        for e in 12..60u64 {
            r.on_jitter(at(e * 100), 0, RTT);
        }
        assert_eq!(r.rate_fps(), 100.0);
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
    fn the_ideal_is_the_median_pair_so_batched_reads_do_not_inflate_it() {
        let mut r = ChannelRate::new(RateConfig::default());
        for _ in 0..3 {
            r.on_pair(Duration::from_millis(10));
        }
        for e in 0..10u64 {
            r.on_jitter(at(e * 100), 0, RTT);
        }
        assert_eq!(r.rate_fps(), 100.0);
        // Two frames read in one batch (5 us apart: 200,000 frames/s) and
        // one pair stretched by a late read: the median stays at 100.
        r.on_pair(Duration::from_micros(5));
        r.on_pair(Duration::from_millis(35));
        assert_eq!(r.ideal_fps(), Some(100.0));
        assert_eq!(r.rate_fps(), 100.0);
        // A slower path shows in most of the latest samples: the ideal and
        // the rate fall at once.
        for _ in 0..3 {
            r.on_pair(Duration::from_millis(20));
        }
        assert!((r.ideal_fps().unwrap() - 50.0).abs() < 1e-9);
        assert!((r.rate_fps() - 50.0).abs() < 1e-9);
        r.halve();
        assert!((r.rate_fps() - 25.0).abs() < 1e-9);
    }
}
