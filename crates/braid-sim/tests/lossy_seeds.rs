//! The lossy lab files over many loss draws (issue 12's targets, judged by
//! the worst run): a Linux-like CUBIC upload through the shipped tunnel
//! (`braid_sim::tunnel`, braid-pet, 15 s as the lab bench runs) on
//! `lab/cellular.toml`, `lab/lossy.toml` and `lab/bursty.toml` with the
//! file's `seed` (which draws every link's losses) replaced by 1..=N.
//!
//! The lab's runs differ in their loss draws and the hosts' timing; the
//! seeds reproduce the first. Before every path loss was repaired, the
//! cross-path time rule covered a path's last packet and PET probed paths
//! by their last pair, seeds 1-30 gave `cellular` 0.511-0.905 of the sum
//! (6 under 0.85), `lossy` 0.770-0.912 and `bursty` 0.743-0.900 (11 under
//! 0.85); after, 0.877-0.905, 0.899-0.912 and 0.828-0.903 (README, "The
//! worst runs, reproduced by seed").
//!
//! Asserted on every seed: at least 0.85 of the sum on `cellular` and
//! `lossy`, and on `bursty` at least 0.80 with a mean of at least 0.85
//! (its worst seeds lose to the inner CUBIC's slow-start overshoot, not
//! to the paths' losses; see the README); above the best path alone
//! everywhere. Also asserted: the tunnel still passes its own congestion
//! on. With every path loss repaired, the inner TCP's only loss signal is
//! the tunnel's pacing-queue drops, so the inner TCP must retransmit,
//! and its residual loss must stay within what those drops explain.
//!
//! Seeds 1-10 by default (about 15 s); `BRAID_LOSSY_SEEDS=30` for the
//! README's 30.

use braid_core::sched::SchedulerKind;
use braid_sim::tunnel::{run_lab, LabMode, LabResult, LabRunOptions};

fn seeds() -> u64 {
    std::env::var("BRAID_LOSSY_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

fn run(name: &str, seed: u64) -> (LabResult, LabResult) {
    let mut cfg = braid_lab::shipped(name).unwrap();
    cfg.seed = Some(seed);
    let opts = LabRunOptions::default();
    let report = run_lab(
        &cfg,
        &[LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)],
        &opts,
    );
    let mut r = report.results.into_iter();
    (r.next().unwrap(), r.next().unwrap())
}

/// Runs `name` over the seeds; returns the braid-pet shares.
fn shares(name: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for seed in 1..=seeds() {
        let (best, braid) = run(name, seed);
        eprintln!(
            "{name} seed {seed}: braid-pet {:.3} (paths {:?}), best path alone {:.3}; inner retransmissions {}, timeouts {}, residual loss {:.4}",
            braid.share_of_sum,
            braid.path_mbps,
            best.share_of_sum,
            braid.retransmits,
            braid.timeouts,
            braid.residual_loss,
        );
        assert!(
            braid.share_of_sum > best.share_of_sum,
            "{name} seed {seed}: below the best path alone"
        );
        out.push(braid.share_of_sum);
    }
    out
}

#[test]
fn cellular_holds_its_share_on_every_seed() {
    let s = shares("cellular");
    let worst = s.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(worst >= 0.85, "cellular: worst {worst:.3} of {s:?}");
}

#[test]
fn lossy_holds_its_share_on_every_seed() {
    let s = shares("lossy");
    let worst = s.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(worst >= 0.85, "lossy: worst {worst:.3} of {s:?}");
}

#[test]
fn bursty_holds_its_share_on_average_and_near_it_on_every_seed() {
    let s = shares("bursty");
    let worst = s.iter().cloned().fold(f64::INFINITY, f64::min);
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    assert!(worst >= 0.80, "bursty: worst {worst:.3} of {s:?}");
    assert!(mean >= 0.85, "bursty: mean {mean:.3} of {s:?}");
}

/// With every path loss repaired, the tunnel's own congestion must still
/// reach the inner TCP: `bursty` (seed 2) overflows the pacing queues in
/// slow start, and the inner TCP must see those drops, retransmit them
/// and leave slow start (its goodput stays within the paths' capacity:
/// a TCP that never saw a loss would push its window without bound and
/// the pacing queues would drop a growing share). Paced as Linux paces,
/// the inner TCP's slow start runs longer and ends with a larger
/// overshoot dropped at the pacing queues: a residual loss of 0.023
/// (0.018 unpaced), at 0.876 of the sum (0.869 unpaced).
#[test]
fn the_tunnels_own_drops_still_reach_the_inner_tcp() {
    let (_, braid) = run("bursty", 2);
    assert!(
        braid.retransmits > 0 && braid.fast_retransmits > 0,
        "the inner TCP saw no loss: {braid:?}"
    );
    assert!(
        braid.residual_loss > 0.0 && braid.residual_loss < 0.03,
        "residual loss {:.4}: {braid:?}",
        braid.residual_loss
    );
}
