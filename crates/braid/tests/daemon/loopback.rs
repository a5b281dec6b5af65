//! The whole daemon in-process: `braid server` and `braid client` loaded
//! from real configuration files, talking over 127.0.0.1 UDP with three
//! client paths (sockets bound to 127.0.0.1, .2 and .3), in-memory TUN
//! devices on both ends. 1 MiB of random data goes each way and must
//! arrive intact (SHA-256); the control socket, `braid status` rendering
//! and `/metrics` are checked on the running daemons, and the client's
//! goodbye frees the server's state.

use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;

use crate::daemon_util;
use daemon_util::*;

#[tokio::test(flavor = "current_thread")]
async fn loopback_three_paths_both_ways() {
    let Setup {
        dir,
        server_key: sk,
        client_key: ck,
        mut rng,
    } = setup("loopback", 7);
    let d = &dir.0;
    let mode = std::fs::metadata(d.join("client.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Server.
    let server_toml = format!(
        r#"listen = "127.0.0.1:0"
private_key_file = "server.key"
network = "10.77.0.0/24"
scheduler = "rr"
control_socket = "{sock}"
[metrics]
listen = "127.0.0.1:0"
[[client]]
name = "laptop"
public_key = "{pk}"
"#,
        sock = d.join("server.sock").display(),
        pk = ck.public_key().to_base64()
    );
    let server = run_server(d, &server_toml, 1024).await;
    let (port, server_metrics) = (server.port, server.metrics.unwrap());
    let mut server = server.daemon;

    // Client with three paths over 127.0.0.1..3.
    let client_toml = format!(
        r#"server = "127.0.0.1:{port}"
server_public_key = "{spk}"
private_key_file = "client.key"
scheduler = "rr"
control_socket = "{sock}"
[metrics]
enabled = false
[[path]]
name = "one"
bind = "127.0.0.1"
[[path]]
name = "two"
bind = "127.0.0.2"
[[path]]
name = "three"
bind = "127.0.0.3"
"#,
        spk = sk.public_key().to_base64(),
        sock = d.join("client.sock").display(),
    );
    let mut client = run_client(d, &client_toml, 1024).await;

    // Wait until the tunnel and all three paths are up.
    let client_sock = d.join("client.sock");
    let server_sock = d.join("server.sock");
    wait_paths_up(&client_sock, 3, 2).await;
    let r = status(&client_sock).await;
    assert_eq!(r.tunnels[0].address.as_deref(), Some("10.77.0.2/24"));
    let me = Ipv4Addr::new(10, 77, 0, 2);

    // 1 MiB each way.
    exchange_random(&mut rng, &mut client, &mut server, me).await;

    // Every path carried data both ways.
    let packets = TOTAL.div_ceil(CHUNK) as u64;
    let c = status(&client_sock).await;
    for p in &c.tunnels[0].paths {
        assert!(p.data_tx_packets >= packets / 4, "uplink on {p:?}");
        assert!(p.data_rx_packets >= packets / 4, "downlink on {p:?}");
        assert!(p.rtt_ms.is_some());
    }
    assert_eq!(c.counters["packets_delivered"], packets);
    let table = c.to_table();
    assert!(
        table.contains("three") && table.contains("10.77.0.2/24"),
        "{table}"
    );
    let s = status(&server_sock).await;
    assert_eq!(s.role, "server");
    assert_eq!(s.tunnels.len(), 1);
    assert_eq!(s.tunnels[0].peer.as_deref(), Some("laptop"));
    assert_eq!(s.counters["packets_delivered"], packets);
    assert_eq!(s.counters["drop_spoofed"], 0);

    // Prometheus endpoint.
    let body = tokio::task::spawn_blocking(move || {
        let mut t = std::net::TcpStream::connect(server_metrics).unwrap();
        t.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut s = String::new();
        t.read_to_string(&mut s).unwrap();
        s
    })
    .await
    .unwrap();
    assert!(body.starts_with("HTTP/1.1 200 OK"), "{body}");
    assert!(
        body.contains("braid_path_rtt_seconds{peer=\"laptop\",path=\"2\""),
        "{body}"
    );
    assert!(body.contains("braid_packets_delivered_total"), "{body}");

    // The client's goodbye frees the server's state.
    client.stop().await;
    assert!(!client_sock.exists(), "control socket removed on exit");
    wait_status(
        &server_sock,
        1,
        "the server to free the client's state after its goodbye",
        |r| r.tunnels.is_empty(),
    )
    .await;
    server.stop().await;
}
