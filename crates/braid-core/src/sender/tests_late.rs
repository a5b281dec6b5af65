//! Unit tests of reports that come after their packet was given up
//! (`Sender::late_original`): the original's round trip still measures
//! its path, unless a copy went on the same path (Karn); then the report
//! of the last copy there does (`Record::report_here`).

use super::tests::{paced_arq_config, paced_sender_with, pkt};
use super::tests_repair::arq_sender_on;
use super::*;
use crate::wire::FeedbackEntry;

fn report(s: &mut Sender, at_ms: u64, path: u8, seq: u32, rx_ms: u64) {
    s.handle_feedback_on(
        Instant::from_millis(at_ms),
        PathId(path),
        [FeedbackEntry {
            seq,
            rx_time_ns: rx_ms * 1_000_000,
        }],
    );
}

/// Sends packets at 0 ms and reports each on its path 40 ms later, so
/// every path has a 40 ms round trip; returns how many were sent.
fn measured(s: &mut Sender, n: u32) -> u32 {
    for _ in 0..n {
        s.send(Instant::from_millis(0), &pkt()).unwrap();
    }
    for seq in 0..n {
        let path = s.record_mut(u64::from(seq)).unwrap().path.0;
        report(s, 40, path, seq, 20);
    }
    n
}

/// Sends packet `seq` at 100 ms, lets its path's timeout pass (the path's
/// delay jumped) and resends it at 500 ms; returns the repair copy.
fn given_up_and_repaired(s: &mut Sender, seq: u32) -> Transmit {
    let tx = s.send(Instant::from_millis(100), &pkt()).unwrap();
    assert_eq!(tx.seq, u64::from(seq));
    s.handle_timeout(Instant::from_millis(500));
    assert_eq!(s.stats().lost_timeout, 1);
    s.resend(Instant::from_millis(500), u64::from(seq), || ())
        .and_then(Repair::sent)
        .unwrap()
}

fn latest_rtt(s: &Sender, path: u8) -> Duration {
    s.path(PathId(path)).unwrap().rtt.latest().unwrap()
}

/// Path 0's delay jumps: its packet is given up, repaired on path 1 and
/// acknowledged there, and the original's report, 400 ms after it left,
/// is path 0's round-trip sample (once, however often it is reported).
#[test]
fn a_late_original_measures_its_path_after_its_repair_was_acked() {
    let mut s = arq_sender_on(2);
    let seq = measured(&mut s, 4);
    let t = 100;
    // Sent on path 0; its timeout (a 40 ms round trip) passes.
    let copy = given_up_and_repaired(&mut s, seq);
    assert_eq!(copy.path, PathId(1), "the repair goes on the clean path");
    // The repair, sent at 500 ms, is reported 10 ms later.
    report(&mut s, t + 410, 1, seq, t + 405);
    assert!(s.is_acked(u64::from(seq)));
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(40));
    // The original arrives on path 0, 400 ms after it left, and is
    // reported 20 ms later.
    report(&mut s, t + 420, 0, seq, t + 400);
    assert_eq!(s.stats().late_originals, 1);
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(420));
    // A repeated report adds nothing.
    report(&mut s, t + 500, 0, seq, t + 400);
    assert_eq!(s.stats().late_originals, 1);
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(420));
}

/// The same before the repair is acknowledged: the original's report is
/// the first, from its own path, and acknowledges the packet too.
#[test]
fn a_late_original_ahead_of_its_repair_measures_its_path() {
    let mut s = arq_sender_on(2);
    let seq = measured(&mut s, 4);
    let t = 100;
    let copy = given_up_and_repaired(&mut s, seq);
    assert_eq!(copy.path, PathId(1));
    report(&mut s, t + 410, 0, seq, t + 390);
    assert!(s.is_acked(u64::from(seq)));
    assert_eq!(s.stats().late_originals, 1);
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(410));
}

/// A repair on the packet's own path makes its report ambiguous (either
/// copy): Karn's rule holds and the path takes no sample.
#[test]
fn a_report_after_a_repair_on_the_same_path_is_no_sample() {
    let mut s = arq_sender_on(1);
    let seq = measured(&mut s, 2);
    let t = 100;
    let copy = given_up_and_repaired(&mut s, seq);
    assert_eq!(copy.path, PathId(0));
    report(&mut s, t + 430, 0, seq, t + 390);
    assert!(s.is_acked(u64::from(seq)));
    assert_eq!(s.stats().late_originals, 0);
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(40));
}

/// Both copies on one path arrive. Paths are FIFO, so the second report
/// is the repair's own: its round trip measures the path after all, once.
#[test]
fn the_second_of_two_copies_on_one_path_measures_it() {
    let mut s = arq_sender_on(1);
    let seq = measured(&mut s, 2);
    let t = 100;
    let copy = given_up_and_repaired(&mut s, seq);
    assert_eq!(copy.path, PathId(0));
    // The original's report: either copy's, for all the sender can tell.
    report(&mut s, t + 430, 0, seq, t + 410);
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(40));
    assert_eq!(s.stats().latest_copy_samples, 0);
    // The repair's, sent at 500 ms and reported 470 ms later.
    report(&mut s, t + 870, 0, seq, t + 850);
    assert_eq!(s.stats().latest_copy_samples, 1);
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(470));
    // A third report of two copies is no sample.
    report(&mut s, t + 900, 0, seq, t + 850);
    assert_eq!(s.stats().latest_copy_samples, 1);
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(470));
}

/// Only one of two copies on a path arrives (the original was lost): its
/// report may be either copy's, and is no sample.
#[test]
fn one_report_of_two_copies_on_one_path_is_no_sample() {
    let mut s = arq_sender_on(1);
    let seq = measured(&mut s, 2);
    let t = 100;
    given_up_and_repaired(&mut s, seq);
    report(&mut s, t + 870, 0, seq, t + 850);
    assert!(s.is_acked(u64::from(seq)));
    assert_eq!(s.stats().latest_copy_samples, 0);
    assert_eq!(latest_rtt(&s, 0), Duration::from_millis(40));
}

/// A paced original's send time is when the pacer released it, not when
/// it was queued: a late original's round trip must not count the wait
/// in the sender's own queue.
#[test]
fn a_paced_original_counts_from_when_it_left() {
    let mut s = paced_sender_with(paced_arq_config());
    let t = Instant::from_millis(60);
    let mut left = Vec::new();
    for _ in 0..8 {
        match s.send_paced(t, &pkt(), || ()) {
            SendOutcome::Transmit(tx) => left.push((tx.seq, t)),
            SendOutcome::Queued { .. } => {}
            o => panic!("{o:?}"),
        }
    }
    let mut now = t;
    while left.len() < 8 && now < Instant::from_millis(200) {
        match s.poll_transmit(now) {
            Some((tx, ())) => left.push((tx.seq, now)),
            None => now += Duration::from_micros(100),
        }
    }
    assert_eq!(left.len(), 8);
    assert!(left.last().unwrap().1 > t, "the pacer spread them");
    for (seq, at) in left {
        let r = s.record_mut(seq).unwrap();
        assert_eq!((r.first_sent_at, r.sent_at), (at, at));
    }
}
