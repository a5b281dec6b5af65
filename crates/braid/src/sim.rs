//! `braid sim ...`: run scenario files through the simulator.

use std::path::{Path, PathBuf};

use anyhow::Context;
use braid_sim::tunnel::{LabMode, LabRunOptions};
use braid_sim::{Scenario, SweepOptions};
use clap::{Subcommand, ValueEnum};

#[derive(Subcommand)]
pub enum SimCmd {
    /// Run a scenario file (e.g. scenarios/pet-table1.toml) and print the
    /// results of every scheme it lists, or a lab file (e.g.
    /// lab/two-equal.toml, recognised by its [[path]] tables) through the
    /// shipped tunnel with the modes of `braid lab bench`, or an MPLOT
    /// experiment (e.g. scenarios/mplot-fig11.toml, recognised by its
    /// [mplot] table) with the shipped multipath transport, or an R-MTP
    /// experiment (e.g. scenarios/rmtp-fig45.toml, [rmtp] table).
    Run {
        /// Scenario or lab TOML file.
        file: PathBuf,
        /// Lab files: modes to run, comma-separated: single-best, mptcp
        /// (uncoupled subflows), braid-<scheduler> (braid-pet, braid-rr, ...),
        /// braid-send (`braid send` of a file of --duration seconds at the
        /// sum of the path rates, timed to its last byte; --omit does not
        /// apply).
        #[arg(long, default_value = "single-best,braid-pet")]
        modes: String,
        /// Lab files: length of the transfer, seconds.
        #[arg(long, default_value_t = 15.0)]
        duration: f64,
        /// Lab files: seconds at the start left out of the goodput.
        #[arg(long, default_value_t = 2.0)]
        omit: f64,
        /// Lab files: also report the goodput from this second of the
        /// transfer on (counted from its start, the omitted start-up
        /// included), next to the whole test's, e.g. --from 20.
        #[arg(long)]
        from: Option<f64>,
        /// Lab files: the TCP receive window, packets.
        #[arg(long, default_value_t = 4096)]
        rwnd: u32,
        /// Lab files: run a competing TCP flow (CUBIC, directly over the
        /// path) on this path (its name in the lab file) beside every
        /// mode, as `braid lab bench --cross-tcp` does, and report what it
        /// got (`cross TCP`, `cross_tcp_mbps`).
        #[arg(long, value_name = "PATH")]
        cross_tcp: Option<String>,
        /// Lab files, with --cross-tcp: start the competing flow this many
        /// seconds before each mode's transfer, so that it already holds
        /// its share of the path (and its queue) when the transfer
        /// begins. The lab bench starts both together.
        #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
        cross_lead: f64,
        /// Lab files: start each braid mode's transfer once every path of
        /// the tunnel is up, waiting at most this many seconds after the
        /// tunnel is established (default 0: at once). A far path comes up
        /// hundreds of milliseconds after a near one; this measures a bond
        /// that is up before its transfer. In the lab the paths are usually
        /// up by the time iperf3 starts, so this is the closer match to it.
        #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
        wait_paths: f64,
        /// Lab files: let the tunnel idle this many seconds after it is
        /// established before each braid mode's transfer starts (default
        /// 0: at once). This measures a bond that was up before the
        /// transfer, as one in use is: by then it has sent its rate probes
        /// and knows every path's rate. The other modes (single-best,
        /// mptcp, braid-send) start their transfer as late, so that a path
        /// that changes during the run (`trace`) changes at the same point
        /// of every mode's transfer.
        #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
        idle: f64,
        /// Lab files: open each braid mode's transfer with a SYN and a
        /// SYN-ACK through the tunnel, as a real TCP connection (and the
        /// lab's iperf3) does, instead of sending data at once. A new
        /// tunnel's startup hold keeps that SYN back until every path is
        /// up and measured (at most about 0.9 s), so this measures the
        /// start of a transfer begun with the tunnel as the lab does.
        #[arg(long)]
        handshake: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Number of seeds to average over (overrides the file's `seeds`).
        #[arg(long)]
        seeds: Option<u32>,
        /// Write plots (SVG) into this directory: throughput over time, or for
        /// a swept scenario ([sweep]) goodput against the swept value.
        #[arg(long)]
        plot: Option<PathBuf>,
        /// Worker threads (default: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Do not print progress on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// The seeded fault swarm: every seed draws its own world (paths, loss,
    /// outages, joins and leaves, reordered, duplicated and corrupted
    /// datagrams, key rotation) and transfers several MB of TCP through
    /// the shipped tunnel, checking integrity (SHA-256), no duplicate
    /// delivery, buffer bounds and stalls. A failing seed prints the
    /// command that reruns it.
    Swarm {
        /// Number of seeds to run, from --from on.
        #[arg(long, default_value_t = 100)]
        seeds: u64,
        /// First seed.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// Run this one seed and print its world (a reproduction).
        #[arg(long)]
        seed: Option<u64>,
        /// Worker threads (default: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
    /// List the scenario files in a directory with their descriptions.
    List {
        #[arg(default_value = "scenarios")]
        dir: PathBuf,
    },
}

/// An MPLOT scenario file has an `[mplot]` table (scenarios/mplot-*.toml).
fn is_mplot_file(file: &Path) -> anyhow::Result<bool> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    Ok(braid_sim::mplot::MplotScenario::is_mplot(&text))
}

/// Runs an MPLOT experiment (paper 002 §IV) and prints one row per
/// (scheme, x).
fn run_mplot(
    file: &Path,
    seeds: Option<u32>,
    threads: usize,
    format: Format,
    quiet: bool,
) -> anyhow::Result<()> {
    let mut sc = braid_sim::mplot::MplotScenario::load(file)?;
    if let Some(s) = seeds {
        sc.mplot.seeds = s;
    }
    let start = std::time::Instant::now();
    let r = braid_sim::mplot::run(&sc, threads);
    match format {
        Format::Table => print!("{}", r.to_table()),
        Format::Json => println!("{}", r.to_json()),
    }
    if !quiet {
        eprintln!("{:.2} s wall time", start.elapsed().as_secs_f64());
    }
    Ok(())
}

/// An R-MTP scenario file has an `[rmtp]` table (scenarios/rmtp-*.toml).
fn is_rmtp_file(file: &Path) -> anyhow::Result<bool> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    Ok(braid_sim::rmtp::RmtpScenario::is_rmtp(&text))
}

/// Runs an R-MTP experiment (paper 004 §4) and prints one row per
/// (scheme, x) with its completion time.
fn run_rmtp(file: &Path, seeds: Option<u32>, format: Format, quiet: bool) -> anyhow::Result<()> {
    let mut sc = braid_sim::rmtp::RmtpScenario::load(file)?;
    if let Some(s) = seeds {
        sc.rmtp.seeds = s;
    }
    let start = std::time::Instant::now();
    let r = braid_sim::rmtp::run(&sc);
    match format {
        Format::Table => print!("{}", r.to_table()),
        Format::Json => println!("{}", r.to_json()),
    }
    if !quiet {
        eprintln!("{:.2} s wall time", start.elapsed().as_secs_f64());
    }
    Ok(())
}

/// A lab file has `[[path]]` tables and no `schemes`; a scenario file
/// lists its `schemes` (and may have `[[path]]` tables too: the paper
/// scenarios describe their paths with them).
fn is_lab_file(file: &Path) -> anyhow::Result<bool> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let has_paths = text.lines().any(|l| l.trim() == "[[path]]");
    let has_schemes = text.lines().any(|l| {
        l.trim_start()
            .strip_prefix("schemes")
            .is_some_and(|r| r.trim_start().starts_with('='))
    });
    Ok(has_paths && !has_schemes)
}

/// Parses `--modes` for a lab file.
pub fn parse_modes(modes: &str) -> anyhow::Result<Vec<LabMode>> {
    let v: Vec<LabMode> = modes
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| LabMode::parse(m).map_err(|e| anyhow::anyhow!("--modes: {e}")))
        .collect::<anyhow::Result<_>>()?;
    if v.is_empty() {
        anyhow::bail!("--modes: give at least one mode, e.g. single-best,braid-pet");
    }
    Ok(v)
}

fn run_lab(
    file: &Path,
    modes: &str,
    (duration, omit, from, rwnd): (f64, f64, Option<f64>, u32),
    (cross_tcp, cross_lead, wait_paths, idle, handshake): (Option<&str>, f64, f64, f64, bool),
    seeds: Option<u32>,
    format: Format,
    quiet: bool,
) -> anyhow::Result<()> {
    let cfg = braid_lab::load_config(file)?;
    let modes = parse_modes(modes)?;
    if !(duration > omit && omit >= 0.0 && duration.is_finite()) {
        anyhow::bail!("--duration must be longer than --omit (got {duration} and {omit})");
    }
    if let Some(f) = from {
        if !(f >= 0.0 && f < duration) {
            anyhow::bail!(
                "--from must be at least 0 and less than --duration (got {f} and {duration})"
            );
        }
    }
    if seeds.is_some_and(|s| s > 1) {
        anyhow::bail!("--seeds: a lab file runs once; its links take the file's `seed`");
    }
    if !(0.0..=3600.0).contains(&cross_lead) {
        anyhow::bail!("--cross-lead must be between 0 and 3600 seconds (got {cross_lead})");
    }
    crate::lab::check_wait_paths(wait_paths)?;
    if !(0.0..=3600.0).contains(&idle) {
        anyhow::bail!("--idle must be between 0 and 3600 seconds (got {idle})");
    }
    let cross_tcp = crate::lab::cross_tcp_path(&cfg, cross_tcp, cross_lead > 0.0)?;
    let opts = LabRunOptions {
        duration_s: duration,
        omit_s: omit,
        rwnd_pkts: rwnd.max(2),
        from_s: from,
        cross_tcp,
        cross_lead_s: cross_lead,
        wait_paths_s: wait_paths,
        idle_s: idle,
        handshake,
        ..LabRunOptions::default()
    };
    let start = std::time::Instant::now();
    let r = braid_sim::tunnel::run_lab(&cfg, &modes, &opts);
    match format {
        Format::Json => println!("{}", serde_json::to_string(&r)?),
        Format::Table => {
            println!(
                "{} (simulated): sum of path rates {:.2} Mbit/s; tunnel ceiling {:.3} of it",
                r.scenario, r.sum_mbps, r.ceiling_share
            );
            let from_head = from.map_or(String::new(), |f| format!(" {:>9}", format!("from {f}s")));
            let cross_head = if cross_tcp.is_some() {
                format!(" {:>10}", "cross TCP")
            } else {
                String::new()
            };
            println!(
                "{:<14} {:>9} {:>7}{from_head} {:>7} {:>8} {:>8} {:>9}{cross_head}  path Mbit/s",
                "mode", "Mbit/s", "share", "retx", "dupacks", "timeouts", "res.loss"
            );
            for x in &r.results {
                let paths: Vec<String> = x.path_mbps.iter().map(|m| format!("{m:.2}")).collect();
                let from_col = x.share_from.map_or(String::new(), |s| format!(" {s:>9.3}"));
                let cross_col = x
                    .cross_tcp_mbps
                    .map_or(String::new(), |c| format!(" {c:>10.2}"));
                println!(
                    "{:<14} {:>9.2} {:>7.3}{from_col} {:>7} {:>8} {:>8} {:>9.4}{cross_col}  {}",
                    x.mode,
                    x.goodput_mbps,
                    x.share_of_sum,
                    x.retransmits,
                    x.dupacks,
                    x.timeouts,
                    x.residual_loss,
                    paths.join(" / ")
                );
            }
        }
    }
    if !quiet {
        eprintln!(
            "{} modes x {duration} s simulated in {:.2} s wall time",
            modes.len(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

#[derive(Copy, Clone, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

pub fn run(cmd: SimCmd) -> anyhow::Result<()> {
    match cmd {
        SimCmd::Run {
            file,
            modes,
            duration,
            omit,
            from,
            rwnd,
            cross_tcp,
            cross_lead,
            wait_paths,
            idle,
            handshake,
            format,
            seeds,
            plot,
            threads,
            quiet,
        } => {
            if seeds == Some(0) {
                anyhow::bail!("--seeds must be at least 1");
            }
            if is_lab_file(&file)? {
                return run_lab(
                    &file,
                    &modes,
                    (duration, omit, from, rwnd),
                    (
                        cross_tcp.as_deref(),
                        cross_lead,
                        wait_paths,
                        idle,
                        handshake,
                    ),
                    seeds,
                    format,
                    quiet,
                );
            }
            if cross_tcp.is_some() {
                anyhow::bail!("--cross-tcp applies to lab files (those with [[path]] tables, e.g. lab/two-equal.toml), and {} is a scenario file", file.display());
            }
            if handshake {
                anyhow::bail!("--handshake applies to lab files (those with [[path]] tables, e.g. lab/two-equal.toml), and {} is a scenario file", file.display());
            }
            if idle != 0.0 {
                anyhow::bail!("--idle applies to lab files (those with [[path]] tables, e.g. lab/two-equal.toml), and {} is a scenario file", file.display());
            }
            if wait_paths != 0.0 {
                anyhow::bail!("--wait-paths applies to lab files (those with [[path]] tables, e.g. lab/two-equal.toml), and {} is a scenario file", file.display());
            }
            if is_mplot_file(&file)? {
                return run_mplot(&file, seeds, threads, format, quiet);
            }
            if is_rmtp_file(&file)? {
                return run_rmtp(&file, seeds, format, quiet);
            }
            let sc = Scenario::load(&file)?;
            let start = std::time::Instant::now();
            if sc.sweep.is_some() {
                // One run of every scheme per value of x (Phatak et al. Fig 4,
                // PRISM Figs 6, 7 and 10-14).
                let r = braid_sim::ratio::run(
                    &sc,
                    &SweepOptions {
                        seeds,
                        threads,
                        progress: !quiet,
                    },
                );
                match format {
                    Format::Table => print!("{}", r.to_table()),
                    Format::Json => println!("{}", r.to_json()),
                }
                if !quiet {
                    eprintln!("{:.2} s wall time", start.elapsed().as_secs_f64());
                }
                if let Some(dir) = plot {
                    let f = braid_sim::plot::write_sweep(&r, &dir)
                        .map_err(|e| anyhow::anyhow!("{e}"))
                        .with_context(|| format!("writing the plot to {}", dir.display()))?;
                    eprintln!("wrote {}", f.display());
                }
                return Ok(());
            }
            let out = braid_sim::run(
                &sc,
                &SweepOptions {
                    seeds,
                    threads,
                    progress: !quiet,
                },
            );
            let wall = start.elapsed().as_secs_f64();
            match format {
                Format::Table => print!("{}", out.report.to_table()),
                Format::Json => println!("{}", out.report.to_json()),
            }
            if !quiet {
                let events: u64 = out.report.results.iter().map(|r| r.events).sum();
                eprintln!("{events} events in {wall:.2} s wall time");
            }
            if let Some(dir) = plot {
                let files = braid_sim::plot::write_all(&out, &dir)
                    .map_err(|e| anyhow::anyhow!("{e}"))
                    .with_context(|| format!("writing plots to {}", dir.display()))?;
                for f in files {
                    eprintln!("wrote {}", f.display());
                }
            }
            Ok(())
        }
        SimCmd::Swarm {
            seeds,
            from,
            seed,
            threads,
        } => swarm(seeds, from, seed, threads),
        SimCmd::List { dir } => {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
                .with_context(|| format!("cannot list {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            entries.sort();
            for p in entries {
                if is_mplot_file(&p).unwrap_or(false) {
                    match braid_sim::mplot::MplotScenario::load(&p) {
                        Ok(s) => println!("{:<32} {}", p.display(), s.description),
                        Err(e) => println!("{:<32} (invalid: {e})", p.display()),
                    }
                    continue;
                }
                if is_rmtp_file(&p).unwrap_or(false) {
                    match braid_sim::rmtp::RmtpScenario::load(&p) {
                        Ok(s) => println!("{:<32} {}", p.display(), s.description),
                        Err(e) => println!("{:<32} (invalid: {e})", p.display()),
                    }
                    continue;
                }
                match Scenario::load(&p) {
                    Ok(s) => println!("{:<32} {}", p.display(), s.description),
                    Err(e) => println!("{:<32} (invalid: {e})", p.display()),
                }
            }
            Ok(())
        }
    }
}

fn swarm(seeds: u64, from: u64, seed: Option<u64>, threads: usize) -> anyhow::Result<()> {
    use braid_sim::swarm::{draw, reproduce_command, run_seed};
    if let Some(s) = seed {
        println!("{:#?}", draw(s));
        return match run_seed(s) {
            Ok(o) => {
                println!("seed {s}: ok {o:?}");
                Ok(())
            }
            Err(e) => anyhow::bail!("seed {s}: {e}"),
        };
    }
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    let next = std::sync::atomic::AtomicU64::new(from);
    let failed = std::sync::Mutex::new(Vec::new());
    let start = std::time::Instant::now();
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| loop {
                let s = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if s >= from + seeds {
                    break;
                }
                let r = std::panic::catch_unwind(|| run_seed(s));
                let msg = match r {
                    Ok(Ok(_)) => continue,
                    Ok(Err(e)) => e,
                    Err(_) => "panic".to_string(),
                };
                eprintln!(
                    "seed {s} FAILED: {msg}\n  reproduce: {}",
                    reproduce_command(s)
                );
                failed.lock().expect("no poisoning").push(s);
            });
        }
    });
    let mut failed = failed.into_inner().expect("no poisoning");
    failed.sort_unstable();
    println!(
        "{seeds} seeds from {from}: {} failed {:?} in {:.1} s",
        failed.len(),
        failed,
        start.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{} seeds failed", failed.len())
    }
}

#[cfg(test)]
mod file_kind_tests {
    use super::is_lab_file;
    use std::path::PathBuf;

    #[test]
    fn scenario_files_with_paths_are_not_lab_files() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        for s in ["scenarios/pet-table1.toml", "scenarios/phatak-fig4.toml"] {
            assert!(!is_lab_file(&root.join(s)).unwrap(), "{s}");
        }
        for l in ["lab/two-equal.toml", "lab/fast-slow.toml"] {
            assert!(is_lab_file(&root.join(l)).unwrap(), "{l}");
        }
    }
}
