//! The configuration files' TOML structure, key by key, as serde reads it.
//! Nothing here is checked beyond TOML types and key names; `super`
//! turns these into checked settings.

use std::path::PathBuf;

use serde::Deserialize;

/// `server.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    /// UDP address to listen on, e.g. "0.0.0.0:51820".
    pub listen: String,
    /// File with the server's private key (base64, mode 0600).
    pub private_key_file: PathBuf,
    /// The tunnel network; the server takes its first address.
    pub network: String,
    #[serde(default)]
    pub tun: TunFile,
    #[serde(default = "default_scheduler")]
    pub scheduler: String,
    #[serde(default)]
    pub control_socket: Option<PathBuf>,
    #[serde(default)]
    pub log_level: Option<String>,
    #[serde(default)]
    pub metrics: MetricsFile,
    #[serde(default)]
    pub nat: NatFile,
    #[serde(default)]
    pub tuning: TuningFile,
    #[serde(default)]
    pub redundancy: RedundancyFile,
    /// Seconds without traffic after which a client's state is dropped.
    #[serde(default)]
    pub peer_idle_timeout_s: Option<u64>,
    #[serde(default, rename = "client")]
    pub clients: Vec<ClientEntryFile>,
}

/// `[[client]]` in `server.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientEntryFile {
    pub name: String,
    pub public_key: String,
    #[serde(default)]
    pub address: Option<String>,
}

/// `client.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientFile {
    /// The server's address, e.g. "203.0.113.1:51820".
    pub server: String,
    pub server_public_key: String,
    pub private_key_file: PathBuf,
    #[serde(default)]
    pub tun: TunFile,
    #[serde(default = "default_scheduler")]
    pub scheduler: String,
    /// Networks to route into the tunnel once it is up.
    #[serde(default)]
    pub routes: Vec<String>,
    #[serde(default)]
    pub control_socket: Option<PathBuf>,
    #[serde(default)]
    pub log_level: Option<String>,
    #[serde(default)]
    pub metrics: MetricsFile,
    #[serde(default)]
    pub tuning: TuningFile,
    #[serde(default)]
    pub redundancy: RedundancyFile,
    #[serde(default, rename = "path")]
    pub paths: Vec<PathFile>,
}

/// `[[path]]` in `client.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathFile {
    pub name: String,
    /// Local source address of this path's socket (the interface's address).
    #[serde(default)]
    pub bind: Option<String>,
    /// Interface to bind the socket to (SO_BINDTODEVICE, needs CAP_NET_RAW).
    #[serde(default)]
    pub device: Option<String>,
    /// The server's address on this path, if not the global `server`.
    #[serde(default)]
    pub server: Option<String>,
    /// A community relay (`braid relay` on a neighbour's host) this path
    /// sends through, "host:port": the path's datagrams go to the relay,
    /// which forwards them, still encrypted, to the server.
    #[serde(default)]
    pub via: Option<String>,
}

/// `[tun]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunFile {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub mtu: Option<u16>,
}

/// `[metrics]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsFile {
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub listen: Option<String>,
}

/// `[nat]` (server).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatFile {
    /// Apply the nftables masquerade rule and enable IPv4 forwarding at start.
    #[serde(default)]
    pub enabled: bool,
    /// The interface towards the internet.
    #[serde(default)]
    pub out_interface: Option<String>,
}

/// `[tuning]`: protocol timers and buffers; the defaults suit most links.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuningFile {
    pub keepalive_ms: Option<u64>,
    pub path_timeout_ms: Option<u64>,
    pub handshake_timeout_ms: Option<u64>,
    pub feedback_max_entries: Option<usize>,
    pub feedback_max_delay_us: Option<u64>,
    pub feedback_max_delay_small_us: Option<u64>,
    /// The receiving side's handling of reordering between paths: "bmp"
    /// (default, resequence the data), "prism-rpc" (deliver the data as
    /// it comes and hold the inner TCP's reordering-caused duplicate ACKs
    /// instead, PRISM's reverse-path control) or "off"; `true`/`false`
    /// are kept as "bmp"/"off".
    pub reorder: Option<ReorderSetting>,
    pub reorder_loss_timeout_ms: Option<u64>,
    pub reorder_max_buffer_bytes: Option<usize>,
    /// Repair of path losses inside the tunnel: "arq" (default: resend path losses inside the tunnel), "auto" (ARQ on near paths, FEC on far or very lossy ones), "fec" or "off".
    pub repair: Option<String>,
    /// Longest the resequencer holds a gap (its hold adapts below this).
    pub reorder_max_hold_ms: Option<u64>,
    /// With the PET scheduler: TCP data on a path nearer than the fastest
    /// path arrives when the fastest path's would (true, the default: the
    /// inner TCP's slow start runs until the whole bond is full), or as
    /// soon as its own path brings it (false: lower delay for interactive
    /// sessions, slower start for bulk transfers on a far, fast path).
    pub near_paths_wait: Option<bool>,
    /// Client, with the PET scheduler: on a new tunnel, the first inner
    /// packets wait up to this long for every path to be up and measured
    /// (default 1000; 0 sends them at once).
    pub startup_hold_ms: Option<u64>,
    /// Send the inner IPv4/TCP headers compressed (default true: 26 bytes
    /// instead of 52 per segment; either end rebuilds them whatever its
    /// own setting).
    pub compress_headers: Option<bool>,
}

/// `tuning.reorder`: a mode name or, as before, a boolean.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ReorderSetting {
    Flag(bool),
    Mode(String),
}

/// `[redundancy]`: the redundant ("reliability first") mode, which copies
/// chosen packets onto a second path (`braid_core::redundancy`). Off
/// unless `enabled = true`; the other keys refine which packets.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedundancyFile {
    pub enabled: Option<bool>,
    /// Copies of a duplicated packet in all, the original included.
    pub copies: Option<u8>,
    /// Copy DNS (port 53).
    pub dns: Option<bool>,
    /// Copy flows with one of these ports at either end.
    pub ports: Option<Vec<u16>>,
    /// Copy the first this many bytes of every flow (0: off).
    pub small_flow_bytes: Option<u64>,
    /// Copy flows whose recent rate is at most this (0: off).
    pub interactive_max_kbps: Option<u64>,
    /// Copy UDP flows whose recent rate is at most this (0: off).
    pub realtime_udp_max_kbps: Option<u64>,
    /// Copy inner TCP retransmissions and the tunnel's repairs.
    pub retransmissions: Option<bool>,
    /// Copy every packet put on a path whose loss or delay spiked.
    pub on_spike: Option<bool>,
    /// Loss rate at which a path spikes.
    pub spike_loss: Option<f64>,
    /// Delay over the path's minimum RTT at which it spikes.
    pub spike_delay_ms: Option<u64>,
    /// Most of the recent data bytes that spike and retransmission copies may take.
    pub max_spike_share: Option<f64>,
}

fn default_scheduler() -> String {
    "pet".into()
}
