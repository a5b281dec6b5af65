//! Unit tests of late probes (`late.rs`): a path whose packets arrive
//! much later than predicted is due a probe pair.

use super::tests::{send, with_estimates};
use super::*;

/// A thin near path counted as far (`near.rs`) is probed only where
/// PET probes it: its periodic probe waits behind a packet of the fastest
/// path, and a path that EDPF gives no data measures nothing else. A
/// packet on it that arrives more
/// than `late_probe` after PET's prediction makes its next packet a probe,
/// whose second follows it; one that arrives 20 ms late does not. Late
/// again, it is probed again a round trip after a probe that found its
/// rate fallen, and `probe_interval` after one that found it unchanged;
/// not while it has reported nothing for longer than its round trip.
#[test]
fn a_path_whose_packets_arrive_late_is_probed_at_once() {
    let mut paths = with_estimates(&[1.5e6, 46e6]);
    paths[1].owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
    paths[1].owd.on_sample(Instant::ZERO, 150_000_000);
    paths[0].rtt.update(Duration::from_millis(150));
    let thin = paths[0].clone();
    // Next to no correction of the virtual queues: what is late stays late,
    // as on a paced path, whose predictions the corrections do not move.
    // The ramp off: it would keep the thin path out of data and probes
    // while the bond's rate meter rises (`ramp.rs`).
    let mut pet = Pet::new(PetConfig {
        queue_correction: 1e-9,
        ramp_share: 0.0,
        ..Default::default()
    });
    let mut now = Instant::from_millis(1000);
    // 48 Mbit/s, beyond the fast path, for `ms`: how many probe pairs
    // went on the thin path, and how many data packets it carried.
    let run = |pet: &mut Pet, now: &mut Instant, paths: &mut [PathState], ms: u32| {
        let (mut pairs, mut data) = (0u32, 0u32);
        for k in 0..4 * ms {
            if k % 4 == 0 {
                *now += Duration::from_millis(1);
                // The thin path reports as it delivers.
                paths[0].last_feedback = Some(*now);
            }
            let d = send(pet, *now, paths);
            if d.index == 0 {
                match d.pair {
                    PairRole::First if d.probe => pairs += 1,
                    PairRole::Second => {}
                    _ => data += 1,
                }
            }
        }
        (pairs, data)
    };
    // Its first probe comes at once (no pair yet); then none for a second.
    assert_eq!(run(&mut pet, &mut now, &mut paths, 100).0, 1);
    let (pairs, data) = run(&mut pet, &mut now, &mut paths, 500);
    assert!(data > 20, "the thin path carried {data} packets");
    assert_eq!(pairs, 0, "paired while on time");
    pet.on_delivery(&thin, 0, 20_000_000);
    let pairs = run(&mut pet, &mut now, &mut paths, 100).0;
    assert_eq!(pairs, 0, "probed after a packet 20 ms late");
    pet.on_delivery(&thin, 0, 120_000_000);
    let pairs = run(&mut pet, &mut now, &mut paths, 100).0;
    assert_eq!(pairs, 1, "one probe pair after a packet 120 ms late");
    // Late again; the probe measured nothing new: a second later.
    pet.on_delivery(&thin, 0, 120_000_000);
    let pairs = run(&mut pet, &mut now, &mut paths, 200).0;
    assert_eq!(pairs, 0, "probed again with the rate unchanged");
    let pairs = run(&mut pet, &mut now, &mut paths, 800).0;
    assert_eq!(pairs, 1, "no probe a second after the last");
    // This probe found the rate fallen to a fifth: a round trip later.
    paths[0]
        .bw
        .on_pair(1500, Duration::from_secs_f64(1500.0 * 8.0 / 0.3e6));
    pet.on_delivery(&thin, 0, 120_000_000);
    let pairs = run(&mut pet, &mut now, &mut paths, 10).0;
    assert_eq!(pairs, 0, "probed twice within a round trip");
    let pairs = run(&mut pet, &mut now, &mut paths, 200).0;
    assert_eq!(pairs, 1, "the next probe a round trip later");
    // A path that has reported nothing for longer than its round trip (it
    // may have gone) is left to the quiet rule.
    pet.on_delivery(&thin, 0, 120_000_000);
    now += Duration::from_millis(200);
    let mut silent = 0;
    for k in 0..400u32 {
        if k % 4 == 0 {
            now += Duration::from_millis(1);
        }
        let d = send(&mut pet, now, &mut paths);
        silent += u32::from(d.index == 0 && d.probe);
    }
    assert_eq!(
        silent, 0,
        "probed a path silent for longer than its round trip"
    );
}

/// A paced path whose rate fell below its pacing rate: its bottleneck
/// queue grows by 20 ms a packet to 300 ms, and each packet is reported
/// ten packets after it left. Its packets are found late by their own
/// lateness, from the first 50 ms late. With the default queue correction
/// the corrections made meanwhile, which a paced path's predictions do
/// not use, took their share off each residual, and the path was found
/// late ten packets later.
#[test]
fn a_paced_path_whose_queue_grows_is_found_late() {
    let mut paths = with_estimates(&[1.2e6, 40e6]);
    paths[0].rtt.update(Duration::from_millis(100));
    let mut pet = Pet::new(PetConfig::default());
    let delays = Pet::relative_delays(&paths);
    let mut paced = SendQueues::UNPACED;
    let mut now = Instant::from_millis(1000);
    let mut in_flight = std::collections::VecDeque::new();
    let mut found_at = None;
    for k in 0..40u64 {
        now += Duration::from_millis(10);
        paced.set(paths[0].id, Some(now));
        paths[0].last_feedback = Some(now);
        let eta = pet.commit(now, 1500, &paths, &delays, &paced, 0).unwrap();
        // The prediction itself, before the corrections made so far.
        in_flight.push_back((eta, eta + pet.corrected_ns[0], k));
        if in_flight.len() > 10 {
            let (eta, predicted, sent) = in_flight.pop_front().unwrap();
            let queue = (sent * 20).min(300) as i64 * 1_000_000;
            pet.on_delivery(&paths[0], eta, predicted + queue);
            if found_at.is_none() && pet.late_probe_due(now, &paths[0]) {
                found_at = Some(sent);
            }
        }
    }
    // Found late with the packet sent first 50 ms late, the fourth.
    assert_eq!(found_at, Some(3), "late from the packet sent {found_at:?}");
}
