//! The forms of MPLOT's formulas the tunnel's FEC uses (conn/tunnel/fec.rs,
//! sender/fec.rs), next to the transport's own in the parent module.
//!
//! Eqs 2-3, 9, 10 and 12 again, shaped for a tunnel that codes runs of
//! consecutive packets rather than MPLOT's transport blocks: loss as a share
//! of the packets each path was sent, a code rate capped at one parity
//! packet per data packet, and a p-block split into data and parity counts.

use super::EWMA_WEIGHT;

/// κ1 of eq 9: proactive FEC provisions for the mean loss plus one
/// standard deviation, so a block fails its first round with probability
/// at most 1/(1 + κ1²) = 0.5 (Cantelli).
pub const KAPPA_PROACTIVE: f64 = 1.0;
/// κ2 of eq 10, as in MPLOT's simulations: reactive FEC covers the mean.
pub const KAPPA_REACTIVE: f64 = 0.0;
/// Weight of the newest sample in the EWMAs of eqs 2-3.
/// Loss rates are clamped below this in eqs 9-10, which caps the code
/// rate `p/(1−p)` at 1: at most one parity packet per data packet. At
/// p → 1 the rate has no bound; an aggregate loss above one half comes
/// from paths going down rather than random loss, and parity beyond the
/// data's own volume starved the data in the simulator's swarm (seed
/// 193: 5505 parity frames for 2469 data packets, no progress for 13 s).
pub const MAX_LOSS: f64 = 0.5;

/// The median of `v` (mean of the middle two for an even count); 0 for
/// an empty slice.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// eq 2's instantaneous aggregate loss of one block: each path's loss
/// `1 − R_i/S_i` weighted by its share `S_i / Σ S_j` of the block's
/// packets, which is `1 − Σ R_i / Σ S_i`. `sent_delivered` holds
/// `(S_i, R_i)` per path; `None` when nothing was sent.
pub fn block_loss(sent_delivered: &[(u64, u64)]) -> Option<f64> {
    let sent: u64 = sent_delivered.iter().map(|&(s, _)| s).sum();
    if sent == 0 {
        return None;
    }
    let p = sent_delivered
        .iter()
        .filter(|&&(s, _)| s > 0)
        .map(|&(s, r)| {
            let pi = 1.0 - (r.min(s) as f64) / (s as f64);
            (s as f64 / sent as f64) * pi
        })
        .sum::<f64>();
    Some(p.clamp(0.0, 1.0))
}

/// eqs 2-3: the aggregate loss estimate `p̂_agg` and the estimate of its
/// variance `σ̂²_agg`, both EWMAs of weight [`EWMA_WEIGHT`].
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct AggregateLoss {
    mean: f64,
    var: f64,
}

impl AggregateLoss {
    /// Takes one block's instantaneous loss `p_inst` (eq 2). The
    /// deviation of eq 3 is taken against the mean before this update,
    /// the mean the block was provisioned with.
    pub fn update(&mut self, p_inst: f64) {
        let p = p_inst.clamp(0.0, 1.0);
        let dev = (p - self.mean) * (p - self.mean);
        self.mean = (1.0 - EWMA_WEIGHT) * self.mean + EWMA_WEIGHT * p;
        self.var = (1.0 - EWMA_WEIGHT) * self.var + EWMA_WEIGHT * dev;
    }

    /// `p̂_agg`.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// `σ̂_agg`, the square root of eq 3's EWMA.
    pub fn deviation(&self) -> f64 {
        self.var.sqrt()
    }
}

/// `q / (1 − q)` for `q = p + κ σ`, clamped to `[0, MAX_LOSS]`: the
/// extra packets per data packet that a loss rate `q` costs.
fn overhead(p: f64, sigma: f64, kappa: f64) -> f64 {
    let q = (p + kappa * sigma).clamp(0.0, MAX_LOSS);
    q / (1.0 - q)
}

/// eq 9: the proactive code rate `x = k/F` for the aggregate loss mean
/// `p` and deviation `sigma`, with κ1 = [`KAPPA_PROACTIVE`].
pub fn proactive_rate(p: f64, sigma: f64) -> f64 {
    overhead(p, sigma, KAPPA_PROACTIVE)
}

/// eq 10: how many new reactive parity packets to send when `r` more are
/// needed to rebuild a block: `⌈(1 + y) r⌉` with `y` from the mean and
/// κ2 = [`KAPPA_REACTIVE`].
pub fn reactive_count(r: usize, p: f64, sigma: f64) -> usize {
    if r == 0 {
        return 0;
    }
    let y = overhead(p, sigma, KAPPA_REACTIVE);
    ((1.0 + y) * r as f64).ceil() as usize
}

/// eq 12: the p-block size `B^p = Σ_i w_i RTT_med / RTT_i` for paths
/// given as `(w_i, RTT_i)` (ε = 0.5 and the delay bound Δ = RTT_med in
/// eq 11): what the paths carry in one median round trip. Paths with a
/// non-positive RTT are left out; 0 when none is left.
pub fn block_size(paths: &[(f64, f64)]) -> f64 {
    let rtts: Vec<f64> = paths
        .iter()
        .map(|&(_, r)| r)
        .filter(|&r| r > 0.0 && r.is_finite())
        .collect();
    let med = median(&rtts);
    paths
        .iter()
        .filter(|&&(_, r)| r > 0.0 && r.is_finite())
        .map(|&(w, r)| w.max(0.0) * med / r)
        .sum()
}

/// Splits a p-block of `bp` packets at code rate `x` into `(F, k)`:
/// `F = B^p / (1 + x)`, `k = ⌈x F⌉`, with `1 <= F` and `F + k <= max`.
///
/// The spec suggests `k = max(1, ⌈x F⌉)` (matching Table II's "⌈Fβ⌉ + 1");
/// here `k = 0` at `x = 0`: a path measured loss-free gets no parity, so
/// FEC adds nothing on clean paths (the target is at most 1 %),
/// and the first measured loss raises `x` for the next block.
pub fn split_block(bp: f64, x: f64, max: usize) -> (usize, usize) {
    let max = max.max(1);
    let x = x.max(0.0);
    let f = ((bp.max(1.0) / (1.0 + x) + 1e-9).floor() as usize).clamp(1, max);
    let k = parity_for(f, x);
    if f + k <= max {
        return (f, k);
    }
    // Too long for one block: keep the rate, shrink both.
    let f = ((max as f64 / (1.0 + x) + 1e-9).floor() as usize).max(1);
    let k = parity_for(f, x).min(max - f.min(max));
    (f, k)
}

/// `k = ⌈x F⌉` for `F = data` packets at code rate `x` (a product that
/// floating point puts a hair above an integer rounds to that integer).
pub fn parity_for(data: usize, x: f64) -> usize {
    (x.max(0.0) * data as f64 - 1e-9).ceil().max(0.0) as usize
}

#[cfg(test)]
mod tunnel_forms_tests {
    use super::*;

    #[test]
    fn block_loss_weights_paths_by_share() {
        // Path a: 80 sent, 80 delivered; path b: 20 sent, 10 delivered.
        // eq 2: 0.8 * 0 + 0.2 * 0.5 = 0.1.
        let p = block_loss(&[(80, 80), (20, 10)]).unwrap();
        assert!((p - 0.1).abs() < 1e-12);
        assert_eq!(block_loss(&[(0, 0)]), None);
        assert_eq!(block_loss(&[(5, 9)]), Some(0.0), "more reports than sent");
    }

    #[test]
    fn ewma_of_mean_and_deviation() {
        let mut a = AggregateLoss::default();
        a.update(0.2);
        // mean 0.1; deviation against the old mean 0: 0.04, halved.
        assert!((a.mean() - 0.1).abs() < 1e-12);
        assert!((a.deviation() - 0.02f64.sqrt()).abs() < 1e-12);
        for _ in 0..60 {
            a.update(0.05);
        }
        assert!((a.mean() - 0.05).abs() < 1e-9);
        assert!(a.deviation() < 1e-6, "a steady loss has no deviation");
    }

    #[test]
    fn proactive_rate_is_eq_9() {
        // p = 0.05, σ = 0.05: q = 0.1, x = 0.1/0.9.
        assert!((proactive_rate(0.05, 0.05) - 0.1 / 0.9).abs() < 1e-12);
        assert_eq!(proactive_rate(0.0, 0.0), 0.0);
        assert_eq!(
            proactive_rate(1.0, 1.0),
            1.0,
            "capped at one per data packet"
        );
    }

    #[test]
    fn reactive_count_is_eq_10_with_kappa_zero() {
        // y = 0.2/0.8 = 0.25; ⌈1.25 * 3⌉ = 4. σ is ignored (κ2 = 0).
        assert_eq!(reactive_count(3, 0.2, 0.3), 4);
        assert_eq!(reactive_count(3, 0.0, 0.3), 3);
        assert_eq!(reactive_count(0, 0.5, 0.0), 0);
    }

    #[test]
    fn block_size_is_eq_12() {
        // Median RTT 40 ms: 20·40/20 + 10·40/40 + 5·40/80 = 40 + 10 + 2.5.
        let b = block_size(&[(20.0, 0.02), (10.0, 0.04), (5.0, 0.08)]);
        assert!((b - 52.5).abs() < 1e-9);
        assert_eq!(block_size(&[]), 0.0);
        assert_eq!(block_size(&[(10.0, 0.0)]), 0.0);
    }

    #[test]
    fn split_keeps_the_rate_and_the_cap() {
        assert_eq!(split_block(60.0, 0.0, 200), (60, 0), "no parity when clean");
        // x = 0.2: F = 50, k = 10.
        assert_eq!(split_block(60.0, 0.2, 200), (50, 10));
        let (f, k) = split_block(1000.0, 0.5, 255);
        assert!(f + k <= 255 && f >= 1 && k >= 1, "{f} {k}");
        assert!((k as f64 / f as f64 - 0.5).abs() < 0.02);
        assert_eq!(split_block(0.0, 0.1, 255), (1, 1));
    }
}
