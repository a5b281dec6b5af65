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
//!   waiting for it: its p-block size from eq 12 over the current windows
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
//!
//! Two baselines of the paper's §IV are configurations of this sender
//! ([`Mapping::Blind`], and [`SenderConfig::arq`] for PTCP's no-FEC
//! aggregate FIFO); see their docs.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::fec::mplot::{self, BlockShape, LossStats};
use crate::fec::FecError;
use crate::mplot::block::SendBlock;
use crate::mplot::cc::{CcConfig, PathCc};
use crate::mplot::wire::{Ack, DataHeader, MAX_PATHS};
use crate::time::{Duration, Instant};

/// PTCP's duplicate-ACK threshold (TCP's three).
const DUPTHRESH: usize = 3;

/// How packets are mapped to paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mapping {
    /// MPLOT's rank-based mapping (eq 1, GOOD/BAD, §III-D).
    #[default]
    Rank,
    /// The heterogeneity-blind baseline of §IV-B: the same FEC and blocks,
    /// but the head-of-queue packet (oldest block first) goes to whichever
    /// path has room, paths in index order.
    Blind,
}

/// What the sender carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Coding {
    /// Real bytes, Reed-Solomon coded.
    #[default]
    Real,
    /// Sizes only, for simulation: blocks decode when any `F` distinct
    /// packets arrive (`SPECS.md` §2.8: "coding can be simulated
    /// abstractly").
    Virtual,
}

/// Settings of a sender.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderConfig {
    /// Number of paths (at most [`MAX_PATHS`]).
    pub paths: usize,
    pub cc: CcConfig,
    /// κ1 of eq 9 (the paper: 1).
    pub kappa1: f64,
    /// κ2 of eq 10 (the paper's simulations: 0).
    pub kappa2: f64,
    /// Header bytes budgeted in every packet size (the paper: 50 of the
    /// 750/550/250). braid's own header is 34 bytes, plus 16 of AEAD tag
    /// when encrypted, so 50 holds it.
    pub header_bytes: usize,
    /// The largest packet a path carries (the smallest path MTU less
    /// outer headers); sizes above it are not chosen.
    pub max_packet: usize,
    /// Most unrecovered blocks at once (bounds sender and receiver memory).
    pub max_blocks: usize,
    pub mapping: Mapping,
    pub coding: Coding,
    /// PTCP baseline (§IV-G): no PFEC, no r-block; a lost packet is resent
    /// as itself (ARQ by the wrap-around rule, exactly `r` packets); a
    /// loss halves the path's window as in TCP (once per RTT), and, as in
    /// NewReno, a lost retransmission is found only by the path's RTO.
    pub arq: bool,
    /// For paths whose queues do not mark ECN (most of today's Internet,
    /// and sockets that cannot read CE): a loss halves the path's window
    /// at most once per smoothed RTT, as an ECN-Echo does (§II-C). Without
    /// it a path's window shrinks only on RTOs, grows to `cc.max_window`
    /// and overflows a drop-tail queue, and FEC repairs the overflow at a
    /// large cost in sent bytes. Off in the paper's simulations, where
    /// every congested queue marks.
    pub halve_on_loss: bool,
    /// With `halve_on_loss`, a path stops halving on unmarked losses once
    /// an ECN-Echo has come back for it: its bottleneck marks, so its
    /// congestion arrives as marks before the queue overflows, and a loss
    /// without a mark is the path's random loss, which §II-C leaves to FEC.
    /// A path whose queues never mark (or whose marks are bleached) keeps
    /// TCP's response to loss. For sockets that send ECT(0) and read CE.
    pub ecn_trust: bool,
    /// With `halve_on_loss`, a loss found while the path's estimated
    /// bottleneck backlog ([`PathCc::backlog`]) is below this many bytes
    /// does not cut the window: the queue was nearly empty, so the loss was
    /// the path's own, not an overflow (TCP Veno's test, which uses three
    /// packets). Without it a path with 1-3 % random loss stays at the
    /// window Reno's loss response allows, too small to ever fill a
    /// marking queue, so `ecn_trust` never starts. `None`: every loss counts.
    pub random_loss_backlog: Option<usize>,
    /// A packet size tried before the paper's 750/550/250 bytes (eq 12
    /// still asks for five packets per block). On real sockets every
    /// packet also carries 28 bytes of IP/UDP and 60 of braid's own (DATA
    /// header and encryption), so 750-byte packets cap goodput at
    /// 690 / 778 = 0.89 of the path rate; 1400 bytes on Ethernet-MTU
    /// paths raise that to 1340 / 1428 = 0.94. `None` in the paper's
    /// simulations.
    pub large_packet: Option<usize>,
}

impl SenderConfig {
    pub fn new(paths: usize) -> Self {
        SenderConfig {
            paths,
            cc: CcConfig::default(),
            kappa1: 1.0,
            kappa2: 0.0,
            header_bytes: 50,
            max_packet: 750,
            max_blocks: 128,
            mapping: Mapping::Rank,
            coding: Coding::Real,
            arq: false,
            halve_on_loss: false,
            ecn_trust: false,
            random_loss_backlog: None,
            large_packet: None,
        }
    }
}

/// Why a sender could not be built or written to.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SenderError {
    #[error("an MPLOT session needs 1..={MAX_PATHS} paths, not {0}")]
    Paths(usize),
    #[error("no MPLOT packet size (750, 550, 250 bytes) fits max_packet = {0}; raise it to at least 250")]
    PacketSize(usize),
    #[error("header_bytes = {0} leaves no payload in a 250-byte packet")]
    Header(usize),
    #[error("the stream is finished; nothing more can be written")]
    Finished,
    #[error("bytes written to a sender configured for virtual (size-only) coding, or the reverse")]
    WrongCoding,
    #[error("block coding failed: {0}")]
    Fec(#[from] FecError),
    #[error("the session ran out of block ids")]
    BlockIds,
}

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
}

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
    pub stats: SenderStats,
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
            stats: SenderStats::default(),
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

    /// The next packet to send, or `None` when no path has room or nothing
    /// is waiting.
    pub fn poll_transmit(&mut self, now: Instant) -> Result<Option<Transmit>, SenderError> {
        let order: Vec<(usize, bool)> = match self.cfg.mapping {
            Mapping::Blind => (0..self.cfg.paths).map(|i| (i, true)).collect(),
            Mapping::Rank => {
                let ranks = self.ranks();
                let good = mplot::good_paths(&ranks);
                let mut idx: Vec<usize> = (0..self.cfg.paths).collect();
                idx.sort_by(|&a, &b| ranks[b].total_cmp(&ranks[a]).then(a.cmp(&b)));
                // With all ranks equal no path is GOOD: treat them all as GOOD.
                let any_good = good.iter().any(|g| *g);
                idx.into_iter().map(|i| (i, good[i] || !any_good)).collect()
            }
        };
        for (path, good) in order {
            if !self.cc[path].can_send(1) {
                continue;
            }
            if let Some(bi) = self.pick_block(good)? {
                return Ok(Some(self.send_from(now, bi, path)));
            }
        }
        Ok(None)
    }

    /// The index in `blocks` of the block a path of class `good` sends from,
    /// making a new block when that is the rule's next choice.
    fn pick_block(&mut self, good: bool) -> Result<Option<usize>, SenderError> {
        let live: Vec<usize> = (0..self.blocks.len())
            .filter(|&i| !self.blocks[i].decoded)
            .collect();
        let u = live.len();
        let split = if self.cfg.mapping == Mapping::Blind || u <= 1 {
            u
        } else {
            mplot::good_block_count(u)
        };
        let (early, late) = live.split_at(split);
        let with_pending = |set: &[usize], blocks: &VecDeque<SendBlock>| {
            set.iter().copied().find(|&i| blocks[i].pending() > 0)
        };
        if good {
            if let Some(i) = with_pending(early, &self.blocks).or(with_pending(late, &self.blocks))
            {
                return Ok(Some(i));
            }
            self.new_block()
        } else {
            if let Some(i) = with_pending(late, &self.blocks) {
                return Ok(Some(i));
            }
            if let Some(i) = self.new_block()? {
                return Ok(Some(i));
            }
            Ok(with_pending(early, &self.blocks))
        }
    }

    /// Makes the next block from waiting application bytes, if there are
    /// any and fewer than `max_blocks` are unrecovered.
    fn new_block(&mut self) -> Result<Option<usize>, SenderError> {
        if self.unrecovered() >= self.cfg.max_blocks {
            return Ok(None);
        }
        let waiting = self.buffered();
        // An empty stream still sends one (empty) block, to carry FIN.
        if waiting == 0 && (!self.finished || self.fin_made) {
            return Ok(None);
        }
        let wr: Vec<(f64, f64)> = self
            .cc
            .iter()
            .map(|c| (c.window(), c.srtt().as_secs_f64()))
            .collect();
        let budget = mplot::p_block_size(&wr);
        let x = if self.cfg.arq {
            0.0
        } else {
            mplot::pfec_ratio(&self.stats_agg, self.cfg.kappa1)
        };
        let mut sizes: Vec<usize> = self.cfg.large_packet.into_iter().collect();
        sizes.extend(mplot::PACKET_SIZES);
        let mut shape = mplot::block_shape_from(&sizes, budget, x, self.cfg.max_packet)
            .ok_or(SenderError::PacketSize(self.cfg.max_packet))?;
        let shard_len = shape.packet_size - self.cfg.header_bytes;
        let full = (shape.data * shard_len) as u64;
        let bytes = waiting.min(full);
        if bytes < full {
            // Not enough data for the block: send what there is, with PFEC
            // per eq 9 on the smaller F.
            let data = (bytes.div_ceil(shard_len as u64) as usize).max(1);
            let pfec = if x > 0.0 {
                ((x * data as f64).ceil() as usize).max(1)
            } else {
                0
            };
            let pfec = pfec.min(mplot::MAX_BLOCK_PACKETS - 4 - data);
            shape = BlockShape {
                packet_size: shape.packet_size,
                data,
                pfec,
                reserve: mplot::r_block_size(data + pfec, pfec),
            };
        }
        if self.cfg.arq {
            shape.pfec = 0;
            shape.reserve = 0;
        }
        let id = self.next_block;
        self.next_block = self
            .next_block
            .checked_add(1)
            .ok_or(SenderError::BlockIds)?;
        let offset = self.app_offset;
        let fin = self.finished && bytes == waiting;
        self.fin_made |= fin;
        let block = match self.cfg.coding {
            Coding::Real => {
                let data: Vec<u8> = self.app.drain(..bytes as usize).collect();
                SendBlock::new(
                    id,
                    offset,
                    bytes as u32,
                    fin,
                    shape,
                    shard_len as u16,
                    Some(&data),
                    self.cfg.paths,
                )?
            }
            Coding::Virtual => {
                self.app_virtual -= bytes;
                SendBlock::new(
                    id,
                    offset,
                    bytes as u32,
                    fin,
                    shape,
                    shard_len as u16,
                    None,
                    self.cfg.paths,
                )?
            }
        };
        self.app_offset += bytes;
        self.stats.blocks_made += 1;
        self.blocks.push_back(block);
        Ok(Some(self.blocks.len() - 1))
    }

    fn send_from(&mut self, now: Instant, bi: usize, path: usize) -> Transmit {
        let b = &mut self.blocks[bi];
        let retx = b.sent as usize >= b.shape.p_block();
        let pos = b
            .take_next(now)
            .expect("picked blocks have a pending packet");
        let size = b.shape.packet_size;
        let seq = self.next_seq;
        self.next_seq += (size - self.cfg.header_bytes) as u64;
        let header = DataHeader {
            fin: b.fin,
            virtual_shard: self.cfg.coding == Coding::Virtual,
            path: path as u8,
            pos,
            data: b.shape.data as u8,
            total: b.shape.total() as u8,
            shard_len: b.shard_len,
            block: b.id,
            seq,
            offset: b.offset,
            block_bytes: b.bytes,
        };
        let shard = b.shard(pos).to_vec();
        self.records.insert(
            seq,
            SentRec {
                path: path as u8,
                block: b.id,
                pos,
                size: size as u32,
                sent_at: now,
                lost: false,
                retx,
            },
        );
        self.outstanding[path].push_back(seq);
        self.cc[path].on_sent(size);
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += size as u64;
        Transmit {
            path,
            header,
            shard,
            size,
        }
    }

    fn block_index(&self, id: u32) -> Option<usize> {
        let first = self.blocks.front()?.id;
        let i = id.checked_sub(first)? as usize;
        (i < self.blocks.len()).then_some(i)
    }

    /// An acknowledgement arrived (on any reverse path).
    pub fn handle_ack(&mut self, now: Instant, ack: &Ack) {
        // ECN-Echo per forward path: halve, at most once per RTT (§II-C).
        for (i, cc) in self.cc.iter_mut().enumerate() {
            if ack.ce_paths & (1 << i) != 0 {
                cc.on_ce(now);
            }
        }
        if let Some(rec) = self.records.remove(&ack.seq) {
            let path = usize::from(rec.path);
            if !rec.lost {
                let rtt = now.saturating_since(rec.sent_at);
                self.cc[path].on_ack(rec.size as usize, Some(rtt));
            }
            if !rec.lost {
                self.last_ack_at[path] = Some(now);
            }
            let la = &mut self.latest_acked[path];
            if la.is_none_or(|t| rec.sent_at > t) {
                *la = Some(rec.sent_at);
            }
            if let Some(bi) = self.block_index(rec.block) {
                self.blocks[bi].on_acked(path, rec.pos, !rec.lost);
                if !rec.lost {
                    self.update_stats(bi, path);
                }
            }
            self.detect_losses(now, path);
        }
        if let Some(bi) = self.block_index(ack.block) {
            self.blocks[bi].on_have(ack.have);
            if ack.decoded {
                self.decoded(bi);
            }
        }
        // Blocks below the receiver's cumulative mark are decoded. Decoded
        // blocks leave the front once none of their packets is in flight:
        // until then their losses still count in eq 2 (a path that is DOWN
        // loses packets of blocks the other paths already completed).
        let mut i = 0;
        while i < self.blocks.len() && self.blocks[i].id < ack.cum_block {
            self.decoded(i);
            i += 1;
        }
        while self
            .blocks
            .front()
            .is_some_and(|b| b.decoded && b.in_flight() == 0)
        {
            self.blocks.pop_front();
        }
        self.trigger_rfec();
        self.purge_lost(now);
    }

    fn decoded(&mut self, bi: usize) {
        if !self.blocks[bi].decoded {
            self.blocks[bi].mark_decoded();
            self.stats.blocks_decoded += 1;
        }
    }

    /// Eq 2, then the EWMAs of eq 2–3, after a packet of the block at `bi`
    /// sent on `path` resolved (acknowledged or deemed lost).
    ///
    /// The paper does not say which block `b` the ratios are taken over.
    /// The newest resolutions belong to blocks whose losses are mostly not
    /// yet known (a loss is known a reordering window after the packets
    /// around it are acknowledged), so their ratios read low; braid takes
    /// the oldest block still held that has resolved packets on the path
    /// (`SPECS.md`'s "oldest block with feedback"). Blocks stay held until
    /// none of their packets is in flight, so that block's ratio is
    /// (nearly) final.
    fn update_stats(&mut self, bi: usize, path: usize) {
        let oldest_on_path = self
            .blocks
            .iter()
            .take(bi + 1)
            .find(|b| b.per_path[path].1 > 0)
            .map(|b| b.per_path[path]);
        // PTCP's windows are TCP's: no division by the acceptance rate.
        if let Some(p) = oldest_on_path.and_then(|(r, s)| mplot::path_loss_inst(r, s)) {
            if !self.cfg.arq {
                self.cc[path].loss = mplot::ewma(self.cc[path].loss, p);
            }
        }
        let oldest = self
            .blocks
            .iter()
            .take(bi + 1)
            .find(|b| b.per_path.iter().any(|pp| pp.1 > 0));
        if let Some(p) = oldest.and_then(|b| mplot::aggregate_loss_inst(&b.per_path)) {
            self.stats_agg.update(p);
        }
    }

    /// The reordering window of the loss rule: a quarter of the path's
    /// smoothed RTT plus the spread of the paths' smallest RTTs, which
    /// bounds how much earlier an acknowledgement can come back on one
    /// reverse path than on another.
    fn reorder_window(&self, path: usize) -> Duration {
        let mins: Vec<Duration> = self.cc.iter().filter_map(|c| c.rtt().min_rtt()).collect();
        let spread = match (mins.iter().min(), mins.iter().max()) {
            (Some(a), Some(b)) => *b - *a,
            _ => Duration::ZERO,
        };
        self.cc[path].srtt() / 4 + spread + Duration::from_millis(1)
    }

    fn detect_losses(&mut self, now: Instant, path: usize) {
        let Some(latest) = self.latest_acked[path] else {
            return;
        };
        let win = self.reorder_window(path);
        while let Some(&seq) = self.outstanding[path].front() {
            match self.records.get(&seq) {
                None => {
                    self.outstanding[path].pop_front();
                }
                Some(r) if r.lost => {
                    self.outstanding[path].pop_front();
                }
                // PTCP (TCP NewReno per path): a lost retransmission is
                // found only by the RTO, a first transmission by three
                // packets sent after it on the path being acknowledged
                // (the duplicate-ACK threshold).
                Some(r) if self.cfg.arq && r.retx => break,
                Some(_) if self.cfg.arq => {
                    let later_acked = self.outstanding[path]
                        .iter()
                        .skip(1)
                        .filter(|s| !self.records.contains_key(s))
                        .take(DUPTHRESH)
                        .count();
                    if later_acked < DUPTHRESH {
                        break;
                    }
                    self.outstanding[path].pop_front();
                    self.declare_lost(now, seq);
                }
                Some(r) if r.sent_at + win < latest => {
                    self.outstanding[path].pop_front();
                    self.declare_lost(now, seq);
                }
                Some(_) => break,
            }
        }
    }

    fn declare_lost(&mut self, now: Instant, seq: u64) {
        let Some(rec) = self.records.get_mut(&seq) else {
            return;
        };
        if rec.lost {
            return;
        }
        rec.lost = true;
        let rec = *rec;
        self.lost_records.push_back((now, seq));
        let path = usize::from(rec.path);
        self.cc[path].on_lost(rec.size as usize);
        let marks = self.cfg.ecn_trust && self.cc[path].ce_seen;
        let random = self
            .cfg
            .random_loss_backlog
            .is_some_and(|b| self.cc[path].backlog() < b as f64);
        if self.cfg.arq || (self.cfg.halve_on_loss && !marks && !random) {
            // PTCP, or a path without ECN: TCP's response to a loss, at
            // most once per RTT, and only for a packet sent after the last
            // cut (NewReno's recovery point, RFC 6582: the drops of one
            // overflow are one congestion event, however long their
            // detection takes).
            self.cc[path].on_loss(now, rec.sent_at);
        }
        self.stats.lost += 1;
        if let Some(bi) = self.block_index(rec.block) {
            self.blocks[bi].on_lost(path, rec.pos);
            self.update_stats(bi, path);
        }
    }

    /// Queues RFEC (eq 10) for every block that falls short.
    fn trigger_rfec(&mut self) {
        for b in self.blocks.iter_mut() {
            let r = b.shortfall();
            if r > 0 {
                let n = if self.cfg.arq {
                    r
                } else {
                    mplot::rfec_count(r, &self.stats_agg, self.cfg.kappa2)
                };
                self.stats.rfec_queued += b.queue_repair(n) as u64;
            }
        }
    }

    fn purge_lost(&mut self, now: Instant) {
        let keep = self
            .cc
            .iter()
            .map(|c| c.rto())
            .max()
            .unwrap_or(Duration::from_secs(1))
            * 4;
        while let Some(&(t, seq)) = self.lost_records.front() {
            if now.saturating_since(t) <= keep && self.lost_records.len() < 1 << 20 {
                break;
            }
            self.lost_records.pop_front();
            if self.records.get(&seq).is_some_and(|r| r.lost) {
                self.records.remove(&seq);
            }
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) must next be called: the
    /// earliest per-path RTO deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        (0..self.cfg.paths)
            .filter_map(|p| self.rto_deadline(p))
            .min()
    }

    /// The RTO deadline of a path: RTO after the later of its oldest
    /// packet in flight and its latest acknowledgement (the timer restarts
    /// on every acknowledgement, RFC 6298 5.3).
    fn rto_deadline(&self, path: usize) -> Option<Instant> {
        let first = self.outstanding[path]
            .iter()
            .filter_map(|s| self.records.get(s))
            .find(|r| !r.lost)?;
        let from = match self.last_ack_at[path] {
            Some(t) => t.max(first.sent_at),
            None => first.sent_at,
        };
        Some(from + self.cc[path].rto())
    }

    /// Fires every per-path RTO that is due: TCP's window response, and all
    /// of that path's packets in flight are deemed lost (they then feed
    /// eq 2 and the RFEC rule).
    pub fn handle_timeout(&mut self, now: Instant) {
        for path in 0..self.cfg.paths {
            let Some(deadline) = self.rto_deadline(path) else {
                continue;
            };
            if now < deadline {
                continue;
            }
            let seqs: Vec<u64> = self.outstanding[path].drain(..).collect();
            for s in seqs {
                self.declare_lost(now, s);
            }
            self.cc[path].on_timeout();
            self.stats.timeouts += 1;
        }
        while self
            .blocks
            .front()
            .is_some_and(|b| b.decoded && b.in_flight() == 0)
        {
            self.blocks.pop_front();
        }
        self.trigger_rfec();
        self.purge_lost(now);
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
