//! Rendering of status reports: table, Prometheus text, JSON round trip,
//! and the counter documentation check.

use super::*;

fn report() -> StatusReport {
    let path = PathReport {
        id: 0,
        name: Some("wlan".into()),
        up: true,
        remote: Some("192.0.2.1:51820".into()),
        rtt_ms: Some(21.5),
        min_rtt_ms: Some(20.0),
        bandwidth_bps: Some(9.5e6),
        pacing_rate_bps: None,
        loss_rate: 0.01,
        lost_packets: 3,
        in_flight_packets: 2,
        tx_packets: 100,
        tx_bytes: 150_000,
        rx_packets: 90,
        rx_bytes: 4_000,
        data_tx_packets: 95,
        data_rx_packets: 1,
        last_rx_ago_ms: Some(12.0),
        reorder_buffered_packets: 3,
        reorder_buffered_bytes: 4200,
        waiting: None,
        repair: PathRepairReport {
            repaired_arq: 5,
            residual: 1,
            repairs_carried: 4,
            peer_loss_rate: 0.02,
            rx_loss_rate: 0.01,
            copies_carried: 6,
            copy_bytes: 1500,
        },
    };
    StatusReport {
        role: "client".into(),
        version: "0.1.0".into(),
        uptime_s: 75.0,
        tunnels: vec![TunnelReport {
            rpc: None,
            peer: Some("lap\"top".into()),
            public_key: None,
            address: Some("10.77.0.2/24".into()),
            established: true,
            handshaking: false,
            session_age_s: Some(30.0),
            scheduler: "PET".into(),
            reorder_buffered_packets: 3,
            reorder_buffered_bytes: 4200,
            reorder_max_buffered_bytes: 9000,
            reorder_released: 95,
            reorder_lost: 1,
            reorder_late: 0,
            reorder_duplicates: 0,
            pacing_drops: 7,
            pacing_slips: 2,
            pacing_slip_ms: 31.4,
            delay_rises: 1,
            late_originals: 3,
            stranded: 4,
            quiet_paths: 2,
            repair: TunnelRepairReport {
                repairs_sent: 5,
                hold_ms: 120.0,
                ..Default::default()
            },
            paths: vec![path],
            counters: [
                ("redundant_copies".to_string(), 6u64),
                ("redundant_bytes".to_string(), 1500),
                ("fec_parity_sent".to_string(), 40),
                ("fec_parity_bytes".to_string(), 52_000),
                ("fec_parity_reactive".to_string(), 3),
                ("fec_parity_received".to_string(), 12),
                ("fec_rebuilt".to_string(), 9),
                ("headers_compressed".to_string(), 900),
                ("header_installs".to_string(), 30),
            ]
            .into_iter()
            .collect(),
        }],
        counters: [
            ("drop_replay".to_string(), 2u64),
            ("rx_bytes".to_string(), 5),
        ]
        .into_iter()
        .collect(),
        problem: None,
        relayed: Vec::new(),
    }
}

#[test]
fn table_shows_paths_and_drops() {
    let t = report().to_table();
    assert!(t.contains("up 1m15s"), "{t}");
    assert!(t.contains("reorder buffer 3 pkts / 4.2 kB"), "{t}");
    assert!(t.contains("wlan"), "{t}");
    assert!(t.contains("21.5 ms"), "{t}");
    assert!(t.contains("9.5 Mbit/s"), "{t}");
    assert!(t.contains("1.0%"), "{t}");
    assert!(t.contains("drops: drop_replay=2"), "{t}");
    assert!(t.contains("REORDER") && t.contains("3 / 4.2 kB"), "{t}");
    assert!(t.contains("pacing drops 7, slips 2 (31 ms)"), "{t}");
    assert!(
        t.contains("delay rises 1 (late originals 3); stranded 4; quiet 2"),
        "{t}"
    );
    assert!(t.contains("repair: 5 copies sent"), "{t}");
    assert!(t.contains("hold 120 ms"), "{t}");
    assert!(t.contains("repaired 5, residual 1"), "{t}");
    assert!(
        t.contains("redundancy: 6 copies, 1.5 kB (1.0% of the bytes sent)"),
        "{t}"
    );
    assert!(t.contains("6 redundant (1.5 kB)"), "{t}");
    assert!(
        t.contains(
            "fec: 40 parity frames sent (52.0 kB, 3 reactive), 12 received, 9 packets rebuilt"
        ),
        "{t}"
    );
    assert!(
        t.contains("headers: 900 packets sent compressed (30 carrying their context), 0 that did not rebuild"),
        "{t}"
    );
    assert!(t.contains("latest handshake 30s ago"), "{t}");
}

/// Every counter the daemons export has a HELP text of its own and a
/// row in docs/DEPLOY.md's counter table.
#[test]
fn every_counter_is_explained_and_documented() {
    let doc = include_str!("../../../../docs/DEPLOY.md");
    let daemon = ["udp_receive_errors", "icmp_errors"];
    let core = Counters::default();
    let names = core.fields().map(|(n, _)| n);
    for name in names.iter().chain(daemon.iter()) {
        assert!(
            !counter_help(name).starts_with("A braid counter"),
            "no HELP text for {name}"
        );
        assert!(
            doc.contains(&format!("| `{name}` |")),
            "{name} is missing from docs/DEPLOY.md's counter table"
        );
    }
}

/// `Counters::fields` (and `Counters::add`, declared from the same list)
/// names every counter the core keeps, so none is kept without reaching
/// `braid status`, the metrics and the server's totals (the FEC counters
/// once were).
#[test]
fn every_core_counter_is_exported() {
    let debug = format!("{:?}", Counters::default());
    let kept = debug.matches(": 0").count();
    let names = Counters::default().fields().map(|(n, _)| n);
    assert_eq!(kept, names.len(), "{debug}");
    for name in names {
        assert!(
            debug.contains(&format!("{name}: 0")),
            "{name} is not a field"
        );
    }
}

#[test]
fn prometheus_format() {
    let m = report().to_prometheus();
    assert!(m.contains("# TYPE braid_path_rtt_seconds gauge"), "{m}");
    assert!(
        m.contains("braid_path_rtt_seconds{peer=\"lap\\\"top\",path=\"0\",name=\"wlan\"} 0.0215"),
        "{m}"
    );
    assert!(m.contains("braid_drop_replay_total 2"), "{m}");
    assert!(
        m.contains("braid_pacing_drops_total{peer=\"lap\\\"top\"} 7"),
        "{m}"
    );
    assert!(
        m.contains(
            "braid_path_reorder_buffered_bytes{peer=\"lap\\\"top\",path=\"0\",name=\"wlan\"} 4200"
        ),
        "{m}"
    );
    assert_eq!(m.matches("# TYPE braid_path_up").count(), 1);
    assert!(
        m.contains("braid_path_repaired_arq_total{peer=\"lap\\\"top\",path=\"0\",name=\"wlan\"} 5"),
        "{m}"
    );
    assert!(
        m.contains("braid_reorder_hold_seconds{peer=\"lap\\\"top\"} 0.12"),
        "{m}"
    );
    assert!(
        m.contains(
            "braid_path_redundant_bytes_total{peer=\"lap\\\"top\",path=\"0\",name=\"wlan\"} 1500"
        ),
        "{m}"
    );
}

#[test]
fn json_round_trip() {
    let r = report();
    let j = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<StatusReport>(&j).unwrap(), r);
}

#[test]
fn a_relays_table_shows_each_client_and_the_refused() {
    let r = StatusReport {
        role: "relay".into(),
        version: "0.1.0".into(),
        uptime_s: 5.0,
        tunnels: Vec::new(),
        counters: [("refused".to_string(), 4u64)].into_iter().collect(),
        problem: None,
        relayed: vec![RelayClientReport {
            name: "alice".into(),
            up_packets: 10,
            up_bytes: 12_000,
            down_packets: 3,
            down_bytes: 200,
            up_limited: 1,
            down_limited: 0,
        }],
    };
    let t = r.to_table();
    assert!(t.contains("alice"), "{t}");
    assert!(t.contains("refused (addresses not admitted): 4"), "{t}");
    assert!(!t.contains("no clients connected"), "{t}");
    let back: StatusReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
}
