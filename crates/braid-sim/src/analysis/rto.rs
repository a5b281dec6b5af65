//! When striping one TCP flow causes retransmission timeouts (Phatak et
//! al., Section 4.1): the RTO of eqs 19–21 against the RTT samples that a
//! striped flow produces.
//!
//! A TCP sender sets `RTO_i = R_{i−1} + K·V_{i−1}` (eq 19) from the
//! smoothed RTT `R_i = α R_{i−1} + (1−α) RTT_i` (eq 20) and deviation
//! `V_i = β V_{i−1} + (1−β) |RTT_i − R_i|` (eq 21, with the *updated* R).
//! Striping mixes the RTTs of all paths into one sample stream, so a slow
//! path's packets time out once its RTT is further above the mean than K
//! deviations.

use serde::Serialize;

/// The RTO estimator's constants (eq 19–21). The default is every TCP's:
/// K = 4, α = 7/8, β = 3/4.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct RtoParams {
    pub k: f64,
    pub alpha: f64,
    pub beta: f64,
}

impl Default for RtoParams {
    fn default() -> Self {
        RtoParams {
            k: 4.0,
            alpha: 7.0 / 8.0,
            beta: 3.0 / 4.0,
        }
    }
}

/// Eqs 24–25 with the exact packet fractions of eq 22: the mean RTT
/// `r̄ = Σ r_i·n_i/n` and mean deviation `v̄ = Σ |r_i − r̄|·n_i/n`. (The
/// paper's eqs 23–25 then specialise to bandwidth-dominated paths, where
/// r̄ is the harmonic mean.)
pub fn exact_means(rtts: &[f64], packet_fractions: &[f64]) -> (f64, f64) {
    let mean: f64 = rtts.iter().zip(packet_fractions).map(|(r, f)| r * f).sum();
    let dev = rtts
        .iter()
        .zip(packet_fractions)
        .map(|(r, f)| (r - mean).abs() * f)
        .sum();
    (mean, dev)
}

/// Eq 26: with exact means, path i sees no timeouts iff
/// `r_i < r̄ + K·v̄`. Returns the verdict per path. An RTT equal to the
/// RTO (equal paths: r_i = r̄, v̄ = 0) counts as no timeout, as in the
/// recursion, where a sample times out only when it exceeds the RTO.
pub fn ideal_timeout_free(rtts: &[f64], packet_fractions: &[f64], k: f64) -> Vec<bool> {
    let (mean, dev) = exact_means(rtts, packet_fractions);
    let rto = mean + k * dev;
    rtts.iter().map(|r| *r <= rto * (1.0 + 1e-12)).collect()
}

/// Eq 32: with exact means, two paths whose RTT ratio ρ = r2/r1 is below
/// `2K − 1` never time out (7 for K = 4). Derived from eq 31,
/// `1 < 2[1/(ρ+1) + K(ρ−1)/(ρ+1)²]`.
pub fn random_rho_bound(k: f64) -> f64 {
    2.0 * k - 1.0
}

/// Eqs 33 and 51: a bound on the RTT ratio ρ becomes a bound on the
/// bandwidth ratio φ = b1/b2 scaled by the packet-size ratio p1/p2, since
/// for bandwidth-dominated paths ρ = (b1·p2)/(b2·p1).
pub fn phi_bound(rho_bound: f64, p_fast_bytes: f64, p_slow_bytes: f64) -> f64 {
    rho_bound * p_fast_bytes / p_slow_bytes
}

/// `(α^ρ − β^ρ)/(α − β)`, with its limit `ρ·α^(ρ−1)` when α = β.
fn pow_diff_quot(a: f64, b: f64, rho: f64) -> f64 {
    if (a - b).abs() < 1e-12 {
        rho * a.powf(rho - 1.0)
    } else {
        (a.powf(rho) - b.powf(rho)) / (a - b)
    }
}

/// The second factor of eq 49 for the periodic pattern "ρ packets on the
/// fast path, then one on the slow path" (period T = ρ + 1, eq 48):
/// `1 − Kα(1−β)/(1−β^(ρ+1)) · [(1−α)(α^ρ−β^ρ)/((1−α^ρ)(α−β)) + β^ρ]`.
/// The slow path's packet is timeout-free in steady state iff this is
/// negative (eq 49 multiplies it by ρ − 1 > 0).
pub fn eq49_factor(rho: f64, p: RtoParams) -> f64 {
    let RtoParams {
        k,
        alpha: a,
        beta: b,
    } = p;
    let bracket = (1.0 - a) * pow_diff_quot(a, b, rho) / (1.0 - a.powf(rho)) + b.powf(rho);
    1.0 - k * a * (1.0 - b) / (1.0 - b.powf(rho + 1.0)) * bracket
}

/// Eq 50: the largest RTT ratio that periodic (deterministic) striping of
/// two paths tolerates without timeouts, the first root of eq 49 above 1,
/// solved numerically (a scan in steps of 0.01, then bisection to 1e-12).
/// 4.3868 for K = 4, α = 7/8, β = 3/4 (the paper prints 4.386…).
///
/// Returns 1 when not even a ratio just above 1 is safe (Kα ≤ 1), and
/// `None` when no root exists below 10⁶ (every ratio is safe).
pub fn periodic_rho_bound(p: RtoParams) -> Option<f64> {
    // Near ρ = 1 the factor tends to 1 − Kα.
    let start = 1.0 + 1e-9;
    if eq49_factor(start, p) >= 0.0 {
        return Some(1.0);
    }
    let mut lo = start;
    let mut step = 0.01;
    let mut hi = lo + step;
    while eq49_factor(hi, p) < 0.0 {
        lo = hi;
        if hi > 100.0 {
            step = hi * 0.01; // the factor is smooth far out
        }
        hi += step;
        if hi > 1e6 {
            return None;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if eq49_factor(mid, p) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    Some(0.5 * (lo + hi))
}

/// Eqs 39–40: the steady state of eqs 20–21 for a sample sequence `r` that
/// repeats with period T = `r.len()`:
/// `R_i = (1−α)/(1−α^T) Σ_k r_k α^((i−k) mod T)` and
/// `V_i = (1−β)/(1−β^T) Σ_k |r_k − R_k| β^((i−k) mod T)`.
pub fn periodic_steady_state(r: &[f64], p: RtoParams) -> (Vec<f64>, Vec<f64>) {
    let t = r.len();
    let tf = t as i32;
    let smooth = |x: &[f64], g: f64| -> Vec<f64> {
        let c = (1.0 - g) / (1.0 - g.powi(tf));
        (0..t)
            .map(|i| {
                c * (0..t)
                    .map(|k| x[k] * g.powi(((i + t - k) % t) as i32))
                    .sum::<f64>()
            })
            .collect()
    };
    let big_r = smooth(r, p.alpha);
    let dev: Vec<f64> = r.iter().zip(&big_r).map(|(x, m)| (x - m).abs()).collect();
    let big_v = smooth(&dev, p.beta);
    (big_r, big_v)
}

/// Eq 41: which samples of a periodic sequence time out in steady state,
/// `r_i > R_{i−1} + K·V_{i−1}` (indices wrap, `R_0 = R_T`; equality, as
/// for a constant sequence, is not a timeout).
pub fn periodic_timeouts(r: &[f64], p: RtoParams) -> Vec<bool> {
    let (big_r, big_v) = periodic_steady_state(r, p);
    let t = r.len();
    (0..t)
        .map(|i| {
            let j = (i + t - 1) % t;
            r[i] > (big_r[j] + p.k * big_v[j]) * (1.0 + 1e-12)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_path_exact_means_match_eqs_27_28() {
        let (r1, r2) = (1.0, 3.0);
        // Bandwidth dominated: packet fractions eq 23.
        let f = [r2 / (r1 + r2), r1 / (r1 + r2)];
        let (m, v) = exact_means(&[r1, r2], &f);
        assert!((m - 2.0 * r1 * r2 / (r1 + r2)).abs() < 1e-12);
        assert!((v - 2.0 * r1 * r2 * (r2 - r1) / (r1 + r2).powi(2)).abs() < 1e-12);
    }

    #[test]
    fn eq26_step_is_at_2k_minus_1() {
        assert_eq!(random_rho_bound(4.0), 7.0);
        assert_eq!(random_rho_bound(13.0), 25.0); // Sec 4.3 (iii)
        for rho in [2.0, 4.0, 6.0, 6.9] {
            let f = [rho / (1.0 + rho), 1.0 / (1.0 + rho)];
            assert_eq!(ideal_timeout_free(&[1.0, rho], &f, 4.0), vec![true, true]);
        }
        for rho in [7.1, 8.0, 15.0] {
            let f = [rho / (1.0 + rho), 1.0 / (1.0 + rho)];
            assert_eq!(ideal_timeout_free(&[1.0, rho], &f, 4.0), vec![true, false]);
        }
        // The WLAN + modem example of Sec 4.1.1: φ = 25 needs p1/p2 > 25/7.
        assert!(phi_bound(7.0, 1500.0, 400.0) > 25.0);
        assert!(phi_bound(7.0, 1500.0, 450.0) < 25.0);
    }

    #[test]
    fn eq49_root_is_4_386_for_default_constants() {
        let rho = periodic_rho_bound(RtoParams::default()).unwrap();
        assert!(rho > 4.386 && rho < 4.388, "{rho}");
        assert!((phi_bound(rho, 5.0, 1.0) - 5.0 * rho).abs() < 1e-12);
    }

    #[test]
    fn eq49_agrees_with_eq41_on_integer_periods() {
        for p in [
            RtoParams::default(),
            RtoParams {
                k: 4.0,
                alpha: 0.99,
                beta: 0.99,
            },
            RtoParams {
                k: 2.0,
                alpha: 0.9,
                beta: 0.5,
            },
            RtoParams {
                k: 6.0,
                alpha: 0.8,
                beta: 0.7,
            },
        ] {
            for rho in 2..40usize {
                let mut r = vec![1.0; rho];
                r.push(rho as f64);
                let free = !periodic_timeouts(&r, p).iter().any(|t| *t);
                assert_eq!(eq49_factor(rho as f64, p) < 0.0, free, "{p:?} rho {rho}");
            }
        }
    }

    #[test]
    fn degenerate_constants() {
        // Kα ≤ 1: no ratio above 1 is safe.
        let p = RtoParams {
            k: 1.0,
            alpha: 0.5,
            beta: 0.5,
        };
        assert_eq!(periodic_rho_bound(p), Some(1.0));
        // A larger K tolerates more.
        let k13 = RtoParams {
            k: 13.0,
            ..RtoParams::default()
        };
        assert!(periodic_rho_bound(k13).unwrap() > 4.5);
    }
}
