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
//! The rule (RFC 8985 §6.2, per path that loses at least 1 %): once a packet sent *after* a
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
/// (two CPU-bound striped paths, `tests/conn_fast_paths.rs`) lost 40 % of
/// their delivery rate to spurious repairs, and a floor of 10 ms still
/// made FEC measure loss on clean paths (`tests/conn_fec.rs`). RFC 8985
/// §6.2 likewise keeps its window above the timer's granularity.
const MIN_WINDOW: Duration = Duration::from_millis(50);

/// The rule applies only to a path whose losses the peer's receiver
/// measured at 1 % or more (its NACKs' rates, which count real gaps in
/// the path's own sequence, not the sender's guesses). A clean path next
/// to a lossy one had its reports delayed now and then beyond any window
/// (feedback carried back on the lossy path, lost and repeated), and
/// the rule declared 677 of its 4737 packets lost that were not
/// (`tests/conn_lossy.rs`, 30 % on the other path): each cost a copy.
/// On a clean path the FIFO rule and NACKs find every loss but the last
/// of a burst anyway.
const MIN_PEER_LOSS: f64 = 0.01;

impl Sender {
    /// A packet sent at `sent_at` was reported: later sends' losses can
    /// be judged by time.
    pub(super) fn rack_on_delivered(&mut self, sent_at: Instant) {
        if self.rack_sent_at.is_none_or(|t| sent_at > t) {
            self.rack_sent_at = Some(sent_at);
        }
    }

    /// When a packet sent on `p` at `sent_at` counts as lost by time, if a
    /// packet sent after it was already reported.
    pub(super) fn rack_deadline(&self, p: &PathState, sent_at: Instant) -> Option<Instant> {
        if self.cfg.repair.mode == RepairMode::Off {
            return None;
        }
        if self.path_repair[slot(p.id)].peer_loss_rate < MIN_PEER_LOSS {
            return None;
        }
        if self.rack_sent_at.is_none_or(|t| t <= sent_at) {
            return None;
        }
        let (srtt, rttvar) = if p.rtt.has_samples() {
            (p.rtt.srtt(), p.rtt.rttvar())
        } else {
            // Only keepalives measured the path: RFC 6298 2.2's start
            // (SRTT = R, RTTVAR = R / 2).
            let h = p.rtt_hint?;
            (h, h / 2)
        };
        let window = (srtt / 4).max(rttvar * 2).max(MIN_WINDOW);
        Some(sent_at + srtt + window)
    }
}
