//! Parameters of one link direction, named as in the lab files
//! (`lab/README.md`): a lab path's `rate_mbit`, `delay_ms`, `queue_bytes`,
//! `ecn_mark_bytes`, `loss`, `gilbert` and `trace` mean the same here, so a lab file's
//! resolved direction converts field by field. The models the lab files
//! lack (`red`, `markov`, `cross`, `rlc`, trace `up`) are additions with
//! the same units.

use braid_core::time::Duration;
use serde::{Deserialize, Serialize};

pub use crate::rlc::RlcParams;

/// One direction of one path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkParams {
    /// Serialization rate of IP bytes, Mbit/s.
    pub rate_mbit: f64,
    /// One-way propagation delay, ms.
    pub delay_ms: f64,
    /// Drop-tail limit on the IP bytes waiting for or in serialization at
    /// an arrival (a router's output queue), as the lab emulator counts it.
    pub queue_bytes: u64,
    /// The lab's ECN step (`ecn_mark_bytes`): an ECN-capable packet that
    /// finds more than this many IP bytes queued at its arrival is
    /// delivered marked Congestion Experienced instead of waiting for the
    /// drop-tail limit; other packets see the plain queue. A mark on the
    /// instantaneous queue at one threshold, as the emulator marks
    /// (`crates/braid-lab/src/link.rs`), so a run stays deterministic.
    pub ecn_mark_bytes: Option<u64>,
    /// Bernoulli loss probability per packet (used when neither `gilbert`
    /// nor `markov` is set).
    pub loss: f64,
    /// Gilbert-Elliott per-packet loss (as the lab's `gilbert`).
    pub gilbert: Option<GilbertParams>,
    /// n-state Markov-modulated loss with exponential holding times.
    pub markov: Option<MarkovParams>,
    /// RED instead of drop-tail below `queue_bytes`.
    pub red: Option<RedParams>,
    /// Time-varying parameters and the path's presence.
    pub trace: Vec<TraceStep>,
    /// Cross traffic sharing this direction's queue.
    pub cross: Option<ParetoOnOffParams>,
    /// Link-layer retransmission delay with in-sequence delivery (a
    /// cellular radio link's RLC, [`crate::rlc`]); absent, the one-way
    /// delay is fixed.
    pub rlc: Option<RlcParams>,
}

impl Default for LinkParams {
    fn default() -> Self {
        LinkParams {
            rate_mbit: 10.0,
            delay_ms: 0.0,
            queue_bytes: u64::MAX,
            ecn_mark_bytes: None,
            loss: 0.0,
            gilbert: None,
            markov: None,
            red: None,
            trace: Vec::new(),
            cross: None,
            rlc: None,
        }
    }
}

impl LinkParams {
    /// A plain link: rate, delay and drop-tail limit.
    pub fn new(rate_mbit: f64, delay_ms: f64, queue_bytes: u64) -> Self {
        LinkParams {
            rate_mbit,
            delay_ms,
            queue_bytes,
            ..LinkParams::default()
        }
    }

    pub fn rate_bps(&self) -> f64 {
        self.rate_mbit * 1e6
    }

    pub fn delay(&self) -> Duration {
        ms(self.delay_ms)
    }

    /// What is wrong with these parameters, if anything, in words that
    /// name the field.
    pub fn check(&self) -> Result<(), String> {
        if !(self.rate_mbit > 0.0 && self.rate_mbit.is_finite()) {
            return Err(format!("rate_mbit must be > 0, got {}", self.rate_mbit));
        }
        if !(self.delay_ms >= 0.0 && self.delay_ms.is_finite()) {
            return Err(format!("delay_ms must be >= 0, got {}", self.delay_ms));
        }
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(format!("loss must be in 0..=1, got {}", self.loss));
        }
        if let Some(m) = &self.markov {
            m.check()?;
        }
        if let Some(r) = &self.red {
            r.check()?;
        }
        if let Some(c) = &self.cross {
            c.check()?;
        }
        if let Some(r) = &self.rlc {
            r.check()?;
        }
        for w in self.trace.windows(2) {
            if w[1].at_s < w[0].at_s {
                return Err("trace steps must be in order of at_s".into());
            }
        }
        Ok(())
    }
}

/// Gilbert-Elliott two-state loss, per packet (the lab's `gilbert`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertParams {
    /// Per-packet probability of moving from the good to the bad state.
    pub p_good_bad: f64,
    /// Per-packet probability of moving from the bad to the good state.
    pub p_bad_good: f64,
    /// Loss probability in the bad state (default 1).
    #[serde(default = "one")]
    pub loss_bad: f64,
    /// Loss probability in the good state (default 0).
    #[serde(default)]
    pub loss_good: f64,
}

fn one() -> f64 {
    1.0
}

/// One state of a Markov-modulated loss process.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovState {
    /// Loss probability of a packet arriving in this state; 1 is a DOWN
    /// state (MPLOT §IV-B: "100 % DOWN").
    pub loss: f64,
    /// Mean of the exponential holding time, ms.
    pub mean_holding_ms: f64,
}

/// n-state continuous-time Markov-modulated loss (MPLOT §IV-A/B): the
/// process stays in a state for an exponential time, then jumps to another
/// state with the probabilities of that state's row of `jump`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovParams {
    pub states: Vec<MarkovState>,
    /// `jump[i][j]`: probability that a jump out of state `i` goes to `j`
    /// (the diagonal is ignored; rows are normalized). Empty = uniform over
    /// the other states.
    #[serde(default)]
    pub jump: Vec<Vec<f64>>,
    /// Index of the state at time zero.
    #[serde(default)]
    pub initial: usize,
}

impl MarkovParams {
    /// MPLOT §IV-A (Fig 3): 25 % and 75 % loss, exponential holding times
    /// with a mean of 250 ms each, 50 % on average.
    pub fn mplot_two_state() -> Self {
        MarkovParams {
            states: vec![
                MarkovState {
                    loss: 0.25,
                    mean_holding_ms: 250.0,
                },
                MarkovState {
                    loss: 0.75,
                    mean_holding_ms: 250.0,
                },
            ],
            jump: Vec::new(),
            initial: 0,
        }
    }

    /// MPLOT §IV-B (Fig 5): the two states above plus DOWN (100 % loss,
    /// mean 1 s); a jump out of ON or OFF goes to DOWN with probability
    /// `p_down`, and DOWN returns to ON or OFF alike.
    pub fn mplot_with_down(p_down: f64) -> Self {
        let mut m = Self::mplot_two_state();
        m.states.push(MarkovState {
            loss: 1.0,
            mean_holding_ms: 1000.0,
        });
        m.jump = vec![
            vec![0.0, 1.0 - p_down, p_down],
            vec![1.0 - p_down, 0.0, p_down],
            vec![0.5, 0.5, 0.0],
        ];
        m
    }

    pub fn check(&self) -> Result<(), String> {
        if self.states.is_empty() {
            return Err("markov.states must not be empty".into());
        }
        for (i, s) in self.states.iter().enumerate() {
            if !(0.0..=1.0).contains(&s.loss) {
                return Err(format!("markov.states[{i}].loss must be in 0..=1"));
            }
            if !(s.mean_holding_ms > 0.0 && s.mean_holding_ms.is_finite()) {
                return Err(format!("markov.states[{i}].mean_holding_ms must be > 0"));
            }
        }
        if self.initial >= self.states.len() {
            return Err("markov.initial must name a state".into());
        }
        if !self.jump.is_empty() {
            if self.jump.len() != self.states.len()
                || self.jump.iter().any(|r| r.len() != self.states.len())
            {
                return Err("markov.jump must be a square matrix, one row per state".into());
            }
            for (i, r) in self.jump.iter().enumerate() {
                let off: f64 = r
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, &p)| p)
                    .sum();
                if r.iter().any(|&p| p < 0.0 || !p.is_finite()) || (off <= 0.0 && r.len() > 1) {
                    return Err(format!(
                        "markov.jump[{i}] needs non-negative entries with a positive sum off the diagonal"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Random Early Detection (Floyd and Jacobson 1993) with ECN marking
/// (RFC 3168 Section 5): between the thresholds an arriving packet is
/// dropped, or marked if it is ECN-capable, with a probability rising to
/// `max_p`; above `max_th_bytes` every packet is dropped (unless `gentle`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedParams {
    pub min_th_bytes: u64,
    pub max_th_bytes: u64,
    pub max_p: f64,
    /// Weight of the average queue estimator (`w_q`).
    pub weight: f64,
    /// Mark ECN-capable packets instead of dropping them early.
    pub ecn: bool,
    /// Floyd's "gentle" RED (ns-2 `gentle_`, on by default there): between
    /// `max_th` and `2 max_th` the signal probability rises linearly from
    /// `max_p` to 1 (marks for ECN-capable packets) instead of every packet
    /// being dropped above `max_th`.
    pub gentle: bool,
    /// Byte mode (Floyd and Jacobson 1993, Section 4, for a queue measured
    /// in bytes; ns-2's `bytes_`): the count since the last signal is in
    /// bytes, and the signal probability is scaled by the arriving
    /// packet's size over this many bytes (at most 1), so a flow's marks
    /// follow its bytes, not its packet count. `None`: every packet alike
    /// (ns-2's packet mode), where a source of small packets is signalled
    /// per byte as many times more often as its packets are smaller.
    pub max_packet_bytes: Option<u32>,
}

impl Default for RedParams {
    fn default() -> Self {
        // Floyd's recommendations: max_th = 3 min_th, max_p 0.1, w_q 0.002.
        RedParams {
            min_th_bytes: 15_000,
            max_th_bytes: 45_000,
            max_p: 0.1,
            weight: 0.002,
            ecn: true,
            gentle: false,
            max_packet_bytes: None,
        }
    }
}

impl RedParams {
    pub fn check(&self) -> Result<(), String> {
        if self.max_th_bytes <= self.min_th_bytes {
            return Err("red.max_th_bytes must exceed red.min_th_bytes".into());
        }
        if !((0.0..=1.0).contains(&self.max_p) && self.weight > 0.0 && self.weight <= 1.0) {
            return Err("red.max_p must be in 0..=1 and red.weight in (0, 1]".into());
        }
        if self.max_packet_bytes == Some(0) {
            return Err(
                "red.max_packet_bytes must be above 0 (or left out for packet mode)".into(),
            );
        }
        Ok(())
    }
}

/// Pareto on/off cross traffic (PRISM §8.3.2, Fig 12): during an on
/// period packets leave the source at `rate_mbit`; on periods are Pareto
/// with mean `mean_on_ms` and shape `shape`; off periods last `off_ms`
/// (PRISM: a fixed 1 s), or are Pareto with that mean if `off_pareto`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ParetoOnOffParams {
    pub rate_mbit: f64,
    pub packet_bytes: u32,
    pub mean_on_ms: f64,
    pub shape: f64,
    pub off_ms: f64,
    pub off_pareto: bool,
}

impl Default for ParetoOnOffParams {
    fn default() -> Self {
        ParetoOnOffParams {
            rate_mbit: 0.4,
            packet_bytes: 1500,
            mean_on_ms: 1000.0,
            shape: 1.5,
            off_ms: 1000.0,
            off_pareto: false,
        }
    }
}

impl ParetoOnOffParams {
    pub fn check(&self) -> Result<(), String> {
        if !positive(self.rate_mbit) || self.packet_bytes == 0 {
            return Err("cross.rate_mbit and cross.packet_bytes must be > 0".into());
        }
        if !positive(self.shape - 1.0) {
            return Err("cross.shape must be > 1 (a Pareto mean exists only then)".into());
        }
        if !positive(self.mean_on_ms) || !(positive(self.off_ms) || self.off_ms == 0.0) {
            return Err("cross.mean_on_ms must be > 0 and cross.off_ms >= 0".into());
        }
        Ok(())
    }
}

/// From `at_s` seconds after the start, the values given replace the
/// current ones (the lab's `trace`; `up` is an addition: `false` takes the
/// path away, every packet offered is dropped, `true` brings it back, so a
/// path that joins late starts with `{ at_s = 0, up = false }`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraceStep {
    pub at_s: f64,
    pub rate_mbit: Option<f64>,
    pub delay_ms: Option<f64>,
    /// Replaces the loss process by Bernoulli loss (as the lab does).
    pub loss: Option<f64>,
    pub up: Option<bool>,
}

/// Finite and above zero (NaN is not).
fn positive(x: f64) -> bool {
    x > 0.0 && x.is_finite()
}

pub(crate) fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v.max(0.0) / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_names_parse_and_bad_values_are_named() {
        let p: LinkParams = toml::from_str(
            "rate_mbit = 8.0\ndelay_ms = 10.0\nqueue_bytes = 20000\nloss = 0.01\n\
             trace = [{ at_s = 1.0, rate_mbit = 2.0 }, { at_s = 2.0, up = false }]",
        )
        .unwrap();
        assert_eq!(p.rate_bps(), 8e6);
        assert_eq!(p.delay(), Duration::from_millis(10));
        assert_eq!(p.trace[1].up, Some(false));
        assert!(p.check().is_ok());
        let bad = LinkParams {
            rate_mbit: 0.0,
            ..p.clone()
        };
        assert!(bad.check().unwrap_err().contains("rate_mbit"));
        assert!(toml::from_str::<LinkParams>("rate: 1").is_err());
        assert!(MarkovParams::mplot_with_down(0.05).check().is_ok());
        let mut m = MarkovParams::mplot_two_state();
        m.jump = vec![vec![0.0]];
        assert!(m.check().unwrap_err().contains("square"));
    }
}
