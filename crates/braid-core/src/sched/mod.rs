//! Schedulers: which path carries the next packet.
//!
//! A scheduler sees the packet's size and whether it is a retransmission,
//! the sender's [`PathState`]s (estimates, in-flight counts, configured
//! parameters) and, apart from them, the sender's own pacing queues
//! ([`SendQueues`]). It returns the chosen path and the packet's role in a PET
//! packet pair. Schedulers are pure decision makers: the [`Sender`]
//! (crate::sender) records the transmission and feeds estimates back.
//!
//! [`Sender`]: crate::sender::Sender

/// Packets of at most this many bytes count as small (TCP ACKs and the
/// like): PET places them by delay alone (`PetConfig::small_packet_bytes`,
/// compared with the length it schedules, which in the tunnel includes the
/// 62 bytes of encapsulation) and the receiver lets their reports wait
/// longer (`ReceiverConfig::small_packet_bytes`, compared with the inner
/// packet). A TCP ACK of 40 to 80 bytes is small to both.
pub const SMALL_PACKET_BYTES: u32 = 256;

mod adas;
mod edpf;
mod minrtt;
mod pet;
mod rr;
mod send_queues;
mod single;
mod wrr;

pub use adas::{Adas, AdasConfig};
pub use edpf::{Edpf, EdpfQueues};
pub use minrtt::MinRtt;
pub use pet::{Pet, PetConfig};
pub use rr::RoundRobin;
pub use send_queues::SendQueues;
pub use single::Single;
pub use wrr::WeightedRoundRobin;

use crate::path::{PathId, PathState};
use crate::time::{Duration, Instant};

/// What a scheduler may know about the packet to place.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    /// Bytes the packet occupies on the path (inner packet plus tunnel overhead).
    pub len: u32,
    /// The inner packet repeats data already sent (a TCP retransmission).
    /// PET never pairs these: their packet-pair sample would be ambiguous.
    pub retransmit: bool,
    /// The inner packet carries TCP payload, however little: part of a
    /// byte stream that may become a bulk transfer at its next write. PET
    /// places such a packet, small or not, as it places full-size ones on
    /// a path nearer than the fastest (`PetConfig::near_floor`):
    /// a 37-byte first write sent on the near path set the inner TCP's
    /// smallest round trip, and its slow start ended when the transfer
    /// behind it moved to the far path. Pure ACKs, handshakes and other
    /// protocols keep their own delays.
    pub stream: bool,
}

impl PacketInfo {
    /// A small packet without TCP data (a pure ACK, a SYN, a DNS query):
    /// PET's near rule leaves it its own path's delay, and the tunnel's
    /// startup hold may keep it back as a connection's opening.
    pub fn keeps_delays(&self, small_packet_bytes: u32) -> bool {
        self.len <= small_packet_bytes && !self.stream
    }
}

/// Role of a packet in a PET packet pair (PET/BMP Section V-A).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PairRole {
    #[default]
    None,
    First,
    Second,
}

/// A scheduling decision.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Index into the `paths` slice given to [`Scheduler::select`].
    pub index: usize,
    pub pair: PairRole,
    /// Sent on a path the scheduler otherwise avoids, to keep its estimate fresh.
    pub probe: bool,
    /// The scheduler's predicted delivery time, in its own time frame (ns),
    /// handed back with the measured one by [`Scheduler::on_delivery`].
    pub eta_ns: Option<i64>,
}

impl Decision {
    pub fn single(index: usize) -> Self {
        Decision {
            index,
            pair: PairRole::None,
            probe: false,
            eta_ns: None,
        }
    }
}

/// Chooses a path for each packet.
pub trait Scheduler: Send {
    /// Short name for reports (`"PET"`, `"EDPF"`, ...).
    fn name(&self) -> &'static str;
    /// Picks a path among `paths` for a packet arriving at `now`. Paths
    /// with `usable == false` must not be chosen. `None` when no path is
    /// usable. `queues` is the sender's pacing queue on each path, for
    /// this decision only ([`SendQueues::UNPACED`] from a sender that does
    /// not pace).
    fn select(
        &mut self,
        now: Instant,
        pkt: &PacketInfo,
        paths: &[PathState],
        queues: &SendQueues,
    ) -> Option<Decision>;
    /// The path set changed (added, removed, usability): drop stale state.
    fn paths_changed(&mut self, _paths: &[PathState]) {}
    /// Feedback showed that a packet for which the scheduler predicted
    /// `eta_ns` arrived at `actual_ns` (sender clock frame, relative delays
    /// as in [`Pet::relative_delays`]).
    fn on_delivery(&mut self, _path: &PathState, _eta_ns: i64, _actual_ns: i64) {}
    /// A loss was detected on `path` by a detector whose losses are not
    /// counted in [`PathState::loss`] (those reach a scheduler through the
    /// path state it is given). Call it where such a detector identifies the
    /// loss, once per loss event: for PRISM's reverse-path controller, where
    /// it finds a hole on one link from the inner TCP's SACK blocks (PRISM
    /// Section 5.2.3). ADAS halves the link's weight (Section 4.2.3); the
    /// other schedulers ignore it.
    fn on_loss(&mut self, _path: PathId) {}
}

/// The schedulers by name, as scenario files and configs spell them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SchedulerKind {
    RoundRobin,
    WeightedRoundRobin,
    Edpf,
    Pet,
    MinRtt,
    Single,
    Adas,
}

impl SchedulerKind {
    pub const ALL: [SchedulerKind; 7] = [
        SchedulerKind::RoundRobin,
        SchedulerKind::WeightedRoundRobin,
        SchedulerKind::Edpf,
        SchedulerKind::Pet,
        SchedulerKind::MinRtt,
        SchedulerKind::Single,
        SchedulerKind::Adas,
    ];

    /// Lower-case name used in configuration files and CLI flags.
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulerKind::RoundRobin => "rr",
            SchedulerKind::WeightedRoundRobin => "wrr",
            SchedulerKind::Edpf => "edpf",
            SchedulerKind::Pet => "pet",
            SchedulerKind::MinRtt => "minrtt",
            SchedulerKind::Single => "single",
            SchedulerKind::Adas => "adas",
        }
    }

    /// Parses a name (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.to_ascii_lowercase();
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// A fresh scheduler of this kind with default tuning.
    pub fn build(self) -> Box<dyn Scheduler> {
        self.build_with(PetConfig::default())
    }

    /// A fresh scheduler of this kind, PET with `pet` (the other kinds
    /// have no tuning here).
    pub fn build_with(self, pet: PetConfig) -> Box<dyn Scheduler> {
        match self {
            SchedulerKind::RoundRobin => Box::new(RoundRobin::default()),
            SchedulerKind::WeightedRoundRobin => Box::new(WeightedRoundRobin::default()),
            SchedulerKind::Edpf => Box::new(Edpf::default()),
            SchedulerKind::Pet => Box::new(Pet::new(pet)),
            SchedulerKind::MinRtt => Box::new(MinRtt::default()),
            SchedulerKind::Single => Box::new(Single),
            SchedulerKind::Adas => Box::new(Adas::default()),
        }
    }
}

/// The rate a scheduler should assume for a path: the configured one when
/// given (ideal knowledge), else the packet-pair estimate.
pub fn known_or_estimated_rate(p: &PathState) -> Option<f64> {
    p.params.rate_bps.or_else(|| p.bw.estimate_bps())
}

/// Duration to serialise `len` bytes at `rate_bps`.
pub(crate) fn service_time(len: u32, rate_bps: f64) -> Duration {
    crate::time::tx_time(len, rate_bps)
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;
    use crate::path::{EstimatorConfig, PathId, PathParams};

    /// Paths with known rates (bit/s) and one-way delays (ms).
    pub fn known_paths(spec: &[(f64, u64)]) -> Vec<PathState> {
        spec.iter()
            .enumerate()
            .map(|(i, &(rate, delay_ms))| {
                PathState::new(
                    PathId(i as u8),
                    PathParams {
                        rate_bps: Some(rate),
                        delay: Some(Duration::from_millis(delay_ms)),
                    },
                    &EstimatorConfig::default(),
                )
            })
            .collect()
    }

    /// Paths with nothing known.
    pub fn unknown_paths(n: usize) -> Vec<PathState> {
        (0..n)
            .map(|i| {
                PathState::new(
                    PathId(i as u8),
                    PathParams::default(),
                    &EstimatorConfig::default(),
                )
            })
            .collect()
    }
}
