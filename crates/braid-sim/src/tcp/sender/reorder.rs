//! Linux's response to reordering, the "heuristic decision algorithm and
//! undo algorithm" PRISM Section 7.1.2 names in its testbed's TCP-SACK
//! (Linux 2.4, `tcp_input.c`), for the vanilla TCP of Figs 6-8:
//!
//! - **Reordering metric** (`tcp_update_reordering`): when a packet that
//!   was never retransmitted is acknowledged or SACKed below the highest
//!   packet already SACKed, it was reordered, not lost, by that distance.
//!   The duplicate-ACK threshold (and RFC 6675's IsLost, which counts
//!   SACKed packets above a hole) rises to the largest distance seen, at
//!   most 127 packets (`TCP_MAX_REORDERING`).
//! - **Undo** (`tcp_packet_delayed`, `tcp_try_undo_recovery`): with
//!   timestamps, an ACK of new data whose echo is older than the recovery's
//!   first retransmission was caused by an original transmission: the
//!   recovery was spurious, and the window and ssthresh go back to what
//!   they were before it.
//!
//! ns-2's agents (the PET/BMP and PRISM simulations) do neither; this is
//! on only where [`super::super::TcpConfig::reordering`] asks for it.

use braid_core::time::Instant;

use super::super::Ack;
use super::TcpSender;

/// Ceiling of the reordering metric (Linux `TCP_MAX_REORDERING`).
pub(super) const MAX_REORDERING: u64 = 127;

/// What a recovery (or a timeout, `super::spurious_rto`) changed, to put
/// back if it proves spurious.
#[derive(Copy, Clone, Debug)]
pub(super) struct Undo {
    pub(super) cwnd: f64,
    pub(super) ssthresh: u64,
    /// When the recovery's first retransmission left, in timestamp units
    /// (ms, as `Segment::tsval`).
    pub(super) retrans_ms: u32,
}

impl Undo {
    /// Whether `ack` echoes a timestamp older than the first
    /// retransmission: it was sent for an original, so what the
    /// retransmission answered was spurious.
    pub(super) fn predates(&self, ack: &Ack) -> bool {
        ack.tsecr.is_some_and(|t| t < self.retrans_ms)
    }
}

impl TcpSender {
    /// The duplicate-ACK threshold now: the configured one, raised by the
    /// reordering metric when that is on.
    pub(super) fn dupthresh(&self) -> u64 {
        u64::from(self.cfg.dupack_threshold).max(self.reordering)
    }

    /// Raises the reordering metric for packets this ACK shows arrived
    /// after later ones, never retransmitted. Call before the scoreboard
    /// takes the ACK in.
    pub(super) fn note_reordering(&mut self, ack: &Ack) {
        if !self.cfg.reordering {
            return;
        }
        let Some(sb) = self.sb.as_ref() else { return };
        let (una, max, high) = (self.snd_una, self.snd_max, sb.high_sacked);
        let fresh = |a: u64, b: u64| !(a | b); // neither SACKed nor retransmitted
        let mut lowest = None;
        if ack.ack > una {
            lowest = sb.sacked.find_pair(&sb.retx, una, ack.ack.min(high), fresh);
        }
        for &(s, e) in &ack.sack[..usize::from(ack.n_sack.min(3))] {
            let (s, e) = (s.max(una), e.min(max).min(high));
            if s < e {
                if let Some(x) = sb.sacked.find_pair(&sb.retx, s, e, fresh) {
                    lowest = Some(lowest.map_or(x, |l: u64| l.min(x)));
                }
            }
        }
        if let Some(x) = lowest {
            self.reordering = self.reordering.max((high - x).min(MAX_REORDERING));
        }
    }

    /// A recovery begins: remember what to restore if it was spurious.
    pub(super) fn arm_undo(&mut self, now: Instant) {
        if self.cfg.reordering && self.cfg.timestamps {
            self.undo = Some(self.undo_point(now));
        }
    }

    /// The window and ssthresh now, and `now` as the first
    /// retransmission's timestamp: what an undo puts back.
    pub(super) fn undo_point(&self, now: Instant) -> Undo {
        Undo {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            retrans_ms: (now.as_nanos() / 1_000_000) as u32,
        }
    }

    /// Undoes the current recovery if this ACK of new data echoes a
    /// timestamp older than its first retransmission. Returns whether it did.
    pub(super) fn try_undo(&mut self, ack: &Ack) -> bool {
        let Some(u) = self.undo else { return false };
        if !self.in_recovery || ack.ack <= self.snd_una {
            return false;
        }
        if !u.predates(ack) {
            return false;
        }
        self.undo = None;
        self.stats.undos += 1;
        // Everything SACKed above the hole had overtaken it (Linux
        // `tcp_try_undo_partial` updates the metric by the same distance).
        if let Some(sb) = self.sb.as_ref() {
            let d = sb.high_sacked.saturating_sub(self.snd_una);
            self.reordering = self.reordering.max(d.min(MAX_REORDERING));
        }
        self.in_recovery = false;
        self.dupwnd = 0;
        self.dupacks = 0;
        self.restore(u);
        true
    }

    /// Puts back the window and ssthresh `u` saved (never lowering
    /// either), and lets later duplicate ACKs start a recovery of their
    /// own: what an undo of a recovery or of a timeout
    /// (`super::spurious_rto`) shares.
    pub(super) fn restore(&mut self, u: Undo) {
        self.cwnd = self.cwnd.max(u.cwnd);
        self.ssthresh = self.ssthresh.max(u.ssthresh);
        self.recover = 0;
        if let Some(sb) = self.sb.as_mut() {
            sb.partial_lost = 0;
        }
    }
}
