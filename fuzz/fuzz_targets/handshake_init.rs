//! `cargo +nightly fuzz run handshake_init`: the server's decoder of
//! handshake message 1 (`Responder::read_init`: length, type, MAC1, Noise
//! IK, timestamp) on arbitrary bytes never panics and never accepts a
//! forged message. A valid message 1 with its bytes mutated by the fuzzer
//! reaches the checks past MAC1 too (the first input byte chooses). MAC2,
//! the message's last 16 bytes, is checked only under load
//! (`Responder::gate_init`), not by `read_init`, so a message that differs
//! from the genuine one only there is still genuine here.
#![no_main]

use braid_core::crypto::handshake::MAC1_LEN;
use braid_core::crypto::Responder;
use braid_fuzz::{keys, rng, valid_init, T0};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (client, server) = keys();
    let mut responder = Responder::new(server);
    let allowed = client.public_key();
    let packet = match data.split_first() {
        // Flip bytes of a genuine message: XOR the rest of the input in.
        Some((0, rest)) => {
            let genuine = valid_init();
            let mut m = genuine.clone();
            for (b, x) in m.iter_mut().zip(rest) {
                *b ^= x;
            }
            let covered = genuine.len() - MAC1_LEN; // all but MAC2
            if m[..covered] == genuine[..covered] {
                return; // genuine up to MAC2: accepted, rightly
            }
            m
        }
        _ => data.to_vec(),
    };
    let r = responder.read_init(&packet, |k| *k == allowed, &mut rng(7), T0);
    assert!(r.is_err(), "a forged or mangled message 1 was accepted");
});
