//! Repair of path losses inside the tunnel.
//!
//! The principle (issue: lossy paths): the tunnel repairs the losses that
//! happen on the paths, and never the losses it causes itself, so that the
//! inner TCP still sees congestion.
//!
//! - Per-path loss detection at the receiver ([`detect`], PRISM §5.2.3):
//!   a gap in one path's chain of previous-on-path links is a loss once a
//!   later packet on that path arrived (threshold 1 by default); it goes
//!   back at once in a NACK frame ([`crate::wire::nack`]) with the
//!   receiver's per-path loss rates (PRISM §6.2.1). The sender's FIFO rule
//!   on feedback and its per-path timeout (tail losses) find the rest.
//! - ARQ at the sender (`sender::repair`): a lost packet is resent at once,
//!   ahead of new data, on the path that delivers it earliest. The tunnel
//!   keeps the payloads of recent packets ([`Retained`], bounded in bytes
//!   and age) for it.
//! - The resequencer holds a gap for its repair, for a time measured from
//!   how long gaps take to fill (`reorder::hold`), and releases the moment
//!   the repair arrives.
//! - Congestion or random loss ([`LossClassifier`], R-MTP §3.2): a loss
//!   that comes with a rising one-way-delay trend is congestion; it is not
//!   repaired (the inner TCP must back off), the receiver is told so at once
//!   (`Control::SKIP`), and optionally the path's pacing rate is lowered
//!   (`RepairConfig::congestion_rate_factor`). The tunnel's pacing-queue drops are never numbered, so they
//!   are never repaired either.
//!
//! Not built: the erasure-coded repair of MPLOT (block FEC, eqs 9-12).
//! [`RepairMode`] therefore has no `Fec` or `Auto`.

mod classify;
pub mod detect;
mod retain;

pub use classify::{LossClassifier, LossKind};
pub use detect::PathLossDetector;
pub use retain::Retained;

use crate::time::Duration;

/// How the tunnel repairs path losses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RepairMode {
    /// No repair: every path loss reaches the inner traffic (the papers'
    /// systems, and the simulator's reproductions).
    Off,
    /// Retransmission of lost packets inside the tunnel (ARQ).
    Arq,
}

impl RepairMode {
    /// The name used in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairMode::Off => "off",
            RepairMode::Arq => "arq",
        }
    }

    /// Parses a configuration name.
    pub fn parse(s: &str) -> Option<RepairMode> {
        match s {
            "off" => Some(RepairMode::Off),
            "arq" => Some(RepairMode::Arq),
            _ => None,
        }
    }
}

/// Repair settings of one direction's sender.
#[derive(Clone, Debug)]
pub struct RepairConfig {
    pub mode: RepairMode,
    /// A packet first sent longer ago than this is not repaired: the
    /// receiver's resequencer has given up on it by then (its hold time is
    /// at most `ReorderConfig::max_hold`, 2 s by default).
    pub max_age: Duration,
    /// Most repair copies of one packet.
    pub max_attempts: u8,
    /// The factor a path's pacing rate is multiplied by at a loss taken
    /// for congestion (at most once per path round trip). 1 by default:
    /// the unrepaired loss already makes the inner TCP back off, and in
    /// the lab (`cellular`) 0.9 gave the same goodput with 324 inner
    /// retransmissions instead of 3, as the lowered rate overflowed the
    /// pacing queue.
    pub congestion_rate_factor: f64,
    /// Tell congestion from random loss (R-MTP §3.2) and leave congestion
    /// losses unrepaired; off, every path loss is repaired.
    pub classify: bool,
}

impl Default for RepairConfig {
    fn default() -> Self {
        RepairConfig {
            mode: RepairMode::Off,
            max_age: Duration::from_secs(2),
            max_attempts: 4,
            congestion_rate_factor: 1.0,
            classify: true,
        }
    }
}
