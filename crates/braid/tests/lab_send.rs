//! `braid send` / `braid recv` in the emulated lab: a file of random bytes
//! over both paths of `lab/two-equal.toml` (2 x 10 Mbit/s, 20 ms, drop-tail
//! queues of one BDP, no ECN), run as `braid lab bench --modes braid-send`
//! runs it (and `--modes braid-send-rmtp` with R-MTP). The mode itself fails unless sender and receiver print the
//! SHA-256 of the file as written; the test adds the goodput bound.
//!
//! Needs root and network namespaces, so it is `#[ignore]`d (reported as
//! ignored by a plain `cargo test`); `.ci/run` runs it as root with
//! `--include-ignored`.
//!
//! A second test sends over `lab/bursty-ecn.toml`, whose queues mark
//! ECN-capable packets: the emulator must have marked some of braid
//! send's datagrams CE (so ECT(0) left the sender's sockets), and the
//! transfer must beat what loss alone allowed on the plain file.

use std::path::PathBuf;

use braid_lab::topo;
use braid_lab::{BenchOptions, LabConfig};

/// 25 MB: ten seconds at the sum of the path rates.
const BYTES: u64 = 25_000_000;

/// The least share of the 20 Mbit/s sum accepted. Measured with this
/// test (test profile) on a 2-core machine loaded by other builds:
/// 0.653 and (ACKs on their own path) 0.786 at load 8.7, and the release
/// build 0.63-0.87 at load 9.5-14 (README, "braid send in the lab");
/// before 1400-byte packets and NewReno's recovery point it was
/// 0.48-0.53. On the build of 2026-11-26 the test build (this test's
/// binary, built with CI's Rust 1.88) measured 0.543, 0.551 and 0.543 on
/// a quiet machine in three runs, with six window cuts and an RTO on each
/// path, while the release build carried 0.847 and 0.853 of the sum in
/// the same session (`braid lab bench lab/two-equal.toml --modes
/// braid-send --duration 10`), so what sits near 0.55 is the build, not
/// the protocol. That cost was found later the same day: every block
/// built its own Reed-Solomon code, inverting a 120-250 square matrix,
/// which the unoptimised test build does several times slower still.
/// With codes kept by shape and blocks of at most 64 data packets
/// (`SenderConfig::max_block_data`) and queues drained
/// (`drain_standing_queue`), the test build carried 0.90 (18.0 Mbit/s,
/// 0 cuts, 66 and 63 drains); the floor is 0.75.
const MIN_SHARE: f64 = 0.75;

/// The least share of bursty-ecn's 20 Mbit/s sum accepted. Measured
/// (release build, machine at load 11-15): 0.65-0.68 with marking, and
/// 0.35 on the plain `lab/bursty.toml`, where every burst of loss halved a
/// window. Since braid send drains standing queues (2026-11-26) the
/// plain file reaches 0.85-0.89 too, so the share no longer tells whether
/// marks are read (the CE count the test also checks does); the test
/// build carried 0.83 (16.6 Mbit/s, 2 cuts per path), and the floor is
/// 0.65.
const MIN_SHARE_ECN: f64 = 0.65;

/// The least share of the sum accepted of R-MTP (`--transport rmtp`, the
/// `braid-send-rmtp` mode). Measured with the release build on the same
/// lab file, 25 MB, while the 2-core machine was loaded by other builds
/// (load 11-13): 0.675, 0.688, 0.772 and 0.793 (README, "R-MTP in the
/// lab"); before the rate rule's real-timer fixes 0.68-0.70 with 7-11 %
/// of the frames lost.
const MIN_SHARE_RMTP: f64 = 0.55;

/// Brings `lab/NAME.toml` up, sends `bytes` with `braid send` over
/// `transport`, and returns the result, the sender's last progress line
/// and the emulator's CE marks on the way up (client to proxy), summed
/// over the paths.
fn send_over(
    name: &str,
    bytes: u64,
    transport: braid::transport::Mode,
) -> (braid_lab::BenchResult, String, u64) {
    if let Err(why) = topo::check_environment() {
        panic!("the lab cannot run here: {why} (run as root; `bash .ci/run` installs the tools)");
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_braid"));
    let cfg: LabConfig = braid_lab::shipped(name).unwrap();
    let _lock = topo::LabLock::acquire().unwrap();
    braid_lab::up(
        &cfg,
        &braid_lab::EmulatorCommand::new(&exe).with_args(["lab", "emulate"]),
    )
    .unwrap();
    let mode = braid::labsend::mode(exe, Some(bytes), transport);
    let report = braid_lab::bench_with(&cfg, &[mode], &BenchOptions::default());
    let send_log = std::fs::read_to_string(format!("{}/send.log", braid::labsend::WORK_DIR))
        .unwrap_or_default();
    // The stats file is rewritten every 200 ms: let the last marks land.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let marks = braid_lab::stats::read_stats()
        .map(|s| s.paths.iter().map(|p| p.up.ce_marks).sum())
        .unwrap_or(0);
    braid_lab::down().unwrap();
    let t = transport.name();
    let report = report.unwrap_or_else(|e| panic!("braid send ({t}) failed: {e:#}\n{send_log}"));
    let last = send_log.rsplit('\r').next().unwrap_or("").to_string();
    let r = report.results.into_iter().next().expect("one mode");
    eprintln!(
        "{name} ({t}): {bytes} bytes at {:.2} Mbit/s, {:.3} of the sum; paths {:?} Mbit/s; {marks} CE marks\n{last}",
        r.goodput_mbps, r.share_of_sum, r.path_mbps
    );
    (r, last, marks)
}

/// Sends [`BYTES`] over lab/two-equal with `transport` and checks the
/// share of the sum and that both paths carried part of the file (the
/// mode itself checks both SHA-256).
fn a_file_crosses_two_paths(transport: braid::transport::Mode, min_share: f64) {
    let name = transport.name();
    let (r, last, _) = send_over("two-equal", BYTES, transport);
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

#[test]
#[ignore = "needs root and network namespaces (bash .ci/run runs it as root)"]
fn marking_queues_mark_braid_send_and_its_windows_keep_up() {
    let (r, last, marks) = send_over("bursty-ecn", BYTES, braid::transport::Mode::Mplot);
    assert!(
        marks > 0,
        "no datagram was marked CE: are they sent ECT(0)?\n{last}"
    );
    assert!(
        r.share_of_sum >= MIN_SHARE_ECN,
        "braid send delivered {:.3} of the sum over marking queues, below {MIN_SHARE_ECN}\n{last}",
        r.share_of_sum
    );
}
