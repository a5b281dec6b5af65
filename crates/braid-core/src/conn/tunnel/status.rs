//! The tunnel's state as `braid status` shows it ([`TunnelStatus`]).

use super::{PathStatus, Tunnel, TunnelStatus};
use crate::time::Instant;

impl Tunnel {
    pub(crate) fn status(&self, now: Instant) -> TunnelStatus {
        let paths = self
            .links
            .iter()
            .map(|l| {
                let ps = self.sender.path(l.id);
                let sampled = ps.filter(|p| p.rtt.has_samples());
                let (rb_packets, rb_bytes) = self.receiver.reorder_buffered_on(l.id);
                let rep = self.sender.path_repair_stats(l.id);
                let (rx_loss_rate, _, rx_loss_runs) = self.receiver.path_loss(l.id);
                PathStatus {
                    id: l.id,
                    name: l.name.clone(),
                    up: l.up,
                    remote: l.remote,
                    srtt: l.shown_rtt(now, sampled.map(|p| p.rtt.srtt())),
                    min_rtt: sampled.and_then(|p| p.rtt.min_rtt()),
                    bandwidth_bps: ps.and_then(|p| p.bw.estimate_bps()),
                    pacing_rate_bps: self.sender.path_pacing_rate(l.id),
                    loss_rate: ps.map_or(0.0, |p| p.loss.rate()),
                    lost_packets: ps.map_or(0, |p| p.loss.lost()),
                    in_flight_packets: ps.map_or(0, |p| p.in_flight_packets),
                    tx_packets: l.tx_packets,
                    tx_bytes: l.tx_bytes,
                    rx_packets: l.rx_packets,
                    rx_bytes: l.rx_bytes,
                    data_tx_packets: ps.map_or(0, |p| p.sent_packets),
                    data_tx_bytes: ps.map_or(0, |p| p.sent_bytes),
                    data_rx_packets: l.data_rx_packets,
                    data_rx_bytes: l.data_rx_bytes,
                    last_rx_ago: l.last_rx.map(|t| now.saturating_since(t)),
                    reorder_buffered_packets: rb_packets,
                    reorder_buffered_bytes: rb_bytes as u64,
                    losses_repaired: rep.losses_repaired,
                    losses_congestion: rep.losses_congestion,
                    repairs_carried: rep.repairs_carried,
                    copies_carried: rep.copies_carried,
                    copy_bytes_carried: rep.copy_bytes_carried,
                    peer_loss_rate: rep.peer_loss_rate,
                    rx_loss_rate,
                    rx_loss_runs,
                }
            })
            .collect();
        let current = self.sessions.current();
        TunnelStatus {
            established: current.is_some(),
            session_age: current.map(|s| now.saturating_since(s.created_at())),
            scheduler: self.sender.scheduler_name(),
            paths,
            reorder: self.receiver.reorder_stats_now(),
            sender: self.sender.stats().clone(),
            counters: self.counters.clone(),
            rpc: self.rpc.as_ref().map(|r| r.stats()),
        }
    }
}
