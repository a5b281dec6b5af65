//! `cargo +nightly fuzz run hello`: the handshake payloads (`ClientHello`,
//! `ServerHello`) decode arbitrary bytes without panicking, and whatever
//! decodes encodes back to the same bytes.
#![no_main]

use braid_core::conn::{ClientHello, ServerHello};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = ClientHello::parse(data) {
        assert_eq!(&h.to_bytes()[..], data);
    }
    if let Ok(h) = ServerHello::parse(data) {
        assert_eq!(&h.to_bytes()[..], data);
    }
});
