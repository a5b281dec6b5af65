//! MPLOT's experiments (paper 002 §IV; `SPECS.md` §2.8) in the simulator.
//!
//! [`scenario`] reads `scenarios/mplot-*.toml`; [`world`] runs one
//! (scheme, x, seed) with the shipped `braid_core::mplot` sender and
//! receiver over `braid-net` links; [`run`] sweeps a scenario on all cores
//! and prints one row per (scheme, x), in the format of the other sweeps:
//! `{"scheme", "x", "goodput_kbps", "throughput_kbps", "delay_mean_ms",
//! "delay_std_ms", ...}`.

pub mod scenario;
pub mod tcp_flows;
pub mod world;

use serde::Serialize;

use crate::rows::{Rows, SweepRow};

pub use scenario::{MplotScenario, MplotScenarioError, MplotScheme};
pub use world::{LossModel, RunOutput, RunSpec};

use braid_net::MarkovParams;

/// One row of a sweep: a scheme at one x, averaged over the seeds.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MplotRow {
    pub scheme: String,
    pub x: f64,
    /// All sessions together, kbit/s of stream bytes delivered in order.
    pub goodput_kbps: f64,
    /// All sessions together, kbit/s of data packets arriving (FEC included).
    pub throughput_kbps: f64,
    pub path_throughput_kbps: Vec<f64>,
    /// All sessions together, kbit/s of data packets sent onto the paths
    /// (the sending rate; Table III's throughput, see
    /// [`world::RunOutput::sent_mbps`]).
    pub sent_kbps: f64,
    pub path_sent_kbps: Vec<f64>,
    pub delay_mean_ms: f64,
    pub delay_std_ms: f64,
    /// Standard deviation over time of the senders' aggregate loss
    /// estimate `p̂_agg` (Fig 3's diversity argument).
    pub loss_estimate_std: f64,
    /// The competing TCP-SACK flows (Fig 7), kbit/s of payload arriving.
    pub tcp_throughput_kbps: f64,
    pub tcp_goodput_kbps: f64,
    /// Per-path timeouts per run.
    pub timeouts: f64,
    pub seeds: u32,
}

/// A sweep's rows, in scenario order.
pub type MplotReport = Rows<MplotRow>;

impl SweepRow for MplotRow {
    fn scheme(&self) -> &str {
        &self.scheme
    }
    fn x(&self) -> f64 {
        self.x
    }
}

impl Rows<MplotRow> {
    /// A plain table.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "{}\n{:<9} {:>6} {:>12} {:>14} {:>10} {:>10} {:>10} {:>9} {:>10}\n",
            self.name,
            "scheme",
            "x",
            "goodput Mb/s",
            "throughput",
            "sent",
            "delay ms",
            "delay std",
            "timeouts",
            "TCP Mb/s"
        );
        for r in &self.rows {
            s += &format!(
                "{:<9} {:>6} {:>12.3} {:>14.3} {:>10.3} {:>10.1} {:>10.1} {:>9.0} {:>10.3}\n",
                r.scheme,
                r.x,
                r.goodput_kbps / 1e3,
                r.throughput_kbps / 1e3,
                r.sent_kbps / 1e3,
                r.delay_mean_ms,
                r.delay_std_ms,
                r.timeouts,
                r.tcp_throughput_kbps / 1e3
            );
        }
        s
    }
}

/// The run of `scheme` at sweep value `x` with `seed`.
pub fn spec_for(sc: &MplotScenario, scheme: MplotScheme, x: f64, seed: u64) -> RunSpec {
    let m = &sc.mplot;
    let paths = if m.sweep == "paths" {
        x as usize
    } else {
        m.paths
    };
    let path_rate_mbit = match (m.path_rate_mbit, m.total_rate_mbit) {
        (Some(r), _) => r,
        (None, Some(t)) => t / paths as f64,
        (None, None) => 10.0,
    };
    let loss_iid = if m.sweep == "loss" { x } else { m.loss };
    let p_down = if m.sweep == "p_down" { x } else { m.p_down };
    let loss = match m.loss_model.as_str() {
        "two-state" => LossModel::Markov(MarkovParams::mplot_two_state()),
        "down" => LossModel::Markov(MarkovParams::mplot_with_down(p_down)),
        "bimodal" => LossModel::Markov(world::bimodal(m.loss_lo, m.loss_hi)),
        _ => LossModel::Iid(loss_iid),
    };
    RunSpec {
        scheme,
        paths,
        path_rate_mbit,
        rtt_ms: m.rtt_ms,
        loss,
        theta: if m.sweep == "theta" { x } else { m.theta },
        sessions: m.sessions,
        tcp_per_path: m.tcp_per_path,
        reverse_loss: m.reverse_loss,
        duration_s: m.duration_s,
        warmup_s: m.warmup_s,
        seed,
    }
}

/// Runs every (scheme, x, seed) of the scenario on `threads` threads (0:
/// one per core) and averages over the seeds. The output does not depend
/// on the thread count.
pub fn run(sc: &MplotScenario, threads: usize) -> MplotReport {
    let m = &sc.mplot;
    let mut jobs = Vec::new();
    for scheme in sc.schemes() {
        for &x in &m.values {
            for s in 0..m.seeds {
                jobs.push(spec_for(sc, scheme, x, m.first_seed + u64::from(s)));
            }
        }
    }
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
    .min(jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: std::sync::Mutex<Vec<Option<RunOutput>>> =
        std::sync::Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let r = world::run(job);
                results.lock().expect("no poisoned lock")[i] = Some(r);
            });
        }
    });
    let results: Vec<RunOutput> = results
        .into_inner()
        .expect("no poisoned lock")
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect();
    let mut rows = Vec::new();
    let seeds = m.seeds.max(1) as usize;
    for (chunk, jobs) in results.chunks(seeds).zip(jobs.chunks(seeds)) {
        let n = chunk.len() as f64;
        let avg = |f: &dyn Fn(&RunOutput) -> f64| chunk.iter().map(f).sum::<f64>() / n;
        let paths = chunk[0].path_throughput_mbps.len();
        rows.push(MplotRow {
            scheme: jobs[0].scheme.name().to_string(),
            x: if m.sweep == "paths" {
                jobs[0].paths as f64
            } else if m.sweep == "theta" {
                jobs[0].theta
            } else {
                m.values[rows.len() % m.values.len()]
            },
            goodput_kbps: avg(&|r| r.goodput_mbps) * 1e3,
            throughput_kbps: avg(&|r| r.throughput_mbps) * 1e3,
            path_throughput_kbps: (0..paths)
                .map(|j| avg(&|r| r.path_throughput_mbps[j]) * 1e3)
                .collect(),
            sent_kbps: avg(&|r| r.sent_mbps) * 1e3,
            path_sent_kbps: (0..paths)
                .map(|j| avg(&|r| r.path_sent_mbps[j]) * 1e3)
                .collect(),
            delay_mean_ms: avg(&|r| r.delay_mean_ms),
            delay_std_ms: avg(&|r| r.delay_std_ms),
            loss_estimate_std: avg(&|r| r.loss_estimate_std),
            tcp_throughput_kbps: avg(&|r| r.tcp_throughput_mbps) * 1e3,
            tcp_goodput_kbps: avg(&|r| r.tcp_goodput_mbps) * 1e3,
            timeouts: avg(&|r| r.timeouts as f64),
            seeds: m.seeds,
        });
    }
    MplotReport {
        name: sc.name.clone(),
        rows,
    }
}
