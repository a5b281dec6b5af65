//! Unit tests of redundant copies (`sender::redundancy`) and of holding
//! pairs on unmeasured paths without pacing.

use super::*;
use crate::sched::SchedulerKind;
use crate::wire::FeedbackEntry;

fn pkt() -> PacketInfo {
    PacketInfo {
        len: 1500,
        retransmit: false,
        stream: false,
    }
}

fn entry(seq: u64, rx_ms: u64) -> FeedbackEntry {
    FeedbackEntry {
        seq: seq as u32,
        rx_time_ns: rx_ms * 1_000_000,
    }
}

#[test]
fn copies_go_on_other_paths_and_either_report_acknowledges() {
    let mut s = Sender::new(SenderConfig::default(), SchedulerKind::RoundRobin.build());
    for i in 0..3 {
        s.add_path(PathId(i), PathParams::default());
    }
    let now = Instant::from_millis(1);
    let tx = s.send(now, &pkt()).unwrap();
    let copies = s.duplicate(now, tx.seq, 5);
    // One copy per other usable path, never on the original's.
    assert_eq!(copies.len(), 2);
    assert!(copies.iter().all(|c| c.path != tx.path && c.seq == tx.seq));
    assert!(copies
        .iter()
        .all(|c| c.header.flags.has(DataFlags::REPAIR) && c.header.prev_delta == 0));
    assert_eq!(s.stats().redundant_copies, 2);
    assert_eq!(s.stats().redundant_bytes, 3000);
    let carried: u64 = (0..3)
        .map(|i| s.path_repair_stats(PathId(i)).copy_bytes_carried)
        .sum();
    assert_eq!(carried, 3000);
    // An unusable path gets none.
    s.set_usable(copies[0].path, false);
    let tx2 = s.send(now, &pkt()).unwrap();
    let c2 = s.duplicate(now, tx2.seq, 5);
    assert!(c2
        .iter()
        .all(|c| c.path != copies[0].path && c.path != tx2.path));
    // The copy's report, on its own path, acknowledges the packet; the
    // original's later report is ignored, and the original's path sees
    // no loss.
    s.handle_feedback_on(
        Instant::from_millis(30),
        copies[1].path,
        [entry(tx.seq, 20)],
    );
    assert!(s.is_acked(tx.seq));
    assert_eq!(s.stats().feedback_other_copy, 1);
    s.handle_feedback_on(Instant::from_millis(40), tx.path, [entry(tx.seq, 25)]);
    assert_eq!(s.stats().feedback_unmatched, 1);
    s.handle_timeout(Instant::from_secs_f64(10.0));
    assert_eq!(s.path(tx.path).unwrap().loss.lost(), 0);
    // Nothing to copy once acknowledged, or for a number never sent.
    assert!(s.duplicate(now, tx.seq, 1).is_empty());
    assert!(s.duplicate(now, 999, 1).is_empty());
}

#[test]
fn unpaced_sender_holds_pairs_only_on_unmeasured_paths_when_asked() {
    // Off (the papers' open-loop PET): a pair's first packet leaves at once.
    let mut s = Sender::new(SenderConfig::default(), SchedulerKind::Pet.build());
    s.add_path(PathId(0), PathParams::default());
    assert!(matches!(
        s.send_paced(Instant::ZERO, &pkt(), || ()),
        SendOutcome::Transmit(_)
    ));
    // On: held until the partner comes, 2 ms later, then back to back.
    let cfg = SenderConfig {
        hold_unmeasured_pairs: true,
        ..Default::default()
    };
    let mut s = Sender::new(cfg, SchedulerKind::Pet.build());
    s.add_path(PathId(0), PathParams::default());
    let t0 = Instant::from_millis(10);
    assert!(matches!(
        s.send_paced(t0, &pkt(), || ()),
        SendOutcome::Queued { .. }
    ));
    let t1 = t0 + Duration::from_millis(2);
    assert_eq!(s.poll_transmit(t1).map(|(t, ())| t), None);
    assert!(matches!(
        s.send_paced(t1, &pkt(), || ()),
        SendOutcome::Queued { .. }
    ));
    let a = s.poll_transmit(t1).map(|(t, ())| t).unwrap();
    let b = s.poll_transmit(t1).map(|(t, ())| t).unwrap();
    assert_eq!((a.seq, b.seq), (0, 1));
    s.handle_feedback(t1 + Duration::from_millis(40), [entry(0, 30), entry(1, 31)]);
    assert_eq!(s.stats().pair_samples, 1, "the held pair measures the path");
    assert!(s.paths()[0].bw.estimate_bps().is_some());
    // Measured now: nothing is held any more.
    let t2 = t1 + Duration::from_millis(50);
    for _ in 0..4 {
        assert!(matches!(
            s.send_paced(t2, &pkt(), || ()),
            SendOutcome::Transmit(_)
        ));
    }
    assert_eq!(s.stats().pair_holds, 1);
}
