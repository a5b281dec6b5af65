//! The ramp's tests (`ramp.rs`, `PetConfig::ramp_share`): which paths
//! carry data while the bond's rate fits on its best single path.

use super::tests::{pkt, send, with_estimates};
use super::*;

/// Two paths for the ramp's tests: a small one (7 Mbit/s, path 0) whose
/// one-way delay is `small_owd_ms` and round trip `small_rtt_ms` (if
/// known), beside 46 Mbit/s 160 ms away one way, 320 ms round trip.
fn ramp_paths(small_owd_ms: i64, small_rtt_ms: Option<u64>) -> Vec<PathState> {
    let mut paths = with_estimates(&[7e6, 46e6]);
    for (p, owd_ms) in paths.iter_mut().zip([small_owd_ms, 160]) {
        p.owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
        p.owd.on_sample(Instant::ZERO, owd_ms * 1_000_000);
    }
    if let Some(rtt) = small_rtt_ms {
        paths[0].rtt.update(Duration::from_millis(rtt));
    }
    paths[1].rtt.update(Duration::from_millis(320));
    paths
}

/// PET without its queue cap, whose spills (a full queue on the best
/// path) ignore the ramp: these tests model no bottleneck buffer.
fn uncapped(cfg: PetConfig) -> Pet {
    Pet::new(PetConfig {
        queue_cap: false,
        ..cfg
    })
}

/// Data packets (neither probes nor a probe's second) PET put on path 0:
/// for `secs` seconds a burst of `burst` full-size packets every
/// `every_ms`, as a TCP sender's slow start or its window sends them.
fn small_path_data(
    pet: &mut Pet,
    paths: &mut [PathState],
    start: Instant,
    secs: u64,
    burst: u32,
    every_ms: u64,
) -> u32 {
    let mut data = 0;
    let mut now = start;
    while now < start + Duration::from_secs(secs) {
        for _ in 0..burst {
            let d = send(pet, now, paths);
            if d.index == 0 && !d.probe && d.pair != PairRole::Second {
                data += 1;
            }
        }
        now += Duration::from_millis(every_ms);
    }
    data
}

/// The ramp (`PetConfig::ramp_share`): a small path 3 ms nearer than a
/// 46 Mbit/s path takes the top of every burst under plain EDPF, but no
/// data while the bond sends 24 Mbit/s (bursts of 40 packets every 20 ms),
/// under 0.9 of the fast path's rate; at 48 Mbit/s it carries its share.
#[test]
fn the_ramp_keeps_a_small_path_out_until_the_best_path_is_busy() {
    let start = Instant::from_millis(1);
    let mut paths = ramp_paths(157, Some(313));
    let mut pet = uncapped(PetConfig::default());
    let slow = small_path_data(&mut pet, &mut paths, start, 2, 40, 20);
    assert_eq!(slow, 0, "the small path carried data at 24 Mbit/s");
    let busy = small_path_data(
        &mut pet,
        &mut paths,
        start + Duration::from_secs(2),
        2,
        4,
        1,
    );
    assert!(
        busy > 100,
        "{busy} data packets on the small path at 48 Mbit/s"
    );

    let mut paths = ramp_paths(157, Some(313));
    let mut pet = uncapped(PetConfig {
        ramp_share: 0.0,
        ..Default::default()
    });
    let off = small_path_data(&mut pet, &mut paths, start, 2, 40, 20);
    assert!(off > 100, "without the ramp: {off} data packets");
}

/// A path the ramp keeps out gets no probe pairs either (a probe carries
/// data): none in 3 s at 24 Mbit/s, though its estimate is due a probe
/// every second. Once the bond is busy it carries pairs again.
#[test]
fn the_ramp_sends_no_probes_to_a_path_it_keeps_out() {
    let start = Instant::from_millis(1);
    let mut paths = ramp_paths(157, Some(313));
    let mut pet = uncapped(PetConfig::default());
    // (probes, packets of any kind) on the small path over 3 s.
    let on_small = |pet: &mut Pet, paths: &mut [PathState], from: Instant, burst, every_ms| {
        let (mut probes, mut all) = (0, 0);
        let mut now = from;
        while now < from + Duration::from_secs(3) {
            for _ in 0..burst {
                let d = send(pet, now, paths);
                probes += u32::from(d.index == 0 && d.probe);
                all += u32::from(d.index == 0);
            }
            now += Duration::from_millis(every_ms);
        }
        (probes, all)
    };
    let (probes, _) = on_small(&mut pet, &mut paths, start, 40, 20);
    assert_eq!(
        probes, 0,
        "{probes} probes on the small path during the ramp"
    );
    let (_, busy) = on_small(&mut pet, &mut paths, start + Duration::from_secs(3), 4, 1);
    assert!(
        busy > 100,
        "{busy} packets on the small path once the bond is busy"
    );
}

/// A small path nearer than the ramp path by at least its own round trip
/// (8 ms away, 16 ms round trip, beside 160 ms) takes part in the ramp: a
/// loss on it is repaired while its packets wait for the fast path's. Its
/// round trip unknown, it stays out.
#[test]
fn a_small_path_whose_repair_fits_in_its_wait_takes_part_in_the_ramp() {
    let start = Instant::from_millis(1);
    for (rtt, takes_part) in [(Some(16), true), (None, false)] {
        let mut paths = ramp_paths(8, rtt);
        let mut pet = uncapped(PetConfig::default());
        let data = small_path_data(&mut pet, &mut paths, start, 2, 40, 20);
        assert_eq!(
            data > 0,
            takes_part,
            "round trip {rtt:?}: {data} data packets"
        );
    }
}

/// A lossy best path is not the best single path any more: the ramp is
/// off and the small path takes its part of the bursts.
#[test]
fn a_lossy_best_path_turns_the_ramp_off() {
    let start = Instant::from_millis(1);
    let mut paths = ramp_paths(157, Some(313));
    paths[1].loss.on_delivered(100);
    paths[1].loss.on_lost(2);
    let mut pet = uncapped(PetConfig::default());
    let data = small_path_data(&mut pet, &mut paths, start, 2, 40, 20);
    assert!(data > 100, "{data} data packets on the small path");
}

/// The ramp path is the best single path: the fastest, or a nearer path
/// within [`ramp::RAMP_PEER_RATE`] of its rate.
#[test]
fn the_ramp_path_is_the_nearest_of_the_fastest_paths() {
    let mut paths = with_estimates(&[10e6, 10.5e6, 4e6]);
    for (p, owd_ms) in paths.iter_mut().zip([20, 300, 5]) {
        p.owd = crate::path::OwdEstimator::new(Duration::from_secs(10));
        p.owd.on_sample(Instant::ZERO, owd_ms * 1_000_000);
    }
    let ramp_of = |paths: &[PathState]| {
        let delays = Pet::relative_delays(paths);
        Pet::ramp_path(paths, &delays).map(|p| p.id)
    };
    assert_eq!(ramp_of(&paths), Some(paths[0].id));
    paths[1]
        .bw
        .on_pair(1500, Duration::from_secs_f64(1500.0 * 8.0 / 20e6));
    assert_eq!(ramp_of(&paths), Some(paths[1].id));
}

/// A pure ACK goes on the small, nearer path and opens a pair there; the
/// TCP data packet right behind it does not follow it while the ramp keeps
/// that path out (without the ramp it does, as the pair's second). The
/// near rule, which guards pairs the same way, is off here.
#[test]
fn data_does_not_follow_an_ack_onto_a_path_the_ramp_keeps_out() {
    let now = Instant::from_millis(1);
    let ack = PacketInfo {
        len: 52,
        retransmit: false,
        stream: false,
    };
    for (ramp_share, follows) in [(0.9, false), (0.0, true)] {
        let paths = ramp_paths(157, Some(313));
        let mut pet = uncapped(PetConfig {
            ramp_share,
            near_floor: false,
            ..Default::default()
        });
        let first = pet.select(now, &ack, &paths, &SendQueues::UNPACED).unwrap();
        assert_eq!(first.index, 0, "the ACK went on the far path");
        let data = pet
            .select(now, &pkt(false), &paths, &SendQueues::UNPACED)
            .unwrap();
        assert_eq!(
            data.index == 0,
            follows,
            "ramp share {ramp_share}: data on path {} ({:?})",
            data.index,
            data.pair
        );
    }
}
