//! `braid bench ...`: speed measurements reported as figures, not asserted
//! in timed unit tests (this machine is noisy).

use std::path::PathBuf;

use braid_sim::{Scenario, SweepOptions};
use clap::Subcommand;

#[derive(Subcommand)]
pub enum BenchCmd {
    /// Simulator speed: events per second on one core, and the wall time
    /// of a scenario with all its schemes.
    Sim {
        #[arg(default_value = "scenarios/pet-table1.toml")]
        file: PathBuf,
        /// Repetitions; the best is reported.
        #[arg(long, default_value_t = 3)]
        repeat: u32,
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
        BenchCmd::Sim { file, repeat } => {
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
