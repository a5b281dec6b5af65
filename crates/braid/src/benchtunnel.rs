//! `braid bench tunnel`: how fast the encrypted tunnel moves packets on one
//! unshaped loopback path, next to plain UDP forwarding measured in the
//! same run. Both push the same number of full-size datagrams from one
//! thread to another over 127.0.0.1; the tunnel runs braid-core's client
//! `Connection` and `Server` (scheduling, encryption, feedback,
//! resequencing) around the sockets. Throughput is reported per wall
//! second and per CPU second (user + system time of the process), so the
//! figure is "Gbit/s per core" however the two threads share the cores.
//!
//! A window of packets in flight (sent but not yet delivered) keeps the
//! sender from overrunning the receiver's socket buffer; it is bench
//! plumbing, not part of the protocol.

use std::net::{Ipv4Addr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant as StdInstant};

use anyhow::Context;
use braid_core::conn::{
    ClientEntry, ConnConfig, Connection, Event, Ipv4Net, Output, Server, ServerConfig,
};
use braid_core::crypto::PrivateKey;
use braid_core::path::PathId;
use braid_core::time::Instant;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Packets allowed between sender and receiver: below what the default
/// socket receive buffer (about 208 kB) holds of full-size datagrams.
const WINDOW: u64 = 96;

/// One measurement.
pub struct Measured {
    pub bytes: u64,
    pub wall_s: f64,
    pub cpu_s: f64,
}

impl Measured {
    pub fn gbps_wall(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.wall_s / 1e9
    }
    pub fn gbps_per_core(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.cpu_s / 1e9
    }
}

fn cpu_seconds() -> f64 {
    // Linux: utime and stime of this process, in clock ticks, fields 14 and 15.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // After the command name: state is field 3, so utime (14) is index 11.
    (ticks(11) + ticks(12)) / 100.0
}

fn measure(run: impl FnOnce() -> anyhow::Result<u64>) -> anyhow::Result<Measured> {
    let (t0, c0) = (StdInstant::now(), cpu_seconds());
    let bytes = run()?;
    Ok(Measured {
        bytes,
        wall_s: t0.elapsed().as_secs_f64(),
        cpu_s: (cpu_seconds() - c0).max(1e-3),
    })
}

/// Plain UDP: the receiver reads each datagram and forwards it to a sink
/// socket, as a router would.
pub fn plain_udp(packets: u64, size: usize) -> anyhow::Result<Measured> {
    let rx = UdpSocket::bind("127.0.0.1:0")?;
    let sink = UdpSocket::bind("127.0.0.1:0")?;
    let tx = UdpSocket::bind("127.0.0.1:0")?;
    let (rx_addr, sink_addr) = (rx.local_addr()?, sink.local_addr()?);
    rx.set_read_timeout(Some(StdDuration::from_millis(200)))?;
    let delivered = Arc::new(AtomicU64::new(0));
    measure(|| {
        let d = delivered.clone();
        let fwd = std::thread::spawn(move || -> u64 {
            let mut buf = vec![0u8; 65536];
            let mut bytes = 0;
            while let Ok(n) = rx.recv(&mut buf) {
                let _ = rx.send_to(&buf[..n], sink_addr);
                bytes += n as u64;
                if d.fetch_add(1, Ordering::Release) + 1 == packets {
                    break;
                }
            }
            bytes
        });
        let pkt = vec![0x45u8; size];
        let mut sent = 0;
        while sent < packets {
            if sent - delivered.load(Ordering::Acquire) < WINDOW {
                tx.send_to(&pkt, rx_addr)?;
                sent += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        fwd.join()
            .map_err(|_| anyhow::anyhow!("forwarder panicked"))
    })
}

fn inner_packet(src: Ipv4Addr, size: usize, n: u64) -> Vec<u8> {
    let mut p = vec![0u8; size];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(size as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&[198, 51, 100, 1]);
    p[20..28].copy_from_slice(&n.to_be_bytes());
    p
}

/// The braid tunnel on one path: client thread sends `packets` inner
/// packets of `size` bytes; the server thread decrypts, resequences and
/// counts them.
pub fn tunnel(packets: u64, size: usize) -> anyhow::Result<Measured> {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let server_key = PrivateKey::generate(&mut rng);
    let client_key = PrivateKey::generate(&mut rng);
    let server_pub = server_key.public_key();
    let net = Ipv4Net::parse("10.99.0.0/24").map_err(|e| anyhow::anyhow!("{e}"))?;
    let cfg = ServerConfig::new(
        net,
        vec![ClientEntry {
            name: "bench".into(),
            key: client_key.public_key(),
            address: None,
        }],
    );
    let mut server = Server::new(cfg, server_key, &mut rng).map_err(|e| anyhow::anyhow!("{e}"))?;

    let srv_sock = UdpSocket::bind("127.0.0.1:0")?;
    let cli_sock = UdpSocket::bind("127.0.0.1:0")?;
    let srv_addr = srv_sock.local_addr()?;
    srv_sock.set_read_timeout(Some(StdDuration::from_millis(1)))?;
    cli_sock.set_nonblocking(true)?;
    let start = StdInstant::now();
    let now = move || Instant::from_nanos(start.elapsed().as_nanos() as u64);
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    let mut client = Connection::client(
        ConnConfig::default(),
        client_key,
        server_pub,
        &[(PathId(0), srv_addr)],
        unix,
        now(),
        &mut rng,
    )
    .map_err(|e| anyhow::anyhow!("{e:?}"))?;

    let delivered = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (d, st) = (delivered.clone(), stop.clone());
    let srv = std::thread::spawn(move || -> anyhow::Result<u64> {
        let mut buf = vec![0u8; 65536];
        let mut bytes = 0u64;
        while !st.load(Ordering::Acquire) {
            if let Ok((n, from)) = srv_sock.recv_from(&mut buf) {
                server.handle_datagram(now(), from, &buf[..n]);
            }
            server.handle_timeout(now());
            while let Some(o) = server.poll_output() {
                match o {
                    Output::Transmit(t) => {
                        let _ = srv_sock.send_to(&t.bytes, t.dest);
                    }
                    Output::Deliver(p) => {
                        bytes += p.len() as u64;
                        d.fetch_add(1, Ordering::Release);
                    }
                    Output::Event(_) => {}
                }
            }
        }
        Ok(bytes)
    });

    let result = measure(|| {
        let mut buf = vec![0u8; 65536];
        let mut src = None;
        let mut sent = 0u64;
        let deadline = StdInstant::now() + StdDuration::from_secs(120);
        let (mut last, mut last_change) = (0, StdInstant::now());
        loop {
            let d = delivered.load(Ordering::Acquire);
            if d >= packets {
                break;
            }
            if d != last {
                (last, last_change) = (d, StdInstant::now());
            } else if sent == packets && last_change.elapsed() > StdDuration::from_millis(500) {
                break; // the rest was lost on the way; count what arrived
            }
            anyhow::ensure!(
                StdInstant::now() < deadline,
                "tunnel bench stalled: {d} of {packets} delivered"
            );
            while let Ok(n) = cli_sock.recv(&mut buf) {
                client.handle_datagram(now(), PathId(0), &buf[..n]);
            }
            client.handle_timeout(now());
            if let Some(a) = src {
                let mut k = 0;
                while sent < packets
                    && sent - delivered.load(Ordering::Acquire).min(sent) < WINDOW
                    && k < 32
                {
                    client.send_packet(now(), &inner_packet(a, size, sent));
                    sent += 1;
                    k += 1;
                }
            }
            while let Some(o) = client.poll_output() {
                match o {
                    Output::Transmit(t) => {
                        let _ = cli_sock.send_to(&t.bytes, t.dest);
                    }
                    Output::Event(Event::Established { params }) => src = Some(params.address),
                    _ => {}
                }
            }
        }
        Ok(0)
    });
    stop.store(true, Ordering::Release);
    let bytes = srv
        .join()
        .map_err(|_| anyhow::anyhow!("server thread panicked"))??;
    let mut m = result?;
    m.bytes = bytes;
    Ok(m)
}

pub fn run(packets: u64, size: usize) -> anyhow::Result<()> {
    anyhow::ensure!(
        (28..=braid_core::conn::DEFAULT_INNER_MTU as usize).contains(&size),
        "--size must be between 28 and 1438 bytes (the tunnel's inner MTU)"
    );
    let plain = plain_udp(packets, size).context("plain UDP forwarding")?;
    let braid = tunnel(packets, size).context("braid tunnel")?;
    println!("{packets} packets of {size} bytes over 127.0.0.1, one path");
    println!("{:<22} {:>12} {:>16}", "", "Gbit/s", "Gbit/s per core");
    println!(
        "{:<22} {:>12.3} {:>16.3}",
        "plain UDP forwarding",
        plain.gbps_wall(),
        plain.gbps_per_core()
    );
    println!(
        "{:<22} {:>12.3} {:>16.3}",
        "braid tunnel",
        braid.gbps_wall(),
        braid.gbps_per_core()
    );
    println!(
        "braid / plain (per core): {:.2}",
        braid.gbps_per_core() / plain.gbps_per_core()
    );
    Ok(())
}
