//! `cargo +nightly fuzz run handshake_gate`: the server's cheap checks of a
//! handshake initiation (MAC1, MAC2, cookie reply) and the client's cookie
//! reply decoder never panic on arbitrary bytes, and nothing arbitrary
//! passes MAC1 or opens as a cookie.
#![no_main]

use braid_core::crypto::{CookieOpener, Initiator, PrivateKey, Responder, Tai64n};
use braid_core::time::Instant;
use libfuzzer_sys::fuzz_target;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

fuzz_target!(|data: &[u8]| {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut server = Responder::new(PrivateKey::from_bytes([7; 32]));
    let client = PrivateKey::from_bytes([9; 32]);
    let now = Instant::from_millis(1);
    let from = "192.0.2.1:9".parse().unwrap();
    let under_load = data.first().is_some_and(|b| b & 1 == 1);
    assert!(server
        .gate_init(data, from, under_load, &mut rng, now)
        .is_err());
    let (init, _) = Initiator::new(
        &client,
        server.public_key(),
        Tai64n::from_unix_nanos(1),
        b"",
        &mut rng,
        now,
    )
    .unwrap();
    let opener = CookieOpener::new(server.public_key());
    assert!(opener
        .open(data, init.local_index(), init.mac1(), now)
        .is_err());
});
