//! MPLOT's reproductions (paper 002 §IV; `SPECS.md` §2.8): each a scenario
//! file in `scenarios/` run with the shipped `braid_core::mplot` transport,
//! asserting the bounds. Runs are at most `SHORT_S` long, and some
//! sweeps are thinned, unless `BRAID_FULL_REPRO` is set.
//!
//! # Not reproduced
//!
//! These bounds of the issue are **not met**, so they are not tests here
//! (none is reported as passing while it fails). Figures from
//! `braid sim run scenarios/mplot-NAME.toml` (30 s runs, seeds as stated):
//!
//! - Fig 5's heterogeneity-blind mapping does **not** lose from five paths
//!   over one, and is not behind MPLOT: measured (6 seeds) BLIND 2.63 ->
//!   3.17, 2.12 -> 2.74, 1.50 -> 2.30 Mb/s at p_down 0, 2 %, 5 % (MPLOT
//!   2.63 -> 3.14, 2.12 -> 2.74, 1.50 -> 2.15). What both gain is idle
//!   capacity filled. Measured with the build before the Fig 7 fixes
//!   (below), whose figures were within 10 % of these: at 5 %
//!   DOWN one path is offered 4.49 Mb/s of its 10 (the sending rate,
//!   `sent`: RTO backoffs in the DOWN and 75 % states), five paths 11.5
//!   (BLIND) and 12.0 (MPLOT) Mb/s, more than their 10, since a block
//!   decoded on the other paths frees a stalled path's window (the
//!   paper's cumulative ACK) for either mapping. BLIND turned 0.70-0.76 of
//!   what arrived into goodput, MPLOT 0.60-0.71. Two readings tried, with
//!   the world's senders configured so (6 seeds, 5 % DOWN, M = 1 -> 5): a
//!   sender allowed only two unrecovered blocks (counted, as `max_blocks`
//!   then was; it has 2.7-3.1 on
//!   average, at most 6, under its limit of 128): BLIND 1.46 -> 2.25,
//!   MPLOT 1.46 -> 2.23; without the cumulative ACK's release
//!   (`release_on_decode` off) both fall, BLIND 1.70 -> 1.58 (the paper's
//!   shape, 1.2 -> 0.9) but MPLOT too, 1.70 -> 1.43. Either way the two
//!   mappings move together: what decides is how soon a stalled path's
//!   window is freed, not which block its packets carry.
//! - Table III in throughput (aggregate coding above per-path coding).
//!   The paper's throughput is the sending rate (its 16.83 Mb/s on a
//!   16.67 Mb/s path exceeds what can arrive after 5-15 % loss): measured
//!   (2 seeds) 48.67 (aggregate) against 48.94 Mb/s sent (per path), 40.97
//!   against 41.20 arriving. Both keep every path's bottleneck busy with
//!   three or four timeouts a run, so throughput is capacity-bound and equal; the
//!   paper's 4.5 % gap needs per-path sessions that idle, from timeouts it
//!   says ACKs on any path avoid. Loss-free reverse paths cannot show
//!   that, but with the ACKs crossing the forward loss model too
//!   (`reverse_loss`) the per-path sessions still do not idle: 48.16
//!   (aggregate) against 48.67 Mb/s sent, goodput 36.44 against 35.02.
//!   A session's window on a 16.7 Mb/s path is about 11 packets, whose
//!   ACKs 5-15 % loss rarely all take.
//! - Fig 7 (fairness to ECN-capable TCP-SACK) for M >= 3: measured (5
//!   seeds, 300 s) MPLOT/TCP throughput 1.05, 1.11, 1.61, 1.92, 2.93 at
//!   M = 1..5 (asserted at 1 and 2). Three faults explained most of the
//!   earlier 1.07, 1.87, 2.43, 2.55, 5.58, and a fourth reading brought
//!   M = 1 back into the bound once they were fixed:
//!   - the TCP model reduced its window a second time for one mark: the
//!     ECE on the ACK of the last packet sent before a reduction counted
//!     as new (ns-2 asks for an ACK beyond that point, `seqno >
//!     recover_`), so TCP cut more often than it was marked;
//!   - MPLOT sent a packet whenever one byte of its window was free,
//!     overshooting every window by up to a packet: with 750-byte packets
//!     only (so that sizes do not differ) and 50-packet queues it took
//!     1.30 x TCP's share on one path, 1.39 x on two (1 seed, 60 s);
//!   - RED marked per packet, so MPLOT's 250-byte packets (windows of a
//!     few kB give blocks of small packets, eq 12) drew three times the
//!     marks per byte of TCP's 750-byte ones: 0.63 x TCP on one path with
//!     the other two fixed. RED is now in byte mode
//!     (`RedParams::max_packet_bytes`, counted in bytes as ns-2's is);
//!   - with marks fair per byte MPLOT took 0.89 of TCP's share on one
//!     path: its congestion avoidance grew by one packet of the current
//!     size per round trip, a third of TCP's 750 bytes when its blocks
//!     are of 250-byte packets. It now grows by one largest packet per
//!     round trip, TCP's byte counting (`mplot::cc`): 1.05.
//!
//!   What remains at M >= 3 is the queue of one BDP (§IV: "the buffer
//!   capacity at any link is set to its bandwidth-delay product"): at
//!   10/M Mb/s and 40 ms, two packets of window for each of the 20 flows
//!   of a path are more than its BDP and queue hold (40 packets against 26
//!   at M = 5), so the queues overflow; TCP times out on drops its two or
//!   three packets of window cannot bring duplicate ACKs for, MPLOT
//!   answers marks only (§II-C) and repairs the drops with FEC. With
//!   ns-2's default queue of 50 packets instead (a build made for the
//!   measurement, 1 seed, 60 s) the ratio is 1.02-1.06 at every M.
//!
//!   Three more readings of MPLOT's window, each a build made for the
//!   measurement (M = 5, 1 seed, 60 s; MPLOT/TCP throughput 3.17 as
//!   shipped): a floor of one packet after a mark, as RFC 3168 allows,
//!   instead of two: 2.99; every loss halving the window as a mark does
//!   (`halve_on_loss`): 2.79, and with the floor of one 2.69; and without
//!   the release of a decoded block's packets from the window
//!   (`release_on_decode` off) 1.91, 1.79 with the halving. MPLOT lost
//!   38 % of its packets at the queues, TCP 18 %, with 4129 timeouts
//!   among its 50 flows. What keeps MPLOT ahead is how it finds a drop: a
//!   later packet of the same source acknowledged on any path shows it,
//!   where a TCP flow with a window of one or two packets waits for its
//!   retransmission timer.

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

fn full() -> bool {
    std::env::var_os("BRAID_FULL_REPRO").is_some()
}

/// Fig 3: one path gets about half of its 5 Mb/s effective capacity, ten
/// paths more than 0.55 of their 50 Mb/s, goodput grows with every path,
/// and from four paths on it is above M times one path's (diversity gain:
/// measured, 2 seeds, G(1) 2.62, G(4) 13.19, G(10) 36.60 Mb/s); the spread
/// of the senders' loss estimate falls with M (0.29, 0.17, 0.11).
#[test]
fn fig3_aggregation_and_diversity_gain() {
    let mut sc = load("mplot-fig3");
    if !full() {
        // One seed and five of the ten M in CI: ten paths of 10 Mb/s are
        // the slowest runs here.
        sc.mplot.seeds = 1;
        sc.mplot.values = vec![1.0, 2.0, 4.0, 7.0, 10.0];
    }
    let r = run(&sc);
    let xs = sc.mplot.values.clone();
    let g1 = goodput(&r, "MPLOT", 1.0);
    assert!((0.45 * 5.0..=0.65 * 5.0).contains(&g1), "G(1) = {g1}");
    let g10 = goodput(&r, "MPLOT", 10.0);
    assert!(g10 >= 0.55 * 50.0, "G(10) = {g10}");
    for w in xs.windows(2) {
        let (a, b) = (goodput(&r, "MPLOT", w[0]), goodput(&r, "MPLOT", w[1]));
        assert!(b > a, "G({}) = {b} <= G({}) = {a}", w[1], w[0]);
    }
    for &m in xs.iter().filter(|&&m| m >= 4.0) {
        let g = goodput(&r, "MPLOT", m);
        assert!(g >= m * g1, "G({m}) = {g} < {m} x G(1) = {}", m * g1);
    }
    let sd = |m: f64| r.row("MPLOT", m).unwrap().loss_estimate_std;
    assert!(sd(4.0) < sd(1.0) && sd(10.0) < sd(4.0), "{r:?}");
}

/// Fig 5: with DOWN periods, MPLOT gains from five paths over one at every
/// DOWN probability (measured, 6 seeds: 2.63 -> 3.14, 2.12 -> 2.74,
/// 1.50 -> 2.15 Mb/s at p_down 0, 2 %, 5 %). A single path's DOWN periods
/// make one seed's G(1) swing by a third, hence six seeds.
#[test]
fn fig5_mplot_gains_from_paths_at_every_down_probability() {
    let mut sc = load("mplot-fig5");
    sc.mplot.values = vec![1.0, 5.0];
    sc.mplot.schemes = vec!["MPLOT".into()];
    sc.mplot.seeds = sc.mplot.seeds.max(6);
    for p in [0.0, 0.02, 0.05] {
        sc.mplot.p_down = p;
        let r = run(&sc);
        let (g1, g5) = (goodput(&r, "MPLOT", 1.0), goodput(&r, "MPLOT", 5.0));
        assert!(g5 > g1, "p_down {p}: MPLOT G(5) = {g5} <= G(1) = {g1}");
    }
}

/// Table III: coding across the aggregate beats coding on each path in
/// goodput (measured 39.07 against 37.36 Mb/s), and still does when the
/// ACKs cross lossy channels too (36.44 against 35.02); in the sending
/// rate, the paper's throughput, they do not differ (module doc).
#[test]
fn table3_aggregate_beats_per_path_in_goodput() {
    let mut sc = load("mplot-table3");
    for reverse_loss in [false, true] {
        sc.mplot.reverse_loss = reverse_loss;
        let r = run(&sc);
        let a = r.row("MPLOT", 3.0).unwrap();
        let p = r.row("PER-PATH", 3.0).unwrap();
        assert!(
            a.goodput_kbps > p.goodput_kbps,
            "reverse loss {reverse_loss}: goodput {a:?} vs {p:?}"
        );
    }
}

/// Fig 8 at M = 2..5, the whole bound: G(0.05) >= G(0.5) >= G(0.99) and
/// G(0.5) >= 0.85 G(0.05), over the file's 40 seeds (measured, Mb/s at
/// θ = 0.05, 0.5, 0.99: M = 2 2.17, 2.11, 2.07; M = 3 (the file) 2.46,
/// 2.41, 2.28; M = 4 3.03, 2.82, 2.61; M = 5 3.13, 2.93, 2.66). With 10
/// seeds a run's swing of about a tenth put G(0.05) and G(0.5), or G(0.5)
/// and G(0.99), the wrong way round at M = 2 or 3 (M = 3: 2.44, 2.46,
/// 2.27). At M = 3 a source has about two packets of window on each
/// 3.3 Mb/s path, and its ~1000 timeouts a run (block delays above 1 s)
/// weigh on goodput as much as the diversity θ removes. θ couples the
/// paths' 25 %/75 % states as well as their per-packet draws
/// (`braid_net::coupled`); with the draws alone it was flat (2.70, 2.64,
/// 2.72 at M = 3), since the draws of one slot mostly fall on different
/// sources' packets.
#[test]
fn fig8_correlation_costs_gracefully_at_every_m() {
    for m in 2..=5 {
        let mut sc = load("mplot-fig8");
        sc.mplot.paths = m;
        let r = run(&sc);
        let g = |t: f64| goodput(&r, "MPLOT", t);
        let (a, b, c) = (g(0.05), g(0.5), g(0.99));
        assert!(
            a >= b && b >= c,
            "M = {m}: G = {a}, {b}, {c} at θ = 0.05, 0.5, 0.99"
        );
        assert!(
            b >= 0.85 * a,
            "M = {m}: G(0.5) = {b} < 0.85 G(0.05) = {}",
            0.85 * a
        );
    }
}

/// Figs 11, 13, 14: at 30 % loss MPLOT has at least five times PTCP's
/// goodput, with lower mean delay and delay deviation, for every M
/// (measured 5.12-5.17 against 0.43-0.61 Mb/s; PTCP's subflows are ns-2
/// TCP-SACK, whose timeouts at 30 % loss keep it under the paper's 1 Mb/s).
#[test]
fn fig11_13_14_five_times_ptcp_at_30_percent_loss() {
    let r = run(&load("mplot-fig11"));
    for m in 2..=5 {
        let x = f64::from(m);
        let a = r.row("MPLOT", x).unwrap();
        let p = r.row("PTCP", x).unwrap();
        assert!(
            a.goodput_kbps >= 5.0 * p.goodput_kbps,
            "M = {m}: {a:?} vs {p:?}"
        );
        assert!(p.goodput_kbps < 1000.0, "M = {m}: PTCP {p:?}");
        assert!(a.delay_mean_ms < p.delay_mean_ms, "M = {m}: {a:?} vs {p:?}");
        assert!(a.delay_std_ms < p.delay_std_ms, "M = {m}: {a:?} vs {p:?}");
    }
}

/// Figs 12 and 15: MPLOT falls roughly linearly with loss; PTCP matches it
/// without loss, is ahead at 5 %, and is behind from 15 % on by a growing
/// factor (the curves cross near the paper's 10 %); MPLOT's delay stays
/// below PTCP's from 10 % loss on.
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
    assert!(p[2] > g[2], "5 %: PTCP {} MPLOT {}", p[2], g[2]);
    let lead: Vec<f64> = (4..xs.len()).map(|i| g[i] / p[i]).collect();
    assert!(lead.iter().all(|&l| l > 1.0), "lead {lead:?}");
    assert!(lead.windows(2).all(|w| w[1] > w[0]), "lead {lead:?}");
    for &x in &xs[3..] {
        let (a, b) = (r.row("MPLOT", x).unwrap(), r.row("PTCP", x).unwrap());
        assert!(a.delay_mean_ms < b.delay_mean_ms, "at {x}: {a:?} vs {b:?}");
    }
}

/// Fig 7 on one and two paths: ten MPLOT sources and ten ECN-capable
/// TCP-SACK flows on every path share the lossless 10 Mb/s in a ratio
/// within [0.9, 1.2] (measured, 5 seeds, 300 s: 4.75 against 4.52 Mb/s at
/// M = 1, 1.05; 4.90 against 4.43 at M = 2, 1.11; the paper 5.1 against
/// 4.7). M >= 3 is not reproduced (module doc).
#[test]
fn fig7_fair_to_tcp_sack_on_one_and_two_paths() {
    let mut sc = load("mplot-fig7");
    if !full() {
        sc.mplot.values = vec![1.0, 2.0];
        sc.mplot.seeds = 2;
    }
    let r = run(&sc);
    for m in [1.0, 2.0] {
        let a = r.row("MPLOT", m).unwrap();
        let ratio = a.throughput_kbps / a.tcp_throughput_kbps;
        assert!(
            (0.9..=1.2).contains(&ratio),
            "M = {m}: MPLOT/TCP {ratio}: {a:?}"
        );
    }
}
