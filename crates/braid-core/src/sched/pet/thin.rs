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
}
