//! `braid lab ...`: the emulated multipath testbed (crate `braid-lab`) from
//! the command line: namespaces, the userspace link emulator, and the
//! iperf3 comparison of a single path, kernel MPTCP and braid.

use std::path::PathBuf;

use anyhow::Context;
use braid_lab::{BenchOptions, LabConfig, Mode};
use clap::Subcommand;
use serde::Serialize;

use crate::sim::Format;

#[derive(Subcommand)]
pub enum LabCmd {
    /// Create the namespaces (braid-cli, braid-emu, braid-prx, braid-srv),
    /// the emulated paths and start the link emulator. Cleans up leftovers
    /// of a previous run first.
    Up {
        /// Lab file, e.g. lab/three-paths.toml.
        file: PathBuf,
    },
    /// Remove everything `up` created.
    Down,
    /// Run the link emulator in the foreground (started by `up` inside braid-emu).
    #[command(hide = true)]
    Emulate { file: PathBuf },
    /// Bring the lab up, measure goodput with iperf3 for each mode, tear down.
    Bench {
        /// Lab file, e.g. lab/two-equal.toml.
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Modes to measure: single-best, mptcp, braid-<scheduler> (pet, wrr, minrtt, adas, rr, edpf, single).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "single-best,mptcp,braid-pet"
        )]
        modes: Vec<String>,
        /// Seconds per measurement.
        #[arg(long, default_value_t = 15)]
        duration: u32,
        /// Leading seconds (slow start) excluded from each measurement.
        #[arg(long, default_value_t = 2)]
        omit: u32,
        /// Leave the lab up afterwards.
        #[arg(long)]
        keep: bool,
    },
}

/// Bytes braid adds to every inner packet on the path: outer IPv4 (20) and
/// UDP (8), the transport header (9), the AEAD tag (16) and the data
/// header (9).
pub const TUNNEL_OVERHEAD: u32 = braid_core::conn::OUTER_OVERHEAD as u32;
/// Path MTU the lab paths have.
pub const PATH_MTU: u32 = 1500;
/// TCP/IPv4 headers with the timestamp option.
const TCP_IP_HEADERS: u32 = 52;

/// The best share of the path rate (IP bytes) TCP goodput can reach
/// through the tunnel with full-size segments.
pub fn ceiling_share() -> f64 {
    (PATH_MTU - TUNNEL_OVERHEAD - TCP_IP_HEADERS) as f64 / PATH_MTU as f64
}

#[derive(Serialize)]
struct Output<'a> {
    scenario: &'a str,
    ceiling_share: f64,
    sum_mbps: f64,
    results: &'a [braid_lab::BenchResult],
}

fn load(file: &PathBuf) -> anyhow::Result<LabConfig> {
    braid_lab::load_config(file).with_context(|| format!("lab file {}", file.display()))
}

/// This executable's `lab emulate`, which `lab up` starts in the emulator namespace.
pub fn emulator_command() -> anyhow::Result<braid_lab::EmulatorCommand> {
    let exe = std::env::current_exe().context("locating the braid executable")?;
    Ok(braid_lab::EmulatorCommand::new(exe).with_args(["lab", "emulate"]))
}

fn require_lab_environment() -> anyhow::Result<()> {
    braid_lab::topo::check_environment()
        .map_err(|why| anyhow::anyhow!("the lab cannot run here: {why}"))
}

/// A `braid-<scheduler>` bench mode.
fn braid_mode(name: &str) -> anyhow::Result<Mode> {
    let sched = name.strip_prefix("braid-").unwrap_or(name);
    let kind = braid_core::sched::SchedulerKind::parse(sched).with_context(|| {
        format!("unknown scheduler `{sched}` in mode `{name}`; use one of rr, wrr, edpf, pet, minrtt, adas, single")
    })?;
    braid::labtunnel::mode(
        name,
        kind,
        std::env::current_exe().context("locating the braid executable")?,
    )
}

pub fn run(cmd: LabCmd) -> anyhow::Result<()> {
    match cmd {
        LabCmd::Up { file } => {
            let cfg = load(&file)?;
            require_lab_environment()?;
            let info = braid_lab::up(&cfg, &emulator_command()?)?;
            println!(
                "lab `{}` is up: {} paths, emulator pid {}",
                info.name, info.paths, info.emulator_pid
            );
            println!("client namespace braid-cli, proxy braid-prx, server braid-srv ({}); `braid lab down` removes it", braid_lab::topo::SRV_ADDR);
            Ok(())
        }
        LabCmd::Down => {
            braid_lab::down()?;
            println!("lab removed");
            Ok(())
        }
        LabCmd::Emulate { file } => {
            let cfg = load(&file)?;
            match braid_lab::run_emulator(&cfg)? {}
        }
        LabCmd::Bench {
            file,
            format,
            modes,
            duration,
            omit,
            keep,
        } => {
            let cfg = load(&file)?;
            let modes: Vec<Mode> = modes
                .iter()
                .map(|m| {
                    if m.starts_with("braid-") {
                        braid_mode(m)
                    } else {
                        Mode::parse(m)
                    }
                })
                .collect::<anyhow::Result<_>>()?;
            require_lab_environment()?;
            // One lab at a time on this host: wait for other benches and tests.
            let _lock = braid_lab::topo::LabLock::acquire()?;
            braid_lab::up(&cfg, &emulator_command()?)?;
            let opts = BenchOptions {
                duration_s: duration,
                omit_s: omit,
                ..Default::default()
            };
            let report = braid_lab::bench_with(&cfg, &modes, &opts);
            if !keep {
                braid_lab::down()?;
            }
            let report = report?;
            let out = Output {
                scenario: &report.scenario,
                ceiling_share: ceiling_share(),
                sum_mbps: report.sum_mbps,
                results: &report.results,
            };
            match format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&out)?),
                Format::Table => {
                    println!(
                        "lab {}: sum of path rates {:.2} Mbit/s; tunnel ceiling {:.3} of it",
                        out.scenario, out.sum_mbps, out.ceiling_share
                    );
                    println!("{:<16} {:>10} {:>14}", "mode", "Mbit/s", "share of sum");
                    for r in out.results {
                        println!(
                            "{:<16} {:>10.2} {:>14.3}",
                            r.mode, r.goodput_mbps, r.share_of_sum
                        );
                    }
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ceiling_counts_every_header() {
        // 1500 - 62 (tunnel) - 52 (TCP/IP with timestamps) = 1386.
        assert!((super::ceiling_share() - 1386.0 / 1500.0).abs() < 1e-12);
    }

    #[test]
    fn bench_modes_name_every_scheduler() {
        assert!(super::braid_mode("braid-adas").is_ok());
        let err = super::braid_mode("braid-adaz").err().unwrap().to_string();
        assert!(err.contains("adaz") && err.contains("adas"), "{err}");
    }
}
