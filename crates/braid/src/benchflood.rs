//! `braid bench flood` and `braid bench handshake`: what a handshake flood
//! costs a braid server.
//!
//! `flood` sends one kind of hostile traffic at a server at a fixed rate,
//! for the flood test (`crates/braid/tests/flood.rs`) and for operators
//! who want to try their own server (only ever at a server you run):
//!
//! - `replay`: one genuine handshake initiation of an allowed client,
//!   resent as is (what anyone who captured one on any path can do);
//! - `unknown-key`: valid initiations (correct MAC1) from keys the server
//!   does not know;
//! - `spoofed`: the same from random source addresses in `--spoof`, through
//!   a raw socket (needs CAP_NET_RAW);
//! - `garbage`: random datagrams, some with braid's type bytes.
//!
//! `handshake` measures, in-process on one core, the server's CPU time per
//! rejected initiation of each kind, with and without load (cookies).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::{Duration, Instant as StdInstant};

use anyhow::{bail, Context, Result};
use braid_core::conn::{ClientEntry, Endpoint, Ipv4Net, Server, ServerConfig};

use braid_core::crypto::{Initiator, PrivateKey, PublicKey, Tai64n};
use braid_core::time::Instant;
use clap::ValueEnum;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// What `braid bench flood` sends.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum FloodKind {
    Replay,
    UnknownKey,
    Spoofed,
    Garbage,
}

/// Datagrams per `sendmmsg` call.
const BATCH: usize = 64;
/// Distinct initiations cycled through for the unknown-key kinds.
const DISTINCT_INITS: usize = 64;

/// The payloads of a flood of `kind`.
fn payloads(
    kind: FloodKind,
    server: &PublicKey,
    client: Option<&PrivateKey>,
    rng: &mut ChaCha20Rng,
) -> Result<Vec<Vec<u8>>> {
    let ts = Tai64n::from_unix_nanos(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    let init = |key: &PrivateKey, rng: &mut ChaCha20Rng| {
        let hello = braid_core::conn::ClientHello {
            conn_id: rng.next_u64(),
        }
        .to_bytes();
        Initiator::new(key, server, ts, &hello, rng, Instant::ZERO)
            .map(|(_, m)| m)
            .map_err(|e| anyhow::anyhow!("cannot build an initiation: {e}"))
    };
    Ok(match kind {
        FloodKind::Replay => {
            let Some(key) = client else {
                bail!("`--kind replay` needs `--client-key FILE`: the key of a client the server allows (its initiation is what gets replayed)");
            };
            // A captured initiation is one the server already accepted, so
            // its timestamp is older than the client's latest: take one
            // from 1970, which the server refuses as a replay after the DH
            // (as it would a real capture), rather than a fresh one, which
            // would be a genuine new handshake of that client.
            let hello = braid_core::conn::ClientHello {
                conn_id: rng.next_u64(),
            }
            .to_bytes();
            let old = Tai64n::from_unix_nanos(1_000_000_000);
            let (_, m) = Initiator::new(key, server, old, &hello, rng, Instant::ZERO)
                .map_err(|e| anyhow::anyhow!("cannot build an initiation: {e}"))?;
            vec![m]
        }
        FloodKind::UnknownKey | FloodKind::Spoofed => (0..DISTINCT_INITS)
            .map(|_| init(&PrivateKey::generate(rng), rng))
            .collect::<Result<_>>()?,
        FloodKind::Garbage => (0..1024)
            .map(|_| {
                let len = 1 + (rng.next_u32() % 200) as usize;
                let mut b = vec![0u8; len];
                rng.fill_bytes(&mut b);
                b[0] = match rng.next_u32() % 5 {
                    0 => 0x10,
                    1 => 0x11,
                    2 => 0x12,
                    3 => 0x13,
                    _ => b[0],
                };
                b
            })
            .collect(),
    })
}

/// Sends `kind` at `target` at `pps` datagrams per second for `seconds`;
/// prints one JSON line `{"kind", "sent", "seconds", "pps"}`.
#[allow(clippy::too_many_arguments)]
pub fn flood(
    target: SocketAddr,
    kind: FloodKind,
    pps: u64,
    seconds: f64,
    server_key: &str,
    client_key: Option<PathBuf>,
    spoof: Option<Ipv4Net>,
) -> Result<()> {
    let server = PublicKey::from_base64(server_key).context("`--server-key`")?;
    let client = match client_key {
        Some(p) => Some(braid::config::load_private_key(&p, "--client-key")?),
        None => None,
    };
    let mut seed = [0u8; 32];
    getrandom::getrandom(&mut seed).context("no OS randomness")?;
    let mut rng = ChaCha20Rng::from_seed(seed);
    let payloads = payloads(kind, &server, client.as_ref(), &mut rng)?;
    let SocketAddr::V4(target) = target else {
        bail!("`--target`: IPv4 only");
    };
    let mut sender = match kind {
        FloodKind::Spoofed => {
            let net = spoof.unwrap_or_else(|| Ipv4Net::parse("10.200.0.0/16").expect("literal"));
            Sender::raw(target, net)?
        }
        _ => Sender::udp(target)?,
    };
    let start = StdInstant::now();
    let limit = Duration::from_secs_f64(seconds.max(0.0));
    let mut sent: u64 = 0;
    let mut i = 0usize;
    while start.elapsed() < limit {
        let due = (start.elapsed().as_secs_f64() * pps as f64) as u64;
        if sent >= due {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        let n = ((due - sent) as usize).min(BATCH);
        let batch: Vec<&[u8]> = (0..n)
            .map(|k| payloads[(i + k) % payloads.len()].as_slice())
            .collect();
        i = (i + n) % payloads.len();
        sent += sender.send(&batch, &mut rng) as u64;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"kind\":\"{kind:?}\",\"sent\":{sent},\"seconds\":{secs:.3},\"pps\":{:.0}}}",
        sent as f64 / secs
    );
    Ok(())
}

/// A UDP socket, or a raw IPv4 socket writing its own headers (spoofed
/// sources).
struct Sender {
    sock: socket2::Socket,
    target: SocketAddrV4,
    spoof: Option<Ipv4Net>,
    /// Ports for the raw headers.
    dport: u16,
}

impl Sender {
    fn udp(target: SocketAddrV4) -> Result<Sender> {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
        let _ = s.set_send_buffer_size(4 << 20);
        s.connect(&SocketAddr::V4(target).into())
            .with_context(|| format!("cannot reach {target}"))?;
        Ok(Sender {
            sock: s,
            target,
            spoof: None,
            dport: target.port(),
        })
    }

    fn raw(target: SocketAddrV4, net: Ipv4Net) -> Result<Sender> {
        let s = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::RAW,
            Some(socket2::Protocol::from(libc::IPPROTO_RAW)),
        )
        .context("`--kind spoofed` needs a raw socket (root or CAP_NET_RAW)")?;
        let _ = s.set_send_buffer_size(4 << 20);
        Ok(Sender {
            sock: s,
            target,
            spoof: Some(net),
            dport: target.port(),
        })
    }

    /// Sends `batch` with one `sendmmsg`; returns how many went out.
    fn send(&mut self, batch: &[&[u8]], rng: &mut ChaCha20Rng) -> usize {
        let owned: Vec<Vec<u8>>;
        let datagrams: Vec<&[u8]> = match self.spoof {
            None => batch.to_vec(),
            Some(net) => {
                owned = batch
                    .iter()
                    .map(|p| self.ipv4_udp(random_host(net, rng), rng.next_u32() as u16, p))
                    .collect();
                owned.iter().map(Vec::as_slice).collect()
            }
        };
        let dest: socket2::SockAddr = SocketAddr::V4(self.target).into();
        let mut iovs: Vec<libc::iovec> = datagrams
            .iter()
            .map(|d| libc::iovec {
                iov_base: d.as_ptr() as *mut libc::c_void,
                iov_len: d.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .map(|iov| {
                // SAFETY: an all-zero mmsghdr is valid; the pointers set
                // below refer to `iovs` and `dest`, alive for the call.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                if self.spoof.is_some() {
                    m.msg_hdr.msg_name = dest.as_ptr() as *mut libc::c_void;
                    m.msg_hdr.msg_namelen = dest.len();
                }
                m
            })
            .collect();
        // SAFETY: `msgs` holds `msgs.len()` initialised headers whose
        // buffers outlive the call.
        let n = unsafe {
            libc::sendmmsg(
                self.sock.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as libc::c_uint,
                0,
            )
        };
        n.max(0) as usize
    }

    /// An IPv4/UDP datagram from `src:sport` to the target carrying
    /// `payload` (the kernel fills in the IP checksum; a zero UDP checksum
    /// means none, which IPv4 allows).
    fn ipv4_udp(&self, src: Ipv4Addr, sport: u16, payload: &[u8]) -> Vec<u8> {
        let total = 20 + 8 + payload.len();
        let mut p = Vec::with_capacity(total);
        p.extend_from_slice(&[0x45, 0]);
        p.extend_from_slice(&(total as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&self.target.ip().octets());
        p.extend_from_slice(&sport.max(1024).to_be_bytes());
        p.extend_from_slice(&self.dport.to_be_bytes());
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        p
    }
}

/// A random host address in `net`.
fn random_host(net: Ipv4Net, rng: &mut ChaCha20Rng) -> Ipv4Addr {
    let host_bits = 32 - net.prefix_len() as u32;
    let mask = if host_bits >= 32 {
        u32::MAX
    } else {
        (1u32 << host_bits) - 1
    };
    let base = u32::from(net.gateway()) & !mask;
    Ipv4Addr::from(base | (rng.next_u32() & mask).max(1))
}

/// CPU time this thread used so far (not wall time: the machine may be
/// busy with other work).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// `braid bench handshake`: CPU time per rejected initiation, in-process.
pub fn handshake(count: u64) -> Result<()> {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let client = PrivateKey::generate(&mut rng);
    let server_key = PrivateKey::generate(&mut rng);
    let server_pub = server_key.public_key();
    let cfg = ServerConfig::new(
        Ipv4Net::parse("10.77.0.0/24").expect("literal"),
        vec![ClientEntry {
            name: "c".into(),
            key: client.public_key(),
            address: None,
        }],
    );
    let mut server = Server::new(cfg, server_key, &mut rng)?;
    let from: SocketAddr = "192.0.2.1:4000".parse().expect("literal");
    let mut flood_rng = ChaCha20Rng::seed_from_u64(2);
    let replay = payloads(
        FloodKind::Replay,
        &server_pub,
        Some(&client),
        &mut flood_rng,
    )?;
    let unknown = payloads(FloodKind::UnknownKey, &server_pub, None, &mut flood_rng)?;
    let garbage = payloads(FloodKind::Garbage, &server_pub, None, &mut flood_rng)?;
    let mut bad_mac = unknown[0].clone();
    bad_mac[10] ^= 1;
    // The replayed message is accepted once; every copy after is a replay.
    Endpoint::handle_datagram(&mut server, Instant::ZERO, from, &replay[0]);
    while Endpoint::poll_output(&mut server).is_some() {}
    let mut rows = Vec::new();
    let cases: [(&str, &[Vec<u8>], bool); 7] = [
        ("replayed initiation", &replay, false),
        ("replayed initiation, under load", &replay, true),
        ("unknown key", &unknown, false),
        ("unknown key, under load", &unknown, true),
        ("wrong MAC1", std::slice::from_ref(&bad_mac), false),
        (
            "wrong MAC1, under load",
            std::slice::from_ref(&bad_mac),
            true,
        ),
        ("garbage", &garbage, false),
    ];
    for (name, msgs, load) in cases {
        let n = if load || name.starts_with("wrong") || name == "garbage" {
            count * 20
        } else {
            count
        };
        let start = thread_cpu();
        for i in 0..n {
            // Time moves (1 ms per initiation) so the per-client flood
            // limit does not short-cut the replay before its DH.
            let now = Instant::from_millis(1_000 + i);
            let msg = &msgs[i as usize % msgs.len()];
            Endpoint::handle_datagram_loaded(&mut server, now, from, msg, load);
            while Endpoint::poll_output(&mut server).is_some() {}
        }
        let per = (thread_cpu() - start).as_secs_f64() / n as f64;
        rows.push(format!(
            "{{\"case\":\"{name}\",\"count\":{n},\"us_per_initiation\":{:.2}}}",
            per * 1e6
        ));
    }
    let c = server.status(Instant::ZERO).counters;
    println!(
        "{{\"results\":[{}],\"handshake_replay\":{},\"handshake_unknown_client\":{},\"handshake_bad_mac\":{},\"handshake_cookie\":{},\"handshake_rate_limited\":{}}}",
        rows.join(","),
        c.handshake_replay,
        c.handshake_unknown_client,
        c.handshake_bad_mac,
        c.handshake_cookie,
        c.handshake_rate_limited
    );
    Ok(())
}
