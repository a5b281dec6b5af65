//! Runs every (cross scenario, seed, scheme) of a scenario on all cores
//! and collects the results in a fixed order, so parallelism never changes
//! the output. HBI is not simulated separately: as in the paper it is the
//! best single flow of the MTCP run.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::report::{summarise, Report};
use crate::scenario::{Scenario, Scheme};
use crate::world::{RunResult, World};

#[derive(Clone, Debug, Default)]
pub struct SweepOptions {
    /// Overrides the scenario's seed count.
    pub seeds: Option<u32>,
    /// Worker threads (0 = one per core).
    pub threads: usize,
    /// Progress lines on stderr.
    pub progress: bool,
}

/// All runs of a scenario: `runs[scheme][cross][seed]`.
pub struct SweepOutput {
    pub report: Report,
    pub schemes: Vec<Scheme>,
    pub runs: Vec<Vec<Vec<RunResult>>>,
}

struct Job {
    scheme: Scheme,
    cross: u32,
    seed: u64,
}

/// The best MTCP subflow as a run of its own (the paper's HBI).
fn hbi_from(mtcp: &RunResult) -> RunResult {
    let best = (0..mtcp.flow_goodput_kbps.len())
        .max_by(|&a, &b| mtcp.flow_goodput_kbps[a].total_cmp(&mtcp.flow_goodput_kbps[b]))
        .unwrap_or(0);
    subflow_from(mtcp, best)
}

/// MTCP's subflow on path `best` as a run of its own (HBI, NO-PROXY).
fn subflow_from(mtcp: &RunResult, best: usize) -> RunResult {
    let mut series =
        vec![vec![0.0; mtcp.series_kbps.first().map_or(0, |s| s.len())]; mtcp.series_kbps.len()];
    if let Some(s) = mtcp.series_kbps.get(best) {
        series[best] = s.clone();
    }
    RunResult {
        goodput_kbps: mtcp.flow_goodput_kbps.get(best).copied().unwrap_or(0.0),
        dupacks: mtcp.flow_dupacks.get(best).copied().unwrap_or(0),
        retransmits: mtcp.flow_retransmits.get(best).copied().unwrap_or(0),
        timeouts: mtcp.flow_timeouts.get(best).copied().unwrap_or(0),
        series_kbps: series,
        events: 0,
        ..Default::default()
    }
}

pub fn run(sc: &Scenario, opts: &SweepOptions) -> SweepOutput {
    let seeds = opts.seeds.unwrap_or(sc.seeds).max(1);
    let crosses = sc.cross_scenarios();
    let schemes = sc.schemes();
    let mut simulate: Vec<Scheme> = schemes
        .iter()
        .copied()
        .filter(|s| !s.derived_from_mtcp())
        .collect();
    if schemes.iter().any(|s| s.derived_from_mtcp()) && !simulate.contains(&Scheme::Mtcp) {
        simulate.push(Scheme::Mtcp);
    }
    let mut jobs = Vec::new();
    for cross in 0..crosses {
        for s in 0..seeds {
            for &scheme in &simulate {
                jobs.push(Job {
                    scheme,
                    cross,
                    seed: sc.first_seed + s as u64,
                });
            }
        }
    }
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    };
    let results: Vec<Mutex<Option<RunResult>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let tty = std::io::stderr().is_terminal();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(jobs.len()).max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let r = World::new(sc, job.scheme, job.seed, job.cross).run();
                *results[i].lock().expect("no panics while holding") = Some(r);
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                if opts.progress {
                    let n = jobs.len();
                    if tty {
                        eprint!(
                            "\r{}: run {d}/{n} ({} seed {} cross {})   ",
                            sc.name,
                            job.scheme.name(),
                            job.seed,
                            job.cross
                        );
                        if d == n {
                            eprintln!();
                        }
                    } else if n >= 10 && d.is_multiple_of(n / 10) || d == n {
                        eprintln!("{}: {d}/{n} runs done", sc.name);
                    }
                }
            });
        }
    });
    let mut by_job = results
        .into_iter()
        .map(|m| m.into_inner().expect("no poison").expect("every job ran"));
    // runs_sim[scheme][cross][seed] in job order.
    let mut runs_sim: Vec<Vec<Vec<RunResult>>> = simulate
        .iter()
        .map(|_| (0..crosses).map(|_| Vec::new()).collect())
        .collect();
    for job in &jobs {
        let k = simulate
            .iter()
            .position(|s| *s == job.scheme)
            .expect("scheme simulated");
        runs_sim[k][job.cross as usize].push(by_job.next().expect("result per job"));
    }
    let mut runs = Vec::new();
    for &scheme in &schemes {
        let r = if scheme.derived_from_mtcp() {
            let m = simulate
                .iter()
                .position(|s| *s == Scheme::Mtcp)
                .expect("MTCP simulated for HBI and NO-PROXY");
            let derive = |r: &RunResult| {
                if scheme == Scheme::Hbi {
                    hbi_from(r)
                } else {
                    subflow_from(r, 0)
                }
            };
            runs_sim[m]
                .iter()
                .map(|c| c.iter().map(derive).collect())
                .collect()
        } else {
            let k = simulate
                .iter()
                .position(|s| *s == scheme)
                .expect("scheme simulated");
            runs_sim[k].clone()
        };
        runs.push(r);
    }
    let results = schemes
        .iter()
        .zip(&runs)
        .map(|(s, r)| summarise(s.name(), r))
        .collect();
    let report = Report {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        notes: sc.notes.clone(),
        duration_s: sc.duration_s,
        warmup_s: sc.warmup_s,
        seeds,
        cross_scenarios: crosses,
        results,
    };
    SweepOutput {
        report,
        schemes,
        runs,
    }
}
