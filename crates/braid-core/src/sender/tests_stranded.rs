//! Unit tests of the rescue of packets stranded behind a path whose rate
//! fell (`sender/stranded.rs`).

use super::tests::{paced_arq_config, pkt};
use super::*;
use crate::sched::RoundRobin;

const SENT_AT: Instant = Instant::from_millis(100);

/// Two paths, round robin, paced with repair on: `n` packets go out
/// alternately (path 0 first) before either path has a rate, the first
/// on each path is reported after a 50 ms round trip, and both paths are
/// then measured at 20 Mbit/s.
fn bond(n: u32) -> Sender {
    let mut s = Sender::new(paced_arq_config(), Box::new(RoundRobin::default()));
    for i in 0..2 {
        s.add_path(PathId(i), PathParams::default());
    }
    for _ in 0..n {
        s.send(SENT_AT, &pkt()).expect("unpaced until measured");
    }
    for seq in 0..2 {
        report(&mut s, Instant::from_millis(150), seq);
    }
    for i in 0..2 {
        set_rate(&mut s, i, 20e6);
    }
    s
}

/// Fills path `path`'s pair samples with `bps`, so its pacing rate is
/// that, and gives it a bandwidth estimate (so its pacer books it).
pub(super) fn set_rate(s: &mut Sender, path: u8, bps: f64) {
    let len = pkt().len;
    let p = s.paths.iter_mut().find(|p| p.id == PathId(path)).unwrap();
    p.bw.on_pair(len, crate::time::tx_time(len, bps));
    let ps = &mut s.per_path[slot(PathId(path))];
    ps.pace_ok = true;
    for _ in 0..pacing::PACING_SAMPLES {
        ps.pair_samples.push(bps, Instant::ZERO);
    }
}

/// A report of packet `seq` on its path, received 25 ms after it left.
fn report(s: &mut Sender, at: Instant, seq: u32) {
    report_rx(s, at, seq, 125);
}

/// At its rate, a path drains what it has in flight within its round
/// trip: nothing is taken off it.
#[test]
fn a_path_that_keeps_its_rate_strands_nothing() {
    let mut s = bond(400);
    // Packet 2, on path 0: every report runs the rescue.
    report(&mut s, Instant::from_millis(150), 2);
    assert_eq!(s.stats().stranded, 0);
    assert!(!s.has_repairs());
}

/// Path 1 falls from 20 to 1 Mbit/s with 200 packets (300 kB, 2.4 s at
/// the new rate) in flight. Those that would arrive more than the margin
/// past its round trip are taken off it without a loss charged, as many
/// as path 0 can carry within its pacing bound, and repaired there (none
/// given up); path 1's pacer is booked until its queue has drained, so
/// that new packets do not queue behind it.
#[test]
fn a_rate_fall_moves_the_stranded_packets_to_the_other_path() {
    let mut s = bond(400);
    let now = Instant::from_millis(150);
    set_rate(&mut s, 1, 1e6);
    let loss_before = s.path(PathId(1)).unwrap().loss.rate();
    let bound = s.pacing_bound_now(now).as_secs_f64();
    report(&mut s, now, 2);
    let stranded = s.stats().stranded;
    // Path 0 takes a copy every 0.6 ms (20 Mbit/s) up to the bound.
    // (The bound before the report: the report's own sample moves it by
    // about a packet.)
    let room = (bound / crate::time::tx_time(pkt().len, 20e6).as_secs_f64()) as u64 + 2;
    assert!(
        (10..=room).contains(&stranded),
        "{stranded} stranded, room {room}"
    );
    assert_eq!(s.stats().lost_timeout + s.stats().lost_fifo, 0);
    assert_eq!(s.path(PathId(1)).unwrap().loss.rate(), loss_before);
    let mut moved = 0;
    while let Some(seq) = s.next_repair() {
        assert_eq!(s.sent_path(seq), Some(PathId(1)));
        let copy = s.resend(now, seq, || ()).expect("path 0 takes it");
        assert_eq!(copy.path(), PathId(0), "never back on the stranded path");
        moved += 1;
    }
    assert_eq!(moved, stranded);
    assert_eq!(s.stats().repairs_abandoned, 0);
    // Path 1's pacer is booked until all that left on it has drained at
    // 1 Mbit/s: its 199 packets, stranded or not, less the round trip's
    // worth (50 ms) already past the bottleneck.
    let free = s.per_path[slot(PathId(1))].pacer_free.expect("booked");
    let booked = free.saturating_since(now);
    let expected = crate::time::tx_time(pkt().len * 199, 1e6) - Duration::from_millis(50);
    assert!(booked >= expected, "{booked:?} < {expected:?}");
    // Meanwhile the pacing bound reaches as far as path 1's drain, so the
    // next report gives path 0 more copies, up to that bound, and the one
    // after that none.
    assert!(s.pacing_bound_now(now).as_secs_f64() > bound);
    report(&mut s, now, 4);
    let more = s.stats().stranded;
    assert!(more > stranded, "{more} after {stranded}");
    while let Some(seq) = s.next_repair() {
        assert!(s.resend(now, seq, || ()).is_some());
    }
    assert_eq!(s.stats().repairs_abandoned, 0);
    report(&mut s, now, 6);
    assert_eq!(s.stats().stranded, more);
}

/// A stranded packet whose copy no other path can carry (here the other
/// path went down before the copy left) goes back in flight on its own
/// path, where its original still is: giving it up would tell the peer to
/// stop waiting for a packet that is only late.
#[test]
fn a_stranded_packet_no_other_path_can_take_goes_back_in_flight() {
    let mut s = bond(400);
    let now = Instant::from_millis(150);
    set_rate(&mut s, 1, 1e6);
    report(&mut s, now, 2);
    let stranded = s.stats().stranded;
    assert!(stranded > 0);
    let before = s.path(PathId(1)).unwrap().in_flight_packets;
    s.set_usable(PathId(0), false);
    let mut back = 0;
    while let Some(seq) = s.next_repair() {
        assert!(s.resend(now, seq, || ()).is_none());
        assert_eq!(s.sent_path(seq), Some(PathId(1)));
        assert!(!s.is_acked(seq));
        back += 1;
    }
    assert_eq!(back, stranded);
    assert_eq!(s.stats().unstranded, stranded);
    assert_eq!(s.stats().repairs_abandoned, 0);
    assert!(s.take_unrepaired().is_empty(), "nothing announced lost");
    let p1 = s.path(PathId(1)).unwrap();
    assert_eq!(
        u64::from(p1.in_flight_packets),
        u64::from(before) + stranded
    );
    // Its report later acknowledges it as any packet on its path.
    let seq = s.per_path[slot(PathId(1))].unacked.back().copied().unwrap();
    report(&mut s, now + Duration::from_millis(900), seq as u32);
    assert!(s.is_acked(seq));
}

/// A report of packet `seq` on its path at `at` (whole milliseconds),
/// received at `rx_ms` (receiver clock).
fn report_rx(s: &mut Sender, at: Instant, seq: u32, rx_ms: u64) {
    let path = s.sent_path(u64::from(seq)).expect("sent");
    super::tests_quiet::report(s, at.as_nanos() / 1_000_000, path.0, u64::from(seq), rx_ms);
}

/// Path 1 falls from 20 to 1 Mbit/s, and its pair samples still say 20:
/// its packets, sent together, arrive 12 ms apart. Once nine arrivals in
/// a row are spaced so (`sender/spacing.rs`), the path is paced at the
/// new rate and its stranded packets are moved, long before 16 pair
/// samples at the new rate would move the median.
#[test]
fn a_fall_seen_in_the_spacing_of_arrivals_paces_the_path_down_and_strands_its_packets() {
    let mut s = bond(400);
    let paced = |s: &Sender| s.path_pacing_rate(PathId(1)).expect("paced");
    assert!(paced(&s) > 19e6, "{}", paced(&s));
    // Packet 1 arrived at 125 ms; 3, 5, ... arrive 12 ms apart.
    let mut seq = 3u32;
    for k in 1..=8u64 {
        report_rx(
            &mut s,
            Instant::from_millis(150 + 12 * k),
            seq,
            125 + 12 * k,
        );
        seq += 2;
    }
    assert!(
        paced(&s) > 19e6,
        "eight spaced pairs of nine: {}",
        paced(&s)
    );
    assert_eq!(s.stats().stranded, 0);
    report_rx(
        &mut s,
        Instant::from_millis(150 + 12 * 9),
        seq,
        125 + 12 * 9,
    );
    let r = paced(&s);
    assert!((0.9e6..=1.0e6).contains(&r), "paced at {r}");
    assert!(s.stats().stranded > 10, "{}", s.stats().stranded);
    while let Some(q) = s.next_repair() {
        let copy = s
            .resend(Instant::from_millis(258), q, || ())
            .expect("taken");
        assert_eq!(copy.path(), PathId(0));
    }
}

/// The spacing of a path's arrivals holds its pacer down also when the
/// path has nothing in flight (PET left it after the fall, so no pairs
/// moved its median), until arrivals that keep up outnumber the
/// stretched ones.
#[test]
fn a_fall_seen_in_the_spacing_paces_an_empty_path_until_arrivals_keep_up() {
    let mut s = Sender::new(paced_arq_config(), Box::new(RoundRobin::default()));
    s.add_path(PathId(1), PathParams::default());
    set_rate(&mut s, 1, 20e6);
    let paced = |s: &Sender| s.path_pacing_rate(PathId(1)).expect("paced");
    assert!(paced(&s) > 19e6, "{}", paced(&s));
    let len = pkt().len;
    let arrive = |s: &mut Sender, seq: u64, rx_gap_ms: u64| {
        let (sent, rx) = (
            Instant::from_millis(seq),
            seq * 1_000_000 + seq * rx_gap_ms * 1_000_000,
        );
        s.per_path[slot(PathId(1))]
            .spacing
            .on_arrival(seq, sent, rx, len);
    };
    // Sent 1 ms apart, arriving 13 ms apart: about 1 Mbit/s.
    for seq in 0..=9 {
        arrive(&mut s, seq, 12);
    }
    assert_eq!(s.paths[0].in_flight_bytes, 0);
    let r = paced(&s);
    assert!((0.9e6..=1.0e6).contains(&r), "paced at {r}");
    // Five arrivals spaced as they left: the median keeps up again.
    let last = 9 * 13;
    for seq in 10..=14u64 {
        let rx = (last + (seq - 9)) * 1_000_000;
        s.per_path[slot(PathId(1))]
            .spacing
            .on_arrival(seq, Instant::from_millis(seq), rx, len);
    }
    assert!(paced(&s) > 19e6, "{}", paced(&s));
}

/// A path that is not paced (its pair samples were of small packets, as
/// on a server's downlink that carries only the inner TCP's ACKs) but
/// has a bandwidth estimate takes the copies of what is stranded on a
/// path whose rate fell, sent at once: paced paths alone, none had
/// anywhere to go.
#[test]
fn an_unpaced_path_with_a_bandwidth_estimate_takes_stranded_copies() {
    let mut s = bond(400);
    let now = Instant::from_millis(150);
    s.per_path[slot(PathId(0))].pace_ok = false;
    assert!(s.pacing_rate(slot(PathId(0))).is_none());
    assert!(s.path(PathId(0)).unwrap().bw.estimate_bps().is_some());
    set_rate(&mut s, 1, 1e6);
    report(&mut s, now, 2);
    let stranded = s.stats().stranded;
    assert!(stranded >= 10, "{stranded} stranded");
    let mut moved = 0;
    while let Some(seq) = s.next_repair() {
        match s.resend(now, seq, || ()) {
            Some(Repair::Sent(tx)) => assert_eq!(tx.path, PathId(0)),
            other => panic!("copy of {seq} not sent on path 0: {other:?}"),
        }
        moved += 1;
    }
    assert_eq!(moved, stranded);
    assert_eq!(s.stats().repairs_abandoned + s.stats().unstranded, 0);
}
