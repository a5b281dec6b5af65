//! `cargo +nightly fuzz run mplot_frame`: decoding arbitrary bytes as an
//! MPLOT frame never panics, every frame that decodes re-encodes to the
//! same bytes, and a receiver fed any decoded DATA frame neither panics nor
//! accepts a frame outside its bounds.
#![no_main]

use braid_core::mplot::wire::{decode, emit_ack, emit_data, Frame};
use braid_core::mplot::{Receiver, ReceiverConfig};
use braid_core::time::Instant;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = decode(data) else { return };
    let mut out = vec![0u8; data.len()];
    match frame {
        Frame::Data(v) => {
            let n = emit_data(&v.header, v.shard, &mut out).unwrap();
            assert_eq!(n, data.len());
            let mut r = Receiver::new(ReceiverConfig::new(16, 0));
            // The same frame twice: the second is a duplicate.
            for _ in 0..2 {
                let _ = r.handle_data(Instant::ZERO, false, &v);
                while r.poll_ack().is_some() {}
                while r.poll_read().is_some() {}
            }
        }
        Frame::Ack(a) => {
            let n = emit_ack(&a, &mut out).unwrap();
            assert_eq!(n, data.len());
        }
    }
    assert_eq!(out, data, "decode/emit round trip");
});
