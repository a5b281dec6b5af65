//! `cargo +nightly fuzz run feedback_frame`: the feedback (SIG-ACK) frame
//! decoder and its delta-encoded entry iterator on arbitrary bytes: never
//! panics, never yields more entries than announced, and what decodes
//! re-encodes to the same bytes.
#![no_main]

use braid_core::wire::{decode, emit_feedback, feedback_len, FeedbackEntry, Frame, TYPE_FEEDBACK};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut buf = Vec::with_capacity(data.len() + 1);
    buf.push(TYPE_FEEDBACK);
    buf.extend_from_slice(data);
    match decode(&buf) {
        Ok(Frame::Feedback(v)) => {
            let entries: Vec<FeedbackEntry> = v.entries().collect();
            assert_eq!(entries.len(), v.len());
            let mut out = vec![0u8; buf.len()];
            let n = emit_feedback(v.path, &entries, &mut out).unwrap();
            assert_eq!(n, feedback_len(&entries));
            assert_eq!(&out[..n], &buf[..]);
        }
        Ok(other) => panic!("a feedback type byte decoded as {other:?}"),
        Err(_) => {}
    }
});
