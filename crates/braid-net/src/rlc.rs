//! Link-layer retransmission delay of a cellular radio link: UMTS's Radio
//! Link Control in acknowledged mode (RLC AM), as a delay model.
//!
//! Why: PRISM's WWAN links were ns-2's UMTS-TDD model (Baiocchi and
//! Vacirca, PRISM ref. [5]) in the simulations and a UMTS delay trace
//! replayed by NISTnet on the testbed (PRISM Section 7.2). PRISM Section 5
//! names the consequence it is built for: "delay fluctuations resulting
//! from the aggressive local retransmission mechanism of 3G networks"
//! cause out-of-order arrivals across members. A link of fixed one-way
//! delay has none of that fluctuation (SPECS.md §1.5 abstracts UMTS as
//! rate, delay and loss).
//!
//! The model, a reading where neither PRISM nor SPECS.md gives the radio
//! parameters:
//!
//! - each packet's radio block is sent up to `max_attempts` times; each
//!   attempt fails independently with probability `block_error` (the
//!   block error rate, BLER), and every failed attempt adds `retx_ms`
//!   (one transmission time interval, TTI) before the next;
//! - RLC AM delivers in sequence, so a packet whose block was
//!   retransmitted also holds back every packet behind it (head-of-line
//!   blocking): delivery is `ready + retransmissions x retx_ms`, or, if
//!   that is no later than the previous delivery, the previous delivery
//!   plus `release_gap_ns` (0 in the PRISM files: one instant; the lab's
//!   links space such a burst as the emulator's back-to-back sends do);
//! - the transmitter does not stop for a retransmission (RLC AM keeps
//!   sending new blocks inside its window), so the link's rate is
//!   unchanged: the scenario's rate is read as the rate RLC delivers;
//! - a packet whose every attempt fails is delivered after the last one
//!   (RLC's discard after MaxDAT is not modelled: a scenario's losses
//!   stay its `loss`, which PRISM's figures set themselves).
//!
//! The draws come from the model's own stream, seeded by
//! [`RlcParams::seed`], so a link with the model is deterministic and a
//! link without it draws nothing (its other random processes are
//! unchanged).

use braid_core::time::{Duration, Instant};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Parameters of the RLC retransmission delay (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RlcParams {
    /// Probability that one transmission attempt of a packet's radio
    /// block fails (BLER).
    pub block_error: f64,
    /// Delay each retransmission adds, ms (UMTS's TTI: 10 ms).
    pub retx_ms: f64,
    /// Transmission attempts at most, the first included (>= 1).
    pub max_attempts: u32,
    /// Seed of the model's random stream.
    pub seed: u64,
    /// Spacing, ns, of packets released together after a hold: a packet
    /// that would be delivered no later than the one ahead of it follows
    /// it by this much. 0 (the PRISM files) delivers them at one instant;
    /// the lab's links (`rlc` in a lab file) use the lab emulator's
    /// spacing, as it sends such a burst back to back, and a packet pair
    /// among them then measures that spacing, as on a real device. Set in
    /// code only (`braid_sim::tunnel::link_params`), not by a scenario file.
    #[serde(skip)]
    pub release_gap_ns: u64,
}

impl Default for RlcParams {
    /// A 10 % BLER (the usual operating point of UMTS power control for
    /// packet data), one 10 ms TTI per retransmission, at most 4 attempts.
    fn default() -> Self {
        RlcParams {
            block_error: 0.1,
            retx_ms: 10.0,
            max_attempts: 4,
            seed: 0,
            release_gap_ns: 0,
        }
    }
}

impl RlcParams {
    pub fn check(&self) -> Result<(), String> {
        if !(0.0..1.0).contains(&self.block_error) {
            return Err(format!(
                "rlc.block_error must be in 0..1, got {}",
                self.block_error
            ));
        }
        if !(self.retx_ms >= 0.0 && self.retx_ms.is_finite()) {
            return Err(format!("rlc.retx_ms must be >= 0, got {}", self.retx_ms));
        }
        if self.max_attempts == 0 {
            return Err("rlc.max_attempts must be >= 1".into());
        }
        Ok(())
    }

    /// Mean retransmissions per packet: `sum_{k=1}^{N-1} p^k`.
    pub fn mean_retx(&self) -> f64 {
        let p = self.block_error;
        (1..self.max_attempts).map(|k| p.powi(k as i32)).sum()
    }

    /// Mean delay the retransmissions add to a packet, ms, before any
    /// head-of-line blocking.
    pub fn mean_extra_ms(&self) -> f64 {
        self.mean_retx() * self.retx_ms
    }
}

/// The state of one link's RLC: its stream and the last delivery, which
/// the next packet may not precede.
#[derive(Clone, Debug)]
pub struct Rlc {
    p: RlcParams,
    retx: Duration,
    rng: ChaCha8Rng,
    /// The latest delivery, `None` before the first.
    last: Option<Instant>,
}

impl Rlc {
    pub fn new(p: &RlcParams) -> Self {
        Rlc {
            p: *p,
            retx: crate::params::ms(p.retx_ms),
            rng: ChaCha8Rng::seed_from_u64(p.seed),
            last: None,
        }
    }

    /// Retransmissions of the next packet's block (0 if the first attempt
    /// succeeds).
    fn draw_retx(&mut self) -> u32 {
        let mut k = 0;
        while k + 1 < self.p.max_attempts && self.rng.gen::<f64>() < self.p.block_error {
            k += 1;
        }
        k
    }

    /// When a packet that would reach the far end at `ready` without
    /// retransmissions is delivered: its retransmissions added, and not
    /// before the packet ahead of it (in-sequence delivery).
    pub fn deliver_at(&mut self, ready: Instant) -> Instant {
        let at = ready + self.retx * self.draw_retx();
        let at = match self.last {
            Some(last) if at <= last => last + Duration::from_nanos(self.p.release_gap_ns),
            _ => at,
        };
        self.last = Some(at);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(seed: u64) -> RlcParams {
        RlcParams {
            seed,
            ..RlcParams::default()
        }
    }

    fn run(p: &RlcParams, ready: &[Instant]) -> Vec<Instant> {
        let mut r = Rlc::new(p);
        ready.iter().map(|&t| r.deliver_at(t)).collect()
    }

    /// Widely spaced packets never block each other, so the mean added
    /// delay is the parameters' `retx_ms x sum p^k` (1.11 ms here).
    #[test]
    fn mean_extra_delay_matches_the_parameters() {
        let p = params(3);
        let n = 200_000u64;
        let ready: Vec<_> = (0..n).map(|k| Instant::from_micros(k * 100_000)).collect();
        let out = run(&p, &ready);
        let extra: f64 = out
            .iter()
            .zip(&ready)
            .map(|(o, r)| (o.as_nanos() - r.as_nanos()) as f64 / 1e6)
            .sum::<f64>()
            / n as f64;
        let want = p.mean_extra_ms();
        assert!((want - 1.111).abs() < 1e-3, "{want}");
        assert!(
            (extra - want).abs() < 0.02 * want + 0.01,
            "{extra} vs {want}"
        );
        // Never more than max_attempts - 1 retransmissions.
        let max = out
            .iter()
            .zip(&ready)
            .map(|(o, r)| o.as_nanos() - r.as_nanos())
            .max()
            .unwrap();
        assert_eq!(max, 30_000_000);
    }

    /// Packets closer than a TTI queue behind a retransmitted one.
    #[test]
    fn a_retransmitted_block_holds_back_the_packets_behind_it() {
        let p = RlcParams {
            block_error: 0.5,
            ..params(9)
        };
        let ready: Vec<_> = (0..1000).map(|k| Instant::from_micros(k * 1000)).collect();
        let out = run(&p, &ready);
        let held = out
            .windows(2)
            .zip(ready.windows(2))
            .filter(|(o, r)| o[1] == o[0] && o[1] > r[1])
            .count();
        assert!(held > 100, "{held}");
    }

    #[test]
    fn no_error_no_delay() {
        let p = RlcParams {
            block_error: 0.0,
            ..params(1)
        };
        let ready: Vec<_> = (0..100).map(|k| Instant::from_micros(k * 7)).collect();
        assert_eq!(run(&p, &ready), ready);
    }

    #[test]
    fn bad_values_are_named() {
        for bad in [
            RlcParams {
                block_error: 1.0,
                ..params(0)
            },
            RlcParams {
                retx_ms: -1.0,
                ..params(0)
            },
            RlcParams {
                max_attempts: 0,
                ..params(0)
            },
        ] {
            assert!(bad.check().unwrap_err().contains("rlc."));
        }
        assert!(params(0).check().is_ok());
    }

    proptest::proptest! {
        /// In-sequence delivery: deliveries never go backwards, none is
        /// early, and none is later than its own retransmissions or the
        /// packet ahead of it explain. Same seed, same deliveries.
        #[test]
        fn in_order_and_deterministic(
            gaps in proptest::collection::vec(0u64..30_000, 1..300),
            bler in 0.0f64..0.9,
            attempts in 1u32..6,
            seed in 0u64..1000,
            gap_ns in proptest::prop_oneof![proptest::strategy::Just(0u64), 1u64..5000],
        ) {
            let p = RlcParams {
                block_error: bler,
                retx_ms: 10.0,
                max_attempts: attempts,
                seed,
                release_gap_ns: gap_ns,
            };
            let mut t = 0;
            let ready: Vec<_> = gaps.iter().map(|g| { t += g; Instant::from_micros(t) }).collect();
            let out = run(&p, &ready);
            proptest::prop_assert_eq!(&out, &run(&p, &ready));
            let cap = Duration::from_millis(10 * u64::from(attempts - 1));
            let mut prev = Instant::ZERO;
            let gap = Duration::from_nanos(gap_ns);
            for (k, (&o, &r)) in out.iter().zip(&ready).enumerate() {
                proptest::prop_assert!(o >= r && o >= prev);
                // A packet held behind the one ahead follows it by the
                // release gap (the first has none ahead).
                let held = if k == 0 { prev } else { prev + gap };
                proptest::prop_assert!(o <= (r + cap).max(held));
                if k > 0 && gap_ns > 0 {
                    proptest::prop_assert!(o > prev, "released together yet at one instant");
                }
                prev = o;
            }
        }
    }
}
