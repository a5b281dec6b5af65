//! What `braid status` shows and `/metrics` exports, and the `braid
//! status` command itself.
//!
//! The running daemon answers on its control socket (a Unix socket; path
//! `control_socket` in its configuration): a client connects, writes the
//! line `status`, and reads one JSON [`StatusReport`] until the daemon
//! closes the connection. `braid status` renders it as a table (or passes
//! the JSON through with `--json`); the Prometheus endpoint renders the
//! same report in the text exposition format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration as StdDuration;

use anyhow::{bail, Context, Result};
use braid_core::conn::{ClientStatus, Counters, PathStatus, ServerStatus, TunnelStatus};
use braid_core::time::Duration;
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::config::{default_control_socket, RUN_DIR};

mod metrics;

pub use metrics::counter_help;

/// A daemon's state, as JSON on the control socket.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StatusReport {
    /// "client" or "server".
    pub role: String,
    pub version: String,
    pub uptime_s: f64,
    /// The client's tunnel, or one per connected client on the server.
    pub tunnels: Vec<TunnelReport>,
    /// Totals (server: all clients and unroutable datagrams).
    pub counters: BTreeMap<String, u64>,
    /// The latest handshake problem in words, as the log says it: a
    /// client's unknown key, a client with the wrong server key, a client
    /// that gets no answer.
    #[serde(default)]
    pub problem: Option<String>,
    /// A relay (`braid relay`, role "relay"): what it forwarded for each
    /// admitted client. Empty for tunnel daemons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relayed: Vec<RelayClientReport>,
}

/// One client a relay admits, and what it forwarded for it (PRISM
/// Section 3: a community member sees what its uplink carries for whom).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RelayClientReport {
    /// The client's name in `relay.toml`.
    pub name: String,
    /// Datagrams and bytes (UDP payload) forwarded client to server.
    pub up_packets: u64,
    pub up_bytes: u64,
    /// Datagrams and bytes forwarded server to client.
    pub down_packets: u64,
    pub down_bytes: u64,
    /// Datagrams dropped by the client's rate limit, each direction.
    pub up_limited: u64,
    pub down_limited: u64,
}

/// One tunnel.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TunnelReport {
    /// Server: the client's configured name.
    pub peer: Option<String>,
    /// Server: the client's public key.
    pub public_key: Option<String>,
    /// The client's tunnel address and prefix, once known.
    pub address: Option<String>,
    pub established: bool,
    pub handshaking: bool,
    /// Age of the current session: the time since the latest handshake.
    pub session_age_s: Option<f64>,
    pub scheduler: String,
    /// Reorder-buffer occupancy of this side's receiving direction.
    pub reorder_buffered_packets: usize,
    pub reorder_buffered_bytes: usize,
    pub reorder_max_buffered_bytes: usize,
    pub reorder_released: u64,
    pub reorder_lost: u64,
    pub reorder_late: u64,
    pub reorder_duplicates: u64,
    /// Inner packets the sending side dropped because a path's pacing
    /// queue was full (TCP sees the loss and slows down).
    #[serde(default)]
    pub pacing_drops: u64,
    /// Times a paced packet left later than its path's catch-up allowance
    /// (the daemon did not run in time: a busy machine) and the path's
    /// schedule slipped instead of bursting, and by how long in all.
    #[serde(default)]
    pub pacing_slips: u64,
    #[serde(default)]
    pub pacing_slip_ms: f64,
    /// Loss repair inside the tunnel (both directions as this side sees them).
    #[serde(default)]
    pub repair: TunnelRepairReport,
    /// PRISM's reverse-path ACK control (`reorder = "prism-rpc"`): the
    /// inner TCP ACKs it saw, held, rewritten, and the losses it found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc: Option<RpcReport>,
    pub paths: Vec<PathReport>,
    pub counters: BTreeMap<String, u64>,
}

/// The reverse-path ACK controller's counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct RpcReport {
    pub acks_in: u64,
    pub acks_held: u64,
    pub acks_rewritten: u64,
    pub losses_detected: u64,
    pub hold_expiries: u64,
    pub max_held: u64,
}

/// One path.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PathReport {
    pub id: u8,
    /// The configured name on the client; on the server the name the
    /// client sent (`PATH_NAME`), else "path N".
    pub name: Option<String>,
    pub up: bool,
    pub remote: Option<String>,
    pub rtt_ms: Option<f64>,
    pub min_rtt_ms: Option<f64>,
    pub bandwidth_bps: Option<f64>,
    pub loss_rate: f64,
    pub lost_packets: u64,
    pub in_flight_packets: u32,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub data_tx_packets: u64,
    pub data_rx_packets: u64,
    pub last_rx_ago_ms: Option<f64>,
    /// Out-of-order inner packets from this path waiting to be resequenced.
    #[serde(default)]
    pub reorder_buffered_packets: u64,
    #[serde(default)]
    pub reorder_buffered_bytes: u64,
    /// Client: a configured path not in use yet because its interface or
    /// address is missing ("waiting for device wwan0").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    /// Loss repair on this path.
    #[serde(default)]
    pub repair: PathRepairReport,
}

impl PathReport {
    /// A configured path that has no socket yet: `why` it waits.
    pub fn waiting(id: u8, name: &str, why: String) -> PathReport {
        PathReport {
            id,
            name: Some(name.to_string()),
            up: false,
            remote: None,
            rtt_ms: None,
            min_rtt_ms: None,
            bandwidth_bps: None,
            loss_rate: 0.0,
            lost_packets: 0,
            in_flight_packets: 0,
            tx_packets: 0,
            tx_bytes: 0,
            rx_packets: 0,
            rx_bytes: 0,
            data_tx_packets: 0,
            data_rx_packets: 0,
            last_rx_ago_ms: None,
            reorder_buffered_packets: 0,
            reorder_buffered_bytes: 0,
            waiting: Some(why),
            repair: PathRepairReport::default(),
        }
    }
}

/// Loss repair of one tunnel (see `braid_core::repair`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TunnelRepairReport {
    /// Repair copies this side sent (ARQ).
    pub repairs_sent: u64,
    /// Losses this side took for congestion and did not repair.
    pub skipped_congestion: u64,
    /// Losses given up (too old, too many attempts, payload no longer kept).
    pub abandoned: u64,
    /// Gaps of the receiving direction that filled while held.
    pub gaps_filled: u64,
    /// How long the resequencer currently holds a gap, ms.
    pub hold_ms: f64,
}

/// Loss repair of one path.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PathRepairReport {
    /// Losses of the sending direction repaired by ARQ.
    pub repaired_arq: u64,
    /// Losses of the sending direction passed on to the inner traffic
    /// (taken for congestion, or not repaired).
    pub residual: u64,
    /// Repair copies the path carried.
    pub repairs_carried: u64,
    /// Loss rate of the sending direction as the peer measured it.
    pub peer_loss_rate: f64,
    /// Loss rate of the receiving direction as this side measures it.
    pub rx_loss_rate: f64,
    /// Redundant copies the path carried (the redundant mode), and their bytes.
    #[serde(default)]
    pub copies_carried: u64,
    #[serde(default)]
    pub copy_bytes: u64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn counters_map(c: &Counters) -> BTreeMap<String, u64> {
    c.fields()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

fn path_report(p: &PathStatus, names: &[String]) -> PathReport {
    PathReport {
        id: p.id.0,
        // The configured name (client); on the server the one the client
        // sent, else the path's number (its address is in `remote`).
        name: names
            .get(p.id.0 as usize)
            .cloned()
            .or_else(|| p.name.clone())
            .or_else(|| Some(format!("path {}", p.id.0))),
        up: p.up,
        remote: p.remote.map(|r| r.to_string()),
        rtt_ms: p.srtt.map(ms),
        min_rtt_ms: p.min_rtt.map(ms),
        bandwidth_bps: p.bandwidth_bps,
        loss_rate: p.loss_rate,
        lost_packets: p.lost_packets,
        in_flight_packets: p.in_flight_packets,
        tx_packets: p.tx_packets,
        tx_bytes: p.tx_bytes,
        rx_packets: p.rx_packets,
        rx_bytes: p.rx_bytes,
        data_tx_packets: p.data_tx_packets,
        data_rx_packets: p.data_rx_packets,
        last_rx_ago_ms: p.last_rx_ago.map(ms),
        reorder_buffered_packets: p.reorder_buffered_packets,
        reorder_buffered_bytes: p.reorder_buffered_bytes,
        waiting: None,
        repair: PathRepairReport {
            repaired_arq: p.losses_repaired,
            residual: p.lost_packets.saturating_sub(p.losses_repaired),
            repairs_carried: p.repairs_carried,
            peer_loss_rate: p.peer_loss_rate,
            rx_loss_rate: p.rx_loss_rate,
            copies_carried: p.copies_carried,
            copy_bytes: p.copy_bytes_carried,
        },
    }
}

fn tunnel_report(t: &TunnelStatus, names: &[String]) -> TunnelReport {
    let r = &t.reorder;
    TunnelReport {
        peer: None,
        public_key: None,
        address: None,
        established: t.established,
        handshaking: false,
        session_age_s: t.session_age.map(|d| d.as_secs_f64()),
        scheduler: t.scheduler.to_string(),
        reorder_buffered_packets: r.buffered_packets,
        reorder_buffered_bytes: r.buffered_bytes,
        reorder_max_buffered_bytes: r.max_buffered_bytes,
        reorder_released: r.released,
        reorder_lost: r.lost_comparison + r.lost_prev_link + r.lost_timer + r.lost_overflow,
        reorder_late: r.late,
        reorder_duplicates: r.duplicates,
        pacing_drops: t.sender.pacing_drops,
        pacing_slips: t.sender.pacing_slips,
        pacing_slip_ms: t.sender.pacing_slip_ns as f64 / 1e6,
        repair: TunnelRepairReport {
            repairs_sent: t.sender.repairs_sent,
            skipped_congestion: t.sender.repairs_skipped_congestion,
            abandoned: t.sender.repairs_abandoned,
            gaps_filled: r.gaps_filled,
            hold_ms: r.hold_ns as f64 / 1e6,
        },
        rpc: t.rpc.map(|r| RpcReport {
            acks_in: r.acks_in,
            acks_held: r.held,
            acks_rewritten: r.rewritten,
            losses_detected: r.losses_detected,
            hold_expiries: r.hold_expiries,
            max_held: r.max_held,
        }),
        paths: t.paths.iter().map(|p| path_report(p, names)).collect(),
        counters: counters_map(&t.counters),
    }
}

impl StatusReport {
    /// The client's report; `path_names[i]` names path `i`.
    pub fn from_client(s: &ClientStatus, path_names: &[String], uptime: StdDuration) -> Self {
        let mut t = tunnel_report(&s.tunnel, path_names);
        t.handshaking = s.handshaking;
        t.address = s.params.map(|p| format!("{}/{}", p.address, p.prefix_len));
        StatusReport {
            role: "client".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            uptime_s: uptime.as_secs_f64(),
            counters: t.counters.clone(),
            tunnels: vec![t],
            problem: None,
            relayed: Vec::new(),
        }
    }

    /// The server's report.
    pub fn from_server(s: &ServerStatus, uptime: StdDuration) -> Self {
        let tunnels = s
            .peers
            .iter()
            .map(|p| {
                let mut t = tunnel_report(&p.tunnel, &[]);
                t.peer = Some(p.name.clone());
                t.public_key = Some(p.key.to_base64());
                t.address = Some(p.address.to_string());
                t
            })
            .collect();
        StatusReport {
            role: "server".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            uptime_s: uptime.as_secs_f64(),
            tunnels,
            counters: counters_map(&s.counters),
            problem: None,
            relayed: Vec::new(),
        }
    }

    /// Human-readable table.
    pub fn to_table(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "braid {} {} — up {}",
            self.role,
            self.version,
            human_duration(self.uptime_s)
        );
        if let Some(p) = &self.problem {
            let _ = writeln!(o, "problem: {p}");
        }
        if self.role == "relay" {
            o.push_str(&self.relay_table());
            return o;
        }
        if self.tunnels.is_empty() {
            let _ = writeln!(o, "no clients connected");
        }
        for t in &self.tunnels {
            let who = match (&t.peer, &t.address) {
                (Some(p), Some(a)) => format!("client {p} ({a})"),
                (None, Some(a)) => format!("tunnel {a}"),
                _ => "tunnel (no address yet)".into(),
            };
            let state = if t.established {
                format!(
                    "established, latest handshake {} ago",
                    t.session_age_s.map_or("-".into(), human_duration)
                )
            } else if t.handshaking {
                "handshaking".into()
            } else {
                "down".into()
            };
            let _ = writeln!(
                o,
                "\n{who}: {state}; scheduler {}; reorder buffer {} pkts / {} (max {}), released {}, lost {}, late {}; pacing drops {}, slips {} ({:.0} ms)",
                t.scheduler,
                t.reorder_buffered_packets,
                human_bytes(t.reorder_buffered_bytes as u64),
                human_bytes(t.reorder_max_buffered_bytes as u64),
                t.reorder_released,
                t.reorder_lost,
                t.reorder_late,
                t.pacing_drops,
                t.pacing_slips,
                t.pacing_slip_ms
            );
            let header = [
                "PATH",
                "NAME",
                "STATE",
                "REMOTE",
                "RTT",
                "BANDWIDTH",
                "LOSS",
                "TX PKTS",
                "TX BYTES",
                "RX PKTS",
                "RX BYTES",
                "REORDER",
                "LAST RX",
            ];
            let mut rows = vec![header.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
            for p in &t.paths {
                rows.push(vec![
                    p.id.to_string(),
                    p.name.clone().unwrap_or_else(|| "-".into()),
                    match (&p.waiting, p.up) {
                        (Some(w), _) => w.clone(),
                        (None, true) => "up".into(),
                        (None, false) => "down".into(),
                    },
                    p.remote.clone().unwrap_or_else(|| "-".into()),
                    p.rtt_ms.map_or("-".into(), |v| format!("{v:.1} ms")),
                    p.bandwidth_bps.map_or("-".into(), human_rate),
                    format!("{:.1}%", p.loss_rate * 100.0),
                    p.tx_packets.to_string(),
                    human_bytes(p.tx_bytes),
                    p.rx_packets.to_string(),
                    human_bytes(p.rx_bytes),
                    format!(
                        "{} / {}",
                        p.reorder_buffered_packets,
                        human_bytes(p.reorder_buffered_bytes)
                    ),
                    p.last_rx_ago_ms
                        .map_or("-".into(), |v| format!("{:.0} ms", v)),
                ]);
            }
            o.push_str(&render_rows(&rows));
            o.push_str(&repair_lines(t));
        }
        let drops: Vec<String> = self
            .counters
            .iter()
            .filter(|(k, v)| (k.starts_with("drop_") || k.starts_with("handshake_")) && **v > 0)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(
            o,
            "\ndrops: {}",
            if drops.is_empty() {
                "none".into()
            } else {
                drops.join(" ")
            }
        );
        o
    }
}

impl StatusReport {
    /// A relay's table: one row per admitted client, then the datagrams
    /// it refused from addresses it does not admit.
    fn relay_table(&self) -> String {
        let header = [
            "CLIENT",
            "UP PKTS",
            "UP BYTES",
            "DOWN PKTS",
            "DOWN BYTES",
            "RATE-LIMITED UP",
            "RATE-LIMITED DOWN",
        ];
        let mut rows = vec![header.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
        for c in &self.relayed {
            rows.push(vec![
                c.name.clone(),
                c.up_packets.to_string(),
                human_bytes(c.up_bytes),
                c.down_packets.to_string(),
                human_bytes(c.down_bytes),
                c.up_limited.to_string(),
                c.down_limited.to_string(),
            ]);
        }
        let mut o = String::from("\n");
        o.push_str(&render_rows(&rows));
        let refused = self.counters.get("refused").copied().unwrap_or(0);
        let _ = writeln!(o, "\nrefused (addresses not admitted): {refused}");
        o
    }
}

/// The repair summary under a tunnel's path table.
fn repair_lines(t: &TunnelReport) -> String {
    let r = &t.repair;
    let mut o = format!(
        "repair: {} copies sent, {} losses left for congestion, {} given up; gaps filled {}, hold {:.0} ms\n",
        r.repairs_sent, r.skipped_congestion, r.abandoned, r.gaps_filled, r.hold_ms
    );
    let copies = t.counters.get("redundant_copies").copied().unwrap_or(0);
    let copy_bytes = t.counters.get("redundant_bytes").copied().unwrap_or(0);
    if copies > 0 {
        // What redundancy cost, against all the bytes the paths carried
        // (UDP payload plus the 28 bytes of IPv4 and UDP headers, as the
        // copies are counted).
        let data: u64 = t.paths.iter().map(|p| p.tx_bytes + 28 * p.tx_packets).sum();
        let share = if data > 0 {
            copy_bytes as f64 * 100.0 / data as f64
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "redundancy: {copies} copies, {} ({share:.1}% of the bytes sent)",
            human_bytes(copy_bytes)
        );
    }
    for p in &t.paths {
        let _ = write!(
            o,
            "  path {}: loss out {:.2}% (peer) in {:.2}%, repaired {}, residual {}, carried {} copies",
            p.id,
            p.repair.peer_loss_rate * 100.0,
            p.repair.rx_loss_rate * 100.0,
            p.repair.repaired_arq,
            p.repair.residual,
            p.repair.repairs_carried
        );
        if p.repair.copies_carried > 0 {
            let _ = write!(
                o,
                ", {} redundant ({})",
                p.repair.copies_carried,
                human_bytes(p.repair.copy_bytes)
            );
        }
        o.push('\n');
    }
    o
}

fn render_rows(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |c| c.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        let _ = writeln!(o, "{}", line.join("  ").trim_end());
    }
    o
}

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b < 1e3 {
        format!("{b} B")
    } else if b < 1e6 {
        format!("{:.1} kB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.2} GB", b / 1e9)
    }
}

fn human_rate(bps: f64) -> String {
    if bps < 1e6 {
        format!("{:.0} kbit/s", bps / 1e3)
    } else {
        format!("{:.1} Mbit/s", bps / 1e6)
    }
}

fn human_duration(s: f64) -> String {
    let s = s.max(0.0) as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `braid status` flags.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The instance: its TUN device name (`tun.name`, default braid0),
    /// whose control socket is /run/braid/NAME.sock. Default: every
    /// daemon with a socket in /run/braid.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// The daemon's control socket (`control_socket` in its configuration).
    #[arg(long, value_name = "PATH", conflicts_with = "name")]
    pub socket: Option<PathBuf>,
    /// Print the raw JSON report instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The control sockets in `dir`, by name.
fn sockets_in(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn run(a: StatusArgs) -> Result<()> {
    let sockets = match (a.socket, a.name) {
        (Some(s), _) => vec![s],
        (None, Some(n)) => {
            // The TUN device name, or an instance file /etc/braid/NAME.toml.
            let by_tun = default_control_socket(&n);
            let file = crate::instance::config_path(&n);
            if !by_tun.exists() && file.exists() {
                let role = crate::instance::role_of(&file)?;
                let s = match role {
                    crate::instance::Role::Server => {
                        crate::config::load_server(&file)?.control_socket
                    }
                    crate::instance::Role::Client => {
                        crate::config::load_client(&file)?.control_socket
                    }
                };
                vec![s.unwrap_or(by_tun)]
            } else {
                vec![by_tun]
            }
        }
        (None, None) => {
            let found = sockets_in(std::path::Path::new(RUN_DIR));
            if found.is_empty() {
                bail!(
                    "no braid daemon socket in {RUN_DIR}; is the daemon running? \
                     (pass --socket PATH if its configuration sets control_socket)"
                );
            }
            if found.len() > 1 && a.json {
                bail!(
                    "several braid daemons run here ({}); name one: braid status NAME --json",
                    found
                        .iter()
                        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            found
        }
    };
    for (i, socket) in sockets.iter().enumerate() {
        let json = query(socket)?;
        if a.json {
            println!("{}", json.trim_end());
        } else {
            let report: StatusReport = serde_json::from_str(&json)
                .with_context(|| format!("unexpected answer from {}", socket.display()))?;
            if sockets.len() > 1 {
                let name = socket.file_stem().unwrap_or_default().to_string_lossy();
                println!(
                    "{}== {name} ({}) ==",
                    if i > 0 { "\n" } else { "" },
                    socket.display()
                );
            }
            print!("{}", report.to_table());
        }
    }
    Ok(())
}

/// Asks the daemon at `socket` for its report (JSON text).
pub fn query(socket: &std::path::Path) -> Result<String> {
    command(socket, "status")
}

/// Sends one command line (`status`, `stop`) to the daemon at `socket`;
/// its answer.
pub fn command(socket: &std::path::Path, cmd: &str) -> Result<String> {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(socket).with_context(|| {
        format!(
            "cannot connect to {}; is the daemon running (and are you allowed to open its socket)?",
            socket.display()
        )
    })?;
    s.set_read_timeout(Some(StdDuration::from_secs(5)))?;
    s.write_all(format!("{cmd}\n").as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)
        .with_context(|| format!("reading the answer from {}", socket.display()))?;
    Ok(out)
}

#[cfg(test)]
mod tests;
