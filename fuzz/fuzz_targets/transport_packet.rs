//! `cargo +nightly fuzz run transport_packet`: the outer packet's type
//! byte and transport header (`PacketType::of`, `peek_receiver_index`)
//! and a session's full transport decoder (`Session::decrypt`: length,
//! type, index, replay window, authentication) on arbitrary bytes never
//! panic, and a forged packet is never accepted.
#![no_main]

use braid_core::crypto::{peek_receiver_index, PacketType};
use braid_fuzz::{established_pair, Pair};
use libfuzzer_sys::fuzz_target;
use std::sync::Mutex;

static PAIR: Mutex<Option<Pair>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let kind = PacketType::of(data);
    let index = peek_receiver_index(data);
    if kind.is_none() {
        assert!(index.is_none());
    }
    let mut guard = PAIR.lock().unwrap();
    let pair = guard.get_or_insert_with(established_pair);
    // Aim the packet at the live session so that the checks past the index
    // run too; the fuzzer cannot forge the tag, so decryption must fail.
    let mut packet = data.to_vec();
    if packet.len() >= 5 && packet[0] == braid_core::crypto::packet::TYPE_TRANSPORT {
        packet[1..5].copy_from_slice(&pair.server.local_index().to_be_bytes());
    }
    let mut out = Vec::new();
    assert!(pair.server.decrypt(&packet, &mut out, pair.now).is_err());
    assert!(out.is_empty(), "a failed decrypt leaves `out` unchanged");
});
