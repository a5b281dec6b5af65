//! Nearer paths count as far as the fastest (`PetConfig::near_floor`).
//!
//! The inner TCP leaves slow start when its round trip grows (HyStart, on
//! by default in Linux and in the simulator's CUBIC: a round's smallest
//! sample above the smallest ever by 4-16 ms). With plain EDPF the first
//! packets of a transfer go to the nearest path, which sets that smallest
//! round trip; once the window outgrows the near paths, the packets move
//! to the fastest path, further away, and the round trip rises by the
//! delay difference, which the inner TCP takes for a queue. It leaves slow
//! start with about the near paths' window, and CUBIC needs tens of
//! seconds to grow it to the bond's bandwidth-delay product. Kernel MPTCP
//! does not meet this, since each subflow has its own window and slow
//! start.
//!
//! Counted as far as the fastest path, a nearer path takes a packet only
//! when the fastest path's queue is at least that packet's service time on
//! it, and its packets wait in the resequencer behind the fastest path's:
//! no packet reaches the inner TCP sooner than over the fastest path, so
//! its round trip does not rise as the window grows, and its slow start
//! runs until the bond is full. The nearer paths still add their rate, and
//! the time their packets wait is slack in which a lost one is repaired
//! unseen.
//!
//! When: a nearer path counts as far as the fastest
//! - while the fastest path's rate is at least `near_lead` times its own
//!   (both the steady averages,
//!   [`crate::path::BandwidthEstimator::steady_bps`]), and the fastest
//!   path loses no more than `near_floor_loss` of its packets
//!   ([`crate::path::LossEstimator::recent_ratio`]): a lossy
//!   fastest path gives the inner TCP a repair round trip at its first
//!   loss, which ends slow start just the same, and then with the window of
//!   the fastest path's round trip rather than the near one's (simulated,
//!   `lab/sweep-random.sh 40 2027` set 29: 32.1 Mbit/s 48 ms away beside
//!   32.7 Mbit/s 232 ms away at 0.5 % loss, 45.9 Mbit/s plain and 26.5
//!   counted far). Between paths of about equal rate the lab parted
//!   from the simulator: 4242/30 (14.8 Mbit/s 183 ms away beside 14.2
//!   Mbit/s 85 ms away, both clean) gained a fifth in simulation and
//!   fell from 26.3 to 16.7 Mbit/s in the lab, and keeping the fastest
//!   path fixed while the two estimates crossed (so that the rule would
//!   not turn on and off) brought 13.1-13.8. The lead is taken between
//!   steady averages of the pair samples: with the fast ones (the
//!   paper's, which EDPF uses) one odd pair took it under the bound for
//!   a moment, and that moment's packets on the near path set the inner
//!   TCP's smallest round trip. 7/16 (46.1 Mbit/s 180 ms away beside 35.0
//!   Mbit/s 22 ms away, a lead of 1.32) so measured 26.7-27.0 Mbit/s in
//!   two lab runs of six with the bound at 1.25, and 7/22 (2.0) 27-34 in
//!   five of fifteen at 1.5; on the steady averages, at 1.25, 68.8-73.2
//!   (four runs) and 37.1-43.6 (ten). Where the fastest path leads by
//!   1.59-3.8 times, the lab confirmed the simulator's gains on all six
//!   sets tried;
//! - or, whatever the fastest path's loss, while the nearer path itself
//!   is thin (under `thin_near_share` of the sum of the steady averages): what
//!   such a path adds is small, what it costs the inner TCP's start is
//!   not.
//!
//! How far: as far as the fastest path, unless a nearer path that is not
//! raised (and carries data: neither thin and lossy nor kept out by the
//! ramp) is nearer than it. That path sets the inner TCP's round trip at
//! its own delay whatever the raised ones do, so a raised path counts only
//! as far as the nearest such path, unless it loses packets itself (above
//! `near_floor_loss`): then the fastest path's wait still hides the repair
//! of its losses. Change set 1/32 of `lab/sweep-changes.sh 40 1` (5.44
//! Mbit/s 9 ms away and a thin 2.69 Mbit/s 6 ms away, beside 23.66 Mbit/s
//! whose delay grew from 38 to 301 ms 4 s into the transfer, after 3 s
//! idle): the far path's packets caught by the step were repaired, it was
//! lossy, so the 5.44 Mbit/s path was no longer raised, but the thin one
//! counted 294 ms further than it is and carried nothing for the rest of
//! the run: 9.78 Mbit/s where the far path alone carries 11.06; raised to
//! its neighbour's delay, 11.00. Random set 11/0 of `lab/sweep-random.sh
//! 40 11` (a 11.06 Mbit/s path with bursty loss beside a 28.42 Mbit/s one,
//! both 11 ms away, and 29.63 Mbit/s 175 ms away) is why a lossy path
//! keeps the far count: brought near, its losses held the stream, 57.49
//! -> 55.23.
//!
//! What it costs: TCP data and full-size packets that would have arrived
//! sooner over a nearer path arrive when the fastest path's would. A bulk
//! transfer loses nothing by it (the resequencer holds them that long
//! anyway once every path is busy); an interactive session over a bond
//! whose fastest path is the far one sees that path's delay (the daemon's
//! `tuning.near_paths_wait = false` turns the rule off for such a bond).
//! Small packets without TCP data (the ACKs of a download, DNS) keep their
//! own delays.
//!
//! Measured on the random sets of `lab/sweep-random.sh` and in the lab
//! (README, "Nearer paths count as far as a clean fastest path").

use super::{Delays, Pet};
use crate::path::{PathState, MAX_PATHS};
use crate::sched::PacketInfo;
use crate::time::{Duration, Instant};

impl Pet {
    /// How much later than its own delivery time EDPF counts a full-size
    /// packet, or one of TCP data ([`crate::sched::PacketInfo::stream`]),
    /// on each path (slot-indexed): a path nearer than the fastest path
    /// counts as if it were as far as the fastest (module doc: while the
    /// fastest path is clean and well ahead of it, or while it is thin),
    /// or, if it is clean, only as far as a nearer path that is not raised
    /// (module doc, "How far"). Zero for every other path.
    ///
    /// `excess` is what EDPF already takes off each path's delivery time
    /// (`PetConfig::delay_horizon`): the raise brings the nearer path's
    /// score to the fastest path's (or that nearer path's), net of both. All zero for `pkt` if it
    /// keeps its own delays (small, and no TCP data).
    pub(super) fn near_raise(
        &self,
        pkt: &PacketInfo,
        paths: &[PathState],
        delays: &Delays,
        excess: &[Duration; MAX_PATHS],
    ) -> [Duration; MAX_PATHS] {
        let mut out = [Duration::ZERO; MAX_PATHS];
        let share = self.cfg.thin_near_share;
        let keeps_delays = pkt.keeps_delays(self.cfg.small_packet_bytes);
        if keeps_delays || !self.cfg.near_floor {
            return out;
        }
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        // Every rate here is a steady average: with the paper's fast one,
        // one odd pair on the fastest path turned the rule off for a
        // moment (the lead fell under the bound), and that moment's
        // packets on the near path set the inner TCP's smallest round trip
        // (`BandwidthEstimator::steady_bps`). Which path is fastest, and
        // which is thin, must not flicker either.
        let (Some(fastest), total) = Self::fastest_by(paths, |p| p.bw.steady_bps()) else {
            return out;
        };
        let (Some(far), Some(top)) = (delays[slot(fastest)], fastest.bw.steady_bps()) else {
            return out;
        };
        let far = far.saturating_sub(excess[slot(fastest)]);
        let clean = fastest.loss.recent_ratio() <= self.cfg.near_floor_loss;
        let thin =
            |p: &PathState| share > 0.0 && p.bw.steady_bps().is_some_and(|r| r < share * total);
        let led = |p: &PathState| {
            clean
                && p.bw
                    .steady_bps()
                    .is_some_and(|r| top >= self.cfg.near_lead * r)
        };
        let raised = |p: &PathState| p.usable && p.id != fastest.id && (led(p) || thin(p));
        // A path nearer than the fastest that is not raised, and carries
        // data, sets the inner TCP's round trip at its own delay whatever
        // the raised ones do: clean ones count only as far as the nearest
        // such path (module doc, "How far").
        // The thin rule is built only if some path is left to ask (on two
        // paths none is): this runs for every packet PET places.
        let thin_and_lossy = std::cell::OnceCell::new();
        let near = paths
            .iter()
            .filter(|p| p.usable && p.id != fastest.id && !raised(p))
            .filter(|p| !thin_and_lossy.get_or_init(|| self.thin_and_lossy(paths))(p))
            .filter(|p| !self.ramp_keeps_out(pkt, p))
            .filter_map(|p| Some(delays[slot(p)]?.saturating_sub(excess[slot(p)])))
            .fold(far, Duration::min);
        for p in paths.iter().filter(|p| raised(p)) {
            let to = if p.loss.recent_ratio() > self.cfg.near_floor_loss {
                far
            } else {
                near
            };
            if let Some(d) = delays[slot(p)] {
                out[slot(p)] = to.saturating_sub(d.saturating_sub(excess[slot(p)]));
            }
        }
        out
    }

    /// Whether [`Pet::near_raise`] raises the path in slot `slot` for
    /// `pkt`, its whole delay counted (no horizon taken off): what the
    /// pair rules of `Pet::select` ask of the path a pair is open on.
    pub(super) fn raises(
        &self,
        pkt: &PacketInfo,
        paths: &[PathState],
        delays: &Delays,
        slot: usize,
    ) -> bool {
        !self.near_raise(pkt, paths, delays, &[Duration::ZERO; MAX_PATHS])[slot].is_zero()
    }

    /// Whether a probe pair may go on a path that [`Pet::near_raise`]
    /// raises by `raise`: only while the fastest path has just been sent a
    /// packet (within `max_pair_gap`), so that the probe, which arrives
    /// sooner, waits in the resequencer behind it. Not on the pacer's
    /// booking: the tunnel's feedback frames are charged to it too, and in
    /// the lab a probe so allowed went out as the first packet of a
    /// transfer (iperf3's 37-byte first write, then its first segment as
    /// the pair's second), and set the inner TCP's smallest round trip to
    /// the near path's 35 ms. A probe of an idle bond
    /// was the first packet of the next transfer and set the inner TCP's
    /// smallest round trip to the thin path's.
    pub(super) fn near_probe_waits(
        &self,
        now: Instant,
        paths: &[PathState],
        raise: Duration,
    ) -> bool {
        if raise.is_zero() {
            return true;
        }
        let Some(fastest) = Self::fastest_by(paths, |p| p.bw.steady_bps()).0 else {
            return true;
        };
        fastest
            .last_sent
            .is_some_and(|t| now.saturating_since(t) <= self.cfg.max_pair_gap)
    }
}
