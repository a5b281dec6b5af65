//! Unit tests of the transport's formulas (the parent module).

use super::*;

#[test]
fn rank_is_eq_1() {
    assert!((rank(10.0, 0.5, 0.04) - 125.0).abs() < 1e-9);
    assert_eq!(rank(10.0, 1.0, 0.04), 0.0);
    assert_eq!(rank(10.0, 0.1, 0.0), 0.0);
    assert!(rank(10.0, 0.1, 0.04) > rank(10.0, 0.2, 0.04));
}

#[test]
fn good_is_above_the_median() {
    assert_eq!(good_paths(&[1.0, 2.0, 3.0]), vec![false, false, true]);
    assert_eq!(good_paths(&[1.0, 4.0]), vec![false, true]);
    assert_eq!(good_paths(&[2.0, 2.0, 2.0]), vec![false; 3]);
    assert_eq!(good_paths(&[]), Vec::<bool>::new());
    assert_eq!(good_block_count(1), 1);
    assert_eq!(good_block_count(4), 2);
    assert_eq!(good_block_count(5), 3);
}

#[test]
fn eq_2_losses() {
    assert_eq!(path_loss_inst(3, 4), Some(0.25));
    assert_eq!(path_loss_inst(0, 0), None);
    // Weighted by each path's share of the block = 1 - ΣR/ΣS.
    let agg = aggregate_loss_inst(&[(3, 4), (1, 4)]).unwrap();
    assert!((agg - 0.5).abs() < 1e-12);
    let weighted = (4.0 / 8.0) * 0.25 + (4.0 / 8.0) * 0.75;
    assert!((agg - weighted).abs() < 1e-12);
    assert_eq!(aggregate_loss_inst(&[(0, 0)]), None);
}

#[test]
fn eq_3_statistics() {
    let mut s = LossStats::default();
    s.update(0.5);
    // dev² against the old mean 0: 0.25, halved.
    assert!((s.var - 0.125).abs() < 1e-12);
    assert!((s.mean - 0.25).abs() < 1e-12);
    for _ in 0..60 {
        s.update(0.3);
    }
    assert!((s.mean - 0.3).abs() < 1e-9);
    assert!(s.var < 1e-9, "a constant loss has no variance: {}", s.var);
}

#[test]
fn eq_4_and_12() {
    let paths = [(10.0, 0.04), (20.0, 0.08), (30.0, 0.12)];
    assert!((aggregate_bandwidth(&paths) - 750.0).abs() < 1e-9);
    // Median RTT 0.08: each path contributes w · 0.08 / RTT.
    assert!((p_block_size(&paths) - (20.0 + 20.0 + 20.0)).abs() < 1e-9);
    assert_eq!(p_block_size(&[]), 0.0);
}

#[test]
fn eq_9_and_10() {
    let clean = LossStats::default();
    assert_eq!(pfec_ratio(&clean, 1.0), 0.0);
    assert_eq!(rfec_count(3, &clean, 0.0), 3);
    let s = LossStats {
        mean: 0.2,
        var: 0.01,
    };
    // (0.2 + 0.1) / 0.7
    assert!((pfec_ratio(&s, 1.0) - 0.3 / 0.7).abs() < 1e-12);
    // κ2 = 0: y = 0.25, ⌈1.25 · 4⌉ = 5
    assert_eq!(rfec_count(4, &s, 0.0), 5);
    assert_eq!(rfec_count(0, &s, 0.0), 0);
    // A DOWN estimate is clamped, not infinite.
    let down = LossStats {
        mean: 1.0,
        var: 0.0,
    };
    assert!((pfec_ratio(&down, 1.0) - 9.0).abs() < 1e-9);
}

#[test]
fn shapes_follow_the_packet_size_rule() {
    // 20 KB budget: 750 B gives 26 packets.
    let s = block_shape(20_000.0, 0.0, 1500).unwrap();
    assert_eq!(s.packet_size, 750);
    assert_eq!(s.p_block(), 26);
    assert_eq!(s.pfec, 0);
    assert_eq!(s.reserve, 4);
    // 3 KB: 750 gives 4 packets, 550 gives 5.
    assert_eq!(block_shape(3_000.0, 0.0, 1500).unwrap().packet_size, 550);
    // 1.5 KB: 250 gives 6.
    assert_eq!(block_shape(1_500.0, 0.0, 1500).unwrap().packet_size, 250);
    // Nothing gives 5: the smallest size, 5 packets.
    let tiny = block_shape(100.0, 0.0, 1500).unwrap();
    assert_eq!((tiny.packet_size, tiny.p_block()), (250, 5));
    // The MTU rules out larger sizes.
    assert_eq!(block_shape(1e6, 0.0, 600).unwrap().packet_size, 550);
    assert_eq!(block_shape(1e6, 0.0, 200), None);
}

#[test]
fn a_large_size_in_front_is_taken_when_the_budget_holds_five() {
    let sizes = [1400, 750, 550, 250];
    assert_eq!(
        block_shape_from(&sizes, 100_000.0, 0.0, 1472)
            .unwrap()
            .packet_size,
        1400
    );
    // Fewer than five 1400-byte packets: the paper's sizes as before.
    assert_eq!(
        block_shape_from(&sizes, 6_000.0, 0.0, 1472)
            .unwrap()
            .packet_size,
        750
    );
    // Above the path's largest packet: not chosen.
    assert_eq!(
        block_shape_from(&sizes, 100_000.0, 0.0, 1000)
            .unwrap()
            .packet_size,
        750
    );
}

#[test]
fn shapes_split_by_x_and_stay_in_gf256() {
    let s = block_shape(75_000.0, 1.0, 1500).unwrap();
    assert_eq!(s.p_block(), 100);
    assert_eq!((s.data, s.pfec), (50, 50));
    assert_eq!(s.reserve, 25);
    let big = block_shape(1e9, 9.0, 1500).unwrap();
    assert!(big.total() <= MAX_BLOCK_PACKETS, "{big:?}");
    assert!(big.data >= 1 && big.pfec >= (9 * big.data).min(big.pfec));
    // Any x > 0 gives at least one PFEC packet.
    let small = block_shape(3_750.0, 0.01, 1500).unwrap();
    assert_eq!((small.data, small.pfec), (4, 1));
    for budget in [0.0, 1e3, 1e4, 1e5, 1e6, f64::NAN, f64::INFINITY] {
        for x in [0.0, 0.1, 1.0, 9.0, f64::NAN] {
            let s = block_shape(budget, x, 1500).unwrap();
            assert!(s.total() <= MAX_BLOCK_PACKETS && s.data >= 1);
            assert!(s.p_block() >= MIN_BLOCK_PACKETS);
        }
    }
}

#[test]
fn r_block_reading() {
    assert_eq!(r_block_size(100, 2), 4);
    assert_eq!(r_block_size(100, 30), 15);
    assert_eq!(r_block_size(253, 30), 2);
}

#[test]
fn eq_5_is_a_distribution_with_the_negative_binomial_mean() {
    let (f, p) = (90, 0.3);
    let pmf: Vec<f64> = (0..2000).map(|i| fec_needed_pmf(f, i, p)).collect();
    let total: f64 = pmf.iter().sum();
    assert!((total - 1.0).abs() < 1e-9, "{total}");
    let mean: f64 = pmf.iter().enumerate().map(|(i, h)| i as f64 * h).sum();
    // Mean of the negative binomial: F p / (1 - p).
    assert!((mean - f as f64 * p / (1.0 - p)).abs() < 1e-6, "{mean}");
    // Table II: with ε = 0.5, x_min ≈ p/(1-p) (α = 1): the median of h is
    // within a few packets of F p/(1-p).
    let mut acc = 0.0;
    let median = pmf
        .iter()
        .position(|h| {
            acc += h;
            acc >= 0.5
        })
        .unwrap();
    assert!((median as f64 - 38.57).abs() <= 2.0, "{median}");
    assert_eq!(fec_needed_pmf(10, 0, 0.0), 1.0);
    assert_eq!(fec_needed_pmf(10, 1, 0.0), 0.0);
}
