//! The receiving half of an MPLOT session (§II-A, §II-B).
//!
//! Call order: [`Receiver::handle_data`] for every DATA frame, then drain
//! [`Receiver::poll_ack`] (one ACK per packet, each on a reverse path drawn
//! uniformly at random from the seeded generator the receiver was given)
//! and [`Receiver::poll_read`] (the stream's bytes, in order).
//!
//! A block is buffered until any `F` distinct packets of it have arrived,
//! then rebuilt with [`crate::fec::BlockCode::reconstruct`] and delivered once every
//! earlier block has been. Memory is bounded: only blocks within
//! `max_blocks_ahead` of the oldest undecoded one are accepted, shards are
//! at most `max_shard_len` bytes, and a packet whose block fields disagree
//! with the block's first packet is dropped and counted.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::fec::{CodeCache, FecError};
use crate::mplot::block::PosSet;
use crate::mplot::sender::Coding;
use crate::mplot::wire::{Ack, DataView, MAX_PATHS};
use crate::time::Instant;

/// How many ACKs echo one CE mark. The paper copies "the latest ECN state"
/// of each forward path into every ACK; read literally, a path whose last
/// packet was marked would be echoed by every ACK of every other path until
/// it sends again, and its window halved once per RTT for a single mark.
/// braid echoes a mark in the next two ACKs instead (two, so that one lost
/// ACK does not lose the mark; the sender halves at most once per RTT).
pub const CE_ECHOES: u8 = 2;

/// Settings of a receiver.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverConfig {
    /// Number of reverse paths ACKs may use.
    pub paths: usize,
    pub coding: Coding,
    /// Blocks accepted beyond the oldest undecoded one.
    pub max_blocks_ahead: u32,
    /// Largest shard accepted, bytes.
    pub max_shard_len: u16,
    /// Seed of the reverse-path choice.
    pub seed: u64,
    /// Send each ACK back on the path its packet came on instead of a
    /// random one (the PTCP baseline of §IV-G; MPLOT itself draws).
    pub ack_on_arrival_path: bool,
}

impl ReceiverConfig {
    pub fn new(paths: usize, seed: u64) -> Self {
        ReceiverConfig {
            paths,
            coding: Coding::Real,
            max_blocks_ahead: 128,
            max_shard_len: 1500,
            seed,
            ack_on_arrival_path: false,
        }
    }

    /// `braid recv`'s receiver (the counterpart of
    /// [`SenderConfig::for_files`](crate::mplot::SenderConfig::for_files)).
    /// Each path's ACKs come back on that path. The paper draws the
    /// reverse path at random (§II-C), harmless on its equal paths; on a
    /// 20 ms path next to a 100 ms one, half of the fast path's ACKs took
    /// the slow way back, its window was clocked by the mixed RTT and it
    /// carried 4-6 of its 10 Mbit/s in the lab (lab/fast-slow.toml).
    pub fn for_files(paths: usize, seed: u64) -> Self {
        ReceiverConfig {
            ack_on_arrival_path: true,
            ..ReceiverConfig::new(paths, seed)
        }
    }
}

/// Block shapes whose codes a receiver keeps ([`CodeCache`]). Each code
/// also keeps up to 254 decoding matrices of `k²` bytes (the crate's LRU
/// of loss patterns), so at most 4 x 254 x 256² bytes (66 MB) for blocks
/// of the largest shape, whatever a sender does; MPLOT's blocks of about
/// 80 data shards need 1.6 MB a code.
pub const RECEIVER_CODES: usize = 4;

/// Why a DATA frame was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecvError {
    #[error("path {0} is not one of this session's paths")]
    Path(u8),
    #[error("block {block} is beyond the receive window (oldest undecoded {base})")]
    Window { block: u32, base: u32 },
    #[error("shard of {0} bytes is above the receiver's limit")]
    ShardTooLong(u16),
    #[error("packet disagrees with earlier packets of block {0}")]
    Inconsistent(u32),
    #[error("virtual frame for a receiver of real bytes, or the reverse")]
    WrongCoding,
    #[error("block {0} could not be decoded: {1}")]
    Decode(u32, FecError),
}

/// Bytes of the stream, delivered in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub block: u32,
    pub offset: u64,
    /// Stream bytes (empty in virtual coding; `len` says how many).
    pub data: Vec<u8>,
    pub len: u64,
    pub fin: bool,
}

#[derive(Debug)]
struct RecvBlock {
    data: u8,
    total: u8,
    shard_len: u16,
    offset: u64,
    bytes: u32,
    fin: bool,
    have: PosSet,
    shards: Vec<Option<Vec<u8>>>,
}

/// Counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub packets: u64,
    pub duplicates: u64,
    pub dropped: u64,
    pub blocks_decoded: u64,
    pub bytes_delivered: u64,
}

/// The receiving half of a session.
#[derive(Debug)]
pub struct Receiver {
    cfg: ReceiverConfig,
    rng: ChaCha8Rng,
    /// CE marks to echo, per forward path: how many more ACKs still carry
    /// the path's bit (see [`Receiver::handle_data`]).
    ce_left: [u8; MAX_PATHS],
    blocks: BTreeMap<u32, RecvBlock>,
    /// Every block below is decoded.
    cum_block: u32,
    decoded_above: BTreeSet<u32>,
    /// Decoded blocks waiting for earlier ones, by stream offset.
    ready: BTreeMap<u64, Chunk>,
    next_offset: u64,
    acks: VecDeque<(usize, Ack)>,
    out: VecDeque<Chunk>,
    fin_seen: bool,
    pub stats: ReceiverStats,
    /// The Reed-Solomon codes of recent block shapes (real coding).
    codes: CodeCache,
}

impl Receiver {
    pub fn new(cfg: ReceiverConfig) -> Self {
        Receiver {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            ce_left: [0; MAX_PATHS],
            blocks: BTreeMap::new(),
            cum_block: 0,
            decoded_above: BTreeSet::new(),
            ready: BTreeMap::new(),
            next_offset: 0,
            acks: VecDeque::new(),
            out: VecDeque::new(),
            fin_seen: false,
            stats: ReceiverStats::default(),
            codes: CodeCache::new(RECEIVER_CODES),
            cfg,
        }
    }

    /// Whether the block carrying FIN, and every block before it, has been
    /// delivered.
    pub fn is_complete(&self) -> bool {
        self.fin_seen && self.ready.is_empty()
    }

    /// Stream bytes delivered in order so far.
    pub fn delivered(&self) -> u64 {
        self.next_offset
    }

    fn is_decoded(&self, block: u32) -> bool {
        block < self.cum_block || self.decoded_above.contains(&block)
    }

    /// A DATA frame arrived, `ce` if it was marked Congestion Experienced.
    /// An ACK is queued for every frame taken (duplicates included, so the
    /// sender learns the packet arrived); frames refused get none.
    pub fn handle_data(
        &mut self,
        _now: Instant,
        ce: bool,
        frame: &DataView<'_>,
    ) -> Result<(), RecvError> {
        let h = frame.header;
        if usize::from(h.path) >= self.cfg.paths.min(MAX_PATHS) {
            self.stats.dropped += 1;
            return Err(RecvError::Path(h.path));
        }
        if h.virtual_shard != (self.cfg.coding == Coding::Virtual) {
            self.stats.dropped += 1;
            return Err(RecvError::WrongCoding);
        }
        if h.shard_len > self.cfg.max_shard_len {
            self.stats.dropped += 1;
            return Err(RecvError::ShardTooLong(h.shard_len));
        }
        if h.block >= self.cum_block.saturating_add(self.cfg.max_blocks_ahead) {
            self.stats.dropped += 1;
            return Err(RecvError::Window {
                block: h.block,
                base: self.cum_block,
            });
        }
        self.stats.packets += 1;
        if ce {
            self.ce_left[usize::from(h.path)] = CE_ECHOES;
        }
        let mut have = 255u8;
        let mut decoded = self.is_decoded(h.block);
        if decoded {
            self.stats.duplicates += 1;
        } else {
            let b = self.blocks.entry(h.block).or_insert_with(|| RecvBlock {
                data: h.data,
                total: h.total,
                shard_len: h.shard_len,
                offset: h.offset,
                bytes: h.block_bytes,
                fin: h.fin,
                have: PosSet::default(),
                shards: Vec::new(),
            });
            if (b.data, b.total, b.shard_len, b.offset, b.bytes, b.fin)
                != (h.data, h.total, h.shard_len, h.offset, h.block_bytes, h.fin)
            {
                self.stats.dropped += 1;
                self.stats.packets -= 1;
                return Err(RecvError::Inconsistent(h.block));
            }
            if b.have.insert(usize::from(h.pos)) {
                if !h.virtual_shard {
                    if b.shards.is_empty() {
                        b.shards = vec![None; usize::from(b.total)];
                    }
                    b.shards[usize::from(h.pos)] = Some(frame.shard.to_vec());
                }
            } else {
                self.stats.duplicates += 1;
            }
            have = b.have.len().min(255) as u8;
            if b.have.len() >= usize::from(b.data) {
                self.decode(h.block)?;
                decoded = true;
            }
        }
        // Uniform over the paths (multiply-shift, bias below 2^-32 · paths).
        let reverse = if self.cfg.ack_on_arrival_path {
            usize::from(h.path)
        } else {
            ((u64::from(self.rng.next_u32()) * self.cfg.paths as u64) >> 32) as usize
        };
        let ce_paths = self.take_ce();
        self.acks.push_back((
            reverse,
            Ack {
                path: h.path,
                pos: h.pos,
                have,
                decoded,
                ce_paths,
                block: h.block,
                cum_block: self.cum_block,
                seq: h.seq,
            },
        ));
        Ok(())
    }

    /// The CE map of the next ACK: bit `i` while path `i`'s latest mark
    /// has been echoed fewer than [`CE_ECHOES`] times.
    fn take_ce(&mut self) -> u16 {
        let mut map = 0u16;
        for (i, left) in self.ce_left.iter_mut().enumerate() {
            if *left > 0 {
                map |= 1 << i;
                *left -= 1;
            }
        }
        map
    }

    fn decode(&mut self, id: u32) -> Result<(), RecvError> {
        let b = self.blocks.remove(&id).expect("decoding a buffered block");
        let data = if self.cfg.coding == Coding::Real {
            let code = self
                .codes
                .get(usize::from(b.data), usize::from(b.total - b.data))
                .map_err(|e| RecvError::Decode(id, e))?;
            let mut shards = b.shards;
            code.reconstruct(&mut shards)
                .map_err(|e| RecvError::Decode(id, e))?;
            let mut out = Vec::with_capacity(b.bytes as usize);
            for s in shards.into_iter().take(usize::from(b.data)).flatten() {
                out.extend_from_slice(&s);
            }
            out.truncate(b.bytes as usize);
            out
        } else {
            Vec::new()
        };
        self.stats.blocks_decoded += 1;
        self.decoded_above.insert(id);
        while self.decoded_above.remove(&self.cum_block) {
            self.cum_block += 1;
        }
        if b.offset >= self.next_offset {
            self.ready.insert(
                b.offset,
                Chunk {
                    block: id,
                    offset: b.offset,
                    data,
                    len: u64::from(b.bytes),
                    fin: b.fin,
                },
            );
        }
        while let Some(c) = self.ready.remove(&self.next_offset) {
            self.next_offset += c.len;
            self.stats.bytes_delivered += c.len;
            self.fin_seen |= c.fin;
            self.out.push_back(c);
            if self.fin_seen {
                break;
            }
        }
        Ok(())
    }

    /// The next ACK to send and the reverse path to send it on.
    pub fn poll_ack(&mut self) -> Option<(usize, Ack)> {
        self.acks.pop_front()
    }

    /// The next in-order piece of the stream.
    pub fn poll_read(&mut self) -> Option<Chunk> {
        self.out.pop_front()
    }
}
