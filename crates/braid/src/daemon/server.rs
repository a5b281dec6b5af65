//! `braid server`: one UDP socket for all clients, one TUN device holding
//! the tunnel network's first address; the host routes and NATs the rest.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use braid_core::conn::{Event, Output, Server};
use braid_core::crypto::PublicKey;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::intake::Intake;
use super::timer::PreciseTimer;
use super::tun::{SystemTun, Tun};
use super::{
    os_rng, serve_control, serve_metrics, Clock, ControlSocket, RateLimitedLog, StatusRequest,
};
use crate::config::ServerSettings;
use crate::status::StatusReport;

/// Inner packets queued between the TUN reader and the main loop.
const QUEUE: usize = 4096;
/// A started server: sockets bound, TUN open, control endpoints serving.
pub struct ServerDaemon<T: Tun> {
    clock: Clock,
    server: Server,
    socket: Arc<UdpSocket>,
    tun: Arc<T>,
    names: BTreeMap<PublicKey, String>,
    /// Datagrams, data before handshakes (see [`super::intake`]).
    intake: Intake,
    tun_rx: mpsc::Receiver<Vec<u8>>,
    status_rx: mpsc::Receiver<StatusRequest>,
    _control: Option<ControlSocket>,
    metrics_addr: Option<SocketAddr>,
    local_addr: SocketAddr,
    nat: bool,
    send_errors: RateLimitedLog,
    tun_errors: RateLimitedLog,
}

/// `braid server --config FILE`.
pub fn run_cmd(settings: ServerSettings) -> Result<()> {
    super::init_logging(&settings.log_level);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let (gw, prefix) = (settings.core.network.gateway(), settings.core.network.prefix_len());
        let tun = SystemTun::create(&settings.tun_name, gw, prefix, settings.core.conn.inner_mtu)
            .with_context(|| format!("`tun.name` {}", settings.tun_name))?;
        info!(device = tun.name(), address = %gw, prefix, mtu = settings.core.conn.inner_mtu, "TUN device up");
        let d = ServerDaemon::start(settings, tun).await?;
        d.run(super::shutdown_signal()).await
    })
}

impl<T: Tun> ServerDaemon<T> {
    /// Binds the socket, applies NAT if configured, starts the control
    /// socket and metrics endpoint, and spawns the readers.
    pub async fn start(s: ServerSettings, tun: T) -> Result<Self> {
        let clock = Clock::new();
        let names = s
            .core
            .clients
            .iter()
            .map(|c| (c.key, c.name.clone()))
            .collect();
        let network = s.core.network;
        let server = Server::new(s.core, s.private_key, &mut os_rng()?)
            .context("`client[].address` / `network`")?;
        let socket = Arc::new(super::net::server_socket(s.listen)?);
        let local_addr = socket.local_addr()?;
        let nat = match &s.nat_out_interface {
            Some(out) => {
                super::net::apply_nat(&network, out)?;
                info!(network = %network, out_interface = %out, "NAT masquerade rule installed");
                true
            }
            None => false,
        };
        let (status_tx, status_rx) = mpsc::channel(16);
        let control = match &s.control_socket {
            Some(p) => Some(serve_control(p, status_tx.clone()).await?),
            None => None,
        };
        let metrics_addr = match s.metrics {
            Some(a) => Some(serve_metrics(a, status_tx.clone()).await?.0),
            None => None,
        };
        let tun = Arc::new(tun);
        let intake = Intake::spawn(socket.clone(), clock);
        let (tun_tx, tun_rx) = mpsc::channel(QUEUE);
        super::tun::spawn_reader(tun.clone(), tun_tx);
        info!(listen = %local_addr, public_key = %server.public_key().to_base64(), clients = ?names_list(&names), "braid server started");
        if let Some(a) = metrics_addr {
            info!(metrics = %format!("http://{a}/metrics"), "metrics endpoint");
        }
        Ok(ServerDaemon {
            clock,
            server,
            socket,
            tun,
            names,
            intake,
            tun_rx,
            status_rx,
            _control: control,
            metrics_addr,
            local_addr,
            nat,
            send_errors: RateLimitedLog::default(),
            tun_errors: RateLimitedLog::default(),
        })
    }

    /// The UDP address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The metrics endpoint, if serving.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Runs until `shutdown` resolves.
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) -> Result<()> {
        tokio::pin!(shutdown);
        let timer = PreciseTimer::new().context("cannot create a timerfd")?;
        loop {
            timer.arm(self.clock.wait_for(self.server.poll_timeout()))?;
            tokio::select! {
                _ = &mut shutdown => break,
                Some(first) = self.intake.data.recv() => {
                    self.intake.serve_data(first, &mut self.server);
                }
                Some(first) = self.intake.handshakes.recv() => {
                    self.intake.serve_handshakes(first, &mut self.server);
                }
                Some(first) = self.tun_rx.recv() => {
                    let (server, clock) = (&mut self.server, &self.clock);
                    super::drain_batch(first, &mut self.tun_rx, |p| server.send_packet(clock.now(), &p));
                }
                _ = timer.wait() => {
                    self.server.handle_timeout(self.clock.now());
                }
                Some(reply) = self.status_rx.recv() => {
                    self.server.set_intake_drops(self.intake.drops());
                    let r = StatusReport::from_server(&self.server.status(self.clock.now()), self.clock.uptime());
                    let _ = reply.send(r);
                }
            }
            self.flush().await;
        }
        info!("braid server stopping");
        if self.nat {
            super::net::remove_nat();
        }
        Ok(())
    }

    async fn flush(&mut self) {
        while let Some(o) = self.server.poll_output() {
            match o {
                Output::Transmit(t) => {
                    if let Err(e) = self.socket.send_to(&t.bytes, t.dest).await {
                        self.send_errors.warn("UDP send failed", &e);
                    }
                }
                Output::Deliver(p) => {
                    if let Err(e) = self.tun.send(&p).await {
                        self.tun_errors.warn("TUN write failed", &e);
                    }
                }
                Output::Event(e) => self.log_event(&e),
            }
        }
    }

    fn name(&self, k: &PublicKey) -> &str {
        self.names.get(k).map(String::as_str).unwrap_or("?")
    }

    fn log_event(&self, e: &Event) {
        match e {
            Event::PeerConnected { peer, address } => {
                info!(client = self.name(peer), %address, "client connected")
            }
            Event::PeerDisconnected { peer, address } => {
                info!(client = self.name(peer), %address, "client disconnected")
            }
            Event::PathUp { peer, path } => info!(
                client = peer.as_ref().map_or("?", |k| self.name(k)),
                path = path.0,
                "path up"
            ),
            Event::PathDown { peer, path } => warn!(
                client = peer.as_ref().map_or("?", |k| self.name(k)),
                path = path.0,
                "path down"
            ),
            Event::Established { .. } => {}
        }
    }
}

fn names_list(n: &BTreeMap<PublicKey, String>) -> Vec<&str> {
    n.values().map(String::as_str).collect()
}
