//! Relative one-way delay without synchronised clocks (PET/BMP Section V-A:
//! "only the relative delay between the different paths matters").
//! A raw sample is `receiver_clock_at_arrival - sender_clock_at_send` in
//! nanoseconds, signed: it equals the one-way delay plus an unknown clock
//! offset common to every path of a session. The base (propagation) delay
//! of a path is the minimum of the raw samples over a sliding window; the
//! difference of two paths' bases is their relative one-way delay.
//! CONTRACT (to be implemented): see the method docs.

use crate::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct OwdEstimator {
    _todo: (),
}

impl OwdEstimator {
    /// `window`: how long a minimum is remembered (windowed-min filter, so a
    /// path whose route lengthens is noticed after at most `window`).
    pub fn new(window: Duration) -> Self {
        let _ = window;
        todo!()
    }
    /// One raw sample (offset included) observed at `now`.
    pub fn on_sample(&mut self, now: Instant, raw_ns: i64) {
        let _ = (now, raw_ns);
        todo!()
    }
    /// Windowed minimum of the raw samples; `None` before the first.
    pub fn base_raw_ns(&self) -> Option<i64> {
        todo!()
    }
    /// EWMA (weight 1/8) of the raw samples; `None` before the first.
    pub fn smoothed_raw_ns(&self) -> Option<i64> {
        todo!()
    }
    /// smoothed - base: the queueing delay currently added on this path.
    pub fn queueing_delay(&self) -> Duration {
        todo!()
    }
}
