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
//! a read spent only to discard it. While it is not to be read, the
//! socket is not watched by the runtime either
//! ([`super::recvbatch::Watched`]): every datagram arriving on a watched
//! socket wakes the runtime's thread. Between reads the kernel drops what
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
#[cfg(test)]
use braid_core::crypto::packet::TYPE_HANDSHAKE_INIT;
use braid_core::time::{Duration, Instant};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

#[cfg(test)]
use super::admit::has_mac2;
use super::admit::Admission;
pub use super::admit::{
    ADMIT_ALL_BURST, ADMIT_ALL_PER_SECOND, ADMIT_BURST, ADMIT_COOKIE_PER_SECOND, ADMIT_MAC2_BURST,
    ADMIT_MAC2_PER_SECOND, ADMIT_PER_SECOND,
};
use super::recvbatch::enable_rxq_ovfl;
use super::reply::{LocalAddr, ReplySources};
use super::{Clock, RecvErrors};

mod reader;
use reader::Reader;

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
    hs_sock: Option<(Arc<std::net::UdpSocket>, u32)>,
    /// The connected addresses the steering program lists now.
    steered: Vec<IpAddr>,
    steer_log: super::RateLimitedLog,
}

impl Intake {
    /// Turns on kernel drop counting on `sock` and spawns the reader of
    /// it and of the handshake socket `hs` (see [`super::steer`]), which
    /// counts, logs and backs off from receive errors with `errors`.
    ///
    /// The handshake socket leaves the runtime's reactor here: the reader
    /// registers it only while it means to read it (see
    /// [`super::recvbatch::Watched`]). Fails only if the reactor cannot
    /// let go of it.
    pub fn spawn(
        sock: Arc<UdpSocket>,
        hs: Option<UdpSocket>,
        clock: Clock,
        errors: RecvErrors,
    ) -> std::io::Result<Intake> {
        enable_rxq_ovfl(&sock);
        super::net::enable_rx_timestamps(&sock);
        let hs = match hs {
            Some(h) => {
                super::net::enable_rx_timestamps(&h);
                Some(Arc::new(h.into_std()?))
            }
            None => None,
        };
        let (data_tx, data) = mpsc::channel(DATA_QUEUE);
        let (hs_tx, handshakes) = mpsc::channel(HANDSHAKE_QUEUE);
        let counters = Arc::new(ReaderCounters::default());
        let known = Arc::new(Mutex::new(HashSet::new()));
        let reader = Reader {
            sock: sock.clone(),
            hs: hs.clone(),
            hs_tokens: HANDSHAKE_RECV_BATCH as f64,
            hs_resting: false,
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
        Ok(Intake {
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
        })
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

#[cfg(test)]
mod tests;
