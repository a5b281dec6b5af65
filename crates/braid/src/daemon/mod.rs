//! The tunnel daemon: a thin tokio runtime around `braid_core::conn`.
//!
//! Nothing protocol-specific lives here; the runtime moves bytes and time:
//!
//! 1. UDP sockets (one per client path, one on the server) -> reader tasks
//!    -> channel -> main loop -> `handle_datagram`;
//! 2. TUN device -> reader task -> channel -> main loop -> `send_packet`;
//! 3. the main loop sleeps until `poll_timeout` -> `handle_timeout` (on a
//!    [`timer::PreciseTimer`]: the core's deadlines are finer than tokio's
//!    millisecond timer wheel);
//! 4. after each of these, `poll_output` is drained: datagrams go out of
//!    the right socket, inner packets into the TUN device, events to the
//!    log (and, on the client, `Established` creates the TUN device with
//!    the address the server assigned);
//! 5. status requests from the control socket and the `/metrics` endpoint
//!    reach the main loop over a channel and are answered from `status()`.
//!
//! The core is owned by the main loop alone (no locks). The TUN device is
//! behind the [`tun::Tun`] trait with an in-memory fake
//! ([`tun::channel_tun`]) so the whole daemon runs in tests without root.

pub mod admit;
pub mod client;
pub mod icmp;
pub mod intake;
pub mod listen;
pub mod net;
pub mod recvbatch;
pub mod reply;
pub mod server;
pub mod steer;
pub mod timer;
pub mod tun;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use braid_core::time::Instant;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::status::StatusReport;

/// Maps the runtime's monotonic clock onto the core's [`Instant`] (zero at
/// daemon start) and the wall clock at that moment (for handshake
/// timestamps).
#[derive(Copy, Clone, Debug)]
pub struct Clock {
    origin: tokio::time::Instant,
    unix_nanos_at_origin: u64,
}

impl Clock {
    pub fn new() -> Clock {
        let unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Clock {
            origin: tokio::time::Instant::now(),
            unix_nanos_at_origin: unix,
        }
    }
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.origin.elapsed().as_nanos() as u64)
    }
    /// Core time of an event `age` ago (a datagram's kernel arrival time).
    pub fn ago(&self, age: std::time::Duration) -> Instant {
        let now = self.now();
        Instant::from_nanos(now.as_nanos().saturating_sub(age.as_nanos() as u64))
    }
    pub fn unix_nanos_at_zero(&self) -> u64 {
        self.unix_nanos_at_origin
    }
    /// The runtime instant of core time `t`.
    pub fn deadline(&self, t: Instant) -> tokio::time::Instant {
        self.origin + std::time::Duration::from_nanos(t.as_nanos())
    }
    /// How long from now until core time `t` (zero if past).
    pub fn until(&self, t: Instant) -> std::time::Duration {
        self.deadline(t)
            .saturating_duration_since(tokio::time::Instant::now())
    }
    /// How long the event loop may sleep before the core's next deadline
    /// `t` (its `poll_timeout`); an hour when it has none, since I/O wakes
    /// the loop anyway.
    pub fn wait_for(&self, t: Option<Instant>) -> std::time::Duration {
        t.map_or(std::time::Duration::from_secs(3600), |t| self.until(t))
    }
    pub fn uptime(&self) -> std::time::Duration {
        self.origin.elapsed()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

/// A ChaCha20 generator seeded from the operating system.
pub fn os_rng() -> Result<ChaCha20Rng> {
    let mut seed = [0u8; 32];
    getrandom::getrandom(&mut seed).context("cannot get randomness from the operating system")?;
    Ok(ChaCha20Rng::from_seed(seed))
}

/// Structured logs to stderr; `RUST_LOG` overrides the configured level.
pub fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("braid={level},{level}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

/// Resolves when the process gets SIGINT, SIGTERM or SIGHUP. SIGHUP is
/// what a foreground daemon gets when its terminal closes; without a
/// handler it would die on the spot and leave its NAT table and control
/// socket behind, so it stops cleanly like SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (term, hup) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    );
    let (Ok(mut term), Ok(mut hup)) = (term, hup) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
}

/// A request for the daemon's status report, answered by the main loop.
pub type StatusRequest = oneshot::Sender<StatusReport>;

/// Asks the main loop for a report.
async fn ask(tx: &mpsc::Sender<StatusRequest>) -> Option<StatusReport> {
    let (reply, rx) = oneshot::channel();
    tx.send(reply).await.ok()?;
    rx.await.ok()
}

/// The control socket: removed when dropped.
pub struct ControlSocket {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Serves `status` requests on a Unix socket at `path`. Fails if another
/// daemon answers there; a stale socket file is replaced.
pub async fn serve_control(path: &Path, tx: mpsc::Sender<StatusRequest>) -> Result<ControlSocket> {
    if path.exists() {
        if tokio::net::UnixStream::connect(path).await.is_ok() {
            bail!(
                "`control_socket` {}: another braid daemon is running there; stop it or set another control_socket",
                path.display()
            );
        }
        let _ = std::fs::remove_file(path);
    }
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).with_context(|| {
                format!(
                    "`control_socket`: cannot create directory {}",
                    dir.display()
                )
            })?;
        }
    }
    let listener = tokio::net::UnixListener::bind(path)
        .with_context(|| format!("`control_socket`: cannot listen on {}", path.display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660));
    }
    let task = tokio::spawn(listen::serve(
        listener,
        "control socket: accept failed",
        move |stream: tokio::net::UnixStream| {
            let tx = tx.clone();
            async move {
                let (r, mut w) = stream.into_split();
                let mut line = String::new();
                let mut reader = BufReader::new(r.take(256));
                let read = reader.read_line(&mut line);
                if tokio::time::timeout(std::time::Duration::from_secs(2), read)
                    .await
                    .is_err()
                {
                    return;
                }
                let answer = match line.trim() {
                    "status" => match ask(&tx).await {
                        Some(r) => serde_json::to_string_pretty(&r).unwrap_or_default() + "\n",
                        None => "{\"error\":\"daemon is shutting down\"}\n".into(),
                    },
                    // `braid down`: stop as on SIGTERM, through the same
                    // clean-up path.
                    "stop" => {
                        // SAFETY: sending a signal to this very process.
                        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
                        "{\"stopping\":true}\n".into()
                    }
                    other => {
                        format!("{{\"error\":\"unknown command {other:?}; try status or stop\"}}\n")
                    }
                };
                let _ = w.write_all(answer.as_bytes()).await;
                let _ = w.shutdown().await;
            }
        },
    ));
    Ok(ControlSocket {
        path: path.to_path_buf(),
        task,
    })
}

/// Serves `GET /metrics` (Prometheus text format) on `addr`; returns the
/// bound address and the server task.
pub async fn serve_metrics(
    addr: SocketAddr,
    tx: mpsc::Sender<StatusRequest>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("`metrics.listen`: cannot listen on {addr} (in use? set another address or metrics.enabled = false)")
    })?;
    let bound = listener.local_addr()?;
    let task = tokio::spawn(listen::serve(
        listener,
        "metrics: accept failed",
        move |stream: tokio::net::TcpStream| {
            let tx = tx.clone();
            async move {
                let _ =
                    tokio::time::timeout(std::time::Duration::from_secs(5), http_once(stream, &tx))
                        .await;
            }
        },
    ));
    Ok((bound, task))
}

/// One HTTP/1.x request-response, then close.
async fn http_once(
    stream: tokio::net::TcpStream,
    tx: &mpsc::Sender<StatusRequest>,
) -> std::io::Result<()> {
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r.take(8192));
    let mut request_line = String::new();
    r.read_line(&mut request_line).await?;
    // Skip the headers.
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).await? == 0 || h.trim().is_empty() {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, ctype, body) = match (method, target) {
        ("GET", "/metrics") => match ask(tx).await {
            Some(rep) => (
                "200 OK",
                "text/plain; version=0.0.4; charset=utf-8",
                rep.to_prometheus(),
            ),
            None => (
                "503 Service Unavailable",
                "text/plain",
                "shutting down\n".into(),
            ),
        },
        ("GET", _) => ("404 Not Found", "text/plain", "try /metrics\n".into()),
        _ => ("405 Method Not Allowed", "text/plain", "GET only\n".into()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes()).await?;
    w.write_all(body.as_bytes()).await?;
    w.shutdown().await
}

/// Logs at most one warning per `every` for a recurring I/O error.
#[derive(Debug, Default)]
pub struct RateLimitedLog {
    last: Option<std::time::Instant>,
    suppressed: u64,
}

impl RateLimitedLog {
    pub fn warn(&mut self, what: &str, err: &std::io::Error) {
        self.warn_with(err, || what.to_string());
    }

    /// [`RateLimitedLog::warn`] with a message built only when it is
    /// logged (naming a path or client may take a lookup).
    pub fn warn_with(&mut self, err: &std::io::Error, what: impl FnOnce() -> String) {
        let now = std::time::Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < std::time::Duration::from_secs(5))
        {
            self.suppressed += 1;
            return;
        }
        tracing::warn!(error = %err, suppressed = self.suppressed, "{}", what());
        self.last = Some(now);
        self.suppressed = 0;
    }
}

/// A UDP reader's failures: counted (`udp_receive_errors` in status and
/// metrics), logged once per interval, and each followed by a pause that
/// doubles from 1 ms to 1 s while they repeat, so that a socket stuck in
/// an error state never makes its reader spin on a core.
#[derive(Debug)]
pub struct RecvErrors {
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
    pause: std::time::Duration,
    log: RateLimitedLog,
    what: String,
}

impl RecvErrors {
    const FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(1);
    const MAX_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);

    /// `what` names the socket in the log line; failures add to `count`.
    pub fn new(what: String, count: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Self {
        RecvErrors {
            count,
            pause: Self::FIRST_PAUSE,
            log: RateLimitedLog::default(),
            what,
        }
    }

    /// A receive failed: count, log, back off.
    pub async fn failed(&mut self, e: &std::io::Error) {
        let pause = self.record(e);
        tokio::time::sleep(pause).await;
    }

    /// Counts and logs a failure; the pause to take after it.
    pub fn record(&mut self, e: &std::io::Error) -> std::time::Duration {
        self.count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.log.warn(&self.what, e);
        let pause = self.pause;
        self.pause = (self.pause * 2).min(Self::MAX_PAUSE);
        pause
    }

    /// A receive succeeded: the next failure pauses briefly again.
    pub fn succeeded(&mut self) {
        self.pause = Self::FIRST_PAUSE;
    }

    /// The pause the next failure takes (tests).
    pub fn next_pause(&self) -> std::time::Duration {
        self.pause
    }
}

/// How often a recurring condition (a stray datagram, a failing
/// handshake) is logged at most.
pub const LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// Says whether a recurring condition is due to be logged again: the first
/// time, then at most once per interval.
#[derive(Debug)]
pub struct Every {
    interval: std::time::Duration,
    last: Option<std::time::Instant>,
}

impl Every {
    pub fn new(interval: std::time::Duration) -> Self {
        Every {
            interval,
            last: None,
        }
    }

    /// True (and restarts the interval) when the last `true` was at least
    /// an interval ago.
    pub fn due(&mut self) -> bool {
        let now = std::time::Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < self.interval)
        {
            return false;
        }
        self.last = Some(now);
        true
    }
}

/// Most queued items one wake-up handles before the event loop flushes
/// outputs and looks at its timers again.
pub(crate) const BATCH: usize = 64;

/// Handles `first` and then up to [`BATCH`] more items already queued in
/// `rx`, so that a burst costs one pass of the event loop.
pub(crate) fn drain_batch<T>(
    first: T,
    rx: &mut tokio::sync::mpsc::Receiver<T>,
    mut handle: impl FnMut(T),
) {
    handle(first);
    for _ in 0..BATCH {
        let Ok(item) = rx.try_recv() else { break };
        handle(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_errors_back_off_and_are_counted() {
        let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut r = RecvErrors::new("UDP receive failed".into(), count.clone());
        let e = std::io::Error::from_raw_os_error(libc::ENOMEM);
        let pauses: Vec<u128> = (0..12).map(|_| r.record(&e).as_millis()).collect();
        assert_eq!(count.load(std::sync::atomic::Ordering::Relaxed), 12);
        assert_eq!(
            pauses,
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000],
            "doubling from 1 ms to at most 1 s"
        );
        r.succeeded();
        assert_eq!(r.next_pause(), std::time::Duration::from_millis(1));
    }
}
