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
}

pub fn run(cmd: BenchCmd) -> anyhow::Result<()> {
    match cmd {
        BenchCmd::Tunnel { packets, size } => crate::benchtunnel::run(packets, size),
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
