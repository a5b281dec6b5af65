//! Linux's RACK for retransmissions (RFC 8985 Section 6.2, Linux
//! `tcp_rack_mark_lost`): a retransmitted packet neither acknowledged nor
//! SACKed is lost again once a packet sent after it (by time, then by
//! sequence number: Linux `tcp_rack_sent_after`) was delivered and the
//! delivered packet's round trip plus a reordering window of SRTT/4 have
//! passed since it left. Only a later-sent packet's delivery says a
//! retransmission is overdue: a queue the tunnel built ahead of it (a
//! thin path carrying everything while the others are dark) delays it
//! without losing it.
//!
//! In fast recovery the packet is sent once more (NextSeg rule 1). In the
//! loss state a timeout began, Linux does the same and more: a lost
//! retransmission there (`FLAG_LOST_RETRANS` in `tcp_fastretrans_alert`,
//! case `TCP_CA_Loss`) falls through to `tcp_enter_recovery`, which
//! reduces the window once more (`tcp_init_cwnd_reduction`: ssthresh from
//! the congestion controller) and resends what is lost by SACK recovery,
//! without waiting for another timeout. Without it the model waited out a
//! backed-off timer for every retransmission its go-back-N lost: change
//! set 13/5 of `lab/sweep-changes.sh 40 13` (41.8 Mbit/s 21 ms away dark
//! for 2.8 s, beside 1.2 Mbit/s) lost a retransmission in the thin path's
//! queue while the fast path was dark, stalled 0.9 s after the fast path
//! came back and timed out again; Linux through the same tunnel in the lab
//! carried 31.73 Mbit/s there, the model 25.32 (29.95 with this).

use braid_core::time::Instant;

use super::super::Ack;
use super::TcpSender;

impl TcpSender {
    /// Linux `tcp_rack_advance`: notes the latest transmission among the
    /// packets this ACK newly delivers (cumulatively or by SACK). A
    /// retransmitted packet whose delivery comes sooner than the least
    /// round trip seen was its original's and does not count.
    pub(super) fn rack_advance(&mut self, now: Instant, ack: &Ack) {
        let Some(sb) = self.sb.as_ref() else { return };
        let (una, max, base) = (self.snd_una, self.snd_max, self.sent_base);
        let min_rtt = self.cubic.as_ref().and_then(|c| c.min_rtt());
        let mut latest = self.rack_xmit;
        let mut note = |from: u64, to: u64| {
            let mut pos = from;
            while let Some(z) = sb.sacked.next_zero(pos, to) {
                let end = sb.sacked.next_one(z, to).unwrap_or(to);
                for seq in z..end {
                    let Some(&(t, rtx)) = seq
                        .checked_sub(base)
                        .and_then(|i| self.sent_at.get(i as usize))
                    else {
                        continue;
                    };
                    let rtt = now.saturating_since(t);
                    if rtx && min_rtt.is_some_and(|m| rtt < m) {
                        continue;
                    }
                    if latest.is_none_or(|l| (t, seq) > l) {
                        latest = Some((t, seq));
                    }
                }
                pos = end;
            }
        };
        if ack.ack > una {
            note(una, ack.ack.min(max));
        }
        let lo = ack.ack.max(una);
        for &(s, e) in &ack.sack[..usize::from(ack.n_sack.min(3))] {
            let (s, e) = (s.max(lo), e.min(max));
            if s < e {
                note(s, e);
            }
        }
        if latest != self.rack_xmit {
            self.rack_xmit = latest;
            self.rack_rtt = latest.map_or(self.rack_rtt, |(t, _)| now.saturating_since(t));
        }
    }

    /// RACK on an ACK (`TcpConfig::rack`): in fast recovery, marks lost
    /// retransmissions for NextSeg; in the loss state, a lost
    /// retransmission starts fast recovery.
    pub(super) fn rack(&mut self, now: Instant) {
        if self.in_recovery {
            let top = self.sb.as_ref().map_or(self.snd_una, |sb| sb.high_rxt);
            self.rack_lost_retransmissions(now, top);
        } else if self.snd_una < self.rto_recover && self.snd_una < self.recover {
            // The loss state: what the go-back-N resent lies below snd_nxt.
            if let Some(lowest) = self.rack_lost_retransmissions(now, self.snd_nxt) {
                self.recovery_from_loss(now, lowest);
            }
        }
    }

    /// Marks every retransmission in `[snd_una, top)` that RACK finds lost
    /// (module doc) as lost again: clears its retransmitted mark and moves
    /// NextSeg's scan pointer back to it. Returns the lowest such packet.
    fn rack_lost_retransmissions(&mut self, now: Instant, top: u64) -> Option<u64> {
        let srtt = self.rto.srtt()?;
        let delivered = self.rack_xmit?;
        let wait = self.rack_rtt + srtt / 4;
        let (una, base) = (self.snd_una, self.sent_base);
        let sb = self.sb.as_mut()?;
        let mut lowest = None;
        for seq in una..top.min(self.snd_max) {
            if !sb.retx.get(seq) || sb.sacked.get(seq) {
                continue;
            }
            let sent = seq
                .checked_sub(base)
                .and_then(|i| self.sent_at.get(i as usize))
                .map(|e| e.0);
            if sent.is_some_and(|t| (t, seq) < delivered && t + wait <= now) {
                sb.retx.clear(seq);
                lowest.get_or_insert(seq);
            }
        }
        if let Some(l) = lowest {
            sb.high_rxt = sb.high_rxt.min(l);
            sb.partial_lost = sb.partial_lost.max(l + 1);
        }
        lowest
    }

    /// Linux `tcp_enter_recovery` from the loss state: a window reduction
    /// (the timeout's cwnd of one has grown back by slow start since), the
    /// go-back-N ends, and SACK recovery resends from the lost
    /// retransmission `lowest` up through everything the timeout found
    /// outstanding (Linux's `tcp_enter_loss` marked all of it lost).
    fn recovery_from_loss(&mut self, now: Instant, lowest: u64) {
        self.enter_sack_recovery(now);
        let rto_point = self.rto_recover.min(self.snd_max);
        if let Some(sb) = self.sb.as_mut() {
            sb.high_rxt = lowest.max(self.snd_una);
            sb.partial_lost = sb.partial_lost.max(rto_point);
        }
    }
}
