//! TCP-PRISM's reaction to the proxy's NACKs (PRISM Section 6.2.2), the
//! one part of the data sender that is not RFC TCP.

use braid_core::time::Instant;

use super::super::Segment;
use super::TcpSender;

impl TcpSender {
    /// TCP-PRISM (PRISM Section 6.2.2): retransmit exactly the NACKed
    /// packets still outstanding and not SACKed, at once and outside the
    /// max-burst budget; then cwnd ← p·cwnd and ssthresh ← cwnd. The
    /// sender stays in recovery (window by pipe, new data only) until
    /// everything outstanding now is acknowledged; a further NACK, from
    /// another congested link, reduces again.
    pub(super) fn prism_nack(
        &mut self,
        now: Instant,
        nack: &super::super::Nack,
        out: &mut Vec<Segment>,
    ) {
        let p = nack.p().clamp(0.0, 1.0);
        let mut any = false;
        let mut after_rto = false;
        for &seq in nack.seqs() {
            let sacked = self.sb.as_ref().is_some_and(|sb| sb.sacked.get(seq));
            if seq < self.snd_una || seq >= self.snd_max || sacked {
                continue;
            }
            self.output(now, seq, out);
            any = true;
            after_rto |= seq >= self.rto_recover;
        }
        if !any {
            return; // a stale NACK: everything it names has arrived
        }
        self.stats.nacks += 1;
        self.stats.fast_retransmits += 1;
        if after_rto {
            self.cwnd = (self.cwnd * p).max(1.0);
            self.ssthresh = (self.cwnd as u64).max(2);
        }
        self.had_congestion = true;
        self.timed = None;
        if !self.in_recovery {
            self.in_recovery = true;
            self.dupwnd = 0;
            self.snd_nxt = self.snd_max;
        }
        self.recover = self.snd_max;
        self.rtx_deadline = Some(now + self.rto.rto());
    }
}
