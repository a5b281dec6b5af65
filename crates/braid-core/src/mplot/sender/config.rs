//! What a sender is configured with, and why it can fail.

use crate::fec::FecError;
use crate::mplot::cc::CcConfig;
use crate::mplot::wire::MAX_PATHS;
use crate::time::Duration;

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
    /// Most blocks from the oldest unrecovered one on, that one included
    /// (bounds sender and receiver memory; at most the receiver's
    /// `max_blocks_ahead`, or the receiver drops the newest).
    pub max_blocks: usize,
    pub mapping: Mapping,
    pub coding: Coding,
    /// An ARQ sender after PTCP (§IV-G): no PFEC, no r-block; a lost
    /// packet is resent as itself (ARQ by the wrap-around rule, exactly `r`
    /// packets); a loss halves the path's window as in TCP (once per RTT),
    /// and, as in NewReno, a lost retransmission is found only by the
    /// path's RTO. It is stronger than the paper's PTCP (its per-path
    /// windows count packets in flight, so a hole never stalls them: 2-4.6
    /// Mbit/s at 30 % loss where the paper's stayed under 1); braid-sim's
    /// PTCP baseline is therefore TCP-SACK subflows
    /// (`braid_sim::mplot::tcp_flows`).
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
    /// bottleneck backlog ([`crate::mplot::PathCc::backlog`]) is below this many bytes
    /// does not cut the window: the queue was nearly empty, so the loss was
    /// the path's own, not an overflow (TCP Veno's test, which uses three
    /// packets). Without it a path with 1-3 % random loss stays at the
    /// window Reno's loss response allows, too small to ever fill a
    /// marking queue, so `ecn_trust` never starts. `None`: every loss counts.
    pub random_loss_backlog: Option<usize>,
    /// With `random_loss_backlog`, a path whose queue stood at or above
    /// that backlog for a whole round trip drains it
    /// ([`crate::mplot::PathCc::on_standing_queue`]): the window drops by the backlog,
    /// once per RTT. Delay is then the path's congestion signal, ahead of
    /// loss and of marks: the queue stays short, so the loss test above
    /// reads losses right (a queue kept between empty and full by loss
    /// alone is above three packets most of the time, and a random loss
    /// there halves the window), and slow start ends before it overflows
    /// a queue, as HyStart ends it.
    pub drain_standing_queue: bool,
    /// A packet size tried before the paper's 750/550/250 bytes (eq 12
    /// still asks for five packets per block). On real sockets every
    /// packet also carries 28 bytes of IP/UDP and 60 of braid's own (DATA
    /// header and encryption), so 750-byte packets cap goodput at
    /// 690 / 778 = 0.89 of the path rate; 1400 bytes on Ethernet-MTU
    /// paths raise that to 1340 / 1428 = 0.94. `None` in the paper's
    /// simulations.
    pub large_packet: Option<usize>,
    /// Pace each path ([`Pacing`]): its packets leave spread over the
    /// round trip at a multiple of `window / SRTT` rather than in bursts
    /// as ACKs free the window. `None` in the paper's simulations (ns-2's
    /// TCP agents do not pace).
    pub pacing: Option<Pacing>,
    /// The receiver sends each path's ACKs back on that path
    /// (`ReceiverConfig::ack_on_arrival_path`), so a path's ACKs come back
    /// in the order its packets arrived and the loss rule's reordering
    /// window needs no allowance for the spread of the paths' RTTs. With
    /// ACKs on random reverse paths (the paper's), a packet is deemed lost
    /// only a quarter RTT **plus that spread** after a later packet of its
    /// path is acknowledged: on lab/fast-slow (40 and 200 ms) that is
    /// 170 ms, four round trips of the fast path during which the packets
    /// an overflow dropped still count as in flight and hold its window
    /// shut.
    pub acks_on_arrival_path: bool,
    /// A decoded block's packets still in flight leave their paths'
    /// windows at once, as the paper's cumulative ACK covers them (§II-B:
    /// it is "one more than all bytes received in order for all
    /// *outstanding* blocks", so the holes of a recovered block do not hold
    /// it back), and each such release restarts the path's timer as a
    /// new cumulative ACK restarts TCP's (§II-C: a path times out when "no
    /// feedback is received for a period RTO_i"). The window does not grow
    /// for them (no packet was acknowledged); they stay unresolved for
    /// eq 2 until acknowledged or found lost. Without it a path at 75 %
    /// loss whose few packets of a window are all lost waits for its RTO
    /// although the other paths already recovered every block it carried,
    /// and backs off while it is needed. On in the paper's simulations;
    /// off in `braid send` until measured in the lab.
    pub release_on_decode: bool,
    /// Most data packets in a block, below eq 12's budget when that is
    /// larger. Decoding a block of `F` data packets inverts an `F x F`
    /// matrix over GF(2^8) (the `reed-solomon-erasure` crate's decoder),
    /// `O(F³)`, and building its code once more; eq 12 asks for up to
    /// 250 packets a block on 27 Mbit/s of paths, where one block took
    /// 10-40 ms to code and as long to decode: `braid recv` spent 60 % of
    /// its time in that inversion (perf, lab/cellular), and the ACKs it
    /// held back meanwhile read to the sender as queueing delay. Above
    /// [`BLOCK_DATA_STEP`] the count is also rounded down to a multiple of
    /// it, so blocks share a few shapes whose codes are kept
    /// ([`crate::fec::CodeCache`]). `MAX_BLOCK_PACKETS` (no cap) in the
    /// paper's simulations, whose coding is virtual.
    pub max_block_data: usize,
}

/// Data packets per block above which [`SenderConfig::max_block_data`]
/// rounds the count down to a multiple of this.
pub const BLOCK_DATA_STEP: usize = 8;

impl SenderConfig {
    /// Data packets of a full block whose eq 12 shape has `data`:
    /// [`max_block_data`](Self::max_block_data) and the rounding to
    /// [`BLOCK_DATA_STEP`] applied when there is a cap.
    pub fn block_data(&self, data: usize) -> usize {
        if self.max_block_data >= crate::fec::mplot::MAX_BLOCK_PACKETS {
            return data;
        }
        let d = data.min(self.max_block_data).max(1);
        if d > BLOCK_DATA_STEP {
            d - d % BLOCK_DATA_STEP
        } else {
            d
        }
    }
}

/// How MPLOT paces a path: at `gain x w_i / SRTT_i` (`slow_start_gain`
/// while the window is below `ssthresh`), Linux's pacing of TCP
/// (`tcp_update_pacing_rate`: ratios 200 % and 120 %). The window still
/// bounds what is in flight; the rate only spreads it, and its margin
/// above `w / SRTT` lets the window grow and covers header bytes the
/// window does not count.
///
/// Why: the bottleneck queues MPLOT meets are about one bandwidth-delay
/// product (the lab files, a home router), and an unpaced window arrives
/// there as bursts (ACKs that come back in batches on a loaded host, a
/// slow start that doubles back to back), which overflow such a queue, or
/// push it over an ECN marking threshold, while the path is not yet full.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pacing {
    /// Multiple of `w / SRTT` in slow start.
    pub slow_start_gain: f64,
    /// Multiple of `w / SRTT` after slow start.
    pub gain: f64,
    /// How far behind its schedule a path may catch up after a late call
    /// (`crate::pacer::Pacer::take`), as a share of its smallest RTT (at
    /// least [`Pacing::MIN_CATCH_UP`]): a quarter, as the tunnel's pacer,
    /// so the burst a late send loop makes up for fits a bottleneck queue
    /// of a quarter of a bandwidth-delay product.
    pub catch_up_rtts: f64,
}

impl Pacing {
    /// Smallest catch-up allowance: timers wake a little late on any
    /// machine, and a pacer that lost its slots on every such wake-up
    /// would fall below its rate.
    pub const MIN_CATCH_UP: Duration = Duration::from_millis(1);
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing {
            slow_start_gain: 2.0,
            gain: 1.2,
            catch_up_rtts: 0.25,
        }
    }
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
            drain_standing_queue: false,
            large_packet: None,
            pacing: None,
            acks_on_arrival_path: false,
            release_on_decode: true,
            max_block_data: crate::fec::mplot::MAX_BLOCK_PACKETS,
        }
    }
}

/// The largest MPLOT packet (UDP payload) `braid send` puts on a path:
/// with 20 (IPv4) or 40 (IPv6) and 8 bytes of headers it fits a 1500-byte
/// MTU with room for one layer of encapsulation (PPPoE, a VLAN, WireGuard
/// below us).
pub const FILE_PACKET: usize = 1400;

/// Bytes around the MPLOT frame in a `braid send` datagram: the kind byte
/// that says what the transport packet carries, and the transport
/// packet's header and AEAD tag (`crate::crypto`). The sender's packet
/// budget ([`SenderConfig::for_files`]) and the simulator's `braid-send`
/// mode both count them.
pub const FILE_OVERHEAD: usize =
    1 + crate::crypto::packet::TRANSPORT_HEADER_LEN + crate::crypto::packet::TAG_LEN;

/// `braid send`'s [`SenderConfig::max_block_data`].
pub const FILE_BLOCK_DATA: usize = 64;

impl SenderConfig {
    /// `braid send`'s sender over `paths` real paths, whose datagrams carry
    /// `overhead` bytes of the transport's own (kind byte, nonce, AEAD tag)
    /// besides the DATA header. The simulator's `braid-send` lab mode runs
    /// this same configuration, so what it shows is what `braid send` does.
    pub fn for_files(paths: usize, overhead: usize) -> Self {
        let mut cfg = SenderConfig::new(paths);
        cfg.header_bytes = crate::mplot::wire::DATA_HEADER_LEN + overhead;
        // The path sockets send ECT(0) and the receiver echoes CE, but a
        // path whose queues do not mark shows congestion only as loss:
        // there a loss halves the window as a mark would, until the path's
        // first CE echo shows that its bottleneck marks; from then on an
        // unmarked loss is random and left to FEC (§II-C).
        cfg.halve_on_loss = true;
        cfg.ecn_trust = true;
        // A loss with (nearly) nothing queued is the path's own: it does
        // not cut, so lossy paths still grow to the point where their
        // queue marks (or, without marking, overflows).
        cfg.random_loss_backlog = Some(3 * FILE_PACKET);
        cfg.drain_standing_queue = true;
        // Full-size packets where the path allows: see `large_packet`.
        cfg.large_packet = Some(FILE_PACKET);
        cfg.max_packet = FILE_PACKET;
        // Windows counted in these packets: the initial window and the
        // floor after a cut are two of them, as TCP's are two segments. In
        // 750-byte units, once a packet had to fit whole, a 1500-byte
        // initial window held one 1400-byte packet and a 1.2 s path took a
        // round trip longer to fill (before, the window was overshot to
        // two).
        cfg.cc.mss = FILE_PACKET;
        // Each path paced at 1.2 x window / SRTT (2 x in slow start): the
        // lab's and a home router's queues are about one bandwidth-delay
        // product, and windows sent in bursts overflow them (or cross
        // their marking threshold) before the path is full.
        cfg.pacing = Some(Pacing::default());
        // `braid recv` ACKs each packet on the path it came on
        // (`ReceiverConfig::for_files`): the loss rule needs no allowance
        // for ACKs of one path coming back on another.
        cfg.acks_on_arrival_path = true;
        // Windows keep the packets of decoded blocks until they are
        // acknowledged or lost. Releasing them (the paper's cumulative
        // ACK) gained nothing in the lab: `braid lab bench --modes
        // braid-send --duration 10` on two-equal, bursty and cellular gave
        // 0.851, 0.683 and 0.455 of the sum with it, 0.878, 0.683 and
        // 0.457 without (one run each, 2026-11-26).
        cfg.release_on_decode = false;
        // Real coding: blocks of at most 64 data packets (86 kB), whose
        // inversion takes well under a millisecond.
        cfg.max_block_data = FILE_BLOCK_DATA;
        cfg
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
