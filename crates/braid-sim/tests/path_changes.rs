//! Paths that change during a transfer, through the shipped tunnel with a
//! Linux-like CUBIC upload (`braid sim run lab/NAME.toml`, 15 s).
//!
//! `lab/handover.toml`: 5 s in, the 8 Mbit/s cellular path moves 200 ms
//! further away beside a 25 Mbit/s Wi-Fi path. Before the tunnel followed
//! such a rise, every cellular packet was declared lost and repaired,
//! Karn's rule dropped every report of the originals, and the path's
//! base delay stayed at its old minimum for the filter's 10 s window: PET
//! kept sending on it as if it were near, the stream waited 200 ms for
//! each such packet, and the bond carried 9.2 Mbit/s where Wi-Fi alone
//! carries 24.1 (README, "A path whose delay jumps").

use braid_core::sched::SchedulerKind;
use braid_sim::tunnel::{run_lab, LabMode, LabRunOptions};

#[test]
fn a_handover_that_moves_a_path_far_away_leaves_the_bond_near_its_best_path() {
    let cfg = braid_lab::shipped("handover").unwrap();
    let modes = [LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)];
    let r = run_lab(&cfg, &modes, &LabRunOptions::default());
    eprintln!("{}", serde_json::to_string(&r).unwrap());
    let (best, bond) = (&r.results[0], &r.results[1]);
    assert!(
        bond.goodput_mbps >= 0.85 * best.goodput_mbps,
        "bond {:.2} against Wi-Fi alone {:.2} Mbit/s",
        bond.goodput_mbps,
        best.goodput_mbps
    );
    // The cellular path carried its share before the handover.
    assert!(
        bond.path_mbps[1] >= 1.5,
        "cellular carried {:.2} Mbit/s",
        bond.path_mbps[1]
    );
    assert_eq!(bond.timeouts, 0, "the inner TCP timed out");
}
