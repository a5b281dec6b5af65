//! Flow classes of the redundant mode: which inner flows are copied whole.
//!
//! A flow is the 5-tuple of a TCP or UDP packet (IPv4, or IPv6 without
//! extension headers), in one direction: each end of the tunnel classifies
//! what it sends. State is a fixed table indexed by a hash of the flow, as
//! in [`crate::flow::RetransmitDetector`]: memory is bounded whatever the
//! traffic, and a collision only merges two flows' byte counts.

use super::RedundancyConfig;
use crate::time::{Duration, Instant};

/// Time constant of the rate estimates: "recent" means about this long.
pub const RATE_WINDOW: Duration = Duration::from_secs(1);

/// A byte counter that decays exponentially with time constant
/// [`RATE_WINDOW`]; its value over the window is a rate.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Decaying {
    value: f64,
    at: Instant,
}

impl Decaying {
    fn decayed(&self, now: Instant) -> f64 {
        let dt = now.saturating_since(self.at).as_secs_f64();
        self.value * (-dt / RATE_WINDOW.as_secs_f64()).exp()
    }

    /// Adds `bytes` at `now` (times before the last update count as it).
    pub fn add(&mut self, now: Instant, bytes: f64) {
        let now = now.max(self.at);
        self.value = self.decayed(now) + bytes;
        self.at = now;
    }

    /// The counter at `now`.
    pub fn value(&self, now: Instant) -> f64 {
        self.decayed(now.max(self.at))
    }

    /// The recent rate in bits per second.
    pub fn rate_bps(&self, now: Instant) -> f64 {
        self.value(now) * 8.0 / RATE_WINDOW.as_secs_f64()
    }
}

/// Why a flow is duplicated whole.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FlowClass {
    /// UDP or TCP port 53.
    Dns,
    /// A configured port.
    Port,
    /// A UDP flow below the real-time rate bound.
    RealtimeUdp,
    /// A flow below the interactive rate bound.
    Interactive,
    /// Within its first `small_flow_bytes`.
    Small,
}

/// The transport 5-tuple of an inner packet, hashed, with its ports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FlowId {
    pub key: u64,
    pub udp: bool,
    pub src_port: u16,
    pub dst_port: u16,
}

/// The flow of an IPv4 or IPv6 TCP or UDP packet; `None` for anything
/// else (other protocols, fragments after the first, malformed packets).
pub fn flow_id(packet: &[u8]) -> Option<FlowId> {
    let version = packet.first()? >> 4;
    let (proto, l4, addr) = match version {
        4 => {
            let ihl = ((packet[0] & 0x0f) as usize) * 4;
            if ihl < 20 || packet.len() < ihl {
                return None;
            }
            let frag = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
            if frag != 0 {
                return None;
            }
            (packet[9], ihl, &packet[12..20])
        }
        6 if packet.len() >= 40 => (packet[6], 40, &packet[8..40]),
        _ => return None,
    };
    if proto != 6 && proto != 17 {
        return None;
    }
    let ports = packet.get(l4..l4 + 4)?;
    let mut key = 0xcbf29ce484222325u64;
    for &b in std::iter::once(&proto).chain(addr).chain(ports) {
        key = (key ^ b as u64).wrapping_mul(0x100000001b3);
    }
    Some(FlowId {
        key,
        udp: proto == 17,
        src_port: u16::from_be_bytes([ports[0], ports[1]]),
        dst_port: u16::from_be_bytes([ports[2], ports[3]]),
    })
}

#[derive(Copy, Clone, Debug, Default)]
struct Slot {
    key: u64,
    /// Inner bytes since the flow was first seen (saturating).
    bytes: u64,
    recent: Decaying,
}

/// Bounded per-flow memory of bytes sent and recent rate.
#[derive(Clone, Debug)]
pub struct FlowTable {
    slots: Vec<Slot>,
}

impl FlowTable {
    /// `slots` is rounded up to a power of two.
    pub fn new(slots: usize) -> Self {
        FlowTable {
            slots: vec![Slot::default(); slots.next_power_of_two().max(1)],
        }
    }

    /// Records one packet and returns the class that duplicates its flow.
    pub fn observe(
        &mut self,
        now: Instant,
        packet: &[u8],
        cfg: &RedundancyConfig,
    ) -> Option<FlowClass> {
        let f = flow_id(packet)?;
        let mask = self.slots.len() - 1;
        let s = &mut self.slots[(mix(f.key) as usize) & mask];
        if s.key != f.key || s.bytes == 0 {
            *s = Slot {
                key: f.key,
                bytes: 0,
                recent: Decaying::default(),
            };
            s.recent.at = now;
        }
        s.bytes = s.bytes.saturating_add(packet.len() as u64);
        s.recent.add(now, packet.len() as f64);
        let rate = s.recent.rate_bps(now);
        let port = |p: u16| f.src_port == p || f.dst_port == p;
        if cfg.dns && port(53) {
            Some(FlowClass::Dns)
        } else if cfg.ports.iter().any(|&p| port(p)) {
            Some(FlowClass::Port)
        } else if f.udp && rate <= cfg.realtime_udp_max_bps as f64 {
            Some(FlowClass::RealtimeUdp)
        } else if rate <= cfg.interactive_max_bps as f64 {
            Some(FlowClass::Interactive)
        } else if s.bytes <= cfg.small_flow_bytes {
            Some(FlowClass::Small)
        } else {
            None
        }
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x
}
