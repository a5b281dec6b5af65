//! `braid bench ...`: speed measurements reported as figures, not asserted
//! in timed unit tests (this machine is noisy).

use std::path::PathBuf;

use braid_sim::{Scenario, SweepOptions};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum BenchCmd {
    /// Simulator speed: events per second on one core, and the wall time
    /// of a scenario with all its schemes. With a lab file (e.g.
    /// lab/two-equal.toml): the shipped tunnel with its real crypto
    /// carrying TCP for --duration simulated seconds, reported as
    /// simulated packets per second and simulated time over wall time.
    Sim {
        #[arg(default_value = "scenarios/pet-table1.toml")]
        file: PathBuf,
        /// Repetitions; the best is reported.
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// Lab files: simulated seconds.
        #[arg(long, default_value_t = 60.0)]
        duration: f64,
        /// Lab files: the scheduler of the tunnel.
        #[arg(long, default_value = "braid-pet")]
        mode: String,
    },
    /// Throughput of the encrypted tunnel on one unshaped loopback path,
    /// next to plain UDP forwarding in the same run.
    Tunnel {
        /// Packets to move.
        #[arg(long, default_value_t = 200_000)]
        packets: u64,
        /// Inner packet size in bytes (1438 fills a 1500-byte path MTU).
        #[arg(long, default_value_t = 1438)]
        size: usize,
    },
    /// Sends a flood of one kind at a braid server you run (for the flood
    /// test and for trying your own server's limits); prints
    /// `{"kind", "sent", "seconds", "pps"}`.
    Flood {
        /// The server's UDP address.
        #[arg(long)]
        target: std::net::SocketAddr,
        /// replay: one allowed client's initiation resent (needs
        /// --client-key); unknown-key: valid initiations from unknown keys;
        /// spoofed: the same from random sources in --spoof (raw socket,
        /// root); garbage: random datagrams.
        #[arg(long, value_enum)]
        kind: crate::benchflood::FloodKind,
        /// Datagrams per second.
        #[arg(long, default_value_t = 300_000)]
        pps: u64,
        #[arg(long, default_value_t = 20.0)]
        seconds: f64,
        /// The server's public key (base64).
        #[arg(long)]
        server_key: String,
        /// Private key file of an allowed client (for `replay`).
        #[arg(long)]
        client_key: Option<PathBuf>,
        /// Source network of `spoofed` datagrams.
        #[arg(long, default_value = "10.200.0.0/16")]
        spoof: String,
    },
    /// Server CPU time per rejected handshake initiation of each kind,
    /// in-process on one core, with and without load (cookies).
    Handshake {
        /// Initiations per DH-bound case (cheap cases run 20 times more).
        #[arg(long, default_value_t = 2_000)]
        count: u64,
    },
}

pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Tunnel { packets, size } => crate::benchtunnel::run(packets, size),
        BenchCmd::Flood {
            target,
            kind,
            pps,
            seconds,
            server_key,
            client_key,
            spoof,
        } => {
            let spoof = braid_core::conn::Ipv4Net::parse(&spoof)
                .map_err(|e| anyhow::anyhow!("`--spoof` {spoof}: {e}"))?;
            crate::benchflood::flood(
                target,
                kind,
                pps,
                seconds,
                &server_key,
                client_key,
                Some(spoof),
            )
        }
        BenchCmd::Handshake { count } => crate::benchflood::handshake(count),
        BenchCmd::Sim {
            file,
            repeat,
            duration,
            mode,
        } => {
            if braid_lab::load_config(&file).is_ok() {
                return bench_lab(&file, repeat, duration, &mode);
            }
            let sc = Scenario::load(&file)?;
            let mut best: Option<(f64, u64)> = None;
            for _ in 0..repeat.max(1) {
                let start = std::time::Instant::now();
                let out = braid_sim::run(
                    &sc,
                    &SweepOptions {
                        seeds: Some(1),
                        threads: 1,
                        progress: false,
                    },
                );
                let wall = start.elapsed().as_secs_f64();
                let events: u64 = out.report.results.iter().map(|r| r.events).sum();
                if best.is_none_or(|(w, _)| wall < w) {
                    best = Some((wall, events));
                }
            }
            let (wall, events) = best.expect("at least one repetition");
            println!("scenario        {}", sc.name);
            println!("schemes         {}", sc.schemes.join(", "));
            println!("events          {events}");
            println!("wall time       {wall:.3} s (one core, best of {repeat})");
            println!("events/s        {:.2} million", events as f64 / wall / 1e6);
            Ok(())
        }
    }
}

/// `braid bench sim lab/NAME.toml`: the shipped-tunnel world's speed.
fn bench_lab(file: &std::path::Path, repeat: u32, duration: f64, mode: &str) -> anyhow::Result<()> {
    let cfg = braid_lab::load_config(file)?;
    let modes = crate::sim::parse_modes(mode)?;
    if !(duration > 0.0 && duration.is_finite()) {
        anyhow::bail!("--duration must be a positive number of seconds");
    }
    let opts = braid_sim::tunnel::LabRunOptions {
        duration_s: duration,
        omit_s: 0.0,
        ..Default::default()
    };
    let mut best: Option<(f64, f64, braid_sim::tunnel::LabResult)> = None;
    for _ in 0..repeat.max(1) {
        let start = std::time::Instant::now();
        let cpu0 = thread_cpu_seconds();
        let r = braid_sim::tunnel::run_lab(&cfg, &modes[..1], &opts);
        let cpu = thread_cpu_seconds() - cpu0;
        let wall = start.elapsed().as_secs_f64();
        let res = r.results.into_iter().next().expect("one mode");
        if best.as_ref().is_none_or(|(w, _, _)| wall < *w) {
            best = Some((wall, cpu, res));
        }
    }
    let (wall, cpu, r) = best.expect("at least one repetition");
    println!("lab file        {} ({})", cfg.name, r.mode);
    println!(
        "simulated       {duration} s, goodput {:.2} Mbit/s",
        r.goodput_mbps
    );
    println!(
        "packets         {} (datagrams carried by the links)",
        r.packets
    );
    println!("wall time       {wall:.3} s (one core, best of {repeat}, real crypto)");
    println!("CPU time        {cpu:.3} s (this thread; wall time includes waiting for a core)");
    println!(
        "packets/s       {:.0} per wall second, {:.0} per CPU second",
        r.packets as f64 / wall,
        r.packets as f64 / cpu.max(1e-9)
    );
    println!(
        "sim/wall time   {:.1}x real time ({:.1}x per CPU second)",
        duration / wall,
        duration / cpu.max(1e-9)
    );
    Ok(())
}

/// CPU time this thread has used, seconds.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}
