//! `cargo +nightly fuzz run rmtp_frame`: decoding arbitrary bytes as an
//! R-MTP frame never panics, every frame that decodes re-encodes to the
//! same bytes, a receiver fed any decoded DATA frame neither panics nor
//! holds more than its window, and a sender fed any decoded ACK neither
//! panics nor sends past its window.
#![no_main]

use braid_core::rmtp::wire::{decode, emit_ack, emit_data, Frame};
use braid_core::rmtp::{Receiver, ReceiverConfig, Sender, SenderConfig};
use braid_core::time::Instant;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = decode(data) else { return };
    let mut out = vec![0u8; data.len()];
    match frame {
        Frame::Data(v) => {
            let n = emit_data(&v.header, v.payload, &mut out).unwrap();
            assert_eq!(n, data.len());
            let cfg = ReceiverConfig::new();
            let max = cfg.max_window;
            let mut r = Receiver::new(cfg);
            // The same frame twice: the second is a duplicate.
            for _ in 0..2 {
                let _ = r.handle_data(Instant::ZERO, &v);
                while r.poll_ack().is_some() {}
                assert!(r.buffered().0 <= max);
            }
            while r.poll_read().is_some() {}
        }
        Frame::Ack(a) => {
            let n = emit_ack(&a, &mut out).unwrap();
            assert_eq!(n, data.len());
            let mut s = Sender::new(SenderConfig::new(2)).unwrap();
            s.write(&[7u8; 5000]).unwrap();
            s.finish();
            let now = Instant::from_millis(1);
            while s.poll_transmit(now).is_some() {}
            s.handle_ack(now, &a);
            s.handle_timeout(Instant::from_millis(5000));
            let mut sent = 0;
            while s.poll_transmit(Instant::from_millis(5000)).is_some() {
                sent += 1;
                assert!(sent < 100, "a sender ran away on one ACK");
            }
            assert!(s.unacked_frames() <= s.window().0);
        }
    }
    assert_eq!(out, data, "decode/emit round trip");
});
