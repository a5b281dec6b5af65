//! Unit tests of MAC2 and the cookie reply.

use super::*;
use crate::crypto::handshake::{Gate, Initiator, Responder, Tai64n};
use crate::crypto::keys::PrivateKey;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

struct World {
    rng: ChaCha20Rng,
    client: PrivateKey,
    server: Responder,
    opener: CookieOpener,
}

fn world(seed: u64) -> World {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let client = PrivateKey::generate(&mut rng);
    let server = Responder::new(PrivateKey::generate(&mut rng));
    let opener = CookieOpener::new(server.public_key());
    World {
        rng,
        client,
        server,
        opener,
    }
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn ts(n: u64) -> Tai64n {
    Tai64n::from_unix_nanos(1_700_000_000_000_000_000 + n * 1_000_000_000)
}

impl World {
    fn init(&mut self, n: u64, now: Instant) -> (Initiator, Vec<u8>) {
        let server = *self.server.public_key();
        Initiator::new(&self.client, &server, ts(n), b"", &mut self.rng, now).unwrap()
    }
    fn gate(&mut self, msg: &[u8], from: SocketAddr, load: bool, now: Instant) -> Gate {
        self.server
            .gate_init(msg, from, load, &mut self.rng, now)
            .unwrap()
    }
    fn reply(&mut self, msg: &[u8], from: SocketAddr, now: Instant) -> Vec<u8> {
        match self.gate(msg, from, true, now) {
            Gate::CookieReply(r) => r,
            Gate::Proceed => panic!("expected a cookie reply"),
        }
    }
}

#[test]
fn cookie_round_trip_lets_the_retry_through_under_load() {
    let mut w = world(1);
    let a = addr("192.0.2.1:4000");
    let t0 = Instant::from_millis(5);
    let (init, msg) = w.init(0, t0);
    // Not under load: MAC1 suffices.
    assert_eq!(w.gate(&msg, a, false, t0), Gate::Proceed);
    // Under load: no DH, a cookie reply smaller than the message.
    let reply = w.reply(&msg, a, t0);
    assert_eq!(reply.len(), COOKIE_REPLY_LEN);
    assert!(reply.len() < msg.len());
    assert_eq!(
        crate::crypto::peek_receiver_index(&reply),
        Some(init.local_index())
    );
    let cookie = w
        .opener
        .open(&reply, init.local_index(), init.mac1(), t0)
        .unwrap();
    // The retry carries MAC2 and gets through from the same address only.
    let (_, mut retry) = w.init(1, t0);
    cookie.stamp(&mut retry);
    assert_eq!(w.gate(&retry, a, true, t0), Gate::Proceed);
    assert!(matches!(
        w.gate(&retry, addr("192.0.2.1:4001"), true, t0),
        Gate::CookieReply(_)
    ));
    assert!(matches!(
        w.gate(&retry, addr("192.0.2.2:4000"), true, t0),
        Gate::CookieReply(_)
    ));
    assert!(matches!(
        w.gate(&retry, addr("[2001:db8::1]:4000"), true, t0),
        Gate::CookieReply(_)
    ));
    // A changed byte anywhere before MAC2 breaks MAC1 first.
    let mut bad = retry.clone();
    bad[10] ^= 1;
    assert_eq!(
        w.server
            .gate_init(&bad, a, true, &mut w.rng, t0)
            .unwrap_err(),
        HandshakeError::BadMac
    );
    // A changed MAC2 asks for a cookie again.
    let mut bad = retry.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert!(matches!(w.gate(&bad, a, true, t0), Gate::CookieReply(_)));
}

#[test]
fn reply_opens_only_for_its_message() {
    let mut w = world(2);
    let a = addr("198.51.100.7:51820");
    let t0 = Instant::ZERO;
    let (init, msg) = w.init(0, t0);
    let (other, _) = w.init(1, t0);
    let reply = w.reply(&msg, a, t0);
    assert_eq!(
        w.opener
            .open(&reply, init.local_index(), other.mac1(), t0)
            .unwrap_err(),
        HandshakeError::Decrypt
    );
    assert_eq!(
        w.opener
            .open(&reply, other.local_index(), init.mac1(), t0)
            .unwrap_err(),
        HandshakeError::UnknownIndex
    );
    assert_eq!(
        w.opener
            .open(
                &reply[..COOKIE_REPLY_LEN - 1],
                init.local_index(),
                init.mac1(),
                t0
            )
            .unwrap_err(),
        HandshakeError::Truncated
    );
    let mut long = reply.clone();
    long.push(0);
    assert_eq!(
        w.opener
            .open(&long, init.local_index(), init.mac1(), t0)
            .unwrap_err(),
        HandshakeError::TooLong
    );
    let mut typed = reply.clone();
    typed[0] = 0x12;
    assert_eq!(
        w.opener
            .open(&typed, init.local_index(), init.mac1(), t0)
            .unwrap_err(),
        HandshakeError::BadType
    );
    for i in 5..COOKIE_REPLY_LEN {
        let mut bad = reply.clone();
        bad[i] ^= 0x80;
        assert_eq!(
            w.opener
                .open(&bad, init.local_index(), init.mac1(), t0)
                .unwrap_err(),
            HandshakeError::Decrypt,
            "byte {i}"
        );
    }
    // Another server's key cannot open it.
    let stranger = CookieOpener::new(&PrivateKey::generate(&mut w.rng).public_key());
    assert_eq!(
        stranger
            .open(&reply, init.local_index(), init.mac1(), t0)
            .unwrap_err(),
        HandshakeError::Decrypt
    );
    assert!(w
        .opener
        .open(&reply, init.local_index(), init.mac1(), t0)
        .is_ok());
}

#[test]
fn cookies_expire_with_their_secret_and_the_secret_rotates() {
    let mut w = world(3);
    let a = addr("203.0.113.9:1000");
    let t0 = Instant::from_millis(1);
    let (init, msg) = w.init(0, t0);
    let reply = w.reply(&msg, a, t0);
    let cookie = w
        .opener
        .open(&reply, init.local_index(), init.mac1(), t0)
        .unwrap();
    let almost = t0 + COOKIE_SECRET_LIFETIME - Duration::from_millis(1);
    let expired = t0 + COOKIE_SECRET_LIFETIME;
    assert!(cookie.is_fresh(almost));
    assert!(!cookie.is_fresh(expired));
    let (_, mut retry) = w.init(1, t0);
    cookie.stamp(&mut retry);
    assert_eq!(w.gate(&retry, a, true, almost), Gate::Proceed);
    // Two minutes after the secret was drawn, its cookies are refused...
    let (init2, msg2) = w.init(2, expired);
    let reply2 = match w.gate(&retry, a, true, expired) {
        Gate::CookieReply(_) => w.reply(&msg2, a, expired),
        Gate::Proceed => panic!("cookie of an expired secret accepted"),
    };
    // ...and the next reply is under a new secret: a new cookie for the
    // same address, which works while the old one still does not.
    let fresh = w
        .opener
        .open(&reply2, init2.local_index(), init2.mac1(), expired)
        .unwrap();
    assert_ne!(*fresh.value, *cookie.value, "secret rotated");
    let (_, mut retry2) = w.init(3, expired);
    fresh.stamp(&mut retry2);
    assert_eq!(w.gate(&retry2, a, true, expired), Gate::Proceed);
    let (_, mut stale) = w.init(4, expired);
    cookie.stamp(&mut stale);
    assert!(matches!(
        w.gate(&stale, a, true, expired),
        Gate::CookieReply(_)
    ));
}

#[test]
fn no_cookie_before_any_secret_and_garbage_refused_cheaply() {
    let mut w = world(4);
    let a = addr("192.0.2.50:9");
    let t0 = Instant::ZERO;
    let (_, msg) = w.init(0, t0);
    // No secret yet: MAC2 (zeros) cannot be valid.
    let checker = CookieChecker::new(w.server.public_key());
    assert!(checker.check_mac1(&msg));
    assert!(!checker.check_mac2(&msg, a, t0));
    for bad in [&[][..], &[0x11; 10][..], &msg[..msg.len() - 1]] {
        assert!(w.server.gate_init(bad, a, true, &mut w.rng, t0).is_err());
    }
    let mut wrong_type = msg.clone();
    wrong_type[0] = 0x10;
    assert_eq!(
        w.server
            .gate_init(&wrong_type, a, true, &mut w.rng, t0)
            .unwrap_err(),
        HandshakeError::BadType
    );
    assert_eq!(cookie_reply_receiver(&msg), None);
}
