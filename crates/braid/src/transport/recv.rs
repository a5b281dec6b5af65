//! The receiving side: a socket that admits allowed senders' handshakes,
//! the sans-IO receiver of the transfer's mode (MPLOT or R-MTP, taken from
//! its first frame, [`RecvEngine`]) for one transfer at a time, a temporary
//! file renamed only once the sender's SHA-256 matches.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

use braid_core::crypto::{PacketType, PrivateKey, PublicKey, Responder, Session};
use braid_core::mplot::wire;
use sha2::{Digest, Sha256};
use socket2::{Domain, Protocol, Socket, Type};

use super::engine::{RecvEngine, FRAME_BUF};
use super::{hex, local, Clock, Kind, Offer, TransferError};

/// How to receive.
#[derive(Clone, Debug)]
pub struct ReceiveOptions {
    pub listen: SocketAddr,
    /// Where files land.
    pub out: PathBuf,
    /// This receiver's private key.
    pub key: PrivateKey,
    /// Senders allowed to send (their public keys).
    pub allow: Vec<PublicKey>,
    /// Give up when an admitted sender is silent this long.
    pub idle_timeout: Duration,
    /// Progress lines on stderr.
    pub progress: bool,
}

impl ReceiveOptions {
    pub fn new(listen: SocketAddr, out: PathBuf, key: PrivateKey, allow: Vec<PublicKey>) -> Self {
        ReceiveOptions {
            listen,
            out,
            key,
            allow,
            idle_timeout: Duration::from_secs(30),
            progress: false,
        }
    }
}

/// A file received and verified.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: PathBuf,
    pub bytes: u64,
    pub sha256: [u8; 32],
    pub elapsed: Duration,
    pub from: PublicKey,
}

/// A bound receiver; [`Listener::accept`] takes one file.
pub struct Listener {
    sock: UdpSocket,
    o: ReceiveOptions,
    responder: Responder,
    /// The latest refused handshake, for the error when nothing arrives.
    last_refusal: Option<String>,
}

/// One transfer in progress.
struct Transfer {
    session: Session,
    client: PublicKey,
    offer: Offer,
    /// Made by the first data frame, whose kind says the mode.
    rx: Option<RecvEngine>,
    tmp: PathBuf,
    dest: PathBuf,
    file: BufWriter<File>,
    hasher: Sha256,
    /// Source address of each forward path, learnt from its DATA.
    path_addr: Vec<Option<SocketAddr>>,
    first: SocketAddr,
    started: std::time::Instant,
}

impl Listener {
    pub fn bind(o: ReceiveOptions) -> Result<Listener, TransferError> {
        if o.allow.is_empty() {
            return Err(TransferError::Local(
                "no sender allowed: give each sender's public key with --allow".into(),
            ));
        }
        if !o.out.is_dir() {
            return Err(TransferError::Local(format!(
                "{} is not a directory; create it or give another --out",
                o.out.display()
            )));
        }
        let s = Socket::new(
            Domain::for_address(o.listen),
            Type::DGRAM,
            Some(Protocol::UDP),
        )
        .map_err(|e| local("cannot create a UDP socket", e))?;
        let _ = s.set_recv_buffer_size(super::SOCKET_BUFFER_BYTES);
        let _ = s.set_send_buffer_size(super::SOCKET_BUFFER_BYTES);
        // Each datagram's ECN field, for MPLOT's CE echo; without it the
        // transfer still works, with congestion seen only as loss.
        if let Err(e) = super::ecn::receive_tos(&s, o.listen.is_ipv6()) {
            tracing::debug!("cannot read ECN marks on {}: {e}", o.listen);
        }
        s.bind(&o.listen.into())
            .map_err(|e| local(format!("cannot listen on {}", o.listen), e))?;
        s.set_nonblocking(true)
            .map_err(|e| local("cannot make the socket non-blocking", e))?;
        Ok(Listener {
            sock: s.into(),
            responder: Responder::new(o.key.clone()),
            o,
            last_refusal: None,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.sock.local_addr().expect("bound socket")
    }

    /// Receives one file; `wait` bounds the time until a sender is admitted
    /// (`None`: wait for ever).
    pub fn accept(&mut self, wait: Option<Duration>) -> Result<Received, TransferError> {
        let clock = Clock::new();
        let mut rng =
            crate::daemon::os_rng().map_err(|e| TransferError::Local(format!("{e:#}")))?;
        let mut buf = vec![0u8; 65536];
        let mut plain = Vec::with_capacity(2048);
        let mut frame = vec![0u8; FRAME_BUF];
        let mut t: Option<Transfer> = None;
        let mut last_heard = std::time::Instant::now();
        let mut next_report = std::time::Instant::now() + Duration::from_secs(1);
        let mut last_delivered = 0u64;
        let mut done: Option<(Received, std::time::Instant)> = None;
        let started = std::time::Instant::now();
        loop {
            let mut busy = false;
            while let Ok((n, from, ecn)) = super::ecn::recv_from(&self.sock, &mut buf) {
                busy = true;
                let msg = &buf[..n];
                let now = clock.now();
                match PacketType::of(msg) {
                    Some(PacketType::HandshakeInit) if done.is_none() => {
                        if let Some(nt) = self.admit(msg, from, &mut rng, &clock) {
                            if let Some(old) = t.replace(nt) {
                                let _ = std::fs::remove_file(&old.tmp);
                            }
                            last_heard = std::time::Instant::now();
                        }
                    }
                    Some(PacketType::Transport) => {
                        let Some(tr) = t.as_mut() else { continue };
                        plain.clear();
                        if tr.session.decrypt(msg, &mut plain, now).is_err() {
                            continue;
                        }
                        last_heard = std::time::Instant::now();
                        match Kind::of(&plain) {
                            Some((k @ (Kind::Mplot | Kind::Rmtp), b)) => {
                                // The first frame decides the transfer's mode.
                                if tr.rx.is_none() {
                                    let seed = rand_chacha::rand_core::RngCore::next_u64(&mut rng);
                                    tr.rx =
                                        RecvEngine::for_kind(k, usize::from(tr.offer.paths), seed);
                                    if self.o.progress {
                                        if let Some(rx) = &tr.rx {
                                            eprintln!("braid recv: transport {}", rx.mode().name());
                                        }
                                    }
                                }
                                let Some(rx) = tr.rx.as_mut() else { continue };
                                if rx.mode().kind() != k {
                                    continue;
                                }
                                let ce = ecn == Some(super::ecn::CE);
                                let Some(p) = rx.handle_data(now, ce, b) else {
                                    continue;
                                };
                                if let Some(a) = tr.path_addr.get_mut(p) {
                                    *a = Some(from);
                                }
                                while let Some(data) = rx.poll_read() {
                                    tr.hasher.update(&data);
                                    if let Err(e) = tr.file.write_all(&data) {
                                        let why = format!("cannot write {}: {e}", tr.tmp.display());
                                        return Err(self.abort(
                                            t.take().expect("transfer"),
                                            &why,
                                            &clock,
                                        ));
                                    }
                                }
                                // ACKs after the application read: an R-MTP ACK
                                // reports the receiver queue's room as it is when
                                // sent, and reading first frees it (a report of a
                                // full queue stops the sender and halves its rates).
                                while let Some((path, n)) = rx.poll_ack(&mut frame) {
                                    let to =
                                        tr.path_addr.get(path).copied().flatten().unwrap_or(from);
                                    send(&mut tr.session, &self.sock, to, &frame[..n], &clock);
                                }
                                if rx.delivered() > tr.offer.size {
                                    let why = "the sender sent more bytes than it announced";
                                    return Err(self.abort(
                                        t.take().expect("transfer"),
                                        why,
                                        &clock,
                                    ));
                                }
                            }
                            Some((Kind::Fin, b)) => {
                                if let Some((r, _)) = &done {
                                    let mut m = vec![Kind::Done as u8, 1];
                                    m.extend_from_slice(hex(&r.sha256).as_bytes());
                                    send(&mut tr.session, &self.sock, from, &m, &clock);
                                    continue;
                                }
                                let complete = tr.rx.as_ref().is_some_and(RecvEngine::is_complete);
                                let delivered = tr.rx.as_ref().map_or(0, RecvEngine::delivered);
                                if !complete || b.len() != 40 {
                                    continue;
                                }
                                let size = u64::from_be_bytes(b[..8].try_into().expect("8"));
                                let tr = t.as_mut().expect("transfer");
                                let got: [u8; 32] = tr.hasher.clone().finalize().into();
                                if size != delivered || got[..] != b[8..] {
                                    let why = format!(
                                        "received {} bytes with SHA-256 {}, the sender sent {size} with {}; discarded",
                                        delivered,
                                        hex(&got),
                                        hex(&b[8..])
                                    );
                                    let mut m = vec![Kind::Done as u8, 0];
                                    m.extend_from_slice(why.as_bytes());
                                    send(&mut tr.session, &self.sock, from, &m, &clock);
                                    let _ = std::fs::remove_file(&tr.tmp);
                                    return Err(TransferError::Verify(why));
                                }
                                let fin =
                                    tr.file.flush().and_then(|_| tr.file.get_ref().sync_all());
                                let fin = fin.and_then(|_| std::fs::rename(&tr.tmp, &tr.dest));
                                if let Err(e) = fin {
                                    let why = format!("cannot store {}: {e}", tr.dest.display());
                                    return Err(self.abort(
                                        t.take().expect("transfer"),
                                        &why,
                                        &clock,
                                    ));
                                }
                                let mut m = vec![Kind::Done as u8, 1];
                                m.extend_from_slice(hex(&got).as_bytes());
                                send(&mut tr.session, &self.sock, from, &m, &clock);
                                if self.o.progress {
                                    eprintln!();
                                }
                                done = Some((
                                    Received {
                                        path: tr.dest.clone(),
                                        bytes: size,
                                        sha256: got,
                                        elapsed: tr.started.elapsed(),
                                        from: tr.client,
                                    },
                                    std::time::Instant::now(),
                                ));
                            }
                            Some((Kind::Abort, b)) => {
                                let tr = t.take().expect("transfer");
                                let _ = std::fs::remove_file(&tr.tmp);
                                return Err(TransferError::Aborted {
                                    side: "sender",
                                    reason: String::from_utf8_lossy(b).to_string(),
                                });
                            }
                            _ => {}
                        }
                    }
                    _ => {}
                }
            }
            // After the verdict, answer repeated FINs (a lost DONE) briefly.
            if let Some((_, at)) = &done {
                if at.elapsed() >= Duration::from_millis(600) {
                    return Ok(done.take().expect("done").0);
                }
            }
            if let Some(tr) = &t {
                if done.is_none() && last_heard.elapsed() >= self.o.idle_timeout {
                    let idle = self.o.idle_timeout;
                    let tr = t.take().expect("transfer");
                    let _ = std::fs::remove_file(&tr.tmp);
                    return Err(TransferError::Silent {
                        side: "sender",
                        idle,
                    });
                }
                if self.o.progress && std::time::Instant::now() >= next_report {
                    let d = tr.rx.as_ref().map_or(0, RecvEngine::delivered);
                    eprint!(
                        "\r{} from {}: {:.1} / {:.1} MB, {:.1} Mb/s   ",
                        tr.offer.name,
                        tr.first,
                        d as f64 / 1e6,
                        tr.offer.size as f64 / 1e6,
                        d.saturating_sub(last_delivered) as f64 * 8e-6
                    );
                    last_delivered = d;
                    next_report += Duration::from_secs(1);
                }
            } else if wait.is_some_and(|w| started.elapsed() >= w) {
                let mut m = format!(
                    "no sender was admitted within {} s",
                    wait.unwrap_or_default().as_secs_f64()
                );
                if let Some(r) = &self.last_refusal {
                    m += &format!(" (last refused: {r})");
                }
                return Err(TransferError::Local(m));
            }
            if !busy {
                // Until the next datagram (the timeout only paces the
                // idle and progress checks above).
                super::wait_readable(std::slice::from_ref(&self.sock), Duration::from_millis(20));
            }
        }
    }

    /// Checks a handshake and the offer in it; replies; `Some` if the
    /// transfer starts.
    fn admit(
        &mut self,
        msg: &[u8],
        from: SocketAddr,
        rng: &mut rand_chacha::ChaCha20Rng,
        clock: &Clock,
    ) -> Option<Transfer> {
        let allow = &self.o.allow;
        let pending = match self
            .responder
            .read_init(msg, |k| allow.contains(k), rng, clock.now())
        {
            Ok(p) => p,
            Err(e) => {
                let why = format!("handshake from {from}: {e}");
                if self.o.progress {
                    eprintln!("braid recv: refused {why} (is the sender's public key given with --allow, and does it use this receiver's public key?)");
                }
                self.last_refusal = Some(why);
                return None;
            }
        };
        let client = *pending.client();
        let refuse = |p: braid_core::crypto::PendingInit, why: String| {
            let mut r = vec![1u8];
            r.extend_from_slice(why.as_bytes());
            if let Ok(a) = p.accept(&r[..r.len().min(400)], clock.now()) {
                let _ = self.sock.send_to(&a.response, from);
            }
            why
        };
        let offer = match Offer::decode(pending.payload()) {
            Ok(o) => o,
            Err(e) => {
                self.last_refusal = Some(refuse(pending, e));
                return None;
            }
        };
        let name_ok = std::path::Path::new(&offer.name)
            .file_name()
            .and_then(|n| n.to_str())
            == Some(offer.name.as_str())
            && !offer.name.starts_with('.');
        let dest = self.o.out.join(&offer.name);
        let why = if !name_ok {
            Some(format!(
                "file name {:?} is not a plain file name",
                offer.name
            ))
        } else if offer.paths == 0 || usize::from(offer.paths) > wire::MAX_PATHS {
            Some(format!(
                "{} paths; 1 to {} are supported",
                offer.paths,
                wire::MAX_PATHS
            ))
        } else if dest.exists() {
            Some(format!(
                "{} already exists on the receiver; remove it or rename the file",
                dest.display()
            ))
        } else {
            match free_bytes(&self.o.out) {
                Some(free) if free < offer.size => Some(format!(
                    "not enough space in {}: the file has {} bytes, {} are free",
                    self.o.out.display(),
                    offer.size,
                    free
                )),
                _ => None,
            }
        };
        if let Some(why) = why {
            self.last_refusal = Some(refuse(pending, why));
            return None;
        }
        let tmp = self.o.out.join(format!(
            ".{}.braid-part-{:08x}",
            offer.name,
            pending.local_index()
        ));
        let file = match File::create(&tmp) {
            Ok(f) => f,
            Err(e) => {
                let why = format!("cannot create {}: {e}", tmp.display());
                self.last_refusal = Some(refuse(pending, why));
                return None;
            }
        };
        let accepted = pending.accept(&[0], clock.now()).ok()?;
        let _ = self.sock.send_to(&accepted.response, from);
        if self.o.progress {
            eprintln!(
                "braid recv: {} ({} bytes, {} paths) from {from}, key {}",
                offer.name,
                offer.size,
                offer.paths,
                client.to_base64()
            );
        }
        let n = usize::from(offer.paths);
        Some(Transfer {
            session: accepted.session,
            client,
            rx: None,
            offer,
            tmp,
            dest,
            file: BufWriter::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
            path_addr: vec![None; n],
            first: from,
            started: std::time::Instant::now(),
        })
    }

    /// Ends a transfer on a local failure: tells the sender, removes the
    /// temporary file.
    fn abort(&self, mut tr: Transfer, why: &str, clock: &Clock) -> TransferError {
        let mut m = vec![Kind::Abort as u8];
        m.extend_from_slice(why.as_bytes());
        for a in tr.path_addr.clone().into_iter().flatten().chain([tr.first]) {
            send(&mut tr.session, &self.sock, a, &m, clock);
        }
        let _ = std::fs::remove_file(&tr.tmp);
        TransferError::Local(why.to_string())
    }
}

fn send(s: &mut Session, sock: &UdpSocket, to: SocketAddr, plain: &[u8], clock: &Clock) {
    let mut pkt = Vec::with_capacity(plain.len() + 32);
    if s.encrypt(plain, &mut pkt, clock.now()).is_ok() {
        let _ = sock.send_to(&pkt, to);
    }
}

/// Bytes free for an unprivileged writer in `dir` (statvfs), if known.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data; all zeroes is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a writable out-struct.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // The field types differ between targets (u32 on some 32-bit ones), so
    // the casts are needed even where they are u64 already.
    #[allow(clippy::unnecessary_cast)]
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}
