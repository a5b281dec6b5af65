//! A community relay (`braid relay`, PRISM Sections 2-3) carries one of a
//! client's paths: server, relay and client in-process over loopback UDP,
//! the client's second path naming the relay with `via`. 1 MiB goes each
//! way and must arrive intact (SHA-256); the relay counts what it carried
//! for the admitted client, refuses an address it does not list, and
//! reports its counters on its control socket (`braid status`).

use std::net::Ipv4Addr;
use std::time::Duration;

use braid::config::load_client;
use braid::relay::Relay;

use crate::daemon_util;
use daemon_util::*;

#[tokio::test(flavor = "current_thread")]
async fn a_relay_carries_a_path_end_to_end() {
    let Setup {
        dir,
        server_key: sk,
        client_key: ck,
        mut rng,
    } = setup("relay", 11);
    let d = &dir.0;

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
    let server = run_server(d, &server_toml, 1024).await;
    let port = server.port;
    let mut server = server.daemon;

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
    let mut client = run_client(d, &client_toml, 1024).await;
    // The relayed path's datagrams go to the relay.
    let settings = load_client(&d.join("client.toml")).unwrap();
    assert_eq!(settings.paths[1].server, relay_addr);
    let client_sock = d.join("client.sock");
    wait_paths_up(&client_sock, 2, 4).await;
    let me = Ipv4Addr::new(10, 78, 0, 2);

    exchange_random(&mut rng, &mut client, &mut server, me).await;

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

    client.stop().await;
    server.stop().await;
}
