//! Which packet goes to which path: blocks made from waiting bytes (eq 12,
//! eq 9, the packet-size rule) and the rank mapping of §III-D.

use std::collections::VecDeque;

use super::{Coding, Mapping, Sender, SenderError, SentRec, Transmit};
use crate::fec::mplot::{self, BlockShape};
use crate::mplot::block::SendBlock;
use crate::mplot::wire::DataHeader;
use crate::time::Instant;

impl Sender {
    /// The next packet to send, or `None` when no path has room for a
    /// whole packet or nothing is waiting.
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
            if !self.cc[path].can_send(1) || !self.pacer_ready(now, path) {
                continue;
            }
            // A path sends only a packet that fits its window whole (TCP's
            // "flight + SMSS <= cwnd", RFC 5681 Section 3.1). Sending once
            // any byte was free overshot every window by up to a packet,
            // which against TCP-SACK on a shared queue took about 1.3 x its
            // share (Fig 7, `braid-sim` tests/mplot.rs).
            if let Some(bi) = self.pick_block(good)? {
                if !self.cc[path].can_send(self.blocks[bi].shape.packet_size) {
                    // Waiting for its window now, not for its pacer: no
                    // catch-up when the window opens (`take_pacer`).
                    self.pace_held[path] = false;
                    continue;
                }
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
    /// any and the new block lies within `max_blocks` of the oldest
    /// unrecovered one.
    ///
    /// The receiver accepts blocks up to `max_blocks_ahead` past its oldest
    /// undecoded block and drops the rest, so the bound is on that span,
    /// not on the count of unrecovered blocks: with one block held on a
    /// far path and the blocks after it decoded by a near one, the count
    /// stayed low while the span passed the receiver's window. The near
    /// path's packets were then dropped unacknowledged until its timer
    /// fired (lab/geo in simulation, in one run: the near path's window
    /// fell to one packet at 19 s). The sender's oldest unrecovered block
    /// is never newer than the receiver's oldest undecoded one, so a block
    /// inside this span is inside the receiver's window too.
    fn new_block(&mut self) -> Result<Option<usize>, SenderError> {
        let oldest = self
            .blocks
            .iter()
            .find(|b| !b.decoded)
            .map_or(self.next_block, |b| b.id);
        if (self.next_block - oldest) as usize >= self.cfg.max_blocks {
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
        let capped = self.cfg.block_data(shape.data);
        let full = (capped * shard_len) as u64;
        let bytes = waiting.min(full);
        if bytes < full || capped < shape.data {
            // Not enough data for the block, or a block capped for real
            // coding (`SenderConfig::max_block_data`): send what there is,
            // with PFEC per eq 9 on the smaller F.
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
                    Some((&data, &mut self.codes)),
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
                released: false,
            },
        );
        self.outstanding[path].push_back(seq);
        self.cc[path].on_sent(size);
        self.take_pacer(now, path, size);
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += size as u64;
        Transmit {
            path,
            header,
            shard,
            size,
        }
    }
}
