//! The sending side of the tunnel's FEC (MPLOT §II-A, §III): blocks of
//! consecutive tunnel packets, their proactive parity and the reserve
//! for reactive repair.
//!
//! Why FEC next to ARQ: a retransmission costs a round trip (the NACK
//! back, the copy out), which a far or very lossy path cannot afford
//! within the resequencer's hold; parity sent with the data repairs the
//! same losses without waiting (see `repair::RepairMode::Auto`).
//!
//! A block is a run of consecutive tunnel sequence numbers as they were
//! sent; the caller hands in every data packet it sends
//! ([`FecEncoder::on_sent`]). Packets can leave out of number order (each
//! path has its own pacing queue), so a block closes when its run from
//! the first number is complete: once it reaches `F` packets, or when
//! the run has waited `max_wait` (MPLOT: "if there is not enough data,
//! send what is there plus PFEC; do not wait"). A number that never
//! leaves (its path was removed with the packet queued) is skipped after
//! `4 × max_wait`, its packet unprotected.
//!
//! At close the encoder computes all `K` parity shards of the block: the
//! first `k` go out at once (proactive, eq 9), the other `K − k` are the
//! r-block, kept for reactive repair (eq 10) while the block is at most
//! `max_age` old. MPLOT leaves the r-block's size open; the spec's
//! suggestion `K − k = min(255 − B^p, max(4, ⌈k/2⌉))` is used.
//!
//! Memory is bounded: the unblocked packets by `max_pending` entries
//! (older numbers are skipped beyond it), the kept r-blocks by
//! `max_bytes` (oldest first) and by age.

use std::collections::{BTreeMap, VecDeque};

use crate::fec::{mplot, CodeCache, MAX_SHARDS};
use crate::time::{Duration, Instant};
use crate::wire::parity::{data_shard, SHARD_PREFIX};

/// Block shapes whose codes the tunnel's encoder and decoder keep
/// ([`CodeCache`]): a block closes at `F` packets or on its wait, so a
/// few shapes recur.
pub const TUNNEL_CODES: usize = 4;

/// Most packets waiting for their block to close.
const MAX_PENDING: usize = 1024;
/// Most data packets in one block: MPLOT's bound is 255 with parity; a
/// smaller `F` keeps the resequencer's wait for a block short.
pub const MAX_BLOCK_DATA: usize = 128;
/// Most parity frames sent for one block in all (proactive, reactive and
/// the wrap-around resends), as a multiple of its `K` shards: one
/// wrap-around, so that losses on a dead path cannot make a block use the
/// links without end.
const MAX_SENDS_FACTOR: usize = 2;

/// Settings of the encoder.
#[derive(Copy, Clone, Debug)]
pub struct FecEncoderConfig {
    /// Longest a run of packets waits for its block to fill.
    pub max_wait: Duration,
    /// How long a closed block's reserve is kept for reactive repair.
    pub max_age: Duration,
    /// Bytes of reserve parity kept in all.
    pub max_bytes: usize,
}

impl Default for FecEncoderConfig {
    fn default() -> Self {
        FecEncoderConfig {
            max_wait: Duration::from_millis(5),
            max_age: Duration::from_secs(2),
            max_bytes: 4 << 20,
        }
    }
}

/// One parity frame to send (the caller picks the path and writes the
/// [`crate::wire::ParityHeader`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParityOut {
    /// The block's first tunnel sequence number.
    pub first: u64,
    /// Data packets in the block (`F`).
    pub data: u8,
    /// Parity shards of the block's code (`K`).
    pub parity: u8,
    /// This shard's index, `0..K`.
    pub index: u8,
    pub shard: Vec<u8>,
    /// Proactive (sent at block close) or reactive.
    pub reactive: bool,
}

/// A closed block, kept for reactive repair.
#[derive(Debug)]
struct SentBlock {
    first: u64,
    data: u8,
    /// All `K` parity shards.
    shards: Vec<Vec<u8>>,
    /// Parity frames sent so far (indices wrap around `K`).
    sent: usize,
    /// Data packets of the block reported lost.
    lost: usize,
    closed_at: Instant,
    bytes: usize,
}

/// Counters of the encoder.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FecEncoderStats {
    /// Blocks closed.
    pub blocks: u64,
    /// Data packets covered by a block.
    pub protected: u64,
    /// Numbers skipped without protection (never sent, or too many waiting).
    pub skipped: u64,
    /// Parity frames produced, proactive and reactive.
    pub proactive: u64,
    pub reactive: u64,
    /// Losses reported for packets no kept block covers.
    pub losses_uncovered: u64,
}

/// Builds FEC blocks from the packets a tunnel sends.
#[derive(Debug)]
pub struct FecEncoder {
    cfg: FecEncoderConfig,
    /// The first number not yet in a block; `None` before the first packet.
    next_first: Option<u64>,
    /// Sent packets from `next_first` on that are in no block yet, with
    /// when they were handed in.
    pending: BTreeMap<u64, (Instant, Vec<u8>)>,
    blocks: VecDeque<SentBlock>,
    bytes: usize,
    /// Codes of recent block shapes ([`CodeCache`]).
    codes: CodeCache,
    pub stats: FecEncoderStats,
}

impl FecEncoder {
    pub fn new(cfg: FecEncoderConfig) -> Self {
        FecEncoder {
            cfg,
            next_first: None,
            pending: BTreeMap::new(),
            blocks: VecDeque::new(),
            bytes: 0,
            codes: CodeCache::new(TUNNEL_CODES),
            stats: FecEncoderStats::default(),
        }
    }

    /// Packet `seq` went out at `now` for the first time (not a repair
    /// copy). Numbers below the current block boundary are not protected.
    pub fn on_sent(&mut self, now: Instant, seq: u64, payload: &[u8]) {
        let first = *self.next_first.get_or_insert(seq);
        if seq < first || payload.is_empty() || payload.len() > u16::MAX as usize {
            return;
        }
        self.pending.insert(seq, (now, payload.to_vec()));
        while self.pending.len() > MAX_PENDING {
            // Give up the oldest numbers rather than grow.
            let (&s, _) = self.pending.iter().next().expect("non-empty");
            self.pending.remove(&s);
            self.stats.skipped += 1;
            self.next_first = Some(s + 1);
        }
    }

    /// Length of the run of consecutive numbers from `next_first`.
    fn run(&self) -> usize {
        let Some(first) = self.next_first else {
            return 0;
        };
        self.pending
            .range(first..)
            .enumerate()
            .take_while(|(i, (&s, _))| s == first + *i as u64)
            .count()
    }

    /// When [`FecEncoder::poll_block`] has work without another packet.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let first = self.next_first?;
        let (&s, &(at, _)) = self.pending.iter().next()?;
        if s == first {
            Some(at + self.cfg.max_wait)
        } else {
            Some(at + self.cfg.max_wait * 4)
        }
    }

    /// Closes the next block if it is due and returns its proactive
    /// parity. `data` is the wanted `F` and `rate` the code rate `x` of
    /// eq 9 (so `k = ⌈x n⌉` for the `n` packets the block gets).
    pub fn poll_block(&mut self, now: Instant, data: usize, rate: f64) -> Option<Vec<ParityOut>> {
        let first = self.next_first?;
        let want = data.clamp(1, MAX_BLOCK_DATA);
        let run = self.run();
        if run == 0 {
            // The number at the boundary has not been sent: skip it once
            // the packets after it have waited long enough.
            let (&s, &(at, _)) = self.pending.iter().next()?;
            if now >= at + self.cfg.max_wait * 4 {
                self.stats.skipped += s.saturating_sub(first);
                self.next_first = Some(s);
                return self.poll_block(now, data, rate);
            }
            return None;
        }
        let waited = self.pending[&first].0 + self.cfg.max_wait <= now;
        if run < want && !waited {
            return None;
        }
        let n = run.min(want);
        let payloads: Vec<Vec<u8>> = (first..first + n as u64)
            .map(|s| self.pending.remove(&s).expect("in the run").1)
            .collect();
        self.next_first = Some(first + n as u64);
        Some(self.close(now, first, payloads, rate))
    }

    fn close(
        &mut self,
        now: Instant,
        first: u64,
        payloads: Vec<Vec<u8>>,
        rate: f64,
    ) -> Vec<ParityOut> {
        let n = payloads.len();
        let k = mplot::parity_for(n, rate).min(MAX_SHARDS - 1 - n);
        let reserve = (MAX_SHARDS - 1 - n - k).min(4.max(k.div_ceil(2)));
        let total = (k + reserve).max(1).min(MAX_SHARDS - n);
        let shard_len = SHARD_PREFIX + payloads.iter().map(Vec::len).max().unwrap_or(0);
        let shards: Vec<Vec<u8>> = payloads
            .iter()
            .map(|p| data_shard(p, shard_len).expect("sized to the longest"))
            .collect();
        let code = self.codes.get(n, total).expect("1 <= n, n + total <= 256");
        let parity = code.encode(&shards).expect("equal, non-empty shards");
        self.stats.blocks += 1;
        self.stats.protected += n as u64;
        let bytes = parity.iter().map(Vec::len).sum::<usize>();
        let mut block = SentBlock {
            first,
            data: n as u8,
            shards: parity,
            sent: 0,
            lost: 0,
            closed_at: now,
            bytes,
        };
        let out = Self::take(&mut block, k, false);
        self.stats.proactive += out.len() as u64;
        self.bytes += block.bytes;
        self.blocks.push_back(block);
        self.expire(now);
        out
    }

    /// The next `count` parity frames of `block`, wrapping around its
    /// `K` shards (MPLOT: when the r-block runs out, resend from the
    /// p-block's start).
    fn take(block: &mut SentBlock, count: usize, reactive: bool) -> Vec<ParityOut> {
        let total = block.shards.len();
        let count = count.min((MAX_SENDS_FACTOR * total).saturating_sub(block.sent));
        (0..count)
            .map(|_| {
                let index = block.sent % total;
                block.sent += 1;
                ParityOut {
                    first: block.first,
                    data: block.data,
                    parity: total as u8,
                    index: index as u8,
                    shard: block.shards[index].clone(),
                    reactive,
                }
            })
            .collect()
    }

    /// Data packet `seq` was reported lost. If a kept block covers it and
    /// its losses now exceed the parity it was sent, returns the reactive
    /// parity of eq 10: `⌈(1 + y) r⌉` new shards for the `r` missing,
    /// with the aggregate loss mean `p` (κ2 = 0). `None` if no kept block
    /// covers `seq` (the caller may repair it otherwise).
    pub fn on_lost(&mut self, now: Instant, seq: u64, p: f64) -> Option<Vec<ParityOut>> {
        self.expire(now);
        let Some(b) = self
            .blocks
            .iter_mut()
            .find(|b| seq >= b.first && seq < b.first + b.data as u64)
        else {
            self.stats.losses_uncovered += 1;
            return None;
        };
        b.lost += 1;
        // Parity is not acknowledged; count what was sent as arriving at
        // the aggregate loss rate.
        let arriving = (b.sent as f64 * (1.0 - p.clamp(0.0, 1.0))).floor() as usize;
        let r = b.lost.saturating_sub(arriving);
        let out = Self::take(b, mplot::reactive_count(r, p, 0.0), true);
        self.stats.reactive += out.len() as u64;
        Some(out)
    }

    /// Forgets blocks older than `max_age`, and the oldest beyond `max_bytes`.
    fn expire(&mut self, now: Instant) {
        while let Some(b) = self.blocks.front() {
            let old = now.saturating_since(b.closed_at) > self.cfg.max_age;
            if !old && self.bytes <= self.cfg.max_bytes {
                break;
            }
            self.bytes -= b.bytes;
            self.blocks.pop_front();
        }
    }

    /// Bytes held: pending packets and kept parity.
    pub fn held_bytes(&self) -> usize {
        self.bytes + self.pending.values().map(|(_, p)| p.len()).sum::<usize>()
    }

    /// Whether a kept block covers `seq`.
    pub fn covers(&self, seq: u64) -> bool {
        self.blocks
            .iter()
            .any(|b| seq >= b.first && seq < b.first + b.data as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn pkt(seq: u64) -> Vec<u8> {
        vec![seq as u8; 20 + (seq as usize % 7)]
    }

    #[test]
    fn a_full_run_closes_a_block_with_eq_9_parity() {
        let mut e = FecEncoder::new(FecEncoderConfig::default());
        for s in 0..9 {
            e.on_sent(t(0), s, &pkt(s));
        }
        assert!(e.poll_block(t(0), 10, 0.2).is_none(), "9 of 10, not waited");
        e.on_sent(t(0), 9, &pkt(9));
        let out = e.poll_block(t(0), 10, 0.2).expect("block of 10");
        assert_eq!(out.len(), 2, "k = ⌈0.2 · 10⌉");
        assert!(out
            .iter()
            .all(|o| o.first == 0 && o.data == 10 && !o.reactive));
        assert_eq!(out[0].parity, 6, "k = 2 plus a reserve of 4");
        assert_eq!(out[1].index, 1);
        assert_eq!(e.stats.protected, 10);
    }

    #[test]
    fn a_short_run_closes_after_max_wait_and_a_clean_path_sends_no_parity() {
        let mut e = FecEncoder::new(FecEncoderConfig::default());
        for s in 0..3 {
            e.on_sent(t(0), s, &pkt(s));
        }
        assert!(e.poll_block(t(4), 10, 0.0).is_none());
        assert_eq!(e.poll_timeout(), Some(t(5)));
        let out = e.poll_block(t(5), 10, 0.0).unwrap();
        assert!(out.is_empty(), "x = 0: no proactive parity");
        assert!(e.covers(2) && !e.covers(3));
    }

    #[test]
    fn out_of_order_sends_wait_for_the_run_and_a_lost_number_is_skipped() {
        let mut e = FecEncoder::new(FecEncoderConfig::default());
        e.on_sent(t(0), 0, &pkt(0));
        e.on_sent(t(0), 2, &pkt(2));
        e.on_sent(t(0), 3, &pkt(3));
        // Only 0 is a run; after max_wait it closes alone.
        let out = e.poll_block(t(5), 4, 0.5).unwrap();
        assert_eq!(out[0].data, 1);
        // Number 1 never comes: 2 and 3 go on after 4 x max_wait.
        assert!(e.poll_block(t(10), 4, 0.5).is_none());
        let out = e.poll_block(t(20), 4, 0.5).unwrap();
        assert_eq!((out[0].first, out[0].data), (2, 2));
        assert_eq!(e.stats.skipped, 1);
    }

    #[test]
    fn losses_beyond_the_parity_sent_get_eq_10_reactive_parity() {
        let mut e = FecEncoder::new(FecEncoderConfig::default());
        for s in 0..10 {
            e.on_sent(t(0), s, &pkt(s));
        }
        let pro = e.poll_block(t(0), 10, 0.1).unwrap();
        assert_eq!(pro.len(), 1);
        // One loss: the one proactive shard covers it.
        assert_eq!(e.on_lost(t(1), 3, 0.0).unwrap().len(), 0);
        // A second: r = 1, y = 0.25 / 0.75 at p = 0.25: ⌈4/3⌉ = 2 ... but
        // one sent shard counts as arriving at 0.75: floor(0.75) = 0, r = 2.
        let re = e.on_lost(t(1), 4, 0.25).unwrap();
        assert_eq!(re.len(), 3, "⌈(1 + 1/3) · 2⌉");
        assert!(re.iter().all(|o| o.reactive));
        assert_eq!(re[0].index, 1, "new shards, never a copy of a sent one");
        assert_eq!(e.on_lost(t(1), 50, 0.0), None, "not covered");
        assert_eq!(e.on_lost(t(3000), 5, 0.0), None, "expired");
    }

    #[test]
    fn memory_stays_bounded() {
        let cfg = FecEncoderConfig {
            max_bytes: 10_000,
            ..FecEncoderConfig::default()
        };
        let mut e = FecEncoder::new(cfg);
        for s in 0..20_000u64 {
            e.on_sent(t(s / 10), s, &[7u8; 1000]);
            while e.poll_block(t(s / 10), 50, 0.5).is_some() {}
            assert!(e.held_bytes() <= 10_000 + 1000 * MAX_BLOCK_DATA + 40_000);
        }
        // Numbers far ahead of a stuck boundary cannot pile up either.
        let mut e = FecEncoder::new(FecEncoderConfig::default());
        e.on_sent(t(0), 0, &[1]);
        for s in 2..5000u64 {
            e.on_sent(t(0), s, &[1]);
        }
        assert!(e.pending.len() <= MAX_PENDING);
    }
}
