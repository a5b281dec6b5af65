//! Linux's undo of a spurious retransmission timeout (`tcp_try_undo_loss`
//! with `tcp_packet_delayed`: the Eifel detection of RFC 3522 and its
//! response, RFC 4015; F-RTO, RFC 5682, which Linux also runs, reaches the
//! same verdict without timestamps).
//!
//! A timeout is spurious when the packets it gave up on were only late:
//! an ACK of new data that echoes a timestamp older than the timeout's
//! first retransmission was sent for an original transmission, not for
//! the retransmission. Linux then puts back the window and ssthresh the
//! timeout took, leaves the loss state and stops resending the window
//! (it clears the lost marks, `tcp_undo_cwnd_reduction(sk, true)`).
//!
//! Why the tunnel simulations need it: a tunnel that repairs what a path
//! lost in an outage delivers the inner TCP's originals late, after its
//! timer fired. Without the undo the model went back N from a window of
//! one, resent what the repairs were delivering (1254 packets after a
//! 0.5 s outage of a 40 Mbit/s path 204 ms round trip), and the bond's
//! pacer dropped the burst: a second timeout, 24.66 Mbit/s where TCP
//! alone on the path carries 36.38. Linux through the same tunnel in the
//! lab carried 35.17-35.23 (two runs). ns-2's agents have no undo; this is
//! on only where [`super::super::TcpConfig::rto_undo`] asks for it.

use braid_core::time::Instant;

use super::super::Ack;
use super::TcpSender;

impl TcpSender {
    /// A timeout fires: remember the window and ssthresh before it, unless
    /// an earlier timeout of the same loss episode already did (Linux keeps
    /// the first retransmission's stamp and the window before the first
    /// timeout across backed-off ones).
    pub(super) fn arm_rto_undo(&mut self, now: Instant) {
        if self.cfg.rto_undo && self.cfg.timestamps && self.rto_undo.is_none() {
            self.rto_undo = Some(self.undo_point(now));
        }
    }

    /// Undoes the timeouts of the current loss episode if this ACK of new
    /// data echoes a timestamp older than their first retransmission.
    /// Once everything sent before the timeout is acknowledged without
    /// such an echo, the episode is over and the timeout stands. Returns
    /// whether it undid.
    pub(super) fn try_undo_rto(&mut self, ack: &Ack) -> bool {
        let Some(u) = self.rto_undo else { return false };
        if ack.ack <= self.snd_una {
            return false;
        }
        if !u.predates(ack) {
            if ack.ack >= self.rto_recover {
                self.rto_undo = None;
            }
            return false;
        }
        self.rto_undo = None;
        self.stats.rto_undos += 1;
        // Nothing was lost: no going back N, and a later loss may be
        // recovered by duplicate ACKs again.
        self.snd_nxt = self.snd_max;
        self.restore(u);
        true
    }
}
