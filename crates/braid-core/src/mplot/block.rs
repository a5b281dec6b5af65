//! One block on the sending side: its coded packets, which of them went out,
//! which arrived, and the RFEC decision (§II-A; `SPECS.md` §2.1, §2.5).
//!
//! A block has `F` data packets, `k` PFEC packets (with the data, the
//! p-block, sent first) and `K - k` reserve RFEC packets (the r-block, sent
//! only when the p-block falls short). All parity is computed when the block
//! is made, from a [`crate::fec::BlockCode`]; positions `0..F` are data, `F..F+k` PFEC,
//! `F+k..F+K` RFEC.
//!
//! The RFEC trigger, which the paper leaves vague ("fast-retransmit-like at
//! block level"), is `SPECS.md`'s reading: once the p-block is out, a block
//! still needs `r = F - delivered - in flight - queued` packets; when `r > 0`
//! it queues `⌈(1 + y) r⌉` new ones (eq 10). Packets in flight count as
//! on their way until they are acknowledged or deemed lost, so the trigger
//! re-arms by itself once a round's packets resolve. New packets come from
//! the r-block; when it runs out the block wraps around to its first
//! positions and resends those not known delivered and not in flight
//! (never a copy of a packet still on its way).

use crate::fec::mplot::BlockShape;
use crate::fec::{CodeCache, FecError};
use crate::time::Instant;

/// A 256-bit set of block positions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PosSet([u64; 4]);

impl PosSet {
    pub fn contains(&self, pos: usize) -> bool {
        pos < 256 && self.0[pos / 64] & (1 << (pos % 64)) != 0
    }
    /// Adds `pos`; returns whether it was new.
    pub fn insert(&mut self, pos: usize) -> bool {
        if pos >= 256 || self.contains(pos) {
            return false;
        }
        self.0[pos / 64] |= 1 << (pos % 64);
        true
    }
    pub fn remove(&mut self, pos: usize) {
        if pos < 256 {
            self.0[pos / 64] &= !(1 << (pos % 64));
        }
    }
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The sender's state of one block.
#[derive(Clone, Debug)]
pub struct SendBlock {
    pub id: u32,
    /// Stream offset of the first byte.
    pub offset: u64,
    /// Stream bytes in the block.
    pub bytes: u32,
    pub fin: bool,
    pub shape: BlockShape,
    /// Bytes of every shard (`packet size - header budget`).
    pub shard_len: u16,
    /// Every position's shard (data then parity); empty when the sender
    /// models only sizes.
    pub shards: Vec<Vec<u8>>,
    /// The next position never sent.
    next_new: usize,
    /// Positions queued for sending by the RFEC rule.
    queue: std::collections::VecDeque<u8>,
    /// Positions sent and not yet acknowledged or deemed lost.
    in_flight: PosSet,
    /// Packets in flight (a position may be in flight twice after a wrap).
    in_flight_count: usize,
    /// Positions acknowledged.
    pub acked: PosSet,
    /// Distinct packets the receiver holds: the larger of the positions
    /// acknowledged and the receiver's own count echoed in its ACKs.
    pub delivered: usize,
    pub decoded: bool,
    /// Where the wrap-around resend scan continues.
    wrap_cursor: usize,
    /// Per path `(delivered, resolved)` packets of this block (eq 2's
    /// `R_i(b)`, `S_i(b)`), counting only packets already resolved.
    pub per_path: Vec<(u32, u32)>,
    /// When the block's first packet left.
    pub first_sent: Option<Instant>,
    /// Packets of this block sent so far (all rounds).
    pub sent: u32,
}

impl SendBlock {
    /// A block over `data` (at most `F × shard_len` bytes; empty for a
    /// size-only block of `bytes` bytes), coded now.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u32,
        offset: u64,
        bytes: u32,
        fin: bool,
        shape: BlockShape,
        shard_len: u16,
        data: Option<(&[u8], &mut CodeCache)>,
        paths: usize,
    ) -> Result<Self, FecError> {
        let shards = match data {
            None => Vec::new(),
            Some((d, codes)) => {
                let l = usize::from(shard_len);
                let mut shards: Vec<Vec<u8>> = (0..shape.data)
                    .map(|i| {
                        let mut s = vec![0u8; l];
                        let lo = (i * l).min(d.len());
                        let hi = ((i + 1) * l).min(d.len());
                        s[..hi - lo].copy_from_slice(&d[lo..hi]);
                        s
                    })
                    .collect();
                let parity = codes
                    .get(shape.data, shape.pfec + shape.reserve)?
                    .encode(&shards)?;
                shards.extend(parity);
                shards
            }
        };
        Ok(SendBlock {
            id,
            offset,
            bytes,
            fin,
            shape,
            shard_len,
            shards,
            next_new: 0,
            queue: Default::default(),
            in_flight: PosSet::default(),
            in_flight_count: 0,
            acked: PosSet::default(),
            delivered: 0,
            decoded: false,
            wrap_cursor: 0,
            per_path: vec![(0, 0); paths],
            first_sent: None,
            sent: 0,
        })
    }

    /// Packets waiting to be sent now (rest of the p-block, queued RFEC).
    pub fn pending(&self) -> usize {
        if self.decoded {
            return 0;
        }
        self.shape.p_block().saturating_sub(self.next_new) + self.queue.len()
    }

    /// Takes the next position to send, if any, and counts it in flight.
    pub fn take_next(&mut self, now: Instant) -> Option<u8> {
        if self.decoded {
            return None;
        }
        let pos = if self.next_new < self.shape.p_block() {
            let p = self.next_new;
            self.next_new += 1;
            p as u8
        } else {
            self.queue.pop_front()?
        };
        self.in_flight.insert(usize::from(pos));
        self.in_flight_count += 1;
        self.first_sent.get_or_insert(now);
        self.sent += 1;
        Some(pos)
    }

    /// A packet of this block sent on `path` at `pos` was acknowledged.
    pub fn on_acked(&mut self, path: usize, pos: u8, was_in_flight: bool) {
        if was_in_flight {
            self.leave_flight(pos);
            if let Some(pp) = self.per_path.get_mut(path) {
                pp.0 += 1;
                pp.1 += 1;
            }
        }
        if self.acked.insert(usize::from(pos)) {
            self.delivered = self.delivered.max(self.acked.len());
        }
    }

    /// A packet of this block sent on `path` at `pos` was deemed lost.
    pub fn on_lost(&mut self, path: usize, pos: u8) {
        self.leave_flight(pos);
        if let Some(pp) = self.per_path.get_mut(path) {
            pp.1 += 1;
        }
    }

    fn leave_flight(&mut self, pos: u8) {
        self.in_flight_count = self.in_flight_count.saturating_sub(1);
        self.in_flight.remove(usize::from(pos));
    }

    /// Packets of this block still in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight_count
    }

    /// The receiver says it holds `have` distinct packets of the block.
    pub fn on_have(&mut self, have: u8) {
        self.delivered = self.delivered.max(usize::from(have));
    }

    /// The block is decoded at the receiver: nothing more to send, shards freed.
    pub fn mark_decoded(&mut self) {
        self.decoded = true;
        self.queue.clear();
        self.shards = Vec::new();
    }

    /// Packets still needed beyond those delivered, in flight or queued
    /// (`r` of the RFEC trigger); zero until the p-block is out.
    pub fn shortfall(&self) -> usize {
        if self.decoded || self.next_new < self.shape.p_block() {
            return 0;
        }
        self.shape
            .data
            .saturating_sub(self.delivered + self.in_flight_count + self.queue.len())
    }

    /// Queues up to `count` new packets: unused r-block positions first,
    /// then (wrap-around) positions neither acknowledged, in flight nor
    /// queued. Returns how many were queued.
    pub fn queue_repair(&mut self, count: usize) -> usize {
        let total = self.shape.total();
        let mut queued = 0;
        while queued < count && self.next_new < total {
            self.queue.push_back(self.next_new as u8);
            self.next_new += 1;
            queued += 1;
        }
        let mut scanned = 0;
        while queued < count && scanned < total {
            let p = self.wrap_cursor % total;
            self.wrap_cursor = (self.wrap_cursor + 1) % total;
            scanned += 1;
            if !self.acked.contains(p)
                && !self.in_flight.contains(p)
                && !self.queue.contains(&(p as u8))
            {
                self.queue.push_back(p as u8);
                queued += 1;
            }
        }
        queued
    }

    /// The shard at `pos` (empty for a size-only block).
    pub fn shard(&self, pos: u8) -> &[u8] {
        self.shards
            .get(usize::from(pos))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> BlockShape {
        BlockShape {
            packet_size: 250,
            data: 4,
            pfec: 2,
            reserve: 4,
        }
    }

    #[test]
    fn p_block_first_then_rfec_then_wrap() {
        let mut b = SendBlock::new(
            0,
            0,
            800,
            false,
            shape(),
            200,
            Some((&[7u8; 800], &mut CodeCache::new(1))),
            2,
        )
        .unwrap();
        assert_eq!(b.shards.len(), 10);
        assert_eq!(b.pending(), 6);
        let t = Instant::ZERO;
        let sent: Vec<u8> = (0..6).map(|_| b.take_next(t).unwrap()).collect();
        assert_eq!(sent, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(b.take_next(t), None);
        // Nothing needed while all six are in flight.
        assert_eq!(b.shortfall(), 0);
        // Four lost, two delivered: r = 4 - 2 = 2.
        for p in 0..4 {
            b.on_lost(0, p);
        }
        b.on_acked(1, 4, true);
        b.on_acked(1, 5, true);
        assert_eq!(b.shortfall(), 2);
        assert_eq!(b.per_path, vec![(0, 4), (2, 2)]);
        // Eq 10 asks for 3: RFEC positions 6, 7, 8 (the r-block).
        assert_eq!(b.queue_repair(3), 3);
        assert_eq!(b.shortfall(), 0);
        let rfec: Vec<u8> = (0..3).map(|_| b.take_next(t).unwrap()).collect();
        assert_eq!(rfec, vec![6, 7, 8]);
        for p in 6..9 {
            b.on_lost(0, p);
        }
        // r-block has one left (9), then wrap to 0.. skipping the acked 4, 5.
        assert_eq!(b.queue_repair(3), 3);
        let more: Vec<u8> = (0..3).map(|_| b.take_next(t).unwrap()).collect();
        assert_eq!(more, vec![9, 0, 1]);
        b.on_have(4);
        assert_eq!(b.shortfall(), 0);
        b.mark_decoded();
        assert_eq!(b.pending(), 0);
        assert!(b.shards.is_empty());
    }

    #[test]
    fn wrap_never_queues_what_is_in_flight_or_acked() {
        let s = BlockShape {
            packet_size: 250,
            data: 3,
            pfec: 0,
            reserve: 0,
        };
        let mut b = SendBlock::new(0, 0, 600, false, s, 200, None, 1).unwrap();
        let t = Instant::ZERO;
        for _ in 0..3 {
            b.take_next(t);
        }
        b.on_lost(0, 1);
        b.on_acked(0, 0, true);
        // Only position 1 may be resent (ARQ when there is no FEC at all).
        assert_eq!(b.queue_repair(5), 1);
        assert_eq!(b.take_next(t), Some(1));
    }

    #[test]
    fn pos_set() {
        let mut s = PosSet::default();
        assert!(s.insert(0) && s.insert(255) && !s.insert(0) && !s.insert(256));
        assert_eq!(s.len(), 2);
        s.remove(0);
        assert!(!s.contains(0) && s.contains(255));
    }
}
