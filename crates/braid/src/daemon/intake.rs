//! The server's reading loop: data of established tunnels before
//! handshakes, every queue bounded in count and in time, and every drop
//! counted.
//!
//! One reader task takes datagrams off the server's UDP sockets and sorts
//! them by their type byte. Where the kernel took the pair of sockets of
//! [`super::steer`], it has sorted them already: the data socket (transport
//! datagrams, and initiations from connected addresses) is read first and
//! in full batches; the handshake socket at most [`HANDSHAKE_READS`] a
//! second ([`HANDSHAKE_READS_SPREAD`] while its datagrams come from ever
//! new sources), [`HANDSHAKE_RECV_BATCH`] at a time, after the data socket had
//! nothing or had its turn [`DATA_TURNS`] times in a row, and only while
//! the handshake queue has room for a batch ([`HANDSHAKE_RESUME`]) beyond
//! the places it keeps for the data socket's initiations
//! ([`HANDSHAKE_QUEUE_KEEP`]): a datagram read into a full queue would be
//! a read spent only to discard it. Between reads the kernel drops what
//! overflows that socket's small buffer, at no cost to the daemon, and
//! counts it (`drop_kernel_handshake`). Without the
//! pair, everything arrives on one socket, sorted here alone:
//!
//! - handshake initiations go to a small queue ([`HANDSHAKE_QUEUE`]) the
//!   main loop serves a few at a time ([`HANDSHAKE_BATCH`] per wake-up).
//!   Before that, an initiation must pass a per-source-address admission
//!   limit ([`ADMIT_PER_SECOND`]) unless it comes from an address a
//!   connected client's path uses ([`Server::peer_addresses`]). A flood of
//!   initiations, replayed or not, thus costs one read each and is dropped
//!   (`drop_handshake_queue`) before it can fill the queue; a client
//!   restarting during a flood from spoofed addresses still gets in.
//!   Initiations from all other addresses together are capped too
//!   ([`ADMIT_ALL_PER_SECOND`]), since spoofed ones come from ever new
//!   addresses; beyond that cap a second budget
//!   ([`ADMIT_COOKIE_PER_SECOND`]) admits them for a cookie reply only,
//!   and retries that carry a MAC2 have a budget of their own
//!   ([`ADMIT_MAC2_PER_SECOND`]), so a brand-new client that got one
//!   initiation past a spoofed flood gets its cookie and its handshake.
//! - everything else (transport packets, and garbage, which the core
//!   sorts and counts cheaply) goes to the data queue, which the main loop
//!   serves in batches like before.
//!
//! Why: an initiation that passes MAC1 costs the core an X25519 (about
//! 127 µs), so 8 k replayed initiations a second used to pin the server and
//! delay the data of every tunnel behind them by up to 1.5 s.
//!
//! Load: the main loop tells the core the server is under load
//! ([`Endpoint::handle_datagram_loaded`]) while the handshake queue is at
//! least an eighth full or the reader has had to drop initiations, and
//! for a second after (wireguard-go's `UnderLoadAfterTime`). Under load the core answers initiations without
//! a valid MAC2 with a cookie reply instead of a Diffie-Hellman.
//!
//! Time bound: a datagram that waited longer than [`MAX_DATA_AGE`]
//! ([`MAX_HANDSHAKE_AGE`] for initiations) since the kernel received it is
//! dropped (`drop_stale`): the 4096-deep queue plus the 4 MiB socket buffer
//! used to add 0.4-1.6 s before anything was dropped, which only makes
//! TCP inside the tunnel time out. The kernel's own drops when the socket
//! buffer overflows are read from `SO_RXQ_OVFL` (`drop_kernel_rxq`).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use braid_core::conn::{Endpoint, IntakeDrops, Server};
use braid_core::crypto::packet::{peek_receiver_index, TYPE_HANDSHAKE_INIT, TYPE_TRANSPORT};
use braid_core::time::{Duration, Instant};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use super::admit::{has_mac2, Admission, Admit};
pub use super::admit::{
    ADMIT_ALL_BURST, ADMIT_ALL_PER_SECOND, ADMIT_BURST, ADMIT_COOKIE_PER_SECOND, ADMIT_MAC2_BURST,
    ADMIT_MAC2_PER_SECOND, ADMIT_PER_SECOND,
};
use super::recvbatch::{enable_rxq_ovfl, recv_batch, recv_from, Batch, Meta, RECV_BATCH};
use super::reply::{LocalAddr, ReplySources};
use super::{Clock, RecvErrors};

/// Datagrams of established tunnels waiting for the main loop.
pub const DATA_QUEUE: usize = 4096;
/// Handshake initiations waiting for the main loop.
pub const HANDSHAKE_QUEUE: usize = 256;
/// Initiations the main loop handles per wake-up, so that a queue of them
/// never holds up data for long.
pub const HANDSHAKE_BATCH: usize = 16;
/// Under load from this queue depth on (wireguard-go: an eighth).
pub const UNDER_LOAD_DEPTH: usize = HANDSHAKE_QUEUE / 8;
/// And for this long after the depth was last seen.
pub const UNDER_LOAD_FOR: Duration = Duration::from_secs(1);
/// A data datagram older than this when its turn comes is dropped.
pub const MAX_DATA_AGE: Duration = Duration::from_millis(100);
/// An initiation older than this when its turn comes is dropped (its
/// client retries, and a cookie reply that late is useless).
pub const MAX_HANDSHAKE_AGE: Duration = Duration::from_millis(500);
/// Datagrams read off the handshake socket per second at most while the
/// per-address limit refuses most of them (a flood from few sources,
/// whose reads buy nothing), so that such a flood costs the daemon a
/// bounded share of its one thread (reading and admission cost about a
/// microsecond a datagram), and the rest overflows in the kernel.
pub const HANDSHAKE_READS: u64 = 20_000;
/// The same while most reads pass the per-address limit (a flood from
/// spoofed, ever new sources): each of those may be a brand-new client,
/// whose only way in is to be read and answered with a cookie, and the
/// chance of each of its attempts (one every 5 s) is this budget over the
/// flood's rate. Reading and answering costs about 4 µs a datagram, so
/// this is at most a quarter of the daemon's thread, spent only on a
/// flood that has no throughput target ("cookies carry it").
pub const HANDSHAKE_READS_SPREAD: u64 = 60_000;
/// Datagrams read off the handshake socket with one `recvmmsg` at most,
/// and the most the read budget saves up: the runtime's timer wakes the
/// reader once a millisecond at best, so a budget of 60,000 a second
/// needs batches of 60 (with 16, the budget was 16,000 a second at most,
/// whatever it said).
pub const HANDSHAKE_RECV_BATCH: usize = 64;
/// Buffer for one datagram of the handshake socket, whose filter passes
/// nothing longer than an initiation.
const HANDSHAKE_BUF: usize = 4096;
/// Data-socket batches read in a row before the handshake socket, if it
/// has datagrams, goes first once (data cannot starve handshakes).
pub const DATA_TURNS: u32 = 4;
/// Places in the handshake queue the handshake socket never fills: kept
/// for the initiations that arrive on the data socket (from connected
/// clients' addresses, and retries with a MAC2), so that a queue full of
/// a flood's initiations never turns away a restarted or retrying client.
pub const HANDSHAKE_QUEUE_KEEP: usize = 32;
/// Free places (beyond [`HANDSHAKE_QUEUE_KEEP`]) the handshake queue must
/// have before the reader reads the handshake socket again: while the
/// queue is fuller, the socket is not read at all and the kernel drops
/// what overflows its small buffer, at no cost to the daemon, instead of
/// the reader spending a read on each initiation only to discard it. One
/// full batch, so that the reader resumes with one `recvmmsg` of
/// [`HANDSHAKE_RECV_BATCH`] rather than a system call per freed place.
pub const HANDSHAKE_RESUME: usize = HANDSHAKE_RECV_BATCH;
/// How often the main loop refreshes the set of connected addresses.
const KNOWN_REFRESH: Duration = Duration::from_secs(1);

/// One datagram, when the kernel received it, and the local address it
/// was sent to (with IP_PKTINFO; the server replies from it).
#[derive(Debug)]
pub struct Datagram {
    pub from: SocketAddr,
    pub local: Option<LocalAddr>,
    pub bytes: Vec<u8>,
    pub at: Instant,
}

/// Counters the reader task keeps.
#[derive(Debug, Default)]
struct ReaderCounters {
    handshake_queue: AtomicU64,
    /// Initiations admitted beyond the DH budget, for a cookie only
    /// ([`ADMIT_COOKIE_PER_SECOND`]): each puts the server under load.
    cookie_only: AtomicU64,
    kernel_rxq: AtomicU64,
    /// Datagrams read off the handshake socket.
    handshake_reads: AtomicU64,
    malformed: AtomicU64,
    malformed_bytes: AtomicU64,
}

/// The main loop's side of the reader.
pub struct Intake {
    pub data: mpsc::Receiver<Datagram>,
    pub handshakes: mpsc::Receiver<Datagram>,
    counters: Arc<ReaderCounters>,
    known: Arc<Mutex<HashSet<IpAddr>>>,
    known_at: Option<Instant>,
    stale: u64,
    under_load_until: Option<Instant>,
    /// `handshake_queue` drops and `cookie_only` admissions seen at the
    /// last load check.
    dropped_seen: (u64, u64),
    clock: Clock,
    /// The data socket, whose steering program lists connected addresses.
    data_sock: Arc<UdpSocket>,
    /// The handshake socket, if the kernel took the pair, and its kernel
    /// drop count at the start.
    hs_sock: Option<(Arc<UdpSocket>, u32)>,
    /// The connected addresses the steering program lists now.
    steered: Vec<IpAddr>,
    steer_log: super::RateLimitedLog,
}

impl Intake {
    /// Turns on kernel drop counting on `sock` and spawns the reader of
    /// it and of the handshake socket `hs` (see [`super::steer`]), which
    /// counts, logs and backs off from receive errors with `errors`.
    pub fn spawn(
        sock: Arc<UdpSocket>,
        hs: Option<Arc<UdpSocket>>,
        clock: Clock,
        errors: RecvErrors,
    ) -> Intake {
        enable_rxq_ovfl(&sock);
        super::net::enable_rx_timestamps(&sock);
        if let Some(h) = &hs {
            super::net::enable_rx_timestamps(h);
        }
        let (data_tx, data) = mpsc::channel(DATA_QUEUE);
        let (hs_tx, handshakes) = mpsc::channel(HANDSHAKE_QUEUE);
        let counters = Arc::new(ReaderCounters::default());
        let known = Arc::new(Mutex::new(HashSet::new()));
        let reader = Reader {
            sock: sock.clone(),
            hs: hs.clone(),
            hs_tokens: HANDSHAKE_RECV_BATCH as f64,
            hs_refilled: std::time::Instant::now(),
            hs_rate: HANDSHAKE_READS,
            clock,
            data_tx,
            hs_tx,
            counters: counters.clone(),
            known: known.clone(),
            admission: Admission::new(),
            kernel_last: None,
            errors,
        };
        tokio::spawn(reader.run());
        Intake {
            data,
            handshakes,
            counters,
            known,
            known_at: None,
            stale: 0,
            under_load_until: None,
            dropped_seen: (0, 0),
            clock,
            data_sock: sock,
            hs_sock: hs.map(|h| {
                let base = super::steer::kernel_drops(&*h).unwrap_or(0);
                (h, base)
            }),
            steered: Vec::new(),
            steer_log: super::RateLimitedLog::default(),
        }
    }

    /// Handles `first` and the data datagrams already queued behind it (up
    /// to [`super::BATCH`]), dropping those older than [`MAX_DATA_AGE`];
    /// `replies` learns the local address each one arrived at.
    pub fn serve_data(&mut self, first: Datagram, server: &mut Server, replies: &mut ReplySources) {
        let now = self.clock.now();
        let wall = std::time::Instant::now();
        let mut handle = |d: Datagram, stale: &mut u64| {
            if now.saturating_since(d.at) > MAX_DATA_AGE {
                *stale += 1;
            } else {
                replies.arrived(d.from, d.local, wall);
                Endpoint::handle_datagram(server, d.at, d.from, &d.bytes);
            }
        };
        handle(first, &mut self.stale);
        for _ in 0..super::BATCH {
            let Ok(d) = self.data.try_recv() else { break };
            handle(d, &mut self.stale);
        }
        self.refresh_known(server, now);
    }

    /// Handles `first` and up to [`HANDSHAKE_BATCH`] - 1 more queued
    /// initiations, telling the core whether the server is under load.
    pub fn serve_handshakes(
        &mut self,
        first: Datagram,
        server: &mut Server,
        replies: &mut ReplySources,
    ) {
        let now = self.clock.now();
        let wall = std::time::Instant::now();
        let under_load = self.under_load(now);
        let mut next = Some(first);
        let mut n = 0;
        while let Some(d) = next.take() {
            if now.saturating_since(d.at) > MAX_HANDSHAKE_AGE {
                self.stale += 1;
            } else {
                replies.arrived(d.from, d.local, wall);
                Endpoint::handle_datagram_loaded(server, d.at, d.from, &d.bytes, under_load);
            }
            n += 1;
            if n < HANDSHAKE_BATCH {
                next = self.handshakes.try_recv().ok();
            }
        }
    }

    /// Whether the handshake queue is (or within [`UNDER_LOAD_FOR`] was)
    /// at least [`UNDER_LOAD_DEPTH`] deep, or the reader dropped
    /// initiations or admitted them for a cookie only since the last
    /// check.
    pub fn under_load(&mut self, now: Instant) -> bool {
        let dropped = (
            self.counters.handshake_queue.load(Ordering::Relaxed),
            self.counters.cookie_only.load(Ordering::Relaxed),
        );
        if self.handshakes.len() >= UNDER_LOAD_DEPTH || dropped != self.dropped_seen {
            self.under_load_until = Some(now + UNDER_LOAD_FOR);
        }
        self.dropped_seen = dropped;
        self.under_load_until.is_some_and(|t| now < t)
    }

    /// Running totals of the datagrams dropped before the core.
    pub fn drops(&self) -> IntakeDrops {
        IntakeDrops {
            handshake_queue: self.counters.handshake_queue.load(Ordering::Relaxed),
            stale: self.stale,
            kernel_rxq: self.counters.kernel_rxq.load(Ordering::Relaxed),
            kernel_handshake: self.hs_sock.as_ref().map_or(0, |(h, base)| {
                super::steer::kernel_drops(&**h).map_or(0, |d| d.wrapping_sub(*base) as u64)
            }),
            malformed: self.counters.malformed.load(Ordering::Relaxed),
            malformed_bytes: self.counters.malformed_bytes.load(Ordering::Relaxed),
        }
    }

    /// Datagrams the reader took off the handshake socket so far.
    pub fn handshake_reads(&self) -> u64 {
        self.counters.handshake_reads.load(Ordering::Relaxed)
    }

    /// Updates the addresses whose initiations skip the admission limit,
    /// and those the kernel steers to the data socket, at most every
    /// [`KNOWN_REFRESH`].
    fn refresh_known(&mut self, server: &Server, now: Instant) {
        if self
            .known_at
            .is_some_and(|t| now.saturating_since(t) < KNOWN_REFRESH)
        {
            return;
        }
        self.known_at = Some(now);
        let set: HashSet<IpAddr> = server.peer_addresses().map(|a| a.ip()).collect();
        if self.hs_sock.is_some() {
            // IPv4, v4-mapped and IPv6 alike (the program compares each
            // with the header the datagram came in).
            let mut list: Vec<IpAddr> = set.iter().copied().collect();
            list.sort_unstable();
            if list != self.steered {
                match super::steer::steer(&*self.data_sock, &list) {
                    Ok(()) => self.steered = list,
                    Err(e) => self.steer_log.warn(
                        "cannot update the steering program (connected clients' initiations keep going to the handshake socket)",
                        &e,
                    ),
                }
            }
        }
        if let Ok(mut k) = self.known.lock() {
            *k = set;
        }
    }
}

/// The reader task.
struct Reader {
    sock: Arc<UdpSocket>,
    /// The handshake socket, read within [`HANDSHAKE_READS`].
    hs: Option<Arc<UdpSocket>>,
    /// Reads of the handshake socket the budget allows now (a token
    /// bucket of [`HANDSHAKE_RECV_BATCH`] at most), when it was last
    /// refilled, and at what rate it refills.
    hs_tokens: f64,
    hs_refilled: std::time::Instant,
    hs_rate: u64,
    clock: Clock,
    data_tx: mpsc::Sender<Datagram>,
    hs_tx: mpsc::Sender<Datagram>,
    counters: Arc<ReaderCounters>,
    known: Arc<Mutex<HashSet<IpAddr>>>,
    /// The admission limits on initiations.
    admission: Admission,
    /// The socket's last `SO_RXQ_OVFL` value (a wrapping u32).
    kernel_last: Option<u32>,
    /// Receive errors: counted, logged and backed off from.
    errors: RecvErrors,
}

impl Reader {
    async fn run(mut self) {
        let mut batch = Batch::new(RECV_BATCH);
        let mut metas = Vec::with_capacity(RECV_BATCH);
        let mut hs_batch = Batch::with_buffers(HANDSHAKE_RECV_BATCH, HANDSHAKE_BUF);
        let mut hs_metas = Vec::with_capacity(HANDSHAKE_RECV_BATCH);
        let (sock, hs) = (self.sock.clone(), self.hs.clone());
        let mut data_turns = 0;
        loop {
            // The handshake socket within its budget; first after
            // DATA_TURNS data batches in a row, else only once the data
            // socket has nothing.
            let now = std::time::Instant::now();
            self.hs_tokens = (self.hs_tokens
                + now.duration_since(self.hs_refilled).as_secs_f64() * self.hs_rate as f64)
                .min(HANDSHAKE_RECV_BATCH as f64);
            self.hs_refilled = now;
            // And only while the handshake queue has room for what it
            // reads (beyond the places kept for the data socket's
            // initiations): while it is full the socket is left alone
            // and the kernel drops the flood. The data socket is read as
            // ever; without the pair, data and initiations share one
            // socket, which is never left unread (a full queue then
            // costs one read per dropped initiation, as before).
            let room = self.hs_tx.capacity().saturating_sub(HANDSHAKE_QUEUE_KEEP);
            let has_room = room >= HANDSHAKE_RESUME;
            let hs_open = hs.is_some() && self.hs_tokens >= 1.0 && has_room;
            hs_batch.limit = (self.hs_tokens as usize).min(room);
            let hs_sock = if hs_open { hs.as_deref() } else { None };
            let wake = tokio::time::Instant::from_std(
                now + std::time::Duration::from_secs_f64(
                    (1.0 - self.hs_tokens).max(0.0) / self.hs_rate as f64,
                ),
            );
            let hs_tx = &self.hs_tx;
            // Resolves when the handshake socket may be read again (the
            // budget refilled, or the main loop made room), false once
            // the main loop is gone.
            let hs_wait = async {
                match hs {
                    Some(_) if !has_room => hs_tx
                        .reserve_many(HANDSHAKE_QUEUE_KEEP + HANDSHAKE_RESUME)
                        .await
                        .is_ok(),
                    Some(_) if !hs_open => {
                        tokio::time::sleep_until(wake).await;
                        true
                    }
                    _ => std::future::pending().await,
                }
            };
            let (from_hs, r) = if data_turns >= DATA_TURNS {
                tokio::select! {
                    biased;
                    r = recv_from(hs_sock, &mut hs_batch, &mut hs_metas) => (true, r),
                    r = recv_batch(&sock, &mut batch, &mut metas) => (false, r),
                    alive = hs_wait => if alive { continue } else { return },
                }
            } else {
                tokio::select! {
                    biased;
                    r = recv_batch(&sock, &mut batch, &mut metas) => (false, r),
                    r = recv_from(hs_sock, &mut hs_batch, &mut hs_metas) => (true, r),
                    alive = hs_wait => if alive { continue } else { return },
                }
            };
            if let Err(e) = r {
                self.errors.failed(&e).await;
                continue;
            }
            self.errors.succeeded();
            let refused0 = self.admission.refused_per_source;
            let (b, m) = if from_hs {
                data_turns = 0;
                self.counters
                    .handshake_reads
                    .fetch_add(hs_metas.len() as u64, Ordering::Relaxed);
                (&hs_batch.bufs, &hs_metas)
            } else {
                data_turns += 1;
                (&batch.bufs, &metas)
            };
            for meta in m {
                // The handshake socket's drops are read with SO_MEMINFO
                // (they include its filter's).
                if let (Some(total), false) = (meta.kernel_drops, from_hs) {
                    self.count_kernel(total);
                }
                if !self.sort(meta, &b[meta.slot][..meta.len]).await {
                    return;
                }
            }
            if from_hs {
                // The batch is paid from the budget, which refills at the
                // larger rate unless the per-address limit refused half
                // the batch or more.
                let n = hs_metas.len() as u64;
                self.hs_tokens -= n as f64;
                let refused = self.admission.refused_per_source - refused0;
                self.hs_rate = if refused * 2 >= n {
                    HANDSHAKE_READS
                } else {
                    HANDSHAKE_READS_SPREAD
                };
            }
        }
    }

    /// Queues one datagram by kind; false once the main loop is gone.
    ///
    /// Cheapest first: what the core would only count as malformed (an
    /// unknown type byte, a transport packet too short for its header) is
    /// counted here and dropped before the copy, the queue and the main
    /// loop's wake-up; an initiation meets the admission limit before it
    /// is copied. In a garbage flood three datagrams in five never leave
    /// the reader.
    async fn sort(&mut self, meta: &Meta, bytes: &[u8]) -> bool {
        let kind = bytes.first().copied();
        let malformed = match kind {
            Some(TYPE_TRANSPORT) => peek_receiver_index(bytes).is_none(),
            Some(TYPE_HANDSHAKE_INIT) => false,
            _ => true,
        };
        if malformed {
            self.counters.malformed.fetch_add(1, Ordering::Relaxed);
            self.counters
                .malformed_bytes
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            return true;
        }
        let at = self.clock.ago(meta.age);
        let d = |bytes: &[u8]| Datagram {
            from: meta.from,
            local: meta.local,
            bytes: bytes.to_vec(),
            at,
        };
        if kind == Some(TYPE_HANDSHAKE_INIT) {
            match self.admit(meta.from.ip(), at, has_mac2(bytes)) {
                Admit::No => {
                    self.counters
                        .handshake_queue
                        .fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                Admit::CookieOnly => {
                    self.counters.cookie_only.fetch_add(1, Ordering::Relaxed);
                }
                Admit::Yes => {}
            }
            match self.hs_tx.try_send(d(bytes)) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.counters
                        .handshake_queue
                        .fetch_add(1, Ordering::Relaxed);
                    true
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        } else {
            self.data_tx.send(d(bytes)).await.is_ok()
        }
    }

    /// Connected clients' addresses always; others within the admission
    /// limits.
    fn admit(&mut self, ip: IpAddr, now: Instant, mac2: bool) -> Admit {
        let known = self.known.lock().map(|k| k.contains(&ip)).unwrap_or(false);
        self.admission.check(ip, now, mac2, known)
    }

    fn count_kernel(&mut self, total: u32) {
        // The kernel reports a running total per socket; count what it
        // added since the last datagram.
        let added = match self.kernel_last {
            Some(last) => total.wrapping_sub(last),
            None => total,
        };
        self.kernel_last = Some(total);
        self.counters
            .kernel_rxq
            .fetch_add(added as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_core::crypto::handshake::INIT_MIN_LEN;

    /// Datagrams queued in `rx` now.
    fn drain(rx: &mut mpsc::Receiver<Datagram>) -> Vec<Datagram> {
        let mut v = Vec::new();
        while let Ok(d) = rx.try_recv() {
            v.push(d);
        }
        v
    }

    fn test_errors() -> RecvErrors {
        RecvErrors::new("UDP receive failed".into(), Arc::new(AtomicU64::new(0)))
    }

    #[tokio::test]
    async fn initiations_admitted_per_source_data_apart_and_drops_mean_load() {
        let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let addr = sock.local_addr().unwrap();
        let clock = Clock::new();
        let mut intake = Intake::spawn(sock, None, clock, test_errors());
        assert!(!intake.under_load(clock.now()));
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut init = vec![0u8; 160];
        init[0] = TYPE_HANDSHAKE_INIT;
        for _ in 0..100 {
            tx.send_to(&init, addr).unwrap();
        }
        let data = [0x10u8; 40];
        for _ in 0..5 {
            tx.send_to(&data, addr).unwrap();
        }
        let mut got = (Vec::new(), Vec::new());
        for _ in 0..100 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            got.0.extend(drain(&mut intake.data));
            got.1.extend(drain(&mut intake.handshakes));
            let dropped = intake.drops().handshake_queue;
            if got.0.len() == 5 && got.1.len() as u64 + dropped == 100 {
                break;
            }
        }
        // Every data datagram in the data queue, in order, with its source.
        assert_eq!(got.0.len(), 5);
        assert!(got
            .0
            .iter()
            .all(|d| d.bytes == data && d.from == tx.local_addr().unwrap()));
        // One source: a burst of initiations admitted, the rest dropped and
        // counted at the cost of a read.
        let admitted = got.1.len() as u64;
        assert!(
            (ADMIT_BURST..=ADMIT_BURST + 2).contains(&admitted),
            "{admitted} admitted"
        );
        assert_eq!(intake.drops().handshake_queue, 100 - admitted);
        // Dropping initiations puts the server under load for a while.
        let now = clock.now();
        assert!(intake.under_load(now));
        assert!(intake.under_load(now + Duration::from_millis(900)));
        assert!(!intake.under_load(now + UNDER_LOAD_FOR + Duration::from_millis(1)));
        // The kernel dropped nothing here.
        assert_eq!(intake.drops().kernel_rxq, 0);
    }

    #[tokio::test]
    async fn beyond_the_dh_budget_initiations_are_admitted_for_a_cookie_and_mac2_apart() {
        // Many sources (127.0.0.0/8 is all loopback), as a spoofed flood
        // would have: each within its own limit.
        let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let addr = sock.local_addr().unwrap();
        let clock = Clock::new();
        let mut intake = Intake::spawn(sock, None, clock, test_errors());
        let sources: Vec<std::net::UdpSocket> = (0..50)
            .map(|i| std::net::UdpSocket::bind(format!("127.0.1.{}:0", i + 1)).unwrap())
            .collect();
        let mut init = vec![0u8; INIT_MIN_LEN];
        init[0] = TYPE_HANDSHAKE_INIT;
        // 500 initiations without MAC2 (10 from each source, within its
        // limit): the DH budget's burst (200) and what it refills while
        // they arrive; the rest for a cookie only, which puts the server
        // under load. None is dropped.
        let mut got = Vec::new();
        for _ in 0..10 {
            for s in &sources {
                s.send_to(&init, addr).unwrap();
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            got.extend(drain(&mut intake.handshakes));
        }
        for _ in 0..200 {
            got.extend(drain(&mut intake.handshakes));
            if got.len() >= 500 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(got.len(), 500);
        let cookie_only = intake.counters.cookie_only.load(Ordering::Relaxed);
        assert!(
            (100..=500 - ADMIT_ALL_BURST).contains(&cookie_only),
            "{cookie_only} for a cookie only"
        );
        assert_eq!(intake.drops().handshake_queue, 0);
        assert!(intake.under_load(clock.now()));
        // Retries with a MAC2 from 60 new addresses: their own budget's
        // burst, untouched by the flood above, and no more.
        let mut stamped = init.clone();
        *stamped.last_mut().unwrap() = 1;
        let retries: Vec<std::net::UdpSocket> = (0..60)
            .map(|i| std::net::UdpSocket::bind(format!("127.0.2.{}:0", i + 1)).unwrap())
            .collect();
        for s in &retries {
            s.send_to(&stamped, addr).unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..200 {
            got.extend(drain(&mut intake.handshakes));
            if got.len() >= ADMIT_MAC2_BURST as usize {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let late = drain(&mut intake.handshakes).len();
        let n = got.len() + late;
        assert!(
            (ADMIT_MAC2_BURST as usize..=ADMIT_MAC2_BURST as usize + 2).contains(&n),
            "{n} MAC2 retries admitted"
        );
        assert!(got.iter().all(|d| has_mac2(&d.bytes)));
        assert_eq!(intake.drops().handshake_queue, 60 - n as u64);
        assert!(!has_mac2(&init) && has_mac2(&stamped));
    }

    #[tokio::test]
    async fn the_pair_is_read_data_first_and_kernel_drops_counted() {
        let make = |d| socket2::Socket::new(d, socket2::Type::DGRAM, None);
        let socks =
            super::super::steer::ServerSockets::bind("127.0.0.1:0".parse().unwrap(), make).unwrap();
        let addr = socks.data.local_addr().unwrap();
        let hs = socks.handshake.map(Arc::new);
        assert!(hs.is_some(), "the kernel took the pair");
        let clock = Clock::new();
        let mut intake = Intake::spawn(Arc::new(socks.data), hs, clock, test_errors());
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut init = vec![0u8; INIT_MIN_LEN];
        init[0] = TYPE_HANDSHAKE_INIT;
        let data = [0x10u8; 40];
        // An initiation, data, and junk the handshake socket's filter
        // drops in the kernel.
        tx.send_to(&init, addr).unwrap();
        tx.send_to(&data, addr).unwrap();
        tx.send_to(&[0x55; 200], addr).unwrap();
        tx.send_to(&[0x13; 64], addr).unwrap();
        let mut got = (Vec::new(), Vec::new());
        for _ in 0..100 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            got.0.extend(drain(&mut intake.data));
            got.1.extend(drain(&mut intake.handshakes));
            if !got.0.is_empty() && !got.1.is_empty() {
                break;
            }
        }
        assert_eq!(got.0.len(), 1);
        assert_eq!(got.0[0].bytes, data);
        assert_eq!(got.1.len(), 1);
        assert_eq!(got.1[0].bytes, init);
        // The initiation came off the handshake socket; the kernel
        // dropped the junk and the daemon counted it without reading it.
        assert_eq!(intake.handshake_reads(), 1);
        let d = intake.drops();
        assert_eq!((d.kernel_handshake, d.malformed, d.kernel_rxq), (2, 0, 0));
    }

    #[tokio::test]
    async fn a_full_handshake_queue_leaves_the_handshake_socket_to_the_kernel() {
        let make = |d| socket2::Socket::new(d, socket2::Type::DGRAM, None);
        let socks =
            super::super::steer::ServerSockets::bind("127.0.0.1:0".parse().unwrap(), make).unwrap();
        let addr = socks.data.local_addr().unwrap();
        let hs = socks.handshake.map(Arc::new);
        assert!(hs.is_some(), "the kernel took the pair");
        let clock = Clock::new();
        let mut intake = Intake::spawn(Arc::new(socks.data), hs, clock, test_errors());
        // Many sources, each within its admission limit, and a main loop
        // that takes nothing off the queue.
        let sources: Vec<std::net::UdpSocket> = (0..50)
            .map(|i| std::net::UdpSocket::bind(format!("127.0.3.{}:0", i + 1)).unwrap())
            .collect();
        let mut init = vec![0u8; INIT_MIN_LEN];
        init[0] = TYPE_HANDSHAKE_INIT;
        let fill = HANDSHAKE_QUEUE - HANDSHAKE_QUEUE_KEEP;
        for _ in 0..100 {
            if intake.handshake_reads() as usize > fill - HANDSHAKE_RESUME {
                break;
            }
            for s in &sources {
                s.send_to(&init, addr).unwrap();
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        // The reader stopped short of the places kept for the data
        // socket, having read only what it could queue.
        let read = intake.handshake_reads();
        assert!(
            (fill - HANDSHAKE_RESUME + 1..=fill).contains(&(read as usize)),
            "{read} read"
        );
        assert_eq!(intake.handshakes.len() as u64, read);
        assert_eq!(intake.drops().handshake_queue, 0);
        // More initiations stay in the kernel, unread; data is still read,
        // and a retry with a MAC2 (steered to the data socket) finds its
        // place in the queue.
        for s in &sources {
            s.send_to(&init, addr).unwrap();
        }
        let data = [0x10u8; 40];
        sources[0].send_to(&data, addr).unwrap();
        let mut stamped = init.clone();
        *stamped.last_mut().unwrap() = 1;
        sources[1].send_to(&stamped, addr).unwrap();
        let mut got = Vec::new();
        for _ in 0..100 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            got.extend(drain(&mut intake.data));
            if !got.is_empty() && intake.handshakes.len() as u64 > read {
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].bytes, data);
        assert_eq!(
            intake.handshake_reads(),
            read,
            "the full queue stopped the reads"
        );
        assert_eq!(intake.handshakes.len() as u64, read + 1);
        assert_eq!(intake.drops().handshake_queue, 0);
        // Once the main loop makes room, the reader takes what waited.
        let queued = drain(&mut intake.handshakes);
        assert!(queued.iter().any(|d| d.bytes == stamped));
        for _ in 0..100 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            if intake.handshake_reads() > read {
                break;
            }
        }
        assert!(intake.handshake_reads() > read);
    }

    #[tokio::test]
    async fn malformed_datagrams_stop_at_the_reader_and_are_counted() {
        let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let addr = sock.local_addr().unwrap();
        let clock = Clock::new();
        let mut intake = Intake::spawn(sock, None, clock, test_errors());
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // Unknown type bytes, a response and a cookie reply (never sent to
        // a server), and a transport packet too short for its header.
        let junk: [&[u8]; 4] = [&[0x55; 100], &[0x12; 92], &[0x13; 64], &[0x10; 8]];
        for j in junk {
            tx.send_to(j, addr).unwrap();
        }
        let good = [0x10u8; 40];
        tx.send_to(&good, addr).unwrap();
        let mut data = Vec::new();
        for _ in 0..100 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            data.extend(drain(&mut intake.data));
            if !data.is_empty() {
                break;
            }
        }
        // Only the well-formed one was queued (datagrams are read in order).
        assert_eq!(data.len(), 1);
        assert_eq!(data[0].bytes, good);
        let d = intake.drops();
        assert_eq!(d.malformed, 4);
        assert_eq!(d.malformed_bytes, 100 + 92 + 64 + 8);
        // The core counts them as it would have.
        use braid_core::conn::{Ipv4Net, ServerConfig};
        use braid_core::crypto::PrivateKey;
        use rand_chacha::rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let cfg = ServerConfig::new(Ipv4Net::parse("10.77.0.0/24").unwrap(), vec![]);
        let mut server = Server::new(cfg, PrivateKey::generate(&mut rng), &mut rng).unwrap();
        server.set_intake_drops(d);
        let c = server.status(clock.now()).counters;
        assert_eq!((c.rx_datagrams, c.drop_malformed), (4, 4));
    }

    #[tokio::test]
    async fn stale_datagrams_are_dropped_and_counted() {
        use braid_core::conn::{Ipv4Net, ServerConfig};
        use braid_core::crypto::PrivateKey;
        use rand_chacha::rand_core::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let cfg = ServerConfig::new(Ipv4Net::parse("10.77.0.0/24").unwrap(), vec![]);
        let mut server = Server::new(cfg, PrivateKey::generate(&mut rng), &mut rng).unwrap();
        let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let clock = Clock::new();
        let mut intake = Intake::spawn(sock, None, clock, test_errors());
        let mut replies = ReplySources::default();
        let from: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let datagram = |at| Datagram {
            from,
            local: None,
            bytes: vec![0x10; 40],
            at,
        };
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        // Received at the clock's origin, 150 ms ago: past the bound.
        intake.serve_data(datagram(Instant::ZERO), &mut server, &mut replies);
        assert_eq!(intake.drops().stale, 1);
        assert_eq!(server.status(clock.now()).counters.rx_datagrams, 0);
        intake.serve_data(datagram(clock.now()), &mut server, &mut replies);
        assert_eq!(intake.drops().stale, 1);
        assert_eq!(server.status(clock.now()).counters.rx_datagrams, 1);
        // The same for initiations, with their longer bound.
        let mut init = datagram(Instant::ZERO);
        init.bytes[0] = TYPE_HANDSHAKE_INIT;
        intake.serve_handshakes(init, &mut server, &mut replies);
        assert_eq!(intake.drops().stale, 1, "150 ms is within 500 ms");
    }
}
