//! `braid analyze`: Phatak et al.'s striping analysis for a set of paths
//! given on the command line or taken from a lab or scenario file. The
//! math lives in `braid_sim::analysis`; this file only gathers the paths.

use std::path::{Path, PathBuf};

use anyhow::Context;
use braid_sim::analysis::{self, input, PathModel, RtoParams};
use clap::{Args, ValueEnum};

#[derive(Args)]
pub struct AnalyzeArgs {
    /// A path as RATE,DELAY[,PACKET]: rate in kbit/mbit/gbit, one-way delay
    /// in ms/s/us, packet size in bytes (default 1500B). Repeat per path,
    /// e.g. --path 10mbit,20ms --path 2mbit,100ms,576B.
    #[arg(long = "path", value_name = "RATE,DELAY[,PACKET]")]
    paths: Vec<String>,
    /// A lab file (lab/*.toml: its download direction) or a scenario file
    /// (scenarios/*.toml: wireless rate, server plus wired delay, TCP
    /// packet size) to take the paths from instead.
    #[arg(value_name = "FILE", conflicts_with = "paths")]
    file: Option<PathBuf>,
    /// Size of one transfer (e.g. 64k, 10MB) for eq 13's finite split;
    /// without it the split is eq 14's, by rate.
    #[arg(long, value_name = "BYTES")]
    transfer_bytes: Option<String>,
    /// Packet size for paths from a lab file.
    #[arg(long, default_value = "1500", value_name = "BYTES")]
    packet_bytes: String,
    /// RTO deviation multiplier K (eq 19).
    #[arg(long, default_value_t = 4.0)]
    rto_k: f64,
    /// RTT smoothing gain alpha (eq 20).
    #[arg(long, default_value_t = 0.875)]
    alpha: f64,
    /// Deviation smoothing gain beta (eq 21).
    #[arg(long, default_value_t = 0.75)]
    beta: f64,
    /// Seed of the random-striping trace.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

#[derive(Copy, Clone, ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run(a: AnalyzeArgs) -> anyhow::Result<()> {
    let packet = input::parse_bytes(&a.packet_bytes).context("--packet-bytes")?;
    let paths = match &a.file {
        Some(f) => from_file(f, packet)?,
        None => a
            .paths
            .iter()
            .enumerate()
            .map(|(i, s)| input::parse_path(s, format!("path{i}")))
            .collect::<Result<Vec<_>, _>>()?,
    };
    input::validate(&paths)?;
    let transfer = a
        .transfer_bytes
        .as_deref()
        .map(input::parse_bytes)
        .transpose()
        .context("--transfer-bytes")?;
    for (name, v, ok) in [
        ("--rto-k", a.rto_k, a.rto_k > 0.0 && a.rto_k <= 1000.0),
        ("--alpha", a.alpha, a.alpha > 0.0 && a.alpha < 1.0),
        ("--beta", a.beta, a.beta > 0.0 && a.beta < 1.0),
    ] {
        if !ok {
            anyhow::bail!(
                "{name} {v} is out of range: K must be in (0, 1000], alpha and beta in (0, 1) (TCP uses 4, 0.875, 0.75)"
            );
        }
    }
    let p = RtoParams {
        k: a.rto_k,
        alpha: a.alpha,
        beta: a.beta,
    };
    let out = analysis::analyze(&paths, transfer, p, a.seed);
    match a.format {
        Format::Table => print!("{}", out.to_table()),
        Format::Json => println!("{}", out.to_json()),
    }
    Ok(())
}

/// Paths of a lab file (download direction) or of a scenario file.
fn from_file(f: &Path, packet: f64) -> anyhow::Result<Vec<PathModel>> {
    let text =
        std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
    let origin = f.display().to_string();
    if let Err(e) = toml::from_str::<toml::Value>(&text) {
        anyhow::bail!(
            "{origin} is not a TOML file ({}); give a lab file (lab/*.toml) or a scenario file (scenarios/*.toml)",
            e.message()
        );
    }
    let scenario = braid_sim::Scenario::parse(&text, &origin);
    if let Ok(sc) = scenario {
        let tcp = sc.tcp.config();
        return Ok(sc
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| PathModel {
                name: format!("path{i}"),
                rate_bps: p.rate_kbps * 1e3,
                delay_s: (sc.server.delay_ms + p.wired_delay_ms) / 1e3,
                packet_bytes: f64::from(tcp.mss_bytes + tcp.header_bytes),
            })
            .collect());
    }
    match braid_lab::config::LabConfig::from_toml_str(&text, &origin) {
        Ok(lab) => Ok((0..lab.paths.len())
            .map(|i| {
                let d = lab.resolve(i, braid_lab::config::Direction::Down);
                PathModel {
                    name: lab.paths[i].name.clone(),
                    rate_bps: d.rate_bps,
                    delay_s: d.delay_s,
                    packet_bytes: packet,
                }
            })
            .collect()),
        Err(lab_err) => anyhow::bail!(
            "{} is neither a scenario file ({}) nor a lab file ({lab_err})",
            f.display(),
            scenario.err().map_or_else(String::new, |e| e.to_string())
        ),
    }
}
