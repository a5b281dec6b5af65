//! Far paths (issue 13): a path hundreds of milliseconds further away
//! than the other, through the shipped tunnel with a Linux-like CUBIC
//! upload, 60 simulated seconds, the whole test (from 2 s, as the lab
//! bench omits) and the part from 20 s on. Shares are of the sum of the
//! path rates; the tunnel's header ceiling is 0.924.
//!
//! The targets, per lab file: `far` >= 0.85 whole and >= 0.88
//! from 20 s; `satellite` (0.5 % loss on the far path) >= 0.80; `geo`
//! (580 ms further) >= 0.70 whole and >= 0.85 from 20 s. The far path
//! must carry data and braid must never fall below the near path alone.

use std::path::PathBuf;

use braid_core::sched::SchedulerKind;
use braid_sim::tunnel::{run_lab, LabMode, LabReport, LabRunOptions};

fn lab(name: &str) -> braid_lab::LabConfig {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../lab")
        .join(format!("{name}.toml"));
    braid_lab::load_config(&p).unwrap()
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
