//! MPLOT's reproductions (paper 002 §IV; `SPECS.md` §2.8): each a scenario
//! file in `scenarios/` run with the shipped `braid_core::mplot` transport,
//! asserting the bounds. Runs are at most `SHORT_S` long unless
//! `BRAID_FULL_REPRO` is set.
//!
//! # Not reproduced
//!
//! These bounds of the issue are **not met** by the current build, so they
//! are not tests here (none is reported as passing while it fails). The
//! figures were measured with `braid sim run scenarios/mplot-NAME.toml`
//! (30 s runs, seeds as stated):
//!
//! - Fig 3's diversity gain, G(M) >= M G(1) for M >= 4: measured (2 seeds)
//!   G(1) = 3.20, G(4) = 11.58 (< 12.80), G(10) = 29.17 (< 32.0) Mb/s.
//!   Each path carries 0.74-0.82 of its effective capacity (per-path RTOs
//!   with windows of a few packets at 75 % loss) and eq 9's κ1 = 1 margin
//!   leaves 0.74-0.78 of what arrives as goodput.
//! - Fig 5, MPLOT G(5) > G(1) at every DOWN probability: measured
//!   (2 seeds, p_down 0) G(1) = 3.20, G(5) = 2.66 Mb/s. With 2 Mb/s per
//!   path and 10 sources, each source's window on a path is one or two
//!   packets, and RTOs dominate.
//! - Table III in throughput (aggregate coding above per-path coding):
//!   measured 41.43 (aggregate) against 41.54 Mb/s (per path), equal
//!   within 0.3 %.
//! - Fig 8, goodput degrading gracefully with loss correlation
//!   (G(0.05) >= G(0.5) >= G(0.99), G(0.5) >= 0.85 G(0.05)): measured
//!   (3 seeds) 2.40, 2.07, 2.41 Mb/s at θ = 0.05, 0.5, 0.99; the
//!   differences are within the run-to-run spread.
//! - Fig 11's MPLOT >= 5 x PTCP: measured (2 seeds) MPLOT 5.3-5.5 Mb/s,
//!   PTCP 2.0, 2.9, 3.5, 4.5 Mb/s at M = 2..5. This PTCP finds a first loss
//!   by three later packets acknowledged on the path and a lost resend by
//!   the RTO, halving once per RTT; the paper's PTCP (under 1 Mb/s) lost
//!   far more to timeouts.

use std::path::PathBuf;

use braid_sim::mplot::{self, MplotReport, MplotScenario};

/// Seconds simulated per run in CI.
const SHORT_S: f64 = 30.0;

fn load(name: &str) -> MplotScenario {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/{name}.toml"));
    let mut sc = MplotScenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
    if std::env::var_os("BRAID_FULL_REPRO").is_none() {
        sc.mplot.duration_s = sc.mplot.duration_s.min(SHORT_S);
        sc.mplot.warmup_s = sc.mplot.warmup_s.min(2.0);
    }
    sc
}

fn run(sc: &MplotScenario) -> MplotReport {
    let t = std::time::Instant::now();
    let r = mplot::run(sc, 0);
    eprintln!("{}({:.1} s wall)", r.to_table(), t.elapsed().as_secs_f64());
    r
}

fn goodput(r: &MplotReport, scheme: &str, x: f64) -> f64 {
    r.row(scheme, x)
        .unwrap_or_else(|| panic!("no row {scheme} at {x}"))
        .goodput_kbps
        / 1e3
}

/// Fig 3: one path gets about half of its 5 Mb/s effective capacity, and
/// ten paths more than 0.55 of their 50 Mb/s.
#[test]
fn fig3_aggregation() {
    let mut sc = load("mplot-fig3");
    if std::env::var_os("BRAID_FULL_REPRO").is_none() {
        // One seed in CI: ten paths of 10 Mb/s are the slowest runs here.
        sc.mplot.seeds = 1;
    }
    let r = run(&sc);
    let g1 = goodput(&r, "MPLOT", 1.0);
    assert!((0.45 * 5.0..=0.65 * 5.0).contains(&g1), "G(1) = {g1}");
    let g10 = goodput(&r, "MPLOT", 10.0);
    assert!(g10 >= 0.55 * 50.0, "G(10) = {g10}");
    // More paths, more goodput.
    for m in 2..=10 {
        let (a, b) = (
            goodput(&r, "MPLOT", f64::from(m - 1)),
            goodput(&r, "MPLOT", f64::from(m)),
        );
        assert!(b > a, "G({m}) = {b} <= G({}) = {a}", m - 1);
    }
}

fn fig5() -> Vec<(f64, MplotReport)> {
    let mut sc = load("mplot-fig5");
    sc.mplot.values = vec![1.0, 5.0];
    [0.0, 0.02, 0.05]
        .into_iter()
        .map(|p| {
            sc.mplot.p_down = p;
            (p, run(&sc))
        })
        .collect()
}

/// Fig 5, the blind half: with DOWN periods the heterogeneity-blind
/// mapping gains nothing from five paths over one; MPLOT's rank mapping
/// does better than blind with five paths.
#[test]
fn fig5_blind_does_not_gain_from_paths() {
    for (p_down, r) in fig5() {
        let (b1, b5) = (goodput(&r, "BLIND", 1.0), goodput(&r, "BLIND", 5.0));
        let m5 = goodput(&r, "MPLOT", 5.0);
        eprintln!("p_down {p_down}: BLIND {b1:.3} -> {b5:.3}, MPLOT G(5) {m5:.3}");
        if p_down > 0.0 {
            assert!(b5 <= b1, "p_down {p_down}: BLIND G(5) = {b5} > G(1) = {b1}");
        }
        assert!(
            m5 >= b5,
            "p_down {p_down}: MPLOT G(5) = {m5} < BLIND G(5) = {b5}"
        );
    }
}

/// Table III: coding across the aggregate beats coding on each path in
/// goodput (measured 39.6 against 37.5 Mb/s).
#[test]
fn table3_aggregate_beats_per_path_in_goodput() {
    let r = run(&load("mplot-table3"));
    let a = r.row("MPLOT", 3.0).unwrap();
    let p = r.row("PER-PATH", 3.0).unwrap();
    assert!(a.goodput_kbps > p.goodput_kbps, "goodput {a:?} vs {p:?}");
}

/// Figs 11, 13, 14: at 30 % loss MPLOT is ahead of PTCP in goodput, with
/// lower mean delay and delay deviation, for every M.
#[test]
fn fig11_13_14_ahead_of_ptcp_at_30_percent_loss() {
    let r = run(&load("mplot-fig11"));
    for m in 2..=5 {
        let x = f64::from(m);
        let a = r.row("MPLOT", x).unwrap();
        let p = r.row("PTCP", x).unwrap();
        assert!(a.goodput_kbps > p.goodput_kbps, "M = {m}: {a:?} vs {p:?}");
        assert!(a.delay_mean_ms < p.delay_mean_ms, "M = {m}: {a:?} vs {p:?}");
        assert!(a.delay_std_ms < p.delay_std_ms, "M = {m}: {a:?} vs {p:?}");
    }
}

/// Figs 12 and 15: MPLOT falls roughly linearly with loss; PTCP keeps up
/// at low loss and falls behind at high loss, with a gap that widens; and
/// MPLOT's delay stays below PTCP's from 10 % loss on.
#[test]
fn fig12_15_against_loss() {
    let r = run(&load("mplot-fig12"));
    let xs = [0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4];
    let g: Vec<f64> = xs.iter().map(|&x| goodput(&r, "MPLOT", x)).collect();
    let p: Vec<f64> = xs.iter().map(|&x| goodput(&r, "PTCP", x)).collect();
    // Roughly linear: within 15 % of the straight line through the ends,
    // and falling.
    for (i, &x) in xs.iter().enumerate() {
        let line = g[0] + (g[xs.len() - 1] - g[0]) * x / xs[xs.len() - 1];
        assert!(
            (g[i] - line).abs() <= 0.15 * g[0],
            "MPLOT at {x}: {} vs line {line}",
            g[i]
        );
        if i > 0 {
            assert!(g[i] < g[i - 1], "MPLOT not falling at {x}: {g:?}");
        }
    }
    assert!(g[0] >= 0.8 * p[0], "lossless: MPLOT {} PTCP {}", g[0], p[0]);
    // The lead: MPLOT ahead from 20 % on, by a growing factor.
    let lead: Vec<f64> = (5..xs.len()).map(|i| g[i] / p[i]).collect();
    assert!(lead.iter().all(|&l| l > 1.0), "lead {lead:?}");
    assert!(lead.windows(2).all(|w| w[1] > w[0]), "lead {lead:?}");
    for &x in &xs[3..] {
        let (a, b) = (r.row("MPLOT", x).unwrap(), r.row("PTCP", x).unwrap());
        assert!(a.delay_mean_ms < b.delay_mean_ms, "at {x}: {a:?} vs {b:?}");
    }
}
