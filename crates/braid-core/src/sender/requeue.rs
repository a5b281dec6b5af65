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

use super::stranded::STRANDED_MARGIN;
use super::{slot, Fate, Sender};
use crate::path::PathId;
use crate::repair::RepairMode;
use crate::time::{tx_time, Instant};
use crate::wire::DataFlags;

/// Flags of queued packets that stay on their path (see the module).
const STAYS: u8 =
    DataFlags::PAIR_FIRST | DataFlags::PAIR_SECOND | DataFlags::PROBE | DataFlags::REPAIR;

/// Another path as a place for a moved packet, in seconds: when a packet
/// given to it now would arrive (delivery cost and booking) and its
/// pacing rate (bit/s), which books it further per packet.
struct Room {
    id: PathId,
    /// Packets numbered before this were queued while the path was out.
    back_from: u64,
    arrives: f64,
    booked: f64,
    rate: f64,
}

impl<P> Sender<P> {
    /// Moves packets waiting in a pacing queue that another path would
    /// deliver sooner (see the module). Cheap while no pacing queue
    /// reaches beyond the margin: one comparison per path.
    pub(super) fn requeue_waiting(&mut self, now: Instant) {
        if self.cfg.repair.mode != RepairMode::Arq || !self.cfg.pacing {
            return;
        }
        if self.paths.iter().filter(|p| p.usable).count() < 2 {
            return;
        }
        for i in 0..self.paths.len() {
            let s = slot(self.paths[i].id);
            let long = self.per_path[s]
                .paced
                .back()
                .is_some_and(|q| q.release_at > now + STRANDED_MARGIN);
            if long {
                self.requeue_from(now, i);
            }
        }
    }

    /// The rule for the pacing queue of path `i`.
    fn requeue_from(&mut self, now: Instant, i: usize) {
        let id = self.paths[i].id;
        let s = slot(id);
        let delays = self.relative_delays();
        let queues = self.send_queues(now);
        let bound = self.pacing_bound_now(now).as_secs_f64();
        let mut others: Vec<Room> = self
            .paths
            .iter()
            .filter(|q| q.usable && q.id != id)
            .filter_map(|q| {
                let booked = queues.free_at(q.id)?.saturating_since(now).as_secs_f64();
                let far = q.quiet_delay.unwrap_or_default().as_secs_f64();
                Some(Room {
                    id: q.id,
                    back_from: self.per_path[slot(q.id)].back_from?,
                    arrives: Self::delivery_cost(q, 1500, &delays) + far + booked,
                    booked,
                    rate: self.pacing_rate(slot(q.id))?,
                })
            })
            .collect();
        if others.is_empty() {
            return;
        }
        let margin = STRANDED_MARGIN.as_secs_f64();
        // Newest first, the latest to leave here, while a copy elsewhere
        // still arrives sooner by the margin (as `stranded_on` does).
        let mut moves = Vec::new();
        let mut k = self.per_path[s].paced.len();
        while k > 0 {
            k -= 1;
            let q = &self.per_path[s].paced[k];
            if q.tx.header.flags.0 & STAYS != 0 {
                continue;
            }
            let seq = q.tx.seq;
            let Some(len) = self
                .record(seq)
                .filter(|r| r.fate == Fate::InFlight)
                .map(|r| r.len)
            else {
                continue;
            };
            let here = Self::delivery_cost(&self.paths[i], len, &delays)
                + q.release_at.saturating_since(now).as_secs_f64();
            let Some(best) = others
                .iter_mut()
                .filter(|o| seq < o.back_from)
                .min_by(|a, b| a.arrives.total_cmp(&b.arrives))
            else {
                continue;
            };
            if best.booked > bound || here <= best.arrives + margin {
                // Packets further ahead in the queue leave sooner.
                break;
            }
            let gap = tx_time(len, best.rate).as_secs_f64();
            best.arrives += gap;
            best.booked += gap;
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
