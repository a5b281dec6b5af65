//! What `braid status` shows and `/metrics` exports, and the `braid
//! status` command itself.
//!
//! The running daemon answers on its control socket (a Unix socket; path
//! `control_socket` in its configuration): a client connects, writes the
//! line `status`, and reads one JSON [`StatusReport`] until the daemon
//! closes the connection. `braid status` renders it as a table (or passes
//! the JSON through with `--json`); the Prometheus endpoint renders the
//! same report in the text exposition format.
//!
//! Here: the report and how it is made from the core's status; the table
//! in [`table`], the Prometheus text in [`metrics`], and the command and
//! the control socket's protocol in [`control`].

use std::collections::BTreeMap;
use std::time::Duration as StdDuration;

use braid_core::conn::{ClientStatus, Counters, PathStatus, ServerStatus, TunnelStatus};
use braid_core::time::Duration;
use serde::{Deserialize, Serialize};

mod control;
mod metrics;
mod table;

pub use control::{command, query, run, StatusArgs};
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
    /// Times a path's base delay followed a lasting rise of its delay (a
    /// handover, a reroute), and reports of originals that came after
    /// their packet had been repaired on another path (each measured its
    /// path; `braid_core::path::OwdEstimator::follow_rise`).
    #[serde(default)]
    pub delay_rises: u64,
    #[serde(default)]
    pub late_originals: u64,
    /// Packets taken off a path whose rate fell, where they would have
    /// waited behind its queue, and repaired on another path
    /// (`braid_core::sender` `stranded.rs`).
    #[serde(default)]
    pub stranded: u64,
    /// Times a path went quiet: it stopped reporting while the other
    /// paths went on, and its packets were copied to them
    /// (`braid_core::sender` `quiet.rs`).
    #[serde(default)]
    pub quiet_paths: u64,
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
    /// The rate the path is paced at; absent while it is not paced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_rate_bps: Option<f64>,
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
            pacing_rate_bps: None,
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
    /// Path losses this side took for congestion (repaired all the same).
    pub congestion_losses: u64,
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
        pacing_rate_bps: p.pacing_rate_bps,
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
        reorder_lost: r.lost(),
        reorder_late: r.late,
        reorder_duplicates: r.duplicates,
        pacing_drops: t.sender.pacing_drops,
        pacing_slips: t.sender.pacing_slips,
        pacing_slip_ms: t.sender.pacing_slip_ns as f64 / 1e6,
        delay_rises: t.sender.delay_rises,
        late_originals: t.sender.late_originals,
        stranded: t.sender.stranded,
        quiet_paths: t.sender.quiet_paths,
        repair: TunnelRepairReport {
            repairs_sent: t.sender.repairs_sent,
            congestion_losses: t.sender.losses_congestion,
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
}

#[cfg(test)]
mod tests;
