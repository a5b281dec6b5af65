//! The paths' relative one-way delays, D_l of eq. (1) as PET estimates
//! it (PET/BMP Section V-A: clock offsets cancel because only
//! differences between paths matter), and the part of them EDPF
//! disregards beyond `PetConfig::delay_horizon`.

use super::Pet;
use crate::path::{PathState, MAX_PATHS};
use crate::time::Duration;

/// Relative one-way delay of each path slot ([`Pet::relative_delays`]).
pub(super) type Delays = [Option<Duration>; MAX_PATHS];

impl Pet {
    /// Relative one-way delay of each path (slot-indexed): its base delay
    /// minus the smallest base delay of any path. `None` without samples.
    ///
    /// A path whose data has not been reported yet has no base delay; if
    /// keepalives measured it ([`PathState::owd_hint_raw_ns`] on the side
    /// that receives them, [`PathState::rtt_hint`] on the side that sends
    /// them), its keepalives' one-way delay less the nearest path's, or
    /// half the difference to the nearest path's round trip, stands in. Without it, a path 300 ms further
    /// away counted as being as near as the nearest one until data on it
    /// had been reported: its first packets (the initial pairs, a ping)
    /// went on it as if it were near, held everything behind them in the
    /// resequencer for 300 ms, and the inner TCP, whose RTO had been set
    /// by the near path's 40 ms, timed out spuriously.
    pub fn relative_delays(paths: &[PathState]) -> Delays {
        let mut out = [None; MAX_PATHS];
        let min = paths.iter().filter_map(|p| p.owd.base_raw_ns()).min();
        if let Some(min) = min {
            for p in paths {
                if let Some(b) = p.owd.base_raw_ns() {
                    out[p.id.0 as usize % MAX_PATHS] =
                        Some(Duration::from_nanos((b - min).max(0) as u64));
                }
            }
        }
        // The peer's keepalives give the one-way delays directly (plus a
        // clock offset that cancels against the nearest path's).
        let near_raw = paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| p.owd_hint_raw_ns)
            .min();
        // The nearest round trip: keepalive or data, whichever is smaller.
        let rtt = |p: &PathState| match (p.rtt_hint, p.rtt.min_rtt()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let nearest = paths.iter().filter(|p| p.usable).filter_map(rtt).min();
        for p in paths {
            let s = p.id.0 as usize % MAX_PATHS;
            if out[s].is_some() {
                continue;
            }
            let one_way = p
                .owd_hint_raw_ns
                .zip(near_raw)
                .map(|(h, n)| Duration::from_nanos((h - n).max(0) as u64));
            let half_rtt = p
                .rtt_hint
                .zip(nearest)
                .map(|(h, n)| h.saturating_sub(n) / 2);
            out[s] = one_way.or(half_rtt);
        }
        out
    }

    /// The relative delays by which PET chooses a path: `delays` with each
    /// quiet path counted farther by its [`PathState::quiet_delay`] (it
    /// stopped reporting while the others went on, `sender/quiet.rs`), or
    /// by its [`PathState::overdue_delay`] (its oldest packet in flight is
    /// past its report time, `sender/overdue.rs`) if that is larger, so
    /// that new packets go there only when the other paths are booked
    /// that far ahead. Predictions of when a packet arrives keep the
    /// measured delays: PET's queue correction learns from their error.
    pub fn choice_delays(paths: &[PathState], delays: &Delays) -> Delays {
        let mut out = *delays;
        for p in paths {
            if let Some(q) = p.quiet_delay.max(p.overdue_delay) {
                let s = p.id.0 as usize % MAX_PATHS;
                out[s] = Some(out[s].unwrap_or_default() + q);
            }
        }
        out
    }

    /// How much of each path's relative delay EDPF disregards (see
    /// `PetConfig::delay_horizon`): the part beyond the horizon.
    pub(super) fn excess_delays(
        &self,
        paths: &[PathState],
        delays: &Delays,
    ) -> [Duration; MAX_PATHS] {
        let mut out = [Duration::ZERO; MAX_PATHS];
        if !self.cfg.queue_cap || self.cfg.delay_horizon.is_nan() || self.cfg.delay_horizon <= 0.0 {
            return out;
        }
        let slot = |p: &PathState| p.id.0 as usize % MAX_PATHS;
        let nearest = paths
            .iter()
            .filter(|p| p.usable && p.bw.estimate_bps().is_some())
            .filter_map(|p| Some((delays[slot(p)]?, p)))
            .min_by_key(|(d, _)| *d);
        let Some((near_delay, near)) = nearest else {
            return out;
        };
        let Some(buffer) = near.owd.max_queueing_delay() else {
            return out;
        };
        let horizon = near_delay + buffer.mul_f64(self.cfg.delay_horizon);
        for p in paths {
            if let Some(d) = delays[slot(p)] {
                out[slot(p)] = d.saturating_sub(horizon);
            }
        }
        out
    }
}
