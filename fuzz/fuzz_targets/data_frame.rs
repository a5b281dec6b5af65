//! `cargo +nightly fuzz run data_frame`: the data frame decoder (the
//! frame inside a transport packet that carries an inner IP packet) on
//! arbitrary bytes: never panics, and a frame that decodes re-encodes to
//! the same header and payload.
#![no_main]

use braid_core::wire::{decode, Frame, TYPE_DATA};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut buf = Vec::with_capacity(data.len() + 1);
    buf.push(TYPE_DATA);
    buf.extend_from_slice(data);
    match decode(&buf) {
        Ok(Frame::Data(h, payload)) => {
            let mut out = vec![0u8; buf.len()];
            h.emit(&mut out).unwrap();
            let n = buf.len() - payload.len();
            out[n..].copy_from_slice(payload);
            assert_eq!(out, buf);
        }
        Ok(other) => panic!("a data type byte decoded as {other:?}"),
        Err(_) => {}
    }
});
