//! `braid server`: one UDP port for all clients (a data and a handshake
//! socket on it, see [`super::steer`]), one TUN device holding
//! the tunnel network's first address; the host routes and NATs the rest.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use braid_core::conn::{Endpoint, Event, Output, RejectReason, Server, Transmit};
use braid_core::crypto::PublicKey;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::intake::Intake;
use super::reply::{send_from, source_gone, ReplySources};
use super::steer::ServerSockets;
use super::timer::PreciseTimer;
use super::tun::{SystemTun, Tun};
use super::{
    os_rng, serve_control, serve_metrics, Clock, ControlSocket, RateLimitedLog, RecvErrors,
    StatusRequest,
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
    /// Datagrams, data before handshakes (see [`super::intake`]), each
    /// with the local address it arrived at.
    intake: Intake,
    /// The local address each client endpoint wrote to, to reply from.
    replies: ReplySources,
    tun_rx: mpsc::Receiver<Vec<u8>>,
    tun_reader: tokio::task::JoinHandle<std::io::Error>,
    status_rx: mpsc::Receiver<StatusRequest>,
    _control: Option<ControlSocket>,
    metrics_addr: Option<SocketAddr>,
    local_addr: SocketAddr,
    /// The nftables table this instance installed, removed at exit.
    nat: Option<String>,
    send_errors: RateLimitedLog,
    tun_errors: RateLimitedLog,
    /// Failed reads of the UDP socket.
    recv_errors: Arc<std::sync::atomic::AtomicU64>,
    /// Handshake rejections: the latest one logged, in words, and the
    /// core's rejection count when it was last looked at.
    problem: Option<String>,
    logged_rejection: u64,
    rejection_log: super::Every,
}

/// `braid server --config FILE`.
pub fn run_cmd(settings: ServerSettings) -> Result<()> {
    super::init_logging(&settings.log_level);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        // The port first: a second server on the same port must fail
        // before it brings up a TUN device with the live server's address.
        let socket = super::net::server_socket(settings.listen)?;
        let (gw, prefix) = (settings.core.network.gateway(), settings.core.network.prefix_len());
        let tun = SystemTun::create(&settings.tun_name, gw, prefix, settings.core.conn.inner_mtu)
            .with_context(|| format!("`tun.name` {}", settings.tun_name))?;
        info!(device = tun.name(), address = %gw, prefix, mtu = settings.core.conn.inner_mtu, "TUN device up");
        let d = ServerDaemon::start_on(socket, settings, tun).await?;
        d.run(super::shutdown_signal()).await
    })
}

impl<T: Tun> ServerDaemon<T> {
    /// Binds the socket, applies NAT if configured, starts the control
    /// socket and metrics endpoint, and spawns the readers.
    pub async fn start(s: ServerSettings, tun: T) -> Result<Self> {
        Self::start_on(super::net::server_socket(s.listen)?, s, tun).await
    }

    /// [`ServerDaemon::start`] on a socket already bound to `s.listen`.
    pub async fn start_on(sockets: ServerSockets, s: ServerSettings, tun: T) -> Result<Self> {
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
        let socket = Arc::new(sockets.data);
        let handshake_socket = sockets.handshake;
        let local_addr = socket.local_addr()?;
        let nat = match &s.nat_out_interface {
            Some(out) => {
                let table = super::net::nat_table(&s.tun_name);
                super::net::apply_nat(&table, &network, out)?;
                info!(network = %network, out_interface = %out, table = %table, "NAT masquerade rule installed");
                Some(table)
            }
            None => None,
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
        // On both sockets: an initiation is answered from the address it
        // was sent to as much as data is.
        for sock in std::iter::once(&*socket).chain(handshake_socket.as_ref()) {
            if let Err(e) = super::reply::enable_pktinfo(sock) {
                warn!(error = %e, "cannot ask for datagrams' destination addresses (IP_PKTINFO); replies leave from the kernel's choice of source address");
            }
        }
        let recv_errors = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let errors = RecvErrors::new("UDP receive failed".into(), recv_errors.clone());
        let intake = Intake::spawn(socket.clone(), handshake_socket, clock, errors)
            .context("cannot take the handshake socket out of the runtime's reactor")?;
        let (tun_tx, tun_rx) = mpsc::channel(QUEUE);
        let tun_reader = super::tun::spawn_reader(tun.clone(), tun_tx);
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
            replies: ReplySources::default(),
            tun_rx,
            tun_reader,
            status_rx,
            _control: control,
            metrics_addr,
            local_addr,
            nat,
            send_errors: RateLimitedLog::default(),
            tun_errors: RateLimitedLog::default(),
            recv_errors,
            problem: None,
            logged_rejection: 0,
            rejection_log: super::Every::new(super::LOG_INTERVAL),
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
        let mut failure = None;
        // The deadline the timer is armed for: re-armed only when it moves
        // (a system call per pass cost as much as a junk datagram did).
        let mut armed = None;
        loop {
            let due = Endpoint::poll_timeout(&self.server);
            if armed != Some(due) {
                timer.arm(self.clock.wait_for(due))?;
                armed = Some(due);
            }
            tokio::select! {
                _ = &mut shutdown => break,
                e = super::tun::reader_stopped(Some(&mut self.tun_reader)) => {
                    failure = Some(e);
                    break;
                }
                Some(first) = self.intake.data.recv() => {
                    self.intake.serve_data(first, &mut self.server, &mut self.replies);
                    self.report_rejection();
                }
                Some(first) = self.intake.handshakes.recv() => {
                    self.intake.serve_handshakes(first, &mut self.server, &mut self.replies);
                    self.report_rejection();
                }
                Some(first) = self.tun_rx.recv() => {
                    let (server, clock) = (&mut self.server, &self.clock);
                    super::drain_batch(first, &mut self.tun_rx, |p| Endpoint::send_packet(server, clock.now(), &p));
                }
                _ = timer.wait() => {
                    armed = None;
                    Endpoint::handle_timeout(&mut self.server, self.clock.now());
                }
                Some(reply) = self.status_rx.recv() => {
                    self.server.set_intake_drops(self.intake.drops());
                    let mut r = StatusReport::from_server(&self.server.status(self.clock.now()), self.clock.uptime());
                    r.counters.insert("udp_receive_errors".into(), self.recv_errors.load(std::sync::atomic::Ordering::Relaxed));
                    r.problem = self.problem.clone();
                    let _ = reply.send(r);
                }
            }
            self.flush().await;
        }
        info!("braid server stopping");
        if let Some(table) = &self.nat {
            super::net::remove_nat(table);
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    async fn flush(&mut self) {
        while let Some(o) = Endpoint::poll_output(&mut self.server) {
            match o {
                Output::Transmit(t) => self.transmit(&t).await,
                Output::Deliver(p) => {
                    if let Err(e) = self.tun.send(&p).await {
                        self.tun_errors.warn("TUN write failed", &e);
                    }
                }
                Output::Event(e) => self.log_event(&e),
            }
        }
        self.replies.end_pass();
    }

    /// Sends `t` from the address its client wrote to (see [`super::reply`]).
    async fn transmit(&mut self, t: &Transmit) {
        let src = self.replies.source_for(t.dest, std::time::Instant::now());
        let mut sent = send_from(&self.socket, &t.bytes, t.dest, src).await;
        if let (Err(e), Some(_)) = (&sent, src) {
            if source_gone(e) {
                // The address was removed from this host.
                self.replies.forget(t.dest);
                sent = send_from(&self.socket, &t.bytes, t.dest, None).await;
            }
        }
        if let Err(e) = sent {
            let (server, names, now) = (&self.server, &self.names, self.clock.now());
            self.send_errors.warn_with(&e, || {
                // Which client and path: only looked up when logged.
                let st = server.status(now);
                let who = st.peers.iter().find_map(|p| {
                    p.tunnel
                        .paths
                        .iter()
                        .find(|x| x.remote == Some(t.dest))
                        .map(|x| {
                            (
                                names.get(&p.key).cloned().unwrap_or_else(|| p.name.clone()),
                                x.id.0,
                            )
                        })
                });
                match who {
                    Some((client, path)) => {
                        format!(
                            "UDP send failed to client `{client}` on path {path} ({})",
                            t.dest
                        )
                    }
                    None => format!("UDP send failed to {}", t.dest),
                }
            });
        }
    }

    /// Explains the core's latest handshake rejection in the status and,
    /// at most once per [`super::LOG_INTERVAL`], in the log, naming the
    /// address and the key concerned.
    fn report_rejection(&mut self) {
        let Some(r) = self.server.last_rejection().copied() else {
            return;
        };
        // Cheap while nothing new was rejected or the last line is recent
        // (a flood of bad initiations costs no formatting).
        if r.count == self.logged_rejection {
            return;
        }
        self.logged_rejection = r.count;
        if !self.rejection_log.due() {
            return;
        }
        let text = match r.reason {
            RejectReason::WrongServerKey => format!(
                "handshake from {} rejected: it was made for another server key (MAC1 mismatch); set that client's server_public_key to this server's public key {}",
                r.from,
                self.server.public_key().to_base64()
            ),
            RejectReason::UnknownClient(k) => format!(
                "handshake from {} rejected: unknown client public key {}; to admit it, add a [[client]] with public_key = \"{}\" to this server's configuration",
                r.from,
                k.to_base64(),
                k.to_base64()
            ),
            RejectReason::Undecryptable => format!(
                "handshake from {} rejected: it does not decrypt (corrupted, or another braid version)",
                r.from
            ),
            RejectReason::Version { got } => format!(
                "handshake from {} rejected: that client speaks tunnel protocol version {got} and this server version {}; run the same braid release on both",
                r.from,
                braid_core::conn::HELLO_VERSION
            ),
        };
        warn!(rejected = r.count, "{text}");
        self.problem = Some(text);
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
