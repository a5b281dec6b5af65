//! Time-based loss detection across paths, for repair (RACK, RFC 8985,
//! applied to the bond).
//!
//! Why: a path's losses are found by the FIFO rule on feedback and by the
//! receiver's NACKs only once a *later packet on the same path* arrives.
//! A path the scheduler uses only now and then (a lossy path whose
//! estimate is low, R-MTP's 30 %-loss case) carries one packet at a time,
//! so nearly every loss on it is a tail loss, found only by the path's
//! timeout: its RTO plus half an RTT, at least 200 ms. The repair then
//! reaches the resequencer after the inner TCP's own RTO (200 ms in
//! Linux) has fired, the inner TCP collapses its window to one packet,
//! and goodput fell below the clean path alone (5.1 against 9.7 Mbit/s on
//! 10 + 10 Mbit/s with 30 % loss on one, `braid sim run`).
//!
//! The rule (RFC 8985 §6.2, per path that loses at least 1 %, for a
//! path's last packet on any path, and, with ARQ, for the oldest packet of
//! a clean path that has gone quiet, `sender/quiet.rs`): once a packet
//! sent *after* a
//! packet X has been reported (on any path; the receiver is alive and its
//! feedback flows), X is lost when it has been out longer than its own
//! path's smoothed RTT plus a reordering window, `max(srtt / 4, 2 rttvar,
//! 50 ms)`
//! (RFC 8985's `min_rtt / 4`, widened by the path's RTT variation because
//! the path's RTT includes the receiver's feedback batching). The path's
//! timeout still bounds it from above and alone covers a silent receiver.
//! A path that has carried no reported data yet uses its keepalive round
//! trip (`PathState::rtt_hint`) as RFC 6298's first sample.
//! Only with repair on: without repair a loss declared early is no loss
//! to the inner traffic, and the paper scenarios keep their detectors.

use super::{slot, Sender};
use crate::path::PathState;
use crate::repair::RepairMode;
use crate::time::{Duration, Instant};

/// The smallest reordering window: more than the receiver's longest
/// feedback batching (`feedback_max_delay_small`, 40 ms for reports of
/// small packets only), so that a report held in a batch is not taken
/// for a loss. Without a floor, paths with round trips of microseconds
/// (two CPU-bound striped paths, `tests/conn/conn_fast_paths.rs`) lost 40 % of
/// their delivery rate to spurious repairs, and a floor of 10 ms still
/// made FEC measure loss on clean paths (`tests/conn/conn_fec.rs`). RFC 8985
/// §6.2 likewise keeps its window above the timer's granularity.
const MIN_WINDOW: Duration = Duration::from_millis(50);

/// The rule applies only to a path whose losses the peer's receiver
/// measured at 1 % or more (its NACKs' rates, which count real gaps in
/// the path's own sequence, not the sender's guesses). A clean path next
/// to a lossy one had its reports delayed now and then beyond any window
/// (feedback carried back on the lossy path, lost and repeated), and
/// the rule declared 677 of its 4737 packets lost that were not
/// (`tests/conn/conn_lossy.rs`, 30 % on the other path): each cost a copy.
/// On a clean path the FIFO rule and NACKs find every loss but the last
/// of a burst anyway.
///
/// On a path that loses less, the rule still applies to the path's last
/// packet in flight (nothing sent or queued on the path after it): no
/// later packet on the path will reveal its loss, so only the path's
/// timeout would, at `3.5 x` the keepalive round trip before the path's
/// first data report (RFC 6298's first RTO with repair's margin). On a
/// path the scheduler uses only now and then (the third, slowest path of
/// `lab/cellular.toml` early in a transfer) nearly every packet is such a
/// tail: one lost in the first second was found after 280 ms, its repair
/// came after the peer's resequencer had given up the gap, and the inner
/// TCP took the gap for a loss at a window of 46 packets (`braid sim run`
/// of `cellular` with seed 11: 0.659 of the sum; 0.891 with this rule
/// and PET's probing by pairs, `sched/pet.rs`).
/// A delayed report can make the rule declare a tail lost that is not;
/// that costs one copy per idle spell of the path, not one per packet.
///
/// On a clean path the rest of its packets come under the rule only once
/// the path has gone quiet: nothing reported on it for its SRTT plus the
/// window, counted from its last report, while another path reported at
/// least a window after that (`RackCase::Quiet`; a lossy path can go
/// quiet too, `sender/quiet.rs`). A report held up now
/// and then does not make a path quiet while its later reports come; a
/// whole window of silence does, and costs a copy of what the path had
/// in flight.
const MIN_PEER_LOSS: f64 = 0.01;

impl<P> Sender<P> {
    /// A packet sent at `sent_at` was reported: later sends' losses can
    /// be judged by time.
    pub(super) fn rack_on_delivered(&mut self, sent_at: Instant) {
        if self.rack_sent_at.is_none_or(|t| sent_at > t) {
            self.rack_sent_at = Some(sent_at);
        }
    }

    /// When a packet sent on `p` at `sent_at` counts as lost by time, if a
    /// packet sent after it was already reported, and by which case of
    /// the rule.
    pub(super) fn rack_deadline(
        &self,
        p: &PathState,
        sent_at: Instant,
    ) -> Option<(Instant, RackCase)> {
        if self.cfg.repair.mode == RepairMode::Off {
            return None;
        }
        if self.rack_sent_at.is_none_or(|t| t <= sent_at) {
            return None;
        }
        let s = slot(p.id);
        let window = reorder_window(p)?;
        let overdue = srtt_rttvar(p)?.0 + window;
        let lossy = self.per_path[s].repair.peer_loss_rate >= MIN_PEER_LOSS;
        // The path's last packet: the only one in its queue of packets
        // not yet reported (sent or still paced).
        let tail = self.per_path[s].unacked.len() <= 1;
        // Whether the path, with later packets behind this one, has gone
        // quiet: it has reported nothing for the window (from its last
        // report, or the packet's send if later), while another path
        // reported at least a window after that (`sender/quiet.rs`).
        // Without the second condition a sender that stalled (its
        // feedback queued unread) found every path quiet. ARQ only.
        let from = silent_from(p, sent_at);
        let quiet = !tail
            && self.cfg.repair.mode == RepairMode::Arq
            && self.another_reported_since(p, from + window);
        if lossy || tail {
            // A lossy path's packet is overdue a window after it left
            // anyway; the path has gone quiet too if nothing came from it
            // since.
            let case = match (quiet && from == sent_at, lossy) {
                (true, _) => RackCase::Quiet,
                (false, true) => RackCase::Lossy,
                (false, false) => RackCase::Tail,
            };
            return Some((sent_at + overdue, case));
        }
        // A clean path's packet, with later ones behind it on the path:
        // overdue only once the path has gone quiet.
        quiet.then_some((from + overdue, RackCase::Quiet))
    }

    /// Whether `p`, with packets behind the one sent at `sent_at`, has gone
    /// quiet by `now`, that packet's timeout (`sender/quiet.rs`): it has
    /// reported nothing for its SRTT plus the reordering window, counted
    /// from its last report or the packet's send if later, and another
    /// path either reported at least a window after that, or (`p` clean)
    /// is idle: nothing in flight, and a report since its last send.
    ///
    /// Why the last report and not the send: the packets that reach the
    /// peer just before a delay step are reported after it, so the path
    /// has reported since the packets behind them left. On change set
    /// 13/14 of `lab/sweep-changes.sh 40 13` (1.19 Mbit/s 36 ms away
    /// moving to 328 ms, beside 6.83 Mbit/s 43 ms away) the server's
    /// last report from the moved path came 83 ms after its oldest
    /// packet left, and 164 ms before that packet's timeout.
    ///
    /// Why an idle other path counts: the server sends the inner TCP's
    /// ACKs, small packets PET puts on the nearest path, and the other
    /// path then carries nothing and reports nothing. Its silence says
    /// nothing of the sender; the moved path's, with its packets overdue,
    /// does. 13/14: 6.23 -> 6.38 Mbit/s with both (its fast path alone
    /// 6.59); 12/21 (the same case) 12.06 -> 12.49. Only on a clean path:
    /// a lossy one falls silent when its reports are lost. On random set
    /// 99/33 (3.8 Mbit/s 8.7 ms away losing 5 %, carrying the ACKs, beside
    /// 39 Mbit/s 287 ms away) the near path went quiet again and again,
    /// and the set fell from 37.51 to 35.10.
    pub(super) fn quiet_at_timeout(&self, p: &PathState, sent_at: Instant, now: Instant) -> bool {
        let s = slot(p.id);
        if self.cfg.repair.mode != RepairMode::Arq || self.per_path[s].unacked.len() <= 1 {
            return false;
        }
        let (Some(overdue), Some(window)) = (overdue_after(p), reorder_window(p)) else {
            return false;
        };
        let from = silent_from(p, sent_at);
        if now < from + overdue {
            return false;
        }
        if self.another_reported_since(p, from + window) {
            return true;
        }
        // Idle: nothing in flight, and reported since its last send (not
        // a path whose packets were all given up).
        let clean = self.per_path[s].repair.peer_loss_rate < MIN_PEER_LOSS;
        clean
            && self.paths.iter().filter(|q| q.id != p.id).any(|q| {
                q.usable
                    && q.rtt.has_samples()
                    && self.per_path[slot(q.id)].unacked.is_empty()
                    && q.last_feedback >= q.last_sent
            })
    }

    /// Whether a path other than `p` reported at `t` or later.
    fn another_reported_since(&self, p: &PathState, t: Instant) -> bool {
        self.paths
            .iter()
            .filter(|q| q.id != p.id)
            .filter_map(|q| q.last_feedback)
            .max()
            .is_some_and(|o| o >= t)
    }

    /// How long the peer's resequencer should hold a gap at least, for the
    /// repair of a loss this rule finds: the longest `srtt + window` over
    /// the usable paths, with the resequencer's own headroom (x 1.25 +
    /// 10 ms, `reorder::hold`). `None` with repair off or before any path
    /// was measured.
    ///
    /// Why this is the wait: a lost packet's gap is first seen when a
    /// packet sent after it arrives on the fastest path, about half that
    /// path's round trip after both left; the packet after it is reported
    /// back one such half later; the loss is declared `srtt + window` after
    /// the lost packet left; its copy takes the fastest path's half round
    /// trip. The two halves cancel. The paths are the same both ways, so
    /// this side's round trips stand for the peer's.
    pub fn repair_wait(&self) -> Option<Duration> {
        if self.cfg.repair.mode == RepairMode::Off {
            return None;
        }
        self.paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(overdue_after)
            .max()
            .map(|w| w.mul_f64(HOLD_FACTOR) + HOLD_MARGIN)
    }

    /// How long the peer's resequencer should hold a gap at least: for a
    /// repair ([`Sender::repair_wait`]), and for a packet sent on the
    /// farthest usable path while later ones go on the nearest, which
    /// arrive sooner by the difference of the two paths' one-way delays
    /// towards this side (the peer's keepalives measure them,
    /// [`PathState::owd_hint_raw_ns`]), with the same headroom.
    ///
    /// Why: the repair wait needs this side's round trip on each path,
    /// which a side that has sent nothing on a path does not have. A
    /// server receiving an upload that starts as the tunnel comes up has
    /// only the handshake path's: the near rule (`sched::pet::near`) sent
    /// the client's data on a path 300 ms further and the rest of it on
    /// the near path, and the server's resequencer, its hold set from the
    /// near path's 17 ms round trip, gave up the far path's packets
    /// 155 ms after the near path's arrived, 135 ms before they did: the
    /// inner TCP took them for lost and left slow start at 7 packets
    /// (random set 2027/8 of `lab/sweep-random.sh`).
    pub fn hold_floor(&self) -> Option<Duration> {
        let hints = self
            .paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| p.owd_hint_raw_ns);
        let spread = hints
            .clone()
            .max()
            .zip(hints.min())
            .map(|(far, near)| Duration::from_nanos(far.saturating_sub(near).max(0) as u64))
            .filter(|s| !s.is_zero())
            .map(|s| s.mul_f64(HOLD_FACTOR) + HOLD_MARGIN);
        self.repair_wait().max(spread)
    }
}

/// Which case of the rule set a packet's deadline.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum RackCase {
    /// Its path loses at least [`MIN_PEER_LOSS`].
    Lossy,
    /// It is its path's last packet.
    Tail,
    /// Its path, clean, has reported nothing for the window while
    /// another path reported: the path went quiet (`sender/quiet.rs`).
    Quiet,
}

/// Where the silence of `p` that a packet sent at `sent_at` waits in
/// began: the path's last report, or the packet's send if later.
fn silent_from(p: &PathState, sent_at: Instant) -> Instant {
    p.last_feedback.map_or(sent_at, |f| f.max(sent_at))
}

/// How long after it left a packet on `p` counts as lost by the rule:
/// the path's SRTT plus the reordering window `max(srtt / 4, 2 rttvar,
/// 50 ms)`. A path that only keepalives measured starts as RFC 6298 2.2
/// does (SRTT = R, RTTVAR = R / 2); `None` for a path not measured at all.
pub(super) fn overdue_after(p: &PathState) -> Option<Duration> {
    Some(srtt_rttvar(p)?.0 + reorder_window(p)?)
}

/// The reordering window of the rule on `p`: `max(srtt / 4, 2 rttvar, 50
/// ms)`.
fn reorder_window(p: &PathState) -> Option<Duration> {
    let (srtt, rttvar) = srtt_rttvar(p)?;
    Some((srtt / 4).max(rttvar * 2).max(MIN_WINDOW))
}

/// The path's SRTT and RTTVAR, or RFC 6298 2.2's first values from its
/// keepalive round trip; `None` for a path not measured at all.
fn srtt_rttvar(p: &PathState) -> Option<(Duration, Duration)> {
    if p.rtt.has_samples() {
        Some((p.rtt.srtt(), p.rtt.rttvar()))
    } else {
        let h = p.rtt_hint?;
        Some((h, h / 2))
    }
}

/// Headroom of [`Sender::repair_wait`] over the expected wait, as the
/// resequencer's measured hold takes over the largest wait it saw
/// (feedback batching and queueing vary the repair's timing).
const HOLD_FACTOR: f64 = 1.25;
const HOLD_MARGIN: Duration = Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::super::{SenderConfig, Transmit};
    use super::*;
    use crate::path::{PathId, PathParams};
    use crate::sched::{PacketInfo, RoundRobin};
    use crate::wire::{FeedbackEntry, NackRate};

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn send(s: &mut Sender, at: u64) -> Transmit {
        let p = PacketInfo {
            len: 1500,
            retransmit: false,
            stream: false,
        };
        s.send(ms(at), &p).unwrap()
    }

    fn ack(s: &mut Sender, at: u64, t: &Transmit) {
        let e = FeedbackEntry {
            seq: t.seq as u32,
            rx_time_ns: at * 1_000_000,
        };
        s.handle_feedback_on(ms(at), t.path, [e]);
    }

    /// Two paths, round robin, RTTs of 40 and 60 ms measured; then packet
    /// 3 on path 1 goes unreported while packet 4, sent after it on path
    /// 0, is reported. `loss` is path 1's loss rate as the peer reports it.
    fn one_unreported(loss: f64) -> Sender {
        let mut cfg = SenderConfig::default();
        cfg.repair.mode = RepairMode::Arq;
        let mut s = Sender::new(cfg, Box::new(RoundRobin::default()));
        s.add_path(PathId(0), PathParams::default());
        s.add_path(PathId(1), PathParams::default());
        let a = send(&mut s, 0);
        let b = send(&mut s, 0);
        ack(&mut s, 40, &a);
        ack(&mut s, 60, &b);
        let c = send(&mut s, 100);
        let d = send(&mut s, 101);
        let e = send(&mut s, 102);
        assert_eq!((c.path, d.path, e.path), (PathId(0), PathId(1), PathId(0)));
        ack(&mut s, 141, &c);
        ack(&mut s, 142, &e);
        s.handle_nack(ms(142), [], [NackRate::from_fraction(PathId(1), loss)]);
        s
    }

    /// On a lossy path the unreported packet is lost once it has been out
    /// its path's SRTT (60 ms) plus max(SRTT / 4, 2 RTTVAR, 50 ms) = 60 ms
    /// (RTTVAR is 30 ms after one sample): at 221 ms, not at the path's
    /// timeout (RTO 200 ms + 30 ms, at 331 ms); and its repair is queued.
    #[test]
    fn a_later_report_on_another_path_finds_a_loss_in_one_rtt() {
        lost_at_221_ms_and_repaired(one_unreported(0.3));
    }

    fn lost_at_221_ms_and_repaired(mut s: Sender) {
        assert_eq!(s.poll_timeout(), Some(ms(221)));
        s.handle_timeout(ms(220));
        assert_eq!(s.stats().lost_timeout, 0);
        s.handle_timeout(ms(221));
        assert_eq!(s.stats().lost_timeout, 1);
        assert_eq!(s.next_repair(), Some(3));
    }

    /// On a path the peer measured clean (below 1 % loss) the rule is off
    /// while a later packet on the path will tell and the path has not
    /// gone quiet (path 0's last report came 41 ms after the packet left,
    /// less than the 60 ms window): only the path's timeout declares the
    /// loss.
    #[test]
    fn a_clean_path_waits_for_its_timeout() {
        let mut s = one_unreported(0.0);
        let f = send(&mut s, 103);
        assert_eq!(f.path, PathId(1), "a later packet on the same path");
        assert_eq!(s.poll_timeout(), Some(ms(331)));
        s.handle_timeout(ms(300));
        assert_eq!(s.stats().lost_timeout, 0);
        s.handle_timeout(ms(331));
        assert_eq!(s.stats().lost_timeout, 1);
    }

    /// A clean path's last packet has no later packet on the path to
    /// reveal its loss: the rule applies to it as on a lossy path.
    #[test]
    fn a_clean_paths_last_packet_is_found_in_one_rtt() {
        lost_at_221_ms_and_repaired(one_unreported(0.0));
    }

    /// A path with no data report yet but a keepalive round trip of 60 ms
    /// times out its packets after RFC 6298's first RTO from it (3 x 60
    /// ms) plus half of it, not after the 4 s kept for unknown paths.
    #[test]
    fn a_path_known_only_from_keepalives_times_out_from_their_rtt() {
        for (mode, want) in [(RepairMode::Arq, 210), (RepairMode::Off, 4000)] {
            let mut cfg = SenderConfig::default();
            cfg.repair.mode = mode;
            let mut s = Sender::new(cfg, Box::new(RoundRobin::default()));
            s.add_path(PathId(0), PathParams::default());
            s.on_path_rtt_sample(PathId(0), crate::time::Duration::from_millis(60));
            send(&mut s, 0);
            assert_eq!(s.poll_timeout(), Some(ms(want)), "{mode:?}");
        }
    }

    /// The peer's hold for a repair: the longest path's SRTT plus its
    /// window, x 1.25 + 10 ms; none with repair off.
    #[test]
    fn the_repair_wait_covers_the_slowest_paths_repair() {
        let s = one_unreported(0.3);
        // Path 1: SRTT 60 ms, RTTVAR 30 ms, window 60 ms: 1.25 x 120 + 10.
        assert_eq!(
            s.repair_wait(),
            Some(crate::time::Duration::from_millis(160))
        );
        let mut cfg = SenderConfig::default();
        cfg.repair.mode = RepairMode::Off;
        let mut s: Sender<()> = Sender::new(cfg, Box::new(RoundRobin::default()));
        s.add_path(PathId(0), PathParams::default());
        s.on_path_rtt_sample(PathId(0), crate::time::Duration::from_millis(60));
        assert_eq!(s.repair_wait(), None);
    }

    /// The resequencer's least hold covers the spread of the one-way
    /// delays the peer's keepalives measured (x 1.25 + 10 ms), before
    /// this side has a round trip on the far path, with repair on or off;
    /// a path that is not usable does not count.
    #[test]
    fn the_hold_floor_covers_the_paths_delay_spread() {
        for mode in [RepairMode::Arq, RepairMode::Off] {
            let mut cfg = SenderConfig::default();
            cfg.repair.mode = mode;
            let mut s: Sender<()> = Sender::new(cfg, Box::new(RoundRobin::default()));
            s.add_path(PathId(0), PathParams::default());
            s.add_path(PathId(1), PathParams::default());
            s.add_path(PathId(2), PathParams::default());
            let offset = 5_000_000_000i64;
            s.on_path_owd_sample(PathId(0), offset + 9_000_000);
            assert_eq!(s.hold_floor(), None, "{mode:?}: one path, no spread");
            s.on_path_owd_sample(PathId(1), offset + 299_000_000);
            s.on_path_owd_sample(PathId(1), offset + 309_000_000);
            // 290 ms x 1.25 + 10 ms.
            let want = crate::time::Duration::from_micros(372_500);
            assert_eq!(s.hold_floor(), Some(want), "{mode:?}");
            // A farther path that is not usable does not count.
            s.on_path_owd_sample(PathId(2), offset + 900_000_000);
            s.set_usable(PathId(2), false);
            assert_eq!(s.hold_floor(), Some(want), "{mode:?}");
            // The repair wait, when longer, is the floor.
            s.on_path_rtt_sample(PathId(0), crate::time::Duration::from_millis(400));
            let floor = s.hold_floor().unwrap();
            match mode {
                RepairMode::Off => assert_eq!(floor, want),
                _ => assert_eq!(Some(floor), s.repair_wait()),
            }
        }
    }
}
