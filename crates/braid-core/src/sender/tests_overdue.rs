//! Unit tests of the overdue rule (`sender/overdue.rs`): a path whose
//! oldest packet in flight is past its report time counts farther, by the
//! excess, where PET chooses a path, and no longer once it reports.

use super::tests::{paced_arq_config, pkt};
use super::tests_quiet::{ms, report};
use super::*;
use crate::sched::RoundRobin;

fn overdue(s: &Sender, path: u8) -> Option<Duration> {
    s.path(PathId(path)).unwrap().overdue_delay
}

/// Two paths, round robin, both measured at a 40 ms round trip (SRTT 40
/// ms, RTTVAR 20 ms: reported 90 ms after it left at the latest, SRTT
/// plus the 50 ms window). Packet 2 leaves on path 0 at 100 ms and is not
/// reported; path 1's packet 3 (101 ms) is. At 185 ms packet 2 is 85 ms
/// old, not yet overdue; at 200 ms it is 10 ms past its report time, and
/// PET's choice counts path 0 that much farther (the delays it predicts
/// arrivals with stay as measured). Once packet 2 is reported, path 0's
/// oldest packet is packet 4 of 185 ms, within its time again.
#[test]
fn a_path_whose_oldest_packet_is_past_its_report_time_counts_farther() {
    let mut s = Sender::new(paced_arq_config(), Box::new(RoundRobin::default()));
    s.add_path(PathId(0), PathParams::default());
    s.add_path(PathId(1), PathParams::default());
    for _ in 0..2 {
        s.send(ms(0), &pkt()).unwrap();
    }
    report(&mut s, 40, 0, 0, 20);
    report(&mut s, 40, 1, 1, 20);
    let t2 = s.send(ms(100), &pkt()).unwrap();
    let t3 = s.send(ms(101), &pkt()).unwrap();
    assert_eq!((t2.path, t3.path), (PathId(0), PathId(1)));
    report(&mut s, 141, 1, t3.seq, 121);
    let t4 = s.send(ms(185), &pkt()).unwrap();
    assert_eq!(t4.path, PathId(0));
    assert_eq!((overdue(&s, 0), overdue(&s, 1)), (None, None));
    s.send(ms(200), &pkt()).unwrap();
    assert_eq!(overdue(&s, 0), Some(Duration::from_millis(10)));
    assert_eq!(overdue(&s, 1), None);
    let delays = s.relative_delays();
    let choice = crate::sched::Pet::choice_delays(s.paths(), &delays);
    assert_eq!(
        choice[0].unwrap() - delays[0].unwrap(),
        Duration::from_millis(10)
    );
    assert_eq!(choice[1], delays[1]);
    report(&mut s, 210, 0, t2.seq, 190);
    s.send(ms(211), &pkt()).unwrap();
    assert_eq!(overdue(&s, 0), None);
}
