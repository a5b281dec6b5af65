//! `cargo +nightly fuzz run handshake_response`: the client's decoder of
//! handshake message 2 (`Initiator::handle_response`) on arbitrary bytes
//! never panics and never accepts a response whose Noise part was forged
//! (the sender index in the clear is, as in WireGuard, not authenticated);
//! a rejected response leaves the handshake usable (the genuine response
//! still completes it).
#![no_main]

use braid_core::crypto::Initiator;
use braid_fuzz::{initiator_and_response, T0};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

thread_local! {
    /// One pending handshake, reused while responses fail (that they leave
    /// it usable is part of what is checked): making a new one per input
    /// would spend the time on key agreement instead of the decoder.
    static PENDING: RefCell<(Initiator, Vec<u8>, u32)> = RefCell::new({
        let (i, g) = initiator_and_response();
        (i, g, 0)
    });
}

fuzz_target!(|data: &[u8]| {
    PENDING.with(|p| check(&mut p.borrow_mut(), data));
});

fn check(pending: &mut (Initiator, Vec<u8>, u32), data: &[u8]) {
    let (initiator, genuine, tries) = pending;
    let mut packet = data.to_vec();
    // Aim at the pending handshake so the checks past the index run too.
    if packet.len() >= 9 && packet[0] == braid_core::crypto::packet::TYPE_HANDSHAKE_RESPONSE {
        packet[5..9].copy_from_slice(&initiator.local_index().to_be_bytes());
    }
    if packet == *genuine {
        return;
    }
    let accepted = match initiator.handle_response(&packet, T0) {
        Ok(_) => {
            assert_eq!(
                &packet[9..],
                &genuine[9..],
                "a forged response was accepted"
            );
            true
        }
        Err(_) => {
            *tries += 1;
            // Every so often, and after an acceptance, check that the
            // genuine response still completes it, then start afresh.
            if *tries % 1000 == 0 {
                assert!(
                    initiator.handle_response(genuine, T0).is_ok(),
                    "a rejected response broke the handshake"
                );
                true
            } else {
                false
            }
        }
    };
    if accepted {
        let (i, g) = initiator_and_response();
        *pending = (i, g, 0);
    }
}
