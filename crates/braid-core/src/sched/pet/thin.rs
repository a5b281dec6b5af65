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
//!   ([`Pet::near_raise`], which counts such a path as far as the
//!   fastest whatever the fastest path's loss).

use super::Pet;
use crate::path::PathState;

/// A thin path counts as lossy only while the Wilson lower bound of its
/// loss ratio over the recent window (`LossEstimator::run_capped_lower_bound`),
/// this many standard deviations down (one-sided 95 %), is above
/// `PetConfig::thin_loss`, as well as its smoothed rate.
///
/// Why: the smoothed rate (gain 1/64) reads one loss as 1.6 %, three times
/// `thin_loss`, however many packets the path delivered before it, and a
/// path left out carries only probes, which take about 36 s to bring it
/// back under. Set 2027/11 of `lab/sweep-random.sh 40 2027` (1.49 Mbit/s
/// 14 ms away at 0.1 % loss beside 14.6 Mbit/s 151 ms away), uploaded in
/// the lab: one random loss after 449 packets left the thin path out for
/// the rest of the run, 13.59-13.81 Mbit/s against 14.07 for the fast
/// path alone. The ratio alone (a build made for the measurement) left it
/// out in three runs of ten, on one loss in its first hundred packets or
/// two in 157; with the bound it carried its share in five of five,
/// 14.75-14.91. One loss is never enough after 50 packets, nor two after
/// 160; a path at 2 % loss (11/11, 11/28) shows four in 200, and one with
/// bursty loss (7/29) a burst of two or three in its first hundred, both
/// above the bound.
pub(super) const THIN_LOSS_Z: f64 = 1.645;

impl Pet {
    /// The usable path with the largest rate estimate, and the sum of the
    /// usable paths' estimates.
    pub(super) fn fastest(paths: &[PathState]) -> (Option<&PathState>, f64) {
        Self::fastest_by(paths, |p| p.bw.estimate_bps())
    }

    /// [`Pet::fastest`] by another reading of the paths' rates (the near
    /// rule reads the steady averages, `BandwidthEstimator::steady_bps`).
    pub(super) fn fastest_by(
        paths: &[PathState],
        rate: impl Fn(&PathState) -> Option<f64>,
    ) -> (Option<&PathState>, f64) {
        let usable = || paths.iter().filter(|p| p.usable);
        let total: f64 = usable().filter_map(&rate).sum();
        let fastest = usable()
            .filter_map(|p| Some((rate(p)?, p)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, p)| p);
        (fastest, total)
    }

    /// Which paths carry no data for being thin and lossy
    /// (`PetConfig::thin_share`): a rate estimate below `thin_share` of the
    /// usable paths' together, and a loss rate above `thin_loss` both
    /// smoothed and, with [`THIN_LOSS_Z`], over the recent window (where a
    /// run of losses counts at most `path::loss::RUN_CAP`: a path that went
    /// dark after many clean packets is not lossy for it), while
    /// the fastest path's base round trip is over `thin_far_rtt`. A
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
                && p.loss.run_capped_lower_bound(THIN_LOSS_Z) > loss
                && p.bw.estimate_bps().is_some_and(|r| r < share * total)
        }
    }
}
