//! The fault swarm in CI: 200 seeds, each its own world (see
//! `braid_sim::swarm`). A failure names the seed and the command that
//! reruns it (`braid sim swarm --seed N`).

/// Seeds that fail for a reason found by the swarm and not yet fixed in
/// the core; each must still fail (so that a fix shows up here), and no
/// other seed may.
const KNOWN: &[(u64, &str)] = &[];

#[test]
fn swarm_200_seeds() {
    let n: u64 = std::env::var("BRAID_SWARM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let mut failures = Vec::new();
    for seed in 0..n {
        let r = std::panic::catch_unwind(|| braid_sim::swarm::run_seed(seed));
        let known = KNOWN.iter().find(|k| k.0 == seed);
        match (r, known) {
            (Ok(Ok(_)), None) => {}
            (Ok(Ok(_)), Some((_, why))) => failures.push(format!(
                "seed {seed} passes now; remove it from KNOWN ({why})"
            )),
            (Ok(Err(_)), Some(_)) => {}
            (Ok(Err(e)), None) => failures.push(format!(
                "seed {seed}: {e}; reproduce: {}",
                braid_sim::swarm::reproduce_command(seed)
            )),
            (Err(_), _) => failures.push(format!(
                "seed {seed}: panic; reproduce: {}",
                braid_sim::swarm::reproduce_command(seed)
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {n} seeds:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
