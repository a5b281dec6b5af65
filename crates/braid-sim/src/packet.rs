//! What travels on simulated links.

use braid_core::wire::DataHeader;

use crate::tcp::{Ack, Segment};

/// Link indices along a packet's way, then where it is delivered.
#[derive(Copy, Clone, Debug)]
pub struct Route {
    pub hops: [u16; 4],
    pub n: u8,
    pub dst: Dst,
}

impl Route {
    pub fn new(hops: &[u16], dst: Dst) -> Self {
        let mut h = [0; 4];
        h[..hops.len()].copy_from_slice(hops);
        Route {
            hops: h,
            n: hops.len() as u8,
            dst,
        }
    }
}

/// Endpoints of the simulated network.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dst {
    /// TCP receiver of flow `i`.
    Sink(u32),
    /// TCP sender of flow `i` (ACKs).
    Src(u32),
    /// The braid proxy (inner packets from the server, feedback from the client).
    Proxy,
    /// The braid client (tunnelled data).
    Client,
    /// Background traffic's sink: the packet is discarded on arrival.
    Drop,
}

/// Largest feedback frame carried inline (4 entries).
pub const FEEDBACK_INLINE: usize = braid_core::wire::feedback_max_len(4);

#[derive(Clone, Debug)]
pub enum Body {
    Seg(Segment),
    Ack(Ack),
    /// A tunnelled segment with its braid data header as it is on the wire.
    Tunnel([u8; DataHeader::LEN], Segment),
    Feedback([u8; FEEDBACK_INLINE], u8),
    /// Background (UDP on/off) payload; nobody reads it.
    Filler,
}

#[derive(Clone, Debug)]
pub struct Packet {
    pub body: Body,
    /// Bytes on the wire.
    pub len: u32,
    /// Class for fair queueing (one per TCP flow; the tunnel is one class).
    pub class: u32,
    pub route: Route,
    pub hop: u8,
    /// Path index for per-interface accounting.
    pub tag: u8,
}
