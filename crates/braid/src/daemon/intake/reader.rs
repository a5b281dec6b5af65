//! The server's reader task: takes datagrams off the data socket and,
//! within its read budget and while the handshake queue has room, off
//! the handshake socket; drops the malformed, admits initiations (see
//! [`crate::daemon::admit`]) and queues the rest for the main loop
//! ([`super::Intake`]). Why it reads as it does is in [`super`].

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use braid_core::crypto::packet::{peek_receiver_index, TYPE_HANDSHAKE_INIT, TYPE_TRANSPORT};
use braid_core::time::Instant;
use tokio::io::unix::AsyncFd;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use super::{
    Datagram, ReaderCounters, DATA_TURNS, HANDSHAKE_BUF, HANDSHAKE_QUEUE_KEEP, HANDSHAKE_READS,
    HANDSHAKE_READS_SPREAD, HANDSHAKE_RECV_BATCH, HANDSHAKE_RESUME,
};
use crate::daemon::admit::{has_mac2, Admission, Admit};
use crate::daemon::recvbatch::{recv_batch, recv_from, Batch, Meta, Watched, RECV_BATCH};
use crate::daemon::{Clock, RecvErrors};

/// The reader task.
pub(super) struct Reader {
    pub(super) sock: Arc<UdpSocket>,
    /// The handshake socket, read within [`HANDSHAKE_READS`].
    pub(super) hs: Option<Arc<std::net::UdpSocket>>,
    /// Reads of the handshake socket the budget allows now (a token
    /// bucket of [`HANDSHAKE_RECV_BATCH`] at most), when it was last
    /// refilled, and at what rate it refills.
    pub(super) hs_tokens: f64,
    /// Whether the budget ran out, after which the socket rests until it
    /// has refilled for a whole batch: under a flood the reader then
    /// reads [`HANDSHAKE_RECV_BATCH`] at a time, a few hundred wake-ups
    /// and system calls a second, instead of one per datagram the budget
    /// allows.
    pub(super) hs_resting: bool,
    pub(super) hs_refilled: std::time::Instant,
    pub(super) hs_rate: u64,
    pub(super) clock: Clock,
    pub(super) data_tx: mpsc::Sender<Datagram>,
    pub(super) hs_tx: mpsc::Sender<Datagram>,
    pub(super) counters: Arc<ReaderCounters>,
    pub(super) known: Arc<Mutex<HashSet<IpAddr>>>,
    /// The admission limits on initiations.
    pub(super) admission: Admission,
    /// The socket's last `SO_RXQ_OVFL` value (a wrapping u32).
    pub(super) kernel_last: Option<u32>,
    /// Receive errors: counted, logged and backed off from.
    pub(super) errors: RecvErrors,
}

impl Reader {
    pub(super) async fn run(mut self) {
        let mut batch = Batch::new(RECV_BATCH);
        let mut metas = Vec::with_capacity(RECV_BATCH);
        let mut hs_batch = Batch::with_buffers(HANDSHAKE_RECV_BATCH, HANDSHAKE_BUF);
        let mut hs_metas = Vec::with_capacity(HANDSHAKE_RECV_BATCH);
        let (sock, hs) = (self.sock.clone(), self.hs.clone());
        let hs_fd = hs.clone().map(Watched);
        // The handshake socket, registered with the reactor while open.
        let mut watched: Option<AsyncFd<Watched>> = None;
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
            let need = if self.hs_resting {
                HANDSHAKE_RECV_BATCH as f64
            } else {
                1.0
            };
            if self.hs_tokens >= need {
                self.hs_resting = false;
            }
            let hs_open = hs.is_some() && self.hs_tokens >= need && has_room;
            hs_batch.limit = (self.hs_tokens as usize).min(room);
            // Closed, it is not watched either: datagrams arriving on it
            // then wake nobody (see `Watched`).
            match (hs_open, &hs_fd, watched.is_some()) {
                (true, Some(fd), false) => match fd.watch() {
                    Ok(w) => watched = Some(w),
                    Err(e) => {
                        self.errors.failed(&e).await;
                        continue;
                    }
                },
                (false, _, true) => watched = None,
                _ => {}
            }
            let hs_sock = if hs_open { watched.as_ref() } else { None };
            let wake = tokio::time::Instant::from_std(
                now + std::time::Duration::from_secs_f64(
                    (need - self.hs_tokens).max(0.0) / self.hs_rate as f64,
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
                self.hs_resting = self.hs_tokens < 1.0;
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
