//! `braid sim ...`: run scenario files through the simulator.

use std::path::PathBuf;

use anyhow::Context;
use braid_sim::{Scenario, SweepOptions};
use clap::{Subcommand, ValueEnum};

#[derive(Subcommand)]
pub enum SimCmd {
    /// Run a scenario file (e.g. scenarios/pet-table1.toml) and print the
    /// results of every scheme it lists.
    Run {
        /// Scenario TOML file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Number of seeds to average over (overrides the file's `seeds`).
        #[arg(long)]
        seeds: Option<u32>,
        /// Write throughput-over-time plots (SVG) into this directory.
        #[arg(long)]
        plot: Option<PathBuf>,
        /// Worker threads (default: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Do not print progress on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// List the scenario files in a directory with their descriptions.
    List {
        #[arg(default_value = "scenarios")]
        dir: PathBuf,
    },
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
            format,
            seeds,
            plot,
            threads,
            quiet,
        } => {
            if seeds == Some(0) {
                anyhow::bail!("--seeds must be at least 1");
            }
            let sc = Scenario::load(&file)?;
            let start = std::time::Instant::now();
            if sc.sweep.is_some() {
                // One run of every scheme per value of x (Phatak et al. Fig 4).
                if plot.is_some() {
                    anyhow::bail!(
                        "--plot is not available for swept scenarios ([sweep]); use --format json"
                    );
                }
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
                eprintln!("{} events in {wall:.2} s wall time", events);
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
        SimCmd::List { dir } => {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
                .with_context(|| format!("cannot list {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            entries.sort();
            for p in entries {
                match Scenario::load(&p) {
                    Ok(s) => println!("{:<32} {}", p.display(), s.description),
                    Err(e) => println!("{:<32} (invalid: {e})", p.display()),
                }
            }
            Ok(())
        }
    }
}
