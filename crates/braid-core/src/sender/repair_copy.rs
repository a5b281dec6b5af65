//! A second copy of a repair, on another path, when the path the repair
//! went on loses packets ([`Sender::copy_repair`]).
//!
//! Why: the receiver's resequencer holds a gap for about one repair round
//! plus [`crate::reorder::REPAIR_HOLD_EXTRA`]. A repair lost on its way
//! needs a second round (its loss found, then another trip), so its gap is
//! given up and the inner TCP sees the loss. Early in a transfer, with few
//! packets in flight, that costs the inner TCP a timeout and its slow
//! start. The random path set 11/28 of `lab/sweep-random.sh` (a 1.47
//! Mbit/s path with 2 % loss, 181 ms, beside a 46 Mbit/s path at 288 ms)
//! lost its first repair 0.9 s into the transfer; the hold ran out 0.15 s
//! before the second repair arrived, the inner TCP timed out and spent the
//! rest of the 15 s in congestion avoidance from 23 packets: 1.15 Mbit/s
//! against 16 for the far path alone. A copy on the far path would have
//! arrived 0.26 s before the hold ran out.
//!
//! Only repairs are copied, and only while their path loses packets
//! (`REPAIR_COPY_LOSS`) and its measured round trip is longer than the
//! hold's margin over one repair round (`REPAIR_HOLD_EXTRA`, 200 ms): a
//! second repair round takes about a round trip (the lost repair found,
//! then resent), so on a nearer path it mostly ends within the hold. A
//! repair is one packet per loss, so the copies cost at most the lossy
//! path's loss rate times its rate. Copying the repairs of near lossy
//! paths too cost 5-10 % of the goodput on three random sets with small
//! paths at 5 % loss (7/24, 7/34, 7/38; mean over seeds 1-8), where it
//! bought nothing.
//!
//! The copies one path takes are bounded by [`CopyBudget`]: 5 % of the
//! path's rate, or 8 packets a second while it has no rate estimate, in
//! bursts of at most 8 packets. Unbounded, a fast lossy path's repairs crowded a slow path:
//! set 7/0 (40.9 Mbit/s at 5 % loss beside 1.45 Mbit/s) sent about 170
//! copies a second onto the slow path, whose pacer they are charged to,
//! and the goodput fell from 30.1 to 13.6 Mbit/s.

use super::{slot, Fate, Sender, Transmit};
use crate::path::PathId;
use crate::time::Instant;

/// A path loses packets, for this rule, above this smoothed loss rate
/// (one loss in 200 packets). Below it a lost repair is rarer than one in
/// 40 000 packets.
pub const REPAIR_COPY_LOSS: f64 = 0.005;

/// Share of a path's rate that copies of other paths' repairs may take.
pub const REPAIR_COPY_SHARE: f64 = 0.05;

/// Rate (bytes per second) a path without a rate estimate is credited
/// with for copies: 8 full-size packets a second. A far path is often
/// still unmeasured when the first repairs of a transfer are sent.
const COPY_FLOOR_BYTES_PER_SEC: f64 = 8.0 * 1500.0;

/// Most bytes of copies a path takes at once (and what an idle path
/// starts with): 8 full-size packets.
const COPY_BURST_BYTES: f64 = 8.0 * 1500.0;

/// A token bucket of the bytes of repair copies one path may still take.
#[derive(Copy, Clone, Debug, Default)]
pub(super) struct CopyBudget {
    /// Bytes used beyond the bucket's fill, as of `at`: the bucket is
    /// empty at `COPY_BURST_BYTES` and full at 0, so a new path starts full.
    used: f64,
    at: Option<Instant>,
}

impl CopyBudget {
    /// Takes `len` bytes if the bucket holds them, refilled at
    /// `REPAIR_COPY_SHARE` of `rate_bps` (bits per second), or at
    /// `COPY_FLOOR_BYTES_PER_SEC` without a rate.
    pub fn take(&mut self, now: Instant, rate_bps: Option<f64>, len: u32) -> bool {
        let refill = rate_bps.map_or(COPY_FLOOR_BYTES_PER_SEC, |r| REPAIR_COPY_SHARE * r / 8.0);
        let elapsed = self
            .at
            .map_or(0.0, |t| now.saturating_since(t).as_secs_f64());
        self.used = (self.used - elapsed * refill).max(0.0);
        self.at = Some(now);
        if self.used + len as f64 > COPY_BURST_BYTES {
            return false;
        }
        self.used += len as f64;
        true
    }
}

impl<P> Sender<P> {
    /// A copy of repair `seq`, just sent on `path`, on the other usable
    /// path that delivers it earliest and has budget left, if `path` loses
    /// packets and is far (see the module). `None` if the rule is off
    /// (`RepairConfig::copy_lossy`), `path` does not lose packets or is
    /// near (or has no round trip measured yet), the packet is not in
    /// flight, or no other path can take it.
    pub fn copy_repair(&mut self, now: Instant, seq: u64, path: PathId) -> Option<Transmit> {
        if !self.cfg.repair.copy_lossy {
            return None;
        }
        let p = self.path(path)?;
        let far = p.rtt.has_samples() && p.rtt.srtt() > crate::reorder::REPAIR_HOLD_EXTRA;
        if p.loss.rate() <= REPAIR_COPY_LOSS || !far {
            return None;
        }
        let rec = self.record_mut(seq).copied()?;
        if seq >= self.next_seq || rec.fate != Fate::InFlight {
            return None;
        }
        let id = self
            .other_paths_by_cost(path, rec.avoid, rec.len)
            .into_iter()
            .find(|&id| {
                let rate = self.path(id).and_then(|p| p.bw.estimate_bps());
                self.per_path[slot(id)].copy_budget.take(now, rate, rec.len)
            })?;
        self.stats.repair_copies += 1;
        // A repair the path carries (`braid status`: "repairs carried").
        self.per_path[slot(id)].repair.repairs_carried += 1;
        Some(self.emit_copy(now, seq, rec.len, id))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::pkt;
    use super::super::*;
    use super::*;
    use crate::repair::RepairMode;
    use crate::sched::RoundRobin;
    use crate::wire::NackRange;

    fn arq_sender(copy_lossy: bool) -> Sender {
        let mut cfg = SenderConfig::default();
        cfg.repair.mode = RepairMode::Arq;
        cfg.repair.copy_lossy = copy_lossy;
        cfg.max_in_flight = 1024;
        let mut s = Sender::new(cfg, Box::new(RoundRobin::default()));
        s.add_path(PathId(0), PathParams::default());
        s.add_path(PathId(1), PathParams::default());
        s
    }

    /// Sends 40 packets round robin at 0 ms, reports path 0's others
    /// arrived (its round trip `rtt_ms`), and its first `lost` lost, one
    /// NACK each; returns the lost numbers.
    fn lose_on_path0(s: &mut Sender, lost: usize, rtt_ms: u64) -> Vec<u64> {
        let t0 = Instant::from_millis(0);
        let sent: Vec<Transmit> = (0..40).map(|_| s.send(t0, &pkt()).unwrap()).collect();
        let on0: Vec<u64> = sent
            .iter()
            .filter(|t| t.path == PathId(0))
            .map(|t| t.seq)
            .collect();
        let arrived = on0[lost..].iter().map(|&seq| crate::wire::FeedbackEntry {
            seq: seq as u32,
            rx_time_ns: rtt_ms * 500_000,
        });
        s.handle_feedback_on(Instant::from_millis(rtt_ms), PathId(0), arrived);
        for &seq in on0.iter().take(lost) {
            s.handle_nack(
                Instant::from_millis(rtt_ms + 1),
                [NackRange {
                    path: PathId(0),
                    after: (seq as u32).checked_sub(2),
                    upto: seq as u32,
                }],
                [],
            );
        }
        on0[..lost].to_vec()
    }

    /// Resends `seq` on path 0 (path 1 held unusable meanwhile) and asks
    /// for its copy.
    fn repair_on_path0(s: &mut Sender, now: Instant, seq: u64) -> Option<Transmit> {
        s.set_usable(PathId(1), false);
        let tx = s
            .resend(now, seq, || ())
            .and_then(Repair::sent)
            .expect("path 0 takes the repair");
        assert_eq!(tx.path, PathId(0));
        s.set_usable(PathId(1), true);
        s.copy_repair(now, seq, PathId(0))
    }

    #[test]
    fn a_repair_on_a_lossy_path_gets_a_copy_on_the_other_path() {
        let mut s = arq_sender(true);
        let lost = lose_on_path0(&mut s, 4, 300);
        assert!(s.path(PathId(0)).unwrap().loss.rate() > REPAIR_COPY_LOSS);
        let now = Instant::from_millis(310);
        let copy = repair_on_path0(&mut s, now, lost[0]).expect("a copy");
        assert_eq!((copy.path, copy.seq), (PathId(1), lost[0]));
        assert!(copy.header.flags.has(DataFlags::REPAIR));
        assert_eq!(copy.header.prev_delta, 0);
        assert_eq!(s.stats().repair_copies, 1);
        // A repair the path carries, not a redundant-mode copy.
        assert_eq!(s.path_repair_stats(PathId(1)).repairs_carried, 1);
        assert_eq!(s.path_repair_stats(PathId(1)).copies_carried, 0);
        // Only a repair in flight is copied: not one already acknowledged.
        s.handle_feedback_on(
            Instant::from_millis(330),
            PathId(1),
            [crate::wire::FeedbackEntry {
                seq: lost[0] as u32,
                rx_time_ns: 320_000_000,
            }],
        );
        assert!(s.copy_repair(now, lost[0], PathId(0)).is_none());
    }

    #[test]
    fn no_copy_from_a_clean_path_or_with_the_rule_off() {
        // The rule off: the same losses, no copy.
        let mut s = arq_sender(false);
        let lost = lose_on_path0(&mut s, 4, 300);
        assert!(repair_on_path0(&mut s, Instant::from_millis(310), lost[0]).is_none());
        // A repair on path 1, which lost nothing, gets no copy.
        let mut s = arq_sender(true);
        let lost = lose_on_path0(&mut s, 4, 300);
        let now = Instant::from_millis(310);
        s.set_usable(PathId(0), false);
        let tx = s
            .resend(now, lost[0], || ())
            .and_then(Repair::sent)
            .unwrap();
        s.set_usable(PathId(0), true);
        assert_eq!(tx.path, PathId(1));
        assert!(s.copy_repair(now, lost[0], PathId(1)).is_none());
        assert_eq!(s.stats().repair_copies, 0);
    }

    /// A lost repair on a near path is repaired again within the
    /// receiver's hold: no copy, however lossy the path.
    #[test]
    fn a_near_lossy_path_gets_no_copies() {
        let mut s = arq_sender(true);
        let lost = lose_on_path0(&mut s, 4, 30);
        let p = s.path(PathId(0)).unwrap();
        assert!(p.rtt.srtt() < crate::reorder::REPAIR_HOLD_EXTRA);
        assert!(p.loss.rate() > REPAIR_COPY_LOSS);
        assert!(repair_on_path0(&mut s, Instant::from_millis(40), lost[0]).is_none());
        // Nor one whose round trip is not measured yet.
        let mut s = arq_sender(true);
        let t0 = Instant::from_millis(0);
        let sent: Vec<Transmit> = (0..4).map(|_| s.send(t0, &pkt()).unwrap()).collect();
        s.handle_nack(
            Instant::from_millis(5),
            [NackRange {
                path: PathId(0),
                after: None,
                upto: sent[2].seq as u32,
            }],
            [],
        );
        assert!(!s.path(PathId(0)).unwrap().rtt.has_samples());
        assert!(s.path(PathId(0)).unwrap().loss.rate() > REPAIR_COPY_LOSS);
        assert!(repair_on_path0(&mut s, Instant::from_millis(6), sent[0].seq).is_none());
    }

    #[test]
    fn the_copies_a_path_takes_are_bounded_by_its_budget() {
        let mut s = arq_sender(true);
        let lost = lose_on_path0(&mut s, 12, 300);
        let now = Instant::from_millis(310);
        let copies = lost
            .iter()
            .filter(|&&seq| repair_on_path0(&mut s, now, seq).is_some())
            .count();
        // Path 1 has no rate estimate: the burst of 8 full-size packets,
        // then nothing until the floor refills it.
        assert_eq!(copies, 8);
        assert_eq!(s.stats().repair_copies, 8);
    }

    #[test]
    fn the_budget_refills_at_a_share_of_the_rate_or_the_floor() {
        let mut b = CopyBudget::default();
        let t0 = Instant::from_secs_f64(1.0);
        assert!((0..8).all(|_| b.take(t0, None, 1500)));
        assert!(!b.take(t0, None, 1500));
        // Without a rate, the floor: 8 packets a second, one per 125 ms.
        assert!(!b.take(t0 + Duration::from_millis(100), None, 1500));
        assert!(b.take(t0 + Duration::from_millis(250), None, 1500));
        // At 100 Mbit/s, 5 % is 625 000 bytes a second: a packet every
        // 2.4 ms, and the bucket never holds more than its burst.
        let mut b = CopyBudget::default();
        assert!((0..8).all(|_| b.take(t0, Some(100e6), 1500)));
        assert!(!b.take(t0 + Duration::from_millis(1), Some(100e6), 1500));
        assert!(b.take(t0 + Duration::from_millis(3), Some(100e6), 1500));
        // A slow path's share stays 5 %: at 1 Mbit/s, 6250 bytes a
        // second, a packet per 240 ms.
        let mut b = CopyBudget::default();
        assert!((0..8).all(|_| b.take(t0, Some(1e6), 1500)));
        assert!(!b.take(t0 + Duration::from_millis(200), Some(1e6), 1500));
        assert!(b.take(t0 + Duration::from_millis(250), Some(1e6), 1500));
        let mut b = CopyBudget::default();
        assert!((0..8).all(|_| b.take(t0, Some(100e6), 1500)));
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!((0..20).filter(|_| b.take(t1, Some(100e6), 1500)).count(), 8);
    }
}
