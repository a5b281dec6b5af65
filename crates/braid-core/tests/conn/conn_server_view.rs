//! What the server's status says about a client's paths (issue 9, point 4):
//! the names the client gave them, and an idle path's round trip measured
//! without the feedback batching delay.

use crate::conn_util;

use braid_core::path::PathId;
use braid_core::time::Duration;
use conn_util::{LinkSpec, Pair};

fn lan() -> LinkSpec {
    LinkSpec {
        rate_bps: 1e9,
        delay: Duration::from_micros(30),
    }
}

#[test]
fn the_server_shows_the_clients_path_names() {
    let mut pair = Pair::new(1, vec![lan(), lan()]);
    pair.client.set_path_name(PathId(0), "dsl");
    // Control characters are dropped and long names cut.
    pair.client.set_path_name(
        PathId(1),
        "lte\u{1b}[31m-with-a-name-far-too-long-for-a-table",
    );
    pair.run_for(Duration::from_millis(100));
    assert!(pair.client_established());
    let st = pair.server.status(pair.now);
    let names: Vec<Option<String>> = st.peers[0]
        .tunnel
        .paths
        .iter()
        .map(|p| p.name.clone())
        .collect();
    assert_eq!(
        names,
        vec![
            Some("dsl".to_string()),
            Some("lte[31m-with-a-name-far-too-lon".to_string())
        ]
    );
}

#[test]
fn an_unnamed_path_has_no_name_on_the_server() {
    let mut pair = Pair::new(2, vec![lan()]);
    pair.run_for(Duration::from_millis(100));
    let st = pair.server.status(pair.now);
    assert_eq!(st.peers[0].tunnel.paths[0].name, None);
}

#[test]
fn idle_rtt_on_the_server_is_the_links_round_trip() {
    let mut pair = Pair::new(3, vec![lan()]);
    pair.run_for(Duration::from_millis(100));
    // Some small packets both ways (their feedback waits up to 40 ms),
    // then an idle spell in which only keepalives flow.
    pair.stream(0..20, Duration::from_millis(5));
    pair.run_for(Duration::from_secs(3));
    let st = pair.server.status(pair.now);
    let rtt = st.peers[0].tunnel.paths[0].srtt.expect("an RTT");
    assert!(
        rtt < Duration::from_millis(1),
        "server shows {rtt:?} on a 60 us round trip"
    );
    // The server's own keepalives ride on the client's: one per half
    // second at most, not one per client keepalive.
    let sent = st.peers[0].tunnel.paths[0].tx_packets;
    let client = pair.client.status(pair.now).tunnel.paths[0].tx_packets;
    assert!(sent < client * 2, "server sent {sent}, client {client}");
}
