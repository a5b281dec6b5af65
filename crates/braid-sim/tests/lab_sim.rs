//! Lab files in simulation (`braid_sim::tunnel`): the shipped tunnel and a
//! Linux-like TCP over the lab's links, checked against what the real lab
//! measured (README, "The real tunnel in the lab": `braid lab bench
//! lab/NAME.toml --modes single-best,mptcp,braid-pet`, kernel CUBIC).
//!
//! Runs are 15 simulated seconds with the first 2 left out, as the lab
//! bench's. The start-up matters at that length: HyStart ends slow start
//! early (about 48 packets on three-paths), and the window must then grow
//! to the ~160 packets at which PET fills the 150 ms path. Linux's CUBIC
//! grows by at least 5 % per RTT until its first loss; the model without
//! that rule took until 6.7 s and measured 0.854 on three-paths (lab
//! 0.900-0.902), 0.885 on fast-slow (lab 0.908-0.917).

use braid_core::sched::SchedulerKind;
use braid_sim::tunnel::{run_lab, LabMode, LabReport, LabRunOptions};

fn lab(name: &str) -> braid_lab::LabConfig {
    braid_lab::shipped(name).unwrap()
}

fn run(name: &str, modes: &[LabMode]) -> LabReport {
    // The lab bench's defaults: 15 s, the first 2 left out.
    let opts = LabRunOptions::default();
    assert_eq!((opts.duration_s, opts.omit_s), (15.0, 2.0));
    let r = run_lab(&lab(name), modes, &opts);
    eprintln!("{}", serde_json::to_string(&r).unwrap());
    r
}

/// Lab figures (README, "The real tunnel in the lab": three runs of
/// `braid lab bench lab/NAME.toml --modes single-best,mptcp,braid-pet
/// --format json`, 15 s, kernel CUBIC through the real tunnel, 2-core
/// machine otherwise idle): single-best share, and the lowest and highest
/// braid-pet share.
const LAB: [(&str, f64, (f64, f64)); 3] = [
    ("two-equal", 0.483, (0.912, 0.917)),
    ("fast-slow", 0.804, (0.908, 0.917)),
    ("three-paths", 0.552, (0.900, 0.902)),
];

/// How far the issue lets the simulated braid-pet share be from the lab's.
const AGREEMENT: f64 = 0.05;

/// CUBIC against the kernel: TCP alone on each lab file's best path gets
/// within 5 % of the lab's single-best goodput; braid-pet's share is
/// within 0.05 of the lab's band (measured: 0.917, 0.917, 0.907, each
/// within 0.01 of it); and the shipped tunnel really ran (every path
/// carried data, the inner TCP saw little loss on a loss-free lab).
#[test]
fn simulated_lab_agrees_with_the_real_lab() {
    for (name, single, (lo, hi)) in LAB {
        let r = run(
            name,
            &[LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)],
        );
        let s = &r.results[0];
        assert!(
            (s.share_of_sum / single - 1.0).abs() < 0.05,
            "{name}: single-best share {} vs lab {single}",
            s.share_of_sum
        );
        let b = &r.results[1];
        assert!(
            (lo - AGREEMENT..=hi + AGREEMENT).contains(&b.share_of_sum),
            "{name}: braid-pet share {} vs lab {lo}-{hi}",
            b.share_of_sum
        );
        assert!(
            b.share_of_sum <= r.ceiling_share,
            "{name}: above the ceiling"
        );
        assert!(
            b.path_mbps.iter().all(|&m| m > 0.5),
            "{name}: every path carries data: {:?}",
            b.path_mbps
        );
        assert!(b.residual_loss < 0.02, "{name}: {}", b.residual_loss);
    }
}

/// The same lab file and options give the same figures.
#[test]
fn lab_runs_are_deterministic() {
    let opts = LabRunOptions {
        duration_s: 5.0,
        omit_s: 1.0,
        ..LabRunOptions::default()
    };
    let modes = [LabMode::Braid(SchedulerKind::Pet), LabMode::Mptcp];
    let a = serde_json::to_string(&run_lab(&lab("three-paths"), &modes, &opts)).unwrap();
    let b = serde_json::to_string(&run_lab(&lab("three-paths"), &modes, &opts)).unwrap();
    assert_eq!(a, b);
}

/// A path that adds less than the tunnel's headers cost (`lab/dominant`:
/// 50 Mbit/s next to 0.3 Mbit/s at 100 ms). No tunnel that keeps the
/// inner TCP/IP headers can beat TCP on the big path alone there: 62 of
/// every 1500 bytes are the tunnel's, so a full packet carries 1386 bytes
/// of the inner TCP's payload against plain TCP's 1448, and the backup
/// adds 0.6 % to the sum. What braid must do is stay at that header
/// ceiling and not let the thin, far path hold the big one back (a
/// scheduler that loaded it would stall the inner TCP on reordering).
/// The thin path still carries its share.
#[test]
fn a_path_that_adds_less_than_the_headers_cost_leaves_the_bond_at_its_ceiling() {
    let r = run(
        "dominant",
        &[LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)],
    );
    let (single, braid) = (&r.results[0], &r.results[1]);
    let header_cost = r.ceiling_share / (1448.0 / 1500.0);
    assert!(
        braid.goodput_mbps >= 0.98 * header_cost * single.goodput_mbps,
        "braid-pet {} Mbit/s against {} on the best path alone (the headers allow {header_cost:.3} of it)",
        braid.goodput_mbps,
        single.goodput_mbps
    );
    assert!(
        braid.share_of_sum >= 0.97 * r.ceiling_share,
        "braid-pet share {} below its ceiling {}",
        braid.share_of_sum,
        r.ceiling_share
    );
    assert!(
        braid.path_mbps[1] > 0.1,
        "the thin path carried {:?}",
        braid.path_mbps
    );
}

/// What each mode leaves a competing TCP flow on a shared path
/// (`braid sim run lab/two-equal.toml --cross-tcp a`, the lab bench's
/// `--cross-tcp`): a CUBIC flow directly over path `a`, started with the
/// transfer. Every mode must leave it at least 0.4 of the 10 Mbit/s path
/// (measured: MPTCP 4.69, braid-pet 5.29, braid send 5.56), and the
/// tunnel must still carry more than path `b` alone could. Before the
/// share cap (`braid_core::sender::share`), the lab measured the tunnel
/// leaving such a flow 0.30-0.43 Mbit/s.
#[test]
fn every_mode_leaves_a_competing_flow_its_share_of_a_path() {
    let opts = LabRunOptions {
        cross_tcp: Some(0),
        ..LabRunOptions::default()
    };
    let modes = [
        LabMode::Mptcp,
        LabMode::Braid(SchedulerKind::Pet),
        LabMode::Send,
    ];
    let r = run_lab(&lab("two-equal"), &modes, &opts);
    eprintln!("{}", serde_json::to_string(&r).unwrap());
    for m in &r.results {
        let cross = m.cross_tcp_mbps.expect("the competing flow ran");
        assert!(
            cross > 4.0,
            "{}: left the competing flow {cross} Mbit/s",
            m.mode
        );
        assert!(
            m.goodput_mbps > 10.0,
            "{}: {} Mbit/s, no more than one path",
            m.mode,
            m.goodput_mbps
        );
    }
    // Without --cross-tcp no flow runs and none is reported.
    let alone = run("two-equal", &[LabMode::Braid(SchedulerKind::Pet)]);
    assert!(alone.results[0].cross_tcp_mbps.is_none());
    assert!(alone.results[0].goodput_mbps > r.results[1].goodput_mbps + 2.0);
}

/// A far path whose deep buffer someone else already keeps full
/// (`braid sim run lab/far.toml --cross-tcp far --cross-lead 8
/// --duration 60 --from 20`): the 300 ms path then delivers 600 ms later
/// still, with a share of its rate. Once the inner TCP's window covers
/// that, the tunnel carries more than TCP on the near path alone and
/// takes part of the far path from the competing flow without starving
/// it (measured: 13.2 Mbit/s from 20 s on against 9.65; the competing
/// flow 5.33, 9.46 beside TCP on the near path). In the first 15 s it
/// does not: the far packets' extra 600 ms hold the stream in the
/// resequencer (8.97 Mbit/s, README "A competing flow on a far path").
#[test]
fn a_far_path_full_of_someone_elses_traffic_still_adds_to_the_bond() {
    let opts = LabRunOptions {
        duration_s: 60.0,
        from_s: Some(20.0),
        cross_tcp: Some(1),
        cross_lead_s: 8.0,
        ..LabRunOptions::default()
    };
    let modes = [LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)];
    let r = run_lab(&lab("far"), &modes, &opts);
    eprintln!("{}", serde_json::to_string(&r).unwrap());
    let (single, braid) = (&r.results[0], &r.results[1]);
    let steady = braid.goodput_from_mbps.unwrap();
    assert!(
        steady > 1.2 * single.goodput_mbps,
        "braid-pet {steady} Mbit/s from 20 s on, the near path alone {}",
        single.goodput_mbps
    );
    let (beside_single, beside_braid) = (
        single.cross_tcp_mbps.unwrap(),
        braid.cross_tcp_mbps.unwrap(),
    );
    assert!(
        beside_single > 8.5,
        "alone on the far path: {beside_single}"
    );
    assert!(
        beside_braid > 4.0 && beside_braid < beside_single - 2.0,
        "the competing flow got {beside_braid} beside the tunnel"
    );
}

/// `lab/jitter.toml`: two cellular links whose radio retransmits one block
/// in ten 8 ms later and delivers in sequence. Nothing is lost, so the
/// bond should carry nearly what it does on clean paths. Two things held
/// it to 0.719 of the sum (seeds 1-6: 0.702-0.726; the lab measured
/// 0.69-0.74), where MPTCP's uncoupled subflows carry 0.964: packet pairs
/// released together after a hold (microseconds apart) read as hundreds
/// of Mbit/s, and a stretched pair now and then pulled the pacer's median
/// of nine down; either way the pacer's queue went over its bound and
/// dropped bursts of the inner TCP's packets. Such pairs are now left out
/// (`Sender::compressed_pair`) and the median is of 31: 0.908 (seeds 1-6:
/// 0.908-0.914), against MPTCP's 0.964.
#[test]
fn jittery_radio_links_keep_the_bond_near_its_ceiling() {
    let r = run(
        "jitter",
        &[
            LabMode::SingleBest,
            LabMode::Mptcp,
            LabMode::Braid(SchedulerKind::Pet),
        ],
    );
    let (single, mptcp, braid) = (&r.results[0], &r.results[1], &r.results[2]);
    assert!(
        braid.share_of_sum >= 0.88,
        "braid-pet {} (MPTCP {})",
        braid.share_of_sum,
        mptcp.share_of_sum
    );
    assert!(braid.share_of_sum >= 0.92 * mptcp.share_of_sum);
    assert!(braid.share_of_sum > 1.5 * single.share_of_sum);
}
