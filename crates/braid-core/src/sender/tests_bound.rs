//! Unit tests of the pacing queue's bound (`sender::bound::pacing_bound`):
//! how far it lets the near path queue for a path still silent, and the
//! room it leaves for repairs while a path loses packets.

use super::bound::{BOUND_HALF_LIFE_AFTER_LEAVE, BOUND_HOLD_AFTER_LEAVE};
use super::*;
use crate::sched::SchedulerKind;

/// A path not heard from since the connection first sent on it has a
/// round trip at least that long: the near path may queue for it while it
/// answers (issue 13), but a path that never answers stops counting.
#[test]
fn pacing_bound_waits_for_a_silent_path_for_a_while() {
    let cfg = SenderConfig {
        pacing: true,
        ..Default::default()
    };
    let min = cfg.pacing_min_backlog;
    let max = cfg.pacing_max_backlog;
    let mut s: Sender = Sender::new(cfg, SchedulerKind::Pet.build());
    s.add_path(PathId(0), PathParams::default());
    s.add_path(PathId(1), PathParams::default());
    s.set_usable(PathId(1), false);
    assert_eq!(s.pacing_bound_now(Instant::from_millis(400)), min);
    s.set_path_silent_since(PathId(1), Some(Instant::ZERO));
    // A later keepalive does not move the start.
    s.set_path_silent_since(PathId(1), Some(Instant::from_millis(200)));
    // 400 ms without an answer: at least 200 ms further one way.
    assert_eq!(
        s.pacing_bound_now(Instant::from_millis(400)),
        Duration::from_millis(400)
    );
    // Silent for longer than the cap: still counted (at the cap) while
    // a path of that round trip could still be on its way to its first
    // answer, which can take two round trips (address resolution first):
    // `lab/geo.toml`'s 1.2 s path answered after 2.4 s.
    assert_eq!(s.pacing_bound_now(Instant::from_millis(2_400)), max);
    assert_eq!(
        s.pacing_bound_now(Instant::ZERO + max * 2 - Duration::from_millis(1)),
        max
    );
    // Never answering: no longer counted.
    assert_eq!(s.pacing_bound_now(Instant::ZERO + max * 2), min);
    // Answered: the lower bound is gone.
    s.set_path_silent_since(PathId(1), None);
    assert_eq!(s.pacing_bound_now(Instant::from_millis(400)), min);
}

/// With repair on, a bond that loses packets (the peer reports 1 % on one
/// path) gets one repair wait of room on top of its pacing bound, since
/// the peer's resequencer holds the packets behind a gap while the
/// repair travels and the inner TCP's window must cover them; a bond
/// losing less than 0.1 %, or with repair off, gets none. The room never
/// lifts the bound past its cap.
#[test]
fn pacing_bound_leaves_room_for_a_repair_while_a_path_loses_packets() {
    use crate::repair::RepairMode;
    use crate::wire::NackRate;
    let t = Instant::from_millis(1000);
    for (mode, loss, room) in [
        (RepairMode::Arq, 0.01, true),
        (RepairMode::Arq, 0.0005, false),
        (RepairMode::Off, 0.05, false),
    ] {
        let mut cfg = SenderConfig {
            pacing: true,
            ..Default::default()
        };
        cfg.repair.mode = mode;
        let mut s: Sender = Sender::new(cfg, SchedulerKind::Pet.build());
        for i in 0..2 {
            s.add_path(PathId(i), PathParams::default());
            s.on_path_rtt_sample(PathId(i), Duration::from_millis(50));
        }
        let before = s.pacing_bound_now(t);
        s.handle_nack(t, [], [NackRate::from_fraction(PathId(1), loss)]);
        let after = s.pacing_bound_now(t);
        if room {
            let wait = s.repair_wait().expect("repair on and paths measured");
            assert!(wait > Duration::ZERO);
            assert_eq!(after, before + wait, "{mode:?} at {loss}");
        } else {
            assert_eq!(after, before, "{mode:?} at {loss}");
        }
    }
    // Capped.
    let mut cfg = SenderConfig {
        pacing: true,
        pacing_max_backlog: Duration::from_millis(80),
        ..Default::default()
    };
    cfg.repair.mode = RepairMode::Arq;
    let mut s: Sender = Sender::new(cfg, SchedulerKind::Pet.build());
    s.add_path(PathId(0), PathParams::default());
    s.on_path_rtt_sample(PathId(0), Duration::from_millis(50));
    s.handle_nack(t, [], [NackRate::from_fraction(PathId(0), 0.05)]);
    assert_eq!(s.pacing_bound_now(t), Duration::from_millis(80));
}

/// A far path that leaves use (declared down) leaves the bound where it
/// was for `BOUND_HOLD_AFTER_LEAVE` from the first send after it left,
/// then falling with a half-life of `BOUND_HALF_LIFE_AFTER_LEAVE` towards
/// the remaining paths' own bound; the
/// inner TCP's window, which spanned the far path's delay, then shrinks
/// by its own reductions instead of being dropped at once. A bound that
/// falls for another reason (here the far path's delay measured anew)
/// falls at once.
#[test]
fn pacing_bound_falls_gradually_after_a_far_path_leaves() {
    let cfg = SenderConfig {
        pacing: true,
        ..Default::default()
    };
    let min = cfg.pacing_min_backlog;
    let pkt = super::tests::pkt();
    let t = Instant::from_millis(1000);
    // Two paths, the second 100 ms further one way (a bound of twice
    // that), and one packet sent at `t`.
    let far = || {
        let mut s: Sender = Sender::new(cfg.clone(), SchedulerKind::Pet.build());
        s.add_path(PathId(0), PathParams::default());
        s.add_path(PathId(1), PathParams::default());
        s.on_path_rtt_sample(PathId(0), Duration::from_millis(20));
        s.on_path_rtt_sample(PathId(1), Duration::from_millis(220));
        let _ = s.send(t, &pkt);
        s
    };
    let mut s = far();
    let before = s.pacing_bound_now(t);
    assert_eq!(before, Duration::from_millis(200));
    s.set_usable(PathId(1), false);
    let t1 = t + Duration::from_millis(10);
    let _ = s.send(t1, &pkt);
    assert_eq!(s.pacing_bound_now(t1), before);
    // 0.9 s after the leave (an outage about to end) it still holds.
    assert_eq!(s.pacing_bound_now(t1 + Duration::from_millis(900)), before);
    let held = t1 + BOUND_HOLD_AFTER_LEAVE;
    assert_eq!(s.pacing_bound_now(held), before);
    assert!(s.pacing_bound_now(held + Duration::from_millis(50)) < before);
    // One half-life after the hold, half the excess over the floor is left.
    let half_way = |s: &Sender| {
        let half = (s.pacing_bound_now(held + BOUND_HALF_LIFE_AFTER_LEAVE) - min).as_secs_f64();
        assert!(
            (half - (before - min).as_secs_f64() / 2.0).abs() < 1e-6,
            "{half}"
        );
    };
    half_way(&s);
    let long_after = s.pacing_bound_now(t1 + Duration::from_secs(10));
    assert!(
        long_after - min < Duration::from_millis(1),
        "{long_after:?}"
    );
    // The far path back and gone again within the hold: the hold is not
    // restarted, so a path that flaps does not keep the bound at its peak.
    let mut s = far();
    s.set_usable(PathId(1), false);
    let _ = s.send(t1, &pkt);
    let back = t1 + Duration::from_millis(500);
    s.set_usable(PathId(1), true);
    let _ = s.send(back, &pkt);
    s.set_usable(PathId(1), false);
    let _ = s.send(back + Duration::from_millis(10), &pkt);
    half_way(&s);
    // The far path measured as near as the other: the bound falls at once.
    let mut s = far();
    s.on_path_rtt_sample(PathId(1), Duration::from_millis(20));
    let _ = s.send(t1, &pkt);
    assert_eq!(s.pacing_bound_now(t1), min);
}

/// When the path that carried the larger share leaves, the bound holds
/// what the remaining path then has to deliver: its own pacing queue and
/// what the path that left still had in flight, at the remaining path's
/// rate, up to the slowest path's round trip plus the inner TCP's
/// smallest timeout margin. Change set 1/2 in the lab: 7.89 Mbit/s going
/// dark beside 3.87, the bound of the slower path alone (0.17 s) dropped
/// what came back of the inner TCP's window in every round trip.
#[test]
fn pacing_bound_holds_the_window_of_a_path_that_left() {
    use super::bound::INNER_RTO_MARGIN;
    use super::tests_stranded::set_rate;
    let cfg = SenderConfig {
        pacing: true,
        ..Default::default()
    };
    let pkt = super::tests::pkt();
    let t = Instant::from_millis(1000);
    let t1 = t + Duration::from_millis(10);
    // Path 0: 8 Mbit/s, a 270 ms round trip (its queue included); path
    // 1: 4 Mbit/s, 120 ms. `in_flight` bytes still on path 0 as it leaves.
    let leave = |in_flight: u64| {
        let mut s: Sender = Sender::new(cfg.clone(), SchedulerKind::Pet.build());
        s.add_path(PathId(0), PathParams::default());
        s.add_path(PathId(1), PathParams::default());
        s.paths[0].rtt.update(Duration::from_millis(270));
        s.paths[1].rtt.update(Duration::from_millis(120));
        set_rate(&mut s, 0, 8e6);
        set_rate(&mut s, 1, 4e6);
        let _ = s.send_paced(t, &pkt, || ());
        let before = s.pacing_bound_now(t);
        s.paths[0].in_flight_bytes = in_flight;
        s.set_usable(PathId(0), false);
        let _ = s.send_paced(t1, &pkt, || ());
        (before, s.pacing_bound_now(t1))
    };
    // 60 kB: 120 ms at 4 Mbit/s, within the bound of the moment.
    let (before, held) = leave(60_000);
    assert_eq!(held, before);
    // 150 kB: 300 ms at 4 Mbit/s (the pacing queues drained meanwhile).
    let (before, held) = leave(150_000);
    assert!(before < Duration::from_millis(250), "{before:?}");
    let off = held.abs_diff(Duration::from_millis(300));
    assert!(off < Duration::from_millis(1), "{held:?}");
    // 600 kB: 1.2 s, held to the slower path's round trip and the margin.
    let (_, held) = leave(600_000);
    assert_eq!(held, Duration::from_millis(270) + INNER_RTO_MARGIN);
}
