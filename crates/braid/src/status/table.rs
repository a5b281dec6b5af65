//! `braid status`'s table: a daemon's [`StatusReport`] as text, a table
//! of paths for each tunnel with its repair summary under it, then the
//! daemon's drops; a relay's table of the clients it admits.

use std::fmt::Write as _;

use super::{StatusReport, TunnelReport};

impl StatusReport {
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
                "\n{who}: {state}; scheduler {}; reorder buffer {} pkts / {} (max {}), released {}, lost {}, late {}; pacing drops {}, slips {} ({:.0} ms); delay rises {} (late originals {}); stranded {}; quiet {}",
                t.scheduler,
                t.reorder_buffered_packets,
                human_bytes(t.reorder_buffered_bytes as u64),
                human_bytes(t.reorder_max_buffered_bytes as u64),
                t.reorder_released,
                t.reorder_lost,
                t.reorder_late,
                t.pacing_drops,
                t.pacing_slips,
                t.pacing_slip_ms,
                t.delay_rises,
                t.late_originals,
                t.stranded,
                t.quiet_paths
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
                        .map_or("-".into(), |v| format!("{v:.0} ms")),
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
        "repair: {} copies sent, {} losses taken for congestion, {} given up; gaps filled {}, hold {:.0} ms\n",
        r.repairs_sent, r.congestion_losses, r.abandoned, r.gaps_filled, r.hold_ms
    );
    let counter = |k: &str| t.counters.get(k).copied().unwrap_or(0);
    let copies = counter("redundant_copies");
    let copy_bytes = counter("redundant_bytes");
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
    let compressed = counter("headers_compressed");
    if compressed > 0 || counter("drop_bad_header") > 0 {
        let _ = writeln!(
            o,
            "headers: {compressed} packets sent compressed ({} carrying their context), {} that did not rebuild",
            counter("header_installs"),
            counter("drop_bad_header")
        );
    }
    let (sent, received) = (counter("fec_parity_sent"), counter("fec_parity_received"));
    if sent > 0 || received > 0 {
        let _ = writeln!(
            o,
            "fec: {sent} parity frames sent ({}, {} reactive), {received} received, {} packets rebuilt",
            human_bytes(counter("fec_parity_bytes")),
            counter("fec_parity_reactive"),
            counter("fec_rebuilt")
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
