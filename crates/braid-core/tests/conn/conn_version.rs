//! Mixed protocol versions refuse each other cleanly. Version 2 added the
//! NACK frame, the REPAIR data flag and the SKIP control message, which a
//! version-1 peer would drop as decode errors; so neither side makes a
//! session with the other, and each names the other's version for the
//! operator instead of failing without a reason.

use crate::conn_util;

mod version {
    use super::conn_util::*;
    use braid_core::conn::{
        ClientHello, ConnConfig, Connection, Output, RejectReason, ServerHello, TunnelParams,
        HELLO_VERSION,
    };
    use braid_core::crypto::{Initiator, Responder, Tai64n};
    use braid_core::path::PathId;
    use braid_core::time::{Duration, Instant};
    use std::net::Ipv4Addr;

    /// A version-1 client hello: the same layout, the old version byte.
    fn v1_client_hello(conn_id: u64) -> Vec<u8> {
        let mut b = ClientHello { conn_id }.to_bytes().to_vec();
        b[0] = 1;
        b
    }

    #[test]
    fn the_version_is_four() {
        assert_eq!(HELLO_VERSION, 4);
    }

    /// A version-1 client (admitted key, valid Noise message) reaches a
    /// version-2 server: no session, no state, the rejection names
    /// version 1; the version-2 client of the same key is unaffected.
    #[test]
    fn server_refuses_a_version_one_client_by_name() {
        use rand_chacha::rand_core::SeedableRng;
        let mut p = Pair::new(41, three_links());
        p.run_for(Duration::from_millis(300));
        assert!(p.client_established());
        let before = p.server.status(p.now);
        let (_, msg1) = Initiator::new(
            &p.client_key,
            &p.server_pub,
            Tai64n::from_unix_nanos(UNIX_AT_ZERO + 10_000_000_000),
            &v1_client_hello(7),
            &mut rand_chacha::ChaCha20Rng::seed_from_u64(9),
            p.now,
        )
        .unwrap();
        p.inject_to_server(0, &msg1);
        let r = p.server.last_rejection().expect("a rejection is recorded");
        assert_eq!(r.reason, RejectReason::Version { got: 1 });
        let after = p.server.status(p.now);
        assert_eq!(
            after.counters.handshake_failed,
            before.counters.handshake_failed + 1
        );
        assert_eq!(after.counters.handshakes, before.counters.handshakes);
        assert!(
            p.to_others.is_empty() && p.server_rx.is_empty(),
            "no answer to the old client"
        );
        // The current client's session survives: data still flows.
        p.stream(0..20, Duration::from_millis(1));
        p.run_for(Duration::from_millis(300));
        assert_eq!(p.server_rx.len(), 20);
    }

    /// A version-2 client meets a server answering with a version-1 hello:
    /// the client makes no session and its status names version 1.
    #[test]
    fn client_refuses_a_version_one_server_by_name() {
        use rand_chacha::rand_core::SeedableRng;
        let (mut rng, ck, sk) = keys(42);
        let mut client = Connection::client(
            ConnConfig::default(),
            ck.clone(),
            sk.public_key(),
            &[(PathId(0), server_addr())],
            UNIX_AT_ZERO,
            Instant::ZERO,
            &mut rng,
        )
        .unwrap();
        let init = std::iter::from_fn(|| client.poll_output())
            .find_map(|o| match o {
                Output::Transmit(t) => Some(t.bytes),
                _ => None,
            })
            .expect("the client sends message 1");
        let mut responder = Responder::new(sk);
        let client_pub = ck.public_key();
        let mut srng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let pending = responder
            .read_init(&init, |k| *k == client_pub, &mut srng, Instant::ZERO)
            .expect("a valid initiation");
        assert!(ClientHello::parse(pending.payload()).is_ok());
        let mut old_reply = ServerHello {
            epoch: 5,
            params: TunnelParams {
                address: Ipv4Addr::new(10, 77, 0, 2),
                prefix_len: 24,
                gateway: Ipv4Addr::new(10, 77, 0, 1),
                mtu: 1400,
            },
        }
        .to_bytes();
        old_reply[0] = 1;
        let accepted = pending.accept(&old_reply, Instant::ZERO).unwrap();
        let now = Instant::from_millis(20);
        client.handle_datagram(now, PathId(0), &accepted.response);
        let s = client.status(now);
        assert_eq!(s.server_version_refused, Some(1));
        assert_eq!(s.params, None, "no tunnel parameters from an old server");
        assert_eq!(s.tunnel.counters.handshake_failed, 1);
        assert_eq!(s.tunnel.counters.handshakes, 0);
        assert!(!client.is_established());
    }
}
