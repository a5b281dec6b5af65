//! `cargo +nightly fuzz run parity_frame`: arbitrary bytes as a stream of
//! frames for the FEC decoder. Each chunk is decoded as a tunnel frame;
//! parity frames go to `FecDecoder::on_parity`, data frames to `on_data`.
//! Nothing panics, every parity frame that decodes re-encodes to the same
//! bytes, rebuilt packets are never empty, and the decoder stays within
//! its memory bounds.
#![no_main]

use braid_core::repair::fec::{FecDecoder, FecDecoderConfig, MAX_RX_BLOCKS};
use braid_core::time::Instant;
use braid_core::wire::{decode, Frame};
use libfuzzer_sys::fuzz_target;

const MAX_BYTES: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    let cfg = FecDecoderConfig {
        max_bytes: MAX_BYTES,
        ..FecDecoderConfig::default()
    };
    let mut d = FecDecoder::new(cfg);
    // Chunks: a length byte, then that many bytes.
    let mut rest = data;
    let mut t = 0u64;
    while let Some((&len, tail)) = rest.split_first() {
        let n = (len as usize).min(tail.len());
        let (chunk, next) = tail.split_at(n);
        rest = next;
        t += 1;
        let now = Instant::from_millis(t);
        let rebuilt = match decode(chunk) {
            Ok(Frame::Parity(h, shard)) => {
                let mut out = vec![0u8; chunk.len()];
                let m = h.emit(shard, &mut out).unwrap();
                assert_eq!(&out[..m], chunk, "parity round trip");
                d.on_parity(now, &h, shard)
            }
            Ok(Frame::Data(h, payload)) => d.on_data(now, h.seq, payload),
            _ => Vec::new(),
        };
        assert!(rebuilt.iter().all(|(_, p)| !p.is_empty()));
        assert!(d.blocks() <= MAX_RX_BLOCKS);
        assert!(d.held_bytes() <= MAX_BYTES + MAX_RX_BLOCKS * 256 * 256);
    }
});
