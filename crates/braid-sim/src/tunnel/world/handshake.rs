//! The opening of the transfer's connection with `LabRunOptions::handshake`:
//! the client's SYN, the server's SYN-ACK, and the SYN's retransmission
//! timer. The SYN is small and carries no data, so a new tunnel's startup
//! hold keeps it back as it keeps iperf3's in the lab
//! (`braid_core::conn` startup); the transfer starts when the SYN-ACK
//! arrives (`TunnelWorld::begin`).

use super::super::inner::encode_opening;
use super::{Endpoint, TunnelWorld, FAR};
use braid_core::time::{Duration, Instant};

impl TunnelWorld {
    /// When the SYN is sent again if no SYN-ACK has come: Linux's initial
    /// retransmission timeout, 1 s, doubled at each try (RFC 6298 §2.1,
    /// §5.5).
    pub(super) fn syn_timeout(&self) -> Option<Instant> {
        match (self.syn, self.started) {
            (Some((at, n)), None) => Some(at + Duration::from_secs(1 << (n - 1).min(6))),
            _ => None,
        }
    }

    /// Sends the SYN again if its timer has run out.
    pub(super) fn retry_syn(&mut self) {
        if self.syn_timeout().is_some_and(|t| t <= self.now) {
            self.send_opening(false);
            if let Some((at, n)) = self.syn.as_mut() {
                *at = self.now;
                *n += 1;
            }
        }
    }

    /// The SYN (client, `reply` false) or SYN-ACK (server) of the
    /// transfer's connection, into the tunnel.
    pub(super) fn send_opening(&mut self, reply: bool) {
        let Some(me) = self.me else { return };
        let tag = self.tag();
        let flow = self.tx.flow();
        if reply {
            encode_opening(flow, true, FAR, me, tag, &mut self.buf);
            Endpoint::send_packet(&mut self.server, self.now, &self.buf);
        } else {
            encode_opening(flow, false, me, FAR, tag, &mut self.buf);
            Endpoint::send_packet(&mut self.client, self.now, &self.buf);
        }
    }

    /// How often the SYN was sent (0 without the handshake).
    #[cfg(test)]
    pub(super) fn syns_sent(&self) -> u32 {
        self.syn.map_or(0, |(_, n)| n)
    }
}
