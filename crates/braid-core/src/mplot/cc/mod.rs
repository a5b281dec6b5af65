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
//!   packet of `s` bytes in slow start, `Δw = s mss / (w (1 - p̂))` in
//!   congestion avoidance. The latter is TCP's byte counting (RFC 5681
//!   §3.1, RFC 3465): one `mss` per window of bytes acknowledged, so a
//!   path grows by one largest packet per round trip whatever the sizes of
//!   its packets. `SPECS.md` suggests `s² / (w (1 - p̂))`, one packet of the
//!   current size per round trip: small windows make blocks of 250-byte
//!   packets (eq 12), which then grew a third as fast as a TCP flow of
//!   750-byte packets and took 0.89 of its share beside it (Fig 7, one
//!   path, with byte-mode RED); with byte counting 1.05;
//! - a retransmission timeout is TCP's (window to one packet, slow start,
//!   exponential backoff); there is no fast retransmit.
//!
//! Windows are in bytes (packets vary between 250 and 750 bytes per block,
//! §III-C, up to 1400 in `braid send`), so eq 12 has a byte budget to
//! divide.

use crate::fec::mplot::MAX_LOSS_ESTIMATE;
use crate::path::rtt::RttEstimator;
use crate::time::{Duration, Instant};

mod drain;

pub use drain::BASE_RTT_WINDOW;

/// Limits of one path's controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CcConfig {
    /// The packet size windows are counted against for their floor and the
    /// initial window: the largest packet the sender makes (MPLOT's 750 B
    /// by default, `braid send`'s 1400).
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
    /// ([`drain::DrainCheck`]).
    base: Option<(Duration, Instant)>,
    /// The last drain, until a round shows whether it emptied a queue.
    drain_check: Option<drain::DrainCheck>,
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
            self.cwnd += s * self.cfg.mss as f64 / (self.cwnd * accept);
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
        let cut = self.reduce(now, self.cwnd / 2.0);
        self.ce_cuts += u64::from(cut);
        cut
    }

    /// Lowers the window to `to` (at least two packets) and ends slow
    /// start there, unless the window was lowered less than one smoothed
    /// RTT ago: the rule every reduction shares, halvings for marks or
    /// losses and drains ([`on_standing_queue`](Self::on_standing_queue)).
    /// Returns whether it lowered.
    fn reduce(&mut self, now: Instant, to: f64) -> bool {
        if let Some(t) = self.last_cut {
            if now.saturating_since(t) < self.srtt() {
                return false;
            }
        }
        self.cwnd = to.max((2 * self.cfg.mss) as f64);
        self.ssthresh = self.cwnd;
        self.last_cut = Some(now);
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

    /// A path whose first `packets` 750-byte packets were acknowledged at
    /// 40 ms.
    pub(super) fn warmed(packets: usize) -> PathCc {
        let mut cc = PathCc::new(CcConfig::default());
        for _ in 0..packets {
            cc.on_sent(750);
            cc.on_ack(750, Some(Duration::from_millis(40)));
        }
        cc
    }

    #[test]
    fn ce_halves_once_per_rtt() {
        let mut cc = warmed(40);
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
        let mut cc = warmed(40);
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
    fn a_timeout_is_undone_when_a_packet_sent_before_it_is_acknowledged() {
        let mut cc = warmed(20);
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
