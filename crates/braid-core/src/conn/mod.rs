//! The tunnel connection: handshake, encrypted transport, both directions
//! of striping (a [`Sender`] and a [`Receiver`] per side), path liveness
//! and control messages, sans-IO.
//!
//! PET/BMP Section II: the client (MH) reaches the internet through a
//! proxy over several paths; downlink packets are scheduled at the proxy
//! and resequenced at the client, uplink packets the other way round.
//! Here the proxy is the [`Server`] (one per host, many clients) and the
//! client is a [`Connection`].
//!
//! # Driving it
//!
//! As quinn-proto: inputs are `handle_*`, outputs are pulled with `poll_*`,
//! every call takes `now`. After any `handle_*`/`send_packet` call, drain
//! [`Connection::poll_output`] (it returns owned [`Output`]s: datagrams to
//! send, inner packets to deliver to the TUN device, events), then sleep
//! until [`Connection::poll_timeout`] and call `handle_timeout`. Extra
//! `handle_timeout` calls are no-ops.
//!
//! ```text
//! client daemon                                  server daemon
//! Connection::client(..) -> Transmit(init) x paths --> Server::handle_datagram
//!                                                     Transmit(response) <--
//! handle_datagram(path, ..) -> Event(Established{tunnel address})
//!   -> Transmit(keepalive) on every path ------------> Event(PeerConnected), PathUp
//! TUN -> send_packet -> Transmit(data, path chosen by the scheduler)
//!                                           ---------> Deliver(inner) -> TUN
//!                                  Transmit(feedback) <-- (batched)
//! ```
//!
//! # Packets
//!
//! Every datagram is one crypto packet ([`crate::crypto::packet`]): a
//! handshake message or a transport packet whose plaintext is one frame of
//! [`crate::wire`]. Data frames carry the tunnel sequence number; the
//! receiver reports each arrival in a feedback frame on the same path
//! (batched: up to `feedback_max_entries` entries or `feedback_max_delay`).
//!
//! # MTU
//!
//! An inner packet of `n` bytes becomes a UDP payload of
//! `9 (transport header) + 9 (data header) + n + 16 (AEAD tag)` bytes, so
//! with IPv4 (20) and UDP (8) outer headers an outer packet is `n + 62`
//! bytes. Inner packets up to [`DEFAULT_INNER_MTU`] = 1500 - 62 = 1438
//! bytes fill a 1500-byte path MTU without fragmentation.
//!
//! # Path liveness
//!
//! A path is *up* once an authenticated datagram arrived on it, and *down*
//! when nothing authenticated arrived for `path_timeout` (default 600 ms):
//! its sender stops scheduling on it (`Sender::set_usable(false)`) and the
//! resequencer stops waiting for it (`Receiver::remove_path`). The client
//! sends a keepalive on a path when nothing arrived on it for
//! `keepalive_interval` (default 200 ms), and keeps doing so while the path
//! is down; the server echoes keepalives. The first authenticated datagram
//! on a down path brings it back up. Traffic in either direction keeps a
//! path alive on both sides because every data frame is answered by
//! feedback on the same path. A client that takes a path out tells the
//! server (`Control::PATH_DOWN`), which takes it out too; for a path that
//! went silent, only if nothing arrived on it within `keepalive_interval`
//! (an outage that has ended: `Tunnel::peer_path_silent`).
//!
//! # Sessions and state resets
//!
//! The client starts a new handshake when [`PeerSessions::needs_rekey`]
//! says so (and retries every `handshake_timeout` while unanswered, sooner
//! when the session in hand would expire first: see
//! `Connection::retry_wait`); the
//! new session replaces the old one without disturbing the tunnel sequence
//! numbers. The handshake payloads carry a client connection id and a
//! server epoch: if the client restarted (new connection id) the server
//! resets its per-client state, and if the server restarted (new epoch) the
//! client resets its own, so both start numbering from zero again.
//!
//! # Failure handling
//!
//! Unauthenticated, malformed, replayed or unroutable datagrams are
//! dropped silently and counted in [`Counters`]; nothing here panics on
//! input. The server lets a client send only inner IPv4 packets whose
//! source is the address the server assigned to it.
//!
//! [`Sender`]: crate::sender::Sender
//! [`Receiver`]: crate::receiver::Receiver
//! [`PeerSessions::needs_rekey`]: crate::crypto::PeerSessions::needs_rekey

mod client;
mod endpoint;
mod hello;
mod ip;
mod link;
mod pool;
pub mod ratelimit;
mod server;
mod tunnel;

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};

pub use client::{Connection, PathError};
pub use endpoint::Endpoint;
pub use hello::{ClientHello, HelloError, ServerHello, HELLO_VERSION};
pub use pool::{Ipv4Net, PoolError};
pub use server::{ClientEntry, IntakeDrops, RejectReason, Rejection, Server, ServerConfig};

use crate::crypto::{PublicKey, SessionLimits};
use crate::path::PathId;
use crate::receiver::ReceiverConfig;
use crate::redundancy::RedundancyConfig;
use crate::reorder::ReorderStats;
use crate::repair::RepairMode;
use crate::sched::SchedulerKind;
use crate::sender::{SenderConfig, SenderStats};
use crate::time::Duration;

/// Bytes one inner packet adds on the path: transport header (9), data
/// header (9), AEAD tag (16), UDP (8) and IPv4 (20) headers.
pub const OUTER_OVERHEAD: usize = crate::crypto::packet::TRANSPORT_HEADER_LEN
    + crate::wire::DataHeader::LEN
    + crate::crypto::packet::TAG_LEN
    + 8
    + 20;
/// The largest inner packet that keeps outer packets within a 1500-byte
/// path MTU: 1500 - [`OUTER_OVERHEAD`].
pub const DEFAULT_INNER_MTU: u16 = 1500 - OUTER_OVERHEAD as u16;
/// Default bound on outputs waiting for `poll_output`.
pub const DEFAULT_MAX_OUTPUTS: usize = 16_384;

/// Tuning shared by client and server.
#[derive(Clone, Debug)]
pub struct ConnConfig {
    /// Which scheduler places this side's outgoing packets.
    pub scheduler: SchedulerKind,
    /// PET's tuning, when `scheduler` is PET (the daemon's
    /// `tuning.near_paths_wait` sets `near_floor`).
    pub pet: crate::sched::PetConfig,
    pub sender: SenderConfig,
    pub receiver: ReceiverConfig,
    /// The client sends a keepalive on a path after this long without
    /// receiving anything on it.
    pub keepalive_interval: Duration,
    /// A path with nothing received for this long is taken out of use.
    pub path_timeout: Duration,
    /// The client resends its handshake initiation after this long without
    /// a response.
    pub handshake_timeout: Duration,
    /// Largest inner packet accepted by `send_packet` (see the module doc).
    pub inner_mtu: u16,
    /// Rekey and expiry limits of the sessions (tests shrink them).
    pub session_limits: SessionLimits,
    /// Bound on outputs waiting to be polled; beyond it outputs are dropped
    /// and counted (`Counters::drop_output_overflow`).
    pub max_outputs: usize,
    /// Overrides `receiver.reorder.timer_from_first_seen` in the tunnel
    /// (see there): the resequencer's loss timer runs from when a gap is
    /// first seen. A separate field so that a configuration which builds its
    /// own `ReorderConfig` (the daemon's `[tuning]`) still gets it; the
    /// simulator, which uses the resequencer directly, keeps the paper's
    /// head-of-line timer.
    pub reorder_timer_from_first_seen: bool,
    /// Overrides `sender.pacing` in the tunnel (see `SenderConfig::pacing`):
    /// each path is paced at slightly below its estimated rate from a
    /// queue in the tunnel, where EDPF knows its length exactly, instead
    /// of relying on bottleneck buffers too short for the paths' delay
    /// differences. A separate field for the same reason as the one above;
    /// the simulator keeps the paper's unpaced sender.
    pub pacing: bool,
    /// Repair of path losses inside the tunnel (see [`crate::repair`]):
    /// overrides `sender.repair.mode`, and with anything but `Off` makes
    /// the receiver report losses at once (NACKs) and hold gaps for their
    /// repair. Both ends should agree: a receiver that holds gaps for
    /// repairs a peer never sends delays each loss by its hold time.
    pub repair: RepairMode,
    /// Settings of FEC repair (modes `fec` and `auto`).
    pub fec: crate::repair::FecConfig,
    /// Payload bytes of sent packets kept for repair (the memory bound of
    /// ARQ); the age bound is `sender.repair.max_age`.
    pub repair_retain_bytes: usize,
    /// Overrides `receiver.reorder.adaptive_hold`: the resequencer's loss
    /// timer follows the measured time gaps take to fill (paths' delay
    /// spread plus repair), within `min_hold`..`max_hold`, instead of a
    /// fixed 0.5 s.
    pub reorder_adaptive_hold: bool,
    /// Pure TCP ACKs are handed up at once while the resequencer waits
    /// for the repair of a detected loss, instead of waiting behind it
    /// (`Resequencer::handle_unordered`: a later cumulative ACK carries
    /// all an earlier one says). On by default; off only to measure what
    /// it does.
    pub acks_unordered: bool,
    /// Rate probe pairs of filler a path gets, each time it comes up,
    /// while it has no rate estimate: while the tunnel is idle, or once
    /// it has been up that long unmeasured while the tunnel is busy, with
    /// a notice to the receiver not to wait for them
    /// (`tunnel::rate_probe`); 0 disables. Two: one pair may give no
    /// sample (PET's `initial_pairs` is two for the same reason).
    pub rate_probe_pairs: u32,
    /// Client, PET: on a tunnel that has carried nothing yet, the first
    /// inner packets wait at most this long for every configured path to
    /// be up and measured, so that PET places the first flight by the
    /// paths' rates (`tunnel::startup`); zero disables. Each also waits
    /// no longer than the inner TCP's first timeout allows (0.9 s less
    /// the round trip it will see), which is shorter for TCP.
    pub startup_hold: Duration,
    /// The redundant mode (see [`crate::redundancy`]): which packets get
    /// copies on a second path. Off by default.
    pub redundancy: RedundancyConfig,
    /// PRISM's reverse-path ACK controller (`reorder = "prism-rpc"`,
    /// [`crate::rpc::tcp`]): the inner TCP ACKs coming back for the data
    /// this side striped are held and rewritten instead of the peer
    /// resequencing the data. `None` (the default): ACKs pass as they
    /// come. Both ends should set it together with the receiver's
    /// `ReorderMode::Off`, as the daemon's `reorder = "prism-rpc"` does:
    /// a peer that still resequences leaves the controller nothing to do.
    pub rpc: Option<crate::rpc::RpcConfig>,
    /// Inner IPv4/TCP headers go compressed ([`crate::compress`]): 26
    /// bytes instead of 52 for a segment with timestamps. On by default;
    /// a receiver rebuilds compressed frames whatever its own setting.
    pub compress_headers: bool,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            scheduler: SchedulerKind::Pet,
            pet: crate::sched::PetConfig::default(),
            sender: SenderConfig::default(),
            // Feedback travels the reverse direction, which may be busy
            // too: in an upload the client reports each downlink TCP ACK,
            // and with a 1 ms bound (about one entry per frame) those
            // reports took 1.8 % of the uplink in the lab's two-equal
            // scenario. 10 ms puts about 8 entries in a frame; the sender
            // needs the receive times, which entries carry exactly, more
            // than it needs them early (RTT samples grow by up to 10 ms).
            // Reports of small packets only (ACKs) wait up to 40 ms or 32
            // entries: about 25 frames a second for a 10 Mbit/s download.
            // The feedback RTT of a direction that carries only ACKs is
            // then up to 40 ms high; `status()` shows the keepalive round
            // trip instead while the path is idle (see `PathStatus::srtt`).
            receiver: ReceiverConfig {
                feedback_max_entries: 32,
                feedback_max_delay: Duration::from_millis(10),
                feedback_max_delay_small: Duration::from_millis(40),
                ..ReceiverConfig::default()
            },
            keepalive_interval: Duration::from_millis(200),
            path_timeout: Duration::from_millis(600),
            handshake_timeout: crate::crypto::REKEY_TIMEOUT,
            inner_mtu: DEFAULT_INNER_MTU,
            session_limits: SessionLimits::default(),
            max_outputs: DEFAULT_MAX_OUTPUTS,
            reorder_timer_from_first_seen: true,
            pacing: true,
            // ARQ: it sends only what was lost. `auto` (FEC on far or
            // very lossy paths) is a choice, not the default: on
            // `lab/satellite.toml` (a 300 ms path with 0.5 % loss next to
            // a 15 ms one) its parity on the far path cost bulk TCP a
            // quarter of its goodput in simulation (0.62 of the sum
            // against 0.87 with ARQ), while the resequencer's adaptive
            // hold (up to 2 s) waits for an ARQ repair even there.
            repair: RepairMode::Arq,
            fec: crate::repair::FecConfig::default(),
            // About 2 s of a 30 Mbit/s bond.
            repair_retain_bytes: 8 << 20,
            reorder_adaptive_hold: true,
            acks_unordered: true,
            rate_probe_pairs: 2,
            startup_hold: Duration::from_secs(1),
            redundancy: RedundancyConfig::default(),
            rpc: None,
            compress_headers: true,
        }
    }
}

/// What the server assigns to a client, carried in handshake message 2.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TunnelParams {
    /// The client's inner (tunnel) IPv4 address.
    pub address: Ipv4Addr,
    /// Prefix length of the tunnel network.
    pub prefix_len: u8,
    /// The server's address on the tunnel network.
    pub gateway: Ipv4Addr,
    /// The server's inner MTU; the client uses the smaller of this and its own.
    pub mtu: u16,
}

/// One datagram to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// The path to send it on: always `Some` on the client (send it from
    /// that path's socket); on the server the path the datagram belongs
    /// to, `None` for handshake responses (the server has one socket).
    pub path: Option<PathId>,
    /// Where to send it.
    pub dest: SocketAddr,
    /// The UDP payload.
    pub bytes: Vec<u8>,
}

/// Something that happened, for logs and for the daemon to act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Client: a session with the server exists and the tunnel has these
    /// parameters. Emitted on the first handshake and again whenever the
    /// server's state was reset (it restarted) or the parameters changed;
    /// not on a plain rekey.
    Established { params: TunnelParams },
    /// Server: a client completed a handshake with new state (first
    /// connection or client restart).
    PeerConnected { peer: PublicKey, address: Ipv4Addr },
    /// Server: a client's state was dropped (it said goodbye or went idle).
    PeerDisconnected { peer: PublicKey, address: Ipv4Addr },
    /// A path started carrying traffic (or came back). `peer` is the client
    /// on the server, `None` on the client.
    PathUp {
        peer: Option<PublicKey>,
        path: PathId,
    },
    /// A path went silent and was taken out of use.
    PathDown {
        peer: Option<PublicKey>,
        path: PathId,
    },
}

/// What `poll_output` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Send a datagram.
    Transmit(Transmit),
    /// Hand an inner IP packet to the TUN device, in tunnel order.
    Deliver(Vec<u8>),
    /// Report an event.
    Event(Event),
}

/// Traffic and drop counters. Drops are silent on the wire; these are how
/// an operator sees them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams handed to `handle_datagram`, and their bytes.
    pub rx_datagrams: u64,
    pub rx_bytes: u64,
    /// Datagrams produced for sending, and their bytes.
    pub tx_datagrams: u64,
    pub tx_bytes: u64,
    /// Inner packets accepted by `send_packet`.
    pub packets_sent: u64,
    /// Inner packets delivered (`Output::Deliver`).
    pub packets_delivered: u64,
    /// Filler packets sent in rate probe pairs on paths without a rate
    /// estimate, while the tunnel was idle (`conn::tunnel::rate_probe`).
    pub rate_probes_sent: u64,
    /// The peer's filler packets received and dropped.
    pub rate_probe_fillers: u64,
    /// Client: inner packets held at the tunnel's start until every path
    /// was measured (`tunnel::startup`), then sent.
    pub startup_held: u64,
    /// Handshakes completed (client: responses accepted; server: inits
    /// accepted).
    pub handshakes: u64,
    /// FEC parity frames sent, and their plaintext bytes.
    pub fec_parity_sent: u64,
    pub fec_parity_bytes: u64,
    /// Of the parity frames sent, those sent for a reported loss (eq 10).
    pub fec_parity_reactive: u64,
    /// FEC parity frames received, and inner packets rebuilt from them.
    pub fec_parity_received: u64,
    pub fec_rebuilt: u64,
    /// Not a braid packet: unknown type byte or too short.
    pub drop_malformed: u64,
    /// Transport packet for a session this side does not hold.
    pub drop_unknown_index: u64,
    /// Transport packet that failed authentication.
    pub drop_auth_failed: u64,
    /// Replayed or stale transport packet.
    pub drop_replay: u64,
    /// Transport packet on an expired session.
    pub drop_expired: u64,
    /// Authenticated plaintext that is no valid frame.
    pub drop_bad_frame: u64,
    /// Frame naming a path this side cannot track (id >= `MAX_PATHS`, or a
    /// path the client does not have).
    pub drop_bad_path: u64,
    /// Handshake message that failed after its MAC1 checked out (Noise
    /// decryption, a bad hello payload, a response for no handshake in
    /// flight, an index collision): a real failure worth a look.
    pub handshake_failed: u64,
    /// Handshake initiation with a wrong MAC1, or too short or long to be
    /// one: its sender does not know the server's public key. Noise from
    /// scanners, costs one hash.
    pub handshake_bad_mac: u64,
    /// Server: cookie replies sent (under load, to initiations without a
    /// valid MAC2). Client: cookie replies accepted.
    pub handshake_cookie: u64,
    /// Server: initiations with a valid MAC2 dropped under load by the
    /// per-source-address rate limit.
    pub handshake_rate_limited: u64,
    /// Handshake initiation from a key that is not allowed.
    pub handshake_unknown_client: u64,
    /// Replayed or flooding handshake initiation.
    pub handshake_replay: u64,
    /// Server: inner IPv4 packet from a client with a source address that
    /// is not the one assigned to it.
    pub drop_spoofed: u64,
    /// Inner packet that is not IPv4 (the tunnel carries IPv4 only; e.g.
    /// the kernel's IPv6 link-local chatter on the TUN device).
    pub drop_not_ipv4: u64,
    /// Server: inner packet for an address no connected client has.
    pub drop_no_route: u64,
    /// Inner packet offered with no session to send it on.
    pub drop_no_session: u64,
    /// Inner packet offered while no path is usable.
    pub drop_no_path: u64,
    /// Inner packet larger than `inner_mtu`, or empty.
    pub drop_too_large: u64,
    /// Output dropped because `poll_output` was not drained.
    pub drop_output_overflow: u64,
    /// Datagrams the daemon dropped before the core saw them (set by the
    /// daemon, see `Server::set_intake_drops`): handshake initiations that
    /// found the bounded handshake queue full.
    pub drop_handshake_queue: u64,
    /// Datagrams that waited in the daemon's queue longer than its time
    /// bound (overload).
    pub drop_stale: u64,
    /// Datagrams the kernel dropped because the socket's receive queue was
    /// full (`SO_RXQ_OVFL`).
    pub drop_kernel_rxq: u64,
    /// Server: datagrams the kernel dropped on the handshake socket (its
    /// small receive buffer full under a flood, or refused by its filter
    /// as no initiation by type and length).
    pub drop_kernel_handshake: u64,
    /// Client: datagrams from an address other than the server's on a
    /// path's socket (accepted only if they authenticate).
    pub stray_datagrams: u64,
    /// Redundant copies of inner packets sent on a second path (the
    /// redundant mode, [`crate::redundancy`]), and their bytes on the
    /// paths (inner packet plus [`OUTER_OVERHEAD`]): what redundancy cost.
    pub redundant_copies: u64,
    pub redundant_bytes: u64,
    /// Inner packets sent with compressed headers ([`crate::compress`]),
    /// and of those, installs of a header context.
    pub headers_compressed: u64,
    pub header_installs: u64,
    /// Data frames whose compressed headers did not rebuild (a context
    /// never installed, or a malformed header).
    pub drop_bad_header: u64,
}

/// Declares [`Counters::add`] and [`Counters::fields`] from one list of
/// the counters, so that neither can leave one out (the FEC counters were
/// once missing from both, and so from `braid status` and the metrics).
macro_rules! counter_methods {
    ($($f:ident),* $(,)?) => {
        impl Counters {
            /// Adds every counter of `other` to `self` (server totals).
            pub fn add(&mut self, other: &Counters) {
                $( self.$f += other.$f; )*
            }

            /// `(name, value)` of every counter, for metrics exporters.
            pub fn fields(&self) -> [(&'static str, u64); 45] {
                [$( (stringify!($f), self.$f) ),*]
            }
        }
    };
}

counter_methods!(
    rx_datagrams,
    rx_bytes,
    tx_datagrams,
    tx_bytes,
    packets_sent,
    packets_delivered,
    rate_probes_sent,
    rate_probe_fillers,
    startup_held,
    handshakes,
    fec_parity_sent,
    fec_parity_bytes,
    fec_parity_reactive,
    fec_parity_received,
    fec_rebuilt,
    drop_malformed,
    drop_unknown_index,
    drop_auth_failed,
    drop_replay,
    drop_expired,
    drop_bad_frame,
    drop_bad_path,
    handshake_failed,
    handshake_bad_mac,
    handshake_cookie,
    handshake_rate_limited,
    handshake_unknown_client,
    handshake_replay,
    drop_spoofed,
    drop_not_ipv4,
    drop_no_route,
    drop_no_session,
    drop_no_path,
    drop_too_large,
    drop_output_overflow,
    drop_handshake_queue,
    drop_stale,
    drop_kernel_rxq,
    drop_kernel_handshake,
    stray_datagrams,
    redundant_copies,
    redundant_bytes,
    headers_compressed,
    header_installs,
    drop_bad_header,
);

/// One path as `status()` reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct PathStatus {
    pub id: PathId,
    /// The client's name for the path (on the server: as the client told
    /// it, `None` from a client that does not).
    pub name: Option<String>,
    /// In use (something authenticated arrived within `path_timeout`).
    pub up: bool,
    /// The peer's address on this path, once known.
    pub remote: Option<SocketAddr>,
    /// Round-trip time: the latest keepalive round trip while keepalives
    /// flow (an idle path; echoed at once, so without the feedback batching
    /// delay), else the smoothed RTT from data feedback (which includes up
    /// to `feedback_max_delay` of batching at the receiver).
    pub srtt: Option<Duration>,
    pub min_rtt: Option<Duration>,
    /// Packet-pair bandwidth estimate of this side's sending direction.
    pub bandwidth_bps: Option<f64>,
    /// The rate the sender paces this path at (`SenderConfig::pacing`),
    /// or `None` while it is not paced (no full-size pair measured yet,
    /// or pacing off): then the path's backlog sits in its bottleneck.
    pub pacing_rate_bps: Option<f64>,
    /// Smoothed loss rate of this side's sending direction, in [0, 1].
    pub loss_rate: f64,
    /// Data packets this side sent on the path and declared lost.
    pub lost_packets: u64,
    /// Data packets awaiting feedback.
    pub in_flight_packets: u32,
    /// Datagrams (all kinds) sent and received on the path, and UDP
    /// payload bytes.
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Inner packets scheduled on this path and their bytes.
    pub data_tx_packets: u64,
    pub data_tx_bytes: u64,
    /// Inner packets that arrived on this path and their bytes.
    pub data_rx_packets: u64,
    pub data_rx_bytes: u64,
    /// Time since something authenticated arrived on the path.
    pub last_rx_ago: Option<Duration>,
    /// Inner packets that arrived on this path out of order and wait in
    /// the resequencer, and their bytes.
    pub reorder_buffered_packets: u64,
    pub reorder_buffered_bytes: u64,
    /// Repair (see [`crate::repair`]) of this side's sending direction:
    /// losses of this path repaired by ARQ, losses taken for congestion
    /// and left to the inner traffic, and repair copies the path carried.
    pub losses_repaired: u64,
    pub losses_congestion: u64,
    pub repairs_carried: u64,
    /// Redundant copies this path carried (the redundant mode) and their
    /// bytes on the path: what redundancy cost on it.
    pub copies_carried: u64,
    pub copy_bytes_carried: u64,
    /// The loss rate of this side's sending direction as the peer's
    /// receiver measured it (loss events per packet, from its NACKs).
    pub peer_loss_rate: f64,
    /// The loss rate of the peer's sending direction as this side's
    /// receiver measures it (loss events per packet), and the loss runs
    /// it detected.
    pub rx_loss_rate: f64,
    pub rx_loss_runs: u64,
}

/// One tunnel (the client's, or one client's on the server) for `status()`.
#[derive(Clone, Debug, PartialEq)]
pub struct TunnelStatus {
    /// A session exists that can send.
    pub established: bool,
    /// Age of the current session.
    pub session_age: Option<Duration>,
    /// Name of the scheduler of this side's sending direction.
    pub scheduler: &'static str,
    pub paths: Vec<PathStatus>,
    /// The resequencer of this side's receiving direction; its
    /// `buffered_packets`/`buffered_bytes` are the reorder-buffer occupancy.
    pub reorder: ReorderStats,
    pub sender: SenderStats,
    pub counters: Counters,
    /// The reverse-path ACK controller's counters, in `prism-rpc` mode.
    pub rpc: Option<crate::rpc::RpcStats>,
}

/// The client's `status()`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientStatus {
    /// What the server assigned, once a handshake completed.
    pub params: Option<TunnelParams>,
    /// A handshake is in progress (initial or rekey).
    pub handshaking: bool,
    /// The server answered with a hello of this other protocol version
    /// ([`HelloError::Version`]), so no session could be made; `None`
    /// once a handshake succeeds.
    pub server_version_refused: Option<u8>,
    pub tunnel: TunnelStatus,
}

/// One client as the server's `status()` reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerStatus {
    pub key: PublicKey,
    /// The name given in the configuration.
    pub name: String,
    pub address: Ipv4Addr,
    pub tunnel: TunnelStatus,
}

/// The server's `status()`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerStatus {
    /// Totals: drops before a datagram could be tied to a client, plus the
    /// counters of every client, connected or gone.
    pub counters: Counters,
    /// Connected clients, by key.
    pub peers: Vec<PeerStatus>,
}

/// The bounded output queue shared by a side's tunnels.
#[derive(Debug)]
pub(crate) struct Outputs {
    queue: VecDeque<Output>,
    max: usize,
    /// Outputs dropped because the queue was full.
    pub overflow: u64,
}

impl Outputs {
    pub(crate) fn new(max: usize) -> Self {
        Outputs {
            queue: VecDeque::new(),
            max: max.max(1),
            overflow: 0,
        }
    }

    /// Queues `o` unless the queue is full. Events get twice the room
    /// (they are rare and the daemon acts on them).
    pub(crate) fn push(&mut self, o: Output) -> bool {
        let limit = match o {
            Output::Event(_) => self.max.saturating_mul(2),
            _ => self.max,
        };
        if self.queue.len() >= limit {
            self.overflow += 1;
            return false;
        }
        self.queue.push_back(o);
        true
    }

    pub(crate) fn pop(&mut self) -> Option<Output> {
        self.queue.pop_front()
    }
}
