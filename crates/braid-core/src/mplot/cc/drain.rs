//! The standing-queue drain of a path's window (`SenderConfig::
//! drain_standing_queue`): the round trip's smallest RTT sample, the
//! backlog it shows over the path's base RTT, the drain, and the check
//! that undoes a drain which emptied nothing.

use super::PathCc;
use crate::time::{Duration, Instant};

/// How long the smallest RTT sample stands for the path's base RTT
/// (BBR's `min_rtt` window): drains keep the queue short, so the path's
/// own RTT shows within it.
pub const BASE_RTT_WINDOW: Duration = Duration::from_secs(10);

/// A drain is judged ([`DrainCheck`]) only if it should lower the RTT by
/// at least this share: a smaller one is within what pacing and a window
/// that keeps growing blur, and undoing it on that noise moved the base up
/// (simulated lab/bursty: 0.853 of the sum against 0.880).
const JUDGED_DRAIN: f64 = 0.125;

/// What a drain expects: a round trip after it, the RTT falls in
/// proportion to the window (to the base when the drain took the whole
/// backlog; a drain takes at most half the window). If it stays at least
/// halfway up, the delay was not a queue this window built (a longer route after a handover, another flow's queue):
/// the base moves up to it and the window the drain took is given back,
/// as TCP undoes a cut a spurious timeout made (Eifel, RFC 3522). Without
/// this a path whose RTT rose for good would be drained every round trip
/// down to two packets.
#[derive(Clone, Copy, Debug)]
pub(super) struct DrainCheck {
    at: Instant,
    rtt_before: Duration,
    window_before: f64,
    window_after: f64,
    /// A drain that ended slow start is never undone: a window that
    /// doubles every round trip builds its own queue, and its samples lag
    /// it by a round trip, so the RTT the drain saw says little about the
    /// one to expect.
    undoable: bool,
}

impl PathCc {
    /// The bytes this path's window keeps queued at its bottleneck, by
    /// Vegas's and Veno's estimate `w (1 - RTT_min / RTT)` (Fu and Liew,
    /// "TCP Veno", IEEE JSAC 2003, §II): the window's excess over what the
    /// uncongested RTT carries. `RTT_min` is the path's base RTT (its
    /// smallest sample, moved up when a drain shows that the delay above
    /// it is not a queue of ours, `DrainCheck`); `RTT` is the smallest sample of the last
    /// round trip ([`PathCc::on_round`]), not the smoothed RTT: a queue
    /// that stands for a whole round raises every sample of it, while a
    /// delay spike of the hosts or the link raises only some, and the
    /// smoothed RTT lags a cut by several rounds (so a random loss just
    /// after a cut would be read as the queue the cut already drained).
    /// The smoothed RTT before the first completed round; zero before an
    /// RTT sample.
    pub fn backlog(&self) -> f64 {
        match self.base.map(|(b, _)| b).or(self.rtt.min_rtt()) {
            Some(min) if self.rtt.has_samples() => {
                let rtt = self.last_round_min.unwrap_or_else(|| self.srtt());
                let rtt = rtt.as_secs_f64();
                if rtt <= 0.0 {
                    return 0.0;
                }
                (self.cwnd * (1.0 - min.as_secs_f64() / rtt)).max(0.0)
            }
            _ => 0.0,
        }
    }

    /// Feeds an RTT sample taken at `now` to the round-trip tracker; a
    /// round lasts one smoothed RTT. Returns true when this sample closed
    /// a round, so [`backlog`](Self::backlog) has a new estimate.
    pub fn on_round(&mut self, now: Instant, rtt: Duration) -> bool {
        match self.base {
            Some((b, at)) if rtt > b && now.saturating_since(at) < BASE_RTT_WINDOW => {}
            _ => self.base = Some((rtt, now)),
        }
        self.round_min = Some(self.round_min.map_or(rtt, |m| m.min(rtt)));
        let start = *self.round_start.get_or_insert(now);
        if now.saturating_since(start) < self.srtt() {
            return false;
        }
        self.last_round_min = self.round_min.take();
        self.round_start = Some(now);
        self.check_drain(now);
        true
    }

    /// Whether the last drain emptied a queue ([`DrainCheck`]), once a
    /// round with samples of packets sent after it has closed.
    fn check_drain(&mut self, now: Instant) {
        let (Some(c), Some(m)) = (self.drain_check, self.last_round_min) else {
            return;
        };
        // The packets in flight at the drain leave the queue over the RTT
        // they met (`rtt_before`, which the smoothed RTT may still lag),
        // and only packets sent after them show the drained queue: judge
        // on a round that closes two of those RTTs after the drain.
        if now.saturating_since(c.at) < c.rtt_before.max(self.srtt()) * 2 {
            return;
        }
        self.drain_check = None;
        let before = c.rtt_before.as_secs_f64();
        let expected = before * c.window_after / c.window_before.max(1.0);
        let judged = expected <= before * (1.0 - JUDGED_DRAIN);
        if c.undoable && judged && m.as_secs_f64() >= (before + expected) / 2.0 {
            self.base = Some((m, now));
            self.cwnd = self.cwnd.max(c.window_before);
            self.ssthresh = self.ssthresh.max(self.cwnd);
            self.drains_undone += 1;
        }
    }

    /// A queue of at least `threshold` bytes stood through the last round
    /// (by [`backlog`](Self::backlog)) on a path that shows congestion by
    /// delay: drain it. The window drops by the backlog, to what the
    /// uncongested RTT carries (`w RTT_min / RTT`, never below half), so
    /// the path stays full while its queue empties: a queue that marks
    /// early and a halving would leave the path short for many rounds, as
    /// with the marking threshold at half a one-BDP queue in the lab.
    /// Slow start ends there, as HyStart ends it on a delay increase. At
    /// most once per smoothed RTT, as any cut. Returns whether it cut.
    pub fn on_standing_queue(&mut self, now: Instant, threshold: f64) -> bool {
        let backlog = self.backlog();
        if backlog < threshold {
            return false;
        }
        let before = self.cwnd;
        let undoable = !self.in_slow_start();
        if !self.reduce(now, (self.cwnd - backlog).max(self.cwnd / 2.0)) {
            return false;
        }
        // The RTT the drain is judged against: the latest sample when it
        // is above the round's minimum, as in slow start, where a round's
        // minimum is from its start and the queue has grown since.
        // A drain pending judgement stays the one judged.
        let rtt_before = self.last_round_min.max(self.rtt.latest());
        if let (None, Some(rtt_before)) = (self.drain_check, rtt_before) {
            self.drain_check = Some(DrainCheck {
                at: now,
                rtt_before,
                window_before: before,
                window_after: self.cwnd,
                undoable,
            });
        }
        self.delay_cuts += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mplot::cc::tests::warmed;
    use crate::mplot::cc::CcConfig;

    #[test]
    fn backlog_is_the_windows_excess_over_the_base_rtt() {
        assert_eq!(PathCc::new(CcConfig::default()).backlog(), 0.0);
        let mut cc = warmed(20);
        // At the base RTT nothing is queued.
        assert!(cc.backlog() < 1.0, "{}", cc.backlog());
        for _ in 0..60 {
            cc.on_sent(750);
            cc.on_ack(750, Some(Duration::from_millis(80)));
        }
        // SRTT near 80 ms over a 40 ms base: about half the window waits.
        let b = cc.backlog() / cc.window();
        assert!((0.4..0.51).contains(&b), "{b}");
    }

    /// A window of `w` bytes acknowledged at RTT `rtt` for `rounds` whole
    /// rounds from `t`; returns the time after them.
    fn rounds(cc: &mut PathCc, mut t: Instant, rtt: Duration, rounds: u32) -> Instant {
        for _ in 0..rounds {
            for _ in 0..10 {
                cc.on_sent(750);
                cc.on_ack(750, Some(rtt));
                cc.on_round(t, rtt);
                t += rtt / 10;
            }
        }
        t
    }

    /// A path at `base` out of slow start (a loss cut it; a drain in slow
    /// start is never undone), a few rounds on; returns it and the time.
    fn avoiding_congestion(base: Duration) -> (PathCc, Instant) {
        let mut cc = PathCc::new(CcConfig::default());
        let t = rounds(&mut cc, Instant::from_millis(0), base, 4);
        assert!(cc.on_loss(t, t));
        let t = rounds(&mut cc, t, base, 2);
        (cc, t)
    }

    #[test]
    fn backlog_reads_the_rounds_smallest_sample_not_a_spike() {
        let mut cc = PathCc::new(CcConfig::default());
        let base = Duration::from_millis(40);
        let t = rounds(&mut cc, Instant::from_millis(0), base, 3);
        assert!(cc.backlog() < 1.0, "{}", cc.backlog());
        // One late sample per round (a host's hiccup) lifts the smoothed
        // RTT but not the round's minimum: no queue.
        let mut t = t;
        for _ in 0..4 {
            for i in 0..10 {
                let r = if i == 0 { base * 3 } else { base };
                cc.on_ack(750, Some(r));
                cc.on_round(t, r);
                t += base / 10;
            }
        }
        assert!(cc.srtt() > base);
        assert!(cc.backlog() < 1.0, "{}", cc.backlog());
        // A queue that stands through a round raises every sample of it.
        rounds(&mut cc, t, base * 2, 3);
        let b = cc.backlog() / cc.window();
        assert!((0.45..0.55).contains(&b), "{b}");
    }

    #[test]
    fn a_standing_queue_is_drained_once_per_rtt_never_below_half() {
        let mut cc = PathCc::new(CcConfig::default());
        let base = Duration::from_millis(40);
        let t = rounds(&mut cc, Instant::from_millis(0), base, 4);
        // 10 % above the base for a round: a tenth of the window queued.
        let t = rounds(&mut cc, t, base * 11 / 10, 3);
        let w = cc.window();
        let backlog = cc.backlog();
        assert!(backlog > 0.05 * w && backlog < 0.15 * w, "{backlog} of {w}");
        assert!(
            !cc.on_standing_queue(t, backlog * 2.0),
            "below the threshold"
        );
        assert!(cc.on_standing_queue(t, 1000.0));
        assert!((cc.window() - (w - backlog)).abs() < 1e-6);
        assert!(!cc.in_slow_start(), "a drain ends slow start");
        assert!(!cc.on_standing_queue(t + base / 2, 1000.0), "once per RTT");
        assert_eq!(cc.delay_cuts, 1);
        // Three times the base: two thirds queued, but a drain halves at
        // most.
        let mut cc = PathCc::new(CcConfig::default());
        let t = rounds(&mut cc, Instant::from_millis(0), base, 4);
        let t = rounds(&mut cc, t, base * 3, 3);
        let w = cc.window();
        assert!(cc.backlog() > 0.6 * w);
        assert!(cc.on_standing_queue(t, 1000.0));
        assert_eq!(cc.window(), w / 2.0);
        assert_eq!(cc.ce_cuts, 0, "drains are counted apart from marks");
    }

    #[test]
    fn a_drain_that_empties_nothing_is_undone_and_the_base_moves_up() {
        let base = Duration::from_millis(40);
        let (mut cc, mut t) = avoiding_congestion(base);
        // The route gets 40 ms longer for good: every round reads as a
        // standing queue of half the window until a drain shows it is not.
        let w = cc.window();
        let mut drains = Vec::new();
        for _ in 0..12 {
            t = rounds(&mut cc, t, base * 2, 1);
            drains.push(cc.on_standing_queue(t, 1000.0));
        }
        // Drained each round trip until the first drain was judged (two
        // RTTs later), then undone: no drain after that.
        assert_eq!(cc.drains_undone, 1, "{drains:?}");
        assert!(drains[..4].iter().any(|&d| d), "{drains:?}");
        assert!(drains[6..].iter().all(|&d| !d), "{drains:?}");
        assert!(cc.window() >= w, "{} < {w}", cc.window());
        assert!(cc.backlog() < 1000.0, "{}", cc.backlog());
        // A queue of ours on top of the new base is still drained.
        let t = rounds(&mut cc, t, base * 5 / 2, 3);
        assert!(cc.on_standing_queue(t, 1000.0));
    }

    #[test]
    fn the_base_rtt_follows_a_small_lasting_rise_within_its_window() {
        let base = Duration::from_millis(40);
        let (mut cc, mut t) = avoiding_congestion(base);
        // 4 ms more for good: too little for a drain to be judged, so
        // drains go on until the old base leaves its window.
        let rise = base + Duration::from_millis(4);
        let end = t + BASE_RTT_WINDOW + Duration::from_secs(2);
        let mut last_drain = t;
        while t < end {
            t = rounds(&mut cc, t, rise, 1);
            if cc.on_standing_queue(t, 1000.0) {
                last_drain = t;
            }
        }
        assert!(cc.delay_cuts > 0);
        assert_eq!(cc.drains_undone, 0);
        assert!(
            last_drain <= t - Duration::from_secs(2) + Duration::from_millis(200),
            "still draining at {last_drain:?} (end {t:?})"
        );
        assert!(cc.backlog() < 1.0, "{}", cc.backlog());
    }
}
