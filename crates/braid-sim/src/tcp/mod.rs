//! A packet-level TCP model faithful to ns-2's `Agent/TCP/Newreno` and
//! `Agent/TCPSink`, the transport of the PET/BMP paper's experiments
//! (Section III-A: NewReno, 1500-byte packets, window 50, max-burst 4, no
//! delayed ACKs).
//!
//! Like ns-2, the model counts in packets: sequence numbers number packets
//! from 0, windows are packet counts, and every data packet carries
//! [`TcpConfig::mss_bytes`] of payload plus [`TcpConfig::header_bytes`]
//! of header. There is no connection setup or teardown (ns-2's one-way TCP
//! has none), and the ACK number is the next expected packet (ns-2 ACKs the
//! highest in-order packet; the two differ by one, and the sender's
//! comparisons are translated accordingly).
//!
//! Sender ([`TcpSender`]):
//! - slow start and congestion avoidance per ACK (ns-2 `opencwnd`,
//!   RFC 5681 Section 3.1), cwnd capped at the window ceiling;
//! - NewReno fast retransmit / fast recovery (RFC 6582, ns-2
//!   tcp-newreno.cc with `partial_window_deflation_`): on the
//!   `dupack_threshold`-th duplicate ACK ssthresh = max(FlightSize/2, 2),
//!   retransmit, cwnd = ssthresh + 3, inflate by one per further duplicate;
//!   a partial ACK retransmits the next hole, deflates by the amount acked
//!   plus one and stays in recovery; a full ACK sets cwnd = ssthresh;
//!   duplicates of an already-handled episode never re-trigger (ns-2
//!   `bug_fix_`);
//! - retransmission timer per RFC 6298 in ns-2's tick arithmetic, Karn's
//!   algorithm, exponential backoff, go-back-N after a timeout;
//! - max-burst: at most `max_burst` packets per ACK or timer event;
//! - optional SACK recovery per RFC 6675 (scoreboard, IsLost, pipe,
//!   NextSeg rules 1-3);
//! - optional CUBIC (RFC 9438) with HyStart instead of NewReno's window
//!   growth and decrease ([`cubic`], [`TcpConfig::linux`]);
//! - optional TCP-PRISM (PRISM Section 6.2.2, [`TcpConfig::prism`]).
//!
//! Receiver ([`TcpReceiver`]): in-order delivery, out-of-order buffering
//! bounded by the window, optional delayed ACKs and RFC 2018 SACK blocks.
//!
//! Everything is plain data in, plain data out: no callbacks, no clocks,
//! no allocation on the per-packet path.

mod bitring;
mod config;
pub mod cubic;
mod receiver;
mod rto;
mod sender;

#[cfg(test)]
mod tests;

pub use config::{Congestion, TcpConfig};
pub use receiver::{TcpReceiver, TcpReceiverStats};
pub use sender::{TcpSender, TcpSenderStats};

/// A TCP data packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Segment {
    pub flow: u32,
    /// Packet sequence number, from 0.
    pub seq: u64,
    /// Application bytes carried.
    pub payload_bytes: u32,
    /// Bytes on the wire (payload + header).
    pub wire_bytes: u32,
    /// This packet was sent before (for traces; receivers ignore it).
    pub retransmit: bool,
    /// ECN-capable transport (RFC 3168 ECT): a queue may mark it instead
    /// of dropping it.
    pub ect: bool,
    /// Congestion Experienced: a queue marked it on the way.
    pub ce: bool,
    /// Congestion Window Reduced: the sender answered an ECE.
    pub cwr: bool,
    /// RFC 7323 TSval: the sender's clock in milliseconds when this copy
    /// was sent (Linux's 1 ms timestamp clock). Zero without timestamps.
    pub tsval: u32,
}

/// A TCP acknowledgment.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ack {
    pub flow: u32,
    /// Next expected packet: every packet below it has arrived.
    pub ack: u64,
    /// SACK blocks, half-open packet ranges `[left, right)` of packets held
    /// above `ack`; only the first `n_sack` are meaningful.
    pub sack: [(u64, u64); 3],
    pub n_sack: u8,
    /// Bytes on the wire (the header, 40 by default).
    pub wire_bytes: u32,
    /// ECN-Echo: the receiver got a CE-marked packet and the sender has
    /// not yet said CWR (RFC 3168 Section 6.1.3).
    pub ece: bool,
    /// PRISM's loss information, added on the way back by the reverse-path
    /// controller (PRISM Section 6.2.1); only a TCP-PRISM sender
    /// ([`TcpConfig::prism`]) reads it.
    pub nack: Nack,
    /// RFC 7323 TSecr: the TSval the receiver echoes (its `TS.Recent`),
    /// `None` without timestamps.
    pub tsecr: Option<u32>,
}

/// PRISM's NACK option: lost packets and the window factor `p`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Nack {
    /// Lost packets; the first `n` are meaningful.
    pub lost: [u64; 8],
    pub n: u8,
    /// `p` in millionths (kept integral so an ACK stays `Eq + Hash`).
    pub p_ppm: u32,
}

impl Nack {
    pub const NONE: Nack = Nack {
        lost: [0; 8],
        n: 0,
        p_ppm: 0,
    };

    pub fn seqs(&self) -> &[u64] {
        &self.lost[..usize::from(self.n.min(8))]
    }

    /// The window factor `p` (Section 6.2.1).
    pub fn p(&self) -> f64 {
        f64::from(self.p_ppm) / 1e6
    }
}

impl Ack {
    /// A plain cumulative ACK without SACK blocks.
    pub fn cumulative(flow: u32, ack: u64, wire_bytes: u32) -> Ack {
        Ack {
            flow,
            ack,
            sack: [(0, 0); 3],
            n_sack: 0,
            wire_bytes,
            ece: false,
            nack: Nack::NONE,
            tsecr: None,
        }
    }

    /// The meaningful SACK blocks.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..usize::from(self.n_sack.min(3))]
    }
}
