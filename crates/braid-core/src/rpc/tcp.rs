//! The reverse-path controller on real inner TCP packets: the tunnel's
//! `reorder = "prism-rpc"` mode (PRISM Sections 5 and 6.2.1, SPECS.md §1.2).
//!
//! [`Rpc`] counts in segments, as the simulator's TCP does. A real
//! connection counts in bytes, so this adapter keeps, per inner TCP
//! connection, the byte range of every segment the tunnel striped (by
//! segment index, in the order they were first sent) and translates both
//! ways: a data packet sent on a path becomes [`Rpc::on_data_sent`] of its
//! index, a returning pure ACK becomes an [`AckView`] of segment indices
//! (its cumulative ACK: the segments that end at or below it; a SACK block:
//! the segments wholly inside it), and a rewritten release goes back out
//! with the byte value of the segment it names, its SACK blocks blanked to
//! NOPs and its checksum recomputed.
//!
//! Real senders are unmodified, so PRISM's loss information (the NACK and
//! the window factor `p`, Section 6.2.1) cannot reach them and is dropped;
//! what remains is the re-sequencing of ACKs (duplicate ACKs caused by
//! reordering between paths are held and rewritten so the sender does not
//! take them for a loss), per-link loss detection feeding the scheduler
//! ([`RpcEvent::Lost`]: ADAS halves the link's weight), and the hold bound.
//!
//! Only IPv4 TCP is controlled; anything else, ACKs carrying data, and
//! segments of connections not seen sending data pass through untouched.
//! Memory is bounded: at most [`MAX_FLOWS`] connections (the least recently
//! active is dropped, its held ACKs released first), each with a fixed
//! [`Rpc`] and at most `capacity` segment ranges.

use std::collections::VecDeque;

use super::{AckView, Rpc, RpcConfig, RpcEvent, RpcStats, MAX_SACK_BLOCKS};
use crate::path::PathId;
use crate::time::Instant;

/// Inner TCP connections controlled at once.
pub const MAX_FLOWS: usize = 8;

const PROTO_TCP: u8 = 6;
const TCP_OPT_NOP: u8 = 1;
const TCP_OPT_SACK: u8 = 5;
const TCP_OPT_TIMESTAMP: u8 = 8;
const FLAG_FIN: u8 = 0x01;
const FLAG_SYN: u8 = 0x02;
const FLAG_RST: u8 = 0x04;
const FLAG_ACK: u8 = 0x10;

/// `(source, destination, source port, destination port)` of the data
/// direction.
type FlowKey = ([u8; 4], [u8; 4], u16, u16);

/// The parts of an IPv4 TCP packet the adapter needs; offsets into it.
#[derive(Copy, Clone, Debug)]
struct Tcp {
    key: FlowKey,
    /// Start of the TCP header.
    l4: usize,
    /// TCP header length.
    hlen: usize,
    /// End of the IP datagram (total length).
    end: usize,
    seq: u32,
    ack: u32,
    flags: u8,
}

impl Tcp {
    fn payload_len(&self) -> usize {
        self.end - self.l4 - self.hlen
    }
}

/// Parses an IPv4 TCP packet (not a fragment), checked: `None` for
/// anything else or anything malformed.
fn parse(p: &[u8]) -> Option<Tcp> {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(p[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
    let frag = u16::from_be_bytes([p[6], p[7]]);
    if ihl < 20 || total > p.len() || total < ihl + 20 || p[9] != PROTO_TCP || frag & 0x3fff != 0 {
        return None;
    }
    let t = &p[ihl..total];
    let hlen = usize::from(t[12] >> 4) * 4;
    if hlen < 20 || hlen > t.len() {
        return None;
    }
    let a = |i: usize| [p[i], p[i + 1], p[i + 2], p[i + 3]];
    Some(Tcp {
        key: (
            a(12),
            a(16),
            u16::from_be_bytes([t[0], t[1]]),
            u16::from_be_bytes([t[2], t[3]]),
        ),
        l4: ihl,
        hlen,
        end: total,
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        flags: t[13],
    })
}

/// The SACK blocks of a TCP header's options, as byte ranges.
fn sack_blocks(opts: &[u8]) -> ([(u32, u32); MAX_SACK_BLOCKS], usize) {
    let mut out = [(0, 0); MAX_SACK_BLOCKS];
    let mut n = 0;
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            TCP_OPT_NOP => i += 1,
            kind => {
                let Some(&len) = opts.get(i + 1) else { break };
                let len = usize::from(len);
                if len < 2 || i + len > opts.len() {
                    break;
                }
                if kind == TCP_OPT_SACK {
                    for b in opts[i + 2..i + len].chunks_exact(8) {
                        if n < MAX_SACK_BLOCKS {
                            let l = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                            let r = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                            out[n] = (l, r);
                            n += 1;
                        }
                    }
                }
                i += len;
            }
        }
    }
    (out, n)
}

/// Overwrites every SACK option with NOPs (the header keeps its length).
fn blank_sack(opts: &mut [u8]) {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            TCP_OPT_NOP => i += 1,
            kind => {
                let Some(&len) = opts.get(i + 1) else { break };
                let len = usize::from(len);
                if len < 2 || i + len > opts.len() {
                    break;
                }
                if kind == TCP_OPT_SACK {
                    opts[i..i + len].fill(TCP_OPT_NOP);
                }
                i += len;
            }
        }
    }
}

/// Offset (within the options) of the timestamp option's TSval, if any.
fn tsval_at(opts: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return None,
            TCP_OPT_NOP => i += 1,
            kind => {
                let len = usize::from(*opts.get(i + 1)?);
                if len < 2 || i + len > opts.len() {
                    return None;
                }
                if kind == TCP_OPT_TIMESTAMP && len == 10 {
                    return Some(i + 2);
                }
                i += len;
            }
        }
    }
    None
}

/// Recomputes the TCP checksum of a packet [`parse`] accepted (RFC 793:
/// the one's complement sum over the pseudo-header and the segment).
fn fix_checksum(p: &mut [u8], t: &Tcp) {
    use crate::checksum::{add, finish};
    p[t.l4 + 16] = 0;
    p[t.l4 + 17] = 0;
    let len = (t.end - t.l4) as u16;
    let mut sum = add(0, &p[12..20]);
    sum = add(sum, &[0, PROTO_TCP]);
    sum = add(sum, &len.to_be_bytes());
    sum = add(sum, &p[t.l4..t.end]);
    let c = finish(sum);
    p[t.l4 + 16..t.l4 + 18].copy_from_slice(&c.to_be_bytes());
}

/// One connection's byte-to-segment map and controller.
struct Flow {
    key: FlowKey,
    rpc: Rpc<Vec<u8>>,
    /// Sequence number of byte offset 0 (the first data segment seen).
    base: u32,
    /// Byte ranges (offsets from `base`) of segments `first..`.
    segs: VecDeque<(u64, u64)>,
    first: u64,
    /// One past the highest data byte sent (offset), and its sequence
    /// number, for unwrapping 32-bit sequence numbers.
    high: u64,
    /// Highest cumulative ACK seen (offset).
    acked: u64,
    last_active: Instant,
    capacity: usize,
    /// Highest timestamp value (RFC 7323 TSval) in the ACKs released.
    ts_out: Option<u32>,
}

impl Flow {
    fn new(key: FlowKey, seq: u32, cfg: &RpcConfig, now: Instant) -> Flow {
        Flow {
            key,
            rpc: Rpc::new(cfg.clone()),
            base: seq,
            segs: VecDeque::new(),
            first: 0,
            high: 0,
            acked: 0,
            last_active: now,
            capacity: cfg.capacity.clamp(16, 1 << 20) as usize,
            ts_out: None,
        }
    }

    /// The offset of sequence number `seq`, unwrapped near `high`; `None`
    /// before the first byte.
    fn offset(&self, seq: u32) -> Option<u64> {
        let high_seq = self.base.wrapping_add(self.high as u32);
        let d = i64::from(seq.wrapping_sub(high_seq) as i32);
        u64::try_from(self.high as i64 + d).ok()
    }

    /// Appends segment `[off, end)` and returns its index.
    fn push_seg(&mut self, off: u64, end: u64) -> u64 {
        if self.segs.len() >= self.capacity {
            self.segs.pop_front();
            self.first += 1;
        }
        self.segs.push_back((off, end));
        self.high = end;
        self.first + self.segs.len() as u64 - 1
    }

    /// The segment index of a data segment `[off, off + len)` sent now,
    /// creating it when it is new data; `None` for ranges that match no
    /// segment (a retransmission cut differently).
    ///
    /// New data that starts above `high` leaves bytes the tunnel never
    /// carried (the sender's packet was dropped before it reached a path:
    /// a full pacing queue, no session yet; or the new part of a
    /// retransmission cut differently). Those bytes become a segment of
    /// their own, marked unsent in the controller
    /// ([`Rpc::on_data_unsent`]), so the ranges stay contiguous. Without
    /// it the map skipped them: an ACK stopping at the gap counted as
    /// acknowledging the segment after it, and a rewritten ACK carried
    /// that segment's first byte, acknowledging data the receiver never
    /// got. The sender freed it, never sent it again, and took every
    /// later ACK of the receiver as old: the connection stalled for good
    /// with its retransmission timer backing off.
    fn index_of_sent(&mut self, off: u64, len: u64) -> Option<u64> {
        let end = off + len;
        if off >= self.high {
            if off > self.high {
                let gap = self.push_seg(self.high, off);
                self.rpc.on_data_unsent(gap);
            }
            return Some(self.push_seg(off, end));
        }
        let i = self.segs.partition_point(|&(s, _)| s < off);
        match self.segs.get(i) {
            Some(&(s, _)) if s == off => Some(self.first + i as u64),
            _ => None,
        }
    }

    /// Segment index of a cumulative ACK at offset `ack`: the segments
    /// ending at or below it have arrived.
    fn ack_index(&self, ack: u64) -> u64 {
        self.first + self.segs.partition_point(|&(_, e)| e <= ack) as u64
    }

    /// The offset that acknowledges segments below index `k`.
    fn ack_offset(&self, k: u64) -> Option<u64> {
        if k < self.first {
            return None;
        }
        let i = (k - self.first) as usize;
        match self.segs.get(i) {
            Some(&(s, _)) => Some(s),
            None if i == self.segs.len() => Some(self.high),
            None => None,
        }
    }

    /// Forgets the segments the receiver has acknowledged.
    fn prune(&mut self) {
        let cum = self.rpc.meta_cum();
        while self.first < cum && self.segs.front().is_some_and(|&(_, e)| e <= self.acked) {
            self.segs.pop_front();
            self.first += 1;
        }
    }
}

/// The controller for every striped inner TCP connection of one tunnel
/// direction; see the module docs.
pub struct TcpRpc {
    cfg: RpcConfig,
    flows: Vec<Flow>,
    out: VecDeque<Vec<u8>>,
    events: VecDeque<RpcEvent>,
    /// Counters of connections no longer tracked.
    retired: RpcStats,
}

impl TcpRpc {
    pub fn new(cfg: RpcConfig) -> TcpRpc {
        TcpRpc {
            cfg,
            flows: Vec::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            retired: RpcStats::default(),
        }
    }

    /// The inner packet `packet` left on path `path` (first copies and
    /// repairs alike: a repair is the same segment on another link).
    pub fn on_data_sent(&mut self, now: Instant, packet: &[u8], path: PathId) {
        let Some(t) = parse(packet) else { return };
        let len = t.payload_len() as u64;
        if len == 0 || t.flags & (FLAG_SYN | FLAG_RST) != 0 {
            return;
        }
        let i = match self.flows.iter().position(|f| f.key == t.key) {
            Some(i) => i,
            None => self.add_flow(now, t.key, t.seq),
        };
        let f = &mut self.flows[i];
        f.last_active = now;
        let Some(off) = f.offset(t.seq) else { return };
        if let Some(k) = f.index_of_sent(off, len) {
            f.rpc.on_data_sent(now, k, path);
        }
        self.drain(i);
    }

    fn add_flow(&mut self, now: Instant, key: FlowKey, seq: u32) -> usize {
        if self.flows.len() >= MAX_FLOWS {
            let (i, _) = self
                .flows
                .iter()
                .enumerate()
                .min_by_key(|(_, f)| f.last_active)
                .expect("full");
            self.retire(i);
        }
        self.flows.push(Flow::new(key, seq, &self.cfg, now));
        self.flows.len() - 1
    }

    /// Drops flow `i`, forwarding its held ACKs as they came.
    fn retire(&mut self, i: usize) {
        let mut f = self.flows.swap_remove(i);
        f.rpc.release_all();
        while let Some(r) = f.rpc.poll_release() {
            self.out.push_back(r.inner);
        }
        let s = f.rpc.stats();
        let r = &mut self.retired;
        r.acks_in += s.acks_in;
        r.acks_out += s.acks_out;
        r.held += s.held;
        r.rewritten += s.rewritten;
        r.losses_detected += s.losses_detected;
        r.nacks_sent += s.nacks_sent;
        r.hold_expiries += s.hold_expiries;
        r.max_held = r.max_held.max(s.max_held);
    }

    /// An inner packet coming back out of the tunnel. Returns it if it is
    /// to be delivered now; a pure ACK of a controlled connection is taken
    /// (it comes out of [`Self::poll_release`], now or later).
    pub fn handle_packet(&mut self, now: Instant, packet: Vec<u8>) -> Option<Vec<u8>> {
        let Some(t) = parse(&packet) else {
            return Some(packet);
        };
        let (s, d, sp, dp) = t.key;
        let Some(i) = self.flows.iter().position(|f| f.key == (d, s, dp, sp)) else {
            return Some(packet);
        };
        if t.flags & (FLAG_SYN | FLAG_RST | FLAG_FIN) != 0 {
            if t.flags & FLAG_RST != 0 {
                self.retire(i);
            }
            return Some(packet);
        }
        if t.flags & FLAG_ACK == 0 || t.payload_len() != 0 {
            return Some(packet);
        }
        let f = &mut self.flows[i];
        f.last_active = now;
        let Some(ack) = f.offset(t.ack) else {
            return Some(packet);
        };
        if ack > f.high {
            // Acknowledges data the tunnel never carried: not ours to judge.
            return Some(packet);
        }
        f.acked = f.acked.max(ack);
        let (raw, n) = sack_blocks(&packet[t.l4 + 20..t.l4 + t.hlen]);
        let mut blocks = [(0u64, 0u64); MAX_SACK_BLOCKS];
        let mut nb = 0;
        for &(l, r) in &raw[..n] {
            let (Some(l), Some(r)) = (f.offset(l), f.offset(r)) else {
                continue;
            };
            let lo = f.first + f.segs.partition_point(|&(s, _)| s < l) as u64;
            let hi = f.ack_index(r);
            if lo < hi {
                blocks[nb] = (lo, hi);
                nb += 1;
            }
        }
        let view = AckView::new(f.ack_index(ack), &blocks[..nb]);
        f.rpc.handle_ack(now, &view, packet);
        self.drain(i);
        None
    }

    /// Moves flow `i`'s releases (rewritten where the controller says) and
    /// events out.
    fn drain(&mut self, i: usize) {
        let f = &mut self.flows[i];
        while let Some(ev) = f.rpc.poll_event() {
            self.events.push_back(ev);
        }
        while let Some(r) = f.rpc.poll_release() {
            let mut p = r.inner;
            let Some(t) = parse(&p) else {
                self.out.push_back(p);
                continue;
            };
            let mut changed = false;
            if !r.original {
                if let Some(off) = f.ack_offset(r.ack) {
                    // Never more than the receiver has acknowledged: an
                    // ACK beyond it would make the sender drop data the
                    // receiver still needs (see `index_of_sent`).
                    let off = off.min(f.acked);
                    let v = f.base.wrapping_add(off as u32);
                    p[t.l4 + 8..t.l4 + 12].copy_from_slice(&v.to_be_bytes());
                    blank_sack(&mut p[t.l4 + 20..t.l4 + t.hlen]);
                    changed = true;
                }
            }
            // A held ACK goes out after ACKs the receiver sent later, with
            // an older timestamp. The sender's PAWS check (RFC 7323
            // Section 5) discards a segment whose TSval is older than the
            // latest it took, and Linux exempts only duplicate ACKs, so a
            // released ACK that advances would be dropped: the sender then
            // learns of the data only from the receiver's next ACK, or its
            // retransmission timer if none comes. Released ACKs carry the
            // highest TSval released so far instead (TSecr is kept: the
            // sender's RTT sample from it is the ACK's real age).
            if let Some(at) = tsval_at(&p[t.l4 + 20..t.l4 + t.hlen]) {
                let at = t.l4 + 20 + at;
                let v = u32::from_be_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]]);
                match f.ts_out {
                    Some(hi) if (v.wrapping_sub(hi) as i32) < 0 => {
                        p[at..at + 4].copy_from_slice(&hi.to_be_bytes());
                        changed = true;
                    }
                    _ => f.ts_out = Some(v),
                }
            }
            if changed {
                fix_checksum(&mut p, &t);
            }
            self.out.push_back(p);
        }
        f.prune();
    }

    /// The next inner packet to deliver.
    pub fn poll_release(&mut self) -> Option<Vec<u8>> {
        self.out.pop_front()
    }

    /// The next per-link event for the scheduler.
    pub fn poll_event(&mut self) -> Option<RpcEvent> {
        self.events.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.flows.iter().filter_map(|f| f.rpc.poll_timeout()).min()
    }

    /// Runs the hold bound of every connection.
    pub fn handle_timeout(&mut self, now: Instant) {
        for i in 0..self.flows.len() {
            if self.flows[i].rpc.poll_timeout().is_some_and(|t| now >= t) {
                self.flows[i].rpc.handle_timeout(now);
                self.drain(i);
            }
        }
    }

    /// ACKs held now, over all connections.
    pub fn held(&self) -> u64 {
        self.flows.iter().map(|f| f.rpc.held()).sum()
    }

    /// Counters summed over every connection controlled so far.
    pub fn stats(&self) -> RpcStats {
        let mut r = self.retired;
        for f in &self.flows {
            let s = f.rpc.stats();
            r.acks_in += s.acks_in;
            r.acks_out += s.acks_out;
            r.held += s.held;
            r.rewritten += s.rewritten;
            r.losses_detected += s.losses_detected;
            r.nacks_sent += s.nacks_sent;
            r.hold_expiries += s.hold_expiries;
            r.max_held = r.max_held.max(s.max_held);
        }
        r
    }
}

#[cfg(test)]
mod tests;
