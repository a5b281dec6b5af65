//! Copies of a packet on other paths (the redundant mode,
//! [`crate::redundancy`]; Phatak et al. Sec 1, "reliability first").
//!
//! A copy keeps the original's tunnel sequence number and its record: the
//! packet is acknowledged by whichever copy is reported first (a report
//! from another path than the record's goes through
//! `Sender::ack_other_copy`), and the other report is ignored as
//! unmatched. The copy is not added to its path's in-flight queue: its
//! loss needs no repair (the original may arrive), and were the original
//! lost, the original's path finds that as always. Copies are sent at once,
//! ahead of the path's pacing queue, and charged to its pacer so that the
//! path's rate is kept.

use super::pacing::Delays;
use super::{slot, Fate, Sender, Transmit};
use crate::path::{PathId, PathState};
use crate::time::{tx_time, Instant};

impl<P> Sender<P> {
    /// The expected delivery cost of a `len`-byte packet on `p` (seconds):
    /// relative one-way delay, serialisation, and the chance of losing it
    /// times the smoothed RTT (a loss costs a round), given the paths'
    /// relative delays. Used to place repair copies and redundant copies.
    pub(super) fn delivery_cost(p: &PathState, len: u32, delays: &Delays) -> f64 {
        // A quiet path counts farther (`sender/quiet.rs`).
        let d = (delays[slot(p.id)].unwrap_or_else(|| p.rtt.srtt() / 2)
            + p.quiet_delay.unwrap_or_default())
        .as_secs_f64();
        let ser =
            p.bw.estimate_bps()
                .map_or(0.0, |r| tx_time(len, r).as_secs_f64());
        d + ser + p.loss.rate() * p.rtt.srtt().as_secs_f64()
    }

    /// The usable paths other than `except` and `avoid` (the path a
    /// stranded packet was taken off, `sender/stranded.rs`), the one
    /// expected to deliver a `len`-byte packet earliest
    /// ([`Sender::delivery_cost`]) first: where copies go.
    pub(super) fn other_paths_by_cost(
        &self,
        except: PathId,
        avoid: Option<PathId>,
        len: u32,
    ) -> Vec<PathId> {
        let delays = self.relative_delays();
        let mut others: Vec<(f64, PathId)> = self
            .paths
            .iter()
            .filter(|p| p.usable && p.id != except && Some(p.id) != avoid)
            .map(|p| (Self::delivery_cost(p, len, &delays), p.id))
            .collect();
        others.sort_by(|a, b| a.0.total_cmp(&b.0));
        others.into_iter().map(|(_, id)| id).collect()
    }

    /// Sends up to `extra` copies of packet `seq` (just sent, or queued for
    /// pacing) now, each on another usable path than the original's,
    /// earliest-delivering first. Returns the copies to put on the wire;
    /// empty if the packet is unknown or no other path is usable.
    pub fn duplicate(&mut self, now: Instant, seq: u64, extra: usize) -> Vec<Transmit> {
        let Some(rec) = self.record_mut(seq).copied() else {
            return Vec::new();
        };
        if seq >= self.next_seq || matches!(rec.fate, Fate::Acked { .. }) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for id in self
            .other_paths_by_cost(rec.path, rec.avoid, rec.len)
            .into_iter()
            .take(extra)
        {
            self.stats.redundant_copies += 1;
            self.stats.redundant_bytes += rec.len as u64;
            let s = slot(id);
            self.per_path[s].repair.copies_carried += 1;
            self.per_path[s].repair.copy_bytes_carried += rec.len as u64;
            out.push(self.emit_copy(now, seq, rec.len, id));
        }
        out
    }

    /// Sends a copy of `seq` (`len` bytes) on path `id` at once: counted
    /// as the path's traffic, charged to its pacer, and flagged like a
    /// repair (no previous-on-path link). The caller counts what kind of
    /// copy it is.
    pub(super) fn emit_copy(&mut self, now: Instant, seq: u64, len: u32, id: PathId) -> Transmit {
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == id) {
            p.sent_packets += 1;
            p.sent_bytes += len as u64;
            p.last_sent = Some(now);
        }
        self.charge_pacer(now, id, len as usize);
        if let Some(r) = self.record_mut(seq) {
            r.copy_on(id);
        }
        Transmit::copy(id, seq)
    }

    /// When the oldest packet still awaiting feedback on `id` left (for
    /// spike detection: an overdue packet hints the path was cut). Packets
    /// still in the pacing queue have not left and do not count.
    pub fn oldest_in_flight_sent(&self, id: PathId) -> Option<Instant> {
        let s = slot(id);
        let &seq = self.per_path[s].unacked.front()?;
        if self.per_path[s]
            .paced
            .front()
            .is_some_and(|q| q.tx.seq == seq)
        {
            return None;
        }
        let r = self.ring[(seq as usize) & (self.ring.len() - 1)]?;
        (r.seq == seq && r.fate == Fate::InFlight).then_some(r.sent_at)
    }
}
