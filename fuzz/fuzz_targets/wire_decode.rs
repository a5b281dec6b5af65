//! `cargo +nightly fuzz run wire_decode`: decoding arbitrary bytes never
//! panics, and every frame that decodes re-encodes to the same bytes.
#![no_main]

use braid_core::wire::{decode, emit_feedback, emit_nack, feedback_len, FeedbackEntry, Frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = decode(data) else { return };
    let mut out = vec![0u8; data.len()];
    match frame {
        Frame::Data(h, payload) => {
            h.emit(&mut out).unwrap();
            out[9..].copy_from_slice(payload);
        }
        Frame::Feedback(v) => {
            let entries: Vec<FeedbackEntry> = v.entries().collect();
            assert_eq!(entries.len(), v.len());
            let n = emit_feedback(v.path, &entries, &mut out).unwrap();
            assert_eq!(n, feedback_len(&entries));
        }
        Frame::Keepalive(k) => k.emit(false, &mut out).unwrap(),
        Frame::KeepaliveAck(k) => k.emit(true, &mut out).unwrap(),
        Frame::Control(c) => {
            c.emit(&mut out).unwrap();
        }
        Frame::Nack(v) => {
            let ranges: Vec<_> = v.ranges().collect();
            let rates: Vec<_> = v.rates().collect();
            emit_nack(&ranges, &rates, &mut out).unwrap();
        }
        Frame::Parity(h, shard) => {
            h.emit(shard, &mut out).unwrap();
        }
    }
    assert_eq!(out, data, "decode/emit round trip");
});
