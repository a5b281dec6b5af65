//! `braid relay`: a community member's host lends its uplink (PRISM
//! Sections 2-3). A client path names the relay (`via = "host:port"` in
//! `client.toml`); the relay forwards that path's tunnel datagrams to the
//! server over its own uplink and the replies back. It never decrypts
//! them: the Noise session stays between client and server, so the relay
//! learns nothing but sizes and timing, and cannot alter what it carries
//! without the server noticing.
//!
//! It admits only the clients its configuration lists (by source address),
//! rate-limits each one in each direction with a token bucket, and keeps
//! per-client counters it logs every `report_every_s` seconds and on exit,
//! and reports to `braid status --socket` when `control_socket` is set.
//! Each admitted client address gets its own upstream socket, so the
//! server sees one stable address per relayed path and replies reach the
//! right client.
//!
//! [`Admission`] is the decision logic without sockets (unit-tested);
//! [`Relay`] is the tokio runtime around it.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use tokio::net::UdpSocket;
use tracing::{info, warn};

#[cfg(test)]
mod tests;

/// Largest datagram relayed (the tunnel's own limit is below it).
const MAX_DATAGRAM: usize = 65_535;

/// `relay.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayFile {
    /// Where clients send, e.g. "0.0.0.0:51821".
    pub listen: String,
    /// The braid server, e.g. "203.0.113.1:51820".
    pub server: String,
    /// Local address of the uplink the relay sends from (default: any).
    #[serde(default)]
    pub bind: Option<String>,
    /// Seconds between counter reports in the log (0 = only at exit).
    #[serde(default = "default_report")]
    pub report_every_s: u64,
    #[serde(default)]
    pub log_level: Option<String>,
    /// Unix socket `braid status --socket PATH` asks (default: none).
    #[serde(default)]
    pub control_socket: Option<std::path::PathBuf>,
    #[serde(rename = "client", default)]
    pub clients: Vec<RelayClientFile>,
}

fn default_report() -> u64 {
    60
}

/// `[[client]]` in `relay.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayClientFile {
    pub name: String,
    /// The client's source address: an IP (any port) or "ip:port".
    pub addr: String,
    /// Rate limit in each direction, kbit/s (bursts of 100 ms allowed).
    pub rate_kbps: f64,
}

/// One admitted client, checked.
#[derive(Clone, Debug)]
pub struct RelayClient {
    pub name: String,
    pub ip: IpAddr,
    pub port: Option<u16>,
    pub rate_bps: f64,
}

/// `relay.toml`, checked.
#[derive(Clone, Debug)]
pub struct RelaySettings {
    pub listen: SocketAddr,
    pub server: SocketAddr,
    pub bind: Option<IpAddr>,
    pub report_every: Option<Duration>,
    pub log_level: String,
    pub control_socket: Option<std::path::PathBuf>,
    pub clients: Vec<RelayClient>,
}

/// Reads and checks `relay.toml`.
pub fn load(path: &Path) -> Result<RelaySettings> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text).with_context(|| format!("{}", path.display()))
}

/// Parses and checks the text of `relay.toml`.
pub fn parse(text: &str) -> Result<RelaySettings> {
    let f: RelayFile = toml::from_str(text).map_err(|e| anyhow!("{e}"))?;
    let addr = |key: &str, v: &str, ex: &str| -> Result<SocketAddr> {
        v.parse()
            .map_err(|_| anyhow!("`{key}`: `{v}` is not an address with port; write e.g. {ex}"))
    };
    let listen = addr("listen", &f.listen, "listen = \"0.0.0.0:51821\"")?;
    let server = addr("server", &f.server, "server = \"203.0.113.1:51820\"")?;
    let bind = match &f.bind {
        None => None,
        Some(b) => Some(b.parse().map_err(|_| {
            anyhow!("`bind`: `{b}` is not an IP address; write the uplink's address, e.g. bind = \"192.168.1.10\"")
        })?),
    };
    if f.clients.is_empty() {
        bail!("no [[client]] is admitted; add one per client, e.g.\n[[client]]\nname = \"alice\"\naddr = \"192.168.7.20\"\nrate_kbps = 5000");
    }
    let mut clients = Vec::new();
    for (i, c) in f.clients.iter().enumerate() {
        let (ip, port) = match c.addr.parse::<SocketAddr>() {
            Ok(sa) => (sa.ip(), Some(sa.port())),
            Err(_) => (
                c.addr.parse::<IpAddr>().map_err(|_| {
                    anyhow!(
                        "`client[{i}].addr` ({}): `{}` is neither an IP address nor ip:port",
                        c.name,
                        c.addr
                    )
                })?,
                None,
            ),
        };
        if !(c.rate_kbps > 0.0 && c.rate_kbps.is_finite()) {
            bail!(
                "`client[{i}].rate_kbps` ({}): must be a positive number of kbit/s",
                c.name
            );
        }
        clients.push(RelayClient {
            name: c.name.clone(),
            ip,
            port,
            rate_bps: c.rate_kbps * 1000.0,
        });
    }
    Ok(RelaySettings {
        listen,
        server,
        bind,
        report_every: (f.report_every_s > 0).then(|| Duration::from_secs(f.report_every_s)),
        log_level: f.log_level.unwrap_or_else(|| "info".into()),
        control_socket: f.control_socket,
        clients,
    })
}

/// A token bucket of bytes: `rate` bytes/s, bursts of 100 ms of it (at
/// least one large datagram).
#[derive(Clone, Debug)]
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl Bucket {
    fn new(rate_bps: f64) -> Self {
        let rate = rate_bps / 8.0;
        let burst = (rate * 0.1).max(MAX_DATAGRAM as f64);
        Bucket {
            rate,
            burst,
            tokens: burst,
            last: None,
        }
    }

    fn take(&mut self, now: Instant, bytes: usize) -> bool {
        if let Some(l) = self.last {
            let dt = now.saturating_duration_since(l).as_secs_f64();
            self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        }
        self.last = Some(now);
        if self.tokens >= bytes as f64 {
            self.tokens -= bytes as f64;
            true
        } else {
            false
        }
    }
}

/// Per-client counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientCounters {
    pub up_packets: u64,
    pub up_bytes: u64,
    pub down_packets: u64,
    pub down_bytes: u64,
    /// Datagrams dropped by the rate limit, each direction.
    pub up_limited: u64,
    pub down_limited: u64,
}

/// Which way a datagram goes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// The relay's decisions: admission by source address, the rate limits
/// and the counters.
#[derive(Debug)]
pub struct Admission {
    clients: Vec<RelayClient>,
    buckets: Vec<[Bucket; 2]>,
    counters: Vec<ClientCounters>,
    /// Datagrams from addresses not admitted.
    pub refused: u64,
}

impl Admission {
    pub fn new(clients: Vec<RelayClient>) -> Self {
        let buckets = clients
            .iter()
            .map(|c| [Bucket::new(c.rate_bps), Bucket::new(c.rate_bps)])
            .collect();
        let counters = vec![ClientCounters::default(); clients.len()];
        Admission {
            clients,
            buckets,
            counters,
            refused: 0,
        }
    }

    /// The admitted client a datagram from `src` belongs to.
    pub fn client_of(&mut self, src: SocketAddr) -> Option<usize> {
        let i = self
            .clients
            .iter()
            .position(|c| c.ip == src.ip() && c.port.is_none_or(|p| p == src.port()));
        if i.is_none() {
            self.refused += 1;
        }
        i
    }

    /// Whether client `i` may send `bytes` more in direction `d` now;
    /// counts the datagram either way.
    pub fn allow(&mut self, i: usize, d: Direction, now: Instant, bytes: usize) -> bool {
        let k = usize::from(d == Direction::Down);
        let ok = self.buckets[i][k].take(now, bytes);
        let c = &mut self.counters[i];
        match (d, ok) {
            (Direction::Up, true) => {
                c.up_packets += 1;
                c.up_bytes += bytes as u64;
            }
            (Direction::Down, true) => {
                c.down_packets += 1;
                c.down_bytes += bytes as u64;
            }
            (Direction::Up, false) => c.up_limited += 1,
            (Direction::Down, false) => c.down_limited += 1,
        }
        ok
    }

    pub fn counters(&self) -> impl Iterator<Item = (&str, &ClientCounters)> {
        self.clients
            .iter()
            .map(|c| c.name.as_str())
            .zip(&self.counters)
    }
}

/// A running relay.
pub struct Relay {
    pub local: SocketAddr,
    admission: Arc<Mutex<Admission>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    _control: Option<crate::daemon::ControlSocket>,
}

impl Relay {
    /// Binds `listen` and starts forwarding.
    pub async fn start(s: RelaySettings) -> Result<Relay> {
        let listen = Arc::new(
            UdpSocket::bind(s.listen)
                .await
                .with_context(|| format!("`listen` {}", s.listen))?,
        );
        let local = listen.local_addr()?;
        let admission = Arc::new(Mutex::new(Admission::new(s.clients.clone())));
        let adm = admission.clone();
        let server = s.server;
        let bind = s.bind;
        let main = tokio::spawn(async move {
            let mut up: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
            let mut buf = vec![0u8; MAX_DATAGRAM];
            loop {
                let Ok((n, src)) = listen.recv_from(&mut buf).await else {
                    continue;
                };
                let now = Instant::now();
                let Some(i) = adm.lock().expect("no panics while holding").client_of(src) else {
                    continue;
                };
                if !adm
                    .lock()
                    .expect("no panics while holding")
                    .allow(i, Direction::Up, now, n)
                {
                    continue;
                }
                let sock = match up.get(&src) {
                    Some(s) => s.clone(),
                    None => match upstream(bind, server).await {
                        Ok(s) => {
                            let s = Arc::new(s);
                            info!(client = %src, local = ?s.local_addr().ok(), "relaying a new client address");
                            tokio::spawn(downstream(
                                s.clone(),
                                listen.clone(),
                                src,
                                i,
                                adm.clone(),
                            ));
                            up.insert(src, s.clone());
                            s
                        }
                        Err(e) => {
                            warn!(error = %e, "cannot open an upstream socket");
                            continue;
                        }
                    },
                };
                let _ = sock.send(&buf[..n]).await;
            }
        });
        let mut tasks = vec![main];
        if let Some(every) = s.report_every {
            let adm = admission.clone();
            tasks.push(tokio::spawn(async move {
                let mut t = tokio::time::interval(every);
                t.tick().await;
                loop {
                    t.tick().await;
                    log_counters(&adm.lock().expect("no panics while holding"));
                }
            }));
        }
        let control = match &s.control_socket {
            None => None,
            Some(path) => {
                let (tx, mut rx) = tokio::sync::mpsc::channel::<crate::daemon::StatusRequest>(16);
                let control = crate::daemon::serve_control(path, tx).await?;
                let adm = admission.clone();
                let started = Instant::now();
                tasks.push(tokio::spawn(async move {
                    while let Some(reply) = rx.recv().await {
                        let a = adm.lock().expect("no panics while holding");
                        let _ = reply.send(status_report(&a, started.elapsed()));
                    }
                }));
                Some(control)
            }
        };
        info!(listen = %local, server = %s.server, clients = s.clients.len(), "relay up");
        Ok(Relay {
            local,
            admission,
            tasks,
            _control: control,
        })
    }

    /// The counters of every admitted client, by name.
    pub fn counters(&self) -> Vec<(String, ClientCounters)> {
        let a = self.admission.lock().expect("no panics while holding");
        a.counters()
            .map(|(n, c)| (n.to_string(), c.clone()))
            .collect()
    }

    /// Datagrams refused from addresses not admitted.
    pub fn refused(&self) -> u64 {
        self.admission
            .lock()
            .expect("no panics while holding")
            .refused
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn upstream(bind: Option<IpAddr>, server: SocketAddr) -> std::io::Result<UdpSocket> {
    let local = match (bind, server) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, SocketAddr::V4(_)) => "0.0.0.0:0".parse().expect("literal"),
        (None, SocketAddr::V6(_)) => "[::]:0".parse().expect("literal"),
    };
    let s = UdpSocket::bind(local).await?;
    s.connect(server).await?;
    Ok(s)
}

/// Replies from the server on `up` go back to `client` through `listen`.
async fn downstream(
    up: Arc<UdpSocket>,
    listen: Arc<UdpSocket>,
    client: SocketAddr,
    i: usize,
    adm: Arc<Mutex<Admission>>,
) {
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let Ok(n) = up.recv(&mut buf).await else {
            continue; // ICMP errors surface here; the path's owner sees the loss
        };
        let ok = adm.lock().expect("no panics while holding").allow(
            i,
            Direction::Down,
            Instant::now(),
            n,
        );
        if ok {
            let _ = listen.send_to(&buf[..n], client).await;
        }
    }
}

/// What `braid status` shows for a relay: role "relay", one entry per
/// admitted client under `relayed`, and `refused` among the counters.
fn status_report(a: &Admission, uptime: Duration) -> crate::status::StatusReport {
    crate::status::StatusReport {
        role: "relay".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_s: uptime.as_secs_f64(),
        tunnels: Vec::new(),
        counters: [("refused".to_string(), a.refused)].into_iter().collect(),
        problem: None,
        relayed: a
            .counters()
            .map(|(name, c)| crate::status::RelayClientReport {
                name: name.to_string(),
                up_packets: c.up_packets,
                up_bytes: c.up_bytes,
                down_packets: c.down_packets,
                down_bytes: c.down_bytes,
                up_limited: c.up_limited,
                down_limited: c.down_limited,
            })
            .collect(),
    }
}

fn log_counters(a: &Admission) {
    for (name, c) in a.counters() {
        info!(
            client = name,
            up_packets = c.up_packets,
            up_bytes = c.up_bytes,
            down_packets = c.down_packets,
            down_bytes = c.down_bytes,
            up_limited = c.up_limited,
            down_limited = c.down_limited,
            "relay counters"
        );
    }
    if a.refused > 0 {
        info!(refused = a.refused, "datagrams from addresses not admitted");
    }
}

/// `braid relay --config relay.toml` in the foreground until SIGINT/SIGTERM.
pub fn run_cmd(path: &Path, check: bool) -> Result<()> {
    let s = load(path)?;
    if check {
        println!(
            "{}: ok ({} clients, server {})",
            path.display(),
            s.clients.len(),
            s.server
        );
        return Ok(());
    }
    crate::daemon::init_logging(&s.log_level);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let r = Relay::start(s).await?;
        crate::daemon::shutdown_signal().await;
        log_counters(&r.admission.lock().expect("no panics while holding"));
        Ok(())
    })
}
