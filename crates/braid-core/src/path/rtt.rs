//! Smoothed RTT and RTT variation, RFC 6298 Section 2.
//! CONTRACT (to be implemented): see the method docs.

use crate::time::Duration;

/// RFC 6298 estimator. Before the first sample `srtt()` is the initial value.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    _todo: (),
}

impl RttEstimator {
    /// `initial`: the value `srtt()` reports before any sample (RFC 6298 uses 1 s for the RTO).
    pub fn new(initial: Duration) -> Self {
        let _ = initial;
        todo!()
    }
    /// Feeds one RTT measurement (RFC 6298 2.2 / 2.3, alpha 1/8, beta 1/4).
    pub fn update(&mut self, sample: Duration) {
        let _ = sample;
        todo!()
    }
    pub fn srtt(&self) -> Duration {
        todo!()
    }
    pub fn rttvar(&self) -> Duration {
        todo!()
    }
    /// Smallest sample seen; `None` before the first.
    pub fn min_rtt(&self) -> Option<Duration> {
        todo!()
    }
    /// Most recent sample; `None` before the first.
    pub fn latest(&self) -> Option<Duration> {
        todo!()
    }
    /// Whether any sample arrived.
    pub fn has_samples(&self) -> bool {
        todo!()
    }
    /// RTO = SRTT + max(G, 4 RTTVAR) clamped to [min, max] (RFC 6298 2.3, 2.4).
    pub fn rto(&self, granularity: Duration, min: Duration, max: Duration) -> Duration {
        let _ = (granularity, min, max);
        todo!()
    }
}
