//! Lossy paths through the shipped tunnel (issue 12's simulation target):
//! a Linux-like CUBIC upload over `lab/lossy.toml` with the lossy path's
//! loss raised to 30 % each way, R-MTP's case (R-MTP §4: one of two
//! paths loses 30 % of its packets). With repair (ARQ, the default), the
//! bond must stay above the clean path alone: TCP directly over the clean
//! path, `single-best`, in the same run.
//!
//! Before the tunnel detected losses by time across paths
//! (`braid_core::sender`'s `rack` module) and timed out a path with no
//! data report yet from its keepalive round trip, braid-pet carried 5.1
//! Mbit/s here (30 s) against 9.7 for the clean path alone: the lossy
//! path carried one packet at a time, so its losses were tail losses
//! found only by the path's timeout (at least 200 ms, 4 s before the
//! path's first data report), and every repair came after the inner
//! TCP's own RTO.
//!
//! Measured after that fix (clean path alone 9.65 Mbit/s): 11.05 Mbit/s
//! over 30 s and 11.40 over 60 s (from 2 s, as the lab bench omits),
//! 12.09 from 20 s on; 8.61 over the lab bench's 15 s. The start-up lost
//! it: a TCP ACK the server sent on the lossy path was lost, the server
//! found it only by its path timeout, and the client's resequencer held
//! every later ACK for its initial 0.5 s, past the inner TCP's 200 ms RTO
//! (window 1, ssthresh 12); then the resequencer's measured hold, which
//! had seen only reordering waits, had fallen to 50 ms and released the
//! first uplink gaps before their repairs (about 120 ms) came, a fast
//! retransmit at ssthresh 15. CUBIC grew from there for the rest of the
//! run. Now the resequencer holds a gap at least as long as a repair
//! takes (`Sender::repair_wait`: the slowest path's SRTT plus its
//! detection window, x 1.25 + 10 ms; before the first measured wait too),
//! and at most 200 ms longer: no RTO, slow start to 48 packets, and 9.69
//! Mbit/s over 15 s, 11.24 over 30 s, 11.94 over 60 s (12.25 and 12.51
//! from 20 s on).
//!
//! The 15 s margin is thin because the lossy path carries nothing until
//! its first packet-pair estimate, about 5 s in (a pair needs both its
//! packets through a 30 % loss). Probing the path once a round trip
//! until it has an estimate got one at 0.5 s but gave 8.97 Mbit/s: while
//! the inner window is small, each repair on the lossy path stalls the
//! stream a round trip, which costs more than the path adds.

use braid_core::sched::SchedulerKind;
use braid_sim::tunnel::{run_lab, LabMode, LabRunOptions};

fn lossy(loss: f64) -> braid_lab::LabConfig {
    let mut cfg = braid_lab::shipped("lossy").unwrap();
    cfg.paths[1].loss = Some(loss);
    cfg
}

/// R-MTP's case: 30 % loss on one of two paths. Over 15 s (the lab
/// bench's length), 30 s and 60 s the bond's goodput is above the clean
/// path alone, in the longer runs from 20 s on by at least 10 %, and the
/// lossy path carries data.
#[test]
fn thirty_percent_loss_on_one_path_stays_above_the_clean_path_alone() {
    for duration_s in [15.0, 30.0, 60.0] {
        let opts = LabRunOptions {
            duration_s,
            from_s: Some(20.0),
            ..LabRunOptions::default()
        };
        let modes = [LabMode::SingleBest, LabMode::Braid(SchedulerKind::Pet)];
        let r = run_lab(&lossy(0.30), &modes, &opts);
        eprintln!("{}", serde_json::to_string(&r).unwrap());
        let (single, b) = (&r.results[0], &r.results[1]);
        assert!(
            b.goodput_mbps > single.goodput_mbps,
            "{duration_s} s: braid-pet {:.2} Mbit/s <= clean path alone {:.2}",
            b.goodput_mbps,
            single.goodput_mbps
        );
        assert!(
            b.path_mbps[1] > 1.0,
            "the lossy path carries data: {:?}",
            b.path_mbps
        );
        if duration_s < 20.0 {
            continue;
        }
        let from = b.goodput_from_mbps.expect("asked for from_s");
        assert!(
            from > 1.1 * single.goodput_mbps,
            "{duration_s} s, from 20 s: braid-pet {from:.2} Mbit/s <= 1.1 x clean path alone {:.2}",
            single.goodput_mbps
        );
    }
}
