//! The optimal split of one transfer over several paths (Phatak et al.,
//! Section 3, eqs 1–17).
//!
//! Each path i has a constant rate `b_i` and a one-way latency `c_i`
//! (eq 1: `l_i(p) = p/b_i + c_i`). With pipelining, sending `n_i` packets
//! keeps path i busy for `n_i·p_i/b_i + c_i` (eq 5), so the transfer of D
//! bytes ends soonest when every path finishes at the same instant
//! (eqs 6–8), `D·f_i/b_i + c_i = T` for all i, with `Σ f_i = 1` (eq 9).

/// Result of [`finite_split`].
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// Fraction of the bytes carried by each path (0 for a dropped path).
    pub fractions: Vec<f64>,
    /// Whether each path carries part of the transfer.
    pub used: Vec<bool>,
    /// When the last byte arrives, seconds from the start (the common `T`
    /// of eqs 6–8).
    pub completion_s: f64,
}

/// Eq 14 (and eqs 15–17): for a large transfer the delays no longer
/// matter and each path carries its share of the total rate,
/// `f_i = b_i / Σ b_k`.
pub fn asymptotic_split(rates_bps: &[f64]) -> Vec<f64> {
    let total: f64 = rates_bps.iter().sum();
    rates_bps.iter().map(|b| b / total).collect()
}

/// Eq 17 with eq 16: the time a large transfer of `bytes` takes when it is
/// split by eq 14, `t = D / b_total`.
pub fn asymptotic_time_s(rates_bps: &[f64], bytes: f64) -> f64 {
    bytes * 8.0 / rates_bps.iter().sum::<f64>()
}

/// Eq 22: the fraction of *packets* on each path when bytes are split by
/// eq 14 and path i sends packets of `p_i` bytes,
/// `n_i/n = (b_i/p_i) / Σ (b_k/p_k)`.
pub fn packet_fractions(rates_bps: &[f64], packet_bytes: &[f64]) -> Vec<f64> {
    let w: Vec<f64> = rates_bps
        .iter()
        .zip(packet_bytes)
        .map(|(b, p)| b / p)
        .collect();
    let total: f64 = w.iter().sum();
    w.iter().map(|x| x / total).collect()
}

/// The split of a transfer of `bytes` that finishes soonest, in closed form:
/// summing `b_i·(T − c_i) = D·f_i` over i (eq 9) gives
/// `T = (D + Σ b_i c_i) / Σ b_i` and `f_i = b_i (T − c_i) / D`, which is
/// the solution of eq 13's linear system.
///
/// The closed form holds only while `T > c_i` for every path; a path whose
/// latency alone exceeds the completion time would need a negative share.
/// The paper does not treat this case: such a path is dropped (the one with
/// the largest latency first, since dropping it can only make T smaller)
/// and T is recomputed over the rest until every remaining path is useful.
///
/// `rates_bps` in bit/s, `delays_s` one-way in seconds, `bytes` > 0.
pub fn finite_split(rates_bps: &[f64], delays_s: &[f64], bytes: f64) -> Split {
    let n = rates_bps.len();
    let rate = |i: usize| rates_bps[i] / 8.0; // bytes per second
    let mut used = vec![true; n];
    loop {
        let (sum_b, sum_bc) = (0..n).filter(|&i| used[i]).fold((0.0, 0.0), |(b, bc), i| {
            (b + rate(i), bc + rate(i) * delays_s[i])
        });
        let t = (bytes + sum_bc) / sum_b;
        let worst = (0..n)
            .filter(|&i| used[i] && delays_s[i] >= t)
            .max_by(|&a, &b| delays_s[a].total_cmp(&delays_s[b]));
        match worst {
            // Never drop the last path: it alone takes D/b + c.
            Some(i) if used.iter().filter(|u| **u).count() > 1 => used[i] = false,
            _ => {
                let fractions = (0..n)
                    .map(|i| {
                        if used[i] {
                            rate(i) * (t - delays_s[i]) / bytes
                        } else {
                            0.0
                        }
                    })
                    .collect();
                return Split {
                    fractions,
                    used,
                    completion_s: t,
                };
            }
        }
    }
}

/// Eq 13, `f = B⁻¹ c`, solved numerically (Gaussian elimination with
/// partial pivoting) over the paths given. Rows i < N of eqs 10–12 say
/// path i and path i+1 finish together, `f_i/b_i − f_{i+1}/b_{i+1} =
/// (c_{i+1} − c_i)/D`; the last row is eq 9. It agrees with
/// [`finite_split`] whenever no path has to be dropped, and is kept as the
/// paper's formulation to check the closed form against.
pub fn matrix_split(rates_bps: &[f64], delays_s: &[f64], bytes: f64) -> Option<Vec<f64>> {
    let n = rates_bps.len();
    if n == 0 {
        return None;
    }
    let mut m = vec![vec![0.0; n + 1]; n];
    for i in 0..n - 1 {
        m[i][i] = 8.0 / rates_bps[i];
        m[i][i + 1] = -8.0 / rates_bps[i + 1];
        m[i][n] = (delays_s[i + 1] - delays_s[i]) / bytes;
    }
    for x in m[n - 1].iter_mut() {
        *x = 1.0;
    }
    solve(m)
}

/// Solves the augmented system `m` (n rows, n+1 columns) in place.
fn solve(mut m: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let n = m.len();
    for col in 0..n {
        let piv = (col..n).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[piv][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, piv);
        let pivot_row = m[col].clone();
        for (row, r) in m.iter_mut().enumerate() {
            if row != col {
                let f = r[col] / pivot_row[col];
                if f != 0.0 {
                    for (x, p) in r[col..].iter_mut().zip(&pivot_row[col..]) {
                        *x -= f * p;
                    }
                }
            }
        }
    }
    Some((0..n).map(|i| m[i][n] / m[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asymptotic_split_is_proportional_to_rate() {
        let f = asymptotic_split(&[10e6, 30e6]);
        assert_eq!(f, vec![0.25, 0.75]);
        assert!((asymptotic_time_s(&[10e6, 30e6], 5e6) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn packet_fractions_follow_eq22() {
        // Equal packets: as eq 14. 5:1 packets: the slow path sends as many.
        assert_eq!(
            packet_fractions(&[4e6, 1e6], &[1000.0, 1000.0]),
            vec![0.8, 0.2]
        );
        let f = packet_fractions(&[5e6, 1e6], &[1500.0, 300.0]);
        assert!((f[0] - 0.5).abs() < 1e-12, "{f:?}");
    }

    #[test]
    fn closed_form_matches_eq13_and_finishes_together() {
        let rates = [10e6, 2e6, 5e6];
        let delays = [0.02, 0.1, 0.05];
        let d = 1e6;
        let s = finite_split(&rates, &delays, d);
        assert!(s.used.iter().all(|u| *u));
        let m = matrix_split(&rates, &delays, d).unwrap();
        for (a, b) in s.fractions.iter().zip(&m) {
            assert!((a - b).abs() < 1e-9, "{:?} vs {m:?}", s.fractions);
        }
        assert!((s.fractions.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        for i in 0..3 {
            let finish = d * s.fractions[i] * 8.0 / rates[i] + delays[i];
            assert!((finish - s.completion_s).abs() < 1e-9);
        }
        // The far path gets less than its rate share for a finite transfer.
        assert!(s.fractions[1] < asymptotic_split(&rates)[1]);
    }

    #[test]
    fn large_transfer_tends_to_eq14() {
        let rates = [10e6, 2e6];
        let s = finite_split(&rates, &[0.02, 0.3], 1e12);
        let a = asymptotic_split(&rates);
        assert!((s.fractions[0] - a[0]).abs() < 1e-5);
    }

    #[test]
    fn path_slower_than_the_whole_transfer_is_dropped() {
        // 10 kB over 10 Mbit/s takes 8 ms + 20 ms; a 1 s path cannot help.
        let s = finite_split(&[10e6, 10e6], &[0.02, 1.0], 10e3);
        assert_eq!(s.used, vec![true, false]);
        assert_eq!(s.fractions[1], 0.0);
        assert!((s.fractions[0] - 1.0).abs() < 1e-12);
        assert!((s.completion_s - 0.028).abs() < 1e-12);
        // The unconstrained eq 13 would give it a negative share.
        let m = matrix_split(&[10e6, 10e6], &[0.02, 1.0], 10e3).unwrap();
        assert!(m[1] < 0.0);
    }
}
