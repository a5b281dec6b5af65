//! `braid bench tunnel`: how fast the encrypted tunnel moves packets on one
//! unshaped loopback path, next to plain UDP forwarding measured in the
//! same run. Both push the same number of full-size datagrams from one
//! thread to another over 127.0.0.1; the tunnel runs braid-core's client
//! `Connection` and `Server` (scheduling, encryption, feedback,
//! resequencing) around the sockets, driven through the one [`Endpoint`]
//! contract as the daemon and the simulator drive them. Throughput is
//! reported per wall second and per CPU second (user + system time of the
//! process), so the figure is "Gbit/s per core" however the two threads
//! share the cores.
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
    ClientEntry, ConnConfig, Connection, Endpoint, Event, Ipv4Net, Output, Server, ServerConfig,
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
    /// Tunnel only: inner packets the client's sender dropped from a full
    /// pacing queue, and those it put in a pacing queue at all.
    pub pacing_drops: u64,
    pub paced: u64,
    /// Tunnel only: the client's per-path estimates and counters and the
    /// server's resequencer at the end, one line each.
    pub detail: Vec<String>,
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
        pacing_drops: 0,
        paced: 0,
        detail: Vec::new(),
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

/// A loopback UDP socket with the daemons' socket buffers
/// (`daemon::net::SOCKET_BUFFER_BYTES`): with the default 208 kB a burst of
/// the window's full-size datagrams overflowed the server's receive buffer
/// (a loopback datagram takes about 4 kB of it), and the bench measured the
/// tunnel's loss repair instead of its speed.
fn daemon_socket() -> anyhow::Result<UdpSocket> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
    let _ = s.set_recv_buffer_size(braid::daemon::net::SOCKET_BUFFER_BYTES);
    let _ = s.set_send_buffer_size(braid::daemon::net::SOCKET_BUFFER_BYTES);
    s.bind(&std::net::SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())?;
    Ok(s.into())
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

/// The braid tunnel on `paths` loopback paths (one client socket each,
/// all to the server's one socket): client thread sends `packets` inner
/// packets of `size` bytes; the server thread decrypts, resequences and
/// counts them. With the tunnel CPU-bound, a second path adds no capacity,
/// so two paths should move as much as one: the difference is the cost of
/// striping itself (per-path timers, feedback, pacing, resequencing).
/// Hands every output of `ep` to `out`, until it has none.
fn drain<E: Endpoint>(ep: &mut E, mut out: impl FnMut(Output)) {
    while let Some(o) = ep.poll_output() {
        out(o);
    }
}

pub fn tunnel(packets: u64, size: usize, paths: usize) -> anyhow::Result<Measured> {
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

    let srv_sock = daemon_socket()?;
    let cli_socks: Vec<UdpSocket> = (0..paths.max(1))
        .map(|_| daemon_socket())
        .collect::<Result<_, _>>()?;
    let srv_addr = srv_sock.local_addr()?;
    srv_sock.set_read_timeout(Some(StdDuration::from_millis(1)))?;
    for c in &cli_socks {
        c.set_nonblocking(true)?;
    }
    let path_list: Vec<(PathId, std::net::SocketAddr)> = (0..cli_socks.len())
        .map(|i| (PathId(i as u8), srv_addr))
        .collect();
    let start = StdInstant::now();
    let now = move || Instant::from_nanos(start.elapsed().as_nanos() as u64);
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    let mut client = Connection::client(
        ConnConfig::default(),
        client_key,
        server_pub,
        &path_list,
        unix,
        now(),
        &mut rng,
    )
    .map_err(|e| anyhow::anyhow!("{e:?}"))?;

    let delivered = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (d, st) = (delivered.clone(), stop.clone());
    let srv = std::thread::spawn(move || -> anyhow::Result<(u64, Option<String>)> {
        let mut buf = vec![0u8; 65536];
        let mut bytes = 0u64;
        while !st.load(Ordering::Acquire) {
            if let Ok((n, from)) = srv_sock.recv_from(&mut buf) {
                Endpoint::handle_datagram(&mut server, now(), from, &buf[..n]);
            }
            Endpoint::handle_timeout(&mut server, now());
            drain(&mut server, |o| match o {
                Output::Transmit(t) => {
                    let _ = srv_sock.send_to(&t.bytes, t.dest);
                }
                Output::Deliver(p) => {
                    bytes += p.len() as u64;
                    d.fetch_add(1, Ordering::Release);
                }
                Output::Event(_) => {}
            });
        }
        let r = server.status(now());
        let reorder = r.peers.first().map(|p| format!("{:?}", p.tunnel.reorder));
        Ok((bytes, reorder))
    });

    let mut pacing = (0, 0);
    let mut detail = Vec::new();
    let result = measure(|| {
        let mut buf = vec![0u8; 65536];
        let mut src = None;
        let mut sent = 0u64;
        let deadline = StdInstant::now() + StdDuration::from_secs(120);
        let (mut last, mut last_change) = (0, StdInstant::now());
        // Packets the tunnel dropped on purpose (a pacing queue too long,
        // as TCP would be told) never arrive: once nothing arrived for
        // 20 ms with the window full, the outstanding ones are written off
        // so the window refills.
        let mut written_off = 0u64;
        loop {
            let d = delivered.load(Ordering::Acquire);
            if sent.saturating_sub(d).saturating_sub(written_off) >= WINDOW
                && last_change.elapsed() > StdDuration::from_millis(20)
            {
                written_off = sent - d.min(sent);
                last_change = StdInstant::now();
            }
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
            for (i, sock) in cli_socks.iter().enumerate() {
                while let Ok(n) = sock.recv(&mut buf) {
                    Endpoint::handle_datagram(&mut client, now(), PathId(i as u8), &buf[..n]);
                }
            }
            Endpoint::handle_timeout(&mut client, now());
            if let Some(a) = src {
                let mut k = 0;
                while sent < packets
                    && sent - delivered.load(Ordering::Acquire).min(sent) < WINDOW + written_off
                    && k < 32
                {
                    Endpoint::send_packet(&mut client, now(), &inner_packet(a, size, sent));
                    sent += 1;
                    k += 1;
                }
            }
            drain(&mut client, |o| match o {
                Output::Transmit(t) => {
                    let i = t.path.map_or(0, |p| p.0 as usize);
                    if let Some(sock) = cli_socks.get(i) {
                        let _ = sock.send_to(&t.bytes, t.dest);
                    }
                }
                Output::Event(Event::Established { params }) => src = Some(params.address),
                _ => {}
            });
        }
        let status = client.status(now()).tunnel;
        let st = &status.sender;
        pacing = (st.pacing_drops, st.paced);
        detail.push(format!(
            "client sender: sent {} acked {} lost fifo/timeout/nack {}/{}/{} repairs {} pair samples {} pair holds {}",
            st.sent, st.acked, st.lost_fifo, st.lost_timeout, st.lost_nack, st.repairs_sent, st.pair_samples, st.pair_holds
        ));
        for p in &status.paths {
            detail.push(format!(
                "  path {}: data {} pkts, estimate {:.3} Gbit/s, srtt {:?}, min rtt {:?}, lost {}",
                p.id.0,
                p.data_tx_packets,
                p.bandwidth_bps.unwrap_or(0.0) / 1e9,
                p.srtt,
                p.min_rtt,
                p.lost_packets
            ));
        }
        Ok(0)
    });
    stop.store(true, Ordering::Release);
    let (bytes, reorder) = srv
        .join()
        .map_err(|_| anyhow::anyhow!("server thread panicked"))??;
    let mut m = result?;
    m.bytes = bytes;
    (m.pacing_drops, m.paced) = pacing;
    detail.extend(reorder.map(|r| format!("server resequencer: {r}")));
    m.detail = detail;
    Ok(m)
}

pub fn run(packets: u64, size: usize) -> anyhow::Result<()> {
    anyhow::ensure!(
        (28..=braid_core::conn::DEFAULT_INNER_MTU as usize).contains(&size),
        "--size must be between 28 and 1438 bytes (the tunnel's inner MTU)"
    );
    let plain = plain_udp(packets, size).context("plain UDP forwarding")?;
    let braid = tunnel(packets, size, 1).context("braid tunnel")?;
    let two = tunnel(packets, size, 2).context("braid tunnel, two paths")?;
    println!("{packets} packets of {size} bytes over 127.0.0.1");
    println!("{:<26} {:>12} {:>16}", "", "Gbit/s", "Gbit/s per core");
    for (name, m) in [
        ("plain UDP forwarding", &plain),
        ("braid tunnel, one path", &braid),
        ("braid tunnel, two paths", &two),
    ] {
        println!(
            "{:<26} {:>12.3} {:>16.3}",
            name,
            m.gbps_wall(),
            m.gbps_per_core()
        );
    }
    println!(
        "braid / plain (per core, one path): {:.2}",
        braid.gbps_per_core() / plain.gbps_per_core()
    );
    println!(
        "two paths / one path (per core): {:.2}",
        two.gbps_per_core() / braid.gbps_per_core()
    );
    for (name, m) in [("one path", &braid), ("two paths", &two)] {
        println!(
            "{name}: {} packets paced, {} dropped from a full pacing queue",
            m.paced, m.pacing_drops
        );
        if std::env::var_os("BRAID_BENCH_DETAIL").is_some() {
            for l in &m.detail {
                println!("  {l}");
            }
        }
    }
    Ok(())
}
