//! Per-path state: identity, configured (known) parameters and the
//! estimators the schedulers read.

pub mod bandwidth;
pub mod loss;
pub mod owd;
pub mod rtt;

use crate::time::{Duration, Instant};
pub use bandwidth::BandwidthEstimator;
pub use loss::LossEstimator;
pub use owd::OwdEstimator;
pub use rtt::RttEstimator;

/// Identifies a path within one session (one byte on the wire).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PathId(pub u8);

/// Upper bound on paths per session; fixed-size per-path tables use it.
pub const MAX_PATHS: usize = 16;

/// What the operator (or the simulator, for the idealised EDPF) knows about
/// a path before measuring it.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct PathParams {
    /// Bottleneck rate in bit/s, if known.
    pub rate_bps: Option<f64>,
    /// One-way delay up to the bottleneck, if known.
    pub delay: Option<Duration>,
}

/// Estimator tuning shared by all paths of a session.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct EstimatorConfig {
    /// EWMA weight of a new packet-pair sample (PET/BMP footnote 3: 0.8).
    pub bw_weight_new: f64,
    /// Window of the relative one-way delay's minimum filter.
    pub owd_window: Duration,
    /// EWMA gain of the loss rate per packet outcome.
    pub loss_gain: f64,
    /// SRTT before the first sample.
    pub initial_rtt: Duration,
}

impl Default for EstimatorConfig {
    fn default() -> Self {
        EstimatorConfig {
            bw_weight_new: 0.8,
            owd_window: Duration::from_secs(10),
            loss_gain: 1.0 / 64.0,
            initial_rtt: Duration::from_millis(333),
        }
    }
}

/// Everything the sender knows about one path.
#[derive(Clone, Debug)]
pub struct PathState {
    pub id: PathId,
    pub params: PathParams,
    pub rtt: RttEstimator,
    pub bw: BandwidthEstimator,
    pub owd: OwdEstimator,
    pub loss: LossEstimator,
    /// Packets and bytes sent whose fate is not yet known.
    pub in_flight_packets: u32,
    pub in_flight_bytes: u64,
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub acked_packets: u64,
    pub acked_bytes: u64,
    pub last_sent: Option<Instant>,
    pub last_feedback: Option<Instant>,
    /// Whether the scheduler may use the path.
    pub usable: bool,
    /// The smallest round trip measured on the path outside the data
    /// stream (the connection's keepalives, which the peer echoes at
    /// once). Known before the path has carried data: a path hundreds of
    /// milliseconds further away than the others is known to be far
    /// before a single data packet on it has held the stream in the
    /// resequencer (see `Pet::relative_delays`).
    pub rtt_hint: Option<Duration>,
    /// The smallest one-way delay plus clock offset (receiver clock minus
    /// the peer's send time, ns) of the peer's keepalives on this path:
    /// the side that echoes keepalives learns from it how much further
    /// one path is than another before sending data on them.
    pub owd_hint_raw_ns: Option<i64>,
    /// When the connection first sent on a path it has not heard from
    /// since: the path's round trip is at least the time since (see
    /// `Sender::pacing_bound`). `None` once anything arrived on it.
    pub silent_since: Option<Instant>,
    /// While the path is quiet (it stopped reporting while the others
    /// went on, `Sender` in `sender/quiet.rs`): how much farther than its
    /// measured delay PET's choice of a path, repairs, copies and the
    /// pacing bound count it.
    pub quiet_delay: Option<Duration>,
    /// How long past its report time the path's oldest packet in flight
    /// is, when it is (`Sender` in `sender/overdue.rs`, set before each
    /// choice of a path): PET's choice counts the path that much farther.
    pub overdue_delay: Option<Duration>,
}

impl PathState {
    pub fn new(id: PathId, params: PathParams, cfg: &EstimatorConfig) -> Self {
        PathState {
            id,
            params,
            rtt: RttEstimator::new(cfg.initial_rtt),
            bw: BandwidthEstimator::new(cfg.bw_weight_new),
            owd: OwdEstimator::new(cfg.owd_window),
            loss: LossEstimator::new(cfg.loss_gain),
            in_flight_packets: 0,
            in_flight_bytes: 0,
            sent_packets: 0,
            sent_bytes: 0,
            acked_packets: 0,
            acked_bytes: 0,
            last_sent: None,
            last_feedback: None,
            usable: true,
            rtt_hint: None,
            owd_hint_raw_ns: None,
            silent_since: None,
            quiet_delay: None,
            overdue_delay: None,
        }
    }
}
