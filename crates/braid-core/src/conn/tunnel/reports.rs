//! What the tunnel sends back and up after each event: copies of the
//! packets the sender found lost (ahead of new data), loss reports (NACKs)
//! and feedback to the peer, and the in-order inner packets to the caller
//! (through PRISM's reverse-path controller when it runs).

use super::{ipv4_source, Output, Outputs, Tunnel, NACK_REPEAT_LOSS};
use crate::path::PathId;
use crate::rpc::RpcEvent;
use crate::time::Instant;

impl Tunnel {
    /// Resends the packets the sender found lost, ahead of new data.
    pub(super) fn send_repairs(&mut self, now: Instant, out: &mut Outputs) {
        let sender = &self.sender;
        self.retained.prune(now, |seq| sender.is_acked(seq));
        while let Some(seq) = self.sender.next_repair() {
            if self.fec_takes_loss(now, seq, out) {
                continue;
            }
            let Some(payload) = self.retained.get(seq).map(<[u8]>::to_vec) else {
                self.sender.abandon_repair(seq);
                continue;
            };
            if let Some(repair) = self.sender.resend(now, seq, || payload.clone()) {
                let path = repair.path();
                if let Some(tx) = repair.sent() {
                    self.emit_data(now, tx, &payload, out);
                }
                // The redundant mode's copies first; the sender's own copy
                // of a repair on a far lossy path if it made none.
                if self.send_copies(now, seq, path, None, true, &payload, out) == 0 {
                    if let Some(copy) = self.sender.copy_repair(now, seq, path) {
                        self.emit_data(now, copy, &payload, out);
                    }
                }
            }
        }
        self.send_skips(now, out);
    }

    /// The paths to send loss reports on: the one that returns earliest,
    /// and the next-earliest too while the first loses packets.
    pub(super) fn reverse_paths(&self) -> Vec<PathId> {
        let mut up: Vec<(f64, f64, PathId)> = self
            .links
            .iter()
            .filter(|l| l.up && l.remote.is_some())
            .map(|l| {
                let p = self.sender.path(l.id);
                let rtt = p
                    .filter(|p| p.rtt.has_samples())
                    .map(|p| p.rtt.srtt())
                    .or(l.keepalive_rtt)
                    .map_or(f64::MAX, |d| d.as_secs_f64());
                (rtt, p.map_or(0.0, |p| p.loss.rate()), l.id)
            })
            .collect();
        up.sort_by(|a, b| a.0.total_cmp(&b.0));
        let repeat = up.first().is_some_and(|f| f.1 > NACK_REPEAT_LOSS);
        let count = if repeat { 2 } else { 1 };
        up.iter().take(count).map(|u| u.2).collect()
    }

    /// Sends a pending loss report on the path that returns earliest, and
    /// again on the next-earliest when that path loses packets (MPLOT
    /// sends ACKs on a random reverse path; a NACK lost with its path
    /// would leave the loss to the sender's slower rules).
    pub(super) fn send_nack(&mut self, now: Instant, out: &mut Outputs) {
        let mut fb = std::mem::take(&mut self.fb);
        if let Some(n) = self.receiver.poll_nack(&mut fb) {
            for id in self.reverse_paths() {
                self.sender
                    .charge_pacer(now, id, n + crate::conn::OUTER_OVERHEAD);
                self.transmit(now, id, &fb[..n], out);
            }
        }
        self.fb = fb;
    }

    /// Sends due feedback and delivers in-order inner packets.
    pub(super) fn flush(&mut self, now: Instant, out: &mut Outputs) {
        self.send_nack(now, out);
        let mut fb = std::mem::take(&mut self.fb);
        while let Some((path, n)) = self.receiver.poll_feedback(now, &mut fb) {
            self.sender
                .charge_pacer(now, path, n + crate::conn::OUTER_OVERHEAD);
            self.transmit(now, path, &fb[..n], out);
        }
        self.fb = fb;
        let delivered = self.counters.packets_delivered;
        self.deliver(now, out);
        if self.counters.packets_delivered != delivered {
            self.quiet_from = Some(now);
            self.startup_peer_started();
        }
    }

    /// Hands the inner packets the receiver released up, through the
    /// server's source filter and the reverse-path controller.
    fn deliver(&mut self, now: Instant, out: &mut Outputs) {
        while let Some(pkt) = self.receiver.poll_release(now) {
            if super::rate_probe::is_filler(&pkt) {
                self.counters.rate_probe_fillers += 1;
                continue;
            }
            if let Some(want) = self.source_filter {
                match ipv4_source(&pkt) {
                    None => {
                        self.counters.drop_not_ipv4 += 1;
                        continue;
                    }
                    Some(src) if src != want => {
                        self.counters.drop_spoofed += 1;
                        continue;
                    }
                    Some(_) => {}
                }
            }
            let pkt = match self.rpc.as_mut() {
                Some(r) => r.handle_packet(now, pkt),
                None => Some(pkt),
            };
            self.rpc_output(out);
            if let Some(pkt) = pkt {
                self.counters.packets_delivered += 1;
                out.push(Output::Deliver(pkt));
            }
        }
    }

    /// Delivers the ACKs the reverse-path controller released and gives
    /// the losses it found on a link to the scheduler (ADAS halves the
    /// link's weight, PRISM Section 4.2.3).
    pub(super) fn rpc_output(&mut self, out: &mut Outputs) {
        let Some(r) = self.rpc.as_mut() else { return };
        while let Some(ev) = r.poll_event() {
            if let RpcEvent::Lost { link, .. } = ev {
                self.sender.report_loss(link);
            }
        }
        while let Some(pkt) = r.poll_release() {
            self.counters.packets_delivered += 1;
            out.push(Output::Deliver(pkt));
        }
    }
}
