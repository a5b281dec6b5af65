//! Unit tests of the resequencer's hold while the sender repairs losses
//! (`repair_wait`, the measured hold, its repair floor and `give_up`).

use super::tests::{cfg, drain, ms, P0, P1};
use super::*;

fn repair_cfg() -> ReorderConfig {
    ReorderConfig {
        pace_fraction: 0.0,
        timer_from_first_seen: true,
        adaptive_hold: true,
        min_hold: Duration::from_millis(20),
        max_hold: Duration::from_secs(2),
        repair_wait: true,
        ..ReorderConfig::default()
    }
}

/// With `repair_wait`, a gap the previous-on-path link proves lost is
/// held for its repair, and released the moment the repair arrives.
#[test]
fn repair_wait_holds_a_known_loss_until_the_repair() {
    let mut r = Resequencer::new(repair_cfg(), 0);
    r.add_path(ms(0), P0);
    r.handle_packet(ms(0), P0, 0, None, 100, 0);
    // 1 lost on path 0; 2 names it as its predecessor.
    r.handle_packet(ms(10), P0, 2, Some(1), 100, 2);
    r.handle_packet(ms(11), P0, 3, Some(2), 100, 3);
    assert_eq!(drain(&mut r, ms(11)), vec![0], "the gap is held");
    assert_eq!(r.stats().lost_prev_link, 0);
    // The repair arrives 60 ms later: everything goes at once.
    r.handle_packet(ms(70), P0, 1, None, 100, 1);
    assert_eq!(drain(&mut r, ms(70)), vec![1, 2, 3]);
    assert_eq!(r.stats().gaps_filled, 1);
    assert_eq!(r.stats().late, 0);
    // The hold now follows the measured 60 ms wait: 1.25 x 60 + 10.
    assert_eq!(r.hold(), Duration::from_millis(85));
}

/// Without its repair a held gap is given up after the hold, and a packet
/// that comes later still raises the hold so the next one is covered.
#[test]
fn a_late_packet_lengthens_the_hold() {
    let mut r = Resequencer::new(repair_cfg(), 0);
    r.add_path(ms(0), P0);
    r.handle_packet(ms(0), P0, 0, None, 100, 0);
    // One fill of 20 ms sets the hold to 35 ms.
    r.handle_packet(ms(10), P0, 2, Some(1), 100, 2);
    r.handle_packet(ms(30), P1, 1, None, 100, 1);
    assert_eq!(r.hold(), Duration::from_millis(35));
    assert_eq!(drain(&mut r, ms(30)), vec![0, 1, 2]);
    // 3 goes missing; 4 arrives at 100 ms; the timer gives 3 up at 135.
    r.handle_packet(ms(100), P0, 4, Some(3), 100, 4);
    assert_eq!(r.poll_timeout(), Some(ms(135)));
    r.handle_timeout(ms(135));
    assert_eq!(drain(&mut r, ms(135)), vec![4]);
    assert_eq!(r.stats().lost_timer, 1);
    // 3 comes at 300 ms: late, 200 ms after its gap was seen.
    r.handle_packet(ms(300), P1, 3, None, 100, 3);
    assert_eq!(r.stats().late, 1);
    assert_eq!(r.hold(), Duration::from_millis(260));
}

/// The hold never exceeds `max_hold`, however long a gap took.
#[test]
fn the_hold_is_bounded() {
    let mut r = Resequencer::new(repair_cfg(), 0);
    r.handle_packet(ms(0), P0, 1, None, 100, 1);
    r.handle_packet(ms(9000), P1, 0, None, 100, 0);
    assert_eq!(r.hold(), Duration::from_secs(2));
    let fixed = Resequencer::<u64>::new(cfg(), 0);
    assert_eq!(
        fixed.hold(),
        Duration::from_millis(500),
        "the paper's timer"
    );
}

/// A gap the sender will not repair is released as soon as it says so.
#[test]
fn give_up_releases_a_held_gap_at_once() {
    let mut r = Resequencer::new(repair_cfg(), 0);
    r.add_path(ms(0), P0);
    r.handle_packet(ms(0), P0, 0, None, 100, 0);
    r.handle_packet(ms(10), P0, 2, Some(1), 100, 2);
    assert_eq!(drain(&mut r, ms(10)), vec![0]);
    // Already delivered or buffered numbers are ignored.
    r.give_up(ms(11), 0);
    r.give_up(ms(11), 2);
    assert_eq!(drain(&mut r, ms(11)), Vec::<u64>::new());
    r.give_up(ms(12), 1);
    assert_eq!(drain(&mut r, ms(12)), vec![2]);
    assert_eq!(r.stats().lost_prev_link, 1);
    assert_eq!(r.next_expected(), 3);
}

/// With a repair floor the hold starts at the floor (not the 0.5 s
/// `loss_timeout`), never falls below it when only short reordering waits
/// were measured, and a very late repair raises it at most
/// `REPAIR_HOLD_EXTRA` above it.
#[test]
fn the_repair_floor_bounds_the_hold_both_ways() {
    let mut r = Resequencer::new(repair_cfg(), 0);
    r.add_path(ms(0), P0);
    r.set_hold_floor(Some(Duration::from_millis(150)));
    assert_eq!(r.hold(), Duration::from_millis(150), "before any sample");
    // A reordering wait of 4 ms alone would set 15 ms (min 20 ms).
    r.handle_packet(ms(0), P0, 1, None, 100, 1);
    r.handle_packet(ms(4), P1, 0, None, 100, 0);
    assert_eq!(drain(&mut r, ms(4)), vec![0, 1]);
    assert_eq!(r.hold(), Duration::from_millis(150));
    // A lost packet's gap is held the floor, not the measured 20 ms.
    r.handle_packet(ms(10), P0, 3, Some(2), 100, 3);
    assert_eq!(r.poll_timeout(), Some(ms(160)));
    r.handle_timeout(ms(160));
    assert_eq!(drain(&mut r, ms(160)), vec![3]);
    // Its copy comes 1 s after the gap was seen: the measured hold would
    // be 1.26 s; the floor's cap keeps it at 150 + 200 ms.
    r.handle_packet(ms(1010), P1, 2, None, 100, 2);
    assert_eq!(r.stats().late, 1);
    assert_eq!(r.hold(), Duration::from_millis(350));
    // Without the floor the measured hold is back.
    r.set_hold_floor(None);
    assert_eq!(r.hold(), Duration::from_millis(1260));
}

/// A floor that rises while a gap is held extends the gap's deadline to
/// the new hold (a new path's round trip measured while its first packets
/// are on their way); one that falls leaves it.
#[test]
fn a_rising_floor_extends_the_held_gap() {
    let mut r = Resequencer::new(repair_cfg(), 0);
    r.add_path(ms(0), P0);
    r.set_hold_floor(Some(Duration::from_millis(100)));
    // Number 0 is on a far path; 1 overtakes it at 10 ms.
    r.handle_packet(ms(10), P0, 1, None, 100, 1);
    assert_eq!(r.poll_timeout(), Some(ms(110)));
    r.set_hold_floor(Some(Duration::from_millis(150)));
    assert_eq!(r.poll_timeout(), Some(ms(160)));
    r.set_hold_floor(Some(Duration::from_millis(120)));
    assert_eq!(r.poll_timeout(), Some(ms(160)));
    // Past the old deadline the gap is still held, and 0 fills it.
    r.handle_timeout(ms(140));
    assert_eq!(drain(&mut r, ms(140)), Vec::<u64>::new());
    r.handle_packet(ms(145), P1, 0, None, 100, 0);
    assert_eq!(drain(&mut r, ms(145)), vec![0, 1]);
    assert_eq!(r.stats().lost_timer, 0);
}

/// Setting an unchanged floor again and again (the tunnel does so on
/// every report) never moves a held gap's deadline, with the timer
/// counted from the gap's arming as well as from its first sighting.
#[test]
fn an_unchanged_floor_leaves_the_held_gap_alone() {
    for first_seen in [true, false] {
        let cfg = ReorderConfig {
            timer_from_first_seen: first_seen,
            ..repair_cfg()
        };
        let mut r = Resequencer::new(cfg, 0);
        r.add_path(ms(0), P0);
        r.set_hold_floor(Some(Duration::from_millis(100)));
        r.handle_packet(ms(10), P0, 1, None, 100, 1);
        assert_eq!(r.poll_timeout(), Some(ms(110)));
        for k in 2..10u64 {
            r.handle_packet(ms(10 * k), P0, k, Some(k - 1), 100, k);
            r.set_hold_floor(Some(Duration::from_millis(100)));
            assert_eq!(r.poll_timeout(), Some(ms(110)), "first_seen {first_seen}");
        }
        r.handle_timeout(ms(110));
        assert_eq!(r.stats().lost_timer, 1);
        assert_eq!(drain(&mut r, ms(110)), (1..10).collect::<Vec<u64>>());
    }
}
