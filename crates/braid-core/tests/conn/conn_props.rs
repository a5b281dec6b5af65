//! Property tests of `braid_core::conn`: arbitrary datagrams and inner
//! packets never panic either end, never deliver anything, and never
//! disturb an established tunnel.

use crate::conn_util;

mod conn {
    use super::conn_util::*;
    use braid_core::time::Duration;
    use proptest::prelude::*;

    fn established() -> Pair {
        let mut p = Pair::new(21, three_links());
        p.run_for(Duration::from_millis(300));
        assert!(p.client_established());
        p
    }

    /// The tunnel still carries packets both ways.
    fn still_works(p: &mut Pair, from: u64) {
        let (up, down) = (p.server_rx.len(), p.client_rx.len());
        p.stream(from..from + 20, Duration::from_millis(1));
        p.run_for(Duration::from_millis(700));
        assert_eq!(p.server_rx.len(), up + 20);
        assert_eq!(p.client_rx.len(), down + 20);
    }

    fn arb_datagram() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..1600),
            // Valid type bytes with garbage after them.
            (
                prop_oneof![Just(0x10u8), Just(0x11), Just(0x12)],
                proptest::collection::vec(any::<u8>(), 0..400)
            )
                .prop_map(|(t, mut rest)| {
                    rest.insert(0, t);
                    rest
                }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_datagrams_never_panic_or_deliver(
            datagrams in proptest::collection::vec((arb_datagram(), 0usize..3), 1..16),
        ) {
            let mut p = established();
            for (d, path) in &datagrams {
                p.inject_to_server(*path, d);
                p.client.handle_datagram(p.now, braid_core::path::PathId(*path as u8), d);
                // A path id the client does not have.
                p.client.handle_datagram(p.now, braid_core::path::PathId(200), d);
                p.drain();
            }
            p.run_for(Duration::from_millis(50));
            prop_assert!(p.server_rx.is_empty());
            prop_assert!(p.client_rx.is_empty());
            still_works(&mut p, 0);
        }

        #[test]
        fn corrupted_datagrams_are_dropped(
            flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
            which in any::<prop::sample::Index>(),
        ) {
            let mut p = established();
            p.capture = Some(Vec::new());
            p.stream(0..30, Duration::from_millis(1));
            p.run_for(Duration::from_millis(500));
            let captured = p.capture.take().unwrap();
            let (path, mut bytes) = captured[which.index(captured.len())].clone();
            for (i, bit) in &flips {
                let i = i.index(bytes.len());
                bytes[i] ^= 1 << bit;
            }
            let before = p.server_rx.len();
            p.inject_to_server(path, &bytes);
            p.run_for(Duration::from_millis(600));
            // Either refused, or (flips cancelled out) a replay: never new data.
            prop_assert_eq!(p.server_rx.len(), before);
            still_works(&mut p, 30);
        }

        #[test]
        fn arbitrary_inner_packets_never_panic(
            packets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..1600), 1..16),
        ) {
            let mut p = established();
            for pkt in &packets {
                p.client.send_packet(p.now, pkt);
                p.server.send_packet(p.now, pkt);
                p.drain();
            }
            p.run_for(Duration::from_millis(600));
            // Only packets with the client's own source address go through.
            let me = p.client_address();
            for d in &p.server_rx {
                prop_assert_eq!(&d[12..16], &me.octets()[..]);
            }
            // The server only routes to the client's address.
            for d in &p.client_rx {
                prop_assert_eq!(&d[16..20], &me.octets()[..]);
            }
            still_works(&mut p, 0);
        }
    }
}
