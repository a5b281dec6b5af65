//! The NewReno half of loss recovery (RFC 6582, ns-2's `NewRenoTcpAgent`):
//! fast retransmit on the third duplicate ACK, window inflation while in
//! recovery, partial and full ACKs. With SACK the partial ACK hands over to
//! RFC 6675's pipe loop (`sack.rs`); timers and window growth are in the
//! parent module.

use braid_core::time::Instant;

use super::super::Segment;
use super::TcpSender;

impl TcpSender {
    /// Full ACK: leave fast recovery with cwnd = ssthresh (RFC 6582 Section
    /// 3.2 step 3, "deflate the window"; RFC 6675 keeps cwnd = ssthresh
    /// throughout). ns-2 then lets `opencwnd` count this ACK, and so do we.
    pub(super) fn exit_recovery(&mut self) {
        self.in_recovery = false;
        self.undo = None;
        self.dupwnd = 0;
        self.cwnd = self.ssthresh as f64;
        if let Some(sb) = self.sb.as_mut() {
            sb.retx.clear_range(self.snd_una, self.snd_max);
        }
    }

    /// Partial ACK: acknowledges new data but not `recover`.
    pub(super) fn partial_ack(&mut self, now: Instant, a: u64, out: &mut Vec<Segment>) {
        let deflate = a - self.snd_una;
        self.snd_una = a;
        self.snd_nxt = self.snd_nxt.max(a);
        // RFC 6298 (5.3); ns-2 newtimer on every partial ACK
        // (newreno_changes1_ = 0, RFC 6582 Section 3.2 step 5 "Impatient").
        self.restart_timer(now);
        if let Some(sb) = self.sb.as_mut() {
            // The packet at the new snd_una was sent before recovery began
            // and the receiver still lacks it after everything below it
            // arrived: the same evidence NewReno acts on (RFC 6582 Section
            // 3.2 step 5), and ns-2's Sack1 agent likewise retransmits the
            // first hole at once. Without this, a small window may not
            // produce DupThresh SACKs above the hole before the RTO.
            // NextSeg rule 1 still skips it if it was already retransmitted.
            if !self.cfg.prism {
                sb.partial_lost = a + 1;
            }
            return; // the RFC 6675 pipe loop in sack_send does the rest
        }
        // RFC 6582 Section 3.2 step 5 / ns-2 partial_window_deflation_:
        // deflate the window by the amount acknowledged, add back one packet.
        if self.dupwnd > deflate {
            self.dupwnd -= deflate - 1;
        } else {
            self.cwnd -= (deflate - self.dupwnd) as f64;
            self.dupwnd = 1;
        }
        if self.cwnd < 1.0 {
            self.cwnd = 1.0;
        }
        // ...and retransmit the first unacknowledged packet, the next hole
        // (ns-2 partialnewack_helper: output(last_ack_ + 1)).
        self.output(now, a, out);
    }

    /// Duplicate ACK without SACK (ns-2 `NewRenoTcpAgent::recv` +
    /// `dupack_action`).
    pub(super) fn newreno_dupack(&mut self, now: Instant, a: u64, out: &mut Vec<Segment>) {
        let thresh = self.dupthresh();
        if self.dupacks == thresh {
            if self.fast_retransmit_allowed(a) {
                self.arm_undo(now);
                // RFC 6582 Section 3.2 step 2: recover = highest sent,
                // ssthresh = max(FlightSize/2, 2), retransmit, cwnd =
                // ssthresh + 3 (ns-2: cwnd_ = ssthresh_, dupwnd_ = 3).
                self.recover = self.snd_max;
                self.had_congestion = true;
                self.ssthresh = self.loss_ssthresh();
                self.cwnd = self.ssthresh as f64;
                self.dupwnd = thresh;
                self.in_recovery = true;
                self.stats.fast_retransmits += 1;
                // ns-2 reset_rtx_timer(1, 0): restart the timer, stop timing.
                self.timed = None;
                self.rtx_deadline = Some(now + self.rto.rto());
                self.output(now, a, out);
            }
        } else if self.dupacks > thresh && self.in_recovery {
            // RFC 6582 Section 3.2 step 4: inflate by one per further dupack.
            self.dupwnd += 1;
        }
    }
}
