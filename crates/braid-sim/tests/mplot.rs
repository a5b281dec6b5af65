//! MPLOT's reproductions (paper 002 §IV; `SPECS.md` §2.8): each a scenario
//! file in `scenarios/` run with the shipped `braid_core::mplot` transport,
//! asserting the bounds. Runs are shortened here (the scenario's
//! duration unless `BRAID_FULL_REPRO` is unset, then `SHORT_S`).

use std::path::PathBuf;

use braid_sim::mplot::{self, MplotReport, MplotScenario};

/// Seconds simulated per run in CI.
const SHORT_S: f64 = 12.0;

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

/// Fig 3: one path gets about half of its 5 Mb/s effective capacity; more
/// paths give more than linear aggregation (diversity gain).
#[test]
fn fig3_aggregation_and_diversity() {
    let r = run(&load("mplot-fig3"));
    let g1 = goodput(&r, "MPLOT", 1.0);
    assert!((0.45 * 5.0..=0.65 * 5.0).contains(&g1), "G(1) = {g1}");
    for m in 4..=10 {
        let g = goodput(&r, "MPLOT", f64::from(m));
        assert!(
            g >= f64::from(m) * g1,
            "G({m}) = {g} < {m} x G(1) = {}",
            f64::from(m) * g1
        );
    }
    let g10 = goodput(&r, "MPLOT", 10.0);
    assert!(g10 >= 0.55 * 50.0, "G(10) = {g10}");
}
