//! Shared set-up of the fuzz targets: fixed keys, a seeded RNG, and
//! genuine handshakes, so that targets can reach the checks that come
//! after authentication.

use braid_core::conn::{ClientEntry, ClientHello, Output, Server, ServerConfig};
use braid_core::crypto::{Initiator, PrivateKey, Responder, Session, Tai64n};
use braid_core::time::Instant;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::sync::OnceLock;

/// The fuzzers' clock: an arbitrary, fixed start.
pub const T0: Instant = Instant::from_millis(1_000);

/// A seeded RNG (the core takes randomness from its caller).
pub fn rng(seed: u8) -> ChaCha20Rng {
    ChaCha20Rng::from_seed([seed; 32])
}

/// (client key, server key), the same on every call (made once: key
/// generation would otherwise dominate the targets' time).
pub fn keys() -> (PrivateKey, PrivateKey) {
    static KEYS: OnceLock<(PrivateKey, PrivateKey)> = OnceLock::new();
    KEYS.get_or_init(|| {
        (
            PrivateKey::generate(&mut rng(1)),
            PrivateKey::generate(&mut rng(2)),
        )
    })
    .clone()
}

/// A genuine handshake message 1 from the client to the server (made
/// once).
pub fn valid_init() -> Vec<u8> {
    static INIT: OnceLock<Vec<u8>> = OnceLock::new();
    INIT.get_or_init(make_init).clone()
}

fn make_init() -> Vec<u8> {
    let (client, server) = keys();
    let hello = ClientHello { conn_id: 1 }.to_bytes();
    Initiator::new(
        &client,
        &server.public_key(),
        Tai64n::from_unix_nanos(1_000_000_000),
        &hello,
        &mut rng(3),
        T0,
    )
    .expect("message 1")
    .1
}

/// A client's pending handshake and the server's genuine response to it.
pub fn initiator_and_response() -> (Initiator, Vec<u8>) {
    let (client, server) = keys();
    let hello = ClientHello { conn_id: 1 }.to_bytes();
    let (initiator, init) = Initiator::new(
        &client,
        &server.public_key(),
        Tai64n::from_unix_nanos(1_000_000_000),
        &hello,
        &mut rng(3),
        T0,
    )
    .expect("message 1");
    let mut responder = Responder::new(server);
    let allowed = client.public_key();
    let accepted = responder
        .handle_init(&init, |k| *k == allowed, &[], &mut rng(4), T0)
        .expect("genuine message 1 accepted");
    (initiator, accepted.response)
}

/// Both ends of one established session.
pub struct Pair {
    pub client: Session,
    pub server: Session,
    pub now: Instant,
}

/// A completed handshake: the client's and the server's session.
pub fn established_pair() -> Pair {
    let (client, server) = keys();
    let hello = ClientHello { conn_id: 1 }.to_bytes();
    let (mut initiator, init) = Initiator::new(
        &client,
        &server.public_key(),
        Tai64n::from_unix_nanos(1_000_000_000),
        &hello,
        &mut rng(3),
        T0,
    )
    .expect("message 1");
    let mut responder = Responder::new(server);
    let allowed = client.public_key();
    let accepted = responder
        .handle_init(&init, |k| *k == allowed, &[], &mut rng(4), T0)
        .expect("genuine message 1 accepted");
    let established = initiator
        .handle_response(&accepted.response, T0)
        .expect("genuine response accepted");
    Pair {
        client: established.session,
        server: accepted.session,
        now: T0,
    }
}

/// A server that admits the fuzzers' client key.
pub fn server() -> Server {
    let (client, server_key) = keys();
    let cfg = ServerConfig::new(
        braid_core::conn::Ipv4Net::parse("10.99.0.0/24").expect("network"),
        vec![ClientEntry {
            name: "fuzz".into(),
            key: client.public_key(),
            address: None,
        }],
    );
    Server::new(cfg, server_key, &mut rng(5)).expect("server")
}

/// Completes a genuine handshake with `srv` and returns the client's
/// session, whose packets the server accepts.
pub fn client_session_with(srv: &mut Server, now: Instant) -> Session {
    let (client, server_key) = keys();
    let hello = ClientHello { conn_id: 7 }.to_bytes();
    let (mut initiator, init) = Initiator::new(
        &client,
        &server_key.public_key(),
        Tai64n::from_unix_nanos(1_000_000_000),
        &hello,
        &mut rng(6),
        now,
    )
    .expect("message 1");
    let from = std::net::SocketAddr::from(([192, 0, 2, 1], 40000));
    srv.handle_datagram(now, from, &init);
    let mut response = None;
    while let Some(o) = srv.poll_output() {
        if let Output::Transmit(t) = o {
            if t.bytes.first() == Some(&braid_core::crypto::packet::TYPE_HANDSHAKE_RESPONSE) {
                response = Some(t.bytes);
            }
        }
    }
    initiator
        .handle_response(&response.expect("the server answered"), now)
        .expect("genuine response accepted")
        .session
}
