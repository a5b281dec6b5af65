//! Per-path congestion control of MPLOT (§II-C; `SPECS.md` §2.3).
//!
//! Each path has its own window, RTT estimator and retransmission timer;
//! reliability is the aggregate's business (block FEC), so a path's window
//! reacts only to congestion it is told about:
//! - an ECN-Echo halves the window, at most once per smoothed RTT (RFC 3168
//!   §6.1.2: one reduction per window of data);
//! - a loss without a mark does **not** shrink it (on a lossy wireless path
//!   a loss says nothing about the queue);
//! - the increase is divided by the path's acceptance rate `1 - p̂_i`, so a
//!   path that loses a fraction `p̂_i` of its packets still grows as fast in
//!   delivered packets as a clean one: `Δw = s / (1 - p̂)` per acknowledged
//!   packet of `s` bytes in slow start, `Δw = s² / (w (1 - p̂))` in
//!   congestion avoidance (the reading `SPECS.md` suggests, per ACK);
//! - a retransmission timeout is TCP's (window to one packet, slow start,
//!   exponential backoff); there is no fast retransmit.
//!
//! Windows are in bytes (packets vary between 250 and 750 bytes per block,
//! §III-C), so eq 12 has a byte budget to divide.

use crate::fec::mplot::MAX_LOSS_ESTIMATE;
use crate::path::rtt::RttEstimator;
use crate::time::{Duration, Instant};

/// Limits of one path's controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcConfig {
    /// The packet size windows are counted against for their floor and the
    /// initial window (the largest MPLOT size, 750 B).
    pub mss: usize,
    /// Initial window, in packets of `mss`.
    pub initial_window: usize,
    /// Window ceiling in bytes (ns-2's `window_`; also bounds the sender's
    /// in-flight records).
    pub max_window: usize,
    /// RTT assumed before the first sample.
    pub initial_rtt: Duration,
    /// Lower bound of the RTO (RFC 6298 2.4 says 1 s; ns-2 and Linux use
    /// 200 ms, which the simulations follow).
    pub min_rto: Duration,
    pub max_rto: Duration,
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig {
            mss: 750,
            initial_window: 2,
            max_window: 4 << 20,
            initial_rtt: Duration::from_millis(333),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
        }
    }
}

/// One path's window, RTT and timer state.
#[derive(Clone, Debug)]
pub struct PathCc {
    cfg: CcConfig,
    /// `w_i`, bytes.
    cwnd: f64,
    ssthresh: f64,
    rtt: RttEstimator,
    /// Consecutive timeouts: the RTO is doubled this many times.
    backoff: u32,
    /// When the window was last halved for a mark.
    last_cut: Option<Instant>,
    /// `p̂_i`, the smoothed loss of the path (eq 2 EWMA), kept by the sender.
    pub loss: f64,
    /// Bytes sent on the path and not yet acknowledged or deemed lost.
    pub in_flight: usize,
    /// Number of window halvings (ECN, or loss with `halve_on_loss`) so far.
    pub ce_cuts: u64,
    /// An ECN-Echo has come back for this path: its bottleneck marks, so
    /// congestion shows as marks there (see `SenderConfig::ecn_trust`).
    pub ce_seen: bool,
    /// Number of timeouts so far.
    pub timeouts: u64,
    /// Timeouts undone because a packet sent before them was acknowledged.
    pub spurious_timeouts: u64,
    /// The window before the first of the latest run of timeouts, until a
    /// packet sent after it is acknowledged ([`PathCc::on_late_ack`]).
    timeout_undo: Option<TimeoutUndo>,
    /// Number of drains for a standing queue ([`PathCc::on_round`]).
    pub delay_cuts: u64,
    /// The current round: when it began and its smallest RTT sample.
    round_start: Option<Instant>,
    round_min: Option<Duration>,
    /// The smallest RTT sample of the last completed round.
    last_round_min: Option<Duration>,
    /// The path's RTT without a queue of ours, and when it was last seen:
    /// the smallest sample of the last [`BASE_RTT_WINDOW`] (a route that
    /// got longer for good is followed after that long), moved up at once
    /// when a drain shows that the delay above it is not ours
    /// ([`DrainCheck`]).
    base: Option<(Duration, Instant)>,
    /// The last drain, until a round shows whether it emptied a queue.
    drain_check: Option<DrainCheck>,
    /// Drains undone because the delay stayed (the path's own delay rose).
    pub drains_undone: u64,
}

/// What a timeout took, kept until it is known whether the timeout was
/// spurious.
#[derive(Clone, Copy, Debug)]
struct TimeoutUndo {
    at: Instant,
    cwnd: f64,
    ssthresh: f64,
}

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
struct DrainCheck {
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
    pub fn new(cfg: CcConfig) -> Self {
        PathCc {
            cwnd: (cfg.initial_window * cfg.mss) as f64,
            ssthresh: cfg.max_window as f64,
            rtt: RttEstimator::new(cfg.initial_rtt),
            backoff: 0,
            last_cut: None,
            loss: 0.0,
            in_flight: 0,
            ce_cuts: 0,
            ce_seen: false,
            timeouts: 0,
            delay_cuts: 0,
            spurious_timeouts: 0,
            timeout_undo: None,
            round_start: None,
            round_min: None,
            last_round_min: None,
            base: None,
            drain_check: None,
            drains_undone: 0,
            cfg,
        }
    }

    /// `w_i` in bytes.
    pub fn window(&self) -> f64 {
        self.cwnd
    }

    /// The bytes this path's window keeps queued at its bottleneck, by
    /// Vegas's and Veno's estimate `w (1 - RTT_min / RTT)` (Fu and Liew,
    /// "TCP Veno", IEEE JSAC 2003, §II): the window's excess over what the
    /// uncongested RTT carries. `RTT_min` is the path's base RTT (its
    /// smallest sample, moved up when a drain shows that the delay above
    /// it is not a queue of ours, [`DrainCheck`]); `RTT` is the smallest sample of the last
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
        if let Some(t) = self.last_cut {
            if now.saturating_since(t) < self.srtt() {
                return false;
            }
        }
        let floor = (2 * self.cfg.mss) as f64;
        let before = self.cwnd;
        let undoable = !self.in_slow_start();
        self.cwnd = (self.cwnd - backlog).max(self.cwnd / 2.0).max(floor);
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
        self.ssthresh = self.cwnd;
        self.last_cut = Some(now);
        self.delay_cuts += 1;
        true
    }

    /// Whether the window is below `ssthresh` (slow start).
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Whether a packet of `size` bytes fits the window now.
    pub fn can_send(&self, size: usize) -> bool {
        (self.in_flight + size) as f64 <= self.cwnd.max(size as f64)
    }

    /// Smoothed RTT.
    pub fn srtt(&self) -> Duration {
        self.rtt.srtt()
    }

    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The RTO with backoff (RFC 6298 2.3–2.5).
    pub fn rto(&self) -> Duration {
        let base = self
            .rtt
            .rto(Duration::from_millis(1), self.cfg.min_rto, self.cfg.max_rto);
        base.saturating_mul(1u32 << self.backoff.min(16))
            .min(self.cfg.max_rto)
    }

    /// A packet of `size` bytes sent on this path.
    pub fn on_sent(&mut self, size: usize) {
        self.in_flight += size;
    }

    /// A packet of `size` bytes left the flight without an acknowledgement
    /// (deemed lost). The window is not touched (§II-C).
    pub fn on_lost(&mut self, size: usize) {
        self.in_flight = self.in_flight.saturating_sub(size);
    }

    /// A packet of `size` bytes was acknowledged; `rtt` is its sample, taken
    /// from the send time of a sequence number that is never reused, so no
    /// Karn ambiguity arises.
    pub fn on_ack(&mut self, size: usize, rtt: Option<Duration>) {
        self.in_flight = self.in_flight.saturating_sub(size);
        self.on_delivered(size, rtt);
    }

    /// A packet of `size` bytes that already left the window (released
    /// when its block decoded) was acknowledged: the RTT sample and the
    /// window's growth of [`on_ack`](Self::on_ack), without leaving the
    /// flight twice.
    pub fn on_delivered(&mut self, size: usize, rtt: Option<Duration>) {
        if let Some(r) = rtt {
            self.rtt.update(r);
        }
        self.backoff = 0;
        let accept = 1.0 - self.loss.clamp(0.0, MAX_LOSS_ESTIMATE);
        let s = size as f64;
        if self.cwnd < self.ssthresh {
            self.cwnd += s / accept;
        } else {
            self.cwnd += s * s / (self.cwnd * accept);
        }
        self.cwnd = self.cwnd.min(self.cfg.max_window as f64);
    }

    /// The receiver echoed a CE mark for this path: halve the window unless
    /// it was halved less than one smoothed RTT ago. Returns whether it cut.
    pub fn on_ce(&mut self, now: Instant) -> bool {
        self.ce_seen = true;
        self.cut(now)
    }

    /// Halve the window unless it was halved less than one smoothed RTT ago.
    fn cut(&mut self, now: Instant) -> bool {
        if let Some(t) = self.last_cut {
            if now.saturating_since(t) < self.srtt() {
                return false;
            }
        }
        self.cwnd = (self.cwnd / 2.0).max((2 * self.cfg.mss) as f64);
        self.ssthresh = self.cwnd;
        self.last_cut = Some(now);
        self.ce_cuts += 1;
        true
    }

    /// A packet sent at `sent_at` was deemed lost on a path without ECN
    /// (`SenderConfig::halve_on_loss`): the loss stands for a mark, unless
    /// the packet left before the last cut, whose congestion that cut
    /// already answered. Returns whether it cut.
    pub fn on_loss(&mut self, now: Instant, sent_at: Instant) -> bool {
        if self.last_cut.is_some_and(|t| sent_at <= t) {
            return false;
        }
        self.cut(now)
    }

    /// The path's retransmission timer fired: TCP's response (window to one
    /// packet, `ssthresh` to half the window, slow start, doubled RTO).
    /// Everything in flight is deemed lost by the caller.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.timeout_undo.is_none() {
            self.timeout_undo = Some(TimeoutUndo {
                at: now,
                cwnd: self.cwnd,
                ssthresh: self.ssthresh,
            });
        }
        self.ssthresh = (self.cwnd / 2.0).max((2 * self.cfg.mss) as f64);
        self.cwnd = self.cfg.mss as f64;
        self.backoff = (self.backoff + 1).min(16);
        self.in_flight = 0;
        self.timeouts += 1;
    }

    /// A packet sent at `sent_at`, which a timeout had deemed lost, was
    /// acknowledged after `rtt`. Sequence numbers are never reused, so
    /// this is the packet itself, late, not a resend: if it left before
    /// the timeout, the timeout was spurious, and the window and
    /// threshold it took are given back (Eifel, RFC 3522 and RFC 4015's
    /// response), the backoff cleared and the sample kept. Without this
    /// a path farther than the first RTO (1 s before any sample: a
    /// geostationary satellite's 1.2 s) timed out on its first window and
    /// went on from two packets in congestion avoidance, one packet per
    /// 1.2 s round trip (lab/geo in simulation: the far path carried
    /// 0.2-0.5 of its 10 Mbit/s over 60 s).
    pub fn on_late_ack(&mut self, sent_at: Instant, rtt: Duration) {
        let Some(u) = self.timeout_undo else {
            return;
        };
        if sent_at >= u.at {
            return;
        }
        self.timeout_undo = None;
        self.rtt.update(rtt);
        self.backoff = 0;
        self.cwnd = self.cwnd.max(u.cwnd);
        self.ssthresh = self.ssthresh.max(u.ssthresh);
        self.spurious_timeouts += 1;
    }

    /// A packet sent at `sent_at` was acknowledged in time: once one sent
    /// after the last timeout is, that timeout stands.
    pub fn settle_timeout(&mut self, sent_at: Instant) {
        if self.timeout_undo.is_some_and(|u| sent_at >= u.at) {
            self.timeout_undo = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ce_halves_once_per_rtt() {
        let mut cc = PathCc::new(CcConfig::default());
        for _ in 0..40 {
            cc.on_sent(750);
            cc.on_ack(750, Some(Duration::from_millis(40)));
        }
        let w = cc.window();
        let t0 = Instant::from_millis(1000);
        assert!(cc.on_ce(t0));
        assert_eq!(cc.window(), w / 2.0);
        // A second echo within the RTT does nothing.
        assert!(!cc.on_ce(t0 + Duration::from_millis(20)));
        assert_eq!(cc.window(), w / 2.0);
        assert!(cc.on_ce(t0 + Duration::from_millis(60)));
        assert_eq!(cc.window(), w / 4.0);
    }

    #[test]
    fn a_loss_sent_before_the_last_cut_does_not_cut_again() {
        let mut cc = PathCc::new(CcConfig::default());
        for _ in 0..40 {
            cc.on_sent(750);
            cc.on_ack(750, Some(Duration::from_millis(40)));
        }
        let w = cc.window();
        let t0 = Instant::from_millis(1000);
        assert!(cc.on_loss(t0, t0 - Duration::from_millis(30)));
        // Sent before the cut, found a whole RTT later: the same event.
        let later = t0 + Duration::from_millis(100);
        assert!(!cc.on_loss(later, t0 - Duration::from_millis(5)));
        assert_eq!(cc.window(), w / 2.0);
        // Sent after the cut: a new event.
        assert!(cc.on_loss(later, t0 + Duration::from_millis(10)));
        assert_eq!(cc.window(), w / 4.0);
        // Losses are not marks.
        assert!(!cc.ce_seen);
        cc.on_ce(later + Duration::from_millis(1));
        assert!(cc.ce_seen);
    }

    #[test]
    fn loss_does_not_shrink_and_increase_is_scaled() {
        let mut a = PathCc::new(CcConfig::default());
        let mut b = PathCc::new(CcConfig::default());
        b.loss = 0.5;
        a.on_sent(750);
        a.on_lost(750);
        assert_eq!(a.window(), 1500.0);
        assert_eq!(a.in_flight, 0);
        a.on_ack(750, None);
        b.on_ack(750, None);
        // Slow start: +s and +s/(1-p).
        assert_eq!(a.window(), 2250.0);
        assert_eq!(b.window(), 3000.0);
        // Congestion avoidance after a cut.
        a.on_ce(Instant::ZERO);
        let w = a.window();
        a.on_ack(750, None);
        assert!((a.window() - (w + 750.0 * 750.0 / w)).abs() < 1e-9);
    }

    #[test]
    fn backlog_is_the_windows_excess_over_the_base_rtt() {
        let mut cc = PathCc::new(CcConfig::default());
        assert_eq!(cc.backlog(), 0.0);
        for _ in 0..20 {
            cc.on_sent(750);
            cc.on_ack(750, Some(Duration::from_millis(40)));
        }
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
        let t = rounds(&mut cc, t, base * 2, 3);
        let b = cc.backlog() / cc.window();
        assert!((0.45..0.55).contains(&b), "{b}");
        let _ = t;
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
        let mut cc = PathCc::new(CcConfig::default());
        let base = Duration::from_millis(40);
        let t = rounds(&mut cc, Instant::from_millis(0), base, 4);
        // Out of slow start (a drain there is never undone).
        assert!(cc.on_loss(t, t));
        let mut t = rounds(&mut cc, t, base, 2);
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
        let mut cc = PathCc::new(CcConfig::default());
        let base = Duration::from_millis(40);
        let t = rounds(&mut cc, Instant::from_millis(0), base, 4);
        assert!(cc.on_loss(t, t));
        let mut t = rounds(&mut cc, t, base, 2);
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

    #[test]
    fn a_timeout_is_undone_when_a_packet_sent_before_it_is_acknowledged() {
        let mut cc = PathCc::new(CcConfig::default());
        for _ in 0..20 {
            cc.on_sent(750);
            cc.on_ack(750, Some(Duration::from_millis(40)));
        }
        let (w, t) = (cc.window(), Instant::from_millis(1000));
        cc.on_timeout(t);
        cc.on_timeout(t + Duration::from_millis(400));
        assert_eq!(cc.window(), 750.0);
        // A packet sent after the first timeout says nothing about it.
        cc.on_late_ack(t + Duration::from_millis(1), Duration::from_millis(900));
        assert_eq!(cc.spurious_timeouts, 0);
        // One sent before it: the timeouts were spurious.
        cc.on_late_ack(t - Duration::from_millis(5), Duration::from_millis(1200));
        assert_eq!(cc.spurious_timeouts, 1);
        assert_eq!(cc.window(), w);
        assert!(cc.in_slow_start());
        assert_eq!(cc.rtt().latest(), Some(Duration::from_millis(1200)));
        assert!(
            cc.rto() < Duration::from_secs(4),
            "backoff cleared: {:?}",
            cc.rto()
        );
        // A timeout confirmed by an acknowledgement of a later packet
        // stays.
        cc.on_timeout(t + Duration::from_secs(5));
        cc.settle_timeout(t + Duration::from_secs(6));
        cc.on_late_ack(t, Duration::from_secs(6));
        assert_eq!(cc.spurious_timeouts, 1);
        assert_eq!(cc.window(), 750.0);
    }

    #[test]
    fn timeout_is_tcps_with_backoff() {
        let mut cc = PathCc::new(CcConfig::default());
        cc.on_ack(750, Some(Duration::from_millis(40)));
        let rto = cc.rto();
        assert_eq!(rto, Duration::from_millis(200));
        cc.on_timeout(Instant::ZERO);
        assert_eq!(cc.window(), 750.0);
        assert_eq!(cc.rto(), rto * 2);
        cc.on_timeout(Instant::ZERO);
        assert_eq!(cc.rto(), rto * 4);
        cc.on_ack(750, None);
        assert_eq!(cc.rto(), rto);
        for _ in 0..40 {
            cc.on_timeout(Instant::ZERO);
        }
        assert_eq!(cc.rto(), Duration::from_secs(60));
    }
}
