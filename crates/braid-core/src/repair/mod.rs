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
//!   (`RepairConfig::congestion_rate_factor`). Delay samples older than the
//!   lost packet by a loss timeout are forgotten first (an outage between:
//!   the queue they measured is gone). The tunnel's pacing-queue drops are never numbered, so they
//!   are never repaired either.
//!
//! - FEC (MPLOT §II-A, §III): Reed-Solomon blocks over consecutive
//!   tunnel packets (`sender::fec`, [`fec`], [`crate::fec::mplot`] for
//!   eqs 1-3, 9, 10, 12), proactive parity at the rate of eq 9 from the
//!   aggregate loss, reactive parity per eq 10 when a block's losses
//!   exceed the parity it got. [`RepairMode`] says when FEC or ARQ is used.

mod classify;
pub mod detect;
pub mod fec;
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
    /// Erasure coding only: proactive parity per eq 9, reactive per eq 10,
    /// no retransmission. A loss no block covers is passed on.
    Fec,
    /// Per path, by its condition (the rule is [`FecConfig::fec_serves`]):
    /// ARQ where a retransmission round trip fits the latency budget,
    /// FEC where it does not.
    ///
    /// Why: ARQ sends only what was lost, so it costs nothing on a clean
    /// path and the least on a lossy one, but each repair waits a round
    /// trip (the NACK back, the copy out) and a lost copy another one.
    /// Parity costs bandwidth all the time (eq 9 provisions for the mean
    /// loss plus a deviation) but repairs without waiting. So FEC pays
    /// exactly where the round trip costs more than the latency budget:
    /// a far path (a repair would arrive after the resequencer's budget
    /// for it), or a very lossy one (repair copies are lost too, each
    /// loss of one costs another round trip). Real-time UDP would want
    /// FEC on every path; the tunnel does not tell inner flows apart, so
    /// a deployment carrying mostly real-time traffic sets `fec`.
    Auto,
}

impl RepairMode {
    /// The name used in configuration files.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairMode::Off => "off",
            RepairMode::Arq => "arq",
            RepairMode::Fec => "fec",
            RepairMode::Auto => "auto",
        }
    }

    /// Parses a configuration name.
    pub fn parse(s: &str) -> Option<RepairMode> {
        match s {
            "off" => Some(RepairMode::Off),
            "arq" => Some(RepairMode::Arq),
            "fec" => Some(RepairMode::Fec),
            "auto" => Some(RepairMode::Auto),
            _ => None,
        }
    }
}

/// FEC settings of one tunnel (both directions' encoder and decoder).
#[derive(Copy, Clone, Debug)]
pub struct FecConfig {
    /// `auto`: a path whose expected ARQ repair time is above this is
    /// served by FEC (see [`FecConfig::fec_serves`]); 150 ms is ITU-T
    /// G.114's one-way budget for interactive traffic.
    pub latency_budget: crate::time::Duration,
    /// Longest a run of packets waits for its block to fill before it is
    /// coded as it is (MPLOT: do not wait for data). The data go out at
    /// once either way; this delays only the parity, and so the rebuild
    /// of a loss, while a longer block needs fewer parity packets for the
    /// same rate (`k = ⌈x F⌉` rounds up).
    pub max_block_wait: crate::time::Duration,
    /// Bytes of parity kept for reactive repair, and of received data
    /// kept for rebuilding, each.
    pub max_bytes: usize,
}

impl Default for FecConfig {
    fn default() -> Self {
        FecConfig {
            latency_budget: crate::time::Duration::from_millis(150),
            max_block_wait: crate::time::Duration::from_millis(20),
            max_bytes: 4 << 20,
        }
    }
}

impl FecConfig {
    /// Whether, in `auto` mode, losses on a path with smoothed RTT `srtt`
    /// and loss rate `loss` are repaired by FEC rather than ARQ (why: see
    /// [`RepairMode::Auto`]).
    ///
    /// The rule: FEC when the expected time an ARQ repair takes,
    /// `srtt / (1 − loss)`, is above `latency_budget`. A repair arrives
    /// about one RTT after the loss (the NACK back, the copy out; at
    /// least the path's own RTT when it is the only path), and each copy
    /// is lost again with probability `loss`, so the rounds are
    /// geometric with mean `1 / (1 − loss)`. So a far path (RTT above
    /// the budget) always gets FEC, and a near one only when it loses so
    /// much that repeated rounds exceed the budget: 30 % loss on a 60 ms
    /// path (86 ms) stays with ARQ, which sends only what was lost,
    /// while parity at eq 9's rate would take the bandwidth of the other
    /// paths (measured in `tests/conn/conn_lossy.rs`: goodput fell below the
    /// clean path alone when that path's losses were left to FEC).
    pub fn fec_serves(&self, srtt: crate::time::Duration, loss: f64) -> bool {
        let rounds = 1.0 / (1.0 - loss.clamp(0.0, 0.99));
        srtt.as_secs_f64() * rounds > self.latency_budget.as_secs_f64()
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
    /// The factor a path's pacing rate is multiplied by after a loss
    /// taken for congestion (R-MTP §3.2's "lower the path's rate
    /// estimate"), until a window of new packet-pair samples has measured
    /// the path again; further congestion losses renew the cut, never
    /// deepen it (`PairSamples::cut`). The loss itself is repaired. 0.9:
    /// on `bursty`, `cellular` and `lossy` it gives the same simulated
    /// shares as 1 (30 seeds each) and the same lab shares (bursty 0.890,
    /// 0.893, 0.896; cellular 0.899, 0.898, 0.900; lossy 0.905), and a congested path
    /// carries a tenth less while its queue stands. A cut that compounded
    /// (0.9 per round trip) stalled the fault swarm's seed 122 for 32 s.
    pub congestion_rate_factor: f64,
    /// Tell congestion from random loss (R-MTP §3.2): count congestion
    /// losses per path and apply `congestion_rate_factor` to them. Every
    /// path loss is repaired either way.
    pub classify: bool,
    /// A congestion loss also caps the path's pacing rate at 0.7 of it,
    /// the cap growing back half a packet per round trip until it reaches
    /// the measured capacity (`sender::share`): the path then yields to
    /// other flows on its bottleneck as a TCP flow would, where the
    /// packet-pair rate alone would keep sending at the capacity.
    pub share_cap: bool,
    /// A repair sent on a path that loses packets and whose round trip
    /// is over 200 ms gets a second copy on the other path that delivers
    /// it earliest, within a share of that path's rate
    /// (`Sender::copy_repair`): a lost repair there otherwise outlasts the
    /// receiver's hold and reaches the inner TCP.
    pub copy_lossy: bool,
}

impl Default for RepairConfig {
    fn default() -> Self {
        RepairConfig {
            mode: RepairMode::Off,
            max_age: Duration::from_secs(2),
            max_attempts: 4,
            congestion_rate_factor: 0.9,
            classify: true,
            share_cap: true,
            copy_lossy: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rule_takes_fec_where_arq_rounds_exceed_the_budget() {
        let c = FecConfig::default();
        let ms = Duration::from_millis;
        assert!(!c.fec_serves(ms(40), 0.0), "near and clean: ARQ");
        assert!(!c.fec_serves(ms(60), 0.30), "R-MTP's case: 86 ms, ARQ");
        assert!(c.fec_serves(ms(400), 0.0), "far: FEC");
        assert!(c.fec_serves(ms(100), 0.5), "200 ms of rounds: FEC");
        assert!(c.fec_serves(ms(10), 1.0), "a path losing everything: FEC");
    }

    #[test]
    fn modes_parse_and_print() {
        for m in [
            RepairMode::Off,
            RepairMode::Arq,
            RepairMode::Fec,
            RepairMode::Auto,
        ] {
            assert_eq!(RepairMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(RepairMode::parse("FEC"), None);
    }
}
