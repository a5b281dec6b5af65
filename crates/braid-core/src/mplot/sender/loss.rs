//! What feedback does: acknowledgements, the per-path loss rule and RTO,
//! the loss statistics of eqs 2-3 and the RFEC they trigger (eq 10).

use super::Sender;
use crate::fec::mplot;
use crate::mplot::wire::Ack;
use crate::time::{Duration, Instant};

/// PTCP's duplicate-ACK threshold (TCP's three).
const DUPTHRESH: usize = 3;

impl Sender {
    fn block_index(&self, id: u32) -> Option<usize> {
        let first = self.blocks.front()?.id;
        let i = id.checked_sub(first)? as usize;
        (i < self.blocks.len()).then_some(i)
    }

    /// An acknowledgement arrived (on any reverse path).
    pub fn handle_ack(&mut self, now: Instant, ack: &Ack) {
        // ECN-Echo per forward path: halve, at most once per RTT (§II-C).
        for (i, cc) in self.cc.iter_mut().enumerate() {
            if ack.ce_paths & (1 << i) != 0 {
                cc.on_ce(now);
            }
        }
        if let Some(rec) = self.records.remove(&ack.seq) {
            let path = usize::from(rec.path);
            let rtt = now.saturating_since(rec.sent_at);
            if rec.lost {
                self.cc[path].on_late_ack(rec.sent_at, rtt);
            } else {
                self.cc[path].settle_timeout(rec.sent_at);
                if rec.released {
                    self.cc[path].on_delivered(rec.size as usize, Some(rtt));
                } else {
                    self.cc[path].on_ack(rec.size as usize, Some(rtt));
                }
                if self.cc[path].on_round(now, rtt) && self.cfg.drain_standing_queue {
                    if let Some(b) = self.cfg.random_loss_backlog {
                        self.cc[path].on_standing_queue(now, b as f64);
                    }
                }
                self.last_ack_at[path] = Some(now);
            }
            let la = &mut self.latest_acked[path];
            if la.is_none_or(|t| rec.sent_at > t) {
                *la = Some(rec.sent_at);
            }
            if let Some(bi) = self.block_index(rec.block) {
                self.blocks[bi].on_acked(path, rec.pos, !rec.lost);
                if !rec.lost {
                    self.update_stats(bi, path);
                }
            }
            self.detect_losses(now, path);
        }
        if let Some(bi) = self.block_index(ack.block) {
            self.blocks[bi].on_have(ack.have);
            if ack.decoded {
                self.decoded(now, bi);
            }
        }
        // Blocks below the receiver's cumulative mark are decoded. Decoded
        // blocks leave the front once none of their packets is in flight:
        // until then their losses still count in eq 2 (a path that is DOWN
        // loses packets of blocks the other paths already completed).
        let mut i = 0;
        while i < self.blocks.len() && self.blocks[i].id < ack.cum_block {
            self.decoded(now, i);
            i += 1;
        }
        while self
            .blocks
            .front()
            .is_some_and(|b| b.decoded && b.in_flight() == 0)
        {
            self.blocks.pop_front();
        }
        self.trigger_rfec();
        self.purge_lost(now);
    }

    fn decoded(&mut self, now: Instant, bi: usize) {
        if !self.blocks[bi].decoded {
            self.blocks[bi].mark_decoded();
            self.stats.blocks_decoded += 1;
            if self.cfg.release_on_decode {
                self.release_block(now, self.blocks[bi].id);
            }
        }
    }

    /// The paper's cumulative ACK passes a decoded block (§II-B): its
    /// packets still in flight leave their paths' windows, and each path
    /// that had one restarts its timer, as a new cumulative ACK restarts
    /// TCP's. They stay in `outstanding`, unresolved, for eq 2: an
    /// acknowledgement still counts them delivered, the loss rule or
    /// [`stale_deadline`](Self::stale_deadline) lost.
    fn release_block(&mut self, now: Instant, id: u32) {
        for path in 0..self.cfg.paths {
            let mut any = false;
            for seq in &self.outstanding[path] {
                if let Some(r) = self.records.get_mut(seq) {
                    if r.block == id && !r.lost && !r.released {
                        r.released = true;
                        self.cc[path].on_lost(r.size as usize);
                        any = true;
                    }
                }
            }
            if any {
                self.last_ack_at[path] = Some(now);
                self.stats.released += 1;
            }
        }
    }

    /// Eq 2, then the EWMAs of eq 2–3, after a packet of the block at `bi`
    /// sent on `path` resolved (acknowledged or deemed lost).
    ///
    /// The paper does not say which block `b` the ratios are taken over.
    /// The newest resolutions belong to blocks whose losses are mostly not
    /// yet known (a loss is known a reordering window after the packets
    /// around it are acknowledged), so their ratios read low; braid takes
    /// the oldest block still held that has resolved packets on the path
    /// (`SPECS.md`'s "oldest block with feedback"). Blocks stay held until
    /// none of their packets is in flight, so that block's ratio is
    /// (nearly) final.
    fn update_stats(&mut self, bi: usize, path: usize) {
        let oldest_on_path = self
            .blocks
            .iter()
            .take(bi + 1)
            .find(|b| b.per_path[path].1 > 0)
            .map(|b| b.per_path[path]);
        // PTCP's windows are TCP's: no division by the acceptance rate.
        if let Some(p) = oldest_on_path.and_then(|(r, s)| mplot::path_loss_inst(r, s)) {
            if !self.cfg.arq {
                self.cc[path].loss = mplot::ewma(self.cc[path].loss, p);
            }
        }
        let oldest = self
            .blocks
            .iter()
            .take(bi + 1)
            .find(|b| b.per_path.iter().any(|pp| pp.1 > 0));
        if let Some(p) = oldest.and_then(|b| mplot::aggregate_loss_inst(&b.per_path)) {
            self.stats_agg.update(p);
        }
    }

    /// The reordering window of the loss rule: a quarter of the path's
    /// smoothed RTT plus the spread of the paths' smallest RTTs, which
    /// bounds how much earlier an acknowledgement can come back on one
    /// reverse path than on another (no spread when every ACK comes back
    /// on its packet's own path: `SenderConfig::acks_on_arrival_path`).
    pub(crate) fn reorder_window(&self, path: usize) -> Duration {
        let mins: Vec<Duration> = self.cc.iter().filter_map(|c| c.rtt().min_rtt()).collect();
        let spread = match (mins.iter().min(), mins.iter().max()) {
            _ if self.cfg.acks_on_arrival_path => Duration::ZERO,
            (Some(a), Some(b)) => *b - *a,
            _ => Duration::ZERO,
        };
        self.cc[path].srtt() / 4 + spread + Duration::from_millis(1)
    }

    fn detect_losses(&mut self, now: Instant, path: usize) {
        let Some(latest) = self.latest_acked[path] else {
            return;
        };
        let win = self.reorder_window(path);
        while let Some(&seq) = self.outstanding[path].front() {
            match self.records.get(&seq) {
                None => {
                    self.outstanding[path].pop_front();
                }
                Some(r) if r.lost => {
                    self.outstanding[path].pop_front();
                }
                // PTCP (TCP NewReno per path): a lost retransmission is
                // found only by the RTO, a first transmission by three
                // packets sent after it on the path being acknowledged
                // (the duplicate-ACK threshold).
                Some(r) if self.cfg.arq && r.retx => break,
                Some(_) if self.cfg.arq => {
                    let later_acked = self.outstanding[path]
                        .iter()
                        .skip(1)
                        .filter(|s| !self.records.contains_key(s))
                        .take(DUPTHRESH)
                        .count();
                    if later_acked < DUPTHRESH {
                        break;
                    }
                    self.outstanding[path].pop_front();
                    self.declare_lost(now, seq);
                }
                Some(r) if r.sent_at + win < latest => {
                    self.outstanding[path].pop_front();
                    self.declare_lost(now, seq);
                }
                Some(_) => break,
            }
        }
    }

    fn declare_lost(&mut self, now: Instant, seq: u64) {
        let Some(rec) = self.records.get_mut(&seq) else {
            return;
        };
        if rec.lost {
            return;
        }
        rec.lost = true;
        let rec = *rec;
        self.lost_records.push_back((now, seq));
        let path = usize::from(rec.path);
        if !rec.released {
            self.cc[path].on_lost(rec.size as usize);
        }
        let marks = self.cfg.ecn_trust && self.cc[path].ce_seen;
        let random = self
            .cfg
            .random_loss_backlog
            .is_some_and(|b| self.cc[path].backlog() < b as f64);
        if self.cfg.arq || (self.cfg.halve_on_loss && !marks && !random) {
            // PTCP, or a path without ECN: TCP's response to a loss, at
            // most once per RTT, and only for a packet sent after the last
            // cut (NewReno's recovery point, RFC 6582: the drops of one
            // overflow are one congestion event, however long their
            // detection takes).
            self.cc[path].on_loss(now, rec.sent_at);
        }
        self.stats.lost += 1;
        if let Some(bi) = self.block_index(rec.block) {
            self.blocks[bi].on_lost(path, rec.pos);
            self.update_stats(bi, path);
        }
    }

    /// Queues RFEC (eq 10) for every block that falls short.
    fn trigger_rfec(&mut self) {
        for b in self.blocks.iter_mut() {
            let r = b.shortfall();
            if r > 0 {
                let n = if self.cfg.arq {
                    r
                } else {
                    mplot::rfec_count(r, &self.stats_agg, self.cfg.kappa2)
                };
                self.stats.rfec_queued += b.queue_repair(n) as u64;
            }
        }
    }

    fn purge_lost(&mut self, now: Instant) {
        let keep = self
            .cc
            .iter()
            .map(|c| c.rto())
            .max()
            .unwrap_or(Duration::from_secs(1))
            * 4;
        while let Some(&(t, seq)) = self.lost_records.front() {
            if now.saturating_since(t) <= keep && self.lost_records.len() < 1 << 20 {
                break;
            }
            self.lost_records.pop_front();
            if self.records.get(&seq).is_some_and(|r| r.lost) {
                self.records.remove(&seq);
            }
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called: the
    /// earliest per-path RTO deadline, or the earliest instant a path held
    /// back by its pacer may send (then poll for packets again).
    pub fn poll_timeout(&self) -> Option<Instant> {
        (0..self.cfg.paths)
            .filter_map(|p| self.rto_deadline(p))
            .chain((0..self.cfg.paths).filter_map(|p| self.stale_deadline(p)))
            .chain(self.pace_deadline())
            .min()
    }

    /// The RTO deadline of a path: RTO after the later of its oldest
    /// packet in flight and its latest acknowledgement (the timer restarts
    /// on every acknowledgement, RFC 6298 5.3).
    fn rto_deadline(&self, path: usize) -> Option<Instant> {
        let first = self.outstanding[path]
            .iter()
            .filter_map(|s| self.records.get(s))
            .find(|r| !r.lost && !r.released)?;
        let from = match self.last_ack_at[path] {
            Some(t) => t.max(first.sent_at),
            None => first.sent_at,
        };
        Some(from + self.cc[path].rto())
    }

    /// When the oldest released packet of a path
    /// (`SenderConfig::release_on_decode`) that nothing has resolved counts
    /// as lost for eq 2: an RTO after it was sent. It is out of the window
    /// already, so this is no timeout of the path (a path that is DOWN
    /// while the others decode its blocks still shows its loss in `p̂_i`
    /// and eq 1's rank).
    fn stale_deadline(&self, path: usize) -> Option<Instant> {
        let first = self.outstanding[path]
            .iter()
            .filter_map(|s| self.records.get(s))
            .find(|r| r.released && !r.lost)?;
        Some(first.sent_at + self.cc[path].rto())
    }

    /// Fires every per-path RTO that is due: TCP's window response, and all
    /// of that path's packets in flight are deemed lost (they then feed
    /// eq 2 and the RFEC rule).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.clear_pace_wakes(now);
        for path in 0..self.cfg.paths {
            let rto = self.cc[path].rto();
            let stale: Vec<u64> = self.outstanding[path]
                .iter()
                .copied()
                .filter(|s| {
                    self.records
                        .get(s)
                        .is_some_and(|r| r.released && !r.lost && r.sent_at + rto <= now)
                })
                .collect();
            for s in stale {
                self.declare_lost(now, s);
            }
            let Some(deadline) = self.rto_deadline(path) else {
                continue;
            };
            if now < deadline {
                continue;
            }
            let seqs: Vec<u64> = self.outstanding[path].drain(..).collect();
            for s in seqs {
                self.declare_lost(now, s);
            }
            self.cc[path].on_timeout(now);
            self.stats.timeouts += 1;
        }
        while self
            .blocks
            .front()
            .is_some_and(|b| b.decoded && b.in_flight() == 0)
        {
            self.blocks.pop_front();
        }
        self.trigger_rfec();
        self.purge_lost(now);
    }
}
