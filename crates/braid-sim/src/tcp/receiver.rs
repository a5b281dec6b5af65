//! The data receiver: ns-2 `TCPSink` (and `TCPSink/DelAck`,
//! `TCPSink/Sack1` when configured).

use braid_core::time::Instant;

use super::bitring::BitRing;
use super::{Ack, Segment, TcpConfig};

/// Receiver counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpReceiverStats {
    /// Data packets received, duplicates included.
    pub segments_received: u64,
    /// Packets received that were already delivered or buffered.
    pub duplicates: u64,
    /// Packets received above a hole (buffered for later delivery).
    pub out_of_order: u64,
    /// Packets beyond the receive window, discarded (the sender never sends
    /// them unless it disagrees about the window).
    pub beyond_window: u64,
    /// ACKs returned.
    pub acks_sent: u64,
}

/// TCP sink: delivers packets in order, acknowledges cumulatively ("next
/// expected packet"), optionally delays ACKs and reports SACK blocks.
///
/// The out-of-order store is a bit ring (plus the payload size of each held
/// packet) sized to `max_cwnd_pkts`, the sender's window ceiling: a
/// conforming sender never sends a packet that far past `rcv_nxt`, so
/// memory is bounded and nothing is allocated after construction.
#[derive(Clone, Debug)]
pub struct TcpReceiver {
    flow: u32,
    header_bytes: u32,
    delayed_ack: bool,
    delack_timeout: braid_core::time::Duration,
    sack: bool,
    rcv_nxt: u64,
    ooo: BitRing,
    ooo_payload: Vec<u32>,
    n_ooo: u64,
    /// Representatives of the most recently reported SACK blocks, most
    /// recent first (RFC 2018 Section 4).
    recent: [u64; 3],
    n_recent: usize,
    delack_deadline: Option<Instant>,
    delivered_packets: u64,
    delivered_bytes: u64,
    /// A CE mark arrived and no CWR since (RFC 3168 Section 6.1.3).
    ecn_echo: bool,
    /// RFC 7323 Section 4.3: the TSval to echo, and the cumulative ACK
    /// last sent (`Last.ACK.sent`), which decides which segments may set it.
    ts_recent: Option<u32>,
    last_ack_sent: u64,
    stats: TcpReceiverStats,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig, flow: u32) -> Self {
        let cfg = cfg.sanitized();
        let ooo = BitRing::new(u64::from(cfg.max_cwnd_pkts));
        let cap = ooo.capacity() as usize;
        TcpReceiver {
            flow,
            header_bytes: cfg.header_bytes,
            delayed_ack: cfg.delayed_ack,
            delack_timeout: cfg.delack_timeout,
            sack: cfg.sack,
            rcv_nxt: 0,
            ooo,
            ooo_payload: vec![0; cap],
            n_ooo: 0,
            recent: [0; 3],
            n_recent: 0,
            delack_deadline: None,
            delivered_packets: 0,
            delivered_bytes: 0,
            ecn_echo: false,
            ts_recent: None,
            last_ack_sent: 0,
            stats: TcpReceiverStats::default(),
        }
    }

    /// Accepts one data packet; returns the ACK to send now, or `None` when
    /// the ACK is delayed (then [`Self::poll_timeout`] is armed).
    ///
    /// ACK policy (RFC 5681 Section 4.2, ns-2 `DelAckSink::recv`): without
    /// delayed ACKs every packet is acknowledged. With them, an in-order
    /// packet arriving when no ACK is pending starts the delayed-ACK timer,
    /// and the second one is acknowledged at once; out-of-order packets,
    /// duplicates and packets that fill (part of) a hole are acknowledged
    /// immediately so that the sender's loss detection is not slowed down.
    pub fn on_segment(&mut self, now: Instant, seg: &Segment) -> Option<Ack> {
        if seg.flow != self.flow {
            return None;
        }
        self.stats.segments_received += 1;
        // RFC 7323 Section 4.3 (2): only a segment at or below the left
        // edge last acknowledged sets TS.Recent, so a delayed ACK echoes
        // the earlier of its two segments, an ACK after a hole echoes the
        // segment that filled it, and the ACK of an original that arrived
        // before its (spurious) retransmission echoes the original.
        if seg.seq <= self.last_ack_sent && self.ts_recent.is_none_or(|r| seg.tsval >= r) {
            self.ts_recent = Some(seg.tsval);
        }
        if seg.cwr {
            self.ecn_echo = false;
        }
        // A new CE mark is acknowledged at once (as Linux's quick ACK).
        let new_mark = seg.ce && !self.ecn_echo;
        if seg.ce {
            self.ecn_echo = true;
        }
        let s = seg.seq;
        let cap = self.ooo.capacity();
        if s < self.rcv_nxt || (s < self.rcv_nxt + cap && self.ooo.get(s)) {
            self.stats.duplicates += 1;
            return Some(self.ack_now());
        }
        if s >= self.rcv_nxt + cap {
            self.stats.beyond_window += 1;
            return Some(self.ack_now());
        }
        if s > self.rcv_nxt {
            self.ooo.set(s);
            self.ooo_payload[(s & (cap - 1)) as usize] = seg.payload_bytes;
            self.n_ooo += 1;
            self.stats.out_of_order += 1;
            self.note_recent(s);
            return Some(self.ack_now());
        }
        // In order: deliver it and everything it unblocks.
        let filled_hole = self.n_ooo > 0;
        self.deliver(seg.payload_bytes);
        while self.n_ooo > 0 && self.ooo.get(self.rcv_nxt) {
            let seq = self.rcv_nxt;
            self.ooo.clear(seq);
            self.n_ooo -= 1;
            let bytes = self.ooo_payload[(seq & (cap - 1)) as usize];
            self.deliver(bytes);
        }
        if filled_hole || new_mark || !self.delayed_ack || self.delack_deadline.is_some() {
            return Some(self.ack_now());
        }
        self.delack_deadline = Some(now + self.delack_timeout);
        None
    }

    /// Delayed-ACK timer; returns the ACK if it was due.
    pub fn handle_timeout(&mut self, now: Instant) -> Option<Ack> {
        match self.delack_deadline {
            Some(d) if now >= d => Some(self.ack_now()),
            _ => None,
        }
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.delack_deadline
    }

    /// Packets delivered in order to the application.
    pub fn delivered_packets(&self) -> u64 {
        self.delivered_packets
    }

    /// Payload bytes delivered in order to the application (goodput).
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    /// Next expected packet.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    pub fn stats(&self) -> TcpReceiverStats {
        self.stats
    }

    fn deliver(&mut self, bytes: u32) {
        self.rcv_nxt += 1;
        self.delivered_packets += 1;
        self.delivered_bytes += u64::from(bytes);
    }

    fn note_recent(&mut self, s: u64) {
        if !self.sack {
            return;
        }
        self.recent.copy_within(0..2, 1);
        self.recent[0] = s;
        self.n_recent = (self.n_recent + 1).min(3);
    }

    /// The held block `[start, end)` containing held packet `s`.
    fn block_of(&self, s: u64) -> (u64, u64) {
        let lim = self.rcv_nxt + self.ooo.capacity();
        // rcv_nxt itself is never held, so the backward scan always stops.
        let start = self
            .ooo
            .prev_zero(self.rcv_nxt, s)
            .map_or(self.rcv_nxt, |z| z + 1);
        let end = self.ooo.next_zero(s, lim).unwrap_or(lim);
        (start, end)
    }

    /// Builds the ACK for the current state and cancels any delayed ACK.
    ///
    /// SACK blocks (RFC 2018 Section 4): the first block holds the most
    /// recently received packet, the following ones repeat the most
    /// recently reported blocks; spare slots are filled with the lowest
    /// remaining blocks. Blocks are half-open packet ranges `[left, right)`.
    fn ack_now(&mut self) -> Ack {
        self.delack_deadline = None;
        self.stats.acks_sent += 1;
        let mut ack = Ack {
            flow: self.flow,
            ack: self.rcv_nxt,
            sack: [(0, 0); 3],
            n_sack: 0,
            wire_bytes: self.header_bytes,
            ece: self.ecn_echo,
            nack: super::Nack::NONE,
            tsecr: self.ts_recent,
        };
        self.last_ack_sent = self.rcv_nxt;
        if !self.sack || self.n_ooo == 0 {
            self.n_recent = 0;
            return ack;
        }
        let mut n = 0usize;
        for i in 0..self.n_recent {
            let r = self.recent[i];
            if r < self.rcv_nxt || !self.ooo.get(r) {
                continue;
            }
            let b = self.block_of(r);
            if !ack.sack[..n].contains(&b) {
                ack.sack[n] = b;
                n += 1;
            }
        }
        let lim = self.rcv_nxt + self.ooo.capacity();
        let mut pos = self.rcv_nxt;
        while n < 3 {
            let Some(s) = self.ooo.next_one(pos, lim) else {
                break;
            };
            let b = self.block_of(s);
            if !ack.sack[..n].contains(&b) {
                ack.sack[n] = b;
                n += 1;
            }
            pos = b.1;
        }
        for (i, b) in ack.sack[..n].iter().enumerate() {
            self.recent[i] = b.0;
        }
        self.n_recent = n;
        ack.n_sack = n as u8;
        ack
    }
}
