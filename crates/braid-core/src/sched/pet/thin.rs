//! Thin paths: a path whose rate is a small share of the bond's
//! (`PetConfig::thin_share`, `thin_near_share`). What such a path adds is
//! at most that share;
//! what it can cost the inner TCP is much more, in two ways, each with its
//! rule here:
//!
//! - a thin path that loses packets holds the whole stream in the
//!   resequencer at every loss, for a repair round trip
//!   ([`Pet::thin_and_lossy`]);
//! - a thin path nearer than the fastest path sets the inner TCP's
//!   minimum round trip while the window is small, and its slow start
//!   ends when the window moves onto the fastest path
//!   ([`Pet::thin_near_raise`]).

use super::{Delays, Pet};
use crate::path::{PathState, MAX_PATHS};
use crate::sched::PacketInfo;
use crate::time::{Duration, Instant};

impl Pet {
    /// The usable path with the largest rate estimate, and the sum of the
    /// usable paths' estimates.
    fn fastest(paths: &[PathState]) -> (Option<&PathState>, f64) {
        let usable = || paths.iter().filter(|p| p.usable);
        let total: f64 = usable().filter_map(|p| p.bw.estimate_bps()).sum();
        let fastest = usable()
            .filter_map(|p| Some((p.bw.estimate_bps()?, p)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p);
        (fastest, total)
    }

    /// Which paths carry no data for being thin and lossy
    /// (`PetConfig::thin_share`): a rate estimate below `thin_share` of the
    /// usable paths' together and a smoothed loss rate above `thin_loss`,
    /// while the fastest path's base round trip is over `thin_far_rtt`. A
    /// path without an estimate is not thin, nor is the fastest path (with
    /// more than ten paths it could be under the share itself).
    pub(super) fn thin_and_lossy<'a>(
        &self,
        paths: &'a [PathState],
    ) -> impl Fn(&PathState) -> bool + use<'a> {
        let (share, loss) = (self.cfg.thin_share, self.cfg.thin_loss);
        let (fastest, total) = Self::fastest(paths);
        let far = fastest
            .and_then(|p| p.rtt.min_rtt().or(p.rtt_hint))
            .is_some_and(|rtt| rtt > self.cfg.thin_far_rtt);
        let fastest = fastest.map(|p| p.id);
        move |p: &PathState| {
            far && share > 0.0
                && Some(p.id) != fastest
                && p.loss.rate() > loss
                && p.bw.estimate_bps().is_some_and(|r| r < share * total)
        }
    }

    /// How much later than its own delivery time EDPF counts a full-size
    /// packet, or one of TCP data ([`crate::sched::PacketInfo::stream`]),
    /// on each path (slot-indexed; `PetConfig::thin_near_floor`): a
    /// thin path nearer than the fastest path counts as if it were as far
    /// as the fastest, so it takes a packet only when the fastest path's
    /// queue is at least that packet's service time on the thin path. Zero
    /// for every other path.
    ///
    /// Why: the inner TCP leaves slow start when its round trip grows
    /// (HyStart, on by default in Linux and in the simulator's CUBIC: a
    /// round's smallest sample above the smallest ever by 4-16 ms). With
    /// plain EDPF the first packets of a transfer go to the nearest path,
    /// which sets that smallest round trip; once the window outgrows a
    /// thin near path, the packets move to the fast far path and the
    /// round trip rises by the delay difference, which the inner TCP takes
    /// for a queue: it leaves slow start with a window of a few dozen
    /// packets, and CUBIC needs tens of seconds to grow it to the fast
    /// path's bandwidth-delay product. Kernel MPTCP does not meet this,
    /// since each subflow has its own window and slow start. Counted as
    /// far as the fastest path, the thin path takes packets only behind
    /// queued packets of the fastest path, which the resequencer releases
    /// first: no packet reaches the inner TCP sooner than over the fastest
    /// path, so its round trip does not rise as the window grows, and the
    /// thin path still adds its rate once the fastest path is busy.
    ///
    /// Measured on the random sets of `lab/sweep-random.sh` (15 s,
    /// simulated; see README, "Thin paths").
    ///
    /// `excess` is what EDPF already takes off each path's delivery time
    /// (`PetConfig::delay_horizon`): the raise brings the thin path's
    /// score to the fastest path's, net of both. All zero for `pkt` if it
    /// keeps its own delays (small, and no TCP data).
    pub(super) fn thin_near_raise(
        &self,
        pkt: &PacketInfo,
        paths: &[PathState],
        delays: &Delays,
        excess: &[Duration; MAX_PATHS],
    ) -> [Duration; MAX_PATHS] {
        let mut out = [Duration::ZERO; MAX_PATHS];
        let share = self.cfg.thin_near_share;
        let keeps_delays = pkt.len <= self.cfg.small_packet_bytes && !pkt.stream;
        if keeps_delays || !self.cfg.thin_near_floor || share.is_nan() || share <= 0.0 {
            return out;
        }
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        let (Some(fastest), total) = Self::fastest(paths) else {
            return out;
        };
        let Some(far) = delays[slot(fastest)] else {
            return out;
        };
        for p in paths.iter().filter(|p| p.usable && p.id != fastest.id) {
            let thin = p.bw.estimate_bps().is_some_and(|r| r < share * total);
            if let (true, Some(d)) = (thin, delays[slot(p)]) {
                let far = far.saturating_sub(excess[slot(fastest)]);
                out[slot(p)] = far.saturating_sub(d.saturating_sub(excess[slot(p)]));
            }
        }
        out
    }

    /// Whether a probe pair may go on a path that [`Pet::thin_near_raise`]
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
    pub(super) fn thin_probe_waits(
        &self,
        now: Instant,
        paths: &[PathState],
        raise: Duration,
    ) -> bool {
        if raise.is_zero() {
            return true;
        }
        let Some(fastest) = Self::fastest(paths).0 else {
            return true;
        };
        fastest
            .last_sent
            .is_some_and(|t| now.saturating_since(t) <= self.cfg.max_pair_gap)
    }
}
