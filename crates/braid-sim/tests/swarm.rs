//! The fault swarm in CI: 200 seeds, each its own world (see
//! `braid_sim::swarm`). A failure names the seed and the command that
//! reruns it.

#[test]
fn swarm_200_seeds() {
    let n: u64 = std::env::var("BRAID_SWARM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let mut failures = Vec::new();
    let mut completed = 0;
    for seed in 0..n {
        match std::panic::catch_unwind(|| braid_sim::swarm::run_seed(seed)) {
            Ok(Ok(_)) => completed += 1,
            Ok(Err(e)) => failures.push(format!(
                "seed {seed}: {e}; reproduce: {}",
                braid_sim::swarm::reproduce_command(seed)
            )),
            Err(_) => failures.push(format!(
                "seed {seed}: panic; reproduce: {}",
                braid_sim::swarm::reproduce_command(seed)
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} seeds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(completed, n);
}
