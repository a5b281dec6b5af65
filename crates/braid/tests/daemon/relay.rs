//! A community relay (`braid relay`, PRISM Sections 2-3) carries one of a
//! client's paths: server, relay and client in-process over loopback UDP,
//! the client's second path naming the relay with `via`. 1 MiB goes each
//! way and must arrive intact (SHA-256); the relay counts what it carried
//! for the admitted client, refuses an address it does not list, and
//! reports its counters on its control socket (`braid status`).

use std::net::Ipv4Addr;
use std::time::Duration;

use braid::config::{load_client, load_server};
use braid::daemon::client::ClientDaemon;
use braid::daemon::server::ServerDaemon;
use braid::daemon::tun::{channel_tun, ChannelTunFactory};
use braid::keygen::write_private_key;
use braid::relay::Relay;
use braid_core::crypto::PrivateKey;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use crate::daemon_util;
use daemon_util::*;

#[tokio::test(flavor = "current_thread")]
async fn a_relay_carries_a_path_end_to_end() {
    let dir = tempdir("relay");
    let d = &dir.0;
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let (sk, ck) = (
        PrivateKey::generate(&mut rng),
        PrivateKey::generate(&mut rng),
    );
    write_private_key(&d.join("server.key"), &sk, false).unwrap();
    write_private_key(&d.join("client.key"), &ck, false).unwrap();

    let server_toml = format!(
        r#"listen = "127.0.0.1:0"
private_key_file = "server.key"
network = "10.78.0.0/24"
scheduler = "rr"
[metrics]
enabled = false
[[client]]
name = "laptop"
public_key = "{pk}"
"#,
        pk = ck.public_key().to_base64()
    );
    std::fs::write(d.join("server.toml"), server_toml).unwrap();
    let settings = load_server(&d.join("server.toml")).unwrap();
    let (server_tun, mut server_host) = channel_tun(1024);
    let server = ServerDaemon::start(settings, server_tun).await.unwrap();
    let port = server.local_addr().port();
    let (stop_server, server_stop) = oneshot::channel::<()>();
    let server_task = tokio::spawn(server.run(async {
        let _ = server_stop.await;
    }));

    // The relay admits the client's second path (source 127.0.0.2) only.
    let relay = Relay::start(
        braid::relay::parse(&format!(
            r#"listen = "127.0.0.9:0"
server = "127.0.0.1:{port}"
bind = "127.0.0.9"
report_every_s = 0
control_socket = "{rsock}"
[[client]]
name = "laptop"
addr = "127.0.0.2"
rate_kbps = 200000
"#,
            rsock = d.join("relay.sock").display(),
        ))
        .unwrap(),
    )
    .await
    .unwrap();
    let relay_addr = relay.local;

    let client_toml = format!(
        r#"server = "127.0.0.1:{port}"
server_public_key = "{spk}"
private_key_file = "client.key"
scheduler = "rr"
control_socket = "{sock}"
[metrics]
enabled = false
[[path]]
name = "own"
bind = "127.0.0.1"
[[path]]
name = "neighbour"
bind = "127.0.0.2"
via = "{relay_addr}"
"#,
        spk = sk.public_key().to_base64(),
        sock = d.join("client.sock").display(),
    );
    std::fs::write(d.join("client.toml"), client_toml).unwrap();
    let settings = load_client(&d.join("client.toml")).unwrap();
    assert_eq!(settings.paths[1].server, relay_addr);
    let (client_tun, mut client_host) = channel_tun(1024);
    let client = ClientDaemon::start(settings, ChannelTunFactory(Some(client_tun)))
        .await
        .unwrap();
    let (stop_client, client_stop) = oneshot::channel::<()>();
    let client_task = tokio::spawn(client.run(async {
        let _ = client_stop.await;
    }));

    let client_sock = d.join("client.sock");
    let mut ready = false;
    for _ in 0..200 {
        let r = status(&client_sock).await;
        let t = &r.tunnels[0];
        if t.established && t.paths.len() == 2 && t.paths.iter().all(|p| p.up) {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ready, "tunnel not up: {:?}", status(&client_sock).await);
    let me = Ipv4Addr::new(10, 78, 0, 2);

    let mut up = vec![0u8; TOTAL];
    let mut down = vec![0u8; TOTAL];
    rng.fill_bytes(&mut up);
    rng.fill_bytes(&mut down);
    let (up_got, down_got) = exchange(&up, &down, &mut client_host, &mut server_host, me).await;
    assert_eq!(
        Sha256::digest(&up_got),
        Sha256::digest(&up),
        "uplink differs"
    );
    assert_eq!(
        Sha256::digest(&down_got),
        Sha256::digest(&down),
        "downlink differs"
    );

    // The relayed path carried its share both ways, through the relay.
    let packets = TOTAL.div_ceil(CHUNK) as u64;
    let c = status(&client_sock).await;
    let relayed = &c.tunnels[0].paths[1];
    assert!(relayed.data_tx_packets >= packets / 4, "{relayed:?}");
    assert!(relayed.data_rx_packets >= packets / 4, "{relayed:?}");
    let counters = relay.counters();
    assert_eq!(counters[0].0, "laptop");
    assert!(
        counters[0].1.up_packets >= relayed.data_tx_packets,
        "{counters:?}"
    );
    assert!(
        counters[0].1.down_packets >= relayed.data_rx_packets,
        "{counters:?}"
    );
    assert_eq!(counters[0].1.up_limited + counters[0].1.down_limited, 0);

    // An address the relay does not list is refused.
    let stranger = std::net::UdpSocket::bind("127.0.0.3:0").unwrap();
    stranger.send_to(b"hello", relay_addr).unwrap();
    for _ in 0..100 {
        if relay.refused() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(relay.refused(), 1);

    // `braid status` on the relay's control socket reports the same.
    let counters = relay.counters();
    let r = status(&d.join("relay.sock")).await;
    assert_eq!(r.role, "relay");
    assert_eq!(r.relayed.len(), 1, "{r:?}");
    assert_eq!(r.relayed[0].name, "laptop");
    // Read after the relay's own counters, so at least as large.
    assert!(r.relayed[0].up_packets >= counters[0].1.up_packets, "{r:?}");
    assert!(r.relayed[0].up_bytes >= counters[0].1.up_bytes, "{r:?}");
    assert!(r.relayed[0].down_bytes >= counters[0].1.down_bytes, "{r:?}");
    assert_eq!(r.counters.get("refused"), Some(&1), "{r:?}");

    let _ = stop_client.send(());
    client_task.await.unwrap().unwrap();
    let _ = stop_server.send(());
    server_task.await.unwrap().unwrap();
}
