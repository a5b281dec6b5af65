//! Loss detection by the sender: the FIFO rule (a later packet on the same
//! path was reported), the path's timeout (RFC 6298 from the path's RTT
//! samples), and time-based detection across paths (`rack`). A packet
//! declared lost is queued for repair when repair is on.

use super::rack::RackCase;
use super::{slot, Fate, Record, Sender};
use crate::path::{PathId, PathState};
use crate::time::{Duration, Instant};

impl<P> Sender<P> {
    /// Where `seq` stands in the path's queue of unreported packets (send order).
    pub(super) fn position(&self, path: PathId, seq: u64) -> Option<usize> {
        self.per_path[slot(path)]
            .unacked
            .iter()
            .position(|&x| x == seq)
    }

    /// Records `seq` as sent on `path` just before `before` in the path's
    /// send order (a copy that goes ahead of queued data), or last if
    /// `before` is `None` or not in flight there.
    pub(super) fn insert_unacked_before(&mut self, path: PathId, seq: u64, before: Option<u64>) {
        match before.and_then(|b| self.position(path, b)) {
            Some(i) => self.per_path[slot(path)].unacked.insert(i, seq),
            None => self.per_path[slot(path)].unacked.push_back(seq),
        }
    }

    /// Takes the first `n` entries of the path's queue of unreported
    /// packets (send order) and declares those still in flight lost.
    pub(super) fn declare_lost_front(
        &mut self,
        path: PathId,
        n: usize,
        now: Instant,
        cause: LossCause,
    ) {
        let s = slot(path);
        for _ in 0..n {
            let Some(front) = self.per_path[s].unacked.pop_front() else {
                break;
            };
            self.mark_lost(path, front, now, cause);
        }
    }

    /// Declares one packet lost if it is still in flight on `path`, and
    /// queues its repair when that is allowed.
    pub(super) fn mark_lost(&mut self, path: PathId, seq: u64, now: Instant, cause: LossCause) {
        if !self.take_off_path(path, seq) {
            return;
        }
        match cause {
            LossCause::Fifo => self.stats.lost_fifo += 1,
            LossCause::Timeout => self.stats.lost_timeout += 1,
            LossCause::Nack => self.stats.lost_nack += 1,
            LossCause::Evicted => {}
        }
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == path) {
            p.loss.on_lost(1);
        }
        if cause != LossCause::Evicted {
            self.consider_repair(path, seq, now);
        }
    }

    /// Marks packet `seq` lost if it is still in flight on `path`, and
    /// takes it out of the path's counts of packets in flight; whether it
    /// was. The caller keeps the path's `unacked` list.
    pub(super) fn take_off_path(&mut self, path: PathId, seq: u64) -> bool {
        let Some(r) = self.record_mut(seq) else {
            return false;
        };
        if r.fate != Fate::InFlight || r.path != path {
            return false;
        }
        r.fate = Fate::Lost;
        let len = u64::from(r.len);
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == path) {
            p.in_flight_packets = p.in_flight_packets.saturating_sub(1);
            p.in_flight_bytes = p.in_flight_bytes.saturating_sub(len);
        }
        true
    }

    pub(super) fn loss_timeout(&self, p: &PathState) -> Duration {
        if !p.rtt.has_samples() {
            let repair = self.cfg.repair.mode != crate::repair::RepairMode::Off;
            return match p.rtt_hint {
                // No data reported yet, but keepalives measured the path:
                // RFC 6298 2.2's first RTO from that round trip (SRTT = R,
                // RTTVAR = R/2), with repair's half RTT of margin. Waiting
                // the longest here held the first losses on a lossy path
                // (the server's first TCP ACKs on it) for 4 s, and the
                // inner TCP's RTO backed off to seconds.
                Some(h) if repair => (h * 3 + h / 2)
                    .max(self.cfg.min_loss_timeout)
                    .min(self.cfg.max_loss_timeout),
                // Nothing known about the path yet: it may be far slower
                // than the default RTT (a 1 s satellite hop); wait the longest.
                _ => self.cfg.max_loss_timeout,
            };
        }
        let rto = p.rtt.rto(
            Duration::from_millis(1),
            self.cfg.min_loss_timeout,
            self.cfg.max_loss_timeout,
        );
        if self.cfg.repair.mode == crate::repair::RepairMode::Off {
            return rto;
        }
        // With repair a spurious timeout costs a copy of the packet on
        // another path, and the receiver's NACKs find every loss that a
        // later packet on the path reveals: the timeout is left for tail
        // losses, with half the RTT more margin against feedback jitter.
        (rto + p.rtt.srtt() / 2).min(self.cfg.max_loss_timeout)
    }

    /// The oldest in-flight packet of a path: when it left, when it times
    /// out, and the case of the cross-path rule if that rule sets the
    /// deadline (`None`: the path's loss timeout).
    ///
    /// A packet still in the path's pacing queue has not left: its
    /// timeout starts when it does (`Instant::FAR_FUTURE` until then).
    /// Counting from when it was queued declared packets behind a long
    /// pacing queue on a far path lost while they were still on their
    /// way, and with repair each such packet was sent twice.
    pub(super) fn oldest_deadline(
        &self,
        p: &PathState,
    ) -> Option<(Instant, Instant, Option<RackCase>)> {
        let (r, queued) = self.oldest_unreported(slot(p.id))?;
        if queued {
            return Some((r.sent_at, Instant::FAR_FUTURE, None));
        }
        let timeout = r.sent_at + self.loss_timeout(p);
        Some(match self.rack_deadline(p, r.sent_at) {
            Some((t, case)) if t < timeout => (r.sent_at, t, Some(case)),
            _ => (r.sent_at, timeout, None),
        })
    }

    /// The record of path slot `s`'s oldest packet not yet reported, and
    /// whether it still waits in the path's pacing queue; `None` if the
    /// path has none, or its head entry is stale (acknowledged or evicted).
    pub(super) fn oldest_unreported(&self, s: usize) -> Option<(Record, bool)> {
        let &seq = self.per_path[s].unacked.front()?;
        let r = *self.record(seq)?;
        let queued = self.per_path[s]
            .paced
            .front()
            .is_some_and(|q| q.tx.seq == seq);
        Some((r, queued))
    }

    /// Declares packets lost whose feedback is overdue. Extra calls are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.expire_quiet(now);
        for i in 0..self.paths.len() {
            loop {
                let p = &self.paths[i];
                match self.oldest_deadline(p) {
                    Some((sent_at, deadline, case)) if deadline <= now => {
                        let id = p.id;
                        // Whether the path went quiet: by the cross-path
                        // rule, or at the packet's timeout.
                        let quiet = match case {
                            Some(case) => case == RackCase::Quiet,
                            None => self.quiet_at_timeout(p, sent_at, deadline),
                        };
                        if quiet {
                            self.went_quiet(now, id);
                        }
                        self.declare_lost_front(id, 1, now, LossCause::Timeout);
                    }
                    Some(_) => break,
                    None => {
                        // Stale head entry (already acked or evicted): drop it.
                        let s = slot(p.id);
                        if self.per_path[s].unacked.pop_front().is_none() {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// When `handle_timeout` next has work.
    /// Also when the next paced packet is due for `poll_transmit`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let pacing = self
            .per_path
            .iter()
            .filter_map(|q| q.paced.front().map(|p| p.release_at));
        self.paths
            .iter()
            .filter_map(|p| self.oldest_deadline(p).map(|(_, d, _)| d))
            .filter(|&d| d != Instant::FAR_FUTURE)
            .chain(pacing)
            .chain(self.quiet_expiry())
            .min()
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum LossCause {
    Fifo,
    Timeout,
    Evicted,
    /// The peer's receiver reported it (NACK).
    Nack,
}
