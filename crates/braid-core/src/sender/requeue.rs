//! Packets still waiting in a path's pacing queue that another path would
//! now deliver sooner by a margin: moved to it, as copies that keep their
//! sequence numbers (`sender/stranded.rs` does the same for packets that
//! have left; this is its counterpart for those that have not).
//!
//! Why: PET gives each packet the path that delivers it earliest as the
//! paths stand when the packet is sent. While a fast path is out of use
//! (declared down, or quiet and counted far), that is the other paths,
//! and the inner TCP's window waits in their pacing queues, up to the
//! pacing bound, which a leave holds high (`sender/bound.rs`). When the
//! fast path comes back, the packets sent after go on it and arrive long
//! before those still queued on a thin path: the peer's resequencer gives
//! their gaps up after its hold and drops them when they come. Change
//! set 13/5 of `lab/sweep-changes.sh` (41.8 Mbit/s 21 ms away, dark for
//! 2.8 s, beside 1.18 Mbit/s 8 ms away), simulated: 23 inner TCP
//! retransmissions were queued on the thin path for up to 0.63 s just
//! before the fast path came back, the packets after them arrived on the
//! fast path, the resequencer gave the 23 up after 0.35 s, and the inner
//! TCP, its retransmissions lost, waited for its timer for a second:
//! 24.36 Mbit/s where the fast path alone carries 26.68; with the rule
//! 25.32. Set 10/2 (1 Mbit/s beside a fast path declared down for a
//! while): 6.04 -> 7.24, above the fast path alone (6.85).
//!
//! Why only packets queued while the other path was out: PET's choices
//! stand otherwise. A first version moved any packet that would arrive
//! later than elsewhere by the margin; it undid PET's placement on paths
//! it keeps light on purpose (random set 7/22, a 17 Mbit/s path 10 ms
//! away losing 5 % beside 34.5 Mbit/s 142 ms away: 46.46 -> 44.54
//! Mbit/s; change sets 8/14 and 9/31 -1.50 and -0.97).
//!
//! The rule, run with the stranded rule after every feedback frame:
//! - A path is looked at once the last packet in its pacing queue leaves
//!   more than [`STRANDED_MARGIN`] from now.
//! - Only packets numbered before another path came back into use
//!   (`PathSender::back_from`: usable again, or no longer quiet) may move,
//!   and only to that path.
//! - From the back of its queue, each data packet that would arrive
//!   later than a copy on the best other path by the margin is taken out
//!   of the queue and queued on that path as a copy, ahead of its data
//!   (as a repair is, [`Sender::queue_ahead_of_data`]); the packets behind
//!   it in its old queue move up by its time on the path. The copies go
//!   oldest first. The old path is not charged a loss. If the packet was
//!   the last there, the next one links to the one before it; a packet
//!   behind it, whose header already links to it, shows the peer a link
//!   loss, which with repair on only holds the gap for the copy.
//! - Another path counts as a path would for a stranded packet: usable,
//!   paced, booked no further ahead than the pacing bound, with its
//!   delivery cost. A quiet path counts as far as the scheduler takes it
//!   (`PathState::quiet_delay`): a path that went dark is quiet until it
//!   reports again, and copies given to it would be lost.
//! - Pair packets (they measure their path), rate probes and repair
//!   copies stay where they are.

use super::stranded::{Room, STRANDED_MARGIN};
use super::{slot, Fate, Sender};
use crate::path::PathId;
use crate::repair::RepairMode;
use crate::time::{tx_time, Instant};
use crate::wire::DataFlags;

/// Flags of queued packets that stay on their path (see the module).
const STAYS: u8 =
    DataFlags::PAIR_FIRST | DataFlags::PAIR_SECOND | DataFlags::PROBE | DataFlags::REPAIR;

impl<P> Sender<P> {
    /// Moves packets waiting in a pacing queue that another path would
    /// deliver sooner (see the module). Cheap unless a pacing queue
    /// reaches beyond the margin while holding a packet numbered before
    /// another path came back: integer comparisons over the queue.
    pub(super) fn requeue_waiting(&mut self, now: Instant) {
        if self.cfg.repair.mode != RepairMode::Arq || !self.cfg.pacing {
            return;
        }
        if self.paths.iter().filter(|p| p.usable).count() < 2 {
            return;
        }
        for i in 0..self.paths.len() {
            let id = self.paths[i].id;
            let paced = &self.per_path[slot(id)].paced;
            let long = paced
                .back()
                .is_some_and(|q| q.release_at > now + STRANDED_MARGIN);
            let newest_back = self
                .paths
                .iter()
                .filter(|p| p.usable && p.id != id)
                .filter_map(|p| self.per_path[slot(p.id)].back_from)
                .max();
            let older = |b: u64| {
                paced
                    .iter()
                    .any(|q| q.tx.seq < b && q.tx.header.flags.0 & STAYS == 0)
            };
            if long && newest_back.is_some_and(older) {
                self.requeue_from(now, i);
            }
        }
    }

    /// The rule for the pacing queue of path `i`.
    fn requeue_from(&mut self, now: Instant, i: usize) {
        let id = self.paths[i].id;
        let s = slot(id);
        let delays = self.relative_delays();
        let bound = self.pacing_bound_now(now).as_secs_f64();
        let mut others = self.copy_rooms(now, id, &delays);
        // Paced paths only: a moved packet joins the other path's pacing
        // queue (`requeue_one`), which an unpaced path does not have.
        others.retain(|o| self.pacing_rate(slot(o.id)).is_some());
        // A quiet path counts as far as the scheduler takes it.
        for o in &mut others {
            let far = self.paths.iter().find(|p| p.id == o.id);
            o.cost += far
                .and_then(|p| p.quiet_delay)
                .unwrap_or_default()
                .as_secs_f64();
        }
        let back_from = |o: &Room| self.per_path[slot(o.id)].back_from;
        let margin = STRANDED_MARGIN.as_secs_f64();
        // Newest first, the latest to leave here, while a copy elsewhere
        // still arrives sooner by the margin (as `stranded_on` does).
        let mut moves = Vec::new();
        for q in self.per_path[s].paced.iter().rev() {
            if q.tx.header.flags.0 & STAYS != 0 {
                continue;
            }
            let seq = q.tx.seq;
            // Only to a path that came back after the packet was queued.
            let Some(best) = others
                .iter_mut()
                .filter(|o| back_from(o).is_some_and(|b| seq < b))
                .min_by(|a, b| a.arrives().total_cmp(&b.arrives()))
            else {
                continue;
            };
            let Some(len) = self
                .record(seq)
                .filter(|r| r.fate == Fate::InFlight)
                .map(|r| r.len)
            else {
                continue;
            };
            let here = Self::delivery_cost(&self.paths[i], len, &delays)
                + q.release_at.saturating_since(now).as_secs_f64();
            if best.booked > bound || here <= best.arrives() + margin {
                // Packets further ahead in the queue leave sooner.
                break;
            }
            best.booked += tx_time(len, best.rate).as_secs_f64();
            moves.push((seq, best.id));
        }
        // Oldest first onto the other paths, as they were numbered.
        for &(seq, to) in moves.iter().rev() {
            if let Some(k) = self.per_path[s].paced.iter().position(|q| q.tx.seq == seq) {
                self.requeue_one(now, i, k, to);
            }
        }
    }

    /// Takes the packet at position `k` of path `i`'s pacing queue off
    /// that path and queues it on path `to` as a copy, behind the copies
    /// already queued there.
    fn requeue_one(&mut self, now: Instant, i: usize, k: usize, to: PathId) {
        let from = self.paths[i].id;
        let s = slot(from);
        let (Some(j), Some(rate)) = (
            self.paths.iter().position(|p| p.id == to),
            self.pacing_rate(slot(to)),
        ) else {
            return;
        };
        let Some(seq) = self.per_path[s].paced.get(k).map(|q| q.tx.seq) else {
            return;
        };
        let Some(len) = self.record(seq).map(|r| r.len) else {
            return;
        };
        let Some(q) = self.per_path[s].paced.remove(k) else {
            return;
        };
        // The packets behind it leave its time on the path sooner.
        if let Some(own) = self.pacing_rate(s) {
            let gap = tx_time(len, own);
            let ps = &mut self.per_path[s];
            for b in ps.paced.iter_mut().skip(k) {
                b.release_at = (b.release_at - gap).max(now);
            }
            ps.pacer_free = ps.pacer_free.map(|t| (t - gap).max(now));
            if let Some((last, t)) = ps.last_release.as_mut() {
                if *last == seq {
                    *t = ps.paced.back().map_or(now, |b| b.release_at);
                }
            }
        }
        // Off its path without a loss charged, and out of its chain: the
        // next packet there links to the one before it.
        self.take_off_path(from, seq);
        let ps = &mut self.per_path[s];
        ps.unacked.retain(|&x| x != seq);
        if ps.last_seq == Some(seq) {
            // The packet now last in the queue, if it is in the chain (a
            // repair copy is not); else none is known and the next packet
            // links to nothing.
            ps.last_seq = ps
                .paced
                .back()
                .filter(|b| !b.tx.header.flags.has(DataFlags::REPAIR))
                .map(|b| b.tx.seq);
        }
        self.book_copy(now, j, seq, len);
        if let Some(r) = self.record_mut(seq) {
            // No original left on `from`, and no copy goes back there.
            r.original = None;
            r.avoid = Some(from);
        }
        self.stats.requeued += 1;
        let tx = super::Transmit::copy(to, seq);
        self.queue_ahead_of_data(now, slot(to), tx, len, rate, q.payload);
    }
}
