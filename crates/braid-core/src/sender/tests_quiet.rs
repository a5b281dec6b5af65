//! Unit tests of a path that goes quiet (`sender/quiet.rs`): found within
//! its round trip plus the window while another path reports, counted
//! farther where packets and copies go, and back at its measured delay
//! once it has delivered what it held, or after its timeout.

use super::tests::{paced_arq_config, pkt};
use super::*;
use crate::sched::RoundRobin;
use crate::wire::FeedbackEntry;

pub(super) fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

/// Path `path` reports packet `seq` at `at_ms`, received at `rx_ms`.
pub(super) fn report(s: &mut Sender, at_ms: u64, path: u8, seq: u64, rx_ms: u64) {
    s.handle_feedback_on(
        ms(at_ms),
        PathId(path),
        [FeedbackEntry {
            seq: seq as u32,
            rx_time_ns: rx_ms * 1_000_000,
        }],
    );
}

/// Whether the path is counted farther for being quiet.
fn quiet(s: &Sender, path: u8) -> bool {
    s.path(PathId(path)).unwrap().quiet_delay.is_some()
}

/// Two paths, round robin, both measured at a 40 ms round trip (one
/// packet each at 0 ms, reported 20 ms after it left, at 40 ms). From 100
/// ms nine packets leave 1 ms apart, five on path 0 (100, 102, ... 108
/// ms) and four on path 1 (101 ... 107 ms). Returns path 0's and path
/// 1's packets. The tunnel's sender paces (a pacing sender's delay
/// samples move the path's base, `OwdEstimator::follow_rise`); with round
/// robin and no rate estimate nothing waits in a pacing queue here.
fn nine_sent() -> (Sender, Vec<u64>, Vec<u64>) {
    let mut s = Sender::new(paced_arq_config(), Box::new(RoundRobin::default()));
    s.add_path(PathId(0), PathParams::default());
    s.add_path(PathId(1), PathParams::default());
    for seq in 0..2 {
        let tx = s.send(ms(0), &pkt()).unwrap();
        assert_eq!(tx.seq, seq);
    }
    report(&mut s, 40, 0, 0, 20);
    report(&mut s, 40, 1, 1, 20);
    let sent: Vec<Transmit> = (0..9)
        .map(|i| s.send(ms(100 + i), &pkt()).unwrap())
        .collect();
    let on = |path: u8| -> Vec<u64> {
        sent.iter()
            .filter(|t| t.path == PathId(path))
            .map(|t| t.seq)
            .collect()
    };
    let (on_0, on_1) = (on(0), on(1));
    assert_eq!((on_0.len(), on_1.len()), (5, 4));
    (s, on_0, on_1)
}

/// [`nine_sent`], then path 0 reports its five at 160 ms and path 1
/// nothing. Returns path 1's four.
fn path_1_silent() -> (Sender, Vec<u64>) {
    let (mut s, on_0, on_1) = nine_sent();
    for &seq in &on_0 {
        report(&mut s, 160, 0, seq, 130);
    }
    (s, on_1)
}

/// Path 1's SRTT is 40 ms and its window 50 ms (RTTVAR 20 ms after one
/// sample): its first packet is overdue at 191 ms, before its timeout
/// (RTO 200 ms + 20 ms, at 321 ms), and the others 2 ms apart after it.
/// They are declared lost and queued for repair, the path counts as
/// farther by its loss timeout, and the repairs go on path 0.
#[test]
fn a_path_that_stops_reporting_goes_quiet_within_a_round_trip() {
    let (mut s, on_1) = path_1_silent();
    assert_eq!(s.poll_timeout(), Some(ms(191)));
    s.handle_timeout(ms(190));
    assert_eq!(s.stats().quiet_paths, 0);
    s.handle_timeout(ms(191));
    assert_eq!(s.stats().quiet_paths, 1);
    assert_eq!(s.stats().lost_timeout, 1);
    s.handle_timeout(ms(197));
    assert_eq!(s.stats().lost_timeout, 4);
    let extra = s.path(PathId(1)).unwrap().quiet_delay;
    assert_eq!(extra, Some(Duration::from_millis(220)));
    for &seq in &on_1 {
        assert_eq!(s.next_repair(), Some(seq));
        let copy = s.resend(ms(198), seq, || ()).and_then(Repair::sent);
        assert_eq!(copy.unwrap().path, PathId(0));
    }
}

/// The silence counts from the path's last report, and only once another
/// path reported a window after it: path 1 reports its first packet at
/// 150 ms, path 0 four of its five at 160 ms (only 10 ms later), so path
/// 1's next packet waits for its timeout; a report on path 0 at 210 ms
/// makes path 1 quiet at 150 ms plus its SRTT and window.
#[test]
fn the_silence_counts_from_the_paths_last_report() {
    let (mut s, on_0, on_1) = nine_sent();
    report(&mut s, 150, 1, on_1[0], 120);
    for &seq in &on_0[..4] {
        report(&mut s, 160, 0, seq, 130);
    }
    let p = s.path(PathId(1)).unwrap();
    let timeout = ms(103) + s.loss_timeout(p);
    let (srtt, rttvar) = (p.rtt.srtt(), p.rtt.rttvar());
    assert_eq!(s.poll_timeout(), Some(timeout));
    report(&mut s, 210, 0, on_0[4], 180);
    let window = (srtt / 4).max(rttvar * 2).max(Duration::from_millis(50));
    let quiet_at = ms(150) + srtt + window;
    assert!(quiet_at < timeout);
    assert_eq!(s.poll_timeout(), Some(quiet_at));
    s.handle_timeout(quiet_at - Duration::from_millis(1));
    assert_eq!(s.stats().quiet_paths, 0);
    s.handle_timeout(quiet_at);
    assert_eq!(s.stats().quiet_paths, 1);
}

/// Path 0 reports only its packet sent before path 1's: the cross-path
/// rule has no later packet to go by, and path 1's oldest packet meets
/// its timeout. Path 1 has reported nothing since it left, while path 0
/// reported a window after that: at the timeout it has gone quiet
/// (`Sender::quiet_at_timeout`), the case of a delay step past the timeout.
#[test]
fn a_path_silent_until_its_timeout_goes_quiet_there() {
    let (mut s, on_0, on_1) = nine_sent();
    report(&mut s, 160, 0, on_0[0], 130);
    let timeout = ms(101) + s.loss_timeout(s.path(PathId(1)).unwrap());
    assert!(on_1[0] < on_0[1], "path 1's oldest left at 101 ms");
    s.handle_timeout(timeout - Duration::from_millis(1));
    assert_eq!(s.stats().lost_timeout, 0);
    s.handle_timeout(timeout);
    assert_eq!(s.stats().lost_timeout, 1);
    assert_eq!(s.stats().quiet_paths, 1);
    assert!(quiet(&s, 1));
    assert!(!quiet(&s, 0));
}

/// Path 0 reports all its packets within a window of path 1's oldest
/// leaving, and then has nothing in flight: path 1's silence is only
/// overdue at its oldest packet's timeout, and path 0, idle, has nothing
/// to report. Path 1 goes quiet there (the case of a server whose inner
/// ACKs all go on the nearest path); not if its peer measured loss on it.
#[test]
fn a_silent_path_goes_quiet_at_its_timeout_beside_an_idle_one() {
    for (rate, quiet_paths) in [(0.0, 1), (0.3, 0)] {
        let (mut s, on_0, _) = nine_sent();
        if rate > 0.0 {
            let r = crate::wire::NackRate::from_fraction(PathId(1), rate);
            s.handle_nack(ms(110), [], [r]);
        }
        for &seq in &on_0 {
            report(&mut s, 120, 0, seq, 110);
        }
        let timeout = ms(101) + s.loss_timeout(s.path(PathId(1)).unwrap());
        s.handle_timeout(timeout - Duration::from_millis(1));
        assert_eq!(s.stats().quiet_paths, 0);
        s.handle_timeout(timeout);
        assert!(s.stats().lost_timeout >= 1, "loss rate {rate}");
        assert_eq!(s.stats().quiet_paths, quiet_paths, "loss rate {rate}");
    }
}

/// No path reported since the packets left (the sender's feedback
/// stalled, or both paths went dark): their timeouts make no path quiet.
#[test]
fn timeouts_while_no_path_reports_make_no_path_quiet() {
    let (mut s, _, _) = nine_sent();
    s.handle_timeout(ms(400));
    assert_eq!(s.stats().lost_timeout, 9);
    assert_eq!(s.stats().quiet_paths, 0);
}

/// The quiet path's packets, repaired on path 0 and acknowledged there,
/// arrive 300 ms late on path 1 (its delay stepped up): the path is back
/// at its measured delay on the report of the newest of them (not
/// before), and its delay estimate follows the step at once, without the
/// rise's hold.
#[test]
fn a_quiet_path_is_back_once_it_delivers_what_it_held() {
    let (mut s, on_1) = path_1_silent();
    s.handle_timeout(ms(197));
    assert!(quiet(&s, 1));
    for &seq in &on_1 {
        let copy = s.resend(ms(198), seq, || ()).and_then(Repair::sent);
        assert_eq!(copy.unwrap().path, PathId(0));
        report(&mut s, 240, 0, seq, 220);
        assert!(s.is_acked(seq));
    }
    let base_before = s.path(PathId(1)).unwrap().owd.base_raw_ns().unwrap();
    let rises = s.stats().delay_rises;
    for (i, &seq) in on_1.iter().enumerate() {
        report(&mut s, 500 + i as u64, 1, seq, 400 + i as u64);
        let newest = i + 1 == on_1.len();
        assert_eq!(quiet(&s, 1), !newest, "after report {i}");
    }
    assert_eq!(s.stats().late_originals, 4);
    assert_eq!(s.stats().delay_rises, rises + 1);
    let base = s.path(PathId(1)).unwrap().owd.base_raw_ns().unwrap();
    assert!(base - base_before >= 250_000_000, "{base_before} -> {base}");
    // Its smallest round trip is the step's, not the 40 ms before it.
    let min_rtt = s.path(PathId(1)).unwrap().rtt.min_rtt().unwrap();
    assert!(min_rtt >= Duration::from_millis(300), "{min_rtt:?}");
}

/// Its packets' late reports show no change of delay (only the reports
/// were held up): the path is back on the newest one.
#[test]
fn a_quiet_path_whose_reports_were_late_is_back_on_the_newest() {
    let (mut s, on_1) = path_1_silent();
    s.handle_timeout(ms(191));
    assert!(quiet(&s, 1));
    for &seq in &on_1 {
        report(&mut s, 300, 1, seq, 130);
    }
    assert!(!quiet(&s, 1));
    assert_eq!(s.stats().delay_rises, 0);
}

/// A path that stays dark is tried again after its loss timeout (220
/// ms), counted from when it went quiet.
#[test]
fn a_path_that_stays_quiet_is_tried_again_after_its_timeout() {
    let (mut s, _) = path_1_silent();
    s.handle_timeout(ms(191));
    s.handle_timeout(ms(197));
    assert_eq!(s.poll_timeout(), Some(ms(411)));
    s.handle_timeout(ms(410));
    assert!(quiet(&s, 1));
    s.handle_timeout(ms(411));
    assert!(!quiet(&s, 1));
}

/// PET, repairs, copies and the pacing bound count a quiet path farther;
/// the delays PET predicts arrivals with keep its measured delay.
#[test]
fn a_quiet_path_counts_farther_only_where_packets_go() {
    let (mut s, _) = path_1_silent();
    let delays = s.relative_delays();
    let cost = |s: &Sender| {
        Sender::<()>::delivery_cost(s.path(PathId(1)).unwrap(), 1500, &s.relative_delays())
    };
    let bound = |s: &Sender| {
        super::bound::pacing_bound(&s.cfg, s.paths(), &delays, ms(191), Duration::ZERO)
    };
    let (before, bound_before) = (cost(&s), bound(&s));
    s.handle_timeout(ms(191));
    assert_eq!(s.relative_delays(), delays);
    assert!(bound(&s) > bound_before);
    // The loss declared adds a little to the cost too.
    let added = cost(&s) - before;
    assert!((0.220..0.230).contains(&added), "{added}");
    let choice = crate::sched::Pet::choice_delays(s.paths(), &delays);
    assert_eq!(
        choice[1].unwrap() - delays[1].unwrap(),
        Duration::from_millis(220)
    );
    assert_eq!(choice[0], delays[0]);
}

/// Without ARQ a loss declared early is no loss to the inner traffic: no
/// path goes quiet.
#[test]
fn no_path_goes_quiet_without_arq() {
    for mode in [
        crate::repair::RepairMode::Off,
        crate::repair::RepairMode::Fec,
    ] {
        let mut cfg = paced_arq_config();
        cfg.repair.mode = mode;
        let mut s = Sender::new(cfg, Box::new(RoundRobin::default()));
        s.add_path(PathId(0), PathParams::default());
        s.add_path(PathId(1), PathParams::default());
        let sent: Vec<Transmit> = (0..6).map(|i| s.send(ms(i), &pkt()).unwrap()).collect();
        for t in sent.iter().filter(|t| t.path == PathId(0)) {
            report(&mut s, 40, 0, t.seq, 20);
        }
        for t in 0..20 {
            s.handle_timeout(ms(100 + t * 50));
        }
        assert_eq!(s.stats().quiet_paths, 0, "{mode:?}");
    }
}

/// A path whose peer measured loss finds its overdue packets a window
/// after they left anyway (RACK); if nothing came from it since, it has
/// gone quiet as well, and counts farther.
#[test]
fn a_lossy_path_that_stops_reporting_goes_quiet_too() {
    let (mut s, on_0, _) = nine_sent();
    s.handle_nack(
        ms(150),
        [],
        [crate::wire::NackRate::from_fraction(PathId(1), 0.3)],
    );
    for &seq in &on_0 {
        report(&mut s, 160, 0, seq, 130);
    }
    assert_eq!(s.poll_timeout(), Some(ms(191)));
    s.handle_timeout(ms(191));
    assert_eq!(s.stats().quiet_paths, 1);
    assert!(quiet(&s, 1));
}
