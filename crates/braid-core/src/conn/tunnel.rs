//! One tunnel between a client and the server, as either side holds it:
//! the sessions, this side's [`Sender`] (uplink on the client, downlink on
//! the server), its [`Receiver`] for the other direction, and the paths.
//!
//! Receive pipeline ([`Tunnel::handle_transport`]):
//! 1. decrypt with [`PeerSessions`] (replay window, authentication);
//! 2. decode the frame ([`wire::decode`]);
//! 3. path liveness: the path the datagram came on is alive;
//! 4. dispatch: data to the receiver, feedback to the sender, keepalives
//!    echoed, control returned to the caller;
//! 5. flush: due feedback frames out, in-order inner packets up.
//!
//! Send pipeline ([`Tunnel::send_packet`]): size check, retransmission
//! detection (for PET's packet pairs), scheduling, data header, encryption.
//!
//! The client-or-server differences are few and explicit in [`Role`].

mod fec;

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};

use super::ip::{ipv4_destination, ipv4_source};
use super::link::PathLink;
use super::{ConnConfig, Counters, Event, Output, Outputs, PathStatus, Transmit, TunnelStatus};
use crate::crypto::{CryptoError, PeerSessions, PublicKey, Session};
use crate::flow::{tcp_segment, RetransmitDetector};
use crate::path::{PathId, PathParams, MAX_PATHS};
use crate::receiver::Receiver;
use crate::redundancy::{self, FlowClass, Policy};
use crate::repair::{RepairMode, Retained};
use crate::rpc::tcp::TcpRpc;
use crate::rpc::RpcEvent;
use crate::sched::PacketInfo;
use crate::sender::{SendOutcome, Sender, SenderConfig};
use crate::time::Instant;
use crate::wire::{self, Control, DataHeader, Frame, Keepalive, MAX_FEEDBACK_ENTRIES};

/// Connections tracked by the retransmission detector.
const RETX_SLOTS: usize = 1024;

/// The receiver's configuration with the tunnel-wide overrides applied.
fn receiver_config(cfg: &ConnConfig) -> crate::receiver::ReceiverConfig {
    let mut r = cfg.receiver.clone();
    r.reorder.timer_from_first_seen = cfg.reorder_timer_from_first_seen;
    r.reorder.adaptive_hold = cfg.reorder_adaptive_hold;
    let repair = cfg.repair != RepairMode::Off;
    r.nack |= repair;
    r.reorder.repair_wait |= repair;
    r
}

/// The sender's configuration with the tunnel-wide overrides applied.
fn sender_config(cfg: &ConnConfig) -> SenderConfig {
    let mut s = cfg.sender.clone();
    s.pacing = cfg.pacing;
    s.repair.mode = cfg.repair;
    s
}

/// The payload store for repair, sized from the configuration.
fn retained(cfg: &ConnConfig) -> Retained {
    let bytes = if cfg.repair == RepairMode::Off {
        0
    } else {
        cfg.repair_retain_bytes
    };
    Retained::new(bytes, cfg.sender.repair.max_age)
}

/// A reverse path losing more than this (this side's loss estimate of it)
/// gets a NACK repeated on the next-earliest path.
const NACK_REPEAT_LOSS: f64 = 0.002;

/// A path name as received or configured: at most `wire::MAX_PATH_NAME`
/// bytes (cut at a character boundary), control characters dropped, so
/// that a peer cannot break the status table or the logs.
fn path_name(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(wire::MAX_PATH_NAME)]);
    s.chars()
        .filter(|c| !c.is_control() && *c != char::REPLACEMENT_CHARACTER)
        .collect()
}

/// Which end of the tunnel this is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Knows its paths and their remote addresses; sends keepalives.
    Client,
    /// Learns paths and addresses from authenticated datagrams; echoes
    /// keepalives.
    Server,
}

/// Where a datagram came from, as the caller knows it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Client: the socket (path) it arrived on.
    Path(PathId),
    /// Server: the source address.
    From(SocketAddr),
}

pub(crate) struct Tunnel {
    role: Role,
    /// The client's key, on the server (tags events).
    peer: Option<PublicKey>,
    cfg: ConnConfig,
    pub sessions: PeerSessions,
    sender: Sender,
    receiver: Receiver<Vec<u8>>,
    retx: RetransmitDetector,
    /// At most [`MAX_PATHS`], ids below [`MAX_PATHS`].
    links: Vec<PathLink>,
    /// Server: released inner packets must come from this address.
    source_filter: Option<Ipv4Addr>,
    pub counters: Counters,
    /// Last authenticated datagram on any path.
    pub last_rx: Option<Instant>,
    /// Scratch plaintext and feedback buffers.
    plain: Vec<u8>,
    fb: Vec<u8>,
    /// Inner packets in the sender's pacing queues, by tunnel sequence
    /// number, with their path.
    paced: HashMap<u64, (PathId, Vec<u8>)>,
    /// Inner packets sent, kept for repair until acknowledged or too old.
    retained: Retained,
    /// The redundant mode's choice of packets to copy.
    redundancy: Policy,
    /// FEC encoder and decoder (see [`fec`]).
    fec: fec::TunnelFec,
    /// PRISM's reverse-path ACK controller (`reorder = "prism-rpc"`).
    rpc: Option<TcpRpc>,
}

impl Tunnel {
    pub(crate) fn new(
        role: Role,
        peer: Option<PublicKey>,
        cfg: &ConnConfig,
        source_filter: Option<Ipv4Addr>,
    ) -> Tunnel {
        Tunnel {
            role,
            peer,
            sender: Sender::new(sender_config(cfg), cfg.scheduler.build()),
            receiver: Receiver::new(receiver_config(cfg)),
            cfg: cfg.clone(),
            sessions: PeerSessions::new(),
            retx: RetransmitDetector::new(RETX_SLOTS),
            links: Vec::new(),
            source_filter,
            counters: Counters::default(),
            last_rx: None,
            plain: Vec::with_capacity(2048),
            fb: vec![0; wire::feedback_max_len(MAX_FEEDBACK_ENTRIES)],
            paced: HashMap::new(),
            retained: retained(cfg),
            redundancy: Policy::new(cfg.redundancy.clone()),
            fec: fec::TunnelFec::new(cfg),
            rpc: cfg.rpc.clone().map(TcpRpc::new),
        }
    }

    /// Installs a session from a handshake, with the configured limits.
    pub(crate) fn install(&mut self, mut session: Session) {
        session.set_limits(self.cfg.session_limits);
        self.sessions.install(session);
    }

    /// Drops all sessions (the peer lost its state).
    pub(crate) fn clear_sessions(&mut self) {
        self.sessions = PeerSessions::new();
    }

    /// Starts the data plane afresh (tunnel sequence numbers from zero)
    /// because the peer did; paths and their liveness are kept.
    pub(crate) fn reset_data(&mut self, now: Instant) {
        self.sender = Sender::new(sender_config(&self.cfg), self.cfg.scheduler.build());
        self.receiver = Receiver::new(receiver_config(&self.cfg));
        self.retx = RetransmitDetector::new(RETX_SLOTS);
        self.paced.clear();
        self.retained = retained(&self.cfg);
        self.redundancy = Policy::new(self.cfg.redundancy.clone());
        self.fec = fec::TunnelFec::new(&self.cfg);
        // `rpc` is kept: it follows the inner connections, which outlive
        // the tunnel's sequence numbers.
        for l in &self.links {
            self.sender.add_path(l.id, PathParams::default());
            self.sender.set_usable(l.id, l.up);
            if l.up {
                self.receiver.add_path(now, l.id);
            }
        }
    }

    /// The largest smoothed RTT among the paths up (zero before any
    /// sample): how long a round trip may take now.
    pub(crate) fn max_srtt(&self) -> crate::time::Duration {
        self.links
            .iter()
            .filter(|l| l.up)
            .filter_map(|l| self.sender.path(l.id))
            .filter(|p| p.rtt.has_samples())
            .map(|p| p.rtt.srtt())
            .max()
            .unwrap_or(crate::time::Duration::ZERO)
    }

    /// Every path is down (and there is at least one).
    pub(crate) fn all_down(&self) -> bool {
        !self.links.is_empty() && self.links.iter().all(|l| !l.up)
    }

    pub(crate) fn has_link(&self, id: PathId) -> bool {
        self.links.iter().any(|l| l.id == id)
    }

    pub(crate) fn link_remotes(&self) -> impl Iterator<Item = (PathId, SocketAddr)> + '_ {
        self.links
            .iter()
            .filter_map(|l| l.remote.map(|r| (l.id, r)))
    }

    /// Client: a configured path, down until something arrives on it.
    pub(crate) fn add_link(&mut self, id: PathId, remote: SocketAddr) {
        debug_assert!((id.0 as usize) < MAX_PATHS && !self.has_link(id));
        self.links.push(PathLink::new(id, Some(remote)));
        self.links.sort_by_key(|l| l.id);
        self.sender.add_path(id, PathParams::default());
        self.sender.set_usable(id, false);
    }

    pub(crate) fn remove_link(&mut self, now: Instant, id: PathId) {
        self.links.retain(|l| l.id != id);
        self.sender.remove_path(now, id);
        self.paced.retain(|_, (p, _)| *p != id);
        self.receiver.remove_path(id);
    }

    fn link_mut(&mut self, id: PathId) -> Option<&mut PathLink> {
        self.links.iter_mut().find(|l| l.id == id)
    }

    /// A handshake datagram of `len` bytes went out on path `id` (or, on
    /// the server, to the path whose peer address is `dest`): counted in
    /// the path's TX columns like everything else it sends.
    pub(crate) fn count_handshake_tx(&mut self, id: Option<PathId>, dest: SocketAddr, len: usize) {
        let link = match id {
            Some(id) => self.links.iter_mut().find(|l| l.id == id),
            None => self.links.iter_mut().find(|l| l.remote == Some(dest)),
        };
        if let Some(l) = link {
            l.on_tx(len);
        }
    }

    /// Something authenticated of `len` bytes arrived on path `id` (client:
    /// the handshake response). Brings the path up if it was down.
    pub(crate) fn mark_rx(&mut self, now: Instant, id: PathId, len: usize, out: &mut Outputs) {
        self.last_rx = Some(self.last_rx.map_or(now, |t| t.max(now)));
        let Some(link) = self.link_mut(id) else {
            return;
        };
        if link.on_rx(now, len) {
            self.path_up(now, id, out);
            self.sender.set_path_silent_since(id, None);
        } else {
            // The path is alive, so the peer may put data on it at any
            // moment: the resequencer must keep counting it as active for
            // comparison-based loss detection even while it carries no
            // data (BMP's "active" is data-based, and after an idle spell
            // a slow path's first packet would otherwise be skipped
            // before it arrives). Losses on the paths in use are still
            // found at once by the previous-on-path links.
            self.receiver.add_path(now, id);
        }
    }

    fn path_up(&mut self, now: Instant, id: PathId, out: &mut Outputs) {
        if self.sender.path(id).is_some() {
            self.sender.set_usable(id, true);
        } else {
            self.sender.add_path(id, PathParams::default());
        }
        self.receiver.add_path(now, id);
        out.push(Output::Event(Event::PathUp {
            peer: self.peer,
            path: id,
        }));
    }

    /// The caller knows the path cannot send (the interface is gone): take
    /// it out of use now rather than after `path_timeout`. Keepalives keep
    /// probing it; the first answer brings it back.
    pub(crate) fn mark_down(&mut self, now: Instant, id: PathId, out: &mut Outputs) {
        if self.links.iter().any(|l| l.id == id && l.up) {
            self.path_down(now, id, out);
        }
    }

    fn path_down(&mut self, now: Instant, id: PathId, out: &mut Outputs) {
        if let Some(l) = self.link_mut(id) {
            l.up = false;
        }
        self.sender.set_usable(id, false);
        self.receiver.remove_path(id);
        out.push(Output::Event(Event::PathDown {
            peer: self.peer,
            path: id,
        }));
        if self.role == Role::Client {
            // Tell the server over the paths still up, so that its downlink
            // stops using the path now instead of after `path_timeout`.
            self.send_control(now, Control::PATH_DOWN, &[id.0], out);
        }
    }

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

    fn count_crypto_error(&mut self, e: CryptoError) {
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

    fn on_frame(
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
            Frame::Data(h, payload) => {
                if let Some(l) = path.and_then(|p| self.link_mut(p)) {
                    l.data_rx_packets += 1;
                    l.data_rx_bytes += payload.len() as u64;
                }
                // A gap this packet opens waits at least for the repair.
                self.receiver.set_hold_floor(self.sender.repair_wait());
                self.receiver
                    .handle_data(now, &h, payload.len(), payload.to_vec());
                self.fec_on_data(now, h.path, h.seq, payload);
            }
            Frame::Parity(h, shard) => self.fec_on_parity(now, h.path, &h, shard),
            Frame::Feedback(v) => self.sender.handle_feedback_on(now, v.path, v.entries()),
            Frame::Nack(v) => self.sender.handle_nack(now, v.ranges(), v.rates()),
            Frame::Keepalive(k) => {
                if let Some(p) = path {
                    // The peer's send time in its clock: a one-way delay
                    // plus the clocks' offset, which cancels between paths.
                    let raw = now.as_nanos() as i64 - k.tx_time_ns as i64;
                    self.sender.on_path_owd_sample(p, raw);
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
                    }
                }
            }
            Frame::Control(c) => match (c.kind, c.body) {
                (Control::PATH_DOWN, &[p]) if self.role == Role::Server => {
                    self.mark_down(now, PathId(p), out)
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
        control
    }

    /// Resends the packets the sender found lost, ahead of new data.
    fn send_repairs(&mut self, now: Instant, out: &mut Outputs) {
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
            if let Some(tx) = self.sender.resend(now, seq) {
                let path = tx.path;
                self.emit_data(now, tx, &payload, out);
                self.send_copies(now, seq, path, None, true, &payload, out);
            }
        }
        let skip = self.sender.take_unrepaired();
        if !skip.is_empty() {
            let body: Vec<u8> = skip
                .iter()
                .flat_map(|&s| (s as u32).to_be_bytes())
                .collect();
            let c = Control {
                kind: Control::SKIP,
                body: &body,
            };
            let mut b = vec![0u8; c.buffer_len()];
            if c.emit(&mut b).is_ok() {
                for id in self.reverse_paths() {
                    self.transmit(now, id, &b, out);
                }
            }
        }
    }

    /// The paths to send loss reports on: the one that returns earliest,
    /// and the next-earliest too while the first loses packets.
    fn reverse_paths(&self) -> Vec<PathId> {
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
    fn send_nack(&mut self, now: Instant, out: &mut Outputs) {
        let mut fb = std::mem::take(&mut self.fb);
        if let Some(n) = self.receiver.poll_nack(&mut fb) {
            for id in self.reverse_paths() {
                self.sender.charge_pacer(now, id, n + super::OUTER_OVERHEAD);
                self.transmit(now, id, &fb[..n], out);
            }
        }
        self.fb = fb;
    }

    /// Sends due feedback and delivers in-order inner packets.
    fn flush(&mut self, now: Instant, out: &mut Outputs) {
        self.send_nack(now, out);
        let mut fb = std::mem::take(&mut self.fb);
        while let Some((path, n)) = self.receiver.poll_feedback(now, &mut fb) {
            self.sender
                .charge_pacer(now, path, n + super::OUTER_OVERHEAD);
            self.transmit(now, path, &fb[..n], out);
        }
        self.fb = fb;
        while let Some(pkt) = self.receiver.poll_release(now) {
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
    fn rpc_output(&mut self, out: &mut Outputs) {
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

    /// Encrypts `plaintext` and queues it for path `id`. False if the path
    /// has no address or there is no session.
    fn transmit(&mut self, now: Instant, id: PathId, plaintext: &[u8], out: &mut Outputs) -> bool {
        let Some(dest) = self
            .links
            .iter()
            .find(|l| l.id == id)
            .and_then(|l| l.remote)
        else {
            self.counters.drop_bad_path += 1;
            return false;
        };
        let mut bytes =
            Vec::with_capacity(plaintext.len() + crate::crypto::packet::TRANSPORT_MIN_LEN);
        if let Err(e) = self.sessions.encrypt(plaintext, &mut bytes, now) {
            match e {
                CryptoError::TooLarge => self.counters.drop_too_large += 1,
                _ => self.counters.drop_no_session += 1,
            }
            return false;
        }
        let len = bytes.len();
        if !out.push(Output::Transmit(Transmit {
            path: Some(id),
            dest,
            bytes,
        })) {
            return false;
        }
        self.counters.tx_datagrams += 1;
        self.counters.tx_bytes += len as u64;
        if let Some(l) = self.link_mut(id) {
            l.on_tx(len);
        }
        true
    }

    /// Schedules and sends one inner packet.
    pub(crate) fn send_packet(&mut self, now: Instant, packet: &[u8], out: &mut Outputs) {
        if packet.is_empty() || packet.len() > self.cfg.inner_mtu as usize {
            self.counters.drop_too_large += 1;
            return;
        }
        if self.role == Role::Client && ipv4_destination(packet).is_none() {
            // The server would drop it: save the path the trouble.
            self.counters.drop_not_ipv4 += 1;
            return;
        }
        if self.sessions.current().is_none() {
            self.counters.drop_no_session += 1;
            return;
        }
        let retransmit =
            tcp_segment(packet).is_some_and(|(key, seq, len)| self.retx.observe(key, seq, len));
        let info = PacketInfo {
            len: (packet.len() + super::OUTER_OVERHEAD) as u32,
            retransmit,
        };
        let class = self.redundancy.classify(now, packet, info.len as usize);
        let tx = match self.sender.send_paced(now, &info) {
            SendOutcome::Transmit(tx) => tx,
            SendOutcome::Queued { seq, path } => {
                self.paced.insert(seq, (path, packet.to_vec()));
                self.send_copies(now, seq, path, class, retransmit, packet, out);
                self.release_paced(now, out);
                return;
            }
            // Counted in the sender's stats (`pacing_drops`).
            SendOutcome::Dropped => return,
            SendOutcome::NoPath => {
                self.counters.drop_no_path += 1;
                return;
            }
        };
        let (seq, path) = (tx.seq, tx.path);
        self.emit_data(now, tx, packet, out);
        self.send_copies(now, seq, path, class, retransmit, packet, out);
    }

    /// The redundant mode: sends copies of packet `seq` (scheduled on
    /// `path`) on other paths if its flow class, its being a
    /// retransmission, or a spike of `path` calls for them (see
    /// [`crate::redundancy`]).
    #[allow(clippy::too_many_arguments)]
    fn send_copies(
        &mut self,
        now: Instant,
        seq: u64,
        path: PathId,
        class: Option<FlowClass>,
        retransmit: bool,
        packet: &[u8],
        out: &mut Outputs,
    ) {
        let cfg = self.redundancy.config();
        if !cfg.enabled {
            return;
        }
        let spiking = cfg.on_spike
            && self.sender.path(path).is_some_and(|p| {
                redundancy::path_spiking(cfg, p, self.sender.oldest_in_flight_sent(path), now)
            });
        let wire_len = packet.len() + super::OUTER_OVERHEAD;
        if self
            .redundancy
            .decide(now, class, retransmit, spiking, wire_len)
            .is_none()
        {
            return;
        }
        let extra = self.redundancy.extra_copies();
        for tx in self.sender.duplicate(now, seq, extra) {
            self.counters.redundant_copies += 1;
            self.counters.redundant_bytes += wire_len as u64;
            self.emit_data(now, tx, packet, out);
        }
    }

    /// Sends the paced packets that are due.
    fn release_paced(&mut self, now: Instant, out: &mut Outputs) {
        while let Some(tx) = self.sender.poll_transmit(now) {
            if let Some((_, packet)) = self.paced.remove(&tx.seq) {
                self.emit_data(now, tx, &packet, out);
            }
        }
    }

    /// Puts the data header in front of an inner packet and sends it.
    fn emit_data(
        &mut self,
        now: Instant,
        tx: crate::sender::Transmit,
        packet: &[u8],
        out: &mut Outputs,
    ) {
        let mut plain = std::mem::take(&mut self.plain);
        plain.clear();
        plain.resize(DataHeader::LEN, 0);
        let ok = tx.header.emit(&mut plain).is_ok();
        plain.extend_from_slice(packet);
        if ok && self.transmit(now, tx.path, &plain, out) {
            self.counters.packets_sent += 1;
            if let Some(r) = self.rpc.as_mut() {
                r.on_data_sent(now, packet, tx.path);
            }
        }
        let first_copy = !tx.header.flags.has(crate::wire::DataFlags::REPAIR);
        if first_copy {
            self.retained.insert(now, tx.seq, packet);
        }
        self.plain = plain;
        if first_copy {
            self.fec_on_sent(now, tx.seq, packet, out);
        }
    }

    /// Sends a keepalive on path `id`.
    fn send_keepalive(&mut self, now: Instant, id: PathId, out: &mut Outputs) {
        let Some(l) = self.link_mut(id) else { return };
        let ka = Keepalive {
            path: id,
            id: l.next_keepalive_id,
            tx_time_ns: now.as_nanos(),
        };
        l.next_keepalive_id = l.next_keepalive_id.wrapping_add(1);
        l.last_keepalive_tx = Some(now);
        if l.last_rx.is_none() {
            // Never heard from: its round trip is at least the time since.
            self.sender.set_path_silent_since(id, Some(now));
        }
        let mut b = [0u8; Keepalive::LEN];
        if ka.emit(false, &mut b).is_ok() {
            self.transmit(now, id, &b, out);
        }
    }

    /// Client: a keepalive on every path now (after a handshake, to confirm
    /// the session and announce every path to the server), with the path's
    /// name if it has one (`Control::PATH_NAME`, on the same path: a frame
    /// lost with it is sent again at the next handshake).
    pub(crate) fn keepalive_all(&mut self, now: Instant, out: &mut Outputs) {
        let ids: Vec<(PathId, Option<String>)> =
            self.links.iter().map(|l| (l.id, l.name.clone())).collect();
        for (id, name) in ids {
            self.send_keepalive(now, id, out);
            if let Some(name) = name {
                let mut body = vec![id.0];
                body.extend_from_slice(name.as_bytes());
                let c = Control {
                    kind: Control::PATH_NAME,
                    body: &body,
                };
                let mut b = vec![0u8; c.buffer_len()];
                if c.emit(&mut b).is_ok() {
                    self.transmit(now, id, &b, out);
                }
            }
        }
    }

    /// Client: names path `id` (told to the server after each handshake).
    pub(crate) fn set_link_name(&mut self, id: PathId, name: &str) {
        if let Some(l) = self.link_mut(id) {
            l.name = Some(path_name(name.as_bytes()));
        }
    }

    /// Sends a control message on every path that is up (all paths if none
    /// is, for a goodbye; none for a path notice).
    pub(crate) fn send_control(&mut self, now: Instant, kind: u8, body: &[u8], out: &mut Outputs) {
        let up: Vec<PathId> = self.links.iter().filter(|l| l.up).map(|l| l.id).collect();
        let ids = if up.is_empty() && kind == Control::CLOSE {
            self.links.iter().map(|l| l.id).collect()
        } else {
            up
        };
        let c = Control { kind, body };
        let mut b = vec![0u8; c.buffer_len()];
        if c.emit(&mut b).is_err() {
            return;
        }
        for id in ids {
            self.transmit(now, id, &b, out);
        }
    }

    /// Runs due timers: sender loss detection, resequencer, session expiry,
    /// path liveness, client keepalives; then flushes.
    pub(crate) fn handle_timeout(&mut self, now: Instant, out: &mut Outputs) {
        self.sender.handle_timeout(now);
        self.send_repairs(now, out);
        self.release_paced(now, out);
        self.fec_poll(now, out);
        self.receiver.handle_timeout(now);
        if let Some(r) = self.rpc.as_mut() {
            r.handle_timeout(now);
        }
        self.rpc_output(out);
        self.sessions.handle_timeout(now);
        let (timeout, iv) = (self.cfg.path_timeout, self.cfg.keepalive_interval);
        let dead: Vec<PathId> = self
            .links
            .iter()
            .filter(|l| {
                l.down_at(l.silence_limit(timeout, iv))
                    .is_some_and(|t| now >= t)
            })
            .map(|l| l.id)
            .collect();
        for id in dead {
            self.path_down(now, id, out);
        }
        if self.role == Role::Client && self.sessions.current().is_some() {
            let iv = self.cfg.keepalive_interval;
            let due: Vec<PathId> = self
                .links
                .iter()
                .filter(|l| l.keepalive_at(iv).is_some_and(|t| now >= t))
                .map(|l| l.id)
                .collect();
            for id in due {
                self.send_keepalive(now, id, out);
            }
        }
        self.flush(now, out);
    }

    /// When `handle_timeout` next has work.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let timeout = self.cfg.path_timeout;
        let mut t = [
            self.sender.poll_timeout(),
            self.receiver.poll_timeout(),
            self.sessions.poll_timeout(),
            self.fec_poll_timeout(),
            self.rpc.as_ref().and_then(|r| r.poll_timeout()),
        ]
        .into_iter()
        .flatten()
        .min();
        let mut take = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y| y.min(x)));
            }
        };
        for l in &self.links {
            take(l.down_at(l.silence_limit(timeout, self.cfg.keepalive_interval)));
            if self.role == Role::Client && self.sessions.current().is_some() {
                take(l.keepalive_at(self.cfg.keepalive_interval));
            }
        }
        t
    }

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
