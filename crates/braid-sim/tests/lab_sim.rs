//! Lab files in simulation (`braid_sim::tunnel`): the shipped tunnel and a
//! Linux-like TCP over the lab's links, compared with what the real lab
//! measured (README, "The real tunnel in the lab").

use std::path::PathBuf;

use braid_core::sched::SchedulerKind;
use braid_sim::tunnel::{run_lab, LabMode, LabReport, LabRunOptions};

fn lab(name: &str) -> braid_lab::LabConfig {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../lab")
        .join(format!("{name}.toml"));
    braid_lab::load_config(&p).unwrap()
}

fn run(name: &str, modes: &[LabMode]) -> LabReport {
    let r = run_lab(&lab(name), modes, &LabRunOptions::default());
    eprintln!("{}", serde_json::to_string(&r).unwrap());
    r
}

/// Lab figures (README): single-best share and braid-pet share.
const LAB: [(&str, f64, f64); 3] = [
    ("two-equal", 0.483, 0.915),
    ("fast-slow", 0.804, 0.912),
    ("three-paths", 0.552, 0.909),
];

#[test]
fn explore() {
    for (name, _, _) in LAB {
        run(
            name,
            &[LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)],
        );
    }
}
