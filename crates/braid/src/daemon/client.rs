//! `braid client`: one UDP socket per path, a TUN device created when the
//! server assigns the tunnel address.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use braid_core::conn::{ConnConfig, Connection, Endpoint, Event, Output, TunnelParams};
use braid_core::path::PathId;
use braid_core::time::Instant;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tracing::{error, info, warn};

use super::timer::PreciseTimer;
use super::tun::{SystemTunFactory, Tun, TunFactory};
use super::{
    os_rng, serve_control, serve_metrics, Clock, ControlSocket, RateLimitedLog, RecvErrors,
    StatusRequest,
};
use crate::config::{ClientSettings, PathSettings};
use crate::status::{PathReport, StatusReport};

const QUEUE: usize = 4096;
const BUF: usize = 65_535;

/// A configured path and, while its interface and address exist, its socket
/// and the task reading it.
struct PathSocket {
    settings: PathSettings,
    socket: Option<(Arc<UdpSocket>, tokio::task::JoinHandle<()>)>,
}

/// How long the client waits for a first session before it says why it
/// may not come (see `ClientDaemon::check_handshake`).
const NO_ANSWER_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// How often paths whose interface or address is missing are retried.
const HOTPLUG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Opens a path's socket and starts the task that reads it.
fn open_path(
    p: &PathSettings,
    clock: Clock,
    udp_tx: &mpsc::Sender<(PathId, SocketAddr, Vec<u8>, Instant)>,
    counts: &ReaderCounts,
) -> Result<(Arc<UdpSocket>, tokio::task::JoinHandle<()>)> {
    let socket = Arc::new(super::net::path_socket(p)?);
    info!(path = p.id.0, name = %p.name, local = %socket.local_addr()?, server = %p.server, device = ?p.device, "path socket ready");
    let (sock, tx, id) = (socket.clone(), udp_tx.clone(), p.id);
    super::net::enable_rx_timestamps(&sock);
    super::icmp::enable(&sock);
    let mut errors = RecvErrors::new(
        format!("UDP receive failed on path `{}`", p.name),
        counts.recv_errors.clone(),
    );
    let (icmp, name, server) = (counts.icmp_errors.clone(), p.name.clone(), p.server);
    let mut icmp_log = super::Every::new(super::LOG_INTERVAL);
    let reader = tokio::spawn(async move {
        let mut buf = vec![0u8; BUF];
        loop {
            match super::net::recv_from_stamped(&sock, &mut buf).await {
                Ok((n, from, age, _)) => {
                    errors.succeeded();
                    let at = clock.ago(age);
                    if tx.send((id, from, buf[..n].to_vec(), at)).await.is_err() {
                        break;
                    }
                }
                // ICMP errors (port unreachable, ...): the network's
                // answer, not a fault of the socket.
                Err(e) if super::icmp::is_report(&e) => {
                    let reports = super::icmp::drain(&sock);
                    icmp.fetch_add(reports.len().max(1) as u64, Ordering::Relaxed);
                    if icmp_log.due() {
                        let r = reports.first();
                        let dest = r.and_then(|r| r.dest).unwrap_or(server);
                        let what = r.map_or("ICMP error", |r| r.explain());
                        warn!(path = id.0, name = %name, to = %dest, error = %e, "{what}");
                    }
                }
                Err(e) => errors.failed(&e).await,
            }
        }
    });
    Ok((socket, reader))
}

/// Counters the path readers share with the event loop.
#[derive(Clone, Debug, Default)]
struct ReaderCounts {
    /// Failed reads of path sockets.
    recv_errors: Arc<AtomicU64>,
    /// ICMP errors reported for datagrams to the server.
    icmp_errors: Arc<AtomicU64>,
}

/// Send errors that mean the path's interface or address is gone, so its
/// socket must be reopened once they are back (a socket bound to a
/// deleted device stays bound to the old one).
fn interface_gone(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENODEV) | Some(libc::ENXIO) | Some(libc::EADDRNOTAVAIL)
    )
}

/// A started client: path sockets bound, handshake under way.
pub struct ClientDaemon<F: TunFactory> {
    clock: Clock,
    conn: Connection,
    paths: Vec<PathSocket>,
    path_names: Vec<String>,
    factory: F,
    tun: Option<(
        TunnelParams,
        Arc<F::Tun>,
        tokio::task::JoinHandle<std::io::Error>,
    )>,
    /// Datagrams with their kernel arrival times.
    udp_rx: mpsc::Receiver<(PathId, SocketAddr, Vec<u8>, Instant)>,
    tun_tx: mpsc::Sender<Vec<u8>>,
    tun_rx: mpsc::Receiver<Vec<u8>>,
    status_rx: mpsc::Receiver<StatusRequest>,
    _control: Option<ControlSocket>,
    metrics_addr: Option<SocketAddr>,
    send_errors: Vec<RateLimitedLog>,
    tun_errors: RateLimitedLog,
    /// Datagrams from addresses other than the server's.
    pub stray: u64,
    stray_log: super::Every,
    counts: ReaderCounts,
    /// Since when the client has had no session (`None` while it has one),
    /// and the last "no answer" diagnosis in words.
    unanswered_since: Option<std::time::Instant>,
    problem: Option<String>,
    problem_log: super::Every,
    /// This client's public key and the configured server's, for diagnoses.
    keys: (String, String),
    /// For the readers of paths opened later.
    udp_tx: mpsc::Sender<(PathId, SocketAddr, Vec<u8>, Instant)>,
}

/// `braid client --config FILE`.
pub fn run_cmd(settings: ClientSettings) -> Result<()> {
    super::init_logging(&settings.log_level);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let factory = SystemTunFactory {
            name: settings.tun_name.clone(),
            routes: settings.routes.clone(),
        };
        let d = ClientDaemon::start(settings, factory).await?;
        d.run(super::shutdown_signal()).await
    })
}

impl<F: TunFactory> ClientDaemon<F> {
    /// Binds every path's socket, starts the control endpoints and the
    /// handshake.
    pub async fn start(s: ClientSettings, factory: F) -> Result<Self> {
        Self::start_with(s, factory, ConnConfig::clone).await
    }

    /// [`ClientDaemon::start`] with a hook to adjust the core configuration (tests).
    pub async fn start_with(
        s: ClientSettings,
        factory: F,
        adjust: impl FnOnce(&ConnConfig) -> ConnConfig,
    ) -> Result<Self> {
        let clock = Clock::new();
        let (udp_tx, udp_rx) = mpsc::channel(QUEUE);
        // A path whose interface or address is missing now (a modem not
        // plugged in yet) is retried every HOTPLUG_INTERVAL and joins the
        // running tunnel when it appears.
        let mut paths = Vec::new();
        let counts = ReaderCounts::default();
        for p in &s.paths {
            let socket = match open_path(p, clock, &udp_tx, &counts) {
                Ok(s) => Some(s),
                Err(e) => {
                    warn!(path = p.id.0, name = %p.name, error = %format!("{e:#}"), "path not available yet; retrying every second");
                    None
                }
            };
            paths.push(PathSocket {
                settings: p.clone(),
                socket,
            });
        }
        let path_list: Vec<(PathId, SocketAddr)> = paths
            .iter()
            .filter(|p| p.socket.is_some())
            .map(|p| (p.settings.id, p.settings.server))
            .collect();
        let keys = (
            s.private_key.public_key().to_base64(),
            s.server_key.to_base64(),
        );
        let mut conn = Connection::client(
            adjust(&s.conn),
            s.private_key,
            s.server_key,
            &path_list,
            clock.unix_nanos_at_zero(),
            clock.now(),
            &mut os_rng()?,
        )?;
        // The server's status shows the paths by these names too.
        for p in paths.iter().filter(|p| p.socket.is_some()) {
            conn.set_path_name(p.settings.id, &p.settings.name);
        }
        let (status_tx, status_rx) = mpsc::channel(16);
        let control = match &s.control_socket {
            Some(p) => Some(serve_control(p, status_tx.clone()).await?),
            None => None,
        };
        let metrics_addr = match s.metrics {
            Some(a) => Some(serve_metrics(a, status_tx.clone()).await?.0),
            None => None,
        };
        if let Some(a) = metrics_addr {
            info!(metrics = %format!("http://{a}/metrics"), "metrics endpoint");
        }
        let (tun_tx, tun_rx) = mpsc::channel(QUEUE);
        let mut d = ClientDaemon {
            clock,
            conn,
            path_names: s.paths.iter().map(|p| p.name.clone()).collect(),
            send_errors: s.paths.iter().map(|_| RateLimitedLog::default()).collect(),
            paths,
            factory,
            tun: None,
            udp_rx,
            tun_tx,
            tun_rx,
            status_rx,
            _control: control,
            metrics_addr,
            tun_errors: RateLimitedLog::default(),
            stray: 0,
            stray_log: super::Every::new(super::LOG_INTERVAL),
            counts,
            unanswered_since: Some(std::time::Instant::now()),
            problem: None,
            problem_log: super::Every::new(super::LOG_INTERVAL),
            keys,
            udp_tx,
        };
        info!(server_key = %s.server_key.to_base64(), paths = d.paths.len(), "braid client started; handshaking");
        d.flush().await;
        Ok(d)
    }

    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Runs until `shutdown` resolves; then says goodbye to the server.
    pub async fn run(mut self, shutdown: impl std::future::Future<Output = ()>) -> Result<()> {
        tokio::pin!(shutdown);
        let timer = PreciseTimer::new().context("cannot create a timerfd")?;
        let mut hotplug = tokio::time::interval(HOTPLUG_INTERVAL);
        hotplug.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failure = None;
        loop {
            timer.arm(self.clock.wait_for(Endpoint::poll_timeout(&self.conn)))?;
            tokio::select! {
                _ = &mut shutdown => break,
                e = super::tun::reader_stopped(self.tun.as_mut().map(|t| &mut t.2)) => {
                    failure = Some(e);
                    break;
                }
                Some((path, from, d, at)) = self.udp_rx.recv() => {
                    // `datagram` needs all of `self`, so no drain_batch here.
                    self.datagram(at, path, from, &d);
                    for _ in 0..super::BATCH {
                        let Ok((path, from, d, at)) = self.udp_rx.try_recv() else { break };
                        self.datagram(at, path, from, &d);
                    }
                }
                Some(first) = self.tun_rx.recv() => {
                    let (conn, clock) = (&mut self.conn, &self.clock);
                    super::drain_batch(first, &mut self.tun_rx, |p| Endpoint::send_packet(conn, clock.now(), &p));
                }
                _ = timer.wait() => {
                    Endpoint::handle_timeout(&mut self.conn, self.clock.now());
                }
                _ = hotplug.tick() => {
                    self.open_missing_paths();
                    self.check_handshake();
                }
                Some(reply) = self.status_rx.recv() => {
                    let mut r = StatusReport::from_client(&self.conn.status(self.clock.now()), &self.path_names, self.clock.uptime());
                    r.counters.insert("udp_receive_errors".into(), self.counts.recv_errors.load(Ordering::Relaxed));
                    r.counters.insert("icmp_errors".into(), self.counts.icmp_errors.load(Ordering::Relaxed));
                    r.problem = self.problem.clone();
                    self.add_waiting_paths(&mut r);
                    let _ = reply.send(r);
                }
            }
            self.flush().await;
        }
        // What this side's sender and resequencer did over the run, in the
        // log where a run that went badly can still be read afterwards (the
        // lab's benches stop the daemons, and `braid status` with them).
        let t = self.conn.status(self.clock.now()).tunnel;
        let (s, r) = (&t.sender, &t.reorder);
        info!(
            sent = s.sent,
            repairs = s.repairs_sent,
            repairs_abandoned = s.repairs_abandoned,
            pacing_drops = s.pacing_drops,
            delay_rises = s.delay_rises,
            late_originals = s.late_originals,
            stranded = s.stranded,
            quiet = s.quiet_paths,
            reorder_lost = r.lost(),
            reorder_late = r.late,
            "tunnel totals"
        );
        info!("braid client stopping; saying goodbye to the server");
        self.conn.close(self.clock.now());
        self.flush().await;
        if let Some((_, _, reader)) = self.tun.take() {
            reader.abort();
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Lists configured paths whose interface or address is missing (so
    /// the core does not know them yet) as waiting.
    fn add_waiting_paths(&self, r: &mut StatusReport) {
        let Some(t) = r.tunnels.first_mut() else {
            return;
        };
        for p in &self.paths {
            let s = &p.settings;
            if p.socket.is_some() || t.paths.iter().any(|x| x.id == s.id.0) {
                continue;
            }
            let why = match (&s.device, s.bind) {
                (Some(d), _) => format!("waiting for device {d}"),
                (None, Some(a)) => format!("waiting for address {a}"),
                (None, None) => "waiting for device".into(),
            };
            t.paths.push(PathReport::waiting(s.id.0, &s.name, why));
        }
        t.paths.sort_by_key(|p| p.id);
    }

    /// Says why the tunnel does not come up: after [`NO_ANSWER_AFTER`]
    /// without a session, once per [`super::LOG_INTERVAL`], a line naming
    /// the server's addresses and both keys, which are what a wrong
    /// `server_public_key`, an unknown client key or a wrong port (no
    /// answer at all: the server answers none of these) come down to.
    fn check_handshake(&mut self) {
        if self.conn.is_established() {
            self.unanswered_since = None;
            self.problem = None;
            return;
        }
        let since = *self
            .unanswered_since
            .get_or_insert_with(std::time::Instant::now);
        let waited = since.elapsed();
        if waited < NO_ANSWER_AFTER || !self.problem_log.due() {
            return;
        }
        let servers: Vec<String> = self
            .paths
            .iter()
            .map(|p| format!("{} via `{}`", p.settings.server, p.settings.name))
            .collect();
        let icmp = self.counts.icmp_errors.load(Ordering::Relaxed);
        let refused = self.conn.status(self.clock.now()).server_version_refused;
        if let Some(got) = refused {
            let text = format!(
                "the server ({}) speaks tunnel protocol version {got} and this client version {}: run the same braid release on both",
                servers.join(", "),
                braid_core::conn::HELLO_VERSION
            );
            warn!("{text}");
            self.problem = Some(text);
            return;
        }
        let text = format!(
            "no handshake answer from the server after {}s ({}; {icmp} ICMP errors): check that the server runs and its UDP port is reachable, that server_public_key ({}) is the server's public key (`braid keygen --public-of` its key file), and that the server lists this client's public key {} in a [[client]]",
            waited.as_secs(),
            servers.join(", "),
            self.keys.1,
            self.keys.0
        );
        warn!("{text}");
        self.problem = Some(text);
    }

    /// Opens the sockets of paths whose interface or address has appeared
    /// and adds them to the connection.
    fn open_missing_paths(&mut self) {
        for i in 0..self.paths.len() {
            if self.paths[i].socket.is_some() {
                continue;
            }
            let p = self.paths[i].settings.clone();
            let Ok(sock) = open_path(&p, self.clock, &self.udp_tx, &self.counts) else {
                continue;
            };
            self.paths[i].socket = Some(sock);
            match self.conn.add_path(self.clock.now(), p.id, p.server) {
                Ok(()) => {
                    self.conn.set_path_name(p.id, &p.name);
                    info!(path = p.id.0, name = %p.name, "path available; added to the tunnel")
                }
                // Reopened after its interface came back: the tunnel still has it.
                Err(_) => info!(path = p.id.0, name = %p.name, "path socket reopened"),
            }
        }
    }

    /// A datagram the kernel received at `at`.
    ///
    /// One from an address other than the configured server's is counted
    /// and logged (once per interval, naming both addresses) but still
    /// handed to the core: it is accepted only if it authenticates, which
    /// a source address never proves anyway (UDP sources are forged at
    /// will), and a server that answers from another of its addresses (an
    /// older braid, or any server behind a NAT that rewrites its source)
    /// then still works instead of leaving the client handshaking in
    /// silence.
    fn datagram(&mut self, at: Instant, path: PathId, from: SocketAddr, d: &[u8]) {
        let Some(expected) = self.paths.get(path.0 as usize).map(|p| p.settings.server) else {
            return;
        };
        if expected != from {
            self.stray += 1;
            self.conn.count_stray(1);
            if self.stray_log.due() {
                warn!(
                    path = path.0,
                    name = self.path_name(path),
                    from = %from,
                    server = %expected,
                    count = self.stray,
                    "datagram from an address other than the configured server; accepted only if it authenticates (a server with several addresses should answer from the one the client sent to)"
                );
            }
        }
        Endpoint::handle_datagram(&mut self.conn, at, path, d);
    }

    async fn flush(&mut self) {
        while let Some(o) = Endpoint::poll_output(&mut self.conn) {
            match o {
                Output::Transmit(t) => {
                    let Some(i) = t
                        .path
                        .map(|p| p.0 as usize)
                        .filter(|&i| i < self.paths.len())
                    else {
                        continue;
                    };
                    let Some((socket, _)) = &self.paths[i].socket else {
                        // Waiting for its interface to come back.
                        self.conn
                            .path_unreachable(self.clock.now(), PathId(i as u8));
                        continue;
                    };
                    if let Err(e) = socket.send_to(&t.bytes, t.dest).await {
                        let name = &self.paths[i].settings.name;
                        self.send_errors[i].warn_with(&e, || {
                            format!("UDP send failed on path `{name}` to {}", t.dest)
                        });
                        // The interface is down or has no route: stop
                        // scheduling on it now; keepalives find it again.
                        self.conn
                            .path_unreachable(self.clock.now(), PathId(i as u8));
                        if interface_gone(&e) {
                            if let Some((_, reader)) = self.paths[i].socket.take() {
                                reader.abort();
                            }
                            warn!(path = i, name = %self.paths[i].settings.name, "path interface or address gone; reopening when it is back");
                        }
                    }
                }
                Output::Deliver(p) => {
                    if let Some((_, tun, _)) = &self.tun {
                        if let Err(e) = tun.send(&p).await {
                            self.tun_errors.warn("TUN write failed", &e);
                        }
                    }
                }
                Output::Event(e) => self.on_event(e),
            }
        }
    }

    fn on_event(&mut self, e: Event) {
        match e {
            Event::Established { params } => {
                info!(address = %params.address, prefix = params.prefix_len, gateway = %params.gateway, mtu = params.mtu, "tunnel established");
                if self.tun.as_ref().is_some_and(|(p, _, _)| *p == params) {
                    return;
                }
                if let Some((old, _, reader)) = self.tun.take() {
                    warn!(old = %old.address, new = %params.address, "tunnel parameters changed; recreating the TUN device");
                    reader.abort();
                }
                match self.factory.create(&params) {
                    Ok(tun) => {
                        let tun = Arc::new(tun);
                        let reader = super::tun::spawn_reader(tun.clone(), self.tun_tx.clone());
                        self.tun = Some((params, tun, reader));
                    }
                    Err(e) => {
                        error!(error = %e, "cannot create the TUN device; traffic will not flow")
                    }
                }
            }
            Event::PathUp { path, .. } => {
                info!(path = path.0, name = self.path_name(path), "path up")
            }
            Event::PathDown { path, .. } => {
                warn!(path = path.0, name = self.path_name(path), "path down")
            }
            Event::PeerConnected { .. } | Event::PeerDisconnected { .. } => {}
        }
    }

    fn path_name(&self, p: PathId) -> &str {
        self.path_names
            .get(p.0 as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }
}
