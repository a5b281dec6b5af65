//! Unit tests of the resequencer.

use super::*;

pub(super) const P0: PathId = PathId(0);
pub(super) const P1: PathId = PathId(1);

pub(super) fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}

pub(super) fn cfg() -> ReorderConfig {
    ReorderConfig {
        pace_fraction: 0.0,
        ..ReorderConfig::default()
    }
}

pub(super) fn drain(r: &mut Resequencer<u64>, now: Instant) -> Vec<u64> {
    let mut out = Vec::new();
    while let Some(p) = r.poll_release(now) {
        out.push(p);
    }
    out
}

#[test]
fn in_order_pass_through() {
    let mut r = Resequencer::new(ReorderConfig::default(), 0);
    for s in 0..10u64 {
        r.handle_packet(ms(s), P0, s, s.checked_sub(1), 100, s);
        assert_eq!(r.poll_timeout(), Some(ms(s)));
        assert_eq!(
            r.poll_release(ms(s)),
            Some(s),
            "in-order packet released at once"
        );
        assert_eq!(r.poll_release(ms(s)), None);
        assert_eq!(r.poll_timeout(), None);
    }
    let st = r.stats();
    assert_eq!(
        (
            st.received,
            st.released,
            st.buffered_packets,
            st.max_buffered_bytes
        ),
        (10, 10, 0, 0)
    );
    assert_eq!(r.next_expected(), 10);
}

#[test]
fn a_swap_is_fixed() {
    let mut r = Resequencer::new(cfg(), 0);
    // Both paths known up front, so path 0 alone overtaking 0 proves
    // nothing (comparison waits for path 1).
    r.add_path(ms(0), P0);
    r.add_path(ms(0), P1);
    r.handle_packet(ms(0), P0, 1, None, 10, 1);
    assert_eq!(r.poll_release(ms(0)), None);
    assert_eq!(r.stats().buffered_packets, 1);
    assert_eq!(r.stats().buffered_bytes, 10);
    r.handle_packet(ms(1), P1, 0, None, 10, 0);
    assert_eq!(drain(&mut r, ms(1)), vec![0, 1]);
    let st = r.stats();
    assert_eq!(st.lost(), 0);
    assert_eq!(st.buffered_bytes, 0);
    assert_eq!(st.max_buffered_bytes, 10);
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn comparison_based_detection_over_two_paths() {
    for comparison in [true, false] {
        let mut r = Resequencer::new(
            ReorderConfig {
                comparison,
                ..cfg()
            },
            0,
        );
        r.handle_packet(ms(0), P0, 0, None, 10, 0);
        r.handle_packet(ms(1), P1, 1, None, 10, 1);
        assert_eq!(drain(&mut r, ms(1)), vec![0, 1]);
        // 2 (path 0) is lost; 3 on path 1 is not enough: path 0 might
        // still deliver 2.
        r.handle_packet(ms(2), P1, 3, None, 10, 3);
        assert_eq!(drain(&mut r, ms(2)), Vec::<u64>::new());
        // Path 0 delivers 4 > 2: every active path has overtaken 2.
        r.handle_packet(ms(3), P0, 4, None, 10, 4);
        if comparison {
            assert_eq!(drain(&mut r, ms(3)), vec![3, 4]);
            assert_eq!(r.stats().lost_comparison, 1);
            assert_eq!(r.poll_timeout(), None);
        } else {
            assert_eq!(drain(&mut r, ms(3)), Vec::<u64>::new());
            assert_eq!(r.stats().lost_comparison, 0);
            assert_eq!(r.poll_timeout(), Some(ms(502)));
        }
    }
}

#[test]
fn removed_or_silent_paths_do_not_hold_comparison_back() {
    let mut r = Resequencer::new(cfg(), 0);
    r.handle_packet(ms(0), P0, 0, None, 10, 0);
    r.handle_packet(ms(0), P1, 1, None, 10, 1);
    r.handle_packet(ms(0), PathId(2), 2, None, 10, 2);
    assert_eq!(drain(&mut r, ms(0)), vec![0, 1, 2]);
    // 3 missing; 4 on path 0 and 5 on path 1. Path 2 holds it back.
    r.handle_packet(ms(10), P0, 4, None, 10, 4);
    r.handle_packet(ms(10), P1, 5, None, 10, 5);
    assert_eq!(drain(&mut r, ms(10)), Vec::<u64>::new());
    r.remove_path(PathId(2));
    // Work is due now; handle_timeout applies it.
    assert_eq!(r.poll_timeout(), Some(ms(10)));
    r.handle_timeout(ms(10));
    assert_eq!(drain(&mut r, ms(10)), vec![4, 5]);
    assert_eq!(r.stats().lost_comparison, 1);

    // Silence: active_window 100 ms. Path 1 last heard at 10 ms; gap at
    // 2 with 3 buffered from path 0 at 20 ms.
    let mut r2 = Resequencer::new(
        ReorderConfig {
            active_window: Duration::from_millis(100),
            loss_timeout: Duration::from_secs(5),
            ..cfg()
        },
        0,
    );
    r2.handle_packet(ms(0), P0, 0, None, 10, 0);
    r2.handle_packet(ms(10), P1, 1, None, 10, 1);
    r2.handle_packet(ms(20), P0, 3, None, 10, 3);
    assert_eq!(drain(&mut r2, ms(20)), vec![0, 1]);
    // Path 1 goes quiet at 110 ms while path 0 (heard at 20 ms) is active.
    assert_eq!(r2.poll_timeout(), Some(ms(110)));
    r2.handle_timeout(ms(109));
    assert_eq!(drain(&mut r2, ms(109)), Vec::<u64>::new());
    r2.handle_timeout(ms(110));
    assert_eq!(drain(&mut r2, ms(110)), vec![3]);
    assert_eq!(r2.stats().lost_comparison, 1);
}

#[test]
fn add_path_makes_comparison_wait_for_a_silent_new_path() {
    let mut r = Resequencer::new(cfg(), 0);
    r.add_path(ms(0), P0);
    r.add_path(ms(0), P1);
    // 0 travels on path 1 (slow); 1 and 2 arrive on path 0 first.
    r.handle_packet(ms(1), P0, 1, None, 10, 1);
    r.handle_packet(ms(2), P0, 2, None, 10, 2);
    assert_eq!(drain(&mut r, ms(2)), Vec::<u64>::new());
    r.handle_packet(ms(30), P1, 0, None, 10, 0);
    assert_eq!(drain(&mut r, ms(30)), vec![0, 1, 2]);
    assert_eq!(r.stats().late, 0);
}

#[test]
fn prev_link_detection() {
    let c = ReorderConfig {
        comparison: false,
        ..cfg()
    };
    // The predecessor at the head is missing: skipped at once.
    let mut r = Resequencer::new(c.clone(), 0);
    r.handle_packet(ms(0), P0, 1, Some(0), 10, 1);
    assert_eq!(drain(&mut r, ms(0)), vec![1]);
    assert_eq!(r.stats().lost_prev_link, 1);
    assert_eq!(r.poll_timeout(), None);

    // A predecessor further ahead is remembered and skipped at the head.
    let mut r = Resequencer::new(c, 0);
    r.handle_packet(ms(0), P1, 1, None, 10, 1);
    r.handle_packet(ms(0), P1, 2, Some(1), 10, 2);
    r.handle_packet(ms(1), P0, 4, Some(3), 10, 4);
    assert_eq!(drain(&mut r, ms(1)), Vec::<u64>::new());
    r.handle_packet(ms(2), P0, 0, None, 10, 0);
    assert_eq!(drain(&mut r, ms(2)), vec![0, 1, 2, 4]);
    assert_eq!(r.stats().lost_prev_link, 1);
    assert_eq!(r.next_expected(), 5);
    // 3 shows up after all: late.
    r.handle_packet(ms(3), P0, 3, None, 10, 3);
    assert_eq!(r.stats().late, 1);
    assert_eq!(drain(&mut r, ms(3)), Vec::<u64>::new());
}

#[test]
fn known_lost_number_that_arrives_is_delivered() {
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            ..cfg()
        },
        0,
    );
    r.handle_packet(ms(0), P0, 3, Some(2), 10, 3);
    r.handle_packet(ms(0), P1, 2, None, 10, 2); // non-FIFO after all
    r.handle_packet(ms(0), P1, 0, None, 10, 0);
    r.handle_packet(ms(0), P1, 1, None, 10, 1);
    assert_eq!(drain(&mut r, ms(0)), vec![0, 1, 2, 3]);
    assert_eq!(r.stats().lost_prev_link, 0);
}

#[test]
fn gaps_seen_together_expire_together() {
    // A burst of drops: every other packet lost, nothing else to settle them.
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            timer_from_first_seen: true,
            ..cfg()
        },
        0,
    );
    let t0 = ms(1000);
    for k in 0..20u64 {
        r.handle_packet(
            t0 + Duration::from_micros(100 * k),
            P0,
            2 * k + 1,
            None,
            10,
            2 * k + 1,
        );
    }
    assert_eq!(r.poll_timeout(), Some(t0 + Duration::from_millis(500)));
    let t1 = t0 + Duration::from_millis(502);
    r.handle_timeout(t1);
    let got = drain(&mut r, t1);
    assert_eq!(
        got.len(),
        20,
        "all gaps expire within 2 ms of each other: {got:?}"
    );
    assert_eq!(r.stats().lost_timer, 20);
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn timer_expires_at_exactly_half_a_second() {
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            ..cfg()
        },
        0,
    );
    let t0 = ms(1000);
    r.handle_packet(t0, P0, 1, None, 10, 1);
    r.handle_packet(t0 + Duration::from_millis(100), P0, 3, None, 10, 3);
    assert_eq!(r.poll_timeout(), Some(t0 + Duration::from_millis(500)));
    r.handle_timeout(t0 + Duration::from_nanos(499_999_999));
    assert_eq!(
        drain(&mut r, t0 + Duration::from_nanos(499_999_999)),
        Vec::<u64>::new()
    );
    assert_eq!(r.stats().lost_timer, 0);
    let t1 = t0 + Duration::from_millis(500);
    r.handle_timeout(t1);
    assert_eq!(drain(&mut r, t1), vec![1]);
    assert_eq!(r.stats().lost_timer, 1);
    // New head gap (2): its own timer starts now.
    assert_eq!(r.poll_timeout(), Some(t1 + Duration::from_millis(500)));
    r.handle_timeout(t1 + Duration::from_millis(499));
    assert_eq!(
        drain(&mut r, t1 + Duration::from_millis(499)),
        Vec::<u64>::new()
    );
    r.handle_timeout(t1 + Duration::from_millis(500));
    assert_eq!(drain(&mut r, t1 + Duration::from_millis(500)), vec![3]);
    assert_eq!(r.stats().lost_timer, 2);
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn handle_timeout_without_due_work_is_a_noop() {
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            ..cfg()
        },
        0,
    );
    r.handle_timeout(ms(5));
    assert_eq!(r.poll_timeout(), None);
    r.handle_packet(ms(10), P0, 2, None, 10, 2);
    let before = r.stats().clone();
    r.handle_timeout(ms(100));
    r.handle_timeout(ms(100));
    assert_eq!(r.stats(), &before);
    assert_eq!(r.next_expected(), 0);
    assert_eq!(r.poll_timeout(), Some(ms(510)));
}

#[test]
fn pacing_spaces_a_released_batch() {
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            pace_fraction: 0.5,
            ..ReorderConfig::default()
        },
        0,
    );
    // Arrivals every 10 ms: smoothed gap 10 ms, pace 5 ms.
    for s in 0..5u64 {
        r.handle_packet(ms(10 * s), P0, s, None, 100, s);
        assert_eq!(r.poll_release(ms(10 * s)), Some(s));
    }
    for (i, s) in [6u64, 7, 8].into_iter().enumerate() {
        r.handle_packet(ms(50 + 10 * i as u64), P0, s, None, 100, s);
    }
    assert_eq!(r.smoothed_gap(), Some(Duration::from_millis(10)));
    assert_eq!(r.pace_interval(), Duration::from_millis(5));
    r.handle_packet(ms(80), P1, 5, None, 100, 5);
    assert_eq!(
        r.poll_release(ms(80)),
        Some(5),
        "first of the batch goes at once"
    );
    assert_eq!(r.poll_release(ms(80)), None);
    assert_eq!(r.poll_timeout(), Some(ms(85)));
    assert_eq!(r.poll_release(ms(84)), None);
    assert_eq!(r.poll_release(ms(85)), Some(6));
    assert_eq!(r.poll_timeout(), Some(ms(90)));
    assert_eq!(r.poll_release(ms(89)), None);
    // Polled late (at 91): the next one is still due 5 ms after this one
    // was due (90), not 5 ms after it went.
    assert_eq!(r.poll_release(ms(91)), Some(7));
    assert_eq!(r.poll_timeout(), Some(ms(95)));
    assert_eq!(r.poll_release(ms(94)), None);
    assert_eq!(r.poll_release(ms(95)), Some(8));
    assert_eq!(r.poll_timeout(), None);
    assert_eq!(r.stats().queued_packets, 0);
    // In order with nothing waiting: immediately.
    r.handle_packet(ms(93), P0, 9, None, 100, 9);
    assert_eq!(r.poll_release(ms(93)), Some(9));
}

#[test]
fn a_batch_drains_as_fast_as_it_arrived_when_arrivals_slow_down() {
    // 100 packets 1 ms apart wait behind a lost packet 0; the inner TCP's
    // window then fills and four more trickle in 50-100 ms apart, which lifts
    // the smoothed gap to about 38 ms. Paced at half that, the 104 packets the
    // loss timer releases at 501 ms would take about 2 s; paced at half
    // their own mean arrival gap (449 ms / 103) they take about 225 ms.
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            ..ReorderConfig::default()
        },
        0,
    );
    for s in 1..=100u64 {
        r.handle_packet(ms(s), P0, s, None, 1400, s);
    }
    for (k, s) in (101..=104u64).enumerate() {
        r.handle_packet(ms(150 + 100 * k as u64), P0, s, None, 1400, s);
    }
    assert!(r.pace_interval() > Duration::from_millis(15));
    r.handle_timeout(ms(501));
    assert_eq!(r.stats().lost_timer, 1);
    assert_eq!(
        drain(&mut r, ms(501)).len(),
        1,
        "first of the batch goes at once"
    );
    let by_600 = 1 + drain(&mut r, ms(600)).len();
    assert!(by_600 < 104, "still paced: {by_600} released by 600 ms");
    assert_eq!(by_600 + drain(&mut r, ms(730)).len(), 104);
    assert_eq!(r.stats().queued_packets, 0);
}

#[test]
fn late_wake_ups_keep_the_release_rate() {
    // A batch of 1000 paced at 2 us (arrivals 4 us apart), polled only
    // every millisecond as a busy core or a coarse timer would: it drains
    // at the pace, 500 per millisecond, not one per wake-up.
    let us = Instant::from_micros;
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            pace_fraction: 0.5,
            min_pace_interval: Duration::ZERO,
            ..ReorderConfig::default()
        },
        0,
    );
    for s in 1..=1000u64 {
        r.handle_packet(us(4 * s), P0, s, None, 1400, s);
    }
    assert_eq!(r.pace_interval(), Duration::from_micros(2));
    r.handle_packet(us(4004), P1, 0, None, 1400, 0);
    let mut released = drain(&mut r, us(4004)).len();
    assert_eq!(released, 1, "first of the batch goes at once");
    for k in 1..=2u64 {
        released += drain(&mut r, us(4004 + 1000 * k)).len();
    }
    assert_eq!(released, 1001, "drained in 2 ms, not 1000 wake-ups");
}

#[test]
fn a_spacing_shorter_than_a_wake_up_is_not_kept() {
    // Arrivals 4 us apart: a 2 us spacing, below the 20 us floor.
    let us = Instant::from_micros;
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            ..ReorderConfig::default()
        },
        0,
    );
    for s in 1..=10u64 {
        r.handle_packet(us(4 * s), P0, s, None, 1400, s);
    }
    assert_eq!(r.pace_interval(), Duration::ZERO);
    r.handle_packet(us(44), P1, 0, None, 1400, 0);
    assert_eq!(drain(&mut r, us(44)).len(), 11, "the batch goes at once");
    assert_eq!(r.poll_timeout(), None, "and needs no wake-up");
}

#[test]
fn idle_periods_do_not_inflate_the_pace() {
    let mut r: Resequencer<u64> = Resequencer::new(ReorderConfig::default(), 0);
    r.handle_packet(ms(0), P0, 0, None, 1, 0);
    r.handle_packet(ms(2), P0, 1, None, 1, 1);
    r.handle_packet(ms(10_000), P0, 2, None, 1, 2);
    assert_eq!(r.smoothed_gap(), Some(Duration::from_millis(2)));
}

#[test]
fn memory_bound_declares_the_head_gap_lost() {
    let c = ReorderConfig {
        comparison: false,
        max_buffer_bytes: 3000,
        pace_fraction: 0.5,
        ..ReorderConfig::default()
    };
    let mut r = Resequencer::new(c, 0);
    for s in 1..=3u64 {
        r.handle_packet(ms(s), P0, s, None, 1000, s);
    }
    assert_eq!(r.stats().buffered_bytes, 3000);
    r.handle_packet(ms(4), P0, 5, None, 1000, 5);
    assert!(r.stats().buffered_bytes <= 3000);
    assert_eq!(r.stats().lost_overflow, 1);
    // Overflow releases are not paced.
    assert_eq!(drain(&mut r, ms(4)), vec![1, 2, 3]);
    assert_eq!(r.next_expected(), 4);
    assert_eq!(r.stats().buffered_bytes, 1000);
    assert_eq!(r.stats().max_buffered_bytes, 3000);

    // Everything buffered is above the newcomer: it is dropped.
    let c = ReorderConfig {
        comparison: false,
        max_buffer_bytes: 3000,
        ..cfg()
    };
    let mut r = Resequencer::new(c, 0);
    for s in 5..=7u64 {
        r.handle_packet(ms(s), P0, s, None, 1000, s);
    }
    r.handle_packet(ms(8), P1, 2, None, 1000, 2);
    assert_eq!(r.stats().dropped_overflow, 1);
    assert_eq!(r.stats().buffered_bytes, 3000);
    // Larger than the whole buffer: dropped without flushing the rest.
    r.handle_packet(ms(9), P1, 9, None, 5000, 9);
    assert_eq!(r.stats().dropped_overflow, 2);
    assert_eq!(r.stats().lost_overflow, 0);
    assert_eq!(r.stats().buffered_bytes, 3000);
    assert!(r.stats().max_buffered_bytes <= 3000);
}

#[test]
fn far_ahead_packet_slides_the_window() {
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            ..cfg()
        },
        0,
    );
    r.handle_packet(ms(0), P0, 2, None, 1, 2);
    let far = MAX_SPAN + 10;
    r.handle_packet(ms(1), P0, far, None, 1, far);
    assert_eq!(r.next_expected(), 10);
    assert_eq!(r.stats().lost_overflow, 9); // 0, 1, 3..=9
    assert_eq!(drain(&mut r, ms(1)), vec![2]);
    assert_eq!(r.stats().buffered_packets, 1);
}

#[test]
fn duplicates_and_late_packets_are_counted_and_dropped() {
    let mut r = Resequencer::new(
        ReorderConfig {
            comparison: false,
            ..cfg()
        },
        0,
    );
    r.handle_packet(ms(0), P0, 0, None, 1, 0);
    r.handle_packet(ms(0), P0, 0, None, 1, 100);
    r.handle_packet(ms(0), P0, 2, None, 1, 2);
    r.handle_packet(ms(0), P0, 2, None, 1, 200);
    assert_eq!(r.stats().duplicates, 2);
    r.handle_timeout(ms(500));
    assert_eq!(drain(&mut r, ms(500)), vec![0, 2]);
    r.handle_packet(ms(600), P0, 1, None, 1, 1);
    r.handle_packet(ms(600), P0, 2, None, 1, 2);
    let st = r.stats();
    assert_eq!(
        (st.late, st.duplicates, st.received, st.released),
        (1, 3, 6, 2)
    );
    // Below first_seq: late.
    let mut r = Resequencer::new(cfg(), 100);
    r.handle_packet(ms(0), P0, 7, None, 1, 7u64);
    assert_eq!(r.stats().late, 1);
    assert_eq!(r.poll_release(ms(0)), None);
}

#[test]
fn off_mode_is_pass_through() {
    let mut r = Resequencer::new(
        ReorderConfig {
            mode: ReorderMode::Off,
            ..ReorderConfig::default()
        },
        0,
    );
    for (i, s) in [2u64, 0, 1, 1].into_iter().enumerate() {
        r.handle_packet(ms(i as u64), P0, s, None, 10, s);
    }
    assert_eq!(drain(&mut r, ms(3)), vec![2, 0, 1, 1]);
    r.handle_timeout(ms(10_000));
    assert_eq!(r.poll_timeout(), None);
    let st = r.stats();
    assert_eq!((st.received, st.released, st.buffered_packets), (4, 4, 0));
    assert_eq!(r.next_expected(), 3);
}

#[test]
fn occupancy_is_counted_per_path() {
    let p2 = PathId(2);
    let mut r = Resequencer::new(cfg(), 0);
    // Path 0 has delivered nothing yet, so comparison waits for it.
    for p in [P0, P1, p2] {
        r.add_path(ms(0), p);
    }
    // 0 is missing; 1 and 3 wait on path 1, 2 on path 2.
    r.handle_packet(ms(1), P1, 1, None, 100, 1);
    r.handle_packet(ms(1), p2, 2, None, 300, 2);
    r.handle_packet(ms(1), P1, 3, Some(1), 100, 3);
    assert_eq!(r.buffered_on(P0), (0, 0));
    assert_eq!(r.buffered_on(P1), (2, 200));
    assert_eq!(r.buffered_on(p2), (1, 300));
    assert_eq!(r.stats().buffered_bytes, 500);
    // 0 arrives: everything is released and every path is empty.
    r.handle_packet(ms(2), P0, 0, None, 100, 0);
    assert_eq!(drain(&mut r, ms(2)), vec![0, 1, 2, 3]);
    for p in [P0, P1, p2] {
        assert_eq!(r.buffered_on(p), (0, 0));
    }
}

/// A packet that needs no order (a pure TCP ACK) goes up at once ahead of
/// a gap known lost (its repair awaited); behind a gap that may be
/// reordering, and in order, it is an ordinary packet. Ordinary packets
/// still wait; the gap is still filled by its repair (then released in
/// order) or given up by the timer; nothing goes up twice.
#[test]
fn an_unordered_packet_goes_up_ahead_of_a_lost_gap_once() {
    // As in the tunnel, where the sender repairs losses.
    let mut r = Resequencer::new(
        ReorderConfig {
            repair_wait: true,
            ..cfg()
        },
        0,
    );
    r.add_path(ms(0), P0);
    r.add_path(ms(0), P1);
    r.handle_packet(ms(0), P0, 0, None, 60, 0);
    assert_eq!(drain(&mut r, ms(0)), vec![0]);
    // 1 is missing. Until it is known lost it may be reordering: 2 waits.
    r.handle_unordered(ms(1), P0, 2, Some(0), 60, 2);
    assert_eq!(drain(&mut r, ms(1)), Vec::<u64>::new(), "reordering");
    // Known lost: 4 needs no order and goes up; 3 does and waits.
    r.note_loss(1);
    r.handle_unordered(ms(2), P0, 4, Some(2), 60, 4);
    assert_eq!(drain(&mut r, ms(2)), vec![4], "ahead of the lost gap");
    r.handle_packet(ms(2), P0, 3, Some(2), 1400, 3);
    assert_eq!(drain(&mut r, ms(2)), Vec::<u64>::new(), "3 waits for 1");
    assert_eq!(
        r.stats().buffered_packets,
        2,
        "2 and 3; the placeholder of 4 is not counted"
    );
    assert!(r.poll_timeout().is_some(), "the gap's timer runs");
    // A copy of 4 is a duplicate.
    r.handle_unordered(ms(3), P1, 4, None, 60, 4);
    assert_eq!(r.stats().duplicates, 1);
    // The repair of 1 arrives: 1, 2 and 3 go up, 4 does not again.
    r.handle_packet(ms(4), P1, 1, None, 1400, 1);
    assert_eq!(drain(&mut r, ms(4)), vec![1, 2, 3]);
    assert_eq!(r.next_expected(), 5);
    let st = r.stats();
    assert_eq!((st.received, st.released, st.unordered), (6, 5, 1));
    assert_eq!((st.buffered_packets, st.buffered_bytes), (0, 0));

    // Only unordered packets above a lost number: the timer gives it up
    // and nothing more goes up.
    r.note_loss(5);
    r.handle_unordered(ms(10), P0, 6, Some(4), 60, 6);
    r.handle_unordered(ms(11), P0, 7, Some(6), 60, 7);
    assert_eq!(drain(&mut r, ms(11)), vec![6, 7]);
    let t = r.poll_timeout().expect("the gap at 5 is timed");
    r.handle_timeout(t);
    assert_eq!(drain(&mut r, t), Vec::<u64>::new());
    assert_eq!(r.next_expected(), 8);
    assert_eq!(r.stats().lost_timer, 1);
    // In order, an unordered packet is an ordinary one; past the loss,
    // one ahead of a new gap waits again.
    r.handle_unordered(t, P0, 8, Some(7), 60, 8);
    assert_eq!(drain(&mut r, t), vec![8]);
    r.handle_unordered(t, P0, 10, Some(8), 60, 10);
    assert_eq!(drain(&mut r, t), Vec::<u64>::new());
    assert_eq!(r.stats().unordered, 3);
}
