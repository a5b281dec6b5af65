//! The SACK half of the data sender: RFC 6675's scoreboard, IsLost,
//! SetPipe and NextSeg, and loss recovery driven by them (RFC 2018 blocks).
//! The NewReno half is in `newreno.rs`; timers and window growth are in
//! the parent module.

use braid_core::time::Instant;

use super::super::bitring::BitRing;
use super::super::{Ack, Segment};
use super::TcpSender;

/// RFC 6675 Section 3 scoreboard.
#[derive(Clone, Debug)]
pub(super) struct Scoreboard {
    /// Packets the receiver reported in SACK blocks, within
    /// `[snd_una, snd_max)`.
    pub(super) sacked: BitRing,
    /// Packets retransmitted since the current recovery (or timeout) began.
    pub(super) retx: BitRing,
    /// Scan pointer for NextSeg (RFC 6675 `HighRxt` + 1): every packet in
    /// `[snd_una, high_rxt)` is SACKed or already retransmitted.
    pub(super) high_rxt: u64,
    /// One past the highest SACKed packet (RFC 6675 "highest octet covered
    /// by any received SACK").
    pub(super) high_sacked: u64,
    /// One past the packet a partial ACK exposed, which counts as lost
    /// even before enough SACKs arrive above it; 0 = none.
    pub(super) partial_lost: u64,
}

impl TcpSender {
    /// Records the ACK's SACK blocks (clipped to `[snd_una, snd_max)`) and
    /// forgets what the cumulative ACK covers.
    pub(super) fn update_scoreboard(&mut self, ack: &Ack) {
        let (una, max) = (self.snd_una, self.snd_max);
        let Some(sb) = self.sb.as_mut() else { return };
        if ack.ack > una {
            sb.sacked.clear_range(una, ack.ack);
            sb.retx.clear_range(una, ack.ack);
        }
        let lo = ack.ack.max(una);
        for &(s, e) in &ack.sack[..usize::from(ack.n_sack.min(3))] {
            let (s, e) = (s.max(lo), e.min(max));
            if s < e {
                sb.sacked.set_range(s, e);
                sb.high_sacked = sb.high_sacked.max(e);
            }
        }
        sb.high_sacked = sb.high_sacked.max(lo);
        sb.high_rxt = sb.high_rxt.max(lo);
    }

    /// RFC 6675 IsLost boundary: packets below the `dupack_threshold`-th
    /// highest SACKed packet have that many SACKed packets above them and
    /// are deemed lost (with one packet per segment, "DupThresh SACKed
    /// segments above" and "more than (DupThresh-1)*SMSS bytes above"
    /// coincide), or exposed by a partial ACK. Returns `snd_una` if
    /// nothing is lost.
    pub(super) fn lost_below(&self) -> u64 {
        let Some(sb) = self.sb.as_ref() else {
            return self.snd_una;
        };
        if self.cfg.prism {
            return self.snd_una; // TCP-PRISM: only NACKs say what is lost
        }
        let hint = sb.partial_lost.clamp(self.snd_una, self.snd_max);
        let mut hi = sb.high_sacked.min(self.snd_max);
        for _ in 0..self.dupthresh() {
            match sb.sacked.prev_one(self.snd_una, hi) {
                Some(s) => hi = s,
                None => return hint,
            }
        }
        hi.max(hint)
    }

    /// RFC 6675 SetPipe(): every unSACKed packet counts once unless lost,
    /// and once more if retransmitted.
    pub(super) fn pipe(&self, lost_below: u64) -> u64 {
        let Some(sb) = self.sb.as_ref() else {
            return self.snd_nxt - self.snd_una;
        };
        let (una, max) = (self.snd_una, self.snd_max);
        if self.cfg.prism {
            // A NACKed packet is lost and its retransmission is in flight
            // instead: each unSACKed packet counts once.
            return (max - una) - sb.sacked.count_ones(una, max);
        }
        let lb = lost_below.clamp(una, max);
        let not_lost = (max - lb) - sb.sacked.count_ones(lb, max);
        let retx = sb.retx.fold_pair(&sb.sacked, una, max, |r, s| r & !s);
        not_lost + retx
    }

    /// Duplicate ACK with SACK: RFC 6675 Section 5 entry into loss recovery
    /// when DupAcks >= DupThresh or IsLost(HighACK + 1).
    pub(super) fn sack_dupack(&mut self, now: Instant, a: u64, out: &mut Vec<Segment>) {
        if self.cfg.prism || self.in_recovery || !self.fast_retransmit_allowed(a) {
            return;
        }
        let thresh = self.dupthresh();
        if self.dupacks < thresh && a >= self.lost_below() {
            return;
        }
        self.enter_sack_recovery(now);
        self.rtx_deadline = Some(now + self.rto.rto());
        if let Some(sb) = self.sb.as_mut() {
            sb.retx.clear_range(a, self.snd_max);
            sb.high_rxt = a + 1;
            sb.partial_lost = 0;
        }
        // (4.3) retransmit the first presumed-lost packet regardless of pipe;
        // (4.4) the pipe loop follows in sack_send.
        self.output(now, a, out);
    }

    /// Enters SACK recovery (RFC 6675 Section 5): (4.1) RecoveryPoint =
    /// HighData; (4.2) ssthresh = cwnd = max(FlightSize/2, 2) (RFC 5681
    /// eq. (4); β cwnd with CUBIC); no going back N. The caller sets the
    /// scoreboard's scan pointer and what counts as lost.
    pub(super) fn enter_sack_recovery(&mut self, now: Instant) {
        self.arm_undo(now);
        self.recover = self.snd_max;
        self.had_congestion = true;
        self.in_recovery = true;
        self.ssthresh = self.loss_ssthresh();
        self.cwnd = self.ssthresh as f64;
        self.dupwnd = 0;
        self.snd_nxt = self.snd_max;
        self.stats.fast_retransmits += 1;
        self.timed = None;
    }

    /// RFC 6675 NextSeg(), given the IsLost boundary; None if nothing may
    /// be sent.
    pub(super) fn next_seg(&mut self, lost_below: u64) -> Option<u64> {
        let (una, max) = (self.snd_una, self.snd_max);
        let limit = una + u64::from(self.cfg.max_cwnd_pkts);
        let sb = self.sb.as_mut()?;
        let from = sb.high_rxt.max(una);
        // (1) the first unSACKed, not yet retransmitted, lost packet above
        // HighRxt.
        if from < lost_below {
            if let Some(s) = sb
                .sacked
                .find_pair(&sb.retx, from, lost_below, |a, b| !(a | b))
            {
                sb.high_rxt = s + 1;
                return Some(s);
            }
            sb.high_rxt = lost_below;
        }
        // (2) new data, if the application and the receiver window allow.
        if max < self.total && max < limit {
            return Some(max);
        }
        // (3) an unSACKed packet below the highest SACKed one, lost or not
        // (not for TCP-PRISM, which retransmits only what is NACKed).
        if self.cfg.prism {
            return None;
        }
        let from = sb.high_rxt.max(una);
        let top = sb.high_sacked.min(max);
        if from < top {
            if let Some(s) = sb.sacked.find_pair(&sb.retx, from, top, |a, b| !(a | b)) {
                sb.high_rxt = s + 1;
                return Some(s);
            }
        }
        // (4) the optional rescue retransmission is not modeled.
        None
    }

    /// RFC 6675 Section 5 step (C): while cwnd - pipe >= 1 packet, send
    /// NextSeg(); each transmission adds exactly one to pipe.
    pub(super) fn sack_send(&mut self, now: Instant, out: &mut Vec<Segment>, budget: usize) {
        let lost_below = self.lost_below();
        let mut pipe = self.pipe(lost_below);
        let cwnd = self.cwnd as u64;
        let mut sent = 0;
        while sent < budget && pipe < cwnd {
            let Some(seq) = self.next_seg(lost_below) else {
                break;
            };
            self.output(now, seq, out);
            if seq >= self.snd_nxt {
                self.snd_nxt = seq + 1;
            }
            pipe += 1;
            sent += 1;
        }
    }
}
