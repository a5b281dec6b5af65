//! Unit tests of the move of packets waiting in a pacing queue to a path
//! that came back (`sender/requeue.rs`).

use super::tests::{paced_arq_config, pkt};
use super::tests_stranded::set_rate;
use super::*;
use crate::sched::RoundRobin;

/// A report of packet `seq` on `path` at `at` (whole milliseconds),
/// received at `rx_ms`.
fn report(s: &mut Sender, at: Instant, path: u8, seq: u64, rx_ms: u64) {
    super::tests_quiet::report(s, at.as_nanos() / 1_000_000, path, seq, rx_ms);
}

/// Two paths 25 ms away, round robin, paced with repair on and a pacing
/// bound of at least 500 ms: path 0 at 1 Mbit/s (12 ms a packet), path 1
/// at 20 Mbit/s. Each has carried one packet, reported.
fn bond() -> Sender {
    let mut cfg = paced_arq_config();
    cfg.pacing_min_backlog = Duration::from_millis(500);
    let mut s = Sender::new(cfg, Box::new(RoundRobin::default()));
    for i in 0..2 {
        s.add_path(PathId(i), PathParams::default());
    }
    let t = Instant::from_millis(100);
    for _ in 0..2 {
        s.send(t, &pkt()).expect("unpaced until measured");
    }
    for seq in 0..2 {
        report(&mut s, Instant::from_millis(150), seq as u8, seq, 125);
    }
    set_rate(&mut s, 0, 1e6);
    set_rate(&mut s, 1, 20e6);
    s
}

/// `n` packets sent at `t`: their numbers and paths.
fn send(s: &mut Sender, t: Instant, n: usize) -> Vec<(u64, PathId)> {
    (0..n)
        .map(|_| match s.send_paced(t, &pkt(), || ()) {
            SendOutcome::Queued { seq, path } => (seq, path),
            SendOutcome::Transmit(tx) => (tx.seq, tx.path),
            o => panic!("{o:?}"),
        })
        .collect()
}

/// Numbers waiting in path `path`'s pacing queue, in release order.
fn queued(s: &Sender, path: u8) -> Vec<u64> {
    s.per_path[slot(PathId(path))]
        .paced
        .iter()
        .map(|q| q.tx.seq)
        .collect()
}

/// While path 1 is out of use every packet queues on path 0 (12 ms
/// apart). When path 1 comes back, the next report moves those that
/// would arrive later than on path 1 by the margin: the newest, as
/// copies queued on path 1 (never back on path 0), without a loss
/// charged to path 0; the rest leave path 0 as they would have. Packets
/// sent after path 1 came back are left where PET put them.
#[test]
fn packets_queued_while_a_path_was_out_move_to_it_when_it_comes_back() {
    let mut s = bond();
    s.set_usable(PathId(1), false);
    let t = Instant::from_millis(200);
    let out = send(&mut s, t, 30);
    assert!(out.iter().all(|&(_, p)| p == PathId(0)), "{out:?}");
    let waiting = queued(&s, 0);
    assert!(waiting.len() >= 25, "{waiting:?}");
    let loss_before = s.path(PathId(0)).unwrap().loss.rate();
    let in_flight = |s: &Sender, p: u8| s.path(PathId(p)).unwrap().in_flight_packets;
    let total_before = in_flight(&s, 0) + in_flight(&s, 1);

    // Out of use, path 1 takes nothing.
    report(&mut s, t, 0, 0, 125);
    assert_eq!(s.stats().requeued, 0);

    s.set_usable(PathId(1), true);
    let now = Instant::from_millis(210);
    report(&mut s, now, 0, 0, 125);
    let moved = s.stats().requeued as usize;
    assert!(moved > 10, "{moved} moved");
    let left = queued(&s, 0);
    assert_eq!(left.len() + moved, waiting.len());
    // The newest moved, the oldest stayed, in order.
    assert_eq!(left[..], waiting[..left.len()]);
    // What stays on path 0 arrives no later than the margin after a copy
    // on path 1 would; what moved would have arrived later.
    let last = s.per_path[slot(PathId(0))].paced.back().unwrap().release_at;
    assert!(
        last.saturating_since(now) <= Duration::from_millis(120),
        "{last:?}"
    );
    assert_eq!(s.path(PathId(0)).unwrap().loss.rate(), loss_before);
    assert_eq!(in_flight(&s, 0) + in_flight(&s, 1), total_before);
    // On path 1 they are copies, oldest first, and never back on path 0.
    let mut copies = Vec::new();
    let mut at = now;
    while copies.len() < moved {
        at += Duration::from_millis(1);
        while let Some((tx, ())) = s.poll_transmit(at) {
            if tx.path == PathId(1) {
                assert!(tx.header.flags.has(DataFlags::REPAIR), "{tx:?}");
                copies.push(tx.seq);
            }
        }
        assert!(at < now + Duration::from_millis(100), "{copies:?}");
    }
    assert_eq!(copies[..], waiting[left.len()..]);
    for &seq in &copies {
        assert_eq!(s.sent_path(seq), Some(PathId(1)));
    }

    // Sent after path 1 came back: PET's choice stands.
    let later = send(&mut s, at, 10);
    let on_0: Vec<u64> = later
        .iter()
        .filter(|&&(_, p)| p == PathId(0))
        .map(|&(q, _)| q)
        .collect();
    assert!(!on_0.is_empty());
    let before = s.stats().requeued;
    report(&mut s, at, 1, 1, 125);
    assert_eq!(s.stats().requeued, before);
}

/// A long queue on a path that no other path was out for is PET's own
/// choice, and stays.
#[test]
fn a_long_queue_stays_when_no_path_came_back() {
    let mut s = bond();
    let t = Instant::from_millis(200);
    let out = send(&mut s, t, 30);
    assert!(out.iter().any(|&(_, p)| p == PathId(0)));
    let waiting = queued(&s, 0);
    report(&mut s, t, 0, 0, 125);
    assert_eq!(s.stats().requeued, 0);
    assert_eq!(queued(&s, 0), waiting);
}
