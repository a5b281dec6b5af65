//! The sender's tuning ([`SenderConfig`]): estimators, loss timeouts,
//! packet pairs, pacing and repair.

use crate::path::EstimatorConfig;
use crate::repair::RepairConfig;
use crate::time::Duration;

/// Sender tuning.
#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub estimators: EstimatorConfig,
    /// Packets remembered while awaiting feedback (a power of two). The
    /// oldest is given up as lost when the table wraps.
    pub max_in_flight: usize,
    /// Lower bound on how long to wait for feedback before a packet counts as lost.
    pub min_loss_timeout: Duration,
    /// Upper bound on the same.
    pub max_loss_timeout: Duration,
    /// A pair yields a bandwidth sample only if its packets were sent at
    /// most this fraction of their arrival dispersion apart (1.0 = any
    /// dispersion larger than the send gap, the plain packet-pair test).
    /// Not in the paper, whose pairs were back to back. When the packets
    /// left the sender about as far apart as they arrived, the gap is the
    /// sender's spacing plus jitter, not the bottleneck's service time:
    /// downlink TCP ACK pairs (120-byte packets sent one ACK interval
    /// apart) measured a 10 Mbit/s path at 0.4 Mbit/s, and EDPF then
    /// pushed ACKs onto a far path where they held every later ACK in the
    /// client's resequencer.
    pub pair_gap_fraction: f64,
    /// Pace each path with a bandwidth estimate at `pacing_gain` x the
    /// estimate from a local queue, instead of sending at once. Not in the
    /// paper. EDPF's in-order schedule needs a near path to hold a backlog
    /// as long as the delay difference to a far path; a bottleneck buffer
    /// of one bandwidth-delay product (40 ms on a 10 Mbit/s path) cannot
    /// hold the 80 ms a 100 ms path is further away, so PET used a far path
    /// only in bursts, every such packet arrived behind the near queue and
    /// held the stream in the resequencer, and the single TCP's window paid
    /// (MPTCP has a window per subflow). Pacing keeps the bottleneck queue
    /// near empty and moves the backlog into the tunnel, where its length
    /// is known exactly (EDPF's A_l is the local queue, see
    /// `sched::SendQueues`) and as long as EDPF needs, up to the
    /// bound below. Paths without an estimate are not paced. Off by default
    /// (the simulator reproduces the paper); the tunnel turns it on
    /// (`ConnConfig::pacing`).
    pub pacing: bool,
    /// Pacing rate as a fraction of the packet-pair estimate (see
    /// `pacing_rate`): below 1 so that estimation error does not build a
    /// queue at the bottleneck. In the lab the median pair sample was
    /// within 1% of the link rate; 0.97 cost 2-3% of the paths' sum, and
    /// 0.99 and 0.995 both left the bottlenecks without drops (fast-slow,
    /// 15 s: none, at most five packets queued), 0.995 with half a percent
    /// more goodput. A path whose estimate runs high builds a queue that
    /// PET's queue correction sees in its feedback.
    pub pacing_gain: f64,
    /// A packet whose local queue delay would exceed the bound is dropped
    /// (TCP must still see congestion). The bound is `pacing_delay_factor`
    /// x the largest relative one-way delay D among usable paths, plus the
    /// nearest path's minimum RTT R, within [`pacing_min_backlog`,
    /// `pacing_max_backlog`]. EDPF needs a queue of D on the near path to
    /// use the farthest one; after TCP halves its window at a drop (Reno;
    /// CUBIC cuts to 0.7) a queue of Q leaves about Q/2 - R/2, so Q = 2D + R
    /// keeps the far path busy through the sawtooth. With 2D alone, the
    /// fast-slow lab's 2 Mbit/s path fell idle for seconds after a loss.
    ///
    /// [`pacing_min_backlog`, `pacing_max_backlog`]: SenderConfig::pacing_min_backlog
    pub pacing_delay_factor: f64,
    /// Lower end of the pacing queue bound: room for TCP's sawtooth when
    /// the paths are equally far (like a bottleneck buffer).
    pub pacing_min_backlog: Duration,
    /// Upper end of the pacing queue bound. It must exceed twice the
    /// largest delay difference the bond is to use: with 300 ms (the
    /// earlier default) a path 280 ms further away than the near one was
    /// used only while the near queue was between 280 and 300 ms long, so
    /// after every loss TCP's window shrank below the far path and it sat
    /// idle; a path 580 ms further away was never used at all. The
    /// resequencer's largest hold (2 s by default) bounds what a far path
    /// can add anyway, and only a TCP window large enough to fill the
    /// queue ever makes it this long.
    pub pacing_max_backlog: Duration,
    /// With repair on, the pacing bound gets room for this many repair
    /// waits on top ([`Sender::repair_wait`]: the time the peer's
    /// resequencer holds a gap while a lost packet's copy travels), while
    /// any usable path loses packets (see `pacing_repair_room_loss`).
    ///
    /// Why: a gap held for its repair holds every packet behind it in the
    /// peer's resequencer, and those packets still count in the inner
    /// TCP's window. To keep the paths busy through the wait, TCP's window
    /// must cover the paths' bandwidth-delay product *plus* the packets
    /// sent during one repair wait, and what caps TCP's window here is the
    /// pacing bound (its drops are TCP's congestion signal). Without the
    /// room, `lab/bursty.toml` (Gilbert-Elliott loss, a burst on one of
    /// the paths several times a second) ran the inner CUBIC at a window
    /// of 100-146 packets, barely the paths' 86-packet BDP plus the 50 ms
    /// bound: while 60-95 packets waited in the resequencer for a repair,
    /// the paths' in-flight fell from 67 to about 30 packets each, and they
    /// carried 8.1-8.3 of their 10 Mbit/s (simulated share 0.739 of the
    /// sum). With one repair wait of room (about 110 ms there) the window
    /// grows to 300-400 packets and the paths stay full: 0.900 with a
    /// simulated TCP that floors its RTO as Linux does, and 0.789-0.890 in
    /// four quiet lab runs with kernel CUBIC (0.510-0.769 before). In
    /// simulation `lossy` went from 0.864 to 0.906, `cellular` 0.890 to
    /// 0.897 and `satellite` 0.766 to 0.810; clean bonds are unchanged (no
    /// room without loss). 0.5 left `bursty` at 0.797; 2 gave the same as 1
    /// with more queue.
    /// The cost is queueing delay under load, one repair wait, only on a
    /// bond that loses packets; an idle bond does not queue at all.
    ///
    /// [`Sender::repair_wait`]: super::Sender::repair_wait
    pub pacing_repair_room: f64,
    /// The loss rate (events per packet, as the peer's receiver reports it
    /// in its NACKs) from which a path counts as losing packets for
    /// `pacing_repair_room`: 0.1 %, well below the lab files' lossy paths
    /// (0.2-3 %) and above what a clean path's rare bottleneck drop gives.
    pub pacing_repair_room_loss: f64,
    /// A path is paced only while its latest pair sample came from packets
    /// of at least this many bytes, or, on a thin path, since one did
    /// (`sender/pace_samples.rs`). A direction carrying only TCP ACKs
    /// measures its paths with ACK pairs, whose samples can be far off
    /// (see `pair_gap_fraction`; the lab's downlink once estimated a
    /// 8 Mbit/s path at 1.7 Mbit/s): pacing ACKs at such a rate would
    /// delay them for nothing. ACKs need no pacing anyway.
    pub pacing_min_pair_len: u32,
    /// With `pacing`, the first packet of a full-size pair (at least
    /// `pacing_min_pair_len` bytes) on a path that is not paced yet waits
    /// up to this long in the path's queue for its partner, so that the
    /// two leave back to back. Without it the pair leaves as the inner
    /// packets arrive: a TCP flow clocked at about one path's rate hands
    /// them over one service time apart, the pair fails the
    /// `pair_gap_fraction` test, and in the lab a second path without an
    /// estimate stayed unused for up to 3 s after the transfer started
    /// (PET keeps a pair open this long on such a path: `max_pair_gap`).
    pub pair_hold: Duration,
    /// Without pacing, hold the first packet of a full-size pair on a path
    /// that has no bandwidth estimate yet for its partner (up to
    /// `pair_hold`), as `pair_hold` does with pacing. Off by default (the
    /// papers' open-loop PET sends at once); the caller must then use
    /// [`crate::sender::Sender::send_paced`] and [`crate::sender::Sender::poll_transmit`]. The
    /// simulator's worlds turn it on for PET: Phatak et al.'s Fig 4
    /// (a TCP flow clocked at the slower path's rate hands over its packets
    /// one slower-path service time apart) otherwise never measured the
    /// faster path at 8 of 15 bandwidth ratios, and PET-BMP ran at the
    /// slower path's rate.
    pub hold_unmeasured_pairs: bool,
    /// Repair of path losses inside the tunnel (ARQ): off by default (the
    /// simulator reproduces the papers without it); the tunnel turns it
    /// on (`ConnConfig::repair`). See [`crate::repair`].
    pub repair: RepairConfig,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            estimators: EstimatorConfig::default(),
            max_in_flight: 1 << 16,
            min_loss_timeout: Duration::from_millis(200),
            max_loss_timeout: Duration::from_secs(4),
            pair_gap_fraction: 0.5,
            pacing: false,
            pacing_gain: 0.995,
            pacing_delay_factor: 2.0,
            pacing_min_backlog: Duration::from_millis(50),
            pacing_max_backlog: Duration::from_millis(2000),
            pacing_repair_room: 1.0,
            pacing_repair_room_loss: 0.001,
            pacing_min_pair_len: 1000,
            pair_hold: Duration::from_millis(5),
            hold_unmeasured_pairs: false,
            repair: RepairConfig::default(),
        }
    }
}
