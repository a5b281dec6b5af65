//! R-MTP's experiments (paper 004 §4; `SPECS.md` §4.2) in the simulator.
//!
//! [`scenario`] reads `scenarios/rmtp-*.toml`; [`world`] runs one
//! (scheme, x, seed) transfer with the shipped `braid_core::rmtp` sender
//! and receiver, or the simulator's NewReno, over `braid-net` links;
//! [`run`] sweeps a scenario and prints one row per (scheme, x), in the
//! format of the other sweeps: `{"scheme", "x", "completion_s", ...}`.
//!
//! Which links a scheme uses: `RMTP` all of the scenario's links (or link
//! `x` alone when the sweep is `link`), `RMTP-FAST` and `NEWRENO` the first,
//! `RMTP-SLOW` and `NEWRENO-SLOW` the last.

pub mod scenario;
pub mod world;

use serde::Serialize;

use crate::rows::{Rows, SweepRow};

pub use scenario::{RmtpLink, RmtpScenario, RmtpScenarioError, RmtpScheme};
pub use world::{RunOutput, RunSpec};

/// One row of a sweep: a scheme at one x, averaged over the seeds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RmtpRow {
    pub scheme: String,
    pub x: f64,
    /// The links the scheme ran over, by name.
    pub links: Vec<String>,
    /// Mean time to deliver the whole transfer, s.
    pub completion_s: f64,
    /// Standard deviation over the seeds, s.
    pub completion_std_s: f64,
    pub goodput_kbps: f64,
    /// Frames (segments) sent per frame of the transfer.
    pub sent_per_frame: f64,
    /// Retransmissions per frame of the transfer.
    pub retransmits_per_frame: f64,
    /// R-MTP congestion cuts per run.
    pub rate_cuts: f64,
    /// Runs that did not finish within the simulator's limit.
    pub unfinished: u32,
    pub seeds: u32,
}

/// A sweep's rows, in scenario order.
pub type RmtpReport = Rows<RmtpRow>;

impl SweepRow for RmtpRow {
    fn scheme(&self) -> &str {
        &self.scheme
    }
    fn x(&self) -> f64 {
        self.x
    }
}

impl Rows<RmtpRow> {
    /// A plain table.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "{}\n{:<13} {:>5} {:<18} {:>12} {:>8} {:>10} {:>8} {:>5}\n",
            self.name, "scheme", "x", "links", "completion s", "std", "kbit/s", "retx/fr", "cuts"
        );
        for r in &self.rows {
            s += &format!(
                "{:<13} {:>5} {:<18} {:>12.2} {:>8.2} {:>10.1} {:>8.3} {:>5.1}{}\n",
                r.scheme,
                r.x,
                r.links.join("+"),
                r.completion_s,
                r.completion_std_s,
                r.goodput_kbps,
                r.retransmits_per_frame,
                r.rate_cuts,
                if r.unfinished > 0 {
                    format!("  ({} unfinished)", r.unfinished)
                } else {
                    String::new()
                }
            );
        }
        s
    }
}

/// The run of `scheme` at sweep value `x` with `seed`.
pub fn spec_for(sc: &RmtpScenario, scheme: RmtpScheme, x: f64, seed: u64) -> RunSpec {
    let r = &sc.rmtp;
    let mut all = r.link.clone();
    if r.sweep == "fast_loss" {
        all[0].loss = x;
    }
    if r.sweep == "link" {
        all = vec![all[(x as usize).min(all.len() - 1)].clone()];
    }
    let first = all[0].clone();
    let last = all[all.len() - 1].clone();
    let links = match scheme {
        RmtpScheme::Rmtp => all,
        RmtpScheme::RmtpFast | RmtpScheme::NewReno => vec![first],
        RmtpScheme::RmtpSlow | RmtpScheme::NewRenoSlow => vec![last],
    };
    RunSpec {
        scheme,
        links,
        frames: r.frames,
        frame_bytes: r.frame_bytes,
        seed,
    }
}

/// Runs every (scheme, x, seed) of the scenario and averages over the
/// seeds. Each run is a few thousand events, so the sweep runs on one
/// thread.
pub fn run(sc: &RmtpScenario) -> RmtpReport {
    let r = &sc.rmtp;
    let mut rows = Vec::new();
    for scheme in sc.schemes() {
        for &x in &r.values {
            let outs: Vec<(RunSpec, RunOutput)> = (0..r.seeds.max(1))
                .map(|s| {
                    let spec = spec_for(sc, scheme, x, r.first_seed + u64::from(s));
                    let out = world::run(&spec);
                    (spec, out)
                })
                .collect();
            let n = outs.len() as f64;
            let mean =
                |f: &dyn Fn(&RunOutput) -> f64| outs.iter().map(|(_, o)| f(o)).sum::<f64>() / n;
            let c = mean(&|o| o.completion_s);
            let var = mean(&|o| (o.completion_s - c).powi(2));
            let frames = r.frames as f64;
            rows.push(RmtpRow {
                scheme: scheme.name().to_string(),
                x,
                links: outs[0].0.links.iter().map(|l| l.name.clone()).collect(),
                completion_s: c,
                completion_std_s: var.sqrt(),
                goodput_kbps: mean(&|o| o.goodput_kbps),
                sent_per_frame: mean(&|o| o.sent as f64) / frames,
                retransmits_per_frame: mean(&|o| o.retransmits as f64) / frames,
                rate_cuts: mean(&|o| o.rate_cuts as f64),
                unfinished: outs.iter().filter(|(_, o)| !o.finished).count() as u32,
                seeds: r.seeds.max(1),
            });
        }
    }
    RmtpReport {
        name: sc.name.clone(),
        rows,
    }
}
