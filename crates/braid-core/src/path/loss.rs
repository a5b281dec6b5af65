//! Per-path loss: totals and an EWMA of the loss rate over packet outcomes.
//! CONTRACT (to be implemented): see the method docs.

#[derive(Clone, Debug)]
pub struct LossEstimator {
    _todo: (),
}

impl LossEstimator {
    /// `gain`: EWMA gain per packet outcome (e.g. 1/64).
    pub fn new(gain: f64) -> Self {
        let _ = gain;
        todo!()
    }
    pub fn on_delivered(&mut self, packets: u64) {
        let _ = packets;
        todo!()
    }
    pub fn on_lost(&mut self, packets: u64) {
        let _ = packets;
        todo!()
    }
    /// Smoothed loss rate in [0, 1].
    pub fn rate(&self) -> f64 {
        todo!()
    }
    pub fn delivered(&self) -> u64 {
        todo!()
    }
    pub fn lost(&self) -> u64 {
        todo!()
    }
}
