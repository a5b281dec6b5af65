//! The ramp (`PetConfig::ramp_share`): while the bond sends less than its
//! best single path carries, the bond's small paths carry no data.
//!
//! Why: a packet on any path other than the inner TCP's fastest one can be
//! lost there, and every loss holds the whole stream in the resequencer
//! until its repair arrives, a round trip later. While the inner TCP is in
//! slow start such a hold ends it: the held packets' ACKs come late,
//! HyStart (on by default in Linux and in the simulator's CUBIC) takes the
//! delay for a queue, and CUBIC then grows the window by about 5 % per
//! round trip, which on a far bond takes seconds to reach its
//! bandwidth-delay product. A small path adds little to the bond and
//! nothing at all while the bond's rate still fits on its best path, so
//! until then it only risks that hold. `lab/sweep-random.sh 40 2027` set
//! 31 (46.6 Mbit/s 160 ms away beside 7.05 Mbit/s 157 ms away with
//! bursty loss, about 1 %): its first seconds' bursts put packets on the
//! small path, one was lost in its first second and slow start ended at
//! 80 packets; 15 s after 3 s idle (seeds 1-8) it got 26.6 Mbit/s on
//! average, 10.7 at worst, against 37.0 for its fast path alone (35.6
//! through the tunnel, whose headers cost the rest). With the ramp, 33.6
//! on average, 32.2 at worst.
//!
//! The rule: the *ramp path* is the nearest path (by relative one-way
//! delay) whose rate estimate is at least [`RAMP_PEER_RATE`] of the
//! fastest's: the best single path, by rate first and then by delay. On a
//! near and a far path of equal rates (`lab/far.toml`) the estimates
//! cross as they move; the faster of the moment, if far, took the whole
//! ramp and moved the inner TCP from a 40 to a 600 ms round trip (14.3 to
//! 5.9 Mbit/s in simulation). While the rate PET has placed over about
//! the ramp path's round trip (an exponential average of the bytes of
//! every packet, with that round trip as its time constant) is under
//! `ramp_share` of the ramp path's rate, TCP data and full-size packets
//! (the ones `PetConfig::near_floor` places far too) do not go on a
//! *small* path: one whose rate is under `ramp_path_share` of the usable
//! paths' together, and whose loss could hold the stream. Three
//! exceptions, each measured:
//!
//! - A path of a larger share takes part from the start. Keeping a path
//!   of 27 % of the bond out made the inner TCP's slow start end on the
//!   ramp path's queue and lose the rest of its growth (11/18, 48.8
//!   Mbit/s 192 ms away beside 17.8 Mbit/s 56 ms away: 59.6 to 52.7
//!   Mbit/s).
//! - A path nearer than the ramp path by at least its own round trip
//!   takes part: its packets wait in the resequencer for the ramp path's
//!   anyway (`near.rs`), and a loss among them is repaired within that
//!   wait, unseen. Such a path takes the top of the inner TCP's bursts
//!   off the ramp path's queue, which keeps HyStart from ending slow start
//!   early (4242/15, 34.9 Mbit/s 299 ms away beside 4.0 Mbit/s 8 ms
//!   away: kept out, slow start ended at 528 packets instead of 1040 and
//!   the transfer fell from 35.0 to 32.3 Mbit/s).
//! - A lossy ramp path (above `near_floor_loss`, as the near rule reads
//!   it) turns the ramp off: its own losses hold the stream just the
//!   same, and it is not the best single path any more (7/34, 14.1 Mbit/s
//!   at 5 % loss 253 ms away beside 2.9 Mbit/s 9 ms away, clean: 12.2 to
//!   10.7 Mbit/s with the ramp on).
//!
//! A path kept out gets no periodic probe pairs either: a probe's two
//! packets carry data like any other, and its loss holds the stream the
//! same way. Measured with the inner TCP paced as Linux paces it
//! (`lab/sweep-random.sh 40 11` set 28: 1.47 Mbit/s at 2 % loss 182 ms
//! away beside 46.4 Mbit/s 288 ms away, 3 s idle): a probe's data packet
//! lost on the small path 3 s into the transfer held 190 packets for its
//! repair, HyStart ended slow start at 490 packets and the transfer got
//! 19.8 Mbit/s, against 36.9 for TCP alone on the fast path; without
//! those probes, 37.9. The estimate the path had when the ramp began
//! (from the probes of an idle tunnel, or of the ramp's last end) stands
//! until the ramp ends; a path without an estimate is never kept out,
//! so it is still measured.
//!
//! What stays as it was: when the ramp path has no room in its queue
//! (PET's queue cap), a packet spills as always; no other pair's second
//! packet follows its first onto a path kept out; a path whose packets
//! came late (`late.rs`) is still probed; small packets without TCP data
//! (ACKs, SYNs, DNS) keep their own delays; the sender's repairs are
//! placed by delivery cost. Once the bond's rate passes the share, EDPF places every
//! packet, and the ramp returns only when the rate falls under it again
//! (a window cut by a loss that fits on the ramp path).

use super::Pet;
use crate::path::{PathState, MAX_PATHS};
use crate::sched::PacketInfo;
use crate::time::{Duration, Instant};

use super::delays::Delays;

/// A path may be the ramp path if its rate estimate is at least this share
/// of the fastest path's (see the module's doc: between paths of about
/// equal rate, the nearest).
pub const RAMP_PEER_RATE: f64 = 0.8;

/// Time constant of the rate meter while the ramp path's round trip is
/// unknown.
const DEFAULT_TAU: Duration = Duration::from_millis(100);

/// The shortest time constant of the rate meter.
const MIN_TAU: Duration = Duration::from_millis(10);

/// The rate PET places and the paths the ramp keeps out of the data.
#[derive(Clone, Debug, Default)]
pub(super) struct Ramp {
    /// The rate placed (bit/s), averaged exponentially with the ramp
    /// path's round trip as time constant, as of `at`. Kept as a rate, not
    /// as bytes, so that a new time constant (the first round trip
    /// measured, another ramp path) does not rescale what was counted.
    bps: f64,
    at: Instant,
    /// Paths (by slot) that carry no data now.
    out: [bool; MAX_PATHS],
}

impl Pet {
    /// Whether the ramp keeps `pkt` off `p` now: TCP data and full-size
    /// packets stay off the paths it keeps out; small packets without TCP
    /// data keep their own delays.
    pub(super) fn ramp_keeps_out(&self, pkt: &PacketInfo, p: &PathState) -> bool {
        !pkt.keeps_delays(self.cfg.small_packet_bytes) && self.ramp.out[p.id.0 as usize % MAX_PATHS]
    }

    /// Counts a `len`-byte packet PET is placing at `now` and decides which
    /// paths the ramp keeps out of the data for it.
    pub(super) fn update_ramp(
        &mut self,
        now: Instant,
        len: u32,
        paths: &[PathState],
        delays: &Delays,
    ) {
        let ramp_path = Self::ramp_path(paths, delays);
        let tau = ramp_path
            .and_then(|p| p.rtt.min_rtt().or(p.rtt_hint))
            .unwrap_or(DEFAULT_TAU)
            .max(MIN_TAU)
            .as_secs_f64();
        let r = &mut self.ramp;
        let dt = now.saturating_since(r.at).as_secs_f64();
        r.bps = r.bps * (-dt / tau).exp() + f64::from(len) * 8.0 / tau;
        r.at = r.at.max(now);
        r.out = [false; MAX_PATHS];
        let (share, small) = (self.cfg.ramp_share, self.cfg.ramp_path_share);
        let Some((ramp_path, rate)) = ramp_path.and_then(|p| Some((p, p.bw.estimate_bps()?)))
        else {
            return;
        };
        let lossy = ramp_path.loss.recent_ratio() > self.cfg.near_floor_loss;
        if share.is_nan() || share <= 0.0 || lossy || r.bps >= share * rate {
            return;
        }
        let (_, total) = Self::fastest(paths);
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        let lead = |p: &PathState| {
            delays[slot(ramp_path)]
                .unwrap_or_default()
                .saturating_sub(delays[slot(p)].unwrap_or_default())
        };
        let fits = |p: &PathState| {
            p.rtt
                .min_rtt()
                .or(p.rtt_hint)
                .is_some_and(|rtt| rtt <= lead(p))
        };
        for p in paths {
            r.out[slot(p)] = p.id != ramp_path.id
                && p.bw.estimate_bps().is_some_and(|b| b < small * total)
                && !fits(p);
        }
    }

    /// The best single path: the nearest usable path whose rate estimate
    /// is at least [`RAMP_PEER_RATE`] of the fastest's.
    pub(super) fn ramp_path<'a>(paths: &'a [PathState], delays: &Delays) -> Option<&'a PathState> {
        let top = Self::fastest(paths).0?.bw.estimate_bps()?;
        paths
            .iter()
            .filter(|p| p.usable)
            .filter(|p| {
                p.bw.estimate_bps()
                    .is_some_and(|r| r >= RAMP_PEER_RATE * top)
            })
            .min_by_key(|p| delays[p.id.0 as usize % MAX_PATHS].unwrap_or_default())
    }
}
