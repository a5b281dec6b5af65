//! Unit tests of the sender: numbering, feedback, loss, pacing.

use super::*;
use crate::sched::{RoundRobin, SchedulerKind};
use crate::wire::FeedbackEntry;

pub(super) fn pkt() -> PacketInfo {
    PacketInfo {
        len: 1500,
        retransmit: false,
        stream: false,
    }
}

fn sender(kind: SchedulerKind, n: u8) -> Sender {
    let mut s = Sender::new(SenderConfig::default(), kind.build());
    for i in 0..n {
        s.add_path(PathId(i), PathParams::default());
    }
    s
}

#[test]
fn numbers_packets_and_links_previous_on_path() {
    let mut s = Sender::new(SenderConfig::default(), Box::new(RoundRobin::default()));
    s.add_path(PathId(0), PathParams::default());
    s.add_path(PathId(1), PathParams::default());
    let t: Vec<Transmit> = (0..4)
        .map(|_| s.send(Instant::ZERO, &pkt()).unwrap())
        .collect();
    assert_eq!(
        t.iter().map(|t| t.seq).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    assert_eq!(t[0].header.prev_delta, 0);
    assert_eq!(t[2].header.prev_delta, 2);
    assert_eq!(t[2].path, PathId(0));
}

#[test]
fn feedback_updates_rtt_pairs_and_fifo_loss() {
    let mut s = sender(SchedulerKind::Pet, 1);
    let t0 = Instant::from_millis(0);
    let a = s.send(t0, &pkt()).unwrap();
    let b = s.send(t0, &pkt()).unwrap();
    assert!(
        a.header.flags.has(DataFlags::PAIR_FIRST) && b.header.flags.has(DataFlags::PAIR_SECOND)
    );
    let c = s.send(t0, &pkt()).unwrap();
    let d = s.send(t0, &pkt()).unwrap();
    // a and b arrive 12 ms apart (1 Mbit/s); c is lost; d arrives.
    let fb = [
        FeedbackEntry {
            seq: a.seq as u32,
            rx_time_ns: 50_000_000,
        },
        FeedbackEntry {
            seq: b.seq as u32,
            rx_time_ns: 62_000_000,
        },
        FeedbackEntry {
            seq: d.seq as u32,
            rx_time_ns: 86_000_000,
        },
    ];
    s.handle_feedback(Instant::from_millis(100), fb);
    let p = &s.paths()[0];
    let bw = p.bw.estimate_bps().unwrap();
    assert!((bw - 1e6).abs() < 1e3, "bw {bw}");
    assert_eq!(p.rtt.latest(), Some(Duration::from_millis(100)));
    assert_eq!(s.stats().lost_fifo, 1);
    assert_eq!(p.in_flight_packets, 0);
    let _ = c;
}

#[test]
fn late_feedback_still_measures_the_path() {
    let mut s = sender(SchedulerKind::RoundRobin, 1);
    let a = s.send(Instant::ZERO, &pkt()).unwrap();
    // Before any sample the sender waits the longest timeout.
    assert_eq!(
        s.poll_timeout(),
        Some(Instant::ZERO + SenderConfig::default().max_loss_timeout)
    );
    s.handle_timeout(Instant::from_secs_f64(5.0));
    assert_eq!(s.stats().lost_timeout, 1);
    s.handle_feedback(
        Instant::from_secs_f64(6.0),
        [FeedbackEntry {
            seq: a.seq as u32,
            rx_time_ns: 3_000_000_000,
        }],
    );
    assert_eq!(s.stats().spurious_losses, 1);
    assert_eq!(s.paths()[0].rtt.latest(), Some(Duration::from_secs(6)));
    assert_eq!(s.paths()[0].in_flight_packets, 0);
}

#[test]
fn silent_path_times_out_its_packets() {
    let mut s = sender(SchedulerKind::RoundRobin, 1);
    s.paths[0].rtt.update(Duration::from_millis(100));
    s.send(Instant::ZERO, &pkt()).unwrap();
    let due = s.poll_timeout().unwrap();
    // RFC 6298 after one 100 ms sample: 100 + 4 x 50 ms.
    assert_eq!(due, Instant::from_millis(300));
    s.handle_timeout(due - Duration::from_millis(1));
    assert_eq!(s.stats().lost_timeout, 0);
    s.handle_timeout(due);
    assert_eq!(s.stats().lost_timeout, 1);
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn forged_or_duplicate_feedback_is_ignored() {
    let mut s = sender(SchedulerKind::RoundRobin, 1);
    let a = s.send(Instant::ZERO, &pkt()).unwrap();
    let e = FeedbackEntry {
        seq: a.seq as u32,
        rx_time_ns: 1,
    };
    s.handle_feedback(
        Instant::from_millis(10),
        [
            e,
            e,
            FeedbackEntry {
                seq: 999,
                rx_time_ns: 5,
            },
        ],
    );
    assert_eq!(s.stats().acked, 1);
    assert_eq!(s.stats().feedback_unmatched, 2);
}

/// A sender whose one path has a 10 Mbit/s estimate from a full-size pair.
fn paced_sender() -> Sender {
    paced_sender_with(SenderConfig {
        pacing: true,
        ..Default::default()
    })
}

/// Pacing on and lost packets repaired (ARQ).
pub(super) fn paced_arq_config() -> SenderConfig {
    let mut cfg = SenderConfig {
        pacing: true,
        ..Default::default()
    };
    cfg.repair.mode = crate::repair::RepairMode::Arq;
    cfg
}

/// One path, paced at about 9 Mbit/s from a first pair.
pub(super) fn paced_sender_with(cfg: SenderConfig) -> Sender {
    let mut s = Sender::new(cfg, SchedulerKind::Pet.build());
    s.add_path(PathId(0), PathParams::default());
    // Without an estimate nothing is paced; the pair leaves together.
    let [a, b] = send_pair_unpaced(&mut s, Instant::ZERO);
    s.handle_feedback(
        Instant::from_millis(50),
        [
            FeedbackEntry {
                seq: a.seq as u32,
                rx_time_ns: 20_000_000,
            },
            FeedbackEntry {
                seq: b.seq as u32,
                rx_time_ns: 21_200_000,
            },
        ],
    );
    assert!(s.paths()[0].bw.estimate_bps().is_some());
    s
}

/// Sends a full-size pair on a path that is not paced: the first packet
/// is held until the second comes, then both leave together.
fn send_pair_unpaced(s: &mut Sender, now: Instant) -> [Transmit; 2] {
    assert!(matches!(
        s.send_paced(now, &pkt(), || ()),
        SendOutcome::Queued { .. }
    ));
    assert_eq!(
        s.poll_transmit(now).map(|(t, ())| t),
        None,
        "the first waits for its partner"
    );
    assert!(matches!(
        s.send_paced(now, &pkt(), || ()),
        SendOutcome::Queued { .. }
    ));
    let a = s
        .poll_transmit(now)
        .map(|(t, ())| t)
        .expect("first released with the second");
    let b = s
        .poll_transmit(now)
        .map(|(t, ())| t)
        .expect("second right behind");
    assert!(
        a.header.flags.has(DataFlags::PAIR_FIRST) && b.header.flags.has(DataFlags::PAIR_SECOND)
    );
    assert_eq!(b.seq, a.seq + 1);
    [a, b]
}

#[test]
fn unpaced_pair_is_held_for_its_partner_but_not_longer() {
    let cfg = SenderConfig {
        pacing: true,
        ..Default::default()
    };
    let hold = cfg.pair_hold;
    let mut s = Sender::new(cfg, SchedulerKind::Pet.build());
    s.add_path(PathId(0), PathParams::default());
    // The partner comes 2 ms later (TCP clocked by another path's ACKs).
    let t0 = Instant::from_millis(10);
    assert!(matches!(
        s.send_paced(t0, &pkt(), || ()),
        SendOutcome::Queued { .. }
    ));
    assert_eq!(s.poll_timeout(), Some(t0 + hold));
    let t1 = t0 + Duration::from_millis(2);
    assert_eq!(s.poll_transmit(t1).map(|(t, ())| t), None);
    assert!(matches!(
        s.send_paced(t1, &pkt(), || ()),
        SendOutcome::Queued { .. }
    ));
    let a = s.poll_transmit(t1).map(|(t, ())| t).unwrap();
    let b = s.poll_transmit(t1).map(|(t, ())| t).unwrap();
    assert_eq!((a.seq, b.seq), (0, 1));
    // Timers count from when the packets really left.
    s.handle_feedback(
        t1 + Duration::from_millis(40),
        [
            FeedbackEntry {
                seq: 0,
                rx_time_ns: 30_000_000,
            },
            FeedbackEntry {
                seq: 1,
                rx_time_ns: 31_200_000,
            },
        ],
    );
    assert_eq!(
        s.stats().pair_samples,
        1,
        "sent back to back, the pair measures the path"
    );
    // A pair whose partner never comes: the first leaves after the hold.
    let mut s = Sender::new(
        SenderConfig {
            pacing: true,
            ..Default::default()
        },
        SchedulerKind::Pet.build(),
    );
    s.add_path(PathId(0), PathParams::default());
    assert!(matches!(
        s.send_paced(t0, &pkt(), || ()),
        SendOutcome::Queued { .. }
    ));
    assert_eq!(
        s.poll_transmit(t0 + hold - Duration::from_micros(1))
            .map(|(t, ())| t),
        None
    );
    assert_eq!(
        s.poll_transmit(t0 + hold).map(|(t, ())| t).map(|t| t.seq),
        Some(0)
    );
    // Small packets (TCP ACKs) are never held.
    let small = PacketInfo {
        len: 100,
        retransmit: false,
        stream: false,
    };
    assert!(matches!(
        s.send_paced(t0 + hold, &small, || ()),
        SendOutcome::Transmit(_)
    ));
    assert_eq!(s.stats().pair_holds, 1);
}

#[test]
fn pacing_releases_at_the_rate_with_pairs_back_to_back() {
    let mut s = paced_sender();
    let held = s.stats().paced;
    let now = Instant::from_millis(50);
    let mut immediate = Vec::new();
    let mut queued = 0;
    for _ in 0..10 {
        match s.send_paced(now, &pkt(), || ()) {
            SendOutcome::Transmit(t) => immediate.push(t),
            SendOutcome::Queued { .. } => queued += 1,
            o => panic!("{o:?}"),
        }
    }
    // The first pair leaves at once, the rest waits.
    assert_eq!((immediate.len(), queued), (2, 8));
    assert_eq!(s.poll_transmit(now).map(|(t, ())| t), None);
    let mut released = Vec::new();
    while let Some(t) = s.poll_timeout().filter(|_| s.paced_len() > 0) {
        while let Some(tx) = s.poll_transmit(t).map(|(t, ())| t) {
            released.push((t, tx));
        }
    }
    assert_eq!(released.len(), 8);
    // Each pair leaves together; pairs are 2 x 1.2 ms / gain apart.
    let gain = SenderConfig::default().pacing_gain;
    let gap = Duration::from_nanos((2.0 * 1.2e6 / gain) as u64);
    for (k, w) in released.chunks(2).enumerate() {
        assert_eq!(w[0].0, w[1].0);
        assert!(w[0].1.header.flags.has(DataFlags::PAIR_FIRST));
        assert!(w[1].1.header.flags.has(DataFlags::PAIR_SECOND));
        let want = now + gap * (k as u32 + 1);
        let err = w[0].0.as_nanos() as i64 - want.as_nanos() as i64;
        assert!(err.abs() < 1_000, "pair {k} at {:?}, want {want:?}", w[0].0);
    }
    // The scheduler sees the queue's end.
    assert_eq!(s.stats().paced - held, 8);
}

/// A sending process that runs 30 ms late (a busy machine) releases at
/// once only what is due within the catch-up allowance (a quarter of the
/// path's 50 ms round trip), not the whole stall's worth; the rest of the
/// schedule slips, keeping the pace from the late release on.
#[test]
fn a_late_pacer_catches_up_by_its_allowance_only() {
    let mut s = paced_sender();
    let now = Instant::from_millis(50);
    let allowance = s.catch_up_allowance(0);
    assert_eq!(allowance, Duration::from_micros(12_500), "50 ms / 4");
    let mut queued = 0;
    for _ in 0..40 {
        if let SendOutcome::Queued { .. } = s.send_paced(now, &pkt(), || ()) {
            queued += 1;
        }
    }
    let free_before = s.per_path[0].pacer_free.unwrap();
    let first_due = s.poll_timeout().unwrap();
    assert_eq!(s.poll_transmit(now), None);
    // Woken 30 ms after the first release was due.
    let late = first_due + Duration::from_millis(30);
    let mut burst = Vec::new();
    while let Some(tx) = s.poll_transmit(late) {
        burst.push(tx);
    }
    // 1.2 ms per packet at 10 Mbit/s: the allowance holds about ten
    // packets (in pairs), the 30 ms stall about 25.
    assert!(
        (9..=12).contains(&burst.len()),
        "{} packets at once",
        burst.len()
    );
    assert_eq!(s.stats().pacing_slips, 1);
    let slip = Duration::from_millis(30) - allowance;
    assert_eq!(s.stats().pacing_slip_ns, slip.as_nanos() as u64);
    assert_eq!(s.per_path[0].pacer_free, Some(free_before + slip));
    // The rest follows at the pacing rate from the late release on.
    let next = s.poll_timeout().unwrap();
    assert!(
        next > late && next <= late + Duration::from_micros(2_500),
        "{next:?}"
    );
    let mut rest = burst.len();
    while let Some(t) = s.poll_timeout().filter(|_| s.paced_len() > 0) {
        while s.poll_transmit(t).is_some() {
            rest += 1;
        }
    }
    assert_eq!(rest, queued);
    assert_eq!(s.stats().pacing_slips, 1, "released on time: no more slips");
}

/// Late by less than the allowance (timer jitter), the pacer catches up
/// fully and its schedule stays where it was.
#[test]
fn a_slightly_late_pacer_keeps_its_schedule() {
    let mut s = paced_sender();
    let now = Instant::from_millis(50);
    for _ in 0..20 {
        s.send_paced(now, &pkt(), || ());
    }
    let free = s.per_path[0].pacer_free;
    while let Some(t) = s.poll_timeout().filter(|_| s.paced_len() > 0) {
        while s.poll_transmit(t + Duration::from_millis(2)).is_some() {}
    }
    assert_eq!(s.stats().pacing_slips, 0);
    assert_eq!(s.per_path[0].pacer_free, free);
}

#[test]
fn pacing_queue_drops_beyond_its_bound() {
    let mut s = paced_sender();
    let now = Instant::from_millis(50);
    for _ in 0..200 {
        s.send_paced(now, &pkt(), || ());
    }
    // Bound: 50 ms (no relative delay) at 9.95 Mbit/s, about 41 packets.
    assert!(s.stats().pacing_drops > 150, "{:?}", s.stats());
    let backlog = s.per_path[0].pacer_free.unwrap().saturating_since(now);
    assert!(backlog <= Duration::from_millis(53), "{backlog:?}");
}

/// An inner TCP retransmission waits past the bound, up to twice it
/// (`bound::retransmit_bound`): the TCP already took the congestion
/// signal, and losing the retransmission too costs it a timeout. New data
/// is still dropped at the bound, counted without the retransmissions
/// queued past it: they do not take its room.
#[test]
fn a_retransmission_waits_past_the_bound_up_to_twice_it() {
    let mut s = paced_sender();
    let now = Instant::from_millis(50);
    let bound = s.pacing_bound_now(now);
    while !matches!(s.send_paced(now, &pkt(), || ()), SendOutcome::Dropped) {}
    let backlog = |s: &Sender| s.per_path[0].pacer_free.unwrap().saturating_since(now);
    assert!(backlog(&s) <= bound + Duration::from_millis(2));
    let rtx = PacketInfo {
        retransmit: true,
        ..pkt()
    };
    assert!(matches!(
        s.send_paced(now, &rtx, || ()),
        SendOutcome::Queued { .. }
    ));
    assert!(backlog(&s) > bound);
    assert!(matches!(
        s.send_paced(now, &pkt(), || ()),
        SendOutcome::Dropped
    ));
    let mut admitted = 1;
    while !matches!(s.send_paced(now, &rtx, || ()), SendOutcome::Dropped) {
        admitted += 1;
    }
    // Another bound's worth of packets (1.2 ms each at 9.95 Mbit/s).
    assert!((38..=44).contains(&admitted), "{admitted}");
    assert!(backlog(&s) <= bound * 2 + Duration::from_millis(2));
    // 10 ms on, the queue has drained that much: new data may take it
    // (about eight packets), though the whole queue is still longer than
    // the bound, and beyond that is dropped again.
    let later = now + Duration::from_millis(10);
    let mut new = 0;
    while !matches!(s.send_paced(later, &pkt(), || ()), SendOutcome::Dropped) {
        new += 1;
    }
    assert!((7..=10).contains(&new), "{new}");
    // Once the retransmissions have left, new data has the bound again,
    // counted in full.
    let drained = later + bound * 2;
    assert_eq!(
        s.per_path[0].retransmits_past_bound.queued(drained),
        Duration::ZERO
    );
    while !matches!(s.send_paced(drained, &pkt(), || ()), SendOutcome::Dropped) {}
    let left = s.per_path[0].pacer_free.unwrap().saturating_since(drained);
    assert!(left <= bound + Duration::from_millis(2), "{left:?}");
}

#[test]
fn no_usable_path_drops() {
    let mut s = sender(SchedulerKind::Pet, 1);
    s.set_usable(PathId(0), false);
    assert!(s.send(Instant::ZERO, &pkt()).is_none());
    assert_eq!(s.stats().no_path, 1);
}

/// With every path out of use, a packet goes on the path last heard from
/// rather than being dropped (`Sender::blind_path`); a path never heard
/// from takes none, and once a path is usable again the scheduler places
/// packets as before.
#[test]
fn with_every_path_down_the_last_heard_from_takes_the_packet() {
    let mut s = sender(SchedulerKind::Pet, 3);
    let t0 = Instant::ZERO;
    let on = |s: &mut Sender, p: u8, t: u64| {
        let now = Instant::from_millis(t);
        let SendOutcome::Transmit(tx) =
            s.send_rate_probe(now, PathId(p), PairRole::None, &pkt(), || ())
        else {
            panic!("not sent on path {p}");
        };
        let seq = tx.seq;
        let fb = [FeedbackEntry {
            seq: seq as u32,
            rx_time_ns: now.as_nanos() + 20_000_000,
        }];
        s.handle_feedback_on(now + Duration::from_millis(40), PathId(p), fb);
    };
    on(&mut s, 0, 0);
    on(&mut s, 1, 100);
    for i in 0..3 {
        s.set_usable(PathId(i), false);
    }
    let later = t0 + Duration::from_secs(1);
    let tx = s.send(later, &pkt()).expect("sent blind");
    assert_eq!(tx.path, PathId(1), "the path heard from last");
    assert_eq!((s.stats().sent_blind, s.stats().no_path), (1, 0));
    // A path never heard from, alone out of use, takes nothing.
    let mut never = sender(SchedulerKind::Pet, 1);
    never.set_usable(PathId(0), false);
    assert!(never.send(later, &pkt()).is_none());
    assert_eq!(never.stats().sent_blind, 0);
    // Path 0 back: no more blind sends.
    s.set_usable(PathId(0), true);
    let tx = s.send(later, &pkt()).expect("scheduled");
    assert_eq!(tx.path, PathId(0));
    assert_eq!(s.stats().sent_blind, 1);
}

#[test]
fn pacing_bound_covers_a_far_path_that_is_not_paced() {
    let cfg = SenderConfig {
        pacing: true,
        ..Default::default()
    };
    let mut s = Sender::new(cfg, SchedulerKind::Pet.build());
    s.add_path(PathId(0), PathParams::default());
    s.add_path(PathId(1), PathParams::default());
    // Path 0: a full-size pair, 20 ms one way. Path 1: only small packets
    // (its estimate comes from pings), 100 ms one way.
    let [a, b] = send_pair_unpaced(&mut s, Instant::ZERO);
    assert_eq!(a.path, PathId(0));
    let small = PacketInfo {
        len: 100,
        retransmit: false,
        stream: false,
    };
    let (c, d) = loop {
        let c = s.send(Instant::ZERO, &small).unwrap();
        let d = s.send(Instant::ZERO, &small).unwrap();
        if c.path == PathId(1) && d.path == PathId(1) {
            break (c, d);
        }
    };
    let at = |t: &Transmit, ms: u64| FeedbackEntry {
        seq: t.seq as u32,
        rx_time_ns: ms * 1_000_000 + (t.seq % 2) * 100_000,
    };
    s.handle_feedback(
        Instant::from_millis(300),
        [at(&a, 20), at(&b, 21), at(&c, 100), at(&d, 101)],
    );
    assert!(s.paths()[1].bw.estimate_bps().is_some());
    assert!(s.pacing_rate(1).is_none(), "small pairs do not pace a path");
    assert!(s.pacing_rate(0).is_some());
    // Twice the 80 ms the far path is behind: EDPF can queue enough on the
    // near path to reach it.
    let bound = s.pacing_bound_now(Instant::from_millis(300));
    assert!(bound >= Duration::from_millis(150), "{bound:?}");
}

#[test]
fn a_packet_in_the_pacing_queue_does_not_time_out() {
    let mut s = paced_sender();
    let now = Instant::from_millis(50);
    let sent = (0..10)
        .filter(|_| matches!(s.send_paced(now, &pkt(), || ()), SendOutcome::Transmit(_)))
        .count();
    assert_eq!(sent, 2);
    // Long past any timeout, nothing released from the queue yet: only
    // the two packets that left are lost.
    let later = now + Duration::from_secs(5);
    s.handle_timeout(later);
    assert_eq!(s.stats().lost_timeout, 2, "{:?}", s.stats());
    // The queued ones time out from when they leave.
    let mut left = 0;
    while s.poll_transmit(later).map(|(t, ())| t).is_some() {
        left += 1;
    }
    assert_eq!(left, 8);
    s.handle_timeout(later + Duration::from_millis(100));
    assert_eq!(s.stats().lost_timeout, 2);
    s.handle_timeout(later + Duration::from_secs(5));
    assert_eq!(s.stats().lost_timeout, 10);
}

/// The sender owns each queued packet's payload: the payload is asked
/// for only when the packet is queued, comes back with its own header
/// when released, and is dropped with its path.
#[test]
fn queued_payloads_come_back_with_their_packets() {
    let cfg = SenderConfig {
        pacing: true,
        ..Default::default()
    };
    let mut s: Sender<String> = Sender::new(cfg, SchedulerKind::Pet.build());
    s.add_path(PathId(0), PathParams::default());
    let t0 = Instant::from_millis(10);
    // A full-size first packet of a pair is held for its partner.
    let mut asked = 0;
    let out = s.send_paced(t0, &pkt(), || {
        asked += 1;
        "first".to_string()
    });
    assert!(matches!(out, SendOutcome::Queued { seq: 0, .. }));
    assert_eq!(asked, 1);
    assert!(matches!(
        s.send_paced(t0, &pkt(), || "second".to_string()),
        SendOutcome::Queued { seq: 1, .. }
    ));
    let (a, pa) = s.poll_transmit(t0).expect("first released");
    let (b, pb) = s.poll_transmit(t0).expect("second right behind");
    assert_eq!((a.seq, pa.as_str()), (0, "first"));
    assert_eq!((b.seq, pb.as_str()), (1, "second"));
    assert_eq!(s.paced_len(), 0);

    // Removing the path drops what waits in its queue (a new pair's
    // first packet, held for its partner).
    let t1 = t0 + Duration::from_secs(1);
    s.add_path(PathId(1), PathParams::default());
    s.remove_path(t0, PathId(0));
    assert!(matches!(
        s.send_paced(t1, &pkt(), || "held".to_string()),
        SendOutcome::Queued { .. }
    ));
    assert_eq!(s.paced_len(), 1);
    s.remove_path(t1, PathId(1));
    assert_eq!(s.paced_len(), 0);
    assert!(s.poll_transmit(t1 + Duration::from_secs(1)).is_none());

    // With a path again: a small packet on an unpaced path with an
    // empty queue leaves at once: its payload is never asked for.
    let small = PacketInfo {
        len: 100,
        retransmit: false,
        stream: false,
    };
    s.add_path(PathId(2), PathParams::default());
    let out = s.send_paced(t1, &small, || {
        panic!("payload asked for a packet sent at once")
    });
    assert!(matches!(out, SendOutcome::Transmit(_)));
}

/// On a paced path, a pair that arrives in a burst the path released after
/// holding it (a radio link that retransmitted the packet ahead and
/// delivers in sequence) measures nothing: its first packet came
/// microseconds after the path's previous one, which the pacer sent two
/// service times earlier. Nor does a pair whose first packet was the late
/// one, its partner right behind it. The same pair arriving at the pace it
/// left counts.
#[test]
fn a_pair_released_in_a_burst_after_a_hold_measures_nothing() {
    // (arrivals of the second pair, counted): as paced; right behind the
    // first pair; the second pair's first packet itself 8 ms late and its
    // partner right behind it.
    for (second, more) in [
        ([102_400, 103_600], 2),
        ([101_202, 101_204], 1),
        ([109_600, 109_602], 1),
    ] {
        let burst = more == 1;
        let mut s = paced_sender();
        let before = s.stats().pair_samples;
        let now = Instant::from_millis(50);
        let mut sent = Vec::new();
        for _ in 0..4 {
            if let SendOutcome::Transmit(t) = s.send_paced(now, &pkt(), || ()) {
                sent.push(t);
            }
        }
        while let Some(t) = s.poll_timeout().filter(|_| s.paced_len() > 0) {
            while let Some((tx, ())) = s.poll_transmit(t) {
                sent.push(tx);
            }
        }
        assert_eq!(sent.len(), 4);
        assert!(sent[2].header.flags.has(DataFlags::PAIR_FIRST));
        // The first pair 1.2 ms apart (10 Mbit/s); the second either
        // as paced (2.4 ms on) or let go right behind the first.
        let rx_us = [100_000, 101_200, second[0], second[1]];
        s.handle_feedback(
            Instant::from_millis(150),
            sent.iter().zip(rx_us).map(|(t, us)| FeedbackEntry {
                seq: t.seq as u32,
                rx_time_ns: us * 1000,
            }),
        );
        assert_eq!(s.stats().pair_samples, before + more, "burst {burst}");
        let bw = s.paths()[0].bw.estimate_bps().unwrap();
        assert!((bw - 10e6).abs() < 0.05 * 10e6, "burst {burst}: {bw}");
    }
}
