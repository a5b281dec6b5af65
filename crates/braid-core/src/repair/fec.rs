//! The receiving side of the tunnel's FEC: rebuilds lost data packets of
//! a block from any `F` of its data and parity packets (MPLOT §II-A; the
//! block layout is [`crate::wire::parity`], the sender
//! `sender::fec::FecEncoder`).
//!
//! The data packets of a block carry nothing that marks them as such
//! (their tunnel sequence numbers place them), so once the peer sends
//! parity the decoder keeps a copy of each data packet that arrives, for
//! the blocks whose parity is still to come. Rebuilt packets go to the
//! resequencer like repair copies, which fill the gaps it holds; a
//! packet rebuilt that arrives later anyway is a duplicate there.
//!
//! Everything here is bounded, whatever arrives: kept data by
//! `max_bytes` and by age, blocks by [`MAX_RX_BLOCKS`] and by age, the
//! parity of one block by its shape (at most `K` shards, each the
//! block's one length). Parity that contradicts its block's shape is
//! dropped and counted.

use std::collections::BTreeMap;

use crate::fec::CodeCache;
use crate::time::{Duration, Instant};
use crate::wire::parity::{data_shard, packet_of_shard};
use crate::wire::{self, ParityHeader};

/// Most blocks with parity waiting for their data.
pub const MAX_RX_BLOCKS: usize = 256;

/// Settings of the decoder.
#[derive(Copy, Clone, Debug)]
pub struct FecDecoderConfig {
    /// Bytes of received data packets kept for rebuilding.
    pub max_bytes: usize,
    /// Longest a data packet or a block's parity is kept: after the
    /// resequencer's longest hold a rebuilt packet is of no use.
    pub max_age: Duration,
}

impl Default for FecDecoderConfig {
    fn default() -> Self {
        FecDecoderConfig {
            max_bytes: 4 << 20,
            max_age: Duration::from_secs(2),
        }
    }
}

/// Counters of the decoder.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FecDecoderStats {
    /// Parity frames taken in.
    pub parity_received: u64,
    /// Parity dropped: another shape than its block's, a wrong length,
    /// or too many blocks at once.
    pub parity_dropped: u64,
    /// Data packets rebuilt.
    pub rebuilt: u64,
    /// Blocks that completed without a loss, or were rebuilt.
    pub blocks_complete: u64,
    /// Blocks that expired short of `F` packets.
    pub blocks_failed: u64,
}

#[derive(Debug)]
struct RxBlock {
    data: u8,
    parity: u8,
    shard_len: usize,
    /// Parity shards by index.
    shards: BTreeMap<u8, Vec<u8>>,
    at: Instant,
    done: bool,
}

/// Rebuilds lost packets from parity.
#[derive(Debug)]
pub struct FecDecoder {
    cfg: FecDecoderConfig,
    /// Whether the peer sends parity at all (nothing is kept before).
    active: bool,
    /// Highest data or block number seen, to extend 32-bit numbers.
    highest: Option<u64>,
    /// Received data packets by number, with when they arrived.
    data: BTreeMap<u64, (Instant, Vec<u8>)>,
    data_bytes: usize,
    /// Blocks by first number.
    blocks: BTreeMap<u64, RxBlock>,
    /// Codes of recent block shapes ([`CodeCache`]).
    codes: CodeCache,
    pub stats: FecDecoderStats,
}

impl FecDecoder {
    pub fn new(cfg: FecDecoderConfig) -> Self {
        FecDecoder {
            cfg,
            active: false,
            highest: None,
            data: BTreeMap::new(),
            data_bytes: 0,
            blocks: BTreeMap::new(),
            codes: CodeCache::new(crate::sender::fec::TUNNEL_CODES),
            stats: FecDecoderStats::default(),
        }
    }

    fn extend(&mut self, seq32: u32) -> u64 {
        let seq = wire::seq::extend(seq32, self.highest.unwrap_or(0));
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
        seq
    }

    /// A data packet (first copy or repair) numbered `seq32` arrived.
    /// Returns the packets this completed a block with.
    pub fn on_data(&mut self, now: Instant, seq32: u32, payload: &[u8]) -> Vec<(u64, Vec<u8>)> {
        let seq = self.extend(seq32);
        if !self.active || payload.is_empty() || self.data.contains_key(&seq) {
            return Vec::new();
        }
        self.data_bytes += payload.len();
        self.data.insert(seq, (now, payload.to_vec()));
        self.expire(now);
        match self.block_of(seq) {
            Some(first) => self.try_rebuild(first),
            None => Vec::new(),
        }
    }

    /// A parity frame arrived. Returns the packets it rebuilt.
    pub fn on_parity(
        &mut self,
        now: Instant,
        h: &ParityHeader,
        shard: &[u8],
    ) -> Vec<(u64, Vec<u8>)> {
        self.stats.parity_received += 1;
        self.active = true;
        if !h.is_valid() {
            self.stats.parity_dropped += 1;
            return Vec::new();
        }
        let first = self.extend(h.first);
        self.expire(now);
        if !self.blocks.contains_key(&first) && self.blocks.len() >= MAX_RX_BLOCKS {
            self.stats.parity_dropped += 1;
            return Vec::new();
        }
        let b = self.blocks.entry(first).or_insert_with(|| RxBlock {
            data: h.data,
            parity: h.parity,
            shard_len: shard.len(),
            shards: BTreeMap::new(),
            at: now,
            done: false,
        });
        if b.data != h.data || b.parity != h.parity || b.shard_len != shard.len() {
            self.stats.parity_dropped += 1;
            return Vec::new();
        }
        if b.done || b.shards.contains_key(&h.index) {
            return Vec::new();
        }
        b.shards.insert(h.index, shard.to_vec());
        self.try_rebuild(first)
    }

    /// The first number of the block that covers `seq`, if one is known.
    fn block_of(&self, seq: u64) -> Option<u64> {
        let (&first, b) = self.blocks.range(..=seq).next_back()?;
        (seq < first + b.data as u64).then_some(first)
    }

    /// Rebuilds block `first` if enough of it arrived.
    fn try_rebuild(&mut self, first: u64) -> Vec<(u64, Vec<u8>)> {
        let Some(b) = self.blocks.get(&first) else {
            return Vec::new();
        };
        if b.done {
            return Vec::new();
        }
        let (k, m) = (b.data as usize, b.parity as usize);
        let present: Vec<Option<&Vec<u8>>> = (0..k as u64)
            .map(|i| self.data.get(&(first + i)).map(|(_, p)| p))
            .collect();
        let have = present.iter().filter(|p| p.is_some()).count();
        if have == k {
            self.finish(first, true);
            return Vec::new();
        }
        if have + b.shards.len() < k {
            return Vec::new();
        }
        let mut shards: Vec<Option<Vec<u8>>> = present
            .iter()
            .map(|p| p.and_then(|p| data_shard(p, b.shard_len)))
            .collect();
        if shards.iter().filter(|s| s.is_some()).count() != have {
            // A kept packet does not fit this block's shards: not the
            // block the parity describes. Give it up.
            self.stats.parity_dropped += b.shards.len() as u64;
            self.finish(first, false);
            return Vec::new();
        }
        shards.extend((0..m as u8).map(|i| b.shards.get(&i).cloned()));
        let Ok(code) = self.codes.get(k, m) else {
            self.finish(first, false);
            return Vec::new();
        };
        if code.reconstruct(&mut shards).is_err() {
            self.finish(first, false);
            return Vec::new();
        }
        let mut out = Vec::new();
        for (i, p) in present.iter().enumerate() {
            if p.is_some() {
                continue;
            }
            if let Some(pkt) = shards[i].as_deref().and_then(packet_of_shard) {
                out.push((first + i as u64, pkt.to_vec()));
            }
        }
        self.stats.rebuilt += out.len() as u64;
        self.finish(first, true);
        out
    }

    /// Marks a block done (its parity is no longer needed).
    fn finish(&mut self, first: u64, ok: bool) {
        if let Some(b) = self.blocks.get_mut(&first) {
            b.done = true;
            b.shards.clear();
            if ok {
                self.stats.blocks_complete += 1;
            } else {
                self.stats.blocks_failed += 1;
            }
        }
    }

    /// Forgets data and blocks past `max_age`, and the oldest data beyond
    /// `max_bytes`.
    pub fn expire(&mut self, now: Instant) {
        let max_age = self.cfg.max_age;
        while let Some((&s, (at, p))) = self.data.iter().next() {
            if now.saturating_since(*at) <= max_age && self.data_bytes <= self.cfg.max_bytes {
                break;
            }
            self.data_bytes -= p.len();
            self.data.remove(&s);
        }
        let stale: Vec<u64> = self
            .blocks
            .iter()
            .filter(|(_, b)| now.saturating_since(b.at) > max_age)
            .map(|(&f, _)| f)
            .collect();
        for f in stale {
            if let Some(b) = self.blocks.remove(&f) {
                if !b.done {
                    self.stats.blocks_failed += 1;
                }
            }
        }
    }

    /// Bytes held: kept data packets and parity shards.
    pub fn held_bytes(&self) -> usize {
        self.data_bytes
            + self
                .blocks
                .values()
                .flat_map(|b| b.shards.values())
                .map(Vec::len)
                .sum::<usize>()
    }

    /// Blocks known.
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::PathId;
    use crate::sender::fec::{FecEncoder, FecEncoderConfig, ParityOut};

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn pkt(seq: u64) -> Vec<u8> {
        (0..(30 + seq as usize % 11))
            .map(|i| (i as u64 * 7 + seq) as u8)
            .collect()
    }

    fn header(o: &ParityOut) -> ParityHeader {
        ParityHeader {
            path: PathId(0),
            first: o.first as u32,
            data: o.data,
            parity: o.parity,
            index: o.index,
        }
    }

    /// Encoder to decoder: every data packet but `lost`, then the parity.
    fn run(lost: &[u64], rate: f64) -> (Vec<(u64, Vec<u8>)>, FecDecoder) {
        let mut e = FecEncoder::new(FecEncoderConfig::default());
        let mut d = FecDecoder::new(FecDecoderConfig::default());
        // The decoder learns of FEC from a first parity frame.
        d.active = true;
        for s in 0..20 {
            e.on_sent(t(0), s, &pkt(s));
        }
        let parity = e.poll_block(t(0), 20, rate).unwrap();
        let mut got = Vec::new();
        for s in 0..20u64 {
            if !lost.contains(&s) {
                got.extend(d.on_data(t(1), s as u32, &pkt(s)));
            }
        }
        for o in &parity {
            got.extend(d.on_parity(t(2), &header(o), &o.shard));
        }
        (got, d)
    }

    #[test]
    fn rebuilds_up_to_k_losses() {
        // x = 0.2: 4 parity for 20.
        let (got, d) = run(&[0, 7, 13, 19], 0.2);
        let mut got = got;
        got.sort();
        assert_eq!(
            got,
            vec![(0, pkt(0)), (7, pkt(7)), (13, pkt(13)), (19, pkt(19))]
        );
        assert_eq!(d.stats.rebuilt, 4);
    }

    #[test]
    fn too_many_losses_rebuild_nothing() {
        let (got, d) = run(&[1, 2, 3, 4, 5], 0.2);
        assert!(got.is_empty());
        assert_eq!(d.stats.rebuilt, 0);
    }

    #[test]
    fn parity_first_then_data_also_rebuilds() {
        let mut e = FecEncoder::new(FecEncoderConfig::default());
        let mut d = FecDecoder::new(FecDecoderConfig::default());
        for s in 0..10 {
            e.on_sent(t(0), s, &pkt(s));
        }
        let parity = e.poll_block(t(0), 10, 0.1).unwrap();
        assert_eq!(parity.len(), 1);
        assert!(d
            .on_parity(t(1), &header(&parity[0]), &parity[0].shard)
            .is_empty());
        let mut got = Vec::new();
        for s in (0..10u64).filter(|&s| s != 4) {
            got.extend(d.on_data(t(1), s as u32, &pkt(s)));
        }
        assert_eq!(got, vec![(4, pkt(4))]);
    }

    #[test]
    fn contradicting_parity_is_dropped() {
        let mut d = FecDecoder::new(FecDecoderConfig::default());
        let h = ParityHeader {
            path: PathId(0),
            first: 0,
            data: 4,
            parity: 2,
            index: 0,
        };
        d.on_parity(t(0), &h, &[0; 10]);
        d.on_parity(t(0), &ParityHeader { data: 5, ..h }, &[0; 10]);
        d.on_parity(t(0), &ParityHeader { index: 1, ..h }, &[0; 11]);
        assert_eq!(d.stats.parity_dropped, 2);
        // Garbage parity rebuilds garbage or nothing, never panics.
        let out = d.on_parity(t(0), &ParityHeader { index: 1, ..h }, &[0xff; 10]);
        for s in 0..4u32 {
            let _ = d.on_data(t(0), s, &[1, 2, 3]);
        }
        assert!(out.len() <= 4);
    }

    #[test]
    fn memory_stays_bounded_under_any_input() {
        let cfg = FecDecoderConfig {
            max_bytes: 50_000,
            max_age: Duration::from_secs(2),
        };
        let mut d = FecDecoder::new(cfg);
        for i in 0..20_000u32 {
            let h = ParityHeader {
                path: PathId(0),
                first: i.wrapping_mul(97),
                data: 200,
                parity: 50,
                index: (i % 50) as u8,
            };
            d.on_parity(t(i as u64 / 100), &h, &[3u8; 100]);
            d.on_data(t(i as u64 / 100), i, &[5u8; 500]);
            assert!(d.blocks() <= MAX_RX_BLOCKS);
            assert!(d.data_bytes <= 50_000);
            assert!(d.held_bytes() <= 50_000 + MAX_RX_BLOCKS * 50 * 100);
        }
    }
}
