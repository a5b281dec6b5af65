//! The receive pipeline ([`Tunnel::handle_transport`]): decrypt,
//! decode, mark the path alive, dispatch the frame (data to the receiver,
//! feedback and NACKs to the sender, keepalives echoed, control returned
//! to the caller), then send repairs, release paced packets and flush.

use super::{path_name, Arrival, Control, Frame, Keepalive, Outputs, PathLink, Role, Tunnel};
use std::borrow::Cow;

use crate::compress;
use crate::crypto::CryptoError;
use crate::path::{PathId, MAX_PATHS};
use crate::time::Instant;
use crate::wire;
use crate::wire::{DataFlags, DataHeader};

impl Tunnel {
    /// Handles one transport packet. Returns the kind of a control frame
    /// it carried, for the caller to act on.
    pub(crate) fn handle_transport(
        &mut self,
        now: Instant,
        arrival: Arrival,
        packet: &[u8],
        out: &mut Outputs,
    ) -> Option<u8> {
        let mut plain = std::mem::take(&mut self.plain);
        plain.clear();
        let r = match self.sessions.decrypt(packet, &mut plain, now) {
            Ok(()) => self.on_frame(now, arrival, packet.len(), &plain, out),
            Err(e) => {
                self.count_crypto_error(e);
                None
            }
        };
        self.plain = plain;
        r
    }

    pub(super) fn count_crypto_error(&mut self, e: CryptoError) {
        let c = &mut self.counters;
        match e {
            CryptoError::Truncated | CryptoError::BadType | CryptoError::TooLarge => {
                c.drop_malformed += 1
            }
            CryptoError::UnknownIndex => c.drop_unknown_index += 1,
            CryptoError::Replay => c.drop_replay += 1,
            CryptoError::AuthFailed => c.drop_auth_failed += 1,
            CryptoError::Expired => c.drop_expired += 1,
            CryptoError::NoSession => c.drop_no_session += 1,
        }
    }

    pub(super) fn on_frame(
        &mut self,
        now: Instant,
        arrival: Arrival,
        len: usize,
        plain: &[u8],
        out: &mut Outputs,
    ) -> Option<u8> {
        let Ok(frame) = wire::decode(plain) else {
            self.counters.drop_bad_frame += 1;
            return None;
        };
        let frame_path = match frame {
            Frame::Data(h, _) => Some(h.path),
            Frame::Feedback(v) => Some(v.path),
            Frame::Keepalive(k) | Frame::KeepaliveAck(k) => Some(k.path),
            Frame::Parity(h, _) => Some(h.path),
            // A NACK names the paths it reports on and may come on any.
            Frame::Control(_) | Frame::Nack(_) => None,
        };
        // The path whose liveness this datagram proves: the socket on the
        // client, the path the frame names on the server.
        let path = match arrival {
            Arrival::Path(p) => Some(p),
            Arrival::From(_) => frame_path,
        };
        if let Some(p) = path {
            let known = self.has_link(p);
            if !known && (self.role == Role::Client || p.0 as usize >= MAX_PATHS) {
                self.counters.drop_bad_path += 1;
                return None;
            }
            if !known {
                self.links.push(PathLink::new(p, None));
                self.links.sort_by_key(|l| l.id);
            }
            if let (Arrival::From(from), Some(l)) = (arrival, self.link_mut(p)) {
                // Roaming, as WireGuard: the latest authenticated source wins.
                l.remote = Some(from);
            }
            self.mark_rx(now, p, len, out);
        } else {
            self.last_rx = Some(self.last_rx.map_or(now, |t| t.max(now)));
        }

        let mut control = None;
        match frame {
            Frame::Data(h, wire_payload) => {
                if let Some(l) = path.and_then(|p| self.link_mut(p)) {
                    l.data_rx_packets += 1;
                    l.data_rx_bytes += wire_payload.len() as u64;
                }
                // A frame whose headers do not rebuild is dropped, and
                // the rest of this event (repairs, paced packets, due
                // feedback) goes on as after any other frame.
                match self.inner_packet(&h, wire_payload) {
                    None => self.counters.drop_bad_header += 1,
                    Some(packet) => {
                        if self.cfg.acks_unordered && crate::flow::pure_tcp_ack(&packet) {
                            self.receiver.handle_unordered_data(
                                now,
                                &h,
                                packet.len(),
                                packet.to_vec(),
                            );
                        } else {
                            self.receiver
                                .handle_data(now, &h, packet.len(), packet.to_vec());
                        }
                        self.fec_on_data(now, h.path, h.seq, &packet);
                    }
                }
            }
            Frame::Parity(h, shard) => self.fec_on_parity(now, h.path, &h, shard),
            Frame::Feedback(v) => {
                for e in v.entries() {
                    self.compressor.on_reported(e.seq);
                }
                self.sender.handle_feedback_on(now, v.path, v.entries());
                // Its reports updated the paths' round trips.
                self.sync_hold_floor();
            }
            Frame::Nack(v) => self.sender.handle_nack(now, v.ranges(), v.rates()),
            Frame::Keepalive(k) => {
                if let Some(p) = path {
                    // The peer's send time in its clock: a one-way delay
                    // plus the clocks' offset, which cancels between paths.
                    let raw = now.as_nanos() as i64 - k.tx_time_ns as i64;
                    self.sender.on_path_owd_sample(p, raw);
                    self.sync_hold_floor();
                    let mut b = [0u8; Keepalive::LEN];
                    let echo = Keepalive { path: p, ..k };
                    if echo.emit(true, &mut b).is_ok() {
                        self.transmit(now, p, &b, out);
                    }
                    let own = self.role == Role::Server
                        && self.link_mut(p).is_some_and(|l| l.wants_own_keepalive(now));
                    if own {
                        self.send_keepalive(now, p, out);
                    }
                }
            }
            Frame::KeepaliveAck(k) => {
                let rtt = now.saturating_since(Instant::from_nanos(k.tx_time_ns));
                if let Some(l) = path.and_then(|p| self.link_mut(p)) {
                    if k.tx_time_ns <= now.as_nanos() {
                        l.keepalive_rtt = Some(rtt);
                        l.keepalive_rtt_at = Some(now);
                        l.keepalive_rtt_min = Some(l.keepalive_rtt_min.map_or(rtt, |m| m.min(rtt)));
                        let id = l.id;
                        self.sender.on_path_rtt_sample(id, rtt);
                        self.sync_hold_floor();
                    }
                }
            }
            Frame::Control(c) => match (c.kind, c.body) {
                (Control::PATH_DOWN, &[p]) if self.role == Role::Server => {
                    self.mark_down(now, PathId(p), out)
                }
                (Control::PATH_DOWN, &[p, Control::DOWN_SILENT]) if self.role == Role::Server => {
                    self.peer_path_silent(now, PathId(p), out)
                }
                (Control::PATH_NAME, &[p, ref name @ ..]) if self.role == Role::Server => {
                    let name = path_name(name);
                    if let Some(l) = self.link_mut(PathId(p)) {
                        l.name = (!name.is_empty()).then_some(name);
                    }
                }
                (Control::SKIP, body) => {
                    for b in body.chunks_exact(4) {
                        let seq = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                        self.receiver.give_up(now, seq);
                    }
                }
                _ => control = Some(c.kind),
            },
        }
        self.send_repairs(now, out);
        self.release_paced(now, out);
        self.flush(now, out);
        // Feedback may have brought the last path's first rate estimate.
        self.startup_poll(now, out);
        control
    }

    /// The inner packet a data frame carries: its payload, or the packet
    /// its compressed headers rebuild (learning the context of an
    /// install). `None` if they do not rebuild.
    fn inner_packet<'a>(&mut self, h: &DataHeader, payload: &'a [u8]) -> Option<Cow<'a, [u8]>> {
        let (install, compressed) = (
            h.flags.has(DataFlags::INSTALL),
            h.flags.has(DataFlags::COMPRESSED),
        );
        if !install && !compressed {
            return Some(Cow::Borrowed(payload));
        }
        let mut packet = Vec::with_capacity(payload.len() + compress::header::MAX_GAIN);
        let rebuilt = if install {
            self.decompressor.install(payload, &mut packet)
        } else {
            self.decompressor.rebuild(payload, &mut packet)
        };
        rebuilt.ok().map(|()| Cow::Owned(packet))
    }
}
