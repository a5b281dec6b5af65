//! `braid send` / `braid recv` in the emulated lab: a file of random bytes
//! over both paths of `lab/two-equal.toml` (2 x 10 Mbit/s, 20 ms, drop-tail
//! queues of one BDP, no ECN), run as `braid lab bench --modes braid-send`
//! runs it (and `--modes braid-send-rmtp` with R-MTP). The mode itself fails unless sender and receiver print the
//! SHA-256 of the file as written; the test adds the goodput bound.
//!
//! Needs root and network namespaces, so it is `#[ignore]`d (reported as
//! ignored by a plain `cargo test`); `.ci/run` runs it as root with
//! `--include-ignored`.

use std::path::PathBuf;

use braid_lab::topo;
use braid_lab::{BenchOptions, LabConfig};

/// 25 MB: ten seconds at the sum of the path rates.
const BYTES: u64 = 25_000_000;

/// The least share of the 20 Mbit/s sum accepted. Measured with this
/// test (test profile) on a 2-core machine loaded by other builds:
/// 0.653 and (ACKs on their own path) 0.786 at load 8.7, and the release
/// build 0.63-0.87 at load 9.5-14
/// (README, "braid send in the lab"); before 1400-byte
/// packets and NewReno's recovery point it was 0.48-0.53, below this.
const MIN_SHARE: f64 = 0.55;

/// The least share of the sum accepted of R-MTP (`--transport rmtp`, the
/// `braid-send-rmtp` mode). Measured with the release build on the same
/// lab file, 25 MB, while the 2-core machine was loaded by other builds
/// (load 11-13): 0.675, 0.688, 0.772 and 0.793 (README, "R-MTP in the
/// lab"); before the rate rule's real-timer fixes 0.68-0.70 with 7-11 %
/// of the frames lost.
const MIN_SHARE_RMTP: f64 = 0.55;

/// Sends [`BYTES`] over lab/two-equal with `transport` and checks the
/// share of the sum and that both paths carried part of the file (the
/// mode itself checks both SHA-256).
fn a_file_crosses_two_paths(transport: braid::transport::Mode, min_share: f64) {
    if let Err(why) = topo::check_environment() {
        panic!("the lab cannot run here: {why} (run as root; `bash .ci/run` installs the tools)");
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_braid"));
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../lab/two-equal.toml");
    let cfg: LabConfig = braid_lab::load_config(&file).unwrap();
    let _lock = topo::LabLock::acquire().unwrap();
    braid_lab::up(
        &cfg,
        &braid_lab::EmulatorCommand::new(&exe).with_args(["lab", "emulate"]),
    )
    .unwrap();
    let mode = braid::labsend::mode(exe, Some(BYTES), transport);
    let report = braid_lab::bench_with(&cfg, &[mode], &BenchOptions::default());
    let send_log = std::fs::read_to_string(format!("{}/send.log", braid::labsend::WORK_DIR))
        .unwrap_or_default();
    braid_lab::down().unwrap();
    let name = transport.name();
    let report = report.unwrap_or_else(|e| panic!("braid send ({name}) failed: {e:#}\n{send_log}"));
    let r = &report.results[0];
    let last = send_log.rsplit('\r').next().unwrap_or("");
    eprintln!(
        "{name}: {BYTES} bytes at {:.2} Mbit/s, {:.3} of the sum; paths {:?} Mbit/s\n{last}",
        r.goodput_mbps, r.share_of_sum, r.path_mbps
    );
    assert!(
        r.share_of_sum >= min_share,
        "braid send ({name}) delivered {:.3} of the sum of the path rates, below {min_share}\n{last}",
        r.share_of_sum
    );
    // Both paths carried the file, not one of them.
    assert_eq!(r.path_mbps.len(), 2);
    for (i, m) in r.path_mbps.iter().enumerate() {
        assert!(*m > 3.0, "{name}: path {i} carried only {m:.2} Mbit/s");
    }
}

#[test]
#[ignore = "needs root and network namespaces (bash .ci/run runs it as root)"]
fn a_file_crosses_two_paths_intact_at_most_of_their_sum() {
    a_file_crosses_two_paths(braid::transport::Mode::Mplot, MIN_SHARE);
}

#[test]
#[ignore = "needs root and network namespaces (bash .ci/run runs it as root)"]
fn a_file_crosses_two_paths_intact_with_rmtp() {
    a_file_crosses_two_paths(braid::transport::Mode::Rmtp, MIN_SHARE_RMTP);
}
