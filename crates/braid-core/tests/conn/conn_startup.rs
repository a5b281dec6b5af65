//! The client's startup hold (`conn::tunnel::startup`): on a new tunnel
//! the first inner packets wait until every path is up and measured, at
//! most `ConnConfig::startup_hold`, and then go in order.

use braid_core::conn::ConnConfig;
use braid_core::sched::SchedulerKind;
use braid_core::time::{Duration, Instant};

use crate::conn_util::*;

/// A near path and one 200 ms farther.
fn near_and_far() -> Vec<LinkSpec> {
    vec![
        LinkSpec {
            rate_bps: 5e6,
            delay: ms(10),
        },
        LinkSpec {
            rate_bps: 40e6,
            delay: ms(210),
        },
    ]
}

/// Steps 1 ms at a time until the client is established.
fn establish(p: &mut Pair) {
    step_until(p, ms(2000), Pair::client_established);
}

/// Whether every path of the client's tunnel has a rate estimate, and
/// every path of the server's view of it but the handshake's (path 0),
/// which the server measures by the first packets' own pairs rather than
/// put a filler pair ahead of them (`Tunnel::startup_probe_in_time`).
fn measured(p: &Pair) -> (bool, bool) {
    let all = |paths: &[braid_core::conn::PathStatus], from: u8| {
        !paths.is_empty()
            && paths
                .iter()
                .filter(|x| x.id.0 >= from)
                .all(|x| x.up && x.bandwidth_bps.is_some())
    };
    let s = p.server.status(p.now);
    (
        all(&p.client.status(p.now).tunnel.paths, 0),
        s.peers
            .first()
            .is_some_and(|peer| peer.tunnel.paths.len() > 1 && all(&peer.tunnel.paths, 1)),
    )
}

/// Steps 1 ms at a time until `done`, at most `limit`; returns when.
fn step_until(p: &mut Pair, limit: Duration, done: impl Fn(&Pair) -> bool) -> Instant {
    let end = p.now + limit;
    while p.now < end {
        if done(p) {
            return p.now;
        }
        p.run_for(ms(1));
    }
    panic!("not done within {limit:?}");
}

/// Sends packets `0..n` of `len` bytes up at once and steps until the
/// server has the first; returns when it arrived and whether both sides
/// had every path measured then.
fn first_arrival(p: &mut Pair, n: u64, len: usize, limit: Duration) -> (Instant, (bool, bool)) {
    for k in 0..n {
        p.send_up_sized(k, len);
    }
    let at = step_until(p, limit, |p| !p.server_rx.is_empty());
    (at, measured(p))
}

/// A connection opened the moment the tunnel is up waits for the far
/// path: its first packets (small, as a SYN is) arrive only once both
/// ends have measured both paths (the server probes its downlink as soon
/// as a path is up too, for a download), and everything arrives once,
/// in order.
#[test]
fn first_packets_wait_until_every_path_is_measured() {
    let mut p = Pair::new(11, near_and_far());
    establish(&mut p);
    let t0 = p.now;
    assert!(!measured(&p).0, "measured before the far path was up");
    let (at, both) = first_arrival(&mut p, 3, 60, ms(3000));
    assert_eq!(
        both,
        (true, true),
        "released before every path was measured"
    );
    // Up takes a far round trip, the probe's feedback another.
    assert!(at - t0 >= ms(400), "released after {:?}", at - t0);
    // Within the inner TCP's first timeout, with the near round trip.
    assert!(at - t0 < ms(900), "held {:?}", at - t0);
    p.run_for(ms(1000));
    assert_eq!(numbers(&p.server_rx), (0..3).collect::<Vec<_>>());
    let c = p.client.status(p.now).tunnel.counters;
    assert_eq!(c.startup_held, 3);
    assert!(c.rate_probes_sent >= 4, "{c:?}");
}

/// A path that is not up yet when the hold keeps a connection's opening
/// gets a filler pair at once (`Tunnel::probe_paths_coming_up`): it is
/// measured as it comes up, a far round trip (420 ms) sooner than by a
/// pair sent once it is up, and the server's resequencer, which has no
/// round trip on the far path yet, holds a gap for the paths' delay
/// difference (`Sender::hold_floor`). Without a held packet no such pair
/// goes.
#[test]
fn a_path_coming_up_is_measured_as_it_comes_up() {
    let mut idle = Pair::new(11, near_and_far());
    establish(&mut idle);
    idle.run_for(ms(10));
    let far_sent = |p: &Pair| p.client.status(p.now).tunnel.paths[1].data_tx_packets;
    assert_eq!(far_sent(&idle), 0, "a pair went with nothing held");

    let mut p = Pair::new(11, near_and_far());
    establish(&mut p);
    let far = |p: &Pair| p.client.status(p.now).tunnel.paths[1].clone();
    assert!(!far(&p).up, "the far path came up with the handshake");
    p.send_up_sized(0, 60);
    p.run_for(ms(1));
    assert_eq!(far_sent(&p), 2, "no pair for the far path");
    let up = step_until(&mut p, ms(2000), |p| far(p).up);
    let at = step_until(&mut p, ms(2000), |p| far(p).bandwidth_bps.is_some());
    assert!(at - up <= ms(20), "measured {:?} after it came up", at - up);
    let rate = far(&p).bandwidth_bps.unwrap();
    assert!((rate - 40e6).abs() < 0.1 * 40e6, "{rate}");
    // The server knows the far path 200 ms farther from the client's
    // keepalives alone, and holds a gap 1.25 x 200 ms + 10 ms at least.
    let hold = p.server.status(p.now).peers[0].tunnel.reorder.hold_ns;
    assert!(hold >= 250_000_000, "server's hold {hold} ns");
}

/// Data right behind a held opening ends the hold before the early
/// pair on the far path is answered: the pair measures nothing
/// (`Tunnel::startup_note_early_pairs`), so the far path's rate does not
/// arrive in the first round trips of a transfer that has started on the
/// near path; it is measured later, as before. Everything arrives, in
/// order.
#[test]
fn an_early_pair_overtaken_by_data_measures_nothing() {
    let mut p = Pair::new(11, near_and_far());
    establish(&mut p);
    let far = |p: &Pair| p.client.status(p.now).tunnel.paths[1].clone();
    p.send_up_sized(0, 60);
    p.run_for(ms(1));
    assert_eq!(far(&p).data_tx_packets, 2, "no early pair");
    p.send_up_sized(1, 1200);
    step_until(&mut p, ms(2000), |p| far(p).up);
    p.run_for(ms(50));
    assert_eq!(far(&p).bandwidth_bps, None, "the early pair measured");
    p.run_for(ms(2000));
    assert_eq!(numbers(&p.server_rx), vec![0, 1]);
}

/// Steps until the client has sent `n` inner packets; returns when.
fn released(p: &mut Pair, n: u64, limit: Duration) -> Instant {
    step_until(p, limit, |p| {
        p.client.status(p.now).tunnel.counters.packets_sent >= n
    })
}

/// A packet of data, or a large one, ends the hold: what was held goes
/// first, then it, at once. (A stream that starts without a handshake
/// cannot wait for a far path within its first timeout.)
#[test]
fn data_ends_the_hold() {
    let mut p = Pair::new(15, near_and_far());
    establish(&mut p);
    let t0 = p.now;
    p.send_up_sized(0, 60);
    p.run_for(ms(50));
    assert_eq!(p.client.status(p.now).tunnel.counters.packets_sent, 0);
    p.send_up_sized(1, 1200);
    let waited = released(&mut p, 2, ms(3000)) - t0;
    assert!(waited <= ms(51), "held {waited:?}");
    p.run_for(ms(1000));
    assert_eq!(numbers(&p.server_rx), vec![0, 1]);
    assert_eq!(p.client.status(p.now).tunnel.counters.startup_held, 1);
}

/// When every path is far, the first path's round trip is known from the
/// handshake before its first keepalive returns: data sent at once waits
/// 0.9 s less that (530 ms), not until the keepalive says so.
#[test]
fn the_handshake_bounds_the_wait_before_any_keepalive() {
    let far = |ms_one_way| LinkSpec {
        rate_bps: 5e6,
        delay: ms(ms_one_way),
    };
    let mut p = Pair::new(16, vec![far(265), far(290)]);
    establish(&mut p);
    let t0 = p.now;
    for k in 0..3 {
        p.send_up_sized(k, 60);
    }
    let waited = released(&mut p, 3, ms(3000)) - t0;
    assert!(waited >= ms(340) && waited <= ms(380), "held {waited:?}");
}

/// A path that never comes up holds the first packets no longer than
/// `startup_hold`, nor than the first timeout allows (0.9 s less the near
/// path's round trip for a small packet); nothing is lost.
#[test]
fn a_dead_path_holds_no_longer_than_the_bounds() {
    let short = ConnConfig {
        startup_hold: ms(300),
        ..ConnConfig::default()
    };
    for (cfg, bound) in [(short, ms(300)), (ConnConfig::default(), ms(900 - 20))] {
        let mut p = Pair::with_config(12, near_and_far(), cfg.clone(), cfg);
        p.set_blackhole(1, true);
        establish(&mut p);
        let t0 = p.now;
        for k in 0..5 {
            p.send_up_sized(k, 60);
        }
        let waited = released(&mut p, 5, ms(3000)) - t0;
        assert!(
            waited + ms(20) >= bound && waited <= bound + ms(10),
            "held {waited:?}, bound {bound:?}"
        );
        p.run_for(ms(500));
        assert_eq!(numbers(&p.server_rx), (0..5).collect::<Vec<_>>());
    }
}

/// More than a first flight is not held: past the bound on packets the
/// hold ends and everything goes, in order.
#[test]
fn a_stream_ends_the_hold() {
    let mut p = Pair::new(13, near_and_far());
    establish(&mut p);
    let t0 = p.now;
    let (at, _) = first_arrival(&mut p, 400, 60, ms(3000));
    assert!(at - t0 < ms(100), "a stream waited {:?}", at - t0);
    p.run_for(ms(3000));
    assert_eq!(numbers(&p.server_rx), (0..400).collect::<Vec<_>>());
    assert_eq!(p.client.status(p.now).tunnel.counters.startup_held, 256);
}

/// No hold with `startup_hold` zero or a scheduler that does not place by
/// measured rates.
#[test]
fn no_hold_when_off() {
    let off = ConnConfig {
        startup_hold: Duration::ZERO,
        ..ConnConfig::default()
    };
    let rr = ConnConfig {
        scheduler: SchedulerKind::RoundRobin,
        ..ConnConfig::default()
    };
    for cfg in [off, rr] {
        let mut p = Pair::with_config(14, near_and_far(), cfg.clone(), cfg);
        establish(&mut p);
        let t0 = p.now;
        let (at, _) = first_arrival(&mut p, 3, 60, ms(1000));
        assert!(at - t0 < ms(50), "held {:?}", at - t0);
        assert_eq!(p.client.status(p.now).tunnel.counters.startup_held, 0);
    }
}

/// A path 240 ms away comes up a round trip after the handshake: a pair
/// sent once it was up was answered only after the hold's budget (0.9 s
/// less the near round trip). Its pair goes with the keepalive that
/// announces it (`Tunnel::probe_paths_coming_up`), so it is measured as it
/// comes up and the hold ends then, within the budget; the filler holds
/// nothing back, while the tunnel then carries a connection's small
/// packets, and nothing is lost.
#[test]
fn a_path_measured_as_it_comes_up_ends_the_hold_within_the_budget() {
    let links = vec![
        LinkSpec {
            rate_bps: 2e6,
            delay: ms(10),
        },
        LinkSpec {
            rate_bps: 40e6,
            delay: ms(240),
        },
    ];
    let mut p = Pair::new(17, links);
    establish(&mut p);
    let t0 = p.now;
    p.send_up_sized(0, 60);
    let end = released(&mut p, 1, ms(2000));
    // A far round trip and a half after the handshake, not two: the
    // server has measured the path too (`Tunnel::startup_peer_measured_at`).
    let held = end - t0;
    assert!(held >= ms(700) && held < ms(880), "released after {held:?}");
    step_until(&mut p, ms(100), |p| !p.server_rx.is_empty());
    assert_eq!(measured(&p), (true, true), "not measured when it arrived");
    let far = p.client.status(p.now).tunnel.paths[1].clone();
    assert!(far.up && far.bandwidth_bps.is_some(), "{far:?}");
    // The near path's pair and the far path's, both during the hold.
    assert!(p.client.status(p.now).tunnel.counters.rate_probes_sent >= 4);
    // A connection's small packets every 100 ms: the tunnel never idles.
    let mut k = 1;
    let mut arrivals = Vec::new();
    while p.now < end + ms(1500) {
        p.send_up_sized(k, 60);
        let sent = p.now;
        k += 1;
        for _ in 0..100 {
            p.run_for(ms(1));
            if p.server_rx.len() as u64 == k && arrivals.len() < k as usize - 1 {
                arrivals.push(p.now - sent);
            }
        }
    }
    // Nothing waited for the filler: each small packet arrived within
    // the near path's delay and its queue.
    let slowest = arrivals.iter().max().copied().expect("arrivals");
    assert!(slowest <= ms(60), "slowest arrival {slowest:?}");
    p.run_for(ms(1000));
    assert_eq!(numbers(&p.server_rx), (0..k).collect::<Vec<_>>());
}

/// A far path that comes up just after the hold ran out (its deadline is
/// 0.9 s less the nearest path's round trip from the first held packet,
/// 0.54 s here) is probed as it comes up, not 3 s later by the busy rule,
/// while a connection's small packets keep the tunnel busy
/// (`Tunnel::startup_probe_now`). Set 11/28 of `lab/sweep-random.sh 40
/// 11`: a thin path 182 ms away beside a fast one 288 ms away.
#[test]
fn a_path_up_after_the_hold_ran_out_is_probed_as_it_comes_up() {
    let links = vec![
        LinkSpec {
            rate_bps: 1.5e6,
            delay: ms(182),
        },
        LinkSpec {
            rate_bps: 46e6,
            delay: ms(288),
        },
    ];
    let mut p = Pair::new(19, links);
    establish(&mut p);
    p.send_up_sized(0, 60);
    let end = released(&mut p, 1, ms(2000));
    let far = |p: &Pair| p.client.status(p.now).tunnel.paths[1].clone();
    assert!(!far(&p).up, "the far path came up after the hold ran out");
    let mut k = 1;
    let mut up_at = None;
    let mut measured_at = None;
    while p.now < end + ms(2500) && measured_at.is_none() {
        p.send_up_sized(k, 60);
        k += 1;
        for _ in 0..100 {
            p.run_for(ms(1));
            let x = far(&p);
            if up_at.is_none() && x.up {
                up_at = Some(p.now);
            }
            if measured_at.is_none() && x.bandwidth_bps.is_some() {
                measured_at = Some(p.now);
            }
        }
    }
    let up_at = up_at.expect("far path up");
    let measured_at = measured_at.expect("far path measured");
    assert!(
        measured_at - up_at <= ms(800),
        "measured {:?} after it came up ({:?} after the hold)",
        measured_at - up_at,
        up_at - end
    );
    p.run_for(ms(1500));
    assert_eq!(numbers(&p.server_rx), (0..k).collect::<Vec<_>>());
}
