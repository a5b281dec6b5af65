//! The daemon's configuration files: one TOML file per side, checked
//! completely at start.
//!
//! Parsing is strict (`deny_unknown_fields`: a misspelt key is an error,
//! not a silently ignored line). Every error names the offending key and
//! says how to fix it. The files and every key are documented in
//! `examples/server.toml` and `examples/client.toml`; the structures
//! below mirror them.
//!
//! A private key file must not be accessible to group or others (`chmod
//! 600`), as ssh insists for identity files.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use braid_core::conn::{ClientEntry, ConnConfig, Ipv4Net, ServerConfig};
use braid_core::crypto::{check_key_file_mode, PrivateKey, PublicKey};
use braid_core::path::{PathId, MAX_PATHS};
use braid_core::reorder::ReorderConfig;
use braid_core::sched::SchedulerKind;
use braid_core::time::Duration;
use serde::Deserialize;

/// Default UDP port of the server.
pub const DEFAULT_PORT: u16 = 51820;
/// Default control socket of each side.
pub const RUN_DIR: &str = "/run/braid";
/// Where docs/DEPLOY.md installs the example configurations, which error
/// messages point at.
pub const EXAMPLES_DIR: &str = "/usr/local/share/doc/braid/examples";

/// The default control socket of the instance whose TUN device is `tun`:
/// `/run/braid/<tun>.sock`. Named per instance (the TUN device name is
/// unique on a host) so that two daemons on one host, or a server and a
/// client, never share one; `braid status NAME` finds it.
pub fn default_control_socket(tun: &str) -> PathBuf {
    Path::new(RUN_DIR).join(format!("{tun}.sock"))
}
/// Default metrics endpoints (loopback only).
pub const DEFAULT_SERVER_METRICS: &str = "127.0.0.1:9184";
pub const DEFAULT_CLIENT_METRICS: &str = "127.0.0.1:9185";

// ---------------------------------------------------------------------------
// File formats

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

// ---------------------------------------------------------------------------
// Checked settings

/// `[metrics]` after checking: where to serve `/metrics`, if anywhere.
pub type MetricsAddr = Option<SocketAddr>;

/// Everything `braid server` needs, checked.
#[derive(Debug)]
pub struct ServerSettings {
    pub listen: SocketAddr,
    pub private_key: PrivateKey,
    pub core: ServerConfig,
    pub tun_name: String,
    pub control_socket: Option<PathBuf>,
    pub metrics: MetricsAddr,
    pub log_level: String,
    pub nat_out_interface: Option<String>,
}

/// One client path, checked.
#[derive(Clone, Debug)]
pub struct PathSettings {
    pub id: PathId,
    pub name: String,
    pub bind: Option<IpAddr>,
    pub device: Option<String>,
    pub server: SocketAddr,
}

/// Everything `braid client` needs, checked.
#[derive(Debug)]
pub struct ClientSettings {
    pub private_key: PrivateKey,
    pub server_key: PublicKey,
    pub conn: ConnConfig,
    pub paths: Vec<PathSettings>,
    pub tun_name: String,
    pub routes: Vec<Ipv4Net>,
    pub control_socket: Option<PathBuf>,
    pub metrics: MetricsAddr,
    pub log_level: String,
}

/// Reads and checks `server.toml`.
pub fn load_server(path: &Path) -> Result<ServerSettings> {
    let text = read(path)?;
    let file: ServerFile = parse(path, &text)?;
    server_settings(file, path.parent().unwrap_or(Path::new(".")))
        .with_context(|| format!("{}", path.display()))
}

/// Reads and checks `client.toml`.
pub fn load_client(path: &Path) -> Result<ClientSettings> {
    let text = read(path)?;
    let file: ClientFile = parse(path, &text)?;
    client_settings(file, path.parent().unwrap_or(Path::new(".")))
        .with_context(|| format!("{}", path.display()))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read configuration file {} (templates: {EXAMPLES_DIR}/server.toml and client.toml, examples/ in the source)",
            path.display()
        )
    })
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        // toml's message names the key (unknown, missing, wrong type) and
        // shows the line.
        anyhow!(
            "{}: {}\n(every key is documented in {EXAMPLES_DIR}/server.toml and client.toml, examples/ in the source)",
            path.display(),
            e.to_string().trim_end()
        )
    })
}

/// Checks a parsed `server.toml`; relative key paths are taken from `base`.
pub fn server_settings(f: ServerFile, base: &Path) -> Result<ServerSettings> {
    let listen = socket_addr("listen", &f.listen, "listen = \"0.0.0.0:51820\"")?;
    let network = Ipv4Net::parse(&f.network)
        .map_err(|e| anyhow!("`network`: {e}; write e.g. network = \"10.77.0.0/24\""))?;
    let mut conn = conn_config(&f.scheduler, &f.tuning, f.tun.mtu)?;
    conn.redundancy = redundancy_config(&f.redundancy)?;
    let private_key = load_private_key(&resolve(base, &f.private_key_file), "private_key_file")?;
    if f.clients.is_empty() {
        bail!(
            "no `[[client]]` entries: the server admits only listed clients; add\n\
             [[client]]\nname = \"laptop\"\npublic_key = \"<output of braid keygen on the client>\""
        );
    }
    let mut clients = Vec::new();
    for (i, c) in f.clients.iter().enumerate() {
        reject_placeholder(
            &format!("`client[{i}].public_key` ({})", c.name),
            &c.public_key,
            "the client's public key (`braid keygen --public-of` its key file, on the client)",
        )?;
        let key = PublicKey::from_base64(&c.public_key).map_err(|e| {
            anyhow!(
                "`client[{i}].public_key` ({}): {e}; paste the public key `braid keygen` printed",
                c.name
            )
        })?;
        if clients.iter().any(|e: &ClientEntry| e.key == key) {
            bail!(
                "`client[{i}].public_key` ({}): the same key is listed twice",
                c.name
            );
        }
        let address = match &c.address {
            None => None,
            Some(a) => Some(a.parse::<Ipv4Addr>().map_err(|_| {
                anyhow!("`client[{i}].address` ({}): `{a}` is not an IPv4 address; write e.g. address = \"10.77.0.2\" or leave it out", c.name)
            })?),
        };
        clients.push(ClientEntry {
            name: c.name.clone(),
            key,
            address,
        });
    }
    let mut core = ServerConfig::new(network, clients);
    core.conn = conn;
    if let Some(s) = f.peer_idle_timeout_s {
        if s == 0 {
            bail!("`peer_idle_timeout_s` must be at least 1");
        }
        core.peer_idle_timeout = Duration::from_secs(s);
    }
    // The same check the server makes at start, reported against the keys.
    let fixed: Vec<Option<Ipv4Addr>> = core.clients.iter().map(|c| c.address).collect();
    network
        .assign(&fixed)
        .map_err(|e| anyhow!("`client[].address` / `network`: {e}"))?;
    let nat_out_interface = if f.nat.enabled {
        Some(f.nat.out_interface.clone().ok_or_else(|| {
            anyhow!("`nat.out_interface` is required when `nat.enabled = true`; write e.g. out_interface = \"eth0\"")
        })?)
    } else {
        None
    };
    let tun = tun_name(&f.tun)?;
    Ok(ServerSettings {
        listen,
        private_key,
        core,
        tun_name: tun.clone(),
        control_socket: control_socket(f.control_socket, &tun),
        metrics: metrics(&f.metrics, DEFAULT_SERVER_METRICS)?,
        log_level: log_level(f.log_level)?,
        nat_out_interface,
    })
}

/// The examples' placeholder keys start with this: they are well-formed
/// base64 keys, so without this check a copied example loads, and the
/// handshake fails in silence.
const PLACEHOLDER_KEY_PREFIX: &str = "REPLACE";

/// Refuses a key left as the examples' placeholder, naming the field.
fn reject_placeholder(field: &str, key: &str, what: &str) -> Result<()> {
    if key
        .trim()
        .to_ascii_uppercase()
        .starts_with(PLACEHOLDER_KEY_PREFIX)
    {
        bail!("{field} is still the example's placeholder `{key}`; replace it with {what}");
    }
    Ok(())
}

/// Checks a parsed `client.toml`; relative key paths are taken from `base`.
pub fn client_settings(f: ClientFile, base: &Path) -> Result<ClientSettings> {
    let server = socket_addr("server", &f.server, "server = \"203.0.113.1:51820\"")?;
    reject_placeholder(
        "`server_public_key`",
        &f.server_public_key,
        "the server's public key (`braid keygen --public-of` its key file, on the server)",
    )?;
    let server_key = PublicKey::from_base64(&f.server_public_key).map_err(|e| {
        anyhow!(
            "`server_public_key`: {e}; paste the public key `braid keygen` printed on the server"
        )
    })?;
    let mut conn = conn_config(&f.scheduler, &f.tuning, f.tun.mtu)?;
    conn.redundancy = redundancy_config(&f.redundancy)?;
    if f.paths.is_empty() {
        bail!(
            "no `[[path]]` entries: list each network path, e.g.\n\
             [[path]]\nname = \"wlan\"\nbind = \"192.168.1.10\"\ndevice = \"wlan0\""
        );
    }
    if f.paths.len() > MAX_PATHS {
        bail!(
            "{} `[[path]]` entries: at most {MAX_PATHS} are supported",
            f.paths.len()
        );
    }
    let mut paths = Vec::new();
    for (i, p) in f.paths.iter().enumerate() {
        if paths.iter().any(|q: &PathSettings| q.name == p.name) {
            bail!("`path[{i}].name`: the name `{}` is used twice", p.name);
        }
        let bind = match &p.bind {
            None => None,
            Some(b) => Some(b.parse::<IpAddr>().map_err(|_| {
                anyhow!("`path[{i}].bind` ({}): `{b}` is not an IP address; write the interface's address, e.g. bind = \"192.168.1.10\"", p.name)
            })?),
        };
        if bind.is_none() && p.device.is_none() {
            bail!("`path[{i}]` ({}): give `bind` (source address) or `device` (interface), or both, so the path uses its own interface", p.name);
        }
        let server = match (&p.server, &p.via) {
            (Some(_), Some(_)) => bail!(
                "`path[{i}]` ({}): give `server` or `via` (a relay), not both",
                p.name
            ),
            (None, None) => server,
            (Some(s), None) => socket_addr(
                &format!("path[{i}].server"),
                s,
                "server = \"203.0.113.1:51820\"",
            )?,
            // The relay forwards to the server; to this path it is the
            // server's address.
            (None, Some(v)) => {
                socket_addr(&format!("path[{i}].via"), v, "via = \"192.168.7.1:51821\"")?
            }
        };
        paths.push(PathSettings {
            id: PathId(i as u8),
            name: p.name.clone(),
            bind,
            device: p.device.clone(),
            server,
        });
    }
    let mut routes = Vec::new();
    for (i, r) in f.routes.iter().enumerate() {
        routes.push(Ipv4Net::parse_route(r).map_err(|e| {
            anyhow!("`routes[{i}]`: {e}; write e.g. routes = [\"0.0.0.0/1\", \"128.0.0.0/1\"]")
        })?);
    }
    let private_key = load_private_key(&resolve(base, &f.private_key_file), "private_key_file")?;
    let tun = tun_name(&f.tun)?;
    Ok(ClientSettings {
        private_key,
        server_key,
        conn,
        paths,
        tun_name: tun.clone(),
        routes,
        control_socket: control_socket(f.control_socket, &tun),
        metrics: metrics(&f.metrics, DEFAULT_CLIENT_METRICS)?,
        log_level: log_level(f.log_level)?,
    })
}

/// The protocol settings from `scheduler`, `[tuning]` and `tun.mtu`.
fn conn_config(scheduler: &str, t: &TuningFile, mtu: Option<u16>) -> Result<ConnConfig> {
    let kind = SchedulerKind::parse(scheduler).ok_or_else(|| {
        let names: Vec<&str> = SchedulerKind::ALL.iter().map(|k| k.as_str()).collect();
        anyhow!(
            "`scheduler`: unknown scheduler `{scheduler}`; use one of {}",
            names.join(", ")
        )
    })?;
    let mut c = ConnConfig {
        scheduler: kind,
        ..ConnConfig::default()
    };
    if let Some(m) = mtu {
        if !(576..=65_000).contains(&m) {
            bail!(
                "`tun.mtu`: {m} is out of range; use 576..65000 (1438 fills a 1500-byte path MTU)"
            );
        }
        c.inner_mtu = m;
    }
    let ms = |key: &str, v: Option<u64>, min: u64, max: u64| -> Result<Option<Duration>> {
        match v {
            None => Ok(None),
            Some(x) if (min..=max).contains(&x) => Ok(Some(Duration::from_millis(x))),
            Some(x) => bail!("`tuning.{key}`: {x} is out of range; use {min}..{max}"),
        }
    };
    if let Some(d) = ms("keepalive_ms", t.keepalive_ms, 10, 60_000)? {
        c.keepalive_interval = d;
    }
    if let Some(d) = ms("path_timeout_ms", t.path_timeout_ms, 50, 600_000)? {
        c.path_timeout = d;
    }
    if c.path_timeout <= c.keepalive_interval {
        bail!(
            "`tuning.path_timeout_ms` ({} ms) must exceed `tuning.keepalive_ms` ({} ms), \
             ideally 3x, or idle paths flap",
            c.path_timeout.as_millis(),
            c.keepalive_interval.as_millis()
        );
    }
    if let Some(d) = ms("handshake_timeout_ms", t.handshake_timeout_ms, 100, 600_000)? {
        c.handshake_timeout = d;
    }
    if let Some(n) = t.feedback_max_entries {
        if !(1..=braid_core::wire::MAX_FEEDBACK_ENTRIES).contains(&n) {
            bail!(
                "`tuning.feedback_max_entries`: {n} is out of range; use 1..{}",
                braid_core::wire::MAX_FEEDBACK_ENTRIES
            );
        }
        c.receiver.feedback_max_entries = n;
    }
    if let Some(us) = t.feedback_max_delay_us {
        if us > 100_000 {
            bail!("`tuning.feedback_max_delay_us`: {us} is out of range; use 0..100000");
        }
        c.receiver.feedback_max_delay = Duration::from_micros(us);
    }
    if let Some(us) = t.feedback_max_delay_small_us {
        if us > 200_000 {
            bail!("`tuning.feedback_max_delay_small_us`: {us} is out of range; use 0..200000");
        }
        c.receiver.feedback_max_delay_small = Duration::from_micros(us);
    }
    let mut reorder = ReorderConfig::default();
    match &t.reorder {
        None | Some(ReorderSetting::Flag(true)) => {}
        Some(ReorderSetting::Flag(false)) => reorder.mode = braid_core::reorder::ReorderMode::Off,
        Some(ReorderSetting::Mode(m)) => match m.as_str() {
            "bmp" => {}
            "off" => reorder.mode = braid_core::reorder::ReorderMode::Off,
            "prism-rpc" => {
                // The data goes up as it comes; the ACKs it causes are
                // controlled where they come back (braid_core::rpc::tcp).
                reorder.mode = braid_core::reorder::ReorderMode::Off;
                c.rpc = Some(braid_core::rpc::RpcConfig {
                    capacity: 8192,
                    ..Default::default()
                });
            }
            other => bail!(
                "`tuning.reorder`: unknown mode `{other}`; use \"bmp\" (resequence the data, the default), \"prism-rpc\" (PRISM's reverse-path ACK control; set it on both ends) or \"off\""
            ),
        },
    }
    if let Some(d) = ms(
        "reorder_loss_timeout_ms",
        t.reorder_loss_timeout_ms,
        1,
        60_000,
    )? {
        reorder.loss_timeout = d;
        // A timer the user chose is kept fixed.
        c.reorder_adaptive_hold = false;
    }
    if let Some(d) = ms("reorder_max_hold_ms", t.reorder_max_hold_ms, 10, 60_000)? {
        reorder.max_hold = d;
        reorder.min_hold = reorder.min_hold.min(d);
    }
    if let Some(r) = &t.repair {
        c.repair = braid_core::repair::RepairMode::parse(r).ok_or_else(|| {
            anyhow!("`tuning.repair`: unknown mode `{r}`; use \"auto\" (ARQ on near paths, FEC on far or very lossy ones), \"arq\" (resend path losses inside the tunnel), \"fec\" (Reed-Solomon parity, no resends) or \"off\"")
        })?;
    }
    if let Some(b) = t.reorder_max_buffer_bytes {
        if !(65_536..=(1 << 30)).contains(&b) {
            bail!("`tuning.reorder_max_buffer_bytes`: {b} is out of range; use 65536..1073741824");
        }
        reorder.max_buffer_bytes = b;
    }
    c.receiver.reorder = reorder;
    Ok(c)
}

/// The redundant mode's settings from `[redundancy]`.
fn redundancy_config(f: &RedundancyFile) -> Result<braid_core::redundancy::RedundancyConfig> {
    let mut r = braid_core::redundancy::RedundancyConfig::default();
    if let Some(e) = f.enabled {
        r.enabled = e;
    }
    if let Some(c) = f.copies {
        if !(2..=MAX_PATHS as u8).contains(&c) {
            bail!("`redundancy.copies`: {c} is out of range; use 2..{MAX_PATHS} (2 = the packet and one copy)");
        }
        r.copies = c;
    }
    if let Some(d) = f.dns {
        r.dns = d;
    }
    if let Some(p) = &f.ports {
        if let Some(i) = p.iter().position(|&x| x == 0) {
            bail!("`redundancy.ports[{i}]`: port 0 matches nothing; list ports 1..65535, e.g. ports = [22, 5060]");
        }
        r.ports = p.clone();
    }
    if let Some(b) = f.small_flow_bytes {
        r.small_flow_bytes = b;
    }
    if let Some(k) = f.interactive_max_kbps {
        r.interactive_max_bps = k.saturating_mul(1000);
    }
    if let Some(k) = f.realtime_udp_max_kbps {
        r.realtime_udp_max_bps = k.saturating_mul(1000);
    }
    if let Some(b) = f.retransmissions {
        r.retransmissions = b;
    }
    if let Some(b) = f.on_spike {
        r.on_spike = b;
    }
    if let Some(l) = f.spike_loss {
        if !(l > 0.0 && l <= 1.0) {
            bail!("`redundancy.spike_loss`: {l} is out of range; use a loss rate in (0, 1], e.g. 0.05");
        }
        r.spike_loss = l;
    }
    if let Some(ms) = f.spike_delay_ms {
        if !(1..=60_000).contains(&ms) {
            bail!("`redundancy.spike_delay_ms`: {ms} is out of range; use 1..60000");
        }
        r.spike_delay = Duration::from_millis(ms);
    }
    if let Some(s) = f.max_spike_share {
        if !(0.0..=4.0).contains(&s) {
            bail!("`redundancy.max_spike_share`: {s} is out of range; use 0..4 (0.25 = spike copies may add a quarter to the data sent)");
        }
        r.max_spike_share = s;
    }
    Ok(r)
}

fn socket_addr(key: &str, v: &str, example: &str) -> Result<SocketAddr> {
    v.parse()
        .map_err(|_| anyhow!("`{key}`: `{v}` is not an address with port; write e.g. {example}"))
}

fn tun_name(t: &TunFile) -> Result<String> {
    let name = t.name.clone().unwrap_or_else(|| "braid0".into());
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ']) {
        bail!("`tun.name`: `{name}` is not a valid interface name (1..15 characters, no '/' or spaces)");
    }
    Ok(name)
}

fn control_socket(v: Option<PathBuf>, tun: &str) -> Option<PathBuf> {
    match v {
        Some(p) if p.as_os_str().is_empty() => None,
        Some(p) => Some(p),
        None => Some(default_control_socket(tun)),
    }
}

fn metrics(m: &MetricsFile, default: &str) -> Result<MetricsAddr> {
    if m.enabled == Some(false) {
        return Ok(None);
    }
    let listen = m.listen.as_deref().unwrap_or(default);
    socket_addr("metrics.listen", listen, "listen = \"127.0.0.1:9184\"").map(Some)
}

fn log_level(v: Option<String>) -> Result<String> {
    let v = v.unwrap_or_else(|| "info".into());
    match v.as_str() {
        "error" | "warn" | "info" | "debug" | "trace" => Ok(v),
        _ => bail!("`log_level`: `{v}` is not a level; use error, warn, info, debug or trace"),
    }
}

fn resolve(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Reads a private key file (`key` names the configuration key, for
/// errors). Refused if group or others can access it.
pub fn load_private_key(path: &Path, key: &str) -> Result<PrivateKey> {
    let meta = std::fs::metadata(path).with_context(|| {
        format!(
            "`{key}`: cannot read {}; create it with `braid keygen --out {}`",
            path.display(),
            path.display()
        )
    })?;
    check_key_file_mode(meta.permissions().mode()).map_err(|e| {
        anyhow!(
            "`{key}`: {}: {}",
            path.display(),
            e.to_string().replace("FILE", &path.display().to_string())
        )
    })?;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("`{key}`: cannot read {}", path.display()))?;
    PrivateKey::from_base64(&text).map_err(|e| {
        anyhow!(
            "`{key}`: {}: {e}; the file must hold one base64 key as `braid keygen` writes it",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests;
