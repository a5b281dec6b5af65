//! Property tests of the security layer (`braid_core::crypto`): arbitrary
//! input never panics and never authenticates, any bit flip is caught,
//! replays are refused, the handshake admits only the right keys, and
//! reordered traffic across a key rotation decrypts exactly once.
//!
//! The tests live in `mod crypto` so that `cargo test -p braid-core crypto`
//! selects them along with the unit tests.

mod crypto {
    use braid_core::crypto::{
        peek_receiver_index, CookieOpener, CryptoError, Gate, HandshakeError, Initiator,
        PacketType, PeerSessions, PrivateKey, PublicKey, Responder, Session, Tai64n,
        COOKIE_REPLY_LEN, INIT_MIN_LEN,
    };
    use braid_core::time::{Duration, Instant};
    use proptest::prelude::*;
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Wall-clock timestamp `secs` seconds into a fixed day.
    fn ts(secs: u64) -> Tai64n {
        Tai64n::from_unix_nanos(1_700_000_000_000_000_000 + secs * 1_000_000_000)
    }

    struct World {
        rng: ChaCha20Rng,
        client_key: PrivateKey,
        server: Responder,
    }

    impl World {
        fn new(seed: u64) -> World {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            let client_key = PrivateKey::generate(&mut rng);
            let server = Responder::new(PrivateKey::generate(&mut rng));
            World {
                rng,
                client_key,
                server,
            }
        }

        /// A complete handshake at `now` with timestamp `t`: (client, server).
        fn handshake(&mut self, t: u64, now: Instant) -> (Session, Session) {
            let server_pub = *self.server.public_key();
            let client_pub = self.client_key.public_key();
            let (mut init, msg1) = Initiator::new(
                &self.client_key,
                &server_pub,
                ts(t),
                b"",
                &mut self.rng,
                now,
            )
            .unwrap();
            let accepted = self
                .server
                .handle_init(&msg1, |k| *k == client_pub, b"", &mut self.rng, now)
                .unwrap();
            let established = init.handle_response(&accepted.response, now).unwrap();
            (established.session, accepted.session)
        }
    }

    /// Bytes that sometimes look like a transport packet for `index`, so that
    /// the property reaches the AEAD and not only the cheap checks.
    fn garbage(index: u32) -> impl Strategy<Value = Vec<u8>> {
        (proptest::collection::vec(any::<u8>(), 0..160), 0u8..4).prop_map(
            move |(mut bytes, shape)| {
                if shape > 0 && !bytes.is_empty() {
                    bytes[0] = [0x10, 0x11, 0x12][shape as usize - 1];
                    if shape == 1 && bytes.len() >= 5 {
                        bytes[1..5].copy_from_slice(&index.to_be_bytes());
                    }
                }
                bytes
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn arbitrary_bytes_never_panic_and_never_authenticate(
            seed in any::<u64>(),
            packets in proptest::collection::vec(garbage(0), 1..8),
        ) {
            let mut world = World::new(seed);
            let now = Instant::ZERO;
            let (mut client, mut server) = world.handshake(0, now);
            let index = server.local_index();
            let mut peer = PeerSessions::new();
            // A second, unconfirmed server-side session (`next`), which garbage
            // must not promote.
            let (c2, s2) = world.handshake(1, now + Duration::from_secs(1));
            peer.install(s2);
            let mut out = vec![];
            for mut bytes in packets {
                if bytes.len() >= 5 && bytes[0] == 0x10 {
                    bytes[1..5].copy_from_slice(&index.to_be_bytes());
                }
                let _ = PacketType::of(&bytes);
                let _ = peek_receiver_index(&bytes);
                prop_assert!(server.decrypt(&bytes, &mut out, now).is_err());
                prop_assert!(client.decrypt(&bytes, &mut out, now).is_err());
                prop_assert!(peer.decrypt(&bytes, &mut out, now).is_err());
                let allowed = |_: &PublicKey| true;
                prop_assert!(world.server.read_init(&bytes, allowed, &mut world.rng, now).is_err());
                let (mut init, _) = Initiator::new(
                    &world.client_key, world.server.public_key(), ts(2), b"", &mut world.rng, now,
                ).unwrap();
                prop_assert!(init.handle_response(&bytes, now).is_err());
            }
            prop_assert!(out.is_empty());
            prop_assert!(peer.current().is_none(), "garbage must not confirm a session");
            drop(c2);
        }

        /// Arbitrary bytes, also with the init and cookie-reply type bytes
        /// and lengths, never panic the MAC/cookie path, never pass MAC1,
        /// and never open as a cookie; under load a server answers none of
        /// them (they fail MAC1 first, so no cookie reply either).
        #[test]
        fn garbage_never_passes_mac1_or_opens_as_cookie(
            seed in any::<u64>(),
            packets in proptest::collection::vec(
                prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..700),
                    proptest::collection::vec(any::<u8>(), INIT_MIN_LEN..INIT_MIN_LEN + 40)
                        .prop_map(|mut b| { b[0] = 0x11; b }),
                    proptest::collection::vec(any::<u8>(), COOKIE_REPLY_LEN..=COOKIE_REPLY_LEN)
                        .prop_map(|mut b| { b[0] = 0x13; b }),
                ],
                1..24,
            ),
            under_load in any::<bool>(),
        ) {
            let mut world = World::new(seed);
            let now = Instant::from_millis(7);
            let from: std::net::SocketAddr = "192.0.2.3:1234".parse().unwrap();
            let (init, _) = Initiator::new(
                &world.client_key, world.server.public_key(), ts(2), b"", &mut world.rng, now,
            ).unwrap();
            let opener = CookieOpener::new(world.server.public_key());
            for mut bytes in packets {
                if bytes.len() == COOKIE_REPLY_LEN && bytes[0] == 0x13 {
                    // Address it to the live handshake so that only the AEAD
                    // can refuse it.
                    bytes[1..5].copy_from_slice(&init.local_index().to_be_bytes());
                    prop_assert_eq!(peek_receiver_index(&bytes), Some(init.local_index()));
                }
                let gate = world.server.gate_init(&bytes, from, under_load, &mut world.rng, now);
                prop_assert!(gate.is_err(), "{:?}", gate);
                prop_assert!(opener.open(&bytes, init.local_index(), init.mac1(), now).is_err());
            }
        }

        /// A genuine cookie reply with any one bit flipped does not open.
        #[test]
        fn cookie_reply_bit_flip_fails(seed in any::<u64>(), bit in any::<proptest::sample::Index>()) {
            let mut world = World::new(seed);
            let now = Instant::ZERO;
            let from: std::net::SocketAddr = "[2001:db8::5]:443".parse().unwrap();
            let (init, msg) = Initiator::new(
                &world.client_key, world.server.public_key(), ts(2), b"", &mut world.rng, now,
            ).unwrap();
            let Gate::CookieReply(mut reply) =
                world.server.gate_init(&msg, from, true, &mut world.rng, now).unwrap()
            else {
                panic!("under load without MAC2: a cookie reply");
            };
            let opener = CookieOpener::new(world.server.public_key());
            prop_assert!(opener.open(&reply, init.local_index(), init.mac1(), now).is_ok());
            let bit = bit.index(reply.len() * 8);
            reply[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(opener.open(&reply, init.local_index(), init.mac1(), now).is_err());
        }

        #[test]
        fn any_bit_flip_fails(
            seed in any::<u64>(),
            plaintext in proptest::collection::vec(any::<u8>(), 0..100),
            bit in any::<proptest::sample::Index>(),
        ) {
            let mut world = World::new(seed);
            let now = Instant::ZERO;
            let (mut client, mut server) = world.handshake(0, now);
            let mut packet = vec![];
            client.encrypt(&plaintext, &mut packet, now).unwrap();
            let bit = bit.index(packet.len() * 8);
            let mut flipped = packet.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let mut out = vec![];
            let err = server.decrypt(&flipped, &mut out, now).unwrap_err();
            match bit / 8 {
                0 => prop_assert_eq!(err, CryptoError::BadType),
                1..=4 => prop_assert_eq!(err, CryptoError::UnknownIndex),
                _ => prop_assert_eq!(err, CryptoError::AuthFailed),
            }
            prop_assert!(out.is_empty());
            // The forgery did not burn the genuine packet's counter.
            server.decrypt(&packet, &mut out, now).unwrap();
            prop_assert_eq!(out, plaintext);
        }

        #[test]
        fn replayed_packet_rejected(
            seed in any::<u64>(),
            plaintexts in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..20),
            replay in any::<proptest::sample::Index>(),
        ) {
            let mut world = World::new(seed);
            let now = Instant::ZERO;
            let (mut client, mut server) = world.handshake(0, now);
            let packets: Vec<Vec<u8>> = plaintexts.iter().map(|p| {
                let mut packet = vec![];
                client.encrypt(p, &mut packet, now).unwrap();
                packet
            }).collect();
            let mut out = vec![];
            for p in &packets {
                server.decrypt(p, &mut out, now).unwrap();
            }
            let again = replay.get(&packets);
            let len = out.len();
            prop_assert_eq!(server.decrypt(again, &mut out, now), Err(CryptoError::Replay));
            prop_assert_eq!(out.len(), len);
        }

        #[test]
        fn unknown_client_rejected(seed in any::<u64>(), others in 0usize..4) {
            let mut world = World::new(seed);
            let allowed: Vec<PublicKey> =
                (0..others).map(|_| PrivateKey::generate(&mut world.rng).public_key()).collect();
            let server_pub = *world.server.public_key();
            let (_, msg1) = Initiator::new(
                &world.client_key, &server_pub, ts(0), b"", &mut world.rng, Instant::ZERO,
            ).unwrap();
            let err = world.server
                .handle_init(&msg1, |k| allowed.contains(k), b"", &mut world.rng, Instant::ZERO)
                .unwrap_err();
            prop_assert_eq!(err, HandshakeError::UnknownClient);
        }

        #[test]
        fn wrong_server_key_fails(seed in any::<u64>()) {
            let mut world = World::new(seed);
            let wrong = PrivateKey::generate(&mut world.rng).public_key();
            let (_, msg1) = Initiator::new(
                &world.client_key, &wrong, ts(0), b"", &mut world.rng, Instant::ZERO,
            ).unwrap();
            let err = world.server
                .handle_init(&msg1, |_| true, b"", &mut world.rng, Instant::ZERO)
                .unwrap_err();
            // MAC1 is keyed by the server's public key: refused before DH.
            prop_assert_eq!(err, HandshakeError::BadMac);
        }
    }

    /// Delivers `packets` with bounded reordering (each packet moves at most
    /// `max_shift` places later) and some duplicates; returns the delivery
    /// order as indices into `packets`.
    fn scramble(n: usize, max_shift: u64, rng: &mut ChaCha20Rng) -> Vec<usize> {
        let mut keyed: Vec<(u64, u64, usize)> = Vec::with_capacity(n + n / 8);
        for i in 0..n {
            let copies = if rng.next_u32() < u32::MAX / 10 { 2 } else { 1 };
            for _ in 0..copies {
                let key = i as u64 + rng.next_u64() % (max_shift + 1);
                keyed.push((key, rng.next_u64(), i));
            }
        }
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, _, i)| i).collect()
    }

    /// One direction of the stream: encrypt `n` packets tagged with their
    /// number, switch `from` to `rotate` (if any) half-way, deliver scrambled,
    /// and check every packet decrypts exactly once.
    fn stream(
        from: &mut PeerSessions,
        to: &mut PeerSessions,
        rotate: Option<(Session, Session)>,
        n: usize,
        max_shift: u64,
        rng: &mut ChaCha20Rng,
        now: Instant,
    ) -> Result<(), TestCaseError> {
        let mut rotate = rotate;
        let mut packets = Vec::with_capacity(n);
        for i in 0..n {
            if i == n / 2 {
                if let Some((sender_side, receiver_side)) = rotate.take() {
                    from.install(sender_side);
                    to.install(receiver_side);
                }
            }
            let mut p = vec![];
            from.encrypt(&(i as u32).to_be_bytes(), &mut p, now)
                .unwrap();
            packets.push(p);
        }
        let mut seen = vec![0u32; n];
        let mut out = vec![];
        for i in scramble(n, max_shift, rng) {
            out.clear();
            match to.decrypt(&packets[i], &mut out, now) {
                Ok(()) => {
                    prop_assert_eq!(&out[..], &(i as u32).to_be_bytes()[..]);
                    seen[i] += 1;
                }
                Err(CryptoError::Replay) => prop_assert!(seen[i] == 1, "packet {} refused", i),
                Err(e) => return Err(TestCaseError::fail(format!("packet {i}: {e}"))),
            }
        }
        prop_assert!(
            seen.iter().all(|&c| c == 1),
            "not every packet exactly once"
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn thousand_packets_each_way_reordered_exactly_once(
            seed in any::<u64>(),
            max_shift in 0u64..4000,
            rekey in any::<bool>(),
        ) {
            let mut world = World::new(seed);
            let t0 = Instant::from_millis(1);
            let (c, s) = world.handshake(0, t0);
            let (mut client, mut server) = (PeerSessions::new(), PeerSessions::new());
            client.install(c);
            server.install(s);
            let mut confirm = vec![];
            client.encrypt(b"", &mut confirm, t0).unwrap();
            server.decrypt(&confirm, &mut vec![], t0).unwrap();

            let now = t0 + Duration::from_secs(1);
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ 0x5eed);
            // Upstream, optionally across a rekey: the server receives from the
            // old session and from the new `next` one, promoting it on its first
            // packet, while the old one keeps working for late packets.
            let rotation = rekey.then(|| world.handshake(10, now));
            stream(&mut client, &mut server, rotation, 1000, max_shift, &mut rng, now)?;
            // Downstream on whatever is current now.
            stream(&mut server, &mut client, None, 1000, max_shift, &mut rng, now)?;
            if rekey {
                prop_assert_eq!(client.local_indices().count(), 2);
                prop_assert_eq!(
                    server.current().unwrap().remote_index(),
                    client.current().unwrap().local_index()
                );
            }
        }
    }
}
