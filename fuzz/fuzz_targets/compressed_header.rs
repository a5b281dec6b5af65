//! `cargo +nightly fuzz run compressed_header`: the decoders of inner
//! header compression (`braid_core::compress`) on arbitrary bytes, as an
//! install's payload and as a compressed frame's: never panic, and what
//! they rebuild compresses back to the bytes they read (decoding is
//! canonical), while a compressed frame for an id never installed is
//! refused.
#![no_main]

use braid_core::compress::header::{self, FlowKey};
use braid_core::compress::{emit, Decompressor, Form};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut d = Decompressor::default();
    let mut out = Vec::new();
    assert!(
        d.rebuild(data, &mut out).is_err(),
        "rebuilt against a context never installed"
    );
    out.clear();
    if d.install(data, &mut out).is_ok() {
        let s = header::split(&out).expect("a rebuilt packet is compressible");
        let mut again = Vec::new();
        emit(Form::Install(data[FlowKey::LEN]), &s, &mut again);
        assert_eq!(again, data);
        // The context it taught rebuilds the same packet from the
        // compressed form.
        let mut compressed = Vec::new();
        emit(Form::Compressed(data[FlowKey::LEN]), &s, &mut compressed);
        let mut back = Vec::new();
        d.rebuild(&compressed, &mut back).expect("installed");
        assert_eq!(back, out);
    }
});
