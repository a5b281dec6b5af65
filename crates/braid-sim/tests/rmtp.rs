//! R-MTP's experiments (paper 004 §4, `SPECS.md` §4.2) in the simulator:
//! `scenarios/rmtp-*.toml` with the shipped `braid_core::rmtp` against the
//! simulator's NewReno. Each run is 1000 frames of 1400 B, as the paper's,
//! and takes milliseconds of CPU, so CI runs the full size over three seeds;
//! `BRAID_FULL_REPRO=1` runs ten.
//!
//! Not reproduced: the Figs 4-5 bound that R-MTP over both links finishes
//! at least 15 % sooner than over the lossy fast link alone. With the
//! paper's links it cannot hold: the slow link (115 kbit/s, 110 kbit/s of
//! goodput) is 12.5 % of what R-MTP gets through the 30 %-loss fast link
//! (878 kbit/s), so even perfect aggregation takes 0.889 x the fast link's
//! time (measured: 0.899 x over three seeds, 0.904 x over ten). The paper's
//! 25 % came from its R-MTP carrying only 137 kbit/s over the lossy link;
//! braid's does not take the random losses for congestion and keeps the
//! rate. `fig45_lossy_fast_link` asserts instead that the aggregate is
//! within 2 % of perfect aggregation and sooner than the slow link alone.

use std::path::PathBuf;

use braid_sim::rmtp::{self, RmtpReport, RmtpRow, RmtpScenario};

fn report(file: &str) -> RmtpReport {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(file);
    let mut sc = RmtpScenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
    if std::env::var_os("BRAID_FULL_REPRO").is_some() {
        sc.rmtp.seeds = 10;
    }
    let r = rmtp::run(&sc);
    eprintln!("{}", r.to_table());
    for row in &r.rows {
        assert_eq!(row.unfinished, 0, "{row:?}");
    }
    r
}

fn row<'a>(r: &'a RmtpReport, scheme: &str, x: f64) -> &'a RmtpRow {
    r.row(scheme, x)
        .unwrap_or_else(|| panic!("no {scheme} at {x} in {}", r.name))
}

/// Table 1 analogue: on each lossless link alone, R-MTP's completion time
/// is within ±10 % of NewReno's.
#[test]
fn table1_rmtp_within_ten_percent_of_newreno() {
    let r = report("rmtp-table1.toml");
    for x in [0.0, 1.0, 2.0, 3.0] {
        let (a, b) = (row(&r, "RMTP", x), row(&r, "NEWRENO", x));
        let ratio = a.completion_s / b.completion_s;
        assert!(
            (0.9..=1.1).contains(&ratio),
            "link {x} ({:?}): R-MTP {:.2} s, NewReno {:.2} s",
            a.links,
            a.completion_s,
            b.completion_s
        );
        // Lossless: nothing is resent and the rate is never cut.
        assert_eq!(a.retransmits_per_frame, 0.0, "{a:?}");
        assert_eq!(a.rate_cuts, 0.0, "{a:?}");
    }
}

/// Fig 2: two equal links take at most 0.6 × the single-link time.
#[test]
fn fig2_two_equal_links_aggregate() {
    let r = report("rmtp-fig2.toml");
    let both = row(&r, "RMTP", 0.0).completion_s;
    for s in ["RMTP-FAST", "RMTP-SLOW"] {
        let one = row(&r, s, 0.0).completion_s;
        assert!(both <= 0.6 * one, "both {both:.2} s, {s} {one:.2} s");
    }
}

/// Fig 3: a slow link beside a clean fast one gives only a small gain:
/// the aggregate takes between 0.85 × and 1.0 × the fast link's time (the
/// slow link is 8 % of the capacity; `SPECS.md` §4.2's bound).
#[test]
fn fig3_fast_plus_slow_gains_little() {
    let r = report("rmtp-fig3.toml");
    let both = row(&r, "RMTP", 0.0).completion_s;
    let fast = row(&r, "RMTP-FAST", 0.0).completion_s;
    let ratio = both / fast;
    assert!(
        (0.85..=1.0).contains(&ratio),
        "both {both:.2} s, fast alone {fast:.2} s: {ratio:.3}"
    );
}

/// Figs 4-5: 30 % loss on the fast link.
#[test]
fn fig45_lossy_fast_link() {
    let r = report("rmtp-fig45.toml");
    let nr0 = row(&r, "NEWRENO", 0.0).completion_s;
    let nr = row(&r, "NEWRENO", 0.3).completion_s;
    let fast = row(&r, "RMTP-FAST", 0.3).completion_s;
    let slow = row(&r, "RMTP-SLOW", 0.3).completion_s;
    let both = row(&r, "RMTP", 0.3).completion_s;
    // NewReno on the lossy link takes at least 10 × its lossless time.
    assert!(
        nr >= 10.0 * nr0,
        "NewReno {nr:.1} s lossy, {nr0:.1} s lossless"
    );
    // R-MTP does not take the losses for congestion.
    assert!(
        fast < nr,
        "R-MTP {fast:.1} s, NewReno {nr:.1} s on the lossy link"
    );
    assert_eq!(row(&r, "RMTP-FAST", 0.3).rate_cuts, 0.0);
    // Both links: sooner than the slow link alone.
    assert!(both < slow, "both {both:.1} s, slow alone {slow:.1} s");
    // Sooner than the lossy fast link alone, by as much as the slow
    // link's capacity allows: with perfect aggregation the time is
    // `fast · g_fast / (g_fast + g_slow)`, the goodputs of each link
    // alone (0.889 × with the lossy Aviator's 878 kbit/s and IRLan's 110).
    assert!(both < fast, "both {both:.1} s, fast alone {fast:.1} s");
    let g_fast = row(&r, "RMTP-FAST", 0.3).goodput_kbps;
    let g_slow = row(&r, "RMTP-SLOW", 0.3).goodput_kbps;
    let ideal = g_fast / (g_fast + g_slow);
    assert!(
        both / fast <= ideal * 1.02,
        "both / fast alone = {:.3}, perfect aggregation {ideal:.3}",
        both / fast
    );
}
