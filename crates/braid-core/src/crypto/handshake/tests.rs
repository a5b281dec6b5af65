//! Unit tests of the Noise IK handshake.

use super::*;
use crate::crypto::packet::peek_receiver_index;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

struct Setup {
    rng: ChaCha20Rng,
    client: PrivateKey,
    server: Responder,
}

fn setup(seed: u64) -> Setup {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let client = PrivateKey::generate(&mut rng);
    let server = Responder::new(PrivateKey::generate(&mut rng));
    Setup {
        rng,
        client,
        server,
    }
}

fn ts(secs: u64) -> Tai64n {
    Tai64n::from_unix_nanos(1_700_000_000_000_000_000 + secs * 1_000_000_000)
}

#[test]
fn full_handshake_with_payloads() {
    let Setup {
        mut rng,
        client,
        mut server,
    } = setup(1);
    let client_pub = client.public_key();
    let server_pub = *server.public_key();
    let now = Instant::from_millis(10);
    let (mut init, msg1) =
        Initiator::new(&client, &server_pub, ts(0), b"hello", &mut rng, now).unwrap();
    assert_eq!(msg1[0], TYPE_HANDSHAKE_INIT);
    assert_eq!(msg1.len(), INIT_MIN_LEN + 5);
    assert_eq!(peek_receiver_index(&msg1), None);

    let pending = server
        .read_init(&msg1, |k| *k == client_pub, &mut rng, now)
        .unwrap();
    assert_eq!(pending.client(), &client_pub);
    assert_eq!(pending.payload(), b"hello");
    assert_eq!(pending.timestamp(), ts(0));
    let accepted = pending.accept(b"10.0.0.2/32", now).unwrap();
    assert_eq!(accepted.response.len(), RESPONSE_MIN_LEN + 11);
    assert_eq!(
        peek_receiver_index(&accepted.response),
        Some(init.local_index())
    );

    let established = init.handle_response(&accepted.response, now).unwrap();
    assert_eq!(established.payload, b"10.0.0.2/32");
    let (mut c, mut s) = (established.session, accepted.session);
    assert!(c.is_initiator() && !s.is_initiator());
    assert_eq!(c.local_index(), s.remote_index());
    assert_eq!(c.remote_index(), s.local_index());

    let (mut p, mut out) = (vec![], vec![]);
    c.encrypt(b"up", &mut p, now).unwrap();
    s.decrypt(&p, &mut out, now).unwrap();
    assert_eq!(out, b"up");
    p.clear();
    out.clear();
    s.encrypt(b"down", &mut p, now).unwrap();
    c.decrypt(&p, &mut out, now).unwrap();
    assert_eq!(out, b"down");

    // The initiator is spent.
    assert_eq!(
        init.handle_response(&accepted.response, now).unwrap_err(),
        HandshakeError::Finished
    );
    assert!(!init.should_retry(now + REKEY_TIMEOUT));
}

#[test]
fn unknown_client_rejected_before_reply() {
    let Setup {
        mut rng,
        client,
        mut server,
    } = setup(2);
    let server_pub = *server.public_key();
    let (_, msg1) =
        Initiator::new(&client, &server_pub, ts(0), b"", &mut rng, Instant::ZERO).unwrap();
    let err = server
        .read_init(&msg1, |_| false, &mut rng, Instant::ZERO)
        .unwrap_err();
    assert_eq!(err, HandshakeError::UnknownClient);
    // A refused client leaves no replay state behind.
    assert!(server.clients.is_empty());
}

#[test]
fn wrong_server_key_fails() {
    let Setup {
        mut rng,
        client,
        mut server,
    } = setup(3);
    let other = PrivateKey::generate(&mut rng).public_key();
    let (_, msg1) = Initiator::new(&client, &other, ts(0), b"", &mut rng, Instant::ZERO).unwrap();
    // MAC1 is keyed by the server's public key: refused before any DH.
    let err = server
        .read_init(&msg1, |_| true, &mut rng, Instant::ZERO)
        .unwrap_err();
    assert_eq!(err, HandshakeError::BadMac);
    // Even with a MAC1 that matches this server, Noise fails.
    let err = server
        .read_init(
            &remac(&msg1, server.public_key()),
            |_| true,
            &mut rng,
            Instant::ZERO,
        )
        .unwrap_err();
    assert_eq!(err, HandshakeError::Decrypt);
}

/// `msg` with its MAC1 recomputed for `server` (what a sender that knows
/// the server's public key can do).
fn remac(msg: &[u8], server: &PublicKey) -> Vec<u8> {
    let mut out = msg.to_vec();
    cookie::write_mac1(&cookie::mac1_key(server), &mut out);
    out
}

#[test]
fn replayed_init_rejected_and_newer_accepted() {
    let Setup {
        mut rng,
        client,
        mut server,
    } = setup(4);
    let server_pub = *server.public_key();
    let t0 = Instant::from_millis(1_000);
    let (_, msg1) = Initiator::new(&client, &server_pub, ts(5), b"", &mut rng, t0).unwrap();
    server.read_init(&msg1, |_| true, &mut rng, t0).unwrap();
    let later = t0 + Duration::from_secs(1);
    assert_eq!(
        server
            .read_init(&msg1, |_| true, &mut rng, later)
            .unwrap_err(),
        HandshakeError::Replay
    );
    // An older timestamp (client clock went back) is refused too.
    let (_, old) = Initiator::new(&client, &server_pub, ts(4), b"", &mut rng, t0).unwrap();
    assert_eq!(
        server
            .read_init(&old, |_| true, &mut rng, later)
            .unwrap_err(),
        HandshakeError::Replay
    );
    // Newer, but too soon: flood.
    let (_, fast) = Initiator::new(&client, &server_pub, ts(6), b"", &mut rng, t0).unwrap();
    assert_eq!(
        server
            .read_init(&fast, |_| true, &mut rng, t0 + Duration::from_millis(5))
            .unwrap_err(),
        HandshakeError::Flood
    );
    server.read_init(&fast, |_| true, &mut rng, later).unwrap();
    // Forgetting the client re-admits the old message (documented risk).
    server.forget_client(&client.public_key());
    server.read_init(&old, |_| true, &mut rng, later).unwrap();
}

#[test]
fn forged_response_does_not_abort_handshake() {
    let Setup {
        mut rng,
        client,
        mut server,
    } = setup(5);
    let server_pub = *server.public_key();
    let now = Instant::ZERO;
    let (mut init, msg1) = Initiator::new(&client, &server_pub, ts(0), b"", &mut rng, now).unwrap();
    let accepted = server
        .handle_init(&msg1, |_| true, b"ok", &mut rng, now)
        .unwrap();
    let good = accepted.response;

    let mut forged = good.clone();
    *forged.last_mut().unwrap() ^= 1;
    assert_eq!(
        init.handle_response(&forged, now).unwrap_err(),
        HandshakeError::Decrypt
    );
    let mut other_index = good.clone();
    other_index[8] ^= 1;
    assert_eq!(
        init.handle_response(&other_index, now).unwrap_err(),
        HandshakeError::UnknownIndex
    );
    assert_eq!(
        init.handle_response(&good[..20], now).unwrap_err(),
        HandshakeError::Truncated
    );
    let mut wrong_type = good.clone();
    wrong_type[0] = TYPE_HANDSHAKE_INIT;
    assert_eq!(
        init.handle_response(&wrong_type, now).unwrap_err(),
        HandshakeError::BadType
    );

    let established = init.handle_response(&good, now).unwrap();
    assert_eq!(established.payload, b"ok");
}

#[test]
fn malformed_init_rejected() {
    let Setup {
        mut rng,
        client,
        mut server,
    } = setup(6);
    let server_pub = *server.public_key();
    let (_, msg1) =
        Initiator::new(&client, &server_pub, ts(0), b"", &mut rng, Instant::ZERO).unwrap();
    let now = Instant::ZERO;
    assert_eq!(
        server
            .read_init(&msg1[..INIT_MIN_LEN - 1], |_| true, &mut rng, now)
            .unwrap_err(),
        HandshakeError::Truncated
    );
    let long = vec![TYPE_HANDSHAKE_INIT; INIT_MAX_LEN + 1];
    assert_eq!(
        server
            .read_init(&long, |_| true, &mut rng, now)
            .unwrap_err(),
        HandshakeError::TooLong
    );
    let mut bad = msg1.clone();
    bad[0] = TYPE_HANDSHAKE_RESPONSE;
    assert_eq!(
        server.read_init(&bad, |_| true, &mut rng, now).unwrap_err(),
        HandshakeError::BadType
    );
    let server_pub = *server.public_key();
    for i in 0..msg1.len() {
        let mut bad = msg1.clone();
        bad[i] ^= 0x20;
        if i == 0 || i >= msg1.len() - MAC1_LEN {
            continue; // the type byte, checked above; MAC2 (see cookie tests)
        }
        // Any changed byte breaks MAC1: no DH is spent on it.
        assert_eq!(
            server.read_init(&bad, |_| true, &mut rng, now).unwrap_err(),
            HandshakeError::BadMac,
            "byte {i}"
        );
        // With MAC1 recomputed, Noise catches a change to its message.
        if i >= INIT_HEADER_LEN && i < msg1.len() - 2 * MAC1_LEN {
            assert_eq!(
                server
                    .read_init(&remac(&bad, &server_pub), |_| true, &mut rng, now)
                    .unwrap_err(),
                HandshakeError::Decrypt,
                "byte {i}"
            );
        }
    }
    // Low-order ephemeral (all zeros) is refused by the DH check.
    let mut zero_e = msg1.clone();
    zero_e[INIT_HEADER_LEN..INIT_HEADER_LEN + 32].fill(0);
    let zero_e = remac(&zero_e, &server_pub);
    assert_eq!(
        server
            .read_init(&zero_e, |_| true, &mut rng, now)
            .unwrap_err(),
        HandshakeError::Decrypt
    );
    // The untouched message is still fine afterwards.
    server.read_init(&msg1, |_| true, &mut rng, now).unwrap();
}

#[test]
fn payload_limits() {
    let Setup {
        mut rng,
        client,
        mut server,
    } = setup(7);
    let server_pub = *server.public_key();
    let big = vec![7u8; MAX_HANDSHAKE_PAYLOAD + 1];
    let now = Instant::ZERO;
    assert_eq!(
        Initiator::new(&client, &server_pub, ts(0), &big, &mut rng, now).unwrap_err(),
        HandshakeError::PayloadTooLarge
    );
    let max = &big[..MAX_HANDSHAKE_PAYLOAD];
    let (mut init, msg1) = Initiator::new(&client, &server_pub, ts(0), max, &mut rng, now).unwrap();
    assert_eq!(msg1.len(), INIT_MAX_LEN);
    assert_eq!(
        server
            .handle_init(&msg1, |_| true, &big, &mut rng, now)
            .unwrap_err(),
        HandshakeError::PayloadTooLarge
    );
    let accepted = server
        .handle_init(&msg1, |_| true, max, &mut rng, now)
        .unwrap();
    assert_eq!(accepted.payload, max);
    assert_eq!(accepted.response.len(), RESPONSE_MAX_LEN);
    assert_eq!(
        init.handle_response(&accepted.response, now)
            .unwrap()
            .payload,
        max
    );
}

#[test]
fn deterministic_under_seed() {
    let run = || {
        let Setup {
            mut rng,
            client,
            server,
        } = setup(8);
        Initiator::new(
            &client,
            server.public_key(),
            ts(0),
            b"x",
            &mut rng,
            Instant::ZERO,
        )
        .unwrap()
        .1
    };
    assert_eq!(run(), run());
}

#[test]
fn tai64n_orders_like_time() {
    let a = Tai64n::from_unix_nanos(1_999_999_999);
    let b = Tai64n::from_unix_nanos(2_000_000_000);
    assert!(a < b);
    assert!(a.to_bytes() < b.to_bytes());
    assert_eq!(Tai64n::from_bytes(&b.to_bytes()), b);
    assert_eq!(
        &b.to_bytes()[..8],
        &(0x4000_0000_0000_000a_u64 + 2).to_be_bytes()
    );
}

#[test]
fn retry_after_rekey_timeout() {
    let Setup {
        mut rng,
        client,
        server,
    } = setup(9);
    let t0 = Instant::from_millis(500);
    let (init, _) = Initiator::new(&client, server.public_key(), ts(0), b"", &mut rng, t0).unwrap();
    assert!(!init.should_retry(t0 + Duration::from_millis(4_999)));
    assert!(init.should_retry(t0 + REKEY_TIMEOUT));
}
