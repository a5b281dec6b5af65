//! The sending half of an MPLOT session (§II, §III; `SPECS.md` §2).
//!
//! Call order, quinn style: feed application bytes with [`Sender::write`]
//! (or [`Sender::write_virtual`] in a simulation) and [`Sender::finish`];
//! feed every acknowledgement to [`Sender::handle_ack`]; call
//! [`Sender::poll_transmit`] until it returns `None` after each of these;
//! arm a timer for [`Sender::poll_timeout`] and call
//! [`Sender::handle_timeout`] when it fires. Nothing here reads a clock or
//! touches a socket.
//!
//! What happens inside:
//! - A block is made when a path has room in its window and no packet is
//!   waiting for it (the path then sends from it if a whole packet fits,
//!   else a later one does): its p-block size from eq 12 over the current windows
//!   and RTTs, packet size from {750, 550, 250} B, PFEC ratio from eq 9
//!   (`crate::fec::mplot::block_shape`). If fewer bytes are waiting than
//!   the block could hold, it takes what there is (the paper: "do not
//!   wait").
//! - Packets go to paths by rank (eq 1): paths are visited in decreasing
//!   `π_i`, GOOD paths (rank above the median) take packets of the earliest
//!   `⌈U/2⌉` unrecovered blocks, BAD paths those of the latest `⌊U/2⌋`,
//!   and either spills to the other class (or a new block) rather than
//!   leave a free window slot unused (§III-D).
//! - Every packet has a byte sequence number of its own, never reused (the
//!   sequence space advances by each packet's bytes, resends included), so
//!   every acknowledgement names exactly one transmission: its path, its
//!   block and an unambiguous RTT sample.
//! - A packet is deemed lost when a packet sent on the same path more than
//!   a reordering window later has been acknowledged (RACK-like; paths are
//!   FIFO but acknowledgements come back on random paths, so the window is
//!   a quarter RTT plus the spread of the paths' RTTs), or when its path's
//!   RTO fires. Either updates the loss statistics (eq 2–3) and may trigger
//!   RFEC; neither touches the window.
//! - With [`SenderConfig::release_on_decode`], a block the receiver
//!   decoded frees its packets still in flight from their paths' windows
//!   and timers, as the paper's cumulative ACK passes them (§II-B).
//! - With [`SenderConfig::pacing`], each path's packets leave spread over
//!   its round trip ([`Pacing`]), not in bursts as ACKs open the window.
//!
//! The heterogeneity-blind baseline of §IV-B is a configuration of this
//! sender ([`Mapping::Blind`]), and so is an ARQ sender after PTCP
//! ([`SenderConfig::arq`]); see their docs.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::fec::mplot::{self, LossStats};
use crate::fec::CodeCache;
use crate::mplot::block::SendBlock;
use crate::mplot::cc::PathCc;
use crate::mplot::wire::{DataHeader, MAX_PATHS};
use crate::pacer::Pacer;
use crate::time::Instant;

mod config;
mod loss;
mod mapping;
mod pacing;

pub use config::{
    Coding, Mapping, Pacing, SenderConfig, SenderError, BLOCK_DATA_STEP, FILE_BLOCK_DATA,
    FILE_OVERHEAD, FILE_PACKET,
};

/// One packet to put on a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Forward path index.
    pub path: usize,
    pub header: DataHeader,
    /// The shard (empty in virtual coding).
    pub shard: Vec<u8>,
    /// Bytes the packet occupies on the path in the paper's accounting
    /// (its packet size, header budget included).
    pub size: usize,
}

#[derive(Clone, Copy, Debug)]
struct SentRec {
    path: u8,
    block: u32,
    pos: u8,
    size: u32,
    sent_at: Instant,
    lost: bool,
    /// A resend of a position already sent (after the p-block).
    retx: bool,
    /// Its block was decoded while it was in flight: it left the path's
    /// window and timer (`SenderConfig::release_on_decode`) but is not yet
    /// resolved for eq 2.
    released: bool,
}

/// Counters for reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub rfec_queued: u64,
    pub lost: u64,
    pub blocks_made: u64,
    pub blocks_decoded: u64,
    pub timeouts: u64,
    /// Paths whose window a decoded block released
    /// (`SenderConfig::release_on_decode`), counted once per block and path.
    pub released: u64,
}

/// Block shapes whose codes a sender keeps ([`CodeCache`]): eq 12's block
/// size and eq 9's parity move with the windows and the loss estimate,
/// but among few neighbouring values at a time.
pub const SENDER_CODES: usize = 16;

/// The sending half of a session.
#[derive(Debug)]
pub struct Sender {
    cfg: SenderConfig,
    cc: Vec<PathCc>,
    /// Outstanding sequence numbers per path, in send order.
    outstanding: Vec<VecDeque<u64>>,
    /// Send time of the latest-sent packet acknowledged on each path.
    latest_acked: Vec<Option<Instant>>,
    /// When each path last had a packet acknowledged.
    last_ack_at: Vec<Option<Instant>>,
    records: HashMap<u64, SentRec>,
    /// Lost records kept for late acknowledgements, purged by age.
    lost_records: VecDeque<(Instant, u64)>,
    /// Unrecovered (and recently recovered) blocks, by id, contiguous.
    blocks: VecDeque<SendBlock>,
    next_block: u32,
    next_seq: u64,
    stats_agg: LossStats,
    /// Application bytes not yet in a block (real coding).
    app: VecDeque<u8>,
    /// Application bytes not yet in a block (virtual coding).
    app_virtual: u64,
    app_offset: u64,
    finished: bool,
    /// The block carrying FIN has been made.
    fin_made: bool,
    /// Each path's pacing slot (with `SenderConfig::pacing`).
    pacers: Vec<Pacer>,
    /// When a path that had room in its window was held back by its
    /// pacer: the instant `poll_timeout` asks to be woken for it.
    pace_wake: Vec<Option<Instant>>,
    /// A path's pacer held it back since it last sent: its missed slots
    /// may be caught up (a late caller), not those of a path that waited
    /// for its window.
    pace_held: Vec<bool>,
    pub stats: SenderStats,
    /// The Reed-Solomon codes of recent block shapes (real coding).
    codes: CodeCache,
}

impl Sender {
    pub fn new(cfg: SenderConfig) -> Result<Self, SenderError> {
        if cfg.paths == 0 || cfg.paths > MAX_PATHS {
            return Err(SenderError::Paths(cfg.paths));
        }
        if cfg.max_packet < 250 {
            return Err(SenderError::PacketSize(cfg.max_packet));
        }
        if cfg.header_bytes >= 250 {
            return Err(SenderError::Header(cfg.header_bytes));
        }
        let n = cfg.paths;
        Ok(Sender {
            cc: (0..n).map(|_| PathCc::new(cfg.cc)).collect(),
            outstanding: vec![VecDeque::new(); n],
            latest_acked: vec![None; n],
            last_ack_at: vec![None; n],
            records: HashMap::new(),
            lost_records: VecDeque::new(),
            blocks: VecDeque::new(),
            next_block: 0,
            next_seq: 0,
            stats_agg: LossStats::default(),
            app: VecDeque::new(),
            app_virtual: 0,
            app_offset: 0,
            finished: false,
            fin_made: false,
            pacers: vec![Pacer::new(); n],
            pace_wake: vec![None; n],
            pace_held: vec![false; n],
            stats: SenderStats::default(),
            codes: CodeCache::new(SENDER_CODES),
            cfg,
        })
    }

    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }

    /// Queues application bytes (real coding).
    pub fn write(&mut self, data: &[u8]) -> Result<(), SenderError> {
        if self.finished {
            return Err(SenderError::Finished);
        }
        if self.cfg.coding != Coding::Real {
            return Err(SenderError::WrongCoding);
        }
        self.app.extend(data);
        Ok(())
    }

    /// Queues `n` application bytes of which only the count matters
    /// (virtual coding).
    pub fn write_virtual(&mut self, n: u64) -> Result<(), SenderError> {
        if self.finished {
            return Err(SenderError::Finished);
        }
        if self.cfg.coding != Coding::Virtual {
            return Err(SenderError::WrongCoding);
        }
        self.app_virtual += n;
        Ok(())
    }

    /// No more bytes will be written; the last block carries FIN.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Application bytes written but not yet in a block.
    pub fn buffered(&self) -> u64 {
        self.app.len() as u64 + self.app_virtual
    }

    /// Whether every block, the last one included, is decoded at the
    /// receiver.
    pub fn is_done(&self) -> bool {
        self.fin_made && self.buffered() == 0 && self.blocks.iter().all(|b| b.decoded)
    }

    /// Per-path controller state (window, RTT, `p̂_i`).
    pub fn path(&self, i: usize) -> &PathCc {
        &self.cc[i]
    }

    /// `p̂_agg`, `σ̂_agg` (eqs 2–3).
    pub fn loss_stats(&self) -> LossStats {
        self.stats_agg
    }

    /// Unrecovered blocks (U of §III-D).
    pub fn unrecovered(&self) -> usize {
        self.blocks.iter().filter(|b| !b.decoded).count()
    }

    /// Eq 1 for every path.
    pub fn ranks(&self) -> Vec<f64> {
        self.cc
            .iter()
            .map(|c| mplot::rank(c.window(), c.loss, c.srtt().as_secs_f64()))
            .collect()
    }

    /// Blocks not yet known decoded, with their first send time (for delay
    /// reports): `(id, first_sent)`.
    pub fn open_blocks(&self) -> BTreeMap<u32, Option<Instant>> {
        self.blocks
            .iter()
            .filter(|b| !b.decoded)
            .map(|b| (b.id, b.first_sent))
            .collect()
    }
}
