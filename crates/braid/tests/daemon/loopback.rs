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
use std::time::Duration;

use braid::config::{load_client, load_server};
use braid::daemon::client::ClientDaemon;
use braid::daemon::server::ServerDaemon;
use braid::daemon::tun::{channel_tun, ChannelTunFactory};
use braid::keygen::write_private_key;
use braid_core::crypto::PrivateKey;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use crate::daemon_util;
use daemon_util::*;

#[tokio::test(flavor = "current_thread")]
async fn loopback_three_paths_both_ways() {
    let dir = tempdir("loopback");
    let d = &dir.0;
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let (sk, ck) = (
        PrivateKey::generate(&mut rng),
        PrivateKey::generate(&mut rng),
    );
    write_private_key(&d.join("server.key"), &sk, false).unwrap();
    write_private_key(&d.join("client.key"), &ck, false).unwrap();
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
    std::fs::write(d.join("server.toml"), server_toml).unwrap();
    let settings = load_server(&d.join("server.toml")).unwrap();
    let (server_tun, mut server_host) = channel_tun(1024);
    let server = ServerDaemon::start(settings, server_tun).await.unwrap();
    let port = server.local_addr().port();
    let server_metrics = server.metrics_addr().unwrap();
    let (stop_server, server_stop) = oneshot::channel::<()>();
    let server_task = tokio::spawn(server.run(async {
        let _ = server_stop.await;
    }));

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
    std::fs::write(d.join("client.toml"), client_toml).unwrap();
    let settings = load_client(&d.join("client.toml")).unwrap();
    let (client_tun, mut client_host) = channel_tun(1024);
    let client = ClientDaemon::start(settings, ChannelTunFactory(Some(client_tun)))
        .await
        .unwrap();
    let (stop_client, client_stop) = oneshot::channel::<()>();
    let client_task = tokio::spawn(client.run(async {
        let _ = client_stop.await;
    }));

    // Wait until the tunnel and all three paths are up.
    let client_sock = d.join("client.sock");
    let server_sock = d.join("server.sock");
    let mut ready = false;
    for _ in 0..100 {
        let r = status(&client_sock).await;
        let t = &r.tunnels[0];
        if t.established && t.paths.len() == 3 && t.paths.iter().all(|p| p.up) {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ready, "tunnel not up: {:?}", status(&client_sock).await);
    let r = status(&client_sock).await;
    assert_eq!(r.tunnels[0].address.as_deref(), Some("10.77.0.2/24"));
    let me = Ipv4Addr::new(10, 77, 0, 2);

    // 1 MiB each way.
    let mut up = vec![0u8; TOTAL];
    let mut down = vec![0u8; TOTAL];
    rng.fill_bytes(&mut up);
    rng.fill_bytes(&mut down);
    let t0 = std::time::Instant::now();
    let (up_got, down_got) = exchange(&up, &down, &mut client_host, &mut server_host, me).await;
    eprintln!("exchange took {:?}", t0.elapsed());
    assert_eq!(
        Sha256::digest(&up_got),
        Sha256::digest(&up),
        "uplink data differs"
    );
    assert_eq!(
        Sha256::digest(&down_got),
        Sha256::digest(&down),
        "downlink data differs"
    );

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
    stop_client.send(()).unwrap();
    client_task.await.unwrap().unwrap();
    assert!(!client_sock.exists(), "control socket removed on exit");
    let mut gone = false;
    for _ in 0..50 {
        if status(&server_sock).await.tunnels.is_empty() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "server kept the client's state after its goodbye");
    stop_server.send(()).unwrap();
    server_task.await.unwrap().unwrap();
}
