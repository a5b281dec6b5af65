//! A server under load (the daemon says so) and its clients: cookie
//! replies instead of Diffie-Hellman for initiations without MAC2, the
//! client's immediate retry with MAC2, and the per-address rate limit
//! (WireGuard paper Section 5.3). Scripted on `conn_util::Pair`.

use crate::conn_util;

mod cookies {
    use std::net::SocketAddr;

    use super::conn_util::*;
    use braid_core::conn::ratelimit::BURST;
    use braid_core::conn::{ConnConfig, Event};
    use braid_core::crypto::packet::TYPE_HANDSHAKE_INIT;
    use braid_core::crypto::COOKIE_REPLY_LEN;
    use braid_core::time::Instant;

    fn established_at(p: &Pair, after: Instant) -> Option<Instant> {
        p.client_events
            .iter()
            .find(|(t, e)| *t >= after && matches!(e, Event::Established { .. }))
            .map(|(t, _)| *t)
    }

    /// Message 1s the client sent, with their paths.
    fn inits(p: &Pair) -> Vec<(usize, Vec<u8>)> {
        p.capture
            .as_ref()
            .unwrap()
            .iter()
            .filter(|(_, b)| b.first() == Some(&TYPE_HANDSHAKE_INIT))
            .cloned()
            .collect()
    }

    fn has_mac2(init: &[u8]) -> bool {
        init[init.len() - 16..].iter().any(|&b| b != 0)
    }

    fn attacker() -> SocketAddr {
        "203.0.113.5:9999".parse().unwrap()
    }

    #[test]
    fn unloaded_server_sends_no_cookies() {
        let mut p = Pair::new(21, three_links());
        p.run_for(ms(500));
        assert!(p.client_established());
        let s = p.server.status(p.now);
        assert_eq!(s.counters.handshake_cookie, 0);
        assert_eq!(s.counters.handshakes, 1);
    }

    #[test]
    fn client_gets_through_a_loaded_server_with_a_cookie() {
        let mut p = Pair::new(22, three_links());
        p.server_under_load = true;
        p.capture = Some(Vec::new());
        p.run_for(ms(1000));
        // First attempt (sent before capturing) got cookie replies; the
        // retry went out at once with MAC2 on the path whose cookie came
        // first, and the server answered it: two round trips of the
        // 10 ms path, not the 5 s retry timer.
        let at = established_at(&p, Instant::ZERO).expect("established under load");
        assert!(at <= Instant::from_millis(60), "established at {at:?}");
        let s = p.server.status(p.now);
        assert!(s.counters.handshake_cookie >= 1, "{:?}", s.counters);
        assert_eq!(s.counters.handshakes, 1);
        assert_eq!(s.counters.handshake_failed, 0);
        let c = p.client.status(p.now).tunnel.counters;
        assert!(c.handshake_cookie >= 1, "{c:?}");
        assert!(inits(&p).iter().any(|(_, m)| has_mac2(m)));
        // The tunnel then carries data as usual.
        p.stream(0..100, ms(1));
        p.run_for(ms(500));
        assert_eq!(p.server_rx.len(), 100);
        assert_eq!(p.client_rx.len(), 100);
    }

    #[test]
    fn replayed_initiation_under_load_costs_no_diffie_hellman() {
        let mut p = Pair::new(23, three_links());
        p.run_for(ms(500));
        assert!(p.client_established());
        // Capture a genuine message 1 (a client restart sends one).
        p.capture = Some(Vec::new());
        p.restart_client(ConnConfig::default());
        p.run_for(ms(500));
        let (_, captured) = inits(&p).first().cloned().unwrap();
        let before = p.server.status(p.now).counters;
        p.server_under_load = true;
        for _ in 0..1000 {
            p.inject_from(attacker(), &captured);
        }
        let after = p.server.status(p.now).counters;
        // Every copy got a cookie reply to the attacker's own address and
        // reached neither the replay check nor the handshake, which come
        // after the DH.
        assert_eq!(after.handshake_cookie - before.handshake_cookie, 1000);
        assert_eq!(after.handshake_replay, before.handshake_replay);
        assert_eq!(after.handshakes, before.handshakes);
        assert_eq!(p.to_others.len(), 1000);
        assert!(p
            .to_others
            .iter()
            .all(|t| t.dest == attacker() && t.bytes.len() == COOKIE_REPLY_LEN));
        // A client restarted during the flood gets through within a few
        // round trips.
        let t = p.now;
        p.restart_client(ConnConfig::default());
        p.run_for(ms(1000));
        let at = established_at(&p, t).expect("restarted client established");
        assert!(
            at.saturating_since(t) <= ms(60),
            "{:?}",
            at.saturating_since(t)
        );
    }

    #[test]
    fn valid_mac2_flood_from_one_address_is_rate_limited() {
        let mut p = Pair::new(24, three_links());
        p.server_under_load = true;
        p.capture = Some(Vec::new());
        p.run_for(ms(500));
        assert!(p.client_established());
        // The retry that carried a valid MAC2 on its path, replayed from
        // that same address (as an attacker on the client's network
        // could).
        let (path, stamped) = inits(&p).into_iter().find(|(_, m)| has_mac2(m)).unwrap();
        let before = p.server.status(p.now).counters;
        for _ in 0..100 {
            p.inject_to_server(path, &stamped);
        }
        let after = p.server.status(p.now).counters;
        let limited = after.handshake_rate_limited - before.handshake_rate_limited;
        let replays = after.handshake_replay - before.handshake_replay;
        assert_eq!(limited + replays, 100);
        // The client's own handshake used part of the burst already.
        assert!(replays <= BURST, "{replays} reached the DH");
        assert!(limited >= 100 - BURST);
        assert_eq!(after.handshakes, before.handshakes);
    }
}
