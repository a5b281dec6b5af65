//! Bottleneck bandwidth from packet-pair dispersion (PET/BMP Section V-A,
//! Keshav's packet pair): two packets sent back to back on one path leave
//! the bottleneck spaced by L / B, so B = L / dispersion. Samples are
//! smoothed with an EWMA whose weight on the *new* sample is 0.8 (the
//! paper's footnote 3: react fast to current conditions).
//! CONTRACT (to be implemented): see the method docs.

use crate::time::Duration;

#[derive(Clone, Debug)]
pub struct BandwidthEstimator {
    _todo: (),
}

impl BandwidthEstimator {
    /// `weight_new` in (0, 1]: weight of a new sample (paper: 0.8).
    pub fn new(weight_new: f64) -> Self {
        let _ = weight_new;
        todo!()
    }
    /// A pair's second packet had `len_bytes` and arrived `dispersion`
    /// after the first. A zero dispersion is ignored (no information).
    /// Returns the sample in bit/s when it was used.
    pub fn on_pair(&mut self, len_bytes: u32, dispersion: Duration) -> Option<f64> {
        let _ = (len_bytes, dispersion);
        todo!()
    }
    /// Smoothed estimate in bit/s; `None` before the first sample.
    pub fn estimate_bps(&self) -> Option<f64> {
        todo!()
    }
    /// Number of samples taken.
    pub fn samples(&self) -> u64 {
        todo!()
    }
}
