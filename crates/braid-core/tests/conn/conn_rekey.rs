//! Key rotation under faults of the handshake datagrams (`conn_util::Pair`
//! with a [`Fault`]): initiations and responses lost, delayed past each
//! other and duplicated, in both directions, while data flows both ways.
//! Whatever happens to a handshake, neither side may drop the other's
//! traffic for want of a session it threw away: the tunnel keeps
//! carrying data across every rotation.

use crate::conn_util;

use braid_core::conn::ConnConfig;
use braid_core::crypto::SessionLimits;
use braid_core::time::{Duration, Instant};
use conn_util::*;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Rotation every `rekey` with the swarm's margin (sessions refused after
/// three times that).
fn rekeying(rekey: Duration) -> ConnConfig {
    ConnConfig {
        session_limits: SessionLimits {
            rekey_after_time: rekey,
            reject_after_time: rekey * 3,
            ..SessionLimits::default()
        },
        ..ConnConfig::default()
    }
}

/// Handshake datagrams (initiations up, responses down): each lost with
/// probability `loss`, else delayed by up to 300 ms (reordered against
/// the copies on other paths and against the data) or duplicated.
fn handshake_faults(seed: u64, loss: f64) -> Fault {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    Box::new(move |_, _, _, bytes: &[u8]| {
        if !matches!(bytes.first(), Some(0x11..=0x13)) {
            return Fate::Deliver;
        }
        let u = (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let later = ms(1 + r.next_u64() % 300);
        if u < loss {
            Fate::Drop
        } else if u < loss + 0.3 {
            Fate::Delay(later)
        } else if u < loss + 0.5 {
            Fate::Duplicate(later)
        } else {
            Fate::Deliver
        }
    })
}

/// Longest gap between consecutive arrivals of the stream's packets,
/// from the times the harness recorded.
fn longest_gap(times: &[Instant]) -> Duration {
    times
        .windows(2)
        .map(|w| w[1].saturating_since(w[0]))
        .max()
        .unwrap_or(Duration::ZERO)
}

/// Streams `n` packets each way, one every `gap`, and records when each
/// side received something.
fn stream_timed(p: &mut Pair, n: u64, gap: Duration) -> (Vec<Instant>, Vec<Instant>) {
    let (mut up, mut down) = (Vec::new(), Vec::new());
    for k in 0..n {
        let (s, c) = (p.server_rx.len(), p.client_rx.len());
        p.send_both(k);
        p.run_for(gap);
        if p.server_rx.len() > s {
            up.push(p.now);
        }
        if p.client_rx.len() > c {
            down.push(p.now);
        }
    }
    (up, down)
}

/// Many rotations (every 1 to 1.75 s, sessions refused after three times
/// that), each with its handshake datagrams lost, reordered and
/// duplicated: the client retries a lost handshake in time, so neither
/// side drops the other's traffic for an unknown, expired or missing
/// session (beyond a packet or two at a last-moment rescue), and traffic
/// never pauses for more than a few round trips. Before the retries were
/// paced by the session's remaining life, one lost response left the
/// client sending on a session the server had expired, every packet
/// counted as `drop_unknown_index`, until the retry 5 s later.
#[test]
fn rekey_survives_lost_reordered_and_duplicated_handshakes() {
    for seed in 0..16u64 {
        let cfg = rekeying(Duration::from_millis(1000 + 250 * (seed % 4)));
        let mut p = Pair::with_config(seed, three_links(), cfg.clone(), cfg);
        p.run_for(ms(400));
        assert!(p.client_established(), "seed {seed}");
        p.fault = Some(handshake_faults(seed, 0.3));
        let (up, down) = stream_timed(&mut p, 6000, ms(4));
        let c = p.client.status(p.now);
        let s = p.server.status(p.now);
        let what = format!(
            "seed {seed}: client {:?}\nserver {:?}",
            c.tunnel.counters, s.counters
        );
        assert!(c.tunnel.counters.handshakes >= 8, "{what}");
        // A session rescued at the last moment by the fifth or sixth
        // attempt may still expire under a packet or two in flight; a
        // session lost to a retry that came too late costs thousands.
        for counters in [&c.tunnel.counters, &s.counters] {
            let dropped =
                counters.drop_unknown_index + counters.drop_expired + counters.drop_no_session;
            assert!(dropped <= 3, "{what}");
        }
        assert!(
            longest_gap(&up) < ms(600),
            "uplink {:?} {what}",
            longest_gap(&up)
        );
        assert!(
            longest_gap(&down) < ms(600),
            "downlink {:?} {what}",
            longest_gap(&down)
        );
    }
}

/// The swarm's case, scripted: the first rekey's response is lost. The
/// client retries well before its session expires (not `handshake_timeout`
/// = 5 s later), and no packet either way is dropped for a session the
/// other side no longer holds.
#[test]
fn lost_rekey_response_is_retried_before_the_session_expires() {
    let cfg = rekeying(Duration::from_secs(1));
    let mut p = Pair::with_config(3, three_links(), cfg.clone(), cfg);
    p.run_for(ms(400));
    let mut lost = 0u32;
    let dropped = std::rc::Rc::new(std::cell::Cell::new(None));
    let when = dropped.clone();
    p.fault = Some(Box::new(move |t, _, dir, bytes: &[u8]| {
        if dir == 1 && bytes.first() == Some(&0x12) && lost == 0 {
            lost += 1;
            when.set(Some(t));
            return Fate::Drop;
        }
        Fate::Deliver
    }));
    let (up, down) = stream_timed(&mut p, 1000, ms(4));
    p.run_for(ms(300));
    let lost_at = dropped.get().expect("a rekey response was dropped");
    assert!(lost_at > Instant::ZERO + ms(1000), "{lost_at:?}");
    let c = p.client.status(p.now);
    let s = p.server.status(p.now);
    let what = format!("client {:?}\nserver {:?}", c.tunnel.counters, s.counters);
    assert!(c.tunnel.counters.handshakes >= 3, "{what}");
    for counters in [&c.tunnel.counters, &s.counters] {
        assert_eq!(counters.drop_unknown_index, 0, "{what}");
        assert_eq!(counters.drop_expired, 0, "{what}");
        assert_eq!(counters.drop_no_session, 0, "{what}");
    }
    let all: Vec<u64> = (0..1000).collect();
    assert!(
        numbers(&p.server_rx) == all,
        "uplink lost or reordered packets"
    );
    assert!(
        numbers(&p.client_rx) == all,
        "downlink lost or reordered packets"
    );
    assert!(longest_gap(&up) < ms(100) && longest_gap(&down) < ms(100));
}

/// A total outage outlasts the session (swarm seed 1674): with nothing
/// to send on, the handshake is the only probe of the paths. Its retries
/// back off from 200 ms rather than waiting `handshake_timeout` (5 s), so
/// the tunnel carries data again within about the outage's length after
/// it ends.
#[test]
fn tunnel_resumes_soon_after_an_outage_that_outlasted_the_session() {
    let cfg = rekeying(Duration::from_secs(1));
    let mut p = Pair::with_config(5, three_links(), cfg.clone(), cfg);
    p.run_for(ms(400));
    for path in 0..3 {
        p.set_blackhole(path, true);
    }
    // Four seconds down: the session (3 s) expires.
    let (_, _) = stream_timed(&mut p, 1000, ms(4));
    assert!(
        !p.client.is_established(),
        "the session outlived the outage"
    );
    for path in 0..3 {
        p.set_blackhole(path, false);
    }
    let back = p.now;
    let before = p.server_rx.len();
    let (up, down) = stream_timed(&mut p, 500, ms(4));
    assert!(p.server_rx.len() > before);
    let first_up = up[0].saturating_since(back);
    let first_down = down[0].saturating_since(back);
    assert!(first_up < ms(2500), "uplink back after {first_up:?}");
    assert!(first_down < ms(2500), "downlink back after {first_down:?}");
}
