//! Fixtures shared by the tests that run the whole daemon in-process over
//! loopback UDP with in-memory TUN devices (no root): a temporary
//! directory, the status query, and two-way inner traffic.

// Each test file uses the part it needs.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use braid::config::{load_client, load_server};
use braid::daemon::client::ClientDaemon;
use braid::daemon::server::ServerDaemon;
use braid::daemon::tun::{channel_tun, ChannelTunFactory, ChannelTunPeer};
use braid::keygen::write_private_key;
use braid::status::{query, StatusReport};
use braid_core::crypto::PrivateKey;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

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

/// A running daemon: its TUN device's host side, a stopper and its task.
pub struct Running {
    pub host: ChannelTunPeer,
    pub stop: oneshot::Sender<()>,
    pub task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Stops the daemon and waits for it to finish cleanly.
    pub async fn stop(self) {
        self.stop.send(()).unwrap();
        self.task.await.unwrap().unwrap();
    }
}

/// A server started from `toml` (written to `d/server.toml`, so relative
/// key paths resolve in `d`), with a TUN queue of `queue` packets.
pub struct StartedServer {
    pub port: u16,
    pub metrics: Option<SocketAddr>,
    pub daemon: Running,
}

pub async fn run_server(d: &Path, toml: &str, queue: usize) -> StartedServer {
    std::fs::write(d.join("server.toml"), toml).unwrap();
    let settings = load_server(&d.join("server.toml")).unwrap();
    let (tun, host) = channel_tun(queue);
    let server = ServerDaemon::start(settings, tun).await.unwrap();
    let (port, metrics) = (server.local_addr().port(), server.metrics_addr());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    StartedServer {
        port,
        metrics,
        daemon: Running { host, stop, task },
    }
}

/// A client started from `toml` (written to `d/client.toml`), with a TUN
/// queue of `queue` packets.
pub async fn run_client(d: &Path, toml: &str, queue: usize) -> Running {
    std::fs::write(d.join("client.toml"), toml).unwrap();
    let settings = load_client(&d.join("client.toml")).unwrap();
    let (tun, host) = channel_tun(queue);
    let client = ClientDaemon::start(settings, ChannelTunFactory(Some(tun)))
        .await
        .unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(client.run(async {
        let _ = stopped.await;
    }));
    Running { host, stop, task }
}

/// Polls `socket`'s status until `f` holds (or panics after `secs`).
pub async fn wait_status(
    socket: &Path,
    secs: u64,
    what: &str,
    f: impl Fn(&StatusReport) -> bool,
) -> StatusReport {
    let start = std::time::Instant::now();
    loop {
        let r = status(socket).await;
        if f(&r) {
            return r;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            panic!("timed out waiting for {what}: {r:#?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits up to `secs` until the client on control socket `sock` has its
/// tunnel established with `paths` paths, all up.
pub async fn wait_paths_up(sock: &Path, paths: usize, secs: u64) {
    wait_status(sock, secs, "the tunnel and its paths", |r| {
        let t = &r.tunnels[0];
        t.established && t.paths.len() == paths && t.paths.iter().all(|p| p.up)
    })
    .await;
}

/// [`TOTAL`] random bytes each way between the client's TUN host (inner
/// address `me`) and the server's, through the tunnel; both must arrive
/// intact (SHA-256).
pub async fn exchange_random(
    rng: &mut impl RngCore,
    client: &mut Running,
    server: &mut Running,
    me: Ipv4Addr,
) {
    let mut up = vec![0u8; TOTAL];
    let mut down = vec![0u8; TOTAL];
    rng.fill_bytes(&mut up);
    rng.fill_bytes(&mut down);
    let t0 = std::time::Instant::now();
    let (up_got, down_got) = exchange(&up, &down, &mut client.host, &mut server.host, me).await;
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
}

/// A temporary directory with a server's and a client's private key
/// (`server.key`, `client.key`), and the seeded generator that made them,
/// for whatever else the test draws.
pub struct Setup {
    pub dir: TempDir,
    pub server_key: PrivateKey,
    pub client_key: PrivateKey,
    pub rng: ChaCha20Rng,
}

pub fn setup(tag: &str, seed: u64) -> Setup {
    let dir = tempdir(tag);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let (server_key, client_key) = (
        PrivateKey::generate(&mut rng),
        PrivateKey::generate(&mut rng),
    );
    write_private_key(&dir.0.join("server.key"), &server_key, false).unwrap();
    write_private_key(&dir.0.join("client.key"), &client_key, false).unwrap();
    Setup {
        dir,
        server_key,
        client_key,
        rng,
    }
}
