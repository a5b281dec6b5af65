//! Redundant mode: Phatak, Goff and Plusquellic's "reliability first" mode
//! (Sec 1), next to their "performance-enhancement" striping.
//!
//! The paper: "two or more identical copies of the data stream might be
//! sent across multiple access points in the hope that at least one
//! reaches its destination. [...] there would be no hard cutoff between
//! the performance-enhancement and reliability first modes. In general a
//! mixture could exist, for example only duplicate lost packets [...]
//! the transition [...] should happen dynamically in reaction to the
//! environment." braid makes that mixture a per-packet decision:
//!
//! - **Whole flows** that are cheap to copy and hurt most by a loss are
//!   duplicated from their first packet ([`FlowClass`]): DNS (port 53),
//!   a configured list of ports, small flows (their first
//!   `small_flow_bytes`), interactive flows (a low recent rate:
//!   request/response, SSH keystrokes, game state) and real-time UDP (a
//!   UDP flow below `realtime_udp_max_bps`: voice and video calls). A
//!   copy of a flow below a rate bound costs at most that rate, which is
//!   why the classes are bounded by rate rather than by guesses about
//!   applications.
//! - **Likely-lost packets**: the first transmission of every packet put
//!   on a path whose loss or delay has spiked (loss rate at least
//!   `spike_loss`, RTT at least `spike_delay` above the path's minimum,
//!   or its oldest packet overdue by that much: a path being cut), and
//!   retransmissions (the inner TCP's, and the tunnel's own repair
//!   copies). This is the automatic switch: a path that turns bad gets
//!   its traffic duplicated until it recovers, with no configuration.
//!   These copies are bounded by a budget (`max_spike_share` of the data
//!   bytes over about the last second), because a spiking path may carry
//!   a bulk transfer.
//!
//! A copy carries the original's tunnel sequence number and goes at once
//! on the other path that delivers it earliest (`Sender::duplicate`); the
//! receiver's resequencer delivers whichever arrives first and drops the
//! other as a duplicate (`reorder::Resequencer::handle_packet`). Copies
//! are flagged like repair copies (`DataFlags::REPAIR`: no
//! previous-on-path link, so they do not disturb per-path loss
//! detection), so a peer without this mode needs no change to receive
//! them. What copies cost is counted (`SenderStats::redundant_bytes`,
//! per path `PathRepairStats::copy_bytes_carried`) and shown by `braid
//! status`.
//!
//! One limit: the resequencer is shared by every flow of the tunnel, so a
//! lost packet of a flow that is not duplicated still holds later packets
//! of a duplicated flow until it is repaired or given up.

mod flows;

pub use flows::{FlowClass, FlowTable};

use crate::path::PathState;
use crate::time::{Duration, Instant};

/// Settings of the redundant mode (`[redundancy]` in the daemon's TOML).
#[derive(Clone, Debug, PartialEq)]
pub struct RedundancyConfig {
    /// Master switch; off, no packet is ever copied.
    pub enabled: bool,
    /// Copies of a duplicated packet in all, the original included (2 =
    /// one extra copy), at most one per usable path.
    pub copies: u8,
    /// Duplicate DNS (UDP or TCP port 53, either end).
    pub dns: bool,
    /// Duplicate flows with one of these ports at either end.
    pub ports: Vec<u16>,
    /// Duplicate the first this many inner bytes of every flow (0: off):
    /// a small flow is duplicated whole, a large one only at its start,
    /// where a loss costs TCP a timeout rather than a fast retransmit.
    pub small_flow_bytes: u64,
    /// Duplicate a flow while its recent rate (inner bytes, about the last
    /// second) is at most this (0: off).
    pub interactive_max_bps: u64,
    /// Duplicate a UDP flow while its recent rate is at most this (0: off).
    pub realtime_udp_max_bps: u64,
    /// Duplicate inner TCP retransmissions and the tunnel's repair copies.
    pub retransmissions: bool,
    /// Duplicate every packet put on a path whose loss or delay spiked.
    pub on_spike: bool,
    /// A path's loss rate (loss events per packet) at which it spikes.
    pub spike_loss: f64,
    /// RTT above the path's minimum (or an oldest packet overdue by
    /// this much beyond the smoothed RTT) at which a path spikes.
    pub spike_delay: Duration,
    /// Spike and retransmission copies may take at most this share of the
    /// data bytes sent over about the last second.
    pub max_spike_share: f64,
}

impl Default for RedundancyConfig {
    fn default() -> Self {
        RedundancyConfig {
            enabled: false,
            copies: 2,
            dns: true,
            ports: Vec::new(),
            small_flow_bytes: 16 * 1024,
            interactive_max_bps: 128_000,
            realtime_udp_max_bps: 1_000_000,
            retransmissions: true,
            on_spike: true,
            spike_loss: 0.05,
            spike_delay: Duration::from_millis(100),
            max_spike_share: 0.25,
        }
    }
}

/// Why a packet was duplicated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its flow is in a class duplicated whole.
    Flow(FlowClass),
    /// A retransmission (inner TCP or tunnel repair).
    Retransmit,
    /// Its path's loss or delay spiked.
    Spike,
}

/// Whether `p` has spiked at `now`: its loss rate, its RTT over its
/// minimum, or its oldest packet in flight (`oldest_sent`, if any) overdue.
pub fn path_spiking(
    cfg: &RedundancyConfig,
    p: &PathState,
    oldest_sent: Option<Instant>,
    now: Instant,
) -> bool {
    if p.loss.rate() >= cfg.spike_loss {
        return true;
    }
    if !p.rtt.has_samples() {
        return false;
    }
    let srtt = p.rtt.srtt();
    if let (Some(min), Some(latest)) = (p.rtt.min_rtt(), p.rtt.latest()) {
        if latest.max(srtt).saturating_sub(min) >= cfg.spike_delay {
            return true;
        }
    }
    oldest_sent.is_some_and(|t| now.saturating_since(t) >= srtt + cfg.spike_delay)
}

/// The per-tunnel-direction policy: flow classes, plus the budget of
/// spike and retransmission copies.
#[derive(Clone, Debug)]
pub struct Policy {
    cfg: RedundancyConfig,
    flows: FlowTable,
    /// Decaying byte counters (time constant [`flows::RATE_WINDOW`]) of
    /// data sent and of budgeted copies.
    sent: flows::Decaying,
    budgeted: flows::Decaying,
}

/// Flows tracked by the policy (a fixed table; a collision makes one
/// decision wrong, never unbounded memory).
const FLOW_SLOTS: usize = 1024;

/// Budget slack so that the first copies of an idle tunnel are allowed.
const BUDGET_SLACK_BYTES: f64 = 16.0 * 1024.0;

impl Policy {
    pub fn new(cfg: RedundancyConfig) -> Self {
        Policy {
            cfg,
            flows: FlowTable::new(FLOW_SLOTS),
            sent: flows::Decaying::default(),
            budgeted: flows::Decaying::default(),
        }
    }

    pub fn config(&self) -> &RedundancyConfig {
        &self.cfg
    }

    /// Looks at one inner packet before it is scheduled: records it in its
    /// flow and returns the class that makes the flow duplicated, if any.
    /// `wire_len` is what the packet costs on a path (for the budget).
    pub fn classify(&mut self, now: Instant, packet: &[u8], wire_len: usize) -> Option<FlowClass> {
        if !self.cfg.enabled {
            return None;
        }
        self.sent.add(now, wire_len as f64);
        self.flows.observe(now, packet, &self.cfg)
    }

    /// Decides whether the packet (classified by [`Policy::classify`] as
    /// `class`) gets copies: `spiking` says whether the path it was
    /// scheduled on has spiked. Spike and retransmission copies are
    /// charged to the budget and refused beyond it.
    pub fn decide(
        &mut self,
        now: Instant,
        class: Option<FlowClass>,
        retransmit: bool,
        spiking: bool,
        wire_len: usize,
    ) -> Option<Reason> {
        if !self.cfg.enabled || self.cfg.copies < 2 {
            return None;
        }
        if let Some(c) = class {
            return Some(Reason::Flow(c));
        }
        let why = if retransmit && self.cfg.retransmissions {
            Reason::Retransmit
        } else if spiking && self.cfg.on_spike {
            Reason::Spike
        } else {
            return None;
        };
        self.within_budget(now, wire_len).then_some(why)
    }

    /// Whether a budgeted copy of `wire_len` bytes fits, and if so charges it.
    pub fn within_budget(&mut self, now: Instant, wire_len: usize) -> bool {
        let allowed = self.cfg.max_spike_share * self.sent.value(now) + BUDGET_SLACK_BYTES;
        if self.budgeted.value(now) + wire_len as f64 > allowed {
            return false;
        }
        self.budgeted.add(now, wire_len as f64);
        true
    }

    /// Extra copies a duplicated packet gets.
    pub fn extra_copies(&self) -> usize {
        self.cfg.copies.saturating_sub(1) as usize
    }
}

#[cfg(test)]
mod tests;
