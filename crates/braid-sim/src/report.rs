//! Aggregated results of a scenario: a table for people, JSON for tools.
//! The JSON holds only simulated quantities (no wall-clock time), so the
//! same scenario and seeds give byte-identical output.

use serde::Serialize;

use crate::world::RunResult;

/// One scheme's results, averaged over seeds and cross-traffic scenarios.
#[derive(Clone, Debug, Serialize)]
pub struct SchemeSummary {
    pub scheme: String,
    /// Mean goodput of the main connection (payload delivered in order).
    pub goodput_kbps: f64,
    /// Standard deviation and range over all runs.
    pub goodput_kbps_std: f64,
    pub goodput_kbps_min: f64,
    pub goodput_kbps_max: f64,
    /// Means over runs of the TCP sender's counters.
    pub dupacks: f64,
    pub retransmits: f64,
    pub fast_retransmits: f64,
    pub timeouts: f64,
    pub runs: usize,
    /// Mean goodput per cross-traffic scenario (one entry without cross traffic).
    pub per_scenario_kbps: Vec<f64>,
    /// Mean main-flow throughput per path over the run.
    pub per_path_kbps: Vec<f64>,
    /// BMP losses declared (timer, comparison, previous-on-path), mean per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bmp_losses: Option<[f64; 3]>,
    /// Drops at the base stations (queue overflow, channel errors), mean per run.
    pub bs_drops_queue: f64,
    pub bs_drops_loss: f64,
    pub events: u64,
    /// PRISM Fig 14's mean re-sequencing buffer at the TCP receiver
    /// (packets), mean over runs.
    pub mean_buffer_pkts: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub scenario: String,
    pub description: String,
    pub notes: String,
    pub duration_s: f64,
    /// Seconds at the start left out of goodput (`Scenario::warmup_s`).
    pub warmup_s: f64,
    pub seeds: u32,
    pub cross_scenarios: u32,
    pub results: Vec<SchemeSummary>,
}

/// What a table's first line adds for a scenario's warm-up:
/// " (goodput after the first N s)", or nothing without one.
pub(crate) fn warmup_note(warmup_s: f64) -> String {
    if warmup_s > 0.0 {
        format!(" (goodput after the first {warmup_s} s)")
    } else {
        String::new()
    }
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// Summarises the runs of one scheme; `runs[c]` are the seeds of cross scenario c.
pub fn summarise(scheme: &str, runs: &[Vec<RunResult>]) -> SchemeSummary {
    let all: Vec<&RunResult> = runs.iter().flatten().collect();
    let g: Vec<f64> = all.iter().map(|r| r.goodput_kbps).collect();
    let m = mean(g.iter().copied());
    let var = mean(g.iter().map(|x| (x - m) * (x - m)));
    let n_paths = all.iter().map(|r| r.series_kbps.len()).max().unwrap_or(0);
    let per_path_kbps = (0..n_paths)
        .map(|p| {
            mean(all.iter().map(|r| {
                let s = r.series_kbps.get(p).map(|s| s.as_slice()).unwrap_or(&[]);
                s.iter().sum::<f64>() / s.len().max(1) as f64
            }))
        })
        .collect();
    let bmp_losses = if all.iter().any(|r| r.reorder.is_some()) {
        let f = |k: fn(&braid_core::reorder::ReorderStats) -> u64| {
            mean(
                all.iter()
                    .filter_map(|r| r.reorder.as_ref())
                    .map(|s| k(s) as f64),
            )
        };
        Some([
            f(|s| s.lost_timer),
            f(|s| s.lost_comparison),
            f(|s| s.lost_prev_link),
        ])
    } else {
        None
    };
    SchemeSummary {
        scheme: scheme.to_string(),
        goodput_kbps: m,
        goodput_kbps_std: var.sqrt(),
        goodput_kbps_min: g.iter().copied().fold(f64::INFINITY, f64::min),
        goodput_kbps_max: g.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        dupacks: mean(all.iter().map(|r| r.dupacks as f64)),
        retransmits: mean(all.iter().map(|r| r.retransmits as f64)),
        fast_retransmits: mean(all.iter().map(|r| r.fast_retransmits as f64)),
        timeouts: mean(all.iter().map(|r| r.timeouts as f64)),
        runs: all.len(),
        per_scenario_kbps: runs
            .iter()
            .map(|c| mean(c.iter().map(|r| r.goodput_kbps)))
            .collect(),
        per_path_kbps,
        bmp_losses,
        bs_drops_queue: mean(all.iter().map(|r| r.bs_drops_queue as f64)),
        bs_drops_loss: mean(all.iter().map(|r| r.bs_drops_loss as f64)),
        events: all.iter().map(|r| r.events).sum(),
        mean_buffer_pkts: mean(all.iter().map(|r| r.mean_buffer_pkts)),
    }
}

impl Report {
    pub fn result(&self, scheme: &str) -> Option<&SchemeSummary> {
        self.results.iter().find(|r| r.scheme == scheme)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }

    /// A plain-text table like the paper's Table I.
    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "scenario {}: {}", self.scenario, self.description);
        let _ = writeln!(
            s,
            "{} s simulated{}, {} seed(s) x {} cross-traffic scenario(s)",
            self.duration_s,
            warmup_note(self.warmup_s),
            self.seeds,
            self.cross_scenarios
        );
        let _ = writeln!(
            s,
            "{:<11} {:>10} {:>8} {:>9} {:>8} {:>8}  per path (kbit/s)",
            "scheme", "kbit/s", "+-", "dupacks", "retrans", "timeouts"
        );
        for r in &self.results {
            let paths: Vec<String> = r.per_path_kbps.iter().map(|k| format!("{k:.1}")).collect();
            let _ = writeln!(
                s,
                "{:<11} {:>10.1} {:>8.1} {:>9.1} {:>8.1} {:>8.1}  {}",
                r.scheme,
                r.goodput_kbps,
                r.goodput_kbps_std,
                r.dupacks,
                r.retransmits,
                r.timeouts,
                paths.join(" / ")
            );
        }
        if !self.notes.is_empty() {
            let _ = writeln!(s, "notes: {}", self.notes.trim());
        }
        s
    }
}
