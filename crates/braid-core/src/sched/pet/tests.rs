use super::*;
use crate::sched::test_util::unknown_paths;

pub(super) fn pkt(retransmit: bool) -> PacketInfo {
    PacketInfo {
        len: 1500,
        retransmit,
        stream: false,
    }
}

#[test]
fn initial_phase_sends_pairs_round_robin() {
    let paths = unknown_paths(3);
    let mut pet = Pet::new(PetConfig::default());
    let got: Vec<(usize, PairRole)> = (0..6)
        .map(|_| {
            pet.select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap()
        })
        .map(|d| (d.index, d.pair))
        .collect();
    use PairRole::*;
    assert_eq!(
        got,
        vec![
            (0, First),
            (0, Second),
            (1, First),
            (1, Second),
            (2, First),
            (2, Second)
        ]
    );
}

#[test]
fn retransmissions_are_never_paired() {
    let paths = unknown_paths(2);
    let mut pet = Pet::new(PetConfig::default());
    let first = pet
        .select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
        .unwrap();
    assert_eq!(first.pair, PairRole::First);
    let rtx = pet
        .select(Instant::ZERO, &pkt(true), &paths, &SendQueues::UNPACED)
        .unwrap();
    assert_eq!(rtx.pair, PairRole::None);
    // The pair was broken: the next packet starts a new one.
    assert_eq!(
        pet.select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap()
            .pair,
        PairRole::First
    );
}

#[test]
fn small_packets_take_the_nearest_path_without_an_estimate() {
    // Path 0 is measured but 50 ms further away; path 1 has no estimate.
    let mut paths = unknown_paths(2);
    paths[0]
        .bw
        .on_pair(1500, Duration::from_secs_f64(1500.0 * 8.0 / 4e6));
    paths[0].owd.on_sample(Instant::ZERO, 60_000_000);
    paths[1].owd.on_sample(Instant::ZERO, 10_000_000);
    for p in paths.iter_mut() {
        p.last_sent = Some(Instant::ZERO);
    }
    let mut pet = Pet::new(PetConfig {
        initial_pairs: 0,
        ..Default::default()
    });
    let ack = PacketInfo {
        len: 52,
        retransmit: false,
        stream: false,
    };
    for k in 0..20 {
        let now = Instant::from_millis(k);
        let d = pet.select(now, &ack, &paths, &SendQueues::UNPACED).unwrap();
        assert_eq!(d.index, 1, "ACK {k} went on the far path");
    }
    // A full-size packet still needs an estimate.
    let d = pet
        .select(
            Instant::from_millis(30),
            &pkt(false),
            &paths,
            &SendQueues::UNPACED,
        )
        .unwrap();
    assert_eq!(d.index, 0);
}

#[test]
fn does_not_spill_onto_a_path_that_delivers_much_later() {
    // Path 1 (10 Mbit/s) is near; path 0 (2 Mbit/s) 80 ms further away.
    // Path 1 has seen 40 ms of queueing: its buffer.
    let mut paths = with_estimates(&[2e6, 10e6]);
    paths[0].owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
    paths[0].owd.on_sample(Instant::ZERO, 130_000_000);
    paths[1].owd.on_sample(Instant::ZERO, 90_000_000);
    let mut pet = Pet::new(PetConfig::default());
    let now = Instant::from_millis(100);
    // A burst beyond what path 1's buffer holds (40 ms), yet short of
    // the 80 ms after which plain EDPF itself turns to path 0.
    for _ in 0..50 {
        let d = pet
            .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap();
        assert_eq!(d.index, 1, "spilled onto the far path");
    }
    // With a generous lateness bound the far path takes the overflow.
    let mut pet = Pet::new(PetConfig {
        spill_max_lateness: Duration::from_millis(200),
        ..Default::default()
    });
    let far = (0..50)
        .filter(|_| {
            pet.select(now, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap()
                .index
                == 0
        })
        .count();
    assert!(far > 0);
}

pub(super) fn with_estimates(rates: &[f64]) -> Vec<PathState> {
    let mut paths = unknown_paths(rates.len());
    for (p, &r) in paths.iter_mut().zip(rates) {
        // One pair sample at the wanted rate: 1500 bytes over 1500*8/r seconds.
        p.bw.on_pair(1500, Duration::from_secs_f64(1500.0 * 8.0 / r));
        p.owd.on_sample(Instant::ZERO, 50_000_000);
        p.last_sent = Some(Instant::ZERO);
    }
    paths
}

#[test]
fn with_estimates_splits_like_edpf() {
    let mut paths = with_estimates(&[50e3, 100e3, 200e3]);
    let mut pet = Pet::new(PetConfig::default());
    let mut counts = [0u32; 3];
    let mut now = Instant::ZERO;
    // Offered load above capacity so the virtual queues stay backlogged.
    for _ in 0..700 {
        now += Duration::from_millis(30);
        let d = pet
            .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap();
        counts[d.index] += 1;
        paths[d.index].last_sent = Some(now);
    }
    let total: u32 = counts.iter().sum();
    let share2 = counts[2] as f64 / total as f64;
    assert!(
        (share2 - 4.0 / 7.0).abs() < 0.08,
        "share of the 200k path {share2}, counts {counts:?}"
    );
    assert!(counts[0] > 0);
}

#[test]
fn does_not_probe_a_path_that_would_deliver_far_too_late() {
    let mut paths = with_estimates(&[1e6, 10e6]);
    // Path 0 is 1 s further away than path 1.
    paths[0].owd.on_sample(Instant::ZERO, 1_050_000_000);
    paths[0].owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
    paths[0].owd.on_sample(Instant::ZERO, 1_050_000_000);
    let mut pet = Pet::new(PetConfig::default());
    let mut now = Instant::ZERO;
    for _ in 0..200 {
        now += Duration::from_millis(20);
        let d = pet
            .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap();
        paths[d.index].last_sent = Some(now);
        assert_ne!(d.index, 0, "probed a path 1 s behind at {now:?}");
    }
}

#[test]
fn a_pair_left_open_too_long_is_abandoned() {
    let paths = unknown_paths(2);
    let mut pet = Pet::new(PetConfig::default());
    let first = pet
        .select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
        .unwrap();
    assert_eq!((first.index, first.pair), (0, PairRole::First));
    // A whole RTT later (slow start): no longer a pair; a new one starts elsewhere.
    let next = pet
        .select(
            Instant::from_millis(300),
            &pkt(false),
            &paths,
            &SendQueues::UNPACED,
        )
        .unwrap();
    assert_eq!((next.index, next.pair), (1, PairRole::First));
}

#[test]
fn feedback_corrects_the_virtual_queue() {
    let paths = with_estimates(&[1e6]);
    let mut pet = Pet::new(PetConfig {
        queue_correction: 1.0,
        ..Default::default()
    });
    let d = pet
        .select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
        .unwrap();
    let eta = d.eta_ns.expect("estimated path has a prediction");
    // Predicted: 12 ms of serialisation. It took 100 ms longer: a real queue.
    assert_eq!(eta, 12_000_000);
    pet.on_delivery(&paths[0], eta, eta + 100_000_000);
    assert_eq!(pet.queues.free_at(&paths[0]), Instant::from_millis(112));
    // The same error reported again is already accounted for.
    pet.on_delivery(&paths[0], eta, eta + 100_000_000);
    assert_eq!(pet.queues.free_at(&paths[0]), Instant::from_millis(112));
}

/// A path EDPF leaves idle gets a probe pair every `probe_interval`,
/// counted from its last pair: unpaired packets on it (the tunnel's
/// repair copies, which go to the path whose queue is shortest) measure
/// nothing and do not put the probe off.
#[test]
fn probes_a_path_left_idle() {
    // Path 0 is slow enough that EDPF never picks it under light load,
    // yet a probe on it arrives within the slack (4.8 ms later). The ramp
    // off: under light load it keeps path 0 (1/6 of the bond) out of the
    // data and its probes (`ramp.rs`).
    let mut paths = with_estimates(&[2e6, 10e6]);
    let mut pet = Pet::new(PetConfig {
        ramp_share: 0.0,
        ..Default::default()
    });
    let mut probes = Vec::new();
    let mut now = Instant::ZERO;
    for _ in 0..200 {
        now += Duration::from_millis(20);
        let d = pet
            .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap();
        paths[d.index].last_sent = Some(now);
        if d.index == 0 && d.probe {
            probes.push(now);
        }
        // A repair copy on path 0 every 20 ms.
        paths[0].last_sent = Some(now);
    }
    // Never paired by this scheduler: probed at once, then once a second.
    assert_eq!(
        probes.first(),
        Some(&Instant::from_millis(20)),
        "{probes:?}"
    );
    assert!(probes.len() >= 3, "probes at {probes:?}");
    for w in probes.windows(2) {
        let gap = w[1].saturating_since(w[0]);
        assert!(
            gap >= Duration::from_secs(1) && gap <= Duration::from_millis(1050),
            "probes at {probes:?}"
        );
    }
}

/// Keepalives make a path's delay known before it carries data: its
/// one-way delay on the side that receives them, half its round trip
/// on the side that sends them.
#[test]
fn keepalives_stand_in_for_an_unmeasured_paths_delay() {
    let mut paths = unknown_paths(3);
    paths[0].rtt_hint = Some(Duration::from_millis(40));
    paths[1].rtt_hint = Some(Duration::from_millis(600));
    let d = Pet::relative_delays(&paths);
    assert_eq!(d[0], Some(Duration::ZERO));
    assert_eq!(d[1], Some(Duration::from_millis(280)));
    assert_eq!(d[2], None);
    paths[0].owd_hint_raw_ns = Some(5_020_000_000);
    paths[2].owd_hint_raw_ns = Some(5_300_000_000);
    let d = Pet::relative_delays(&paths);
    assert_eq!(d[2], Some(Duration::from_millis(280)));
    // Data-based delays win where there are any.
    paths[1].owd.on_sample(Instant::ZERO, 7_000_000);
    paths[0].owd.on_sample(Instant::ZERO, 5_000_000);
    let d = Pet::relative_delays(&paths);
    assert_eq!(d[1], Some(Duration::from_millis(2)));
}

/// The first flight of a transfer, before any path has a rate
/// estimate, pairs only on the paths near the nearest one when
/// keepalives have measured the delays: a pair on a path 280 ms
/// further away held the stream longer than the inner TCP's RTO. A
/// path of unknown delay still gets its pairs.
#[test]
fn the_first_flight_keeps_off_a_path_known_to_be_far() {
    let mut paths = unknown_paths(3);
    paths[0].rtt_hint = Some(Duration::from_millis(40));
    paths[1].rtt_hint = Some(Duration::from_millis(600));
    paths[2].rtt_hint = Some(Duration::from_millis(45));
    let mut pet = Pet::new(PetConfig::default());
    let mut used = [0; 3];
    for _ in 0..20 {
        used[pet
            .select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap()
            .index] += 1;
    }
    assert_eq!(used[1], 0, "first flight on the far path: {used:?}");
    assert!(
        used[0] > 0 && used[2] > 0,
        "near paths not both paired: {used:?}"
    );
    let i = pet
        .select(Instant::ZERO, &pkt(true), &paths, &SendQueues::UNPACED)
        .unwrap()
        .index;
    assert_ne!(i, 1, "a retransmission went to the far path");
    // Without any delay known every path is paired, as before.
    let mut pet = Pet::new(PetConfig::default());
    let paths = unknown_paths(2);
    let used: Vec<usize> = (0..4)
        .map(|_| {
            pet.select(Instant::ZERO, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap()
                .index
        })
        .collect();
    assert!(used.contains(&1), "{used:?}");
}

/// Issue 13: a far path known only from its keepalives gets its
/// initial pair only once the near path's queue is as long as the
/// delay difference (the pair then arrives in order), and a small
/// packet on an idle bond goes by the near path.
#[test]
fn a_far_path_is_probed_only_when_it_delivers_in_order() {
    let mut paths = with_estimates(&[10e6]);
    paths.extend(unknown_paths(2).into_iter().skip(1));
    paths[0].rtt_hint = Some(Duration::from_millis(40));
    paths[1].rtt_hint = Some(Duration::from_millis(600));
    let mut pet = Pet::new(PetConfig::default());
    let ack = PacketInfo {
        len: 52,
        retransmit: false,
        stream: false,
    };
    assert_eq!(
        pet.select(Instant::ZERO, &ack, &paths, &SendQueues::UNPACED)
            .unwrap()
            .index,
        0
    );
    // A burst: each 1500-byte packet adds 1.2 ms to path 0's queue.
    let now = Instant::from_millis(1);
    let first_far = (0..400)
        .position(|_| {
            pet.select(now, &pkt(false), &paths, &SendQueues::UNPACED)
                .unwrap()
                .index
                == 1
        })
        .expect("the far path got its initial pair");
    let queued = Duration::from_secs_f64(first_far as f64 * 1500.0 * 8.0 / 10e6);
    assert!(
        queued + Duration::from_millis(10) >= Duration::from_millis(280),
        "initial pair on the far path behind only {queued:?} of near queue"
    );
}

/// A path the sender paces has its backlog in the sender's queue, which
/// the sender passes with each decision ([`SendQueues`]): PET counts the
/// backlog from there rather than from its virtual queue, and a second
/// packet that comes while the first still waits in that queue pairs
/// with it (the two leave back to back).
#[test]
fn a_paced_path_counts_the_senders_queue() {
    let paths = with_estimates(&[10e6, 10e6]);
    let now = Instant::from_millis(1);
    let later = now + Duration::from_millis(20);
    // Unpaced, the two equal paths tie and the first wins; 20 ms later
    // the pair is no longer back to back.
    let mut pet = Pet::new(PetConfig::default());
    let first = pet
        .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
        .unwrap();
    assert_eq!((first.index, first.pair), (0, PairRole::First));
    let next = pet
        .select(later, &pkt(false), &paths, &SendQueues::UNPACED)
        .unwrap();
    assert_eq!(next.pair, PairRole::First);
    // Paced: path 0's queue frees in 100 ms, path 1's in 30 ms.
    let mut paced = SendQueues::UNPACED;
    paced.set(paths[0].id, Some(now + Duration::from_millis(100)));
    paced.set(paths[1].id, Some(now + Duration::from_millis(30)));
    let mut pet = Pet::new(PetConfig::default());
    let first = pet.select(now, &pkt(false), &paths, &paced).unwrap();
    assert_eq!((first.index, first.pair), (1, PairRole::First));
    // Leaves when the queue is free (31 ms), then 1.2 ms on the wire.
    assert_eq!(first.eta_ns, Some(32_200_000));
    let second = pet.select(later, &pkt(false), &paths, &paced).unwrap();
    assert_eq!((second.index, second.pair), (1, PairRole::Second));
}

/// A thin path that loses packets carries only its probe pairs
/// (`PetConfig::thin_share`) while the fastest path is far; without the
/// loss, beside a near fastest path, or with the rule off, it carries its
/// share of the data. Path 0 is the nearer one, so EDPF would pick it
/// whenever its queue is short.
#[test]
fn a_thin_lossy_path_carries_only_probes_beside_a_far_fast_path() {
    // 1.5 Mbit/s, 10 ms nearer, beside 46 Mbit/s: 3 % of the sum.
    let base = |fast_rtt_ms: u64| {
        let mut paths = with_estimates(&[1.5e6, 46e6]);
        paths[0].owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
        paths[0].owd.on_sample(Instant::ZERO, 40_000_000);
        paths[1].rtt.update(Duration::from_millis(fast_rtt_ms));
        paths
    };
    let lossy = |fast_rtt_ms: u64| {
        let mut paths = base(fast_rtt_ms);
        paths[0].loss.on_delivered(100);
        paths[0].loss.on_lost(2);
        assert!(paths[0].loss.rate() > 0.005);
        paths
    };
    // Offered load above both paths' rates: 4 packets a millisecond, 3 s.
    let run = |cfg: PetConfig, mut paths: Vec<PathState>| {
        let mut pet = Pet::new(cfg);
        let (mut data, mut probes) = (0u32, 0u32);
        let mut now = Instant::ZERO;
        for k in 0..12_000u32 {
            if k % 4 == 0 {
                now += Duration::from_millis(1);
            }
            let d = send(&mut pet, now, &mut paths);
            if d.index == 0 {
                if d.probe || d.pair == PairRole::Second {
                    probes += 1;
                } else {
                    data += 1;
                }
            }
        }
        (data, probes)
    };
    let (data, probes) = run(PetConfig::default(), lossy(576));
    assert_eq!(data, 0, "a thin lossy path carried data");
    // A pair at once, then one a second.
    assert!((4..=8).contains(&probes), "{probes} probe packets");

    // One loss after 200 clean packets: 1.6 % smoothed, but not enough
    // evidence of a rate above 0.5 % (`THIN_LOSS_Z`).
    let lone = {
        let mut paths = base(576);
        paths[0].loss.on_delivered(200);
        paths[0].loss.on_lost(1);
        assert!(paths[0].loss.rate() > 0.005);
        paths
    };
    for (what, paths, cfg) in [
        ("clean", base(576), PetConfig::default()),
        ("after a lone loss", lone, PetConfig::default()),
        ("beside a near fast path", lossy(60), PetConfig::default()),
        (
            "with the rule off",
            lossy(576),
            PetConfig {
                thin_share: 0.0,
                ..Default::default()
            },
        ),
    ] {
        let (data, _) = run(cfg, paths);
        assert!(data > 100, "{what}, the thin path carried {data} packets");
    }
}

/// The fastest path is never left out for being thin: eleven equal paths,
/// all lossy and far, are each under 10 % of the sum; path 3, measured a
/// little faster, still carries the data (the others their probes).
#[test]
fn the_fastest_path_is_never_thin() {
    let mut paths = with_estimates(&[1e6; 11]);
    paths[3]
        .bw
        .on_pair(1500, Duration::from_secs_f64(1500.0 * 8.0 / 1.1e6));
    for p in paths.iter_mut() {
        p.rtt.update(Duration::from_millis(500));
        p.loss.on_lost(2);
    }
    let mut pet = Pet::new(PetConfig {
        initial_pairs: 0,
        ..Default::default()
    });
    let mut now = Instant::ZERO;
    let mut on_fastest = 0;
    for _ in 0..200 {
        now += Duration::from_millis(20);
        let d = send(&mut pet, now, &mut paths);
        if d.index == 3 {
            on_fastest += 1;
        }
    }
    // Round robin over all eleven would give it about 18.
    assert!(on_fastest > 80, "{on_fastest} packets on the fastest path");
}

/// One full-size packet at `now`: PET's decision, recorded as sent on the
/// path it chose.
pub(super) fn send(pet: &mut Pet, now: Instant, paths: &mut [PathState]) -> Decision {
    let d = pet
        .select(now, &pkt(false), paths, &SendQueues::UNPACED)
        .unwrap();
    paths[d.index].last_sent = Some(now);
    d
}
