//! Phatak et al. Fig 4 in the simulator (`scenarios/phatak-fig4.toml`):
//! one TCP flow striped over two paths totalling 20 Mbit/s as their
//! bandwidth ratio x goes from 1 to 15. Runs are 10 s here; set
//! `BRAID_FULL_REPRO=1` for the paper's 240 s.

use std::path::PathBuf;

use braid_sim::ratio::{self, RatioReport};
use braid_sim::{Scenario, SweepOptions};

fn fig4(schemes: &[&str]) -> RatioReport {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/phatak-fig4.toml");
    let mut sc = Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
    if std::env::var_os("BRAID_FULL_REPRO").is_none() {
        sc.duration_s = 10.0;
    }
    sc.schemes = schemes.iter().map(|s| s.to_string()).collect();
    let r = ratio::run(&sc, &SweepOptions::default());
    eprintln!("{}", r.to_table());
    r
}

/// Plain striping collapses once reordering alone reaches TCP's
/// duplicate-ACK threshold (eq 54: up to x duplicates); braid's
/// resequencer behind the same striping does not, and neither does braid
/// (PET-BMP), which must measure the paths to stripe over them.
#[test]
fn fig4_srr_collapses_and_braid_does_not() {
    let r = fig4(&["SRR", "SRR-BMP", "PET-BMP"]);
    let row = |s: &str, x: f64| r.row(s, x).unwrap_or_else(|| panic!("{s} at {x}"));
    for x in [1.0, 2.0, 3.0] {
        let a = row("SRR", x);
        assert!(a.goodput_share >= 0.9, "SRR at {x}: {a:?}");
        assert_eq!(a.fast_retransmits, 0.0, "SRR at {x}: {a:?}");
    }
    let at2 = row("SRR", 2.0).fast_retransmit_pct;
    for x in 4..=15 {
        let a = row("SRR", f64::from(x));
        // Worse than the faster path alone could do.
        assert!(a.goodput_share < a.faster_path_share, "SRR at {x}: {a:?}");
        assert!(a.goodput_share < 0.5, "SRR at {x}: {a:?}");
        // Fast retransmits jump: at least 10 % of the slower path's packets
        // (none at x = 2).
        assert!(
            a.fast_retransmit_pct >= 10.0 && a.fast_retransmit_pct >= 10.0 * at2,
            "SRR at {x}: {a:?}"
        );
    }
    for x in 1..=15 {
        for s in ["SRR-BMP", "PET-BMP"] {
            let a = row(s, f64::from(x));
            // Both paths in use: above what the faster path alone carries.
            assert!(a.goodput_share >= 0.9, "{s} at {x}: {a:?}");
            assert!(a.goodput_share > a.faster_path_share, "{s} at {x}: {a:?}");
            assert_eq!(a.fast_retransmits, 0.0, "{s} at {x}: {a:?}");
        }
    }
}

// PET-BMP used to collapse at x = 2, 3, 5 and 7..11 (0.08-0.32 of the raw
// rate): it never measured the faster path. Once TCP is clocked at about
// the slower path's rate, the inner packets reach the proxy one slow-path
// service time apart, so a pair on the faster path left further apart than
// that bottleneck spreads it and failed the packet-pair test; only pairs
// that happened to leave back to back in slow start gave a sample. The
// worlds' sender now holds a pair's first packet on a path without an
// estimate for its partner (`SenderConfig::hold_unmeasured_pairs`, as the
// shipped tunnel's `pair_hold`), and PET-BMP carries 0.957-0.959 at every
// ratio.

/// Fig 6 analogue (`scenarios/phatak-fig6.toml`, 1 s minimum RTO as in
/// FreeBSD): striping beats the faster path alone up to x = 3 and falls
/// below it for larger ratios, where the resequencer keeps it above.
#[test]
fn fig6_striping_beats_the_faster_path_only_for_small_ratios() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/phatak-fig6.toml");
    let mut sc = Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
    if std::env::var_os("BRAID_FULL_REPRO").is_none() {
        sc.duration_s = 20.0;
    }
    let r = ratio::run(&sc, &SweepOptions::default());
    eprintln!("{}", r.to_table());
    let g = |s: &str, x: f64| {
        r.row(s, x)
            .unwrap_or_else(|| panic!("{s} at {x}"))
            .goodput_kbps
    };
    for x in [1.0, 2.0, 3.0] {
        assert!(
            g("SRR", x) > g("HBI", x),
            "x {x}: SRR {} HBI {}",
            g("SRR", x),
            g("HBI", x)
        );
    }
    assert!(
        (6..=10).any(|x| g("SRR", f64::from(x)) < g("HBI", f64::from(x))),
        "striping never fell below the faster path alone"
    );
    for x in 1..=10 {
        let x = f64::from(x);
        assert!(
            g("SRR-BMP", x) > g("HBI", x),
            "x {x}: SRR-BMP {} HBI {}",
            g("SRR-BMP", x),
            g("HBI", x)
        );
    }
}

fn swept(name: &str, ci_duration_s: f64) -> RatioReport {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../scenarios/{name}.toml"));
    let mut sc = Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
    if std::env::var_os("BRAID_FULL_REPRO").is_none() {
        sc.duration_s = ci_duration_s;
    }
    let r = ratio::run(&sc, &SweepOptions::default());
    eprintln!("{}", r.to_table());
    r
}

/// Fig 5 analogues (`scenarios/phatak-fig5a.toml`, `-fig5b.toml`): over
/// raw bandwidths from 0.1 to 30 Mbit/s two equal paths carry at least
/// 1.8 x one path, and at ratio 3 striping beats the faster path alone.
/// (The paper's split was random, whose smoothed-RTT timeouts dragged the
/// low-bandwidth points down; deterministic striping has none at ratio 3,
/// below eq 50's 4.39.)
#[test]
fn fig5_two_paths_double_one_and_ratio_three_beats_the_faster_path() {
    let a = swept("phatak-fig5a", 20.0);
    let b = swept("phatak-fig5b", 20.0);
    let g = |r: &RatioReport, s: &str, x: f64| {
        r.row(s, x)
            .unwrap_or_else(|| panic!("{s} at {x}"))
            .goodput_kbps
    };
    for x in [100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0] {
        assert!(
            g(&a, "SRR", x) >= 1.8 * g(&a, "HBI", x),
            "fig 5(a) at {x} kbit/s"
        );
        assert!(g(&b, "SRR", x) > g(&b, "HBI", x), "fig 5(b) at {x} kbit/s");
        assert_eq!(
            b.row("SRR", x).unwrap().timeouts,
            0.0,
            "fig 5(b) at {x} kbit/s"
        );
    }
}
