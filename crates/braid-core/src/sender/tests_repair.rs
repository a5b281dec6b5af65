//! Unit tests of the sender's repair of path losses (`sender::repair`):
//! NACKed packets resent on another path, copies held to the pacing bound,
//! and the books kept under any loss pattern.

use super::tests::{paced_arq_config, paced_sender_with, pkt};
use super::*;
use crate::repair::RepairMode;
use crate::sched::RoundRobin;
use crate::wire::FeedbackEntry;
use crate::wire::NackRange;
use proptest::prelude::*;

fn arq_sender() -> Sender {
    arq_sender_on(2)
}

/// Repair on (ARQ), round robin over `paths` paths, unpaced.
pub(super) fn arq_sender_on(paths: u8) -> Sender {
    let mut cfg = SenderConfig::default();
    cfg.repair.mode = RepairMode::Arq;
    cfg.max_in_flight = 256;
    let mut s = Sender::new(cfg, Box::new(RoundRobin::default()));
    for i in 0..paths {
        s.add_path(PathId(i), PathParams::default());
    }
    s
}

#[test]
fn a_nacked_packet_is_resent_on_the_other_path() {
    let mut s = arq_sender();
    let t0 = Instant::from_millis(0);
    let sent: Vec<Transmit> = (0..6).map(|_| s.send(t0, &pkt()).unwrap()).collect();
    // Path 0 carried 0, 2, 4; the receiver saw 0 and 4: 2 is lost.
    assert_eq!(sent[2].path, PathId(0));
    s.handle_nack(
        Instant::from_millis(30),
        [NackRange {
            path: PathId(0),
            after: Some(0),
            upto: 2,
        }],
        [],
    );
    assert_eq!(s.stats().lost_nack, 1);
    assert_eq!(s.next_repair(), Some(2));
    let tx = s
        .resend(Instant::from_millis(30), 2, || ())
        .and_then(Repair::sent)
        .unwrap();
    assert_eq!(tx.seq, 2);
    assert!(tx.header.flags.has(DataFlags::REPAIR));
    assert_eq!(tx.header.prev_delta, 0);
    assert_eq!(s.next_repair(), None);
    // The same NACK again (repeated on a second path) changes nothing.
    s.handle_nack(
        Instant::from_millis(31),
        [NackRange {
            path: PathId(0),
            after: Some(0),
            upto: 2,
        }],
        [],
    );
    assert_eq!(s.next_repair(), None);
    assert_eq!(s.stats().repairs_sent, 1);
    // The copy is acknowledged on the path it went on.
    s.handle_feedback_on(
        Instant::from_millis(60),
        tx.path,
        [FeedbackEntry {
            seq: 2,
            rx_time_ns: 55_000_000,
        }],
    );
    assert!(s.is_acked(2));
}

/// A loss that comes with a rising queue is taken for congestion and
/// counted, and repaired all the same: while the inner TCP ramps up every
/// path's queue rises, and a random loss left unrepaired then cut the
/// inner CUBIC's window far below the paths' (README, "The worst runs,
/// reproduced by seed").
#[test]
fn a_loss_taken_for_congestion_is_repaired_and_counted() {
    let mut s = arq_sender();
    // Path 0's packets (even numbers, round robin) meet a queue that grows
    // by 2 ms a packet; every one is reported but number 40.
    let mut lost = None;
    for k in 0..42u64 {
        let at = Instant::from_millis(k);
        let tx = s.send(at, &pkt()).unwrap();
        if tx.path != PathId(0) {
            continue;
        }
        if tx.seq == 40 {
            lost = Some(tx.seq);
            continue;
        }
        let owd_ms = 20 + 2 * k / 2;
        s.handle_feedback_on(
            Instant::from_millis(k + owd_ms + 20),
            tx.path,
            [FeedbackEntry {
                seq: tx.seq as u32,
                rx_time_ns: (k + owd_ms) * 1_000_000,
            }],
        );
    }
    let lost = lost.expect("number 40 went on path 0");
    s.handle_nack(
        Instant::from_millis(120),
        [NackRange {
            path: PathId(0),
            after: Some(38),
            upto: lost as u32,
        }],
        [],
    );
    assert_eq!(s.stats().losses_congestion, 1, "{:?}", s.stats());
    assert_eq!(s.next_repair(), Some(lost));
}

/// A repair copy is charged to its path's pacer; one whose path is
/// booked further ahead than the pacing bound is given up and
/// announced (a SKIP), not sent over the path's rate.
#[test]
fn a_repair_is_given_up_when_its_path_is_booked_past_the_pacing_bound() {
    let mut s = paced_sender_with(paced_arq_config());
    let t = Instant::from_millis(60);
    let seqs: Vec<u64> = (0..4)
        .map(|_| match s.send_paced(t, &pkt(), || ()) {
            SendOutcome::Queued { seq, .. } => seq,
            SendOutcome::Transmit(tx) => tx.seq,
            o => panic!("{o:?}"),
        })
        .collect();
    while s.poll_transmit(Instant::from_millis(100)).is_some() {}
    let nack = |s: &mut Sender, at: u64, lost: u64| {
        s.handle_nack(
            Instant::from_millis(at),
            [NackRange {
                path: PathId(0),
                after: Some(lost as u32 - 1),
                upto: lost as u32,
            }],
            [],
        )
    };
    // Pacer free: the copy goes.
    nack(&mut s, 150, seqs[1]);
    assert_eq!(s.next_repair(), Some(seqs[1]));
    assert!(s
        .resend(Instant::from_millis(150), seqs[1], || ())
        .is_some());
    // Booked 10 s ahead (far past the bound): given up and announced.
    s.charge_pacer(Instant::from_millis(150), PathId(0), 10_000_000);
    nack(&mut s, 151, seqs[2]);
    assert_eq!(s.next_repair(), Some(seqs[2]));
    assert!(s
        .resend(Instant::from_millis(151), seqs[2], || ())
        .is_none());
    assert_eq!(s.take_unrepaired(), vec![seqs[2]]);
    assert_eq!(s.stats().repairs_sent, 1);
    assert_eq!(s.stats().repairs_abandoned, 1);
}

#[derive(Clone, Debug)]
enum Op {
    Send,
    Ack { path: u8, pick: u16 },
    Nack { path: u8, pick: u16, len: u8 },
    Tick { ms: u16 },
    Repair,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Send),
        3 => (0u8..2, any::<u16>()).prop_map(|(path, pick)| Op::Ack { path, pick }),
        1 => (0u8..2, any::<u16>(), any::<u8>()).prop_map(|(path, pick, len)| Op::Nack { path, pick, len }),
        1 => (0u16..3000).prop_map(|ms| Op::Tick { ms }),
        2 => Just(Op::Repair),
    ]
}

proptest! {
    /// Under any pattern of reports, NACKs, timeouts and repairs the
    /// sender never panics, never repairs a packet it was told
    /// arrived, and its per-path in-flight counts match its records.
    #[test]
    fn any_loss_pattern_keeps_the_books(ops in proptest::collection::vec(op(), 1..400)) {
        let mut s = arq_sender();
        let mut now = Instant::ZERO;
        for o in ops {
            match o {
                Op::Send => { s.send(now, &pkt()); }
                Op::Ack { path, pick } => {
                    let n = s.next_seq();
                    if n > 0 {
                        let seq = pick as u64 % n;
                        s.handle_feedback_on(now, PathId(path), [FeedbackEntry { seq: seq as u32, rx_time_ns: now.as_nanos() }]);
                    }
                }
                Op::Nack { path, pick, len } => {
                    let n = s.next_seq();
                    if n > 0 {
                        let upto = pick as u64 % n;
                        let after = upto.checked_sub(len as u64 + 1);
                        s.handle_nack(now, [NackRange { path: PathId(path), after: after.map(|a| a as u32), upto: upto as u32 }], []);
                    }
                }
                Op::Tick { ms } => {
                    now += Duration::from_millis(ms as u64);
                    s.handle_timeout(now);
                }
                Op::Repair => {
                    while let Some(seq) = s.next_repair() {
                        prop_assert!(!s.is_acked(seq), "{seq} repaired after its report");
                        s.resend(now, seq, || ());
                    }
                }
            }
            prop_assert!(s.repair_queue.len() <= 1 << 14);
            prop_assert!(s.unrepaired.len() <= crate::wire::Control::SKIP_MAX_ENTRIES);
            for p in s.paths() {
                let in_flight = s.ring.iter().flatten().filter(|r| r.path == p.id && r.fate == Fate::InFlight).count();
                prop_assert_eq!(p.in_flight_packets as usize, in_flight, "path {:?}", p.id);
            }
        }
    }
}

/// Repair copies leave at once only while their path's pacer is booked
/// within its catch-up allowance (a quarter of its round trip); the rest
/// wait in the pacing queue ahead of the data queued there, leave one
/// service time apart, and push the data back by as much: a burst of
/// copies no longer lands on a thin path's bottleneck all at once.
#[test]
fn a_burst_of_repairs_is_paced_ahead_of_the_queued_data() {
    let mut cfg = paced_arq_config();
    cfg.max_in_flight = 256;
    let mut s = paced_sender_with(cfg);
    let sent: Vec<u64> = (0..40)
        .map(
            |_| match s.send_paced(Instant::from_millis(60), &pkt(), || ()) {
                SendOutcome::Queued { seq, .. } => seq,
                SendOutcome::Transmit(tx) => tx.seq,
                o => panic!("{o:?}"),
            },
        )
        .collect();
    for ms in 60..300 {
        while s.poll_transmit(Instant::from_millis(ms)).is_some() {}
    }
    assert_eq!(s.paced_len(), 0);
    // New data waiting in the pacing queue when the losses are found.
    let t = Instant::from_millis(300);
    let data: Vec<u64> = (0..4)
        .filter_map(|_| match s.send_paced(t, &pkt(), || ()) {
            SendOutcome::Queued { seq, .. } => Some(seq),
            _ => None,
        })
        .collect();
    let data: Vec<(u64, Instant)> = data.into_iter().map(|q| (q, release_of(&s, q))).collect();
    assert!(!data.is_empty(), "data waits in the pacing queue");
    let lost: Vec<u64> = sent.iter().copied().skip(2).step_by(2).take(16).collect();
    s.handle_nack(
        t,
        lost.iter().map(|&l| NackRange {
            path: PathId(0),
            after: Some(l as u32 - 1),
            upto: l as u32,
        }),
        [],
    );
    let mut now_sent = Vec::new();
    let mut queued = Vec::new();
    while let Some(seq) = s.next_repair() {
        match s.resend(t, seq, || ()).expect("repaired") {
            Repair::Sent(tx) => now_sent.push(tx.seq),
            Repair::Queued { at, .. } => queued.push((seq, at)),
        }
    }
    assert_eq!(now_sent.len() + queued.len(), lost.len());
    // A 10 Mbit/s path with a 50 ms round trip: 12.5 ms of allowance,
    // about ten 1500-byte copies at once.
    assert!((5..=12).contains(&now_sent.len()), "{now_sent:?}");
    assert!(!queued.is_empty());
    assert_eq!(s.stats().repairs_paced, queued.len() as u64);
    let gap = crate::time::tx_time(pkt().len, 10e6 * 0.9);
    for w in queued.windows(2) {
        let d = w[1].1.saturating_since(w[0].1);
        assert!(d <= gap * 2 && d > Duration::ZERO, "{d:?}");
    }
    // The data moved back by the copies queued ahead of it.
    for &(seq, before) in &data {
        assert!(release_of(&s, seq) > before, "data {seq}");
        assert!(release_of(&s, seq) > queued.last().unwrap().1);
    }
    // Released in that order: the queued copies, then the data.
    let mut order = Vec::new();
    let mut now = t;
    while order.len() < queued.len() + data.len() {
        now += Duration::from_millis(1);
        while let Some((tx, ())) = s.poll_transmit(now) {
            order.push(tx.seq);
        }
    }
    let expect: Vec<u64> = queued
        .iter()
        .map(|q| q.0)
        .chain(data.iter().map(|d| d.0))
        .collect();
    assert_eq!(order, expect);
}

/// The release time of `seq` in its pacing queue.
fn release_of(s: &Sender, seq: u64) -> Instant {
    s.per_path
        .iter()
        .flat_map(|p| p.paced.iter())
        .find(|q| q.tx.seq == seq)
        .map(|q| q.release_at)
        .expect("queued")
}

/// One path: packet 1 is given up and repaired on the path it took, and
/// its original's report comes after the repair left, with an arrival
/// time no copy sent then could have (`Sender::earlier_copy`). The
/// report is the original's: the packets sent on the path between the
/// two copies are not declared lost by the FIFO rule. A report timed as
/// the repair's arrival is read as before.
#[test]
fn a_report_earlier_than_its_repair_could_arrive_is_the_originals() {
    for (rx_ms, original) in [(12, true), (312, false)] {
        let mut s = arq_sender_on(1);
        let t0 = Instant::from_millis(0);
        for _ in 0..6 {
            s.send(t0, &pkt()).unwrap();
        }
        // Packet 0 arrived 10 ms after it left: the path's base delay.
        s.handle_feedback_on(
            Instant::from_millis(20),
            PathId(0),
            [FeedbackEntry {
                seq: 0,
                rx_time_ns: 10_000_000,
            }],
        );
        s.handle_nack(
            Instant::from_millis(30),
            [NackRange {
                path: PathId(0),
                after: Some(0),
                upto: 1,
            }],
            [],
        );
        assert_eq!(s.paths[0].loss.lost(), 1);
        assert_eq!(s.next_repair(), Some(1));
        let tx = s
            .resend(Instant::from_millis(300), 1, || ())
            .and_then(Repair::sent)
            .unwrap();
        assert_eq!(tx.path, PathId(0));
        s.handle_feedback_on(
            Instant::from_millis(320),
            PathId(0),
            [FeedbackEntry {
                seq: 1,
                rx_time_ns: rx_ms * 1_000_000,
            }],
        );
        assert!(s.is_acked(1));
        if original {
            assert_eq!(s.stats().lost_fifo, 0, "packets 2-5 declared lost");
            assert_eq!(s.paths[0].loss.lost(), 1);
            assert_eq!(s.stats().spurious_losses, 1);
        } else {
            assert_eq!(s.stats().lost_fifo, 4, "the repair's report");
            assert_eq!(s.paths[0].loss.lost(), 5);
        }
    }
}
