//! Linux's RACK for retransmissions (RFC 8985 Section 6.2, Linux
//! `tcp_rack_mark_lost`): a retransmitted packet neither acknowledged nor
//! SACKed is lost again once a packet sent after it (by time, then by
//! sequence number: Linux `tcp_rack_sent_after`) was delivered and the
//! delivered packet's round trip plus a reordering window have passed
//! since it left. Only a later-sent packet's delivery says a
//! retransmission is overdue: a queue the tunnel built ahead of it (a
//! thin path carrying everything while the others are dark) delays it
//! without losing it.
//!
//! The reordering window is SRTT/4 here. Linux's (`tcp_rack_reo_wnd`) is
//! min_rtt/4 times steps that DSACKs widen, at most SRTT, and 0 in
//! recovery until reordering has been seen; a tunnel over paths of
//! different delays shows reordering at once, and the model keeps one
//! window rather than model the steps.
//!
//! In fast recovery the packet is sent once more (NextSeg rule 1). In the
//! loss state a timeout began, Linux does the same and more: a lost
//! retransmission there (`FLAG_LOST_RETRANS` in `tcp_fastretrans_alert`,
//! case `TCP_CA_Loss`) falls through to `tcp_enter_recovery`, which
//! reduces the window once more (`tcp_init_cwnd_reduction`: ssthresh from
//! the congestion controller), forgets the timeout's undo
//! (`tcp_init_undo`), resends the lost packet at once (PRR sends one
//! packet on entry whatever the pipe) and the rest of what is lost by SACK
//! recovery, without waiting for another timeout. Without it the model
//! waited out a backed-off timer for every retransmission its go-back-N
//! lost: change set 13/5 of `lab/sweep-changes.sh 40 13` (41.8 Mbit/s
//! 21 ms away dark for 2.8 s, beside 1.2 Mbit/s) lost a retransmission in
//! the thin path's queue while the fast path was dark, stalled 0.9 s
//! after the fast path came back and timed out again; Linux through the
//! same tunnel in the lab carried 31.73 Mbit/s there, the model 25.32
//! (29.95 with this).

use braid_core::time::Instant;

use super::super::{Ack, Segment};
use super::{sent_entry, TcpSender};

impl TcpSender {
    /// Linux `tcp_rack_advance`: notes the latest transmission among the
    /// packets this ACK newly delivers (cumulatively or by SACK). A
    /// retransmitted packet whose delivery comes sooner than the least
    /// round trip seen was its original's and does not count, nor does one
    /// the cumulative ACK covers with an echoed timestamp older than its
    /// retransmission (`tcp_skb_spurious_retrans`).
    pub(super) fn rack_advance(&mut self, now: Instant, ack: &Ack) {
        let Some(sb) = self.sb.as_ref() else { return };
        let (una, max, base) = (self.snd_una, self.snd_max, self.sent_base);
        let min_rtt = self.cubic.as_ref().and_then(|c| c.min_rtt());
        let mut latest = self.rack_xmit;
        let mut note = |from: u64, to: u64, tsecr: Option<u32>| {
            let mut pos = from;
            while let Some(z) = sb.sacked.next_zero(pos, to) {
                let end = sb.sacked.next_one(z, to).unwrap_or(to);
                for seq in z..end {
                    let Some((t, rtx)) = sent_entry(&self.sent_at, base, seq) else {
                        continue;
                    };
                    let rtt = now.saturating_since(t);
                    let echo_older =
                        tsecr.is_some_and(|ms| u64::from(ms) < t.as_nanos() / 1_000_000);
                    if rtx && (echo_older || min_rtt.is_some_and(|m| rtt < m)) {
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
            note(una, ack.ack.min(max), ack.tsecr);
        }
        let lo = ack.ack.max(una);
        for &(s, e) in &ack.sack[..usize::from(ack.n_sack.min(3))] {
            let (s, e) = (s.max(lo), e.min(max));
            if s < e {
                note(s, e, None);
            }
        }
        if latest != self.rack_xmit {
            self.rack_xmit = latest;
            self.rack_rtt = latest.map_or(self.rack_rtt, |(t, _)| now.saturating_since(t));
        }
    }

    /// RACK on an ACK (`TcpConfig::rack`): in fast recovery, marks lost
    /// retransmissions for NextSeg; in the loss state, a lost
    /// retransmission starts fast recovery and is resent into `out`.
    pub(super) fn rack(&mut self, now: Instant, out: &mut Vec<Segment>) {
        if self.in_recovery {
            self.rack_lost_retransmissions(now, false);
        } else if self.snd_una < self.rto_recover && self.snd_una < self.recover {
            if let Some(lowest) = self.rack_lost_retransmissions(now, true) {
                self.recovery_from_loss(now, lowest, out);
            }
        }
    }

    /// Marks every retransmission that RACK finds lost (module doc) as
    /// lost again: clears its retransmitted mark and moves NextSeg's scan
    /// pointer back to it. Returns the lowest such packet. `in_loss`: the
    /// loss state's go-back-N sent its retransmissions in order, so the
    /// scan stops at the first one not yet due.
    fn rack_lost_retransmissions(&mut self, now: Instant, in_loss: bool) -> Option<u64> {
        let srtt = self.rto.srtt()?;
        let delivered = self.rack_xmit?;
        let wait = self.rack_rtt + srtt / 4;
        let (una, max, base) = (self.snd_una, self.snd_max, self.sent_base);
        let sb = self.sb.as_mut()?;
        let mut lowest = None;
        let mut pos = una;
        // Only retransmitted, unSACKed packets are looked at.
        while let Some(seq) = sb.retx.find_pair(&sb.sacked, pos, max, |r, s| r & !s) {
            pos = seq + 1;
            let Some((t, _)) = sent_entry(&self.sent_at, base, seq) else {
                continue;
            };
            if (t, seq) < delivered && t + wait <= now {
                sb.retx.clear(seq);
                lowest.get_or_insert(seq);
            } else if in_loss {
                break;
            }
        }
        if let Some(l) = lowest {
            sb.high_rxt = sb.high_rxt.min(l);
            sb.partial_lost = sb.partial_lost.max(l + 1);
        }
        lowest
    }

    /// Linux `tcp_enter_recovery` from the loss state: a window reduction
    /// (the timeout's cwnd of one has grown back by slow start since), no
    /// undo of the timeout from here on, the go-back-N ends, the lost
    /// retransmission `lowest` goes again at once, and SACK recovery
    /// resends the rest of what the timeout found outstanding (Linux's
    /// `tcp_enter_loss` marked all of it lost).
    fn recovery_from_loss(&mut self, now: Instant, lowest: u64, out: &mut Vec<Segment>) {
        self.enter_sack_recovery(now);
        self.rto_undo = None;
        self.rtx_deadline = Some(now + self.rto.rto());
        let rto_point = self.rto_recover.min(self.snd_max);
        if let Some(sb) = self.sb.as_mut() {
            sb.high_rxt = lowest + 1;
            sb.partial_lost = sb.partial_lost.max(rto_point);
        }
        self.output(now, lowest, out);
    }
}
