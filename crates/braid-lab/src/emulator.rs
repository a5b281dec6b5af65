//! The link emulator process (runs inside the `braid-emu` namespace).
//!
//! tc netem is not available on the target machines, so shaping is done in
//! userspace: for every path the emulator holds one AF_PACKET socket on each
//! of its two veths (`c<i>` facing the client, `p<i>` facing the proxy) and
//! runs one thread per direction. Each thread receives frames from its
//! ingress socket, runs them through a [`Link`] model (exact serialization,
//! drop-tail queue, loss, delay, trace) and sends them on the egress socket
//! at the scheduled instant.
//!
//! Timing: the thread sleeps in `ppoll` (so it also wakes for new frames)
//! until ~[`DEFAULT_SPIN_US`] before the next delivery and then busy-polls,
//! with the timer slack of the thread reduced to 1 ns. Because departures
//! are computed on a virtual timeline, wake-up jitter never turns into a
//! rate error, only into (sub-millisecond) delay jitter.
//!
//! Trace clock: a trace's `at_s` counts from the emulator's start, unless
//! the emulator receives `SIGUSR1` ([`topo::restart_trace_clock`]), which
//! restarts every path's trace from that instant (see
//! [`Link::restart_trace`]). A dedicated thread takes the signal with
//! `sigwait` (it is blocked everywhere else), so nothing runs in a signal
//! handler.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::config::{Direction, LabConfig};
use crate::link::{Link, Verdict};
use crate::rawsock::PacketSocket;
use crate::stats::{self, DirCounters, EmuStats, PathStats};
use crate::topo;

/// Busy-wait window before a scheduled send, in microseconds. Override with
/// the `BRAID_LAB_SPIN_US` environment variable.
pub const DEFAULT_SPIN_US: u64 = 200;
/// How often the stats file is rewritten.
pub const STATS_INTERVAL: Duration = Duration::from_millis(200);
const SOCK_BUF: usize = 8 << 20;

/// The instant of the latest trace restart, shared with the direction
/// threads: `generation` counts restarts, `offset_ns` is the restart
/// instant as nanoseconds since the emulator's start.
#[derive(Default)]
struct TraceClock {
    generation: std::sync::atomic::AtomicU64,
    offset_ns: std::sync::atomic::AtomicU64,
}

impl TraceClock {
    /// Restart `link`'s trace if a restart happened since `seen`.
    fn sync(&self, seen: &mut u64, link: &mut Link, start: Instant) {
        use std::sync::atomic::Ordering::Acquire;
        let g = self.generation.load(Acquire);
        if g != *seen {
            *seen = g;
            let off = self.offset_ns.load(Acquire);
            link.restart_trace(start + Duration::from_nanos(off));
        }
    }
}

/// Block `SIGUSR1` in the calling thread (and the threads it spawns
/// afterwards), so that only [`signal_thread`]'s `sigwait` receives it.
fn block_sigusr1() -> anyhow::Result<libc::sigset_t> {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it
    // and pthread_sigmask only changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            anyhow::bail!(
                "blocking SIGUSR1: {}",
                std::io::Error::from_raw_os_error(rc)
            );
        }
        Ok(set)
    }
}

/// Waits for `SIGUSR1` and records a trace restart each time.
fn signal_thread(set: libc::sigset_t, clock: Arc<TraceClock>, start: Instant) {
    use std::sync::atomic::Ordering::Release;
    loop {
        let mut sig = 0;
        // SAFETY: `set` is an initialised signal set and `sig` a valid
        // out-pointer; sigwait blocks this thread only.
        let rc = unsafe { libc::sigwait(&set, &mut sig) };
        if rc != 0 || sig != libc::SIGUSR1 {
            continue;
        }
        let off = start.elapsed().as_nanos() as u64;
        clock.offset_ns.store(off, Release);
        clock.generation.fetch_add(1, Release);
    }
}

struct Pending {
    at: Instant,
    frame: Vec<u8>,
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;

/// The ECN field (RFC 3168 §5) of an Ethernet frame's IP header, if it
/// carries IPv4 or IPv6: the low two bits of the IPv4 TOS byte or of the
/// IPv6 traffic class.
fn ecn_field(frame: &[u8]) -> Option<u8> {
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    match ethertype {
        ETHERTYPE_IPV4 if frame.get(14)? >> 4 == 4 => Some(frame.get(15)? & 0b11),
        // Version (4 bits), traffic class (8), flow label (20): the ECN
        // bits are bits 4-5 of the second byte.
        ETHERTYPE_IPV6 if frame.get(14)? >> 4 == 6 => Some((frame.get(15)? >> 4) & 0b11),
        _ => None,
    }
}

/// ECT(0) (0b10) or ECT(1) (0b01): the sender reacts to CE, so the queue
/// may mark the packet instead of dropping it.
fn ecn_capable(frame: &[u8]) -> bool {
    matches!(ecn_field(frame), Some(0b01 | 0b10))
}

/// Set the ECN field of an ECN-capable frame to CE (0b11), keeping an IPv4
/// header checksum valid (RFC 1624 incremental update: the TOS byte is the
/// low byte of the header's first 16-bit word).
fn set_ce(frame: &mut [u8]) {
    if !ecn_capable(frame) {
        return;
    }
    if frame[14] >> 4 == 6 {
        frame[15] |= 0b11 << 4;
        return;
    }
    if frame.len() < 34 {
        return;
    }
    let old = u16::from_be_bytes([frame[14], frame[15]]);
    frame[15] |= 0b11;
    let new = u16::from_be_bytes([frame[14], frame[15]]);
    let hc = u16::from_be_bytes([frame[24], frame[25]]);
    // HC' = ~(~HC + ~m + m') in one's complement arithmetic.
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let hc2 = !(sum as u16);
    frame[24..26].copy_from_slice(&hc2.to_be_bytes());
}

/// Seed of path `i`, direction `dir`: independent, repeatable streams.
fn seed_for(base: u64, i: usize, dir: Direction) -> u64 {
    let k = (i as u64) * 2 + (dir == Direction::Down) as u64;
    base.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(k.wrapping_mul(0xD1B5_4A32_D192_ED03) + 1)
}

/// Real-time priority of the emulator threads (SCHED_FIFO). Other builds and
/// tests share the 2-core machines; without RT priority a busy CPU delays
/// sends by 10 ms and more. RT throttling (95 %) keeps a bug from locking
/// up the machine. Disable with `BRAID_LAB_RT=0`.
pub const RT_PRIORITY: i32 = 20;

/// Switch the calling thread to SCHED_FIFO; false if not permitted.
fn set_realtime() -> bool {
    if std::env::var("BRAID_LAB_RT").is_ok_and(|v| v == "0") {
        return false;
    }
    let param = libc::sched_param {
        sched_priority: RT_PRIORITY,
    };
    // SAFETY: pid 0 = calling thread; valid param pointer.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

fn set_timer_slack_1ns() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long; affects this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Main loop of one direction; returns only on a socket error.
fn run_direction(
    rx: Arc<PacketSocket>,
    tx: Arc<PacketSocket>,
    mut link: Link,
    c: Arc<DirCounters>,
    spin: Duration,
    clock: Arc<TraceClock>,
    start: Instant,
) -> std::io::Error {
    use std::sync::atomic::Ordering::Relaxed;
    set_timer_slack_1ns();
    c.realtime.store(set_realtime() as u64, Relaxed);
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut buf = vec![0u8; 65536];
    let mut warned_big = false;
    let mut max_q = 0u64;
    let mut seen = 0u64;
    loop {
        clock.sync(&mut seen, &mut link, start);
        // 1. Send everything that is due.
        let mut now = Instant::now();
        while pending.front().is_some_and(|p| p.at <= now) {
            let p = pending.pop_front().expect("checked");
            match tx.send(&p.frame) {
                Ok(()) => {
                    c.tx_packets.fetch_add(1, Relaxed);
                    c.tx_bytes
                        .fetch_add(p.frame.len().saturating_sub(14) as u64, Relaxed);
                }
                Err(e)
                    if e.raw_os_error() == Some(libc::ENOBUFS)
                        || e.raw_os_error() == Some(libc::EAGAIN) =>
                {
                    c.send_errors.fetch_add(1, Relaxed);
                }
                Err(e) => return e,
            }
            let late = now.saturating_duration_since(p.at).as_nanos() as u64;
            c.late_ns_sum.fetch_add(late, Relaxed);
            c.late_ns_max.fetch_max(late, Relaxed);
            if late > 1_000_000 {
                c.late_over_1ms.fetch_add(1, Relaxed);
            }
            now = Instant::now();
        }
        // 2. Take in everything that arrived.
        loop {
            match rx.try_recv(&mut buf) {
                Ok(Some(n)) => {
                    let arrival = Instant::now();
                    if n > buf.len() {
                        // MSG_TRUNC reported a frame bigger than our buffer.
                        c.drops_queue.fetch_add(1, Relaxed);
                        continue;
                    }
                    if n < 14 {
                        continue;
                    }
                    if n > 1518 && !warned_big {
                        warned_big = true;
                        eprintln!(
                            "braid-lab emulator: {} delivered a {n}-byte frame; offloads (TSO/GRO) are probably still on",
                            rx.ifname
                        );
                    }
                    let ip_bytes = (n - 14) as u64;
                    c.rx_packets.fetch_add(1, Relaxed);
                    c.rx_bytes.fetch_add(ip_bytes, Relaxed);
                    // A restart signalled meanwhile applies before this packet.
                    clock.sync(&mut seen, &mut link, start);
                    match link.offer_ecn(arrival, ip_bytes, ecn_capable(&buf[..n])) {
                        Verdict::Deliver(at) => pending.push_back(Pending {
                            at,
                            frame: buf[..n].to_vec(),
                        }),
                        Verdict::Mark(at) => {
                            let mut frame = buf[..n].to_vec();
                            set_ce(&mut frame);
                            c.ce_marks.fetch_add(1, Relaxed);
                            pending.push_back(Pending { at, frame });
                        }
                        Verdict::DropQueue => {
                            c.drops_queue.fetch_add(1, Relaxed);
                        }
                        Verdict::DropLoss => {
                            c.drops_loss.fetch_add(1, Relaxed);
                        }
                    }
                }
                Ok(None) => break,
                Err(e) => return e,
            }
        }
        now = Instant::now();
        let q = link.queued_bytes(now);
        max_q = max_q.max(q);
        c.queued_bytes.store(q, Relaxed);
        c.max_queued_bytes.store(max_q, Relaxed);
        c.rate_bps.store(link.rate_bps().to_bits(), Relaxed);
        c.delay_s
            .store(link.delay().as_secs_f64().to_bits(), Relaxed);
        // 3. Wait for the next event.
        let timeout = match pending.front() {
            None => Some(Duration::from_millis(100)),
            Some(p) => {
                let wait = p.at.saturating_duration_since(now);
                if wait <= spin {
                    // Busy-poll: loop straight back (receiving meanwhile).
                    std::hint::spin_loop();
                    continue;
                }
                Some(wait - spin)
            }
        };
        if let Err(e) = rx.wait_readable(timeout) {
            return e;
        }
    }
}

fn spin_from_env() -> Duration {
    let us = std::env::var("BRAID_LAB_SPIN_US")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SPIN_US);
    Duration::from_micros(us)
}

/// Run the emulator for `cfg` in the current network namespace (which must
/// contain the `c<i>`/`p<i>` veths created by [`topo::up`]). Writes its pid
/// and, every [`STATS_INTERVAL`], the stats file under [`crate::RUN_DIR`].
/// Never returns unless something fails (e.g. an interface disappears
/// because the lab was torn down); the CLI should exit non-zero then.
pub fn run_emulator(cfg: &LabConfig) -> anyhow::Result<Infallible> {
    cfg.validate()?;
    let spin = spin_from_env();
    let start = Instant::now();
    let base_seed = cfg.seed.unwrap_or(1);
    std::fs::create_dir_all(crate::RUN_DIR)
        .with_context(|| format!("creating {}", crate::RUN_DIR))?;
    let (err_tx, err_rx) = mpsc::channel::<String>();
    let clock = Arc::new(TraceClock::default());
    let set = block_sigusr1()?;
    {
        let clock = clock.clone();
        std::thread::Builder::new()
            .name("emu-signal".into())
            .spawn(move || signal_thread(set, clock, start))
            .context("spawning the signal thread")?;
    }
    let mut all = Vec::new();
    for (i, p) in cfg.paths.iter().enumerate() {
        let cli = Arc::new(
            PacketSocket::open(&topo::emu_cli_if(i), SOCK_BUF)
                .with_context(|| format!("path {}: opening {}", p.name, topo::emu_cli_if(i)))?,
        );
        let prx = Arc::new(
            PacketSocket::open(&topo::emu_prx_if(i), SOCK_BUF)
                .with_context(|| format!("path {}: opening {}", p.name, topo::emu_prx_if(i)))?,
        );
        let mut pair = Vec::new();
        for dir in Direction::BOTH {
            let (rx, tx) = match dir {
                Direction::Up => (cli.clone(), prx.clone()),
                Direction::Down => (prx.clone(), cli.clone()),
            };
            let params = cfg.resolve(i, dir);
            let link = Link::new(&params, seed_for(base_seed, i, dir), start);
            let counters = Arc::new(DirCounters::default());
            counters.rate_bps.store(
                params.rate_bps.to_bits(),
                std::sync::atomic::Ordering::Relaxed,
            );
            counters.delay_s.store(
                params.delay_s.to_bits(),
                std::sync::atomic::Ordering::Relaxed,
            );
            let c2 = counters.clone();
            let err_tx = err_tx.clone();
            let label = format!("path {} {dir}", p.name);
            let clock = clock.clone();
            std::thread::Builder::new()
                .name(format!("emu-{i}-{dir}"))
                .spawn(move || {
                    let e = run_direction(rx, tx, link, c2, spin, clock, start);
                    let _ = err_tx.send(format!("{label}: {e}"));
                })
                .context("spawning emulator thread")?;
            pair.push(counters);
        }
        all.push((p.name.clone(), pair));
    }
    let pid = std::process::id();
    std::fs::write(topo::emulator_pid_path(), format!("{pid}\n")).context("writing pid file")?;
    let path = stats::stats_path();
    loop {
        let snapshot = EmuStats {
            scenario: cfg.name.clone(),
            pid,
            uptime_s: start.elapsed().as_secs_f64(),
            trace_restarts: clock.generation.load(std::sync::atomic::Ordering::Acquire),
            paths: all
                .iter()
                .map(|(name, c)| PathStats {
                    name: name.clone(),
                    up: c[0].snapshot(),
                    down: c[1].snapshot(),
                })
                .collect(),
        };
        stats::write_atomic(&path, &snapshot)
            .with_context(|| format!("writing {}", path.display()))?;
        match err_rx.recv_timeout(STATS_INTERVAL) {
            Ok(msg) => anyhow::bail!("emulator stopped: {msg}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                anyhow::bail!("all emulator threads ended")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv4 header checksum over `h` (RFC 791): zero when valid.
    fn ipv4_checksum(h: &[u8]) -> u16 {
        braid_core::checksum::finish(braid_core::checksum::add(0, h))
    }

    fn ipv4_frame(tos: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let h = &mut f[14..34];
        h[0] = 0x45;
        h[1] = tos;
        h[2..4].copy_from_slice(&28u16.to_be_bytes());
        h[8] = 64;
        h[9] = 17;
        h[12..16].copy_from_slice(&[10, 77, 0, 2]);
        h[16..20].copy_from_slice(&[10, 77, 0, 1]);
        let c = ipv4_checksum(h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        f
    }

    #[test]
    fn ce_marking_rewrites_ipv4_tos_with_a_valid_checksum() {
        for tos in [0x02u8, 0x01, 0xb8 | 0x02] {
            let mut f = ipv4_frame(tos);
            assert!(ecn_capable(&f));
            set_ce(&mut f);
            assert_eq!(ecn_field(&f), Some(0b11));
            assert_eq!(f[15] & !0b11, tos & !0b11, "DSCP kept");
            assert_eq!(ipv4_checksum(&f[14..34]), 0, "tos {tos:#x}");
        }
        // Not ECN-capable (and already CE): left alone.
        for tos in [0x00u8, 0x03] {
            let mut f = ipv4_frame(tos);
            let before = f.clone();
            assert!(!ecn_capable(&f));
            set_ce(&mut f);
            assert_eq!(f, before);
        }
    }

    #[test]
    fn ce_marking_rewrites_the_ipv6_traffic_class() {
        let mut f = vec![0u8; 14 + 40];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        // Version 6, traffic class 0x02 (ECT(0)), flow label 0x12345.
        f[14] = 0x60;
        f[15] = 0x21;
        f[16] = 0x23;
        f[17] = 0x45;
        assert_eq!(ecn_field(&f), Some(0b10));
        set_ce(&mut f);
        assert_eq!(ecn_field(&f), Some(0b11));
        assert_eq!(&f[14..18], &[0x60, 0x31, 0x23, 0x45]);
        // ARP or a runt frame: no ECN field.
        assert_eq!(ecn_field(&[0u8; 10]), None);
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(ecn_field(&arp), None);
    }

    #[test]
    fn seeds_differ_per_path_and_direction() {
        let mut s: Vec<u64> = (0..4)
            .flat_map(|i| Direction::BOTH.map(|d| seed_for(1, i, d)))
            .collect();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 8);
    }
}
