//! Spurious duplicate ACKs from striping (Phatak et al., Section 4.2,
//! eqs 52–54). While one packet is in flight on the path with the largest
//! latency, packets streaming in over the other paths arrive ahead of it,
//! and a TCP receiver ACKs each out-of-order packet at once (even with
//! delayed ACKs). Three such duplicates trigger a fast retransmit and halve
//! the window although nothing was lost.

/// Eq 53, generalised to eq 1's latencies `l_i = p_i/b_i + c_i`: the
/// duplicate ACKs while one packet crosses the slowest path k, when every
/// other path i streams packets back to back from the same instant,
/// `Σ_{i≠k} (⌊(l_k − l_i)·b_i/p_i⌋ + 1)`.
///
/// With no propagation delay (`c_i = 0`, the paper's bandwidth-dominated
/// case, eq 52: `l_k = max p_i/b_i`) each term is `⌊l_k·b_i/p_i⌋` and the
/// sum is exactly eq 53, `Σ_i ⌊l_k b_i/p_i⌋ − 1` (path k's own term is 1).
/// `rates_bps` in bit/s, `delays_s` one-way seconds, `packet_bytes`.
pub fn dupacks(rates_bps: &[f64], delays_s: &[f64], packet_bytes: &[f64]) -> u64 {
    let lat: Vec<f64> = (0..rates_bps.len())
        .map(|i| packet_bytes[i] * 8.0 / rates_bps[i] + delays_s[i])
        .collect();
    let Some(k) = (0..lat.len()).max_by(|&a, &b| lat[a].total_cmp(&lat[b])) else {
        return 0;
    };
    (0..lat.len())
        .filter(|&i| i != k)
        .map(|i| {
            let per_s = rates_bps[i] / (packet_bytes[i] * 8.0);
            // Guard the floor against rounding just below an integer.
            ((lat[k] - lat[i]) * per_s + 1e-9).floor() as u64 + 1
        })
        .sum()
}

/// The right-hand side of eq 53: `l_k·Σ_i b_i/p_i − 1` with eq 52's
/// `l_k = max_i p_i/b_i` (bandwidth-dominated paths).
pub fn eq53_upper(rates_bps: &[f64], packet_bytes: &[f64]) -> f64 {
    let lk = rates_bps
        .iter()
        .zip(packet_bytes)
        .map(|(b, p)| p * 8.0 / b)
        .fold(0.0, f64::max);
    lk * rates_bps
        .iter()
        .zip(packet_bytes)
        .map(|(b, p)| b / (p * 8.0))
        .sum::<f64>()
        - 1.0
}

/// Eq 54: with equal packet sizes the bound is `Σ_i b_i / b_min − 1`; for
/// two paths that is the bandwidth ratio φ, so with the usual threshold of
/// three duplicates spurious fast retransmits start at φ ≥ 3.
pub fn eq54_bound(rates_bps: &[f64]) -> f64 {
    let b_min = rates_bps.iter().copied().fold(f64::INFINITY, f64::min);
    rates_bps.iter().sum::<f64>() / b_min - 1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_paths_give_phi_duplicates() {
        for phi in 1..=15u32 {
            let rates = [f64::from(phi) * 1e6, 1e6];
            let d = dupacks(&rates, &[0.0, 0.0], &[1000.0, 1000.0]);
            assert_eq!(d, u64::from(phi), "phi {phi}");
            assert!((eq54_bound(&rates) - f64::from(phi)).abs() < 1e-12);
            assert!((eq53_upper(&rates, &[1000.0, 1000.0]) - f64::from(phi)).abs() < 1e-9);
        }
    }

    #[test]
    fn eq53_floor_form_for_three_paths() {
        // l_k = 8 ms on the 1 Mbit/s path; 2.5 and 4 Mbit/s paths deliver
        // ⌊2.5⌋ + ⌊4⌋ packets meanwhile: 2 + 4 + 1 − 1 = 6.
        let rates = [2.5e6, 4e6, 1e6];
        let d = dupacks(&rates, &[0.0; 3], &[1000.0; 3]);
        assert_eq!(d, 6);
        assert!(d as f64 <= eq53_upper(&rates, &[1000.0; 3]));
        assert!((eq54_bound(&rates) - 6.5).abs() < 1e-12);
    }

    #[test]
    fn smaller_packets_on_the_slow_path_cut_duplicates() {
        let rates = [4e6, 1e6];
        assert_eq!(dupacks(&rates, &[0.0; 2], &[1000.0, 1000.0]), 4);
        assert_eq!(dupacks(&rates, &[0.0; 2], &[1000.0, 250.0]), 1);
    }

    #[test]
    fn equal_extra_delay_changes_nothing_but_a_delay_gap_adds() {
        let rates = [2e6, 1e6];
        let base = dupacks(&rates, &[0.0; 2], &[1000.0; 2]);
        assert_eq!(dupacks(&rates, &[0.05, 0.05], &[1000.0; 2]), base);
        // 10 ms more on the slow path: 2.5 more fast packets arrive first.
        assert_eq!(dupacks(&rates, &[0.0, 0.01], &[1000.0; 2]), base + 2);
    }
}
