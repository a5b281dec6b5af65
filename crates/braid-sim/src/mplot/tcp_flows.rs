//! The TCP side of the MPLOT experiments: ECN-capable TCP-SACK flows on
//! one path each (§IV-D, Fig 7's competing traffic) and PTCP (§IV-G),
//! sources that stripe one aggregate FIFO over a TCP-SACK subflow per path.
//!
//! Both run braid-sim's ns-2 TCP model ([`crate::tcp`]), because the
//! paper's are ns-2 agents:
//! - **TCP-SACK** (§IV-D: "the TCP-SACK protocol that we use is
//!   ECN-capable as well"): [`tcp_config`], one sender and receiver per
//!   flow, ACKs on the flow's own path.
//! - **PTCP** (§IV-G, after Hsieh and Sivakumar's pTCP): "a single FIFO
//!   queue of packets at the aggregate flow level, congestion control on a
//!   per-path basis, packets mapped to paths as transmission opportunities
//!   become available, ACKs on the same path", ECN for congestion
//!   feedback and no FEC. Each path is a TCP-SACK subflow (pTCP's TCP-v);
//!   a subflow's new packet takes the next chunk of the aggregate FIFO
//!   when its window opens, and a lost packet is resent by its subflow as
//!   TCP resends it (fast retransmit, SACK recovery, RTO with backoff).
//!   The receiver delivers chunks in aggregate order; a packet's delay is
//!   its first send to that delivery (§IV-H).
//!
//! Packets are 750 bytes on the wire with 700 of payload: MPLOT's largest
//! size and header budget (§III-C), so both count windows in the same
//! packets.

use std::collections::VecDeque;

use braid_core::time::Instant;

use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};

/// Payload bytes of a TCP packet here (MPLOT's 750 less its 50-byte header).
pub const TCP_PAYLOAD: u32 = 700;

/// The TCP both Fig 7's flows and PTCP's subflows run: ns-2's TCP-SACK
/// (`Agent/TCP/Sack1` defaults: initial window 1, no max-burst, RTO from
/// 3 s, at least 200 ms, 10 ms tick, no delayed ACKs) with ECN, in
/// 750-byte packets. The window ceiling (ns-2 `window_`, which the paper
/// does not give) is 256 packets, above any path's bandwidth-delay
/// product plus queue here, so it never binds.
pub fn tcp_config() -> TcpConfig {
    TcpConfig {
        mss_bytes: TCP_PAYLOAD,
        header_bytes: 50,
        max_cwnd_pkts: 256,
        max_burst: 0,
        sack: true,
        ecn: true,
        ..TcpConfig::default()
    }
}

/// One TCP connection on one path.
pub struct TcpFlow {
    /// Global path index.
    pub path: usize,
    pub tx: TcpSender,
    pub rx: TcpReceiver,
    pub timer_at: Option<Instant>,
    /// The PTCP source this flow is a subflow of, if any.
    pub agg: Option<usize>,
    /// The aggregate chunk each of this subflow's packets carries, by
    /// sequence number (PTCP only).
    pub chunk_of: Vec<u64>,
}

impl TcpFlow {
    pub fn new(path: usize, id: u32, agg: Option<usize>) -> Self {
        let cfg = tcp_config();
        TcpFlow {
            path,
            tx: TcpSender::new(cfg.clone(), id, None),
            rx: TcpReceiver::new(&cfg, id),
            timer_at: None,
            agg,
            chunk_of: Vec::new(),
        }
    }
}

/// A PTCP source's aggregate FIFO and its receiver's in-order delivery.
#[derive(Default)]
pub struct PtcpAgg {
    /// Which reported session it is.
    pub owner: usize,
    next_chunk: u64,
    /// First send time of every chunk not yet delivered, from `delivered`.
    first_sent: VecDeque<Instant>,
    /// Whether each chunk from `delivered` on has arrived.
    arrived: VecDeque<bool>,
    /// Chunks delivered in order.
    pub delivered: u64,
}

impl PtcpAgg {
    pub fn new(owner: usize) -> Self {
        PtcpAgg {
            owner,
            ..Default::default()
        }
    }

    /// The chunk a subflow's packet `seq` carries: the one it carried
    /// before (a resend), or the next of the FIFO (a new packet).
    pub fn chunk_for(&mut self, flow: &mut TcpFlow, seq: u64, now: Instant) -> u64 {
        if let Some(&c) = flow.chunk_of.get(seq as usize) {
            return c;
        }
        debug_assert_eq!(seq as usize, flow.chunk_of.len(), "new packets in order");
        let c = self.next_chunk;
        self.next_chunk += 1;
        flow.chunk_of.push(c);
        self.first_sent.push_back(now);
        self.arrived.push_back(false);
        c
    }

    /// Chunk `c` arrived at `now`: returns the delays (first send to
    /// in-order delivery) of the chunks it lets through, oldest first.
    pub fn arrive(&mut self, c: u64, now: Instant, delays: &mut Vec<f64>) -> u64 {
        let Some(i) = c.checked_sub(self.delivered) else {
            return 0;
        };
        if let Some(a) = self.arrived.get_mut(i as usize) {
            *a = true;
        }
        let mut n = 0;
        while self.arrived.front() == Some(&true) {
            self.arrived.pop_front();
            let t = self.first_sent.pop_front().unwrap_or(now);
            delays.push(now.saturating_since(t).as_secs_f64() * 1e3);
            self.delivered += 1;
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_assigned_once_and_delivered_in_order() {
        let mut agg = PtcpAgg::new(0);
        let mut a = TcpFlow::new(0, 0, Some(0));
        let mut b = TcpFlow::new(1, 1, Some(0));
        let t = Instant::ZERO;
        assert_eq!(agg.chunk_for(&mut a, 0, t), 0);
        assert_eq!(agg.chunk_for(&mut b, 0, t), 1);
        assert_eq!(agg.chunk_for(&mut a, 1, t), 2);
        // A resend carries the same chunk.
        assert_eq!(agg.chunk_for(&mut a, 0, t), 0);
        let mut d = Vec::new();
        assert_eq!(agg.arrive(1, t, &mut d), 0);
        assert_eq!(agg.arrive(2, t, &mut d), 0);
        assert_eq!(agg.arrive(0, t, &mut d), 3);
        assert_eq!(agg.delivered, 3);
        // A late duplicate changes nothing.
        assert_eq!(agg.arrive(0, t, &mut d), 0);
        assert_eq!(d.len(), 3);
    }
}
