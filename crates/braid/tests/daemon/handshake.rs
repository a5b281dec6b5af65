//! The handshake and status as a deployment meets them, with the whole
//! daemon in-process over loopback UDP (in-memory TUN devices, no root):
//! replies from the address the client wrote to, failures that say what
//! is wrong, an idle RTT without the feedback batching delay.

use std::path::Path;
use std::time::Duration;

use braid_core::crypto::PrivateKey;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::daemon_util;
use daemon_util::{run_client, run_server, setup, wait_status, Running};

/// Starts a server on `listen` admitting `admitted`; returns its port.
async fn start_server(d: &Path, listen: &str, admitted: &str) -> (u16, Running) {
    let toml = format!(
        "listen = \"{listen}\"\nprivate_key_file = \"server.key\"\nnetwork = \"10.77.0.0/24\"\n\
         control_socket = \"{sock}\"\n[metrics]\nenabled = false\n\
         [[client]]\nname = \"laptop\"\npublic_key = \"{admitted}\"\n",
        sock = d.join("server.sock").display(),
    );
    let server = run_server(d, &toml, 64).await;
    (server.port, server.daemon)
}

/// Starts a client of `server` trusting `server_key`, one path bound to 127.0.0.1.
async fn start_client(d: &Path, server: &str, server_key: &str) -> Running {
    let toml = format!(
        "server = \"{server}\"\nserver_public_key = \"{server_key}\"\nprivate_key_file = \"client.key\"\n\
         control_socket = \"{sock}\"\n[metrics]\nenabled = false\n\
         [[path]]\nname = \"wired\"\nbind = \"127.0.0.1\"\n",
        sock = d.join("client.sock").display(),
    );
    run_client(d, &toml, 64).await
}

/// A server on the wildcard address with more than one address of its
/// own (loopback has all of 127/8) answers from the address the client
/// wrote to: 127.0.0.2, not the kernel's pick for a reply to 127.0.0.1
/// (127.0.0.1). The client sees no datagram from a stranger.
#[tokio::test(flavor = "current_thread")]
async fn wildcard_server_replies_from_the_address_the_client_used() {
    let s = setup("wildcard", 11);
    let d = &s.dir.0;
    let (port, server) = start_server(d, "0.0.0.0:0", &s.client_key.public_key().to_base64()).await;
    let client = start_client(
        d,
        &format!("127.0.0.2:{port}"),
        &s.server_key.public_key().to_base64(),
    )
    .await;
    let r = wait_status(&d.join("client.sock"), 5, "the tunnel", |r| {
        r.tunnels[0].established && r.tunnels[0].paths.iter().all(|p| p.up)
    })
    .await;
    assert_eq!(r.counters["stray_datagrams"], 0, "{r:#?}");
    assert_eq!(
        r.tunnels[0].paths[0].remote.as_deref(),
        Some(format!("127.0.0.2:{port}").as_str())
    );
    client.stop().await;
    server.stop().await;
}

/// A daemon whose TUN device fails stops with an error (and so exits
/// non-zero) instead of staying up without its device.
#[tokio::test(flavor = "current_thread")]
async fn a_failed_tun_device_stops_the_daemons_with_an_error() {
    let s = setup("tunfail", 12);
    let d = &s.dir.0;
    let (port, server) =
        start_server(d, "127.0.0.1:0", &s.client_key.public_key().to_base64()).await;
    let client = start_client(
        d,
        &format!("127.0.0.1:{port}"),
        &s.server_key.public_key().to_base64(),
    )
    .await;
    wait_status(&d.join("client.sock"), 5, "the tunnel", |r| {
        r.tunnels[0].established
    })
    .await;
    // The host side goes away: the devices' reads fail.
    for r in [client, server] {
        drop(r.host);
        let e = tokio::time::timeout(Duration::from_secs(5), r.task)
            .await
            .expect("the daemon stopped")
            .unwrap()
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("reading the TUN device failed"),
            "{e:#}"
        );
    }
}

/// A client whose key the server does not list: the server names the
/// key and says how to admit it; the client, which gets no answer, says
/// what to check, with its own public key.
#[tokio::test(flavor = "current_thread")]
async fn unknown_client_key_is_named_on_both_sides() {
    let s = setup("unknown", 13);
    let d = &s.dir.0;
    let other = PrivateKey::generate(&mut ChaCha20Rng::seed_from_u64(99)).public_key();
    let (port, server) = start_server(d, "127.0.0.1:0", &other.to_base64()).await;
    let client = start_client(
        d,
        &format!("127.0.0.1:{port}"),
        &s.server_key.public_key().to_base64(),
    )
    .await;
    let mine = s.client_key.public_key().to_base64();
    let r = wait_status(&d.join("server.sock"), 5, "the server's diagnosis", |r| {
        r.problem.is_some()
    })
    .await;
    let p = r.problem.unwrap();
    assert!(
        p.contains("unknown client public key") && p.contains(&mine),
        "{p}"
    );
    assert!(p.contains("127.0.0.1:"), "names the address: {p}");
    let r = wait_status(&d.join("client.sock"), 10, "the client's diagnosis", |r| {
        r.problem.is_some()
    })
    .await;
    let p = r.problem.unwrap();
    assert!(
        p.contains("no handshake answer") && p.contains(&mine),
        "{p}"
    );
    assert!(p.contains(&format!("127.0.0.1:{port} via `wired`")), "{p}");
    client.stop().await;
    server.stop().await;
}

/// A client configured with another server key: the server says so and
/// prints the key the client should have.
#[tokio::test(flavor = "current_thread")]
async fn wrong_server_key_is_named_by_the_server() {
    let s = setup("wrongkey", 14);
    let d = &s.dir.0;
    let (port, server) =
        start_server(d, "127.0.0.1:0", &s.client_key.public_key().to_base64()).await;
    let wrong = PrivateKey::generate(&mut ChaCha20Rng::seed_from_u64(98)).public_key();
    let client = start_client(d, &format!("127.0.0.1:{port}"), &wrong.to_base64()).await;
    let r = wait_status(&d.join("server.sock"), 5, "the server's diagnosis", |r| {
        r.problem.is_some()
    })
    .await;
    let p = r.problem.unwrap();
    assert!(p.contains("another server key"), "{p}");
    assert!(
        p.contains(&s.server_key.public_key().to_base64()),
        "prints the right key: {p}"
    );
    client.stop().await;
    server.stop().await;
}

/// A client aimed at a port where nothing listens hears the ICMP "port
/// unreachable" and counts it (the log line names path and address).
#[tokio::test(flavor = "current_thread")]
async fn closed_port_is_reported_by_the_client() {
    let s = setup("closed", 15);
    let d = &s.dir.0;
    let closed = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let client = start_client(
        d,
        &format!("127.0.0.1:{port}"),
        &s.server_key.public_key().to_base64(),
    )
    .await;
    let r = wait_status(&d.join("client.sock"), 5, "an ICMP error", |r| {
        r.counters.get("icmp_errors").is_some_and(|&n| n > 0)
    })
    .await;
    assert!(!r.tunnels[0].established);
    assert_eq!(r.counters["udp_receive_errors"], 0, "{r:#?}");
    // The handshake initiations it sent show in the path's TX columns.
    assert!(r.tunnels[0].paths[0].tx_packets >= 1, "{r:#?}");
    client.stop().await;
}

/// After a few small packets (whose feedback the receiver batches for up
/// to 40 ms), an idle loopback path shows its real round trip: under 1 ms.
#[tokio::test(flavor = "current_thread")]
async fn idle_rtt_is_the_path_not_the_feedback_batching() {
    let s = setup("rtt", 16);
    let d = &s.dir.0;
    let (port, mut server) =
        start_server(d, "127.0.0.1:0", &s.client_key.public_key().to_base64()).await;
    let mut client = start_client(
        d,
        &format!("127.0.0.1:{port}"),
        &s.server_key.public_key().to_base64(),
    )
    .await;
    let sock = d.join("client.sock");
    wait_status(&sock, 5, "the tunnel", |r| r.tunnels[0].established).await;
    // Ten small uplink packets, answered by ten downlink ones.
    for i in 0..10u8 {
        let mut p = vec![0u8; 84];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&84u16.to_be_bytes());
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&[10, 77, 0, 2]);
        p[16..20].copy_from_slice(&[198, 51, 100, 1]);
        p[20] = i;
        client.host.tx.send(p.clone()).await.unwrap();
        let up = tokio::time::timeout(Duration::from_secs(2), server.host.rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(up[20], i);
        p[12..16].copy_from_slice(&[198, 51, 100, 1]);
        p[16..20].copy_from_slice(&[10, 77, 0, 2]);
        server.host.tx.send(p).await.unwrap();
        tokio::time::timeout(Duration::from_secs(2), client.host.rx.recv())
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = wait_status(&sock, 3, "an idle RTT under 1 ms", |r| {
        r.tunnels[0].paths[0].rtt_ms.is_some_and(|v| v < 1.0)
    })
    .await;
    assert!(r.tunnels[0].paths[0].data_tx_packets >= 10);
    client.stop().await;
    server.stop().await;
}
