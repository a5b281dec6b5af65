//! One tunnel between a client and the server, as either side holds it:
//! the sessions, this side's [`Sender`] (uplink on the client, downlink on
//! the server), its [`Receiver`] for the other direction, and the paths.
//!
//! Receive pipeline ([`Tunnel::handle_transport`], in `receive`):
//! 1. decrypt with [`PeerSessions`] (replay window, authentication);
//! 2. decode the frame ([`wire::decode`]);
//! 3. path liveness: the path the datagram came on is alive;
//! 4. dispatch: data to the receiver, feedback to the sender, keepalives
//!    echoed, control returned to the caller;
//! 5. flush: due feedback frames out, in-order inner packets up.
//!
//! Send pipeline ([`Tunnel::send_packet`], here): size check,
//! retransmission detection (for PET's packet pairs), scheduling (the
//! sender keeps a paced packet until it is due), data header, encryption.
//!
//! The paths and their liveness are in `links`, what goes back and up
//! after each event (repairs, NACKs, feedback, delivery) in `reports`,
//! FEC in `fec`, and the status report in `status`.
//!
//! The client-or-server differences are few and explicit in [`Role`].

mod fec;
mod links;
mod rate_probe;
mod receive;
mod reports;
mod skips;
mod startup;
mod status;
#[cfg(test)]
mod tests;

use std::net::{Ipv4Addr, SocketAddr};

use super::ip::{ipv4_destination, ipv4_source};
use super::link::PathLink;
use super::{ConnConfig, Counters, Event, Output, Outputs, PathStatus, Transmit, TunnelStatus};
use crate::compress::{self, Compressor, Decompressor, Form};
use crate::crypto::{CryptoError, PeerSessions, PublicKey, Session};
use crate::flow::{tcp_segment, RetransmitDetector};
use crate::path::{PathId, PathParams};
use crate::receiver::Receiver;
use crate::redundancy::{self, FlowClass, Policy};
use crate::repair::{RepairMode, Retained};
use crate::rpc::tcp::TcpRpc;
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
    /// Owns the inner packets waiting in its pacing queues.
    sender: Sender<Vec<u8>>,
    receiver: Receiver<Vec<u8>>,
    retx: RetransmitDetector,
    /// At most [`crate::path::MAX_PATHS`], ids below it.
    links: Vec<PathLink>,
    /// Server: released inner packets must come from this address.
    source_filter: Option<Ipv4Addr>,
    pub counters: Counters,
    /// Last authenticated datagram on any path.
    pub last_rx: Option<Instant>,
    /// Scratch plaintext and feedback buffers.
    plain: Vec<u8>,
    fb: Vec<u8>,
    /// Inner packets sent, kept for repair until acknowledged or too old.
    retained: Retained,
    /// The redundant mode's choice of packets to copy.
    redundancy: Policy,
    /// FEC encoder and decoder (see [`fec`]).
    fec: fec::TunnelFec,
    /// PRISM's reverse-path ACK controller (`reorder = "prism-rpc"`).
    rpc: Option<TcpRpc>,
    /// When an inner packet was last sent or delivered, or a path came
    /// up: rate probes go only after a quiet spell from then
    /// (`rate_probe`).
    quiet_from: Option<Instant>,
    /// The client's startup hold and the server's probe window (`startup`).
    startup: startup::StartupHold,
    /// Given-up losses waiting to be announced together (`skips`).
    skips: skips::SkipNotices,
    /// Header contexts of what this side sends, and of what it receives
    /// ([`crate::compress`]).
    compressor: Compressor,
    decompressor: Decompressor,
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
            sender: Sender::new(
                sender_config(cfg),
                cfg.scheduler.build_with(cfg.pet.clone()),
            ),
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
            retained: retained(cfg),
            redundancy: Policy::new(cfg.redundancy.clone()),
            fec: fec::TunnelFec::new(cfg),
            rpc: cfg.rpc.clone().map(TcpRpc::new),
            quiet_from: None,
            startup: startup::StartupHold::default(),
            skips: skips::SkipNotices::default(),
            compressor: Compressor::default(),
            decompressor: Decompressor::default(),
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
        self.sender = Sender::new(
            sender_config(&self.cfg),
            self.cfg.scheduler.build_with(self.cfg.pet.clone()),
        );
        self.receiver = Receiver::new(receiver_config(&self.cfg));
        self.retx = RetransmitDetector::new(RETX_SLOTS);
        self.retained = retained(&self.cfg);
        self.redundancy = Policy::new(self.cfg.redundancy.clone());
        self.fec = fec::TunnelFec::new(&self.cfg);
        // The peer's contexts are gone with its state.
        self.compressor = Compressor::default();
        self.decompressor = Decompressor::default();
        // `rpc` is kept: it follows the inner connections, which outlive
        // the tunnel's sequence numbers.
        for l in &self.links {
            self.sender.add_path(l.id, PathParams::default());
            self.sender.set_usable(l.id, l.up);
            if l.up {
                self.receiver.add_path(now, l.id);
            }
        }
        self.sync_hold_floor();
    }

    /// Gives the resequencer its least hold ([`Receiver::set_hold_floor`])
    /// from the sender's [`Sender::hold_floor`]. Called where that floor's
    /// inputs change: a round trip measured (feedback, a keepalive's echo),
    /// a one-way delay measured (the peer's keepalive), a path added,
    /// removed, up or down, the data plane restarted. Not per data packet:
    /// the wait scans every path, and between those events it is the same.
    pub(super) fn sync_hold_floor(&mut self) {
        self.receiver.set_hold_floor(self.sender.hold_floor());
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
        let segment = tcp_segment(packet);
        let mut info = PacketInfo {
            len: self.wire_len(packet) as u32,
            retransmit: false,
            stream: segment.is_some_and(|(_, _, len)| len > 0),
        };
        if self.startup_keep(now, packet, &info, out) {
            return;
        }
        self.quiet_from = Some(now);
        // Only once it goes: a held packet observed twice would count as
        // its own retransmission.
        info.retransmit = segment.is_some_and(|(key, seq, len)| self.retx.observe(key, seq, len));
        let class = self.redundancy.classify(now, packet, info.len as usize);
        let tx = match self.sender.send_paced(now, &info, || packet.to_vec()) {
            SendOutcome::Transmit(tx) => tx,
            SendOutcome::Queued { seq, path } => {
                self.send_copies(now, seq, path, class, info.retransmit, packet, out);
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
        self.send_copies(now, seq, path, class, info.retransmit, packet, out);
    }

    /// The redundant mode: sends copies of packet `seq` (scheduled on
    /// `path`) on other paths if its flow class, its being a
    /// retransmission, or a spike of `path` calls for them (see
    /// [`crate::redundancy`]). Returns how many it sent.
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
    ) -> usize {
        let cfg = self.redundancy.config();
        if !cfg.enabled {
            return 0;
        }
        let spiking = cfg.on_spike
            && self.sender.path(path).is_some_and(|p| {
                redundancy::path_spiking(cfg, p, self.sender.oldest_in_flight_sent(path), now)
            });
        let wire_len = self.wire_len(packet);
        if self
            .redundancy
            .decide(now, class, retransmit, spiking, wire_len)
            .is_none()
        {
            return 0;
        }
        let extra = self.redundancy.extra_copies();
        let copies = self.sender.duplicate(now, seq, extra);
        for &tx in &copies {
            self.counters.redundant_copies += 1;
            self.counters.redundant_bytes += wire_len as u64;
            self.emit_data(now, tx, packet, out);
        }
        copies.len()
    }

    /// Sends the paced packets that are due.
    fn release_paced(&mut self, now: Instant, out: &mut Outputs) {
        while let Some((tx, packet)) = self.sender.poll_transmit(now) {
            self.emit_data(now, tx, &packet, out);
        }
    }

    /// Bytes `packet` takes on a path: itself and the tunnel's overhead,
    /// less what header compression saves on it
    /// ([`Compressor::saving`]). The sender's byte counts (rate samples,
    /// queue lengths) are then the paths' own.
    fn wire_len(&self, packet: &[u8]) -> usize {
        let saving = if self.cfg.compress_headers {
            compress::header::split(packet).map_or(0, |s| self.compressor.saving(&s))
        } else {
            0
        };
        packet.len() + super::OUTER_OVERHEAD - saving
    }

    /// Puts the data header in front of an inner packet, compressing its
    /// headers where it can, and sends it.
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
        let mut header = tx.header;
        let split = self
            .cfg
            .compress_headers
            .then(|| compress::header::split(packet))
            .flatten();
        let form = split.map_or(Form::Plain, |s| self.compressor.choose(now, &s.key, tx.seq));
        match (split, form.flag()) {
            (Some(s), Some(flag)) => {
                header.flags.0 |= flag;
                compress::emit(form, &s, &mut plain);
            }
            _ => plain.extend_from_slice(packet),
        }
        let ok = header.emit(&mut plain).is_ok();
        if ok && self.transmit(now, tx.path, &plain, out) {
            if form != Form::Plain {
                self.counters.headers_compressed += 1;
                self.counters.header_installs += u64::from(matches!(form, Form::Install(_)));
            }
            if !rate_probe::is_filler(packet) {
                self.counters.packets_sent += 1;
            }
            if let Some(r) = self.rpc.as_mut() {
                r.on_data_sent(now, packet, tx.path);
            }
        }
        // The first time this number is on the wire: an original, or a
        // packet the sender moved out of a pacing queue before it left
        // (`sender/requeue.rs`), which goes as a copy.
        let first_copy = !tx.header.flags.has(crate::wire::DataFlags::REPAIR)
            || self.retained.get(tx.seq).is_none();
        if first_copy {
            self.retained.insert(now, tx.seq, packet);
        }
        self.plain = plain;
        if first_copy {
            self.fec_on_sent(now, tx.seq, packet, out);
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
            self.path_down(now, id, links::DownCause::Silent, out);
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
        self.send_rate_probes(now, out);
        self.flush(now, out);
        self.startup_poll(now, out);
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
        take(self.rate_probe_timeout());
        take(self.startup_deadline());
        take(self.startup_wake_at());
        take(self.skips.deadline());
        for l in &self.links {
            take(l.down_at(l.silence_limit(timeout, self.cfg.keepalive_interval)));
            if self.role == Role::Client && self.sessions.current().is_some() {
                take(l.keepalive_at(self.cfg.keepalive_interval));
            }
        }
        t
    }
}
