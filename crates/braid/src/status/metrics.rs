//! The Prometheus text exposition of a [`StatusReport`] (what `/metrics`
//! serves), with a HELP line of its own for every metric.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{PathRepairReport, StatusReport, TunnelRepairReport};

impl StatusReport {
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
        "drop_kernel_handshake" => "Server: datagrams the kernel dropped on the handshake socket: its small receive buffer full under a flood, or no initiation by type and length.",
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
        "rate_probes_sent" => "Filler packets sent in rate probe pairs, on paths without a rate estimate while the tunnel was quiet.",
        "rate_probe_fillers" => "The peer's rate probe filler packets received and dropped.",
        "startup_held" => "Client: inner packets held at the tunnel's start until every path was up and measured (at most 1 s, and within the inner TCP's first timeout), then sent.",
        "redundant_copies" => "Redundant copies of inner packets sent on a second path (the redundant mode).",
        "redundant_bytes" => "Bytes the redundant copies took on the paths (inner packet plus tunnel overhead): what redundancy cost.",
        "fec_parity_sent" => "FEC parity frames sent (repair = fec or auto), proactive and reactive.",
        "fec_parity_bytes" => "Bytes of the FEC parity frames sent (frame bytes, without the tunnel overhead).",
        "fec_parity_reactive" => "Of the FEC parity frames sent, those sent for a reported loss (MPLOT eq 10).",
        "fec_parity_received" => "The peer's FEC parity frames received.",
        "fec_rebuilt" => "Inner packets rebuilt from the peer's FEC parity.",
        "headers_compressed" => "Inner packets sent with compressed IPv4/TCP headers (26 bytes instead of 52).",
        "header_installs" => "Of the packets sent compressed, those that also carried their connection's header context (until the peer reports one).",
        "drop_bad_header" => "Data frames dropped: compressed headers that did not rebuild (a context never installed, or malformed).",
        "icmp_errors" => "Client: ICMP errors (port or host unreachable) for datagrams sent to the server.",
        _ => "A braid counter; see the counter table in docs/DEPLOY.md.",
    }
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
    m.counter(
        "braid_path_redundant_copies_total",
        "Redundant copies (the redundant mode) the path carried.",
        l,
        r.copies_carried as f64,
    );
    m.counter(
        "braid_path_redundant_bytes_total",
        "Bytes of redundant copies the path carried.",
        l,
        r.copy_bytes as f64,
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
        "braid_congestion_losses_total",
        "Path losses taken for congestion (repaired all the same).",
        peer,
        r.congestion_losses as f64,
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
