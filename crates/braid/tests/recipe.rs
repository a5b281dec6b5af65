//! docs/DEPLOY.md's two-namespace lab runs as written: `docs/recipe.sh`
//! with this build's binary (root, ip, ping, iperf3). The script itself checks the handshake, pings,
//! an upload through both paths and one during a link cut, and tears down
//! what it created.

use std::process::Command;

#[test]
#[ignore = "needs root, iproute2, ping and iperf3; .ci/run runs it as root"]
fn deploy_recipe_runs_as_written() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "run the suite as root");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/recipe.sh");
    let out = Command::new("bash")
        .arg(script)
        .env("BRAID", env!("CARGO_BIN_EXE_braid"))
        .env("SECONDS_PER_RUN", "3")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("recipe: ok"),
        "{stdout}\n{stderr}"
    );
    for line in stdout.lines().filter(|l| l.contains("Mbit/s")) {
        eprintln!("{line}");
    }
    // Nothing left behind: its namespaces are gone.
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&ns.stdout)
            .lines()
            .any(|l| l.contains("-cli") && l.starts_with('b') && l.len() == 10),
        "a recipe namespace was left behind"
    );
}
