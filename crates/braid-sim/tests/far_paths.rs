//! Far paths (issue 13): a path hundreds of milliseconds further away
//! than the other, through the shipped tunnel with a Linux-like CUBIC
//! upload, 60 simulated seconds, the whole test (from 2 s, as the lab
//! bench omits) and the part from 20 s on. Shares are of the sum of the
//! path rates; the tunnel's header ceiling is 0.924.
//!
//! The issue's targets, per lab file: `far` >= 0.85 whole and >= 0.88
//! from 20 s; `satellite` (0.5 % loss on the far path) >= 0.80; `geo`
//! (580 ms further) >= 0.70 whole and >= 0.85 from 20 s. The far path
//! must carry data and braid must never fall below the near path alone.

use braid_core::sched::SchedulerKind;
use braid_sim::tunnel::{run_lab, LabMode, LabReport, LabRunOptions};

fn lab(name: &str) -> braid_lab::LabConfig {
    braid_lab::shipped(name).unwrap()
}

fn run(name: &str) -> LabReport {
    let opts = LabRunOptions {
        duration_s: 60.0,
        from_s: Some(20.0),
        ..LabRunOptions::default()
    };
    let modes = [LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)];
    let r = run_lab(&lab(name), &modes, &opts);
    eprintln!("{}", serde_json::to_string(&r).unwrap());
    r
}

/// Checks one lab file against its targets (`None`: no target), with at
/// most `max_timeouts` retransmission timeouts of the inner TCP.
fn check(name: &str, whole: f64, from_20: Option<f64>, max_timeouts: u64) {
    let r = run(name);
    let single = &r.results[0];
    let b = &r.results[1];
    let from = b.share_from.expect("asked for --from");
    assert!(
        b.share_of_sum >= whole,
        "{name}: whole-test share {:.3} < {whole}",
        b.share_of_sum
    );
    if let Some(t) = from_20 {
        assert!(from >= t, "{name}: share from 20 s {from:.3} < {t}");
    }
    assert!(
        b.share_of_sum > single.share_of_sum && from > single.share_from.unwrap(),
        "{name}: below the near path alone"
    );
    // The far path adds capacity: at least half its rate on average.
    let far_rate = r.sum_mbps - single.path_mbps[0];
    assert!(
        b.path_mbps[1] >= 0.5 * far_rate,
        "{name}: far path carried {:.2} Mbit/s",
        b.path_mbps[1]
    );
    // No spurious retransmission timeouts of the inner TCP (Phatak §4):
    // the RTT it sees grows with the near queue, never in a jump.
    assert!(
        b.timeouts <= max_timeouts,
        "{name}: inner TCP timed out {} times",
        b.timeouts
    );
}

#[test]
fn far_uses_a_path_280_ms_further_away() {
    check("far", 0.85, Some(0.88), 0);
}

/// Satellite allows two timeouts, neither spurious. Since the CUBIC model
/// grows by 5 % per RTT before its first loss, as Linux's does, the
/// window passes 1,600 packets (the paths hold about 1,500 in flight) by
/// 14 s; at 22 s and 44 s the tunnel's pacing queues drop about 100
/// packets at once (`pacing_drops`), and recovering that many over a
/// 600 ms path ends in a timeout (`BRAID_TRACE=satellite BRAID_TRACE_S=60
/// cargo test -p braid-sim --lib trace -- --ignored --nocapture`). This
/// is the tunnel's behaviour, not the model's: a burst of drops where one
/// early drop would do.
#[test]
fn satellite_uses_a_lossy_far_path() {
    check("satellite", 0.80, None, 2);
}

#[test]
fn geo_uses_a_path_580_ms_further_away() {
    check("geo", 0.70, Some(0.85), 0);
}

/// `lab/satellite.toml` without its loss: 20 Mbit/s 15 ms next to
/// 10 Mbit/s 300 ms, so the rate-proportional split is 2:1.
const SATELLITE_CLEAN: &str = r#"
name = "satellite-clean"
seed = 1
[[path]]
name = "terrestrial"
rate_mbit = 20.0
delay_ms = 15.0
queue_bytes = 75000
[[path]]
name = "satellite"
rate_mbit = 10.0
delay_ms = 300.0
queue_bytes = 750000
"#;

/// Most the steady split may differ from Phatak et al.'s eq 14, as a
/// share of the paths' sum.
const SPLIT_TOLERANCE: f64 = 0.03;

/// In steady state the split converges to the rate-proportional split of
/// Phatak et al. (paper 003, eq 14: f_i = b_i / sum_k b_k, the limit of
/// eqs 6-13 for a long transfer, where the delays c_i no longer matter):
/// from 20 s on, each path's share of what the paths carried is within
/// [`SPLIT_TOLERANCE`] of its share of the paths' rates, on `far` (1:1)
/// and on a clean satellite set (2:1).
fn check_split(cfg: &braid_lab::LabConfig) {
    let opts = LabRunOptions {
        duration_s: 60.0,
        from_s: Some(20.0),
        ..LabRunOptions::default()
    };
    let r = run_lab(cfg, &[LabMode::Braid(SchedulerKind::Pet)], &opts);
    let b = &r.results[0];
    let carried = b.path_from_mbps.clone().expect("asked for --from");
    let rates: Vec<f64> = (0..cfg.paths.len())
        .map(|i| cfg.resolve(i, braid_lab::Direction::Up).rate_bps)
        .collect();
    let (sum_c, sum_b): (f64, f64) = (carried.iter().sum(), rates.iter().sum());
    for (i, (c, b)) in carried.iter().zip(&rates).enumerate() {
        let (f, eq14) = (c / sum_c, b / sum_b);
        eprintln!(
            "{}: path {i} carried {c:.2} Mbit/s from 20 s, share {f:.3}, eq 14 {eq14:.3}",
            cfg.name
        );
        assert!(
            (f - eq14).abs() <= SPLIT_TOLERANCE,
            "{}: path {i} carried {f:.3} of the bytes from 20 s, eq 14 gives {eq14:.3}",
            cfg.name
        );
    }
    // Converged to the split while carrying close to the paths' sum (the
    // split of a trickle would say nothing).
    assert!(
        b.share_from.unwrap() >= 0.85,
        "{}: share from 20 s {:.3}",
        cfg.name,
        b.share_from.unwrap()
    );
}

#[test]
fn far_split_converges_to_eq_14() {
    check_split(&lab("far"));
}

#[test]
fn unequal_far_split_converges_to_eq_14() {
    check_split(
        &braid_lab::LabConfig::from_toml_str(SATELLITE_CLEAN, "satellite without loss").unwrap(),
    );
}

/// Two far paths of about the same delay with shallow queues (random set
/// 4242/12 of `lab/sweep-random.sh`: 2.11 Mbit/s 189 ms and 4.84 Mbit/s
/// 173 ms away), the tunnel idle 3 s first so both are measured. The
/// inner TCP's slow start overshoots to about 660 packets, and CUBIC's
/// first cut leaves the window above what the paths and the pacing bound
/// hold: the pacing queue stays at its bound through the recovery.
/// Dropping the retransmissions there too cost two timeouts and 2.55
/// Mbit/s; the retransmissions now wait past the bound
/// (`braid_core::sender`'s `bound::retransmit_bound`) and the transfer
/// has no timeout.
#[test]
fn a_slow_start_overshooting_far_paths_recovers_without_a_timeout() {
    let cfg = braid_lab::LabConfig::from_toml_str(
        "name = \"rand12\"\nseed = 13\n\
         [[path]]\nname = \"p0\"\nrate_mbit = 2.11\ndelay_ms = 189.1\nqueue_bytes = 199500\n\
         [[path]]\nname = \"p1\"\nrate_mbit = 4.84\ndelay_ms = 173.4\nqueue_bytes = 52453\n",
        "test",
    )
    .unwrap();
    let opts = LabRunOptions {
        duration_s: 15.0,
        idle_s: 3.0,
        ..LabRunOptions::default()
    };
    let modes = [LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)];
    let r = run_lab(&cfg, &modes, &opts);
    eprintln!("{}", serde_json::to_string(&r).unwrap());
    let (single, b) = (&r.results[0], &r.results[1]);
    assert!(b.retransmits > 0, "slow start no longer overshoots here");
    assert_eq!(b.timeouts, 0, "the inner TCP timed out");
    assert!(
        b.goodput_mbps > 1.2 * single.goodput_mbps,
        "{:.2} Mbit/s against {:.2} on the faster path alone",
        b.goodput_mbps,
        single.goodput_mbps
    );
}
