//! Fixtures shared by the tests that run the whole daemon in-process over
//! loopback UDP with in-memory TUN devices (no root): a temporary
//! directory, the status query, and two-way inner traffic.

// Each test file uses the part it needs.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use braid::daemon::tun::ChannelTunPeer;
use braid::status::{query, StatusReport};

/// Payload bytes per inner packet (plus a 20-byte IPv4 header).
pub const CHUNK: usize = 1000;
pub const TOTAL: usize = 1 << 20;
/// Packets in flight per direction.
pub const WINDOW: usize = 32;
pub const FAR: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);

pub struct TempDir(pub PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn tempdir(tag: &str) -> TempDir {
    let d = std::env::temp_dir().join(format!("braid-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempDir(d)
}

pub fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, payload: &[u8]) -> Vec<u8> {
    let total = 20 + payload.len();
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    p[20..].copy_from_slice(payload);
    p
}

pub async fn status(socket: &Path) -> StatusReport {
    let s = socket.to_path_buf();
    let json = tokio::task::spawn_blocking(move || query(&s))
        .await
        .unwrap()
        .unwrap();
    serde_json::from_str(&json).unwrap()
}

/// Sends `data` from `a` to `b` (and the reverse data from `b` to `a`)
/// in windows; returns what each side received.
pub async fn exchange(
    up_data: &[u8],
    down_data: &[u8],
    client: &mut ChannelTunPeer,
    server: &mut ChannelTunPeer,
    me: Ipv4Addr,
) -> (Vec<u8>, Vec<u8>) {
    let up: Vec<&[u8]> = up_data.chunks(CHUNK).collect();
    let down: Vec<&[u8]> = down_data.chunks(CHUNK).collect();
    let (mut up_sent, mut down_sent) = (0, 0);
    let (mut up_got, mut down_got) = (Vec::new(), Vec::new());
    let (mut up_n, mut down_n) = (0, 0);
    while up_n < up.len() || down_n < down.len() {
        while up_sent < up.len() && up_sent - up_n < WINDOW {
            client.tx.send(ipv4(me, FAR, up[up_sent])).await.unwrap();
            up_sent += 1;
        }
        while down_sent < down.len() && down_sent - down_n < WINDOW {
            server
                .tx
                .send(ipv4(FAR, me, down[down_sent]))
                .await
                .unwrap();
            down_sent += 1;
        }
        tokio::select! {
            Some(p) = server.rx.recv() => {
                assert_eq!(&p[12..16], &me.octets());
                up_got.extend_from_slice(&p[20..]);
                up_n += 1;
            }
            Some(p) = client.rx.recv() => {
                assert_eq!(&p[16..20], &me.octets());
                down_got.extend_from_slice(&p[20..]);
                down_n += 1;
            }
            _ = tokio::time::sleep(Duration::from_secs(5)) => {
                panic!("stalled: uplink {up_n}/{} downlink {down_n}/{}", up.len(), down.len());
            }
        }
    }
    (up_got, down_got)
}
