use super::*;
use crate::path::PathId;
use crate::sched::test_util::{known_paths, unknown_paths};
use crate::sched::SchedulerKind;
use crate::time::Duration;
use proptest::prelude::*;

const DATA: PacketInfo = PacketInfo {
    len: 1500,
    retransmit: false,
    stream: false,
};
const RETX: PacketInfo = PacketInfo {
    len: 1500,
    retransmit: true,
    stream: false,
};

fn pick(s: &mut Adas, pkt: &PacketInfo, paths: &[PathState]) -> usize {
    s.select(Instant::ZERO, pkt, paths, &SendQueues::UNPACED)
        .unwrap()
        .index
}

/// Sends one packet the way the sender accounts it.
fn send(s: &mut Adas, paths: &mut [PathState]) -> usize {
    let i = pick(s, &DATA, paths);
    paths[i].in_flight_packets += 1;
    paths[i].in_flight_bytes += DATA.len as u64;
    i
}

/// One feedback entry for a packet on path `i`.
fn ack(paths: &mut [PathState], i: usize) {
    paths[i].in_flight_packets -= 1;
    paths[i].in_flight_bytes -= DATA.len as u64;
    paths[i].acked_packets += 1;
}

#[test]
fn weights_are_rates_over_the_slowest() {
    let paths = known_paths(&[(600e3, 50), (900e3, 50), (1200e3, 50)]);
    let s = Adas::default();
    let w: Vec<f64> = paths.iter().map(|p| s.current_weight(p, &paths)).collect();
    assert_eq!(w, vec![1.0, 1.5, 2.0]);
    // Nothing known: equal weights.
    let paths = unknown_paths(2);
    assert_eq!(s.current_weight(&paths[1], &paths), 1.0);
}

#[test]
fn smallest_utilization_wins_over_scheduled_count() {
    // Fig 3 case A: weights 1:2, p1 and p2 went on link 2, and feedback has
    // shown that p2 left it. U = (floor(0/1), floor(1/2)) = (0, 0) would
    // tie; with one packet on link 1 instead, U = (1, 0) and p3 goes on
    // link 2, where WRR (which counts scheduled packets) would use link 1.
    let mut paths = known_paths(&[(100e3, 50), (200e3, 50)]);
    let mut s = Adas::default();
    paths[0].in_flight_packets = 1;
    paths[1].in_flight_packets = 1;
    assert_eq!(pick(&mut s, &DATA, &paths), 1);
    // Link 2 reaches U = 1 at two packets: now equal, and equal hRTT falls
    // to the lower index.
    paths[1].in_flight_packets = 2;
    assert_eq!(pick(&mut s, &DATA, &paths), 0);
    // Floor: 3 packets on a weight-2 link is still U = 1, below link 1's 2.
    paths[0].in_flight_packets = 2;
    paths[1].in_flight_packets = 3;
    assert_eq!(pick(&mut s, &DATA, &paths), 1);
}

#[test]
fn equal_utilization_goes_to_the_smallest_hrtt() {
    // Fig 3 case B: U equal, link 2's RTT rose, so the packet goes on link 1.
    let mut paths = known_paths(&[(100e3, 50), (100e3, 50)]);
    let mut s = Adas::default();
    paths[0].rtt.update(Duration::from_millis(300));
    paths[1].rtt.update(Duration::from_millis(200));
    assert_eq!(pick(&mut s, &DATA, &paths), 1);
    // SRTT 7/8 * 200 + 2000 / 8 = 425 ms, now above link 1's 300 ms.
    paths[1].rtt.update(Duration::from_millis(2000));
    assert_eq!(pick(&mut s, &DATA, &paths), 0);
}

#[test]
fn utilization_outranks_hrtt() {
    // Fig 3 case C: link 1's hRTT is larger, but its U is smaller.
    let mut paths = known_paths(&[(100e3, 50), (100e3, 50)]);
    let mut s = Adas::default();
    paths[0].rtt.update(Duration::from_millis(900));
    paths[1].rtt.update(Duration::from_millis(100));
    paths[1].in_flight_packets = 1;
    assert_eq!(pick(&mut s, &DATA, &paths), 0);
}

#[test]
fn loss_halves_the_weight_and_acks_grow_it_back() {
    let mut paths = known_paths(&[(100e3, 50), (300e3, 50)]);
    let mut s = Adas::default();
    paths[0].in_flight_packets = 2; // U0 = 2
    paths[1].in_flight_packets = 5; // U1 = floor(5/3) = 1
    assert_eq!(pick(&mut s, &DATA, &paths), 1);
    // Three losses detected together on link 2: one event, one halving.
    paths[1].loss.on_lost(3);
    assert_eq!(pick(&mut s, &DATA, &paths), 0, "U1 = floor(5/1.5) = 3 > 2");
    assert_eq!(s.current_weight(&paths[1], &paths), 1.5);
    // Another event halves again.
    paths[1].loss.on_lost(1);
    pick(&mut s, &DATA, &paths);
    assert_eq!(s.current_weight(&paths[1], &paths), 0.75);
    // Each identified ACK adds 1/W: 0.75 -> 2.083 -> 2.563 -> 2.953 -> 3 (capped).
    let mut seen = vec![];
    for _ in 0..4 {
        paths[1].acked_packets += 1;
        pick(&mut s, &DATA, &paths);
        seen.push(s.current_weight(&paths[1], &paths));
    }
    let expect = [0.75 + 1.0 / 0.75, 0.0, 0.0, 3.0];
    assert!((seen[0] - expect[0]).abs() < 1e-9, "{seen:?}");
    assert!(
        seen[1] > seen[0] && seen[2] > seen[1] && seen[2] < 3.0,
        "{seen:?}"
    );
    assert_eq!(seen[3], 3.0, "grows back to, and not past, the original");
    paths[1].acked_packets += 100;
    pick(&mut s, &DATA, &paths);
    assert_eq!(s.current_weight(&paths[1], &paths), 3.0);
    // ACKs on another link do not grow this one.
    paths[1].loss.on_lost(1);
    pick(&mut s, &DATA, &paths);
    paths[0].acked_packets += 10;
    pick(&mut s, &DATA, &paths);
    assert_eq!(s.current_weight(&paths[1], &paths), 1.5);
}

#[test]
fn weight_cut_has_a_floor() {
    let mut paths = known_paths(&[(100e3, 50), (100e3, 50)]);
    let mut s = Adas::default();
    for _ in 0..20 {
        paths[0].loss.on_lost(1);
        pick(&mut s, &DATA, &paths);
    }
    assert_eq!(s.current_weight(&paths[0], &paths), 1.0 / 64.0);
}

#[test]
fn reported_loss_halves_once_at_the_next_select() {
    let mut paths = known_paths(&[(100e3, 50), (200e3, 50)]);
    let mut s = Adas::default();
    s.on_loss(PathId(1));
    assert_eq!(
        s.current_weight(&paths[1], &paths),
        2.0,
        "not before select"
    );
    pick(&mut s, &DATA, &paths);
    assert_eq!(s.current_weight(&paths[1], &paths), 1.0);
    pick(&mut s, &DATA, &paths);
    assert_eq!(s.current_weight(&paths[1], &paths), 1.0, "applied once");
    paths[1].acked_packets += 1;
    pick(&mut s, &DATA, &paths);
    assert_eq!(s.current_weight(&paths[1], &paths), 2.0);
}

#[test]
fn paths_changed_restores_weights_without_replaying_history() {
    let mut paths = known_paths(&[(100e3, 50), (200e3, 50)]);
    let mut s = Adas::default();
    paths[1].loss.on_lost(1);
    pick(&mut s, &DATA, &paths);
    assert_eq!(s.current_weight(&paths[1], &paths), 1.0);
    paths[0].loss.on_lost(5);
    s.paths_changed(&paths);
    pick(&mut s, &DATA, &paths);
    assert_eq!(s.current_weight(&paths[0], &paths), 1.0);
    assert_eq!(s.current_weight(&paths[1], &paths), 2.0);
}

#[test]
fn retransmission_takes_the_earliest_arrival() {
    // By U the slow link is next (U = (0, 1)), but a retransmission goes
    // where it arrives first: link 2 drains its 3 packets at 1 Mbit/s in
    // 36 ms on top of a 20 ms hRTT (56 ms); link 1 has nothing in flight
    // but a 60 ms hRTT.
    let mut paths = known_paths(&[(100e3, 50), (1e6, 50)]);
    let mut s = Adas::default();
    paths[0].rtt.update(Duration::from_millis(120));
    paths[1].rtt.update(Duration::from_millis(40));
    paths[1].in_flight_packets = 10;
    paths[1].in_flight_bytes = 3 * 1500;
    assert_eq!(pick(&mut s, &DATA, &paths), 0);
    assert_eq!(pick(&mut s, &RETX, &paths), 1);
    // A cut weight does not hold a retransmission back either.
    paths[1].loss.on_lost(1);
    assert_eq!(pick(&mut s, &RETX, &paths), 1);
    // But a long backlog does: 30 packets at 1 Mbit/s is 360 ms.
    paths[1].in_flight_bytes = 30 * 1500;
    assert_eq!(pick(&mut s, &RETX, &paths), 0);
}

#[test]
fn unusable_paths_are_never_chosen() {
    let mut paths = known_paths(&[(100e3, 50), (200e3, 50), (400e3, 50)]);
    let mut s = Adas::default();
    paths[2].usable = false;
    for _ in 0..20 {
        assert_ne!(send(&mut s, &mut paths), 2);
        assert_ne!(pick(&mut s, &RETX, &paths), 2);
    }
    for p in &mut paths {
        p.usable = false;
    }
    assert!(s
        .select(Instant::ZERO, &DATA, &paths, &SendQueues::UNPACED)
        .is_none());
}

#[test]
fn listed_by_name() {
    assert_eq!(SchedulerKind::parse("ADAS"), Some(SchedulerKind::Adas));
    assert_eq!(SchedulerKind::Adas.as_str(), "adas");
    assert_eq!(SchedulerKind::Adas.build().name(), "ADAS");
}

proptest! {
    /// With no losses, sending until a fixed number of packets is in flight
    /// after each burst of random ACKs keeps every link's in-flight count
    /// proportional to its weight: the utilizations differ by at most one,
    /// so N_i / W_i differ by less than two.
    #[test]
    fn in_flight_stays_proportional_to_weight(
        rates in prop::collection::vec(50u32..2000, 2..6),
        rtts in prop::collection::vec(10u64..500, 6),
        window in 10u32..120,
        acks in prop::collection::vec((0usize..1000, 0usize..6), 1..300),
    ) {
        let spec: Vec<(f64, u64)> = rates.iter().map(|&r| (r as f64 * 1e3, 50)).collect();
        let mut paths = known_paths(&spec);
        for (p, &r) in paths.iter_mut().zip(&rtts) {
            p.rtt.update(Duration::from_millis(r));
        }
        let mut s = Adas::default();
        let w: Vec<f64> = paths.iter().map(|p| s.current_weight(p, &paths)).collect();
        let total = |paths: &[PathState]| paths.iter().map(|p| p.in_flight_packets).sum::<u32>();
        for (pick_link, burst) in acks {
            // A burst of ACKs on links chosen at random among those with
            // packets in flight.
            for k in 0..burst {
                let busy: Vec<usize> = (0..paths.len())
                    .filter(|&i| paths[i].in_flight_packets > 0)
                    .collect();
                if busy.is_empty() {
                    break;
                }
                ack(&mut paths, busy[(pick_link + k) % busy.len()]);
            }
            while total(&paths) < window {
                send(&mut s, &mut paths);
            }
            let u: Vec<u64> = paths
                .iter()
                .zip(&w)
                .map(|(p, w)| (p.in_flight_packets as f64 / w).floor() as u64)
                .collect();
            let (lo, hi) = (u.iter().min().unwrap(), u.iter().max().unwrap());
            prop_assert!(hi - lo <= 1, "U = {u:?}, weights {w:?}");
            let x: Vec<f64> = paths.iter().zip(&w).map(|(p, w)| p.in_flight_packets as f64 / w).collect();
            let spread = x.iter().cloned().fold(f64::MIN, f64::max)
                - x.iter().cloned().fold(f64::MAX, f64::min);
            prop_assert!(spread < 2.0, "N/W = {x:?}");
            // AIMD is idle without losses: ACKs leave weights at the original.
            for (p, w0) in paths.iter().zip(&w) {
                prop_assert_eq!(s.current_weight(p, &paths), *w0);
            }
        }
    }
}

/// Through the real [`Sender`](crate::sender::Sender): its FIFO loss
/// detection on feedback reaches ADAS through the path state, without any
/// call, and the halved link takes one packet where it took two.
#[test]
fn sender_detected_loss_shifts_traffic() {
    use crate::path::PathParams;
    use crate::sender::{Sender, SenderConfig};
    use crate::wire::FeedbackEntry;
    let mut s = Sender::new(SenderConfig::default(), Box::new(Adas::default()));
    for i in 0..2 {
        s.add_path(
            PathId(i),
            PathParams {
                rate_bps: Some(1e6),
                delay: None,
            },
        );
    }
    let mut now = Instant::ZERO;
    let send = |s: &mut Sender, now: Instant| s.send(now, &DATA).unwrap();
    let first: Vec<_> = (0..4).map(|_| send(&mut s, now)).collect();
    let on: Vec<u8> = first.iter().map(|t| t.path.0).collect();
    assert_eq!(on, vec![0, 1, 0, 1], "equal weights alternate");
    // Packet 0 (path 0) is lost: path 0's later packet 2 is reported.
    now = Instant::from_millis(100);
    let fb = [1, 2, 3].map(|i: usize| FeedbackEntry {
        seq: first[i].seq as u32,
        rx_time_ns: 50_000_000 + i as u64,
    });
    s.handle_feedback(now, fb);
    assert_eq!(s.stats().lost_fifo, 1);
    // Weights 0.5 : 1 now: U0 = floor(1 / 0.5) = 2 after one packet.
    let next: Vec<u8> = (0..6).map(|_| send(&mut s, now).path.0).collect();
    assert_eq!(next, vec![0, 1, 1, 0, 1, 1], "path 0 halved");
    // All six delivered: the first identified ACK on path 0 takes its
    // weight 0.5 + 1/0.5 past the original 1, so it is back at 1 and, with
    // nothing in flight, the split alternates again. Path 1 goes first: its
    // four 20 ms samples against path 0's two gave it the smaller hRTT.
    let fb: Vec<FeedbackEntry> = (4..10)
        .map(|seq| FeedbackEntry {
            seq,
            rx_time_ns: 60_000_000 + seq as u64,
        })
        .collect();
    s.handle_feedback(Instant::from_millis(120), fb);
    assert_eq!(s.path(PathId(0)).unwrap().in_flight_packets, 0);
    assert_eq!(s.path(PathId(1)).unwrap().in_flight_packets, 0);
    let again: Vec<u8> = (0..4).map(|_| send(&mut s, now).path.0).collect();
    assert_eq!(again, vec![1, 0, 1, 0]);
}
