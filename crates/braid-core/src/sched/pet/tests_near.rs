//! Unit tests of the near rule (`near.rs`): a path nearer than the
//! fastest counts as far as it while the fastest is clean and well ahead,
//! or while the nearer path is thin.

use super::tests::{pkt, send, with_estimates};
use super::*;

/// A thin path nearer than the fastest path counts as far as the fastest
/// (`PetConfig::near_floor`): on an idle bond the first packets of a
/// transfer go on the fastest path, and no probe goes on the thin path
/// until a packet of the fastest path is just ahead of it; below the
/// fastest path's rate the thin path carries no data, above it its share.
/// With the rule off, the transfer starts on the thin path.
#[test]
fn a_thin_near_path_counts_as_far_as_the_fastest() {
    // 1.5 Mbit/s, 100 ms nearer than 46 Mbit/s: 3 % of the sum.
    let paths = || {
        let mut paths = with_estimates(&[1.5e6, 46e6]);
        paths[1].owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
        paths[1].owd.on_sample(Instant::ZERO, 150_000_000);
        for p in paths.iter_mut() {
            p.last_sent = None;
        }
        paths
    };
    // `per_ms` full-size packets a millisecond for `ms`, from an idle
    // bond at 1 s: the first decision, and the thin path's data packets
    // and probe packets.
    let run = |cfg: PetConfig, per_ms: u32, ms: u32| {
        let mut paths = paths();
        let mut pet = Pet::new(cfg);
        let mut now = Instant::from_millis(1000);
        let (mut first, mut data, mut probes) = (None, 0u32, 0u32);
        for k in 0..per_ms * ms {
            if k % per_ms == 0 {
                now += Duration::from_millis(1);
            }
            let d = send(&mut pet, now, &mut paths);
            first.get_or_insert((d.index, d.probe));
            if d.index == 0 {
                if d.probe || d.pair == PairRole::Second {
                    probes += 1;
                } else {
                    data += 1;
                }
            }
        }
        (first, data, probes)
    };
    // 12 Mbit/s for a second: all of it fits the fast path. The ramp
    // (`ramp.rs`) keeps the thin path out of the data and of its probes;
    // without the ramp the near rule alone keeps it out of the data, and
    // it is probed.
    let (first, data, probes) = run(PetConfig::default(), 1, 1000);
    assert_eq!(first, Some((1, false)), "the transfer started elsewhere");
    assert_eq!(
        data, 0,
        "the thin path carried data below the fast path's rate"
    );
    assert_eq!(probes, 0, "the ramp let probes onto the thin path");
    let no_ramp = PetConfig {
        ramp_share: 0.0,
        ..Default::default()
    };
    let (first, data, probes) = run(no_ramp, 1, 1000);
    assert_eq!(first, Some((1, false)), "the transfer started elsewhere");
    assert_eq!(data, 0, "without the ramp: the thin path carried data");
    assert!(probes >= 2, "the thin path was never probed");
    // 48 Mbit/s: beyond the fast path, the thin path takes a share.
    let (_, data, _) = run(PetConfig::default(), 4, 1000);
    assert!(
        data > 20,
        "the thin path carried {data} packets beyond the fast path's rate"
    );
    // A small packet of TCP data (an application's first short write)
    // counts the same; a pure ACK keeps the thin path's delay.
    let small = |stream: bool| {
        let mut paths = paths();
        let mut pet = Pet::new(PetConfig::default());
        let pkt = PacketInfo {
            len: 150,
            retransmit: false,
            stream,
        };
        let d = pet
            .select(
                Instant::from_millis(1000),
                &pkt,
                &paths,
                &SendQueues::UNPACED,
            )
            .unwrap();
        paths[d.index].last_sent = Some(Instant::from_millis(1000));
        d.index
    };
    assert_eq!(small(true), 1, "a short write went on the thin path");
    assert_eq!(small(false), 0, "an ACK left the near path");
    // Plain EDPF (without the ramp too, which would keep the thin path
    // out at 12 Mbit/s): the nearer thin path takes the first packets.
    let off = PetConfig {
        near_floor: false,
        ramp_share: 0.0,
        ..Default::default()
    };
    let (first, data, _) = run(off, 1, 1000);
    assert_eq!(first.map(|f| f.0), Some(0));
    assert!(data > 20, "{data}");
}

/// A nearer path counts as far as the fastest path while the fastest path
/// loses nothing (`PetConfig::near_floor_loss`) and is well ahead of it
/// (`near_lead`): 20 Mbit/s 150 ms nearer than 46 Mbit/s (30 % of the
/// sum) gets no packet while the fast path has room. Once the fastest path
/// has lost one packet in 300, the near path is plain EDPF's again, unless
/// it is thin; so is a near path of about the fastest path's rate.
#[test]
fn a_near_path_counts_as_far_as_a_clean_fastest_path() {
    // Where the first of 1000 full-size packets at 12 Mbit/s goes, and
    // how many data packets the near path (0) carries that are not the
    // second of a pair, with the fastest path (1) having lost `lost` of
    // 300 packets.
    let run = |near_bps: f64, lost: u64| {
        let mut paths = with_estimates(&[near_bps, 46e6]);
        paths[1].owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
        paths[1].owd.on_sample(Instant::ZERO, 150_000_000);
        paths[1].loss.on_delivered(300 - lost);
        paths[1].loss.on_lost(lost);
        for p in paths.iter_mut() {
            p.last_sent = None;
        }
        let mut pet = Pet::new(PetConfig::default());
        let mut now = Instant::from_millis(1000);
        let (mut first, mut near) = (None, 0u32);
        for _ in 0..1000 {
            now += Duration::from_millis(1);
            let d = send(&mut pet, now, &mut paths);
            first.get_or_insert(d.index);
            if d.index == 0 && !d.probe && d.pair != PairRole::Second {
                near += 1;
            }
        }
        (first, near)
    };
    assert_eq!(run(20e6, 0), (Some(1), 0), "clean fastest path");
    let (first, near) = run(20e6, 1);
    assert_eq!(
        first,
        Some(0),
        "a lossy fastest path still raised the near one"
    );
    // All of them, in pairs: 500 pairs' first packets.
    assert!(near >= 490, "{near} pairs on the near path");
    // A thin near path (1.5 Mbit/s, 3 %) counts far whatever the loss.
    assert_eq!(run(1.5e6, 1), (Some(1), 0), "thin near path");
    // A near path of about the fastest path's rate (40 against 46 Mbit/s,
    // under `near_lead`) keeps its own delay.
    assert_eq!(
        run(40e6, 0).0,
        Some(0),
        "a near path of equal rate was raised"
    );
}

/// One odd pair on the fastest path does not turn the near rule off: the
/// lead is that of the steady averages (`BandwidthEstimator::steady_bps`).
/// 46 Mbit/s against 20 leads by 2.3; a pair measuring 18 Mbit/s takes the
/// fast estimate to 23.6 Mbit/s, a lead of 1.18, under `near_lead`, and
/// with the fast estimates the near path took the first packet.
#[test]
fn one_odd_pair_does_not_turn_the_near_rule_off() {
    let mut paths = with_estimates(&[20e6, 46e6]);
    let pair = |bps: f64| Duration::from_secs_f64(1500.0 * 8.0 / bps);
    for _ in 0..20 {
        paths[0].bw.on_pair(1500, pair(20e6));
        paths[1].bw.on_pair(1500, pair(46e6));
    }
    paths[1].bw.on_pair(1500, pair(18e6));
    let fast_lead = paths[1].bw.estimate_bps().unwrap() / paths[0].bw.estimate_bps().unwrap();
    assert!(fast_lead < PetConfig::default().near_lead, "{fast_lead}");
    far_and_clean(&mut paths[1]);
    for p in paths.iter_mut() {
        p.last_sent = None;
    }
    let mut pet = Pet::new(PetConfig::default());
    let mut now = Instant::from_millis(1000);
    let mut near = 0u32;
    for k in 0..200 {
        now += Duration::from_millis(1);
        let d = send(&mut pet, now, &mut paths);
        if k == 0 {
            assert_eq!(d.index, 1, "the first packet went to the near path");
        }
        if d.index == 0 && !d.probe && d.pair != PairRole::Second {
            near += 1;
        }
    }
    assert_eq!(near, 0, "{near} pairs on the near path");
}

/// A raised near path that EDPF gives data (the fast path is full) takes
/// it in pairs: the second packet follows the first there, so the path's
/// pair samples keep coming. Only a first packet that kept its delays (a
/// pure ACK) leaves its pair open to no data packet.
///
/// Why: the rule that keeps data from following a pure ACK's pair onto a
/// raised path kept it from following any pair there, and a raised path
/// then measured its rate only by probes. Change set 31337/1 of
/// `lab/sweep-changes.sh` (6.11 Mbit/s 10 ms away with a 15 kB queue,
/// beside 29.12 Mbit/s 17 ms away): a pair of small packets as the
/// upload began stopped the near path's pacing (`sender/pace_samples.rs`),
/// no full-size pair ever reached it again, and unpaced it lost a third of
/// its packets in its queue for the rest of the run (2914 in 17 s), every
/// one repaired; 25.04-29.93 Mbit/s against 28.11 for the fast path
/// alone. In pairs, it is paced again within a second: 30.03-30.06 up in
/// five runs, 30.05-30.08 down in three.
#[test]
fn data_on_a_raised_near_path_goes_in_pairs() {
    // 20 Mbit/s 150 ms nearer than a clean 46 Mbit/s (raised: the fast
    // path leads it 2.3 times), offered 72 Mbit/s for a second.
    let mut paths = with_estimates(&[20e6, 46e6]);
    far_and_clean(&mut paths[1]);
    let mut pet = Pet::new(PetConfig::default());
    let mut now = Instant::from_millis(1000);
    let (mut firsts, mut seconds) = (0u32, 0u32);
    for k in 0..6000 {
        if k % 6 == 0 {
            now += Duration::from_millis(1);
        }
        let d = send(&mut pet, now, &mut paths);
        if d.index == 0 && !d.probe {
            match d.pair {
                PairRole::First => firsts += 1,
                PairRole::Second => seconds += 1,
                PairRole::None => {}
            }
        }
    }
    assert!(firsts > 50, "the near path carried {firsts} pairs");
    assert!(
        seconds + 5 >= firsts,
        "{firsts} pairs on the near path, {seconds} completed"
    );

    // A pure ACK keeps the near path's delay, and opens a pair there; the
    // data packet right behind it does not follow it onto the raised path.
    let mut paths = with_estimates(&[20e6, 46e6]);
    far_and_clean(&mut paths[1]);
    for p in paths.iter_mut() {
        p.last_sent = None;
    }
    let mut pet = Pet::new(PetConfig::default());
    let now = Instant::from_millis(1000);
    let ack = PacketInfo {
        len: 52,
        retransmit: false,
        stream: false,
    };
    let d = pet.select(now, &ack, &paths, &SendQueues::UNPACED).unwrap();
    assert_eq!((d.index, d.pair), (0, PairRole::First), "the ACK's pair");
    paths[0].last_sent = Some(now);
    let d = send(&mut pet, now, &mut paths);
    assert_eq!(d.index, 1, "the data followed the ACK onto the near path");
}

/// Makes `fastest` 150 ms further than the other paths of
/// `with_estimates` and clean (300 packets delivered, none lost), as the
/// near rule's tests want it.
fn far_and_clean(fastest: &mut PathState) {
    fastest.owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
    fastest.owd.on_sample(Instant::ZERO, 150_000_000);
    fastest.loss.on_delivered(300);
}

/// A raised path counts only as far as the nearest path that carries data
/// at its own delay, when that is nearer than the fastest: that path sets
/// the inner TCP's round trip whatever the raised one does. A raised path
/// that loses packets still counts as far as the fastest, whose wait hides
/// the repair of its losses.
///
/// Why: change set 1/32 of `lab/sweep-changes.sh 40 1` (5.44 Mbit/s 9 ms
/// away, 2.69 Mbit/s 6 ms away, 23.66 Mbit/s whose delay grew from 38 to
/// 301 ms 4 s into the transfer): the far path's repairs made it lossy, so
/// the 5.44 Mbit/s path was no longer raised, but the thin 2.69 Mbit/s one
/// still counted 294 ms further than it is and carried nothing: 9.78
/// Mbit/s where the far path alone carries 11.06. Raised only to its
/// neighbour's delay it carries its rate: 11.00.
#[test]
fn a_raised_path_counts_only_as_far_as_a_nearer_unraised_one() {
    // Thin 1.5 Mbit/s and 10 Mbit/s, near (one 5 ms further than the
    // other), beside 40 Mbit/s 150 ms further that lost one packet in
    // 300: the 10 Mbit/s path (20 % of the sum) is not raised, the thin
    // one is.
    let paths = |thin_lost: u64| {
        let mut paths = with_estimates(&[1.5e6, 10e6, 40e6]);
        for (p, owd_ms) in paths.iter_mut().zip([50u64, 55, 200]) {
            p.owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
            p.owd.on_sample(Instant::ZERO, (owd_ms * 1_000_000) as i64);
        }
        paths[2].loss.on_delivered(299);
        paths[2].loss.on_lost(1);
        paths[0].loss.on_delivered(300 - thin_lost);
        paths[0].loss.on_lost(thin_lost);
        paths
    };
    let raise = |paths: &[PathState]| {
        let pet = Pet::new(PetConfig::default());
        let delays = Pet::relative_delays(paths);
        pet.near_raise(&pkt(false), paths, &delays, &[Duration::ZERO; MAX_PATHS])
    };
    let clean = raise(&paths(0));
    assert_eq!(clean[1], Duration::ZERO, "the 10 Mbit/s path was raised");
    assert_eq!(
        clean[0],
        Duration::from_millis(5),
        "the thin path did not count as far as its unraised neighbour"
    );
    let lossy = raise(&paths(3));
    assert_eq!(
        lossy[0],
        Duration::from_millis(150),
        "a lossy thin path lost the fastest path's wait"
    );
    // Without the neighbour, as far as the fastest path.
    let two = raise(
        &paths(0)[..1]
            .iter()
            .chain(&paths(0)[2..])
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert_eq!(two[0], Duration::from_millis(150));
}
