//! `cargo +nightly fuzz run handshake_response`: the client's decoder of
//! handshake message 2 (`Initiator::handle_response`) on arbitrary bytes
//! never panics and never accepts a response whose Noise part was forged
//! (the sender index in the clear is, as in WireGuard, not authenticated);
//! a rejected response leaves the handshake usable (the genuine response
//! still completes it).
#![no_main]

use braid_fuzz::{initiator_and_response, T0};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (mut initiator, genuine) = initiator_and_response();
    let mut packet = data.to_vec();
    // Aim at the pending handshake so the checks past the index run too.
    if packet.len() >= 9 && packet[0] == braid_core::crypto::packet::TYPE_HANDSHAKE_RESPONSE {
        packet[5..9].copy_from_slice(&initiator.local_index().to_be_bytes());
    }
    if packet == genuine {
        return;
    }
    match initiator.handle_response(&packet, T0) {
        Ok(_) => assert_eq!(&packet[9..], &genuine[9..], "a forged response was accepted"),
        Err(_) => assert!(initiator.handle_response(&genuine, T0).is_ok()),
    }
});
