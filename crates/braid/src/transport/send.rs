//! The sending side: handshake, then the sans-IO sender of the chosen mode
//! (MPLOT or R-MTP, [`SendEngine`]) driven over one UDP socket per path,
//! then FIN and the receiver's verdict.

use std::fs::File;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, SystemTime};

use braid_core::crypto::{
    peek_receiver_index, Initiator, PacketType, PrivateKey, PublicKey, Session,
};
use braid_core::mplot::wire;
use sha2::{Digest, Sha256};
use socket2::{Domain, Protocol, Socket, Type};

use super::engine::{Mode, SendEngine, FRAME_BUF};
use super::{local, tai64n_now, Clock, Kind, Offer, TransferError};

/// One path: the local address or the interface its socket is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Path {
    /// Bind to this source address (port chosen by the system).
    Addr(IpAddr),
    /// Bind to this interface (SO_BINDTODEVICE: root or CAP_NET_RAW).
    Device(String),
}

impl std::str::FromStr for Path {
    type Err = String;
    fn from_str(s: &str) -> Result<Path, String> {
        if s.is_empty() {
            return Err(
                "empty path: give a local address (192.168.1.5) or an interface (wlan0)".into(),
            );
        }
        Ok(match s.parse::<IpAddr>() {
            Ok(ip) => Path::Addr(ip),
            Err(_) => Path::Device(s.to_string()),
        })
    }
}

/// How to send.
#[derive(Clone, Debug)]
pub struct SendOptions {
    /// The receiver (`braid recv --listen`).
    pub to: SocketAddr,
    /// One socket per path, in order (1..=16).
    pub paths: Vec<Path>,
    /// Per path, another address of the receiver to send to instead of
    /// `to` (a multihomed receiver, one address per access network); the
    /// same length as `paths` or empty.
    pub path_to: Vec<Option<SocketAddr>>,
    /// This sender's private key.
    pub key: PrivateKey,
    /// The receiver's public key.
    pub peer_key: PublicKey,
    /// Give up when the handshake gets no reply for this long.
    pub handshake_timeout: Duration,
    /// Give up when the receiver is silent this long during the transfer.
    pub idle_timeout: Duration,
    /// Progress lines on stderr, once a second.
    pub progress: bool,
    /// The transport: MPLOT (default) or R-MTP.
    pub mode: Mode,
}

impl SendOptions {
    pub fn new(to: SocketAddr, paths: Vec<Path>, key: PrivateKey, peer_key: PublicKey) -> Self {
        SendOptions {
            to,
            paths,
            path_to: Vec::new(),
            key,
            peer_key,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            progress: false,
            mode: Mode::Mplot,
        }
    }
}

impl SendOptions {
    /// Where path `i` sends.
    pub fn dest(&self, i: usize) -> SocketAddr {
        self.path_to.get(i).copied().flatten().unwrap_or(self.to)
    }

    /// Whether a datagram from `a` is from the receiver.
    fn is_peer(&self, a: SocketAddr) -> bool {
        a == self.to || self.path_to.contains(&Some(a))
    }
}

/// What a completed send did.
#[derive(Clone, Debug)]
pub struct Sent {
    pub bytes: u64,
    pub sha256: [u8; 32],
    pub elapsed: Duration,
    /// Bytes put on each path (MPLOT packet sizes, FEC and resends
    /// included; R-MTP datagrams).
    pub path_bytes: Vec<u64>,
    /// Packets (frames) sent, deemed lost, and lost to timeouts.
    pub packets: u64,
    pub lost: u64,
    pub timeouts: u64,
}

fn bind(path: &Path, to: SocketAddr) -> Result<UdpSocket, TransferError> {
    let s = Socket::new(Domain::for_address(to), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| local("cannot create a UDP socket", e))?;
    let _ = s.set_recv_buffer_size(super::SOCKET_BUFFER_BYTES);
    let _ = s.set_send_buffer_size(super::SOCKET_BUFFER_BYTES);
    // ECT(0) on every datagram, so a marking queue on the path signals
    // congestion with CE rather than a drop (transport/ecn.rs).
    let _ = super::ecn::send_ect0(&s, to.is_ipv6());
    let any = match to {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let ip = match path {
        Path::Addr(ip) => {
            if ip.is_ipv4() != to.is_ipv4() {
                return Err(TransferError::Local(format!(
                    "path {ip}: the receiver {to} is of the other IP version; give a path address of the same family"
                )));
            }
            *ip
        }
        Path::Device(dev) => {
            s.bind_device(Some(dev.as_bytes())).map_err(|e| {
                local(
                    format!("path {dev}: cannot bind to interface `{dev}` (does it exist? binding to an interface needs root or CAP_NET_RAW; or give the interface's address instead)"),
                    e,
                )
            })?;
            any
        }
    };
    s.bind(&SocketAddr::new(ip, 0).into()).map_err(|e| {
        local(
            format!("path {ip}: cannot bind (is it an address of this host?)"),
            e,
        )
    })?;
    s.set_nonblocking(true)
        .map_err(|e| local("cannot make a socket non-blocking", e))?;
    Ok(s.into())
}

fn send_on(sock: &UdpSocket, to: SocketAddr, pkt: &[u8]) {
    // A full socket buffer or a path that is down loses the datagram; MPLOT
    // recovers it like any other loss.
    let _ = sock.send_to(pkt, to);
}

/// The file's identity at the start, checked again at the end.
fn stamp(f: &File) -> std::io::Result<(u64, Option<SystemTime>)> {
    let m = f.metadata()?;
    Ok((m.len(), m.modified().ok()))
}

/// Sends `file` to the receiver in `o`, returning once the receiver has
/// verified and stored it.
pub fn send_file(file: &std::path::Path, o: &SendOptions) -> Result<Sent, TransferError> {
    if !o.path_to.is_empty() && o.path_to.len() != o.paths.len() {
        return Err(TransferError::Local(format!(
            "{} per-path destinations for {} paths; give one per path or none",
            o.path_to.len(),
            o.paths.len()
        )));
    }
    if o.paths.is_empty() || o.paths.len() > wire::MAX_PATHS {
        return Err(TransferError::Local(format!(
            "{} paths given; give 1 to {} with --path",
            o.paths.len(),
            wire::MAX_PATHS
        )));
    }
    let mut f =
        File::open(file).map_err(|e| local(format!("cannot open {}", file.display()), e))?;
    let start_stamp = stamp(&f).map_err(|e| local(format!("cannot stat {}", file.display()), e))?;
    if !f.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(TransferError::Local(format!(
            "{} is not a regular file",
            file.display()
        )));
    }
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| {
            TransferError::Local(format!("{}: the file name must be UTF-8", file.display()))
        })?
        .to_string();
    if name.len() > super::MAX_NAME {
        return Err(TransferError::Local(format!(
            "file name of {} bytes; at most {} are carried, rename the file",
            name.len(),
            super::MAX_NAME
        )));
    }
    let socks = o
        .paths
        .iter()
        .enumerate()
        .map(|(i, p)| bind(p, o.dest(i)))
        .collect::<Result<Vec<_>, _>>()?;
    let clock = Clock::new();
    let mut rng = crate::daemon::os_rng().map_err(|e| TransferError::Local(format!("{e:#}")))?;
    let offer = Offer {
        paths: socks.len() as u8,
        size: start_stamp.0,
        name,
    };
    let mut session = handshake(o, &socks, &offer, &clock, &mut rng)?;

    let mut sender = SendEngine::new(o.mode, socks.len()).map_err(TransferError::Local)?;
    let proto = o.mode.name();
    let mut hasher = Sha256::new();
    let mut read = 0u64;
    let mut eof = false;
    let mut chunk = vec![0u8; 256 << 10];
    let mut frame = vec![0u8; FRAME_BUF];
    let mut pkt = Vec::with_capacity(2048);
    let mut plain = Vec::with_capacity(2048);
    let mut rbuf = vec![0u8; 65536];
    let mut path_bytes = vec![0u64; socks.len()];
    let mut last_path_bytes = path_bytes.clone();
    let mut last_heard = std::time::Instant::now();
    let mut next_report = std::time::Instant::now() + Duration::from_secs(1);
    let mut fin: Option<Vec<u8>> = None;
    let mut next_fin = std::time::Instant::now();
    let started = std::time::Instant::now();

    loop {
        let mut busy = false;
        // Keep a few MB queued in the sender; it copies what it is given.
        while !eof && sender.buffered() < 4 << 20 {
            let n = f
                .read(&mut chunk)
                .map_err(|e| local(format!("cannot read {}", file.display()), e))?;
            if n == 0 || read + n as u64 > offer.size {
                // A file that grew is caught by the end check; send only
                // the announced size.
                let keep = (offer.size - read).min(n as u64) as usize;
                hasher.update(&chunk[..keep]);
                sender.write(&chunk[..keep]).map_err(|e| local(proto, e))?;
                read += keep as u64;
                eof = true;
                sender.finish();
                break;
            }
            hasher.update(&chunk[..n]);
            sender.write(&chunk[..n]).map_err(|e| local(proto, e))?;
            read += n as u64;
        }
        // The clock read again after the file: reading and coding it
        // takes time, and a packet stamped before that would carry it
        // into its RTT sample.
        let now = clock.now();
        while let Some(t) = sender
            .poll_transmit(now, &mut frame)
            .map_err(TransferError::Local)?
        {
            pkt.clear();
            session
                .encrypt(&frame[..t.len], &mut pkt, now)
                .map_err(|e| local("encrypting", e))?;
            send_on(&socks[t.path], o.dest(t.path), &pkt);
            path_bytes[t.path] += t.size;
            busy = true;
        }
        // One datagram from each socket in turn: the ACKs of one path come
        // back on any path (the receiver draws), and draining one socket
        // before the next would reorder them, so that the sender deems
        // packets lost that arrived.
        let mut drained = vec![false; socks.len()];
        while drained.iter().any(|d| !d) {
            for (si, s) in socks.iter().enumerate() {
                if drained[si] {
                    continue;
                }
                let Ok((n, from)) = s.recv_from(&mut rbuf) else {
                    drained[si] = true;
                    continue;
                };
                busy = true;
                if !o.is_peer(from) || PacketType::of(&rbuf[..n]) != Some(PacketType::Transport) {
                    continue;
                }
                plain.clear();
                if session
                    .decrypt(&rbuf[..n], &mut plain, clock.now())
                    .is_err()
                {
                    continue;
                }
                last_heard = std::time::Instant::now();
                match Kind::of(&plain) {
                    Some((k @ (Kind::Mplot | Kind::Rmtp), b)) => {
                        sender.handle_frame(clock.now(), k, b);
                    }
                    Some((Kind::Done, b)) if fin.is_some() => {
                        let msg = String::from_utf8_lossy(b.get(1..).unwrap_or(&[])).to_string();
                        return if b.first() == Some(&1) {
                            if o.progress {
                                eprintln!();
                            }
                            let st = sender.stats();
                            Ok(Sent {
                                bytes: read,
                                sha256: hasher.clone().finalize().into(),
                                elapsed: started.elapsed(),
                                path_bytes,
                                packets: st.packets,
                                lost: st.lost,
                                timeouts: st.timeouts,
                            })
                        } else {
                            Err(TransferError::Verify(msg))
                        };
                    }
                    Some((Kind::Abort, b)) => {
                        return Err(TransferError::Aborted {
                            side: "receiver",
                            reason: String::from_utf8_lossy(b).to_string(),
                        })
                    }
                    _ => {}
                }
            }
        }
        sender.handle_timeout(clock.now());

        if sender.is_done() && fin.is_none() {
            // Every block is acknowledged: check the file did not change
            // under us, then ask for the verdict.
            let end = stamp(&f).map_err(|e| local(format!("cannot stat {}", file.display()), e))?;
            if end != start_stamp || read != offer.size {
                let why = format!("{} changed while it was sent", file.display());
                abort_all(&mut session, &socks, o, why.as_bytes(), &clock);
                return Err(TransferError::Changed(file.display().to_string()));
            }
            let mut m = read.to_be_bytes().to_vec();
            m.extend_from_slice(&hasher.clone().finalize());
            fin = Some(m);
        }
        if let Some(m) = &fin {
            if std::time::Instant::now() >= next_fin {
                for (i, s) in socks.iter().enumerate() {
                    control(&mut session, s, o.dest(i), Kind::Fin, m, &clock);
                }
                next_fin = std::time::Instant::now() + Duration::from_millis(200);
            }
        }
        if last_heard.elapsed() >= o.idle_timeout {
            abort_all(&mut session, &socks, o, b"sender timed out", &clock);
            return Err(TransferError::Silent {
                side: "receiver",
                idle: o.idle_timeout,
            });
        }
        if o.progress && std::time::Instant::now() >= next_report {
            let acked = read - sender.buffered();
            let rates: Vec<String> = path_bytes
                .iter()
                .zip(&last_path_bytes)
                .enumerate()
                .map(|(i, (a, b))| {
                    format!(
                        "path {i} {:.1} Mb/s{}",
                        (a - b) as f64 * 8e-6,
                        sender.path_detail(i)
                    )
                })
                .collect();
            eprint!(
                "\r{:.1} / {:.1} MB ({:.0} %), {}   ",
                acked as f64 / 1e6,
                offer.size as f64 / 1e6,
                if offer.size == 0 {
                    100.0
                } else {
                    acked as f64 * 100.0 / offer.size as f64
                },
                rates.join(", ")
            );
            last_path_bytes.clone_from(&path_bytes);
            next_report += Duration::from_secs(1);
        }
        if !busy {
            // Until an ACK arrives or the engine's next deadline (at most
            // IDLE_WAIT, for the FIN's resend, the progress line and the
            // idle check).
            let wait = sender.poll_timeout().map_or(IDLE_WAIT, |t| {
                t.saturating_since(clock.now()).min(IDLE_WAIT)
            });
            super::wait_readable(&socks, wait);
        }
    }
}

/// Longest wait for a datagram while nothing is due.
const IDLE_WAIT: Duration = Duration::from_millis(20);

/// ABORT on every path (one of them may be down).
fn abort_all(s: &mut Session, socks: &[UdpSocket], o: &SendOptions, why: &[u8], clock: &Clock) {
    for (i, sock) in socks.iter().enumerate() {
        control(s, sock, o.dest(i), Kind::Abort, why, clock);
    }
}

/// Sends one control message.
fn control(s: &mut Session, sock: &UdpSocket, to: SocketAddr, k: Kind, body: &[u8], clock: &Clock) {
    let mut plain = vec![k as u8];
    plain.extend_from_slice(body);
    let mut pkt = Vec::new();
    if s.encrypt(&plain, &mut pkt, clock.now()).is_ok() {
        send_on(sock, to, &pkt);
    }
}

/// Noise IK as initiator: a fresh message 1 every second, each path in
/// turn (so one dead path does not stop the start), until a reply or
/// `handshake_timeout`.
fn handshake(
    o: &SendOptions,
    socks: &[UdpSocket],
    offer: &Offer,
    clock: &Clock,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<Session, TransferError> {
    let payload = offer.encode();
    let mut pending: Vec<Initiator> = Vec::new();
    let start = std::time::Instant::now();
    let mut next = start;
    let mut buf = vec![0u8; 2048];
    let mut attempt = 0usize;
    while start.elapsed() < o.handshake_timeout {
        if std::time::Instant::now() >= next {
            let (init, msg) = Initiator::new(
                &o.key,
                &o.peer_key,
                tai64n_now(),
                &payload,
                rng,
                clock.now(),
            )
            .map_err(|e| local("handshake", e))?;
            let i = attempt % socks.len();
            send_on(&socks[i], o.dest(i), &msg);
            pending.push(init);
            attempt += 1;
            next += Duration::from_secs(1);
        }
        for s in socks {
            while let Ok((n, from)) = s.recv_from(&mut buf) {
                let msg = &buf[..n];
                if !o.is_peer(from) || PacketType::of(msg) != Some(PacketType::HandshakeResponse) {
                    continue;
                }
                let Some(idx) = peek_receiver_index(msg) else {
                    continue;
                };
                let Some(init) = pending.iter_mut().find(|i| i.local_index() == idx) else {
                    continue;
                };
                let Ok(est) = init.handle_response(msg, clock.now()) else {
                    continue;
                };
                return match est.payload.split_first() {
                    Some((0, _)) => Ok(est.session),
                    Some((_, why)) => Err(TransferError::Refused(
                        String::from_utf8_lossy(why).to_string(),
                    )),
                    None => Err(TransferError::Refused("empty reply".into())),
                };
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Err(TransferError::NoReply {
        peer: o.to,
        waited: o.handshake_timeout,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_as_addresses_or_interfaces() {
        assert_eq!(
            "10.0.0.2".parse(),
            Ok(Path::Addr("10.0.0.2".parse().unwrap()))
        );
        assert_eq!("::1".parse(), Ok(Path::Addr("::1".parse().unwrap())));
        assert_eq!("wlan0".parse(), Ok(Path::Device("wlan0".into())));
        assert!("".parse::<Path>().is_err());
    }
}
