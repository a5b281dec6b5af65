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
    /// Loss repair inside the tunnel (both directions as this side sees them).
    #[serde(default)]
    pub repair: TunnelRepairReport,
    pub paths: Vec<PathReport>,
    pub counters: BTreeMap<String, u64>,
}

/// One path.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PathReport {
    pub id: u8,
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
        name: names.get(p.id.0 as usize).cloned(),
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
        repair: TunnelRepairReport {
            repairs_sent: t.sender.repairs_sent,
            skipped_congestion: t.sender.repairs_skipped_congestion,
            abandoned: t.sender.repairs_abandoned,
            gaps_filled: r.gaps_filled,
            hold_ms: r.hold_ns as f64 / 1e6,
        },
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
                "\n{who}: {state}; scheduler {}; reorder buffer {} pkts / {} (max {}), released {}, lost {}, late {}; pacing drops {}",
                t.scheduler,
                t.reorder_buffered_packets,
                human_bytes(t.reorder_buffered_bytes as u64),
                human_bytes(t.reorder_max_buffered_bytes as u64),
                t.reorder_released,
                t.reorder_lost,
                t.reorder_late,
                t.pacing_drops
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

    /// Prometheus text exposition format (version 0.0.4).
    pub fn to_prometheus(&self) -> String {
        let mut m = Metrics::default();
        m.gauge(
            "braid_uptime_seconds",
            "Seconds since the daemon started.",
            "",
            self.uptime_s,
        );
        for (k, v) in &self.counters {
            m.counter(&format!("braid_{k}_total"), counter_help(k), "", *v as f64);
        }
        for t in &self.tunnels {
            // The client's own tunnel has no peer label.
            let peer = t
                .peer
                .as_deref()
                .map(|p| label("peer", p))
                .unwrap_or_default();
            m.gauge(
                "braid_tunnel_established",
                "1 if a session exists.",
                &peer,
                t.established as u8 as f64,
            );
            m.gauge(
                "braid_reorder_buffered_packets",
                "Packets waiting in the reorder buffer.",
                &peer,
                t.reorder_buffered_packets as f64,
            );
            m.gauge(
                "braid_reorder_buffered_bytes",
                "Bytes waiting in the reorder buffer.",
                &peer,
                t.reorder_buffered_bytes as f64,
            );
            m.counter(
                "braid_reorder_lost_total",
                "Sequence numbers the resequencer gave up on.",
                &peer,
                t.reorder_lost as f64,
            );
            m.counter(
                "braid_pacing_drops_total",
                "Inner packets dropped because a path's pacing queue was full.",
                &peer,
                t.pacing_drops as f64,
            );
            for p in &t.paths {
                let l = format!(
                    "{peer},{},{}",
                    label("path", &p.id.to_string()),
                    label("name", p.name.as_deref().unwrap_or(""))
                );
                m.gauge(
                    "braid_path_up",
                    "1 if the path is in use.",
                    &l,
                    p.up as u8 as f64,
                );
                if let Some(v) = p.rtt_ms {
                    m.gauge(
                        "braid_path_rtt_seconds",
                        "Smoothed round-trip time.",
                        &l,
                        v / 1e3,
                    );
                }
                if let Some(v) = p.bandwidth_bps {
                    m.gauge(
                        "braid_path_bandwidth_bits_per_second",
                        "Packet-pair bandwidth estimate of the sending direction.",
                        &l,
                        v,
                    );
                }
                m.gauge(
                    "braid_path_loss_ratio",
                    "Smoothed loss rate of the sending direction.",
                    &l,
                    p.loss_rate,
                );
                m.counter(
                    "braid_path_tx_packets_total",
                    "Datagrams sent on the path.",
                    &l,
                    p.tx_packets as f64,
                );
                m.counter(
                    "braid_path_tx_bytes_total",
                    "UDP payload bytes sent on the path.",
                    &l,
                    p.tx_bytes as f64,
                );
                m.counter(
                    "braid_path_rx_packets_total",
                    "Authenticated datagrams received on the path.",
                    &l,
                    p.rx_packets as f64,
                );
                m.counter(
                    "braid_path_rx_bytes_total",
                    "UDP payload bytes received on the path.",
                    &l,
                    p.rx_bytes as f64,
                );
                m.counter(
                    "braid_path_lost_packets_total",
                    "Data packets sent on the path and declared lost.",
                    &l,
                    p.lost_packets as f64,
                );
                m.gauge(
                    "braid_path_reorder_buffered_bytes",
                    "Out-of-order bytes from the path waiting to be resequenced.",
                    &l,
                    p.reorder_buffered_bytes as f64,
                );
                path_repair_metrics(&mut m, &l, &p.repair);
            }
            tunnel_repair_metrics(&mut m, &peer, &t.repair);
        }
        m.finish()
    }
}

/// What each daemon-wide counter counts, for the metrics' HELP lines; the
/// same words as the counter table in docs/DEPLOY.md (a test checks that
/// every counter is in both).
pub fn counter_help(name: &str) -> &'static str {
    match name {
        "rx_datagrams" => "UDP datagrams received (all kinds).",
        "rx_bytes" => "UDP payload bytes received.",
        "tx_datagrams" => "UDP datagrams sent (all kinds).",
        "tx_bytes" => "UDP payload bytes sent.",
        "packets_sent" => "Inner packets taken from the TUN device into the tunnel.",
        "packets_delivered" => "Inner packets delivered to the TUN device, in order.",
        "handshakes" => "Handshakes completed.",
        "drop_malformed" => "Datagrams dropped: not a braid packet (scanners, other protocols).",
        "drop_unknown_index" => "Datagrams dropped: for a session this side does not hold (the peer restarted; normal for a moment).",
        "drop_auth_failed" => "Datagrams dropped: failed authentication (corrupted or forged).",
        "drop_replay" => "Datagrams dropped: replayed or duplicated.",
        "drop_expired" => "Datagrams dropped: on an expired session.",
        "drop_bad_frame" => "Datagrams dropped: authenticated, but not a valid frame (another braid version?).",
        "drop_bad_path" => "Datagrams dropped: naming a path this side does not have.",
        "handshake_failed" => "Handshake messages that failed after MAC1 checked out: wrong server key, corruption, version mismatch.",
        "handshake_bad_mac" => "Server: handshake initiations with a wrong MAC1 (the sender does not know the server's public key); each costs one hash.",
        "handshake_cookie" => "Cookie replies: sent by the server under load instead of a handshake; received by the client.",
        "handshake_rate_limited" => "Server: initiations with a valid cookie dropped under load by the per-address limit.",
        "drop_handshake_queue" => "Server: initiations dropped before the handshake queue (queue full, or the source over its admission rate).",
        "drop_stale" => "Server: datagrams that waited in the daemon's queue too long (100 ms; initiations 500 ms).",
        "drop_kernel_rxq" => "Server: datagrams the kernel dropped because the socket's receive buffer was full (SO_RXQ_OVFL).",
        "handshake_unknown_client" => "Handshake initiations from a key not in the server's client list.",
        "handshake_replay" => "Handshake initiations replayed or too frequent (a client sends one per path; all but the first count here).",
        "drop_spoofed" => "Inner packets dropped on the server: a client's packet with a source address not its own.",
        "drop_not_ipv4" => "Inner packets dropped: not IPv4 (the tunnel carries IPv4).",
        "drop_no_route" => "Inner packets dropped on the server: for a tunnel address with no connected client.",
        "drop_no_session" => "Inner packets dropped: no session yet (handshake in progress).",
        "drop_no_path" => "Inner packets dropped: no path usable at that moment.",
        "drop_too_large" => "Inner packets dropped: larger than the tunnel MTU.",
        "drop_output_overflow" => "Outputs dropped because the daemon fell behind the protocol core.",
        "stray_datagrams" => "Client: datagrams from an address other than the configured server's (accepted only if they authenticate).",
        "udp_receive_errors" => "Failed reads of a UDP socket (each followed by a growing pause).",
        "icmp_errors" => "Client: ICMP errors (port or host unreachable) for datagrams sent to the server.",
        _ => "A braid counter; see the counter table in docs/DEPLOY.md.",
    }
}

/// The repair summary under a tunnel's path table.
fn repair_lines(t: &TunnelReport) -> String {
    let r = &t.repair;
    let mut o = format!(
        "repair: {} copies sent, {} losses left for congestion, {} given up; gaps filled {}, hold {:.0} ms\n",
        r.repairs_sent, r.skipped_congestion, r.abandoned, r.gaps_filled, r.hold_ms
    );
    for p in &t.paths {
        let _ = writeln!(
            o,
            "  path {}: loss out {:.2}% (peer) in {:.2}%, repaired {}, residual {}, carried {} copies",
            p.id,
            p.repair.peer_loss_rate * 100.0,
            p.repair.rx_loss_rate * 100.0,
            p.repair.repaired_arq,
            p.repair.residual,
            p.repair.repairs_carried
        );
    }
    o
}

fn path_repair_metrics(m: &mut Metrics, l: &str, r: &PathRepairReport) {
    m.counter(
        "braid_path_repaired_arq_total",
        "Losses of the sending direction repaired by retransmission in the tunnel.",
        l,
        r.repaired_arq as f64,
    );
    m.counter(
        "braid_path_residual_losses_total",
        "Losses of the sending direction passed on to the inner traffic.",
        l,
        r.residual as f64,
    );
    m.counter(
        "braid_path_repairs_carried_total",
        "Repair copies the path carried.",
        l,
        r.repairs_carried as f64,
    );
    m.gauge(
        "braid_path_peer_loss_ratio",
        "Loss rate of the sending direction as the peer's receiver measured it.",
        l,
        r.peer_loss_rate,
    );
    m.gauge(
        "braid_path_rx_loss_ratio",
        "Loss rate of the receiving direction as this side measures it.",
        l,
        r.rx_loss_rate,
    );
}

fn tunnel_repair_metrics(m: &mut Metrics, peer: &str, r: &TunnelRepairReport) {
    m.counter(
        "braid_repairs_sent_total",
        "Repair copies sent.",
        peer,
        r.repairs_sent as f64,
    );
    m.counter(
        "braid_repairs_skipped_congestion_total",
        "Losses taken for congestion and left to the inner traffic.",
        peer,
        r.skipped_congestion as f64,
    );
    m.gauge(
        "braid_reorder_hold_seconds",
        "How long the resequencer holds a gap.",
        peer,
        r.hold_ms / 1e3,
    );
}

/// Collects samples per metric so HELP/TYPE appear once per name.
#[derive(Default)]
struct Metrics {
    order: Vec<String>,
    by_name: BTreeMap<String, (String, &'static str, Vec<String>)>,
}

impl Metrics {
    fn add(&mut self, name: &str, help: &str, kind: &'static str, labels: &str, v: f64) {
        let e = self.by_name.entry(name.to_string()).or_insert_with(|| {
            self.order.push(name.to_string());
            (help.to_string(), kind, Vec::new())
        });
        let labels = labels.trim_matches(',');
        let sample = if labels.is_empty() {
            format!("{name} {v}")
        } else {
            format!("{name}{{{labels}}} {v}")
        };
        e.2.push(sample);
    }
    fn gauge(&mut self, name: &str, help: &str, labels: &str, v: f64) {
        self.add(name, help, "gauge", labels, v)
    }
    fn counter(&mut self, name: &str, help: &str, labels: &str, v: f64) {
        self.add(name, help, "counter", labels, v)
    }
    fn finish(self) -> String {
        let mut o = String::new();
        for name in &self.order {
            let (help, kind, samples) = &self.by_name[name];
            let _ = writeln!(o, "# HELP {name} {help}");
            let _ = writeln!(o, "# TYPE {name} {kind}");
            for s in samples {
                let _ = writeln!(o, "{s}");
            }
        }
        o
    }
}

/// `key="value"` with the exposition format's escapes.
fn label(key: &str, value: &str) -> String {
    let v = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("{key}=\"{v}\"")
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
