//! Property tests of the tunnel's FEC blocks: whatever the packets and
//! whichever of a block's data and parity packets are lost, the decoder
//! rebuilds every lost data packet, exactly and once, when at least `F`
//! of the block's packets arrived, and nothing otherwise; and the
//! decoder's memory stays within its bounds under any input.

use braid_core::path::PathId;
use braid_core::repair::fec::{FecDecoder, FecDecoderConfig};
use braid_core::sender::fec::{FecEncoder, FecEncoderConfig};
use braid_core::time::Instant;
use braid_core::wire::ParityHeader;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_f_of_a_block_rebuild_it(
        packets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..300), 1..60),
        rate in 0.0f64..1.0,
        lost in proptest::collection::vec(any::<bool>(), 0..200),
    ) {
        let n = packets.len();
        let mut e = FecEncoder::new(FecEncoderConfig::default());
        for (s, p) in packets.iter().enumerate() {
            e.on_sent(Instant::ZERO, s as u64, p);
        }
        let parity = e.poll_block(Instant::ZERO, n, rate).expect("a full run closes");
        let lost_at = |i: usize| lost.get(i).copied().unwrap_or(false);
        let mut d = FecDecoder::new(FecDecoderConfig::default());
        let mut got = Vec::new();
        // Parity first, so the decoder keeps the data that follows.
        let mut parity_arrived = 0;
        for (j, o) in parity.iter().enumerate() {
            if lost_at(n + j) {
                continue;
            }
            parity_arrived += 1;
            let h = ParityHeader { path: PathId(0), first: o.first as u32, data: o.data, parity: o.parity, index: o.index };
            got.extend(d.on_parity(Instant::ZERO, &h, &o.shard));
        }
        let mut data_arrived = 0;
        for (s, p) in packets.iter().enumerate() {
            if !lost_at(s) {
                data_arrived += 1;
                got.extend(d.on_data(Instant::ZERO, s as u32, p));
            }
        }
        got.sort();
        // Every rebuilt packet is the one sent, and comes once.
        for w in got.windows(2) {
            prop_assert!(w[0].0 < w[1].0, "rebuilt twice");
        }
        for (s, p) in &got {
            prop_assert_eq!(p, &packets[*s as usize]);
        }
        if parity.is_empty() || data_arrived + parity_arrived < n {
            prop_assert!(got.is_empty(), "fewer than F packets rebuild nothing");
        } else {
            // Parity first may rebuild packets before they arrive (they
            // are duplicates for the resequencer); every lost one is there.
            for s in (0..n).filter(|&s| lost_at(s)) {
                prop_assert!(got.iter().any(|g| g.0 == s as u64), "lost {} not rebuilt", s);
            }
        }
    }

    /// Arbitrary parity and data, in any order and with any numbers:
    /// no panic, and the decoder stays within its bounds.
    #[test]
    fn decoder_memory_is_bounded(
        events in proptest::collection::vec((any::<bool>(), any::<u32>(), any::<u8>(), any::<u8>(), any::<u8>(), 1usize..200), 0..400),
    ) {
        let cfg = FecDecoderConfig { max_bytes: 20_000, ..FecDecoderConfig::default() };
        let mut d = FecDecoder::new(cfg);
        for (i, &(parity, seq, data, np, index, len)) in events.iter().enumerate() {
            let now = Instant::from_millis(i as u64);
            if parity {
                let h = ParityHeader { path: PathId(0), first: seq, data, parity: np, index };
                let _ = d.on_parity(now, &h, &vec![index; len]);
            } else {
                let _ = d.on_data(now, seq, &vec![data; len]);
            }
            prop_assert!(d.blocks() <= braid_core::repair::fec::MAX_RX_BLOCKS);
            prop_assert!(d.held_bytes() <= 20_000 + braid_core::repair::fec::MAX_RX_BLOCKS * 256 * 200);
        }
    }
}
