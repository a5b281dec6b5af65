//! PRISM's figures (Kim & Shin, MobiSys'05; SPECS.md §1.4) in the
//! simulator, each a scenario file `scenarios/prism-figN.toml` asserting
//! the bounds of issue 14. Runs are shortened here (the duration given to
//! [`load`]); `BRAID_FULL_REPRO=1` runs the files' own durations.

use std::path::PathBuf;

use braid_sim::ratio::{self, RatioReport};
use braid_sim::{Scenario, SweepOptions};

fn load(name: &str, ci_duration_s: f64) -> Scenario {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/{name}.toml"));
    let mut sc = Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
    if std::env::var_os("BRAID_FULL_REPRO").is_none() {
        sc.duration_s = ci_duration_s;
    }
    sc
}

fn swept(name: &str, ci_duration_s: f64) -> RatioReport {
    let sc = load(name, ci_duration_s);
    let r = ratio::run(&sc, &SweepOptions::default());
    eprintln!("{}", r.to_table());
    r
}

fn g(r: &RatioReport, s: &str, x: f64) -> f64 {
    r.row(s, x)
        .unwrap_or_else(|| panic!("{s} at {x}"))
        .goodput_kbps
}

fn ideal(r: &RatioReport, x: f64) -> f64 {
    r.row("MTCP", x)
        .and_then(|row| row.ideal_kbps)
        .unwrap_or_else(|| panic!("ideal at {x}"))
}

#[test]
fn explore() {
    let name = std::env::var("PRISM_FIG").unwrap_or_else(|_| "prism-fig13".into());
    let d: f64 = std::env::var("PRISM_DUR")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60.0);
    let r = swept(&name, d);
    for row in &r.rows {
        eprintln!(
            "{} x={} g={:.1} ideal={:?} buf={:.2} to={} fr={}",
            row.scheme,
            row.x,
            row.goodput_kbps,
            row.ideal_kbps,
            row.mean_buffer_pkts,
            row.timeouts,
            row.fast_retransmits
        );
    }
    let _ = (g, ideal);
}

#[test]
#[ignore]
fn debug_series() {
    let name = std::env::var("PRISM_FIG").unwrap_or_else(|_| "prism-fig7".into());
    let x: f64 = std::env::var("PRISM_X")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.001);
    let mut sc = load(&name, 60.0);
    sc.schemes = vec!["PRISM".into()];
    let (s, _, _) = ratio::at_x(&sc, x);
    let out = braid_sim::sweep::run(&s, &SweepOptions::default());
    let r = &out.runs[0][0][0];
    eprintln!(
        "{:?}",
        r.goodput_series_kbps
            .iter()
            .map(|v| *v as i64)
            .collect::<Vec<_>>()
    );
    eprintln!(
        "{:?}",
        r.series_kbps
            .iter()
            .map(|p| p.iter().map(|v| *v as i64).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    eprintln!("{:?} {:?}", r.rpc, r.sender.as_ref().map(|s| s.clone()));
}
