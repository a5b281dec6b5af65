//! The server's reading loop: data of established tunnels before
//! handshakes, every queue bounded in count and in time, and every drop
//! counted.
//!
//! One reader task takes datagrams off the server's UDP socket and sorts
//! them by their type byte:
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
//!   addresses.
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
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use braid_core::conn::ratelimit::RateLimiter;
use braid_core::conn::{Endpoint, IntakeDrops, Server};
use braid_core::crypto::packet::{peek_receiver_index, TYPE_HANDSHAKE_INIT, TYPE_TRANSPORT};
use braid_core::time::{Duration, Instant};
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

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
/// Initiations per second (and burst) one source address may put into the
/// handshake queue: twice the core's per-address limit on processed ones,
/// far above what a client sends (one per path every 5 s).
pub const ADMIT_PER_SECOND: u64 = 40;
pub const ADMIT_BURST: u64 = 10;
/// Source addresses the admission limit tracks at once.
pub const ADMIT_ENTRIES: usize = 4096;
/// Initiations per second (and burst) from all addresses not connected
/// together: a flood from ever new (spoofed) addresses passes every
/// per-address limit, and must not fill the main loop with work.
pub const ADMIT_ALL_PER_SECOND: u64 = 2000;
pub const ADMIT_ALL_BURST: u64 = 200;
/// How often the main loop refreshes the set of connected addresses.
const KNOWN_REFRESH: Duration = Duration::from_secs(1);
/// Largest datagram read.
const BUF: usize = 65_535;

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
    kernel_rxq: AtomicU64,
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
    /// `handshake_queue` drops seen at the last load check.
    dropped_seen: u64,
    clock: Clock,
}

impl Intake {
    /// Turns on kernel drop counting on `sock` and spawns its reader,
    /// which counts, logs and backs off from receive errors with `errors`.
    pub fn spawn(sock: Arc<UdpSocket>, clock: Clock, errors: RecvErrors) -> Intake {
        enable_rxq_ovfl(&sock);
        super::net::enable_rx_timestamps(&sock);
        let (data_tx, data) = mpsc::channel(DATA_QUEUE);
        let (hs_tx, handshakes) = mpsc::channel(HANDSHAKE_QUEUE);
        let counters = Arc::new(ReaderCounters::default());
        let known = Arc::new(Mutex::new(HashSet::new()));
        let reader = Reader {
            sock,
            clock,
            data_tx,
            hs_tx,
            counters: counters.clone(),
            known: known.clone(),
            admit: RateLimiter::new(ADMIT_PER_SECOND, ADMIT_BURST, ADMIT_ENTRIES),
            admit_all: RateLimiter::new(ADMIT_ALL_PER_SECOND, ADMIT_ALL_BURST, 1),
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
            dropped_seen: 0,
            clock,
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
    /// initiations since the last check.
    pub fn under_load(&mut self, now: Instant) -> bool {
        let dropped = self.counters.handshake_queue.load(Ordering::Relaxed);
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
            malformed: self.counters.malformed.load(Ordering::Relaxed),
            malformed_bytes: self.counters.malformed_bytes.load(Ordering::Relaxed),
        }
    }

    /// Updates the addresses whose initiations skip the admission limit,
    /// at most every [`KNOWN_REFRESH`].
    fn refresh_known(&mut self, server: &Server, now: Instant) {
        if self
            .known_at
            .is_some_and(|t| now.saturating_since(t) < KNOWN_REFRESH)
        {
            return;
        }
        self.known_at = Some(now);
        let set: HashSet<IpAddr> = server.peer_addresses().map(|a| a.ip()).collect();
        if let Ok(mut k) = self.known.lock() {
            *k = set;
        }
    }
}

/// The reader task.
struct Reader {
    sock: Arc<UdpSocket>,
    clock: Clock,
    data_tx: mpsc::Sender<Datagram>,
    hs_tx: mpsc::Sender<Datagram>,
    counters: Arc<ReaderCounters>,
    known: Arc<Mutex<HashSet<IpAddr>>>,
    admit: RateLimiter,
    /// One bucket for all addresses together (keyed by a fixed address).
    admit_all: RateLimiter,
    /// The socket's last `SO_RXQ_OVFL` value (a wrapping u32).
    kernel_last: Option<u32>,
    /// Receive errors: counted, logged and backed off from.
    errors: RecvErrors,
}

impl Reader {
    async fn run(mut self) {
        let mut batch = Batch::new(RECV_BATCH);
        let mut metas = Vec::with_capacity(RECV_BATCH);
        loop {
            if let Err(e) = recv_batch(&self.sock, &mut batch, &mut metas).await {
                self.errors.failed(&e).await;
                continue;
            }
            self.errors.succeeded();
            for meta in &metas {
                if let Some(total) = meta.kernel_drops {
                    self.count_kernel(total);
                }
                if !self.sort(meta, &batch.bufs[meta.slot][..meta.len]).await {
                    return;
                }
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
            if !self.admit(meta.from.ip(), at) {
                self.counters
                    .handshake_queue
                    .fetch_add(1, Ordering::Relaxed);
                return true;
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

    /// Connected clients' addresses always; others within their own rate
    /// and the rate of all of them together.
    fn admit(&mut self, ip: IpAddr, now: Instant) -> bool {
        let known = self.known.lock().map(|k| k.contains(&ip)).unwrap_or(false);
        known
            || (self.admit.allow(ip, now)
                && self
                    .admit_all
                    .allow(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), now))
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

/// What [`recv_batch`] learns about one datagram.
struct Meta {
    /// Which buffer of the batch holds it.
    slot: usize,
    len: usize,
    from: SocketAddr,
    /// How long ago the kernel received it (zero without a timestamp).
    age: std::time::Duration,
    /// The local address it was sent to (IP_PKTINFO).
    local: Option<LocalAddr>,
    /// The socket's running total of datagrams the kernel dropped for want
    /// of buffer space (`SO_RXQ_OVFL`), if the kernel said.
    kernel_drops: Option<u32>,
}

/// Asks the kernel to report, with every datagram, how many it dropped on
/// this socket because the receive buffer was full (`SO_RXQ_OVFL`).
/// Best effort.
pub fn enable_rxq_ovfl(sock: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: plain setsockopt on an open socket with a c_int option value.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RXQ_OVFL,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Datagrams read with one `recvmmsg` call: under a flood the system call,
/// not the work per datagram, is most of what reading costs. 64 (was 16)
/// takes a quarter of the calls; the buffers are 64 x 64 KiB, allocated
/// once.
const RECV_BATCH: usize = 64;

/// Buffers for one `recvmmsg` call.
struct Batch {
    bufs: Vec<Vec<u8>>,
    addrs: Vec<libc::sockaddr_storage>,
    cmsgs: Vec<[u64; 16]>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: the raw pointers in `iovs` and `hdrs` point into the batch's own
// buffers and are rewritten before every use; nothing else shares them.
unsafe impl Send for Batch {}

impl Batch {
    fn new(n: usize) -> Batch {
        Batch {
            bufs: (0..n).map(|_| vec![0u8; BUF]).collect(),
            // SAFETY: an all-zero sockaddr_storage is valid.
            addrs: (0..n).map(|_| unsafe { std::mem::zeroed() }).collect(),
            cmsgs: vec![[0u64; 16]; n],
            iovs: (0..n)
                .map(|_| libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                })
                .collect(),
            // SAFETY: an all-zero mmsghdr is valid (null pointers, zero lengths).
            hdrs: (0..n).map(|_| unsafe { std::mem::zeroed() }).collect(),
        }
    }
}

/// Reads up to [`RECV_BATCH`] datagrams into `b` with one `recvmmsg`,
/// each with its kernel timestamp (as [`super::net::recv_from_stamped`])
/// and the socket's `SO_RXQ_OVFL` count; `out` describes them.
async fn recv_batch(sock: &UdpSocket, b: &mut Batch, out: &mut Vec<Meta>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = sock.as_raw_fd();
    // A `move` closure captures the references whole, not the fields of
    // the batch one by one (which hold raw pointers and are not `Send`).
    sock.async_io(tokio::io::Interest::READABLE, move || {
        let b = &mut *b;
        let out = &mut *out;
        let n = b.bufs.len();
        for i in 0..n {
            b.iovs[i] = libc::iovec {
                iov_base: b.bufs[i].as_mut_ptr() as *mut libc::c_void,
                iov_len: b.bufs[i].len(),
            };
            // The pointers refer to the batch's buffers, alive for the call.
            let h = super::net::recv_header(&mut b.addrs[i], &mut b.iovs[i], &mut b.cmsgs[i]);
            b.hdrs[i] = libc::mmsghdr {
                msg_hdr: h,
                msg_len: 0,
            };
        }
        // SAFETY: `hdrs` holds `n` headers whose buffers live in `b`.
        let r = unsafe {
            libc::recvmmsg(
                fd,
                b.hdrs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        out.clear();
        for i in 0..r as usize {
            let msg = &b.hdrs[i].msg_hdr;
            let mut stamp = None;
            let mut kernel_drops = None;
            let mut local = None;
            // SAFETY: the CMSG macros walk the control buffer recvmmsg
            // filled in for this message.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(msg);
                while !c.is_null() {
                    if let Some(l) = super::reply::pktinfo_of(&*c) {
                        local = Some(l);
                    }
                    if (*c).cmsg_level == libc::SOL_SOCKET {
                        if (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                            stamp = Some(std::ptr::read_unaligned(
                                libc::CMSG_DATA(c) as *const libc::timespec
                            ));
                        } else if (*c).cmsg_type == libc::SO_RXQ_OVFL {
                            kernel_drops =
                                Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const u32));
                        }
                    }
                    c = libc::CMSG_NXTHDR(msg, c);
                }
            }
            let Some(from) = super::net::sockaddr_to_std(&b.addrs[i]) else {
                continue;
            };
            out.push(Meta {
                slot: i,
                len: b.hdrs[i].msg_len as usize,
                from,
                age: stamp.map_or(std::time::Duration::ZERO, super::net::age_of),
                local,
                kernel_drops,
            });
        }
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut intake = Intake::spawn(sock, clock, test_errors());
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
    async fn malformed_datagrams_stop_at_the_reader_and_are_counted() {
        let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let addr = sock.local_addr().unwrap();
        let clock = Clock::new();
        let mut intake = Intake::spawn(sock, clock, test_errors());
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
        let mut intake = Intake::spawn(sock, clock, test_errors());
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
