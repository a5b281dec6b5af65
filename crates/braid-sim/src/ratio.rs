//! A scenario swept over a parameter (`[sweep]` in the scenario file): the
//! whole scenario is run once per value and every scheme gives one row per
//! value. Two paths share a total rate split `r : 1`; x is either the
//! bandwidth ratio r at a fixed total (Phatak et al. Figs 4 and 6) or the
//! total at a fixed r (Fig 5).

use serde::Serialize;

use crate::scenario::Scenario;
use crate::sweep::{self, SweepOptions};

/// One scheme at one value of x.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub scheme: String,
    pub x: f64,
    /// TCP payload delivered in order, kbit/s.
    pub goodput_kbps: f64,
    /// The paths' total rate, kbit/s (Fig 4's "raw bandwidth").
    pub raw_kbps: f64,
    /// `goodput_kbps / raw_kbps`, Fig 4's first curve.
    pub goodput_share: f64,
    /// The faster path's share of the raw rate, `r/(r+1)`: what that path
    /// alone could carry at best.
    pub faster_path_share: f64,
    pub fast_retransmits: f64,
    /// TCP packets that crossed the slower path (its payload delivered at
    /// the client divided by the segment size).
    pub slow_path_packets: f64,
    /// Fig 4's second curve: fast retransmits per packet sent on the slower
    /// path, percent.
    pub fast_retransmit_pct: f64,
    pub timeouts: f64,
    pub dupacks: f64,
    /// The sum of one TCP per path (MTCP at the same x), where the scenario
    /// runs MTCP: PRISM's "Ideal".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ideal_kbps: Option<f64>,
    /// PRISM Fig 14's mean re-sequencing buffer at the TCP receiver.
    pub mean_buffer_pkts: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RatioReport {
    pub scenario: String,
    pub description: String,
    pub notes: String,
    pub duration_s: f64,
    /// Seconds at the start left out of goodput (`Scenario::warmup_s`).
    pub warmup_s: f64,
    pub seeds: u32,
    /// What x is.
    pub param: String,
    pub rows: Vec<Row>,
}

/// The scenario with its two paths sharing `total_kbps` in the ratio `r : 1`.
pub fn at_ratio(sc: &Scenario, r: f64, total_kbps: f64) -> Scenario {
    let mut s = sc.clone();
    s.sweep = None;
    s.paths[0].rate_kbps = total_kbps * r / (r + 1.0);
    s.paths[1].rate_kbps = total_kbps / (r + 1.0);
    s
}

/// The scenario at `x` of its `[sweep]` (see [`crate::scenario::SweepSpec`]
/// for what each parameter changes), with the raw rate of its paths and
/// the faster path's share of it.
pub fn at_x(sc: &Scenario, x: f64) -> (Scenario, f64, f64) {
    let sw = sc.sweep.as_ref().expect("scenario has a [sweep]");
    let mut s = sc.clone();
    s.sweep = None;
    let path = sw.path.unwrap_or(1).min(s.paths.len() - 1);
    match sw.param.as_str() {
        "bandwidth_ratio" | "total_rate_kbps" => {
            let (total, r) = sw.at(x);
            return (at_ratio(sc, r, total), total, r / (r + 1.0));
        }
        "links" => s.paths.truncate((x as usize).clamp(1, sc.paths.len())),
        "disparity_pct" => {
            let last = s.paths.len() - 1;
            s.paths[0].rate_kbps *= 1.0 + x / 100.0;
            if last > 0 {
                s.paths[last].rate_kbps *= 1.0 - x / 100.0;
            }
        }
        "delay_disparity_ms" => s.paths[path].wired_delay_ms += x,
        "loss_pct" => s.paths[path].loss = x / 100.0,
        "burst_s" => {
            for o in &mut s.onoff {
                o.on_mean_s = x;
            }
        }
        _ => {}
    }
    let raw: f64 = s.paths.iter().map(|p| p.rate_kbps).sum();
    let fastest = s.paths.iter().map(|p| p.rate_kbps).fold(0.0, f64::max);
    (s, raw, fastest / raw)
}

/// Runs every value of the scenario's `[sweep]`. Panics if it has none
/// (callers check [`Scenario::sweep`]).
pub fn run(sc: &Scenario, opts: &SweepOptions) -> RatioReport {
    let sw = sc.sweep.as_ref().expect("scenario has a [sweep]");
    let mss = f64::from(sc.tcp.config().mss_bytes);
    let mut rows = Vec::new();
    let mut seeds = 0;
    for &x in &sw.values {
        let (s, total, faster_share) = at_x(sc, x);
        let out = sweep::run(&s, opts);
        seeds = out.report.seeds;
        let ideal_kbps = out.report.result("MTCP").map(|m| m.goodput_kbps);
        for row in &out.report.results {
            let slow_kbps = row.per_path_kbps.get(1).copied().unwrap_or(0.0);
            let slow_path_packets = slow_kbps * 1000.0 * sc.duration_s / 8.0 / mss;
            rows.push(Row {
                scheme: row.scheme.clone(),
                x,
                goodput_kbps: row.goodput_kbps,
                raw_kbps: total,
                goodput_share: row.goodput_kbps / total,
                faster_path_share: faster_share,
                fast_retransmits: row.fast_retransmits,
                slow_path_packets,
                fast_retransmit_pct: if slow_path_packets > 0.0 {
                    100.0 * row.fast_retransmits / slow_path_packets
                } else {
                    0.0
                },
                timeouts: row.timeouts,
                dupacks: row.dupacks,
                ideal_kbps,
                mean_buffer_pkts: row.mean_buffer_pkts,
            });
        }
    }
    RatioReport {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        notes: sc.notes.clone(),
        duration_s: sc.duration_s,
        warmup_s: sc.warmup_s,
        seeds,
        param: sw.param.clone(),
        rows,
    }
}

impl RatioReport {
    pub fn row(&self, scheme: &str, x: f64) -> Option<&Row> {
        self.rows.iter().find(|r| r.scheme == scheme && r.x == x)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }

    pub fn to_table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "scenario {}: {}", self.scenario, self.description);
        let _ = writeln!(
            s,
            "{} s simulated{}, {} seed(s); x = {}",
            self.duration_s,
            crate::report::warmup_note(self.warmup_s),
            self.seeds,
            self.param
        );
        let _ = writeln!(
            s,
            "{:<13} {:>6} {:>10} {:>7} {:>7} {:>9} {:>8} {:>8} {:>9} {:>7}",
            "scheme",
            "x",
            "kbit/s",
            "share",
            "fast",
            "fast rtx",
            "rtx %",
            "timeouts",
            "ideal",
            "buffer"
        );
        for r in &self.rows {
            let ideal = r
                .ideal_kbps
                .map_or_else(|| "-".to_string(), |k| format!("{k:.1}"));
            let _ = writeln!(
                s,
                "{:<13} {:>6} {:>10.1} {:>7.3} {:>7.3} {:>9.1} {:>8.2} {:>8.1} {:>9} {:>7.2}",
                r.scheme,
                r.x,
                r.goodput_kbps,
                r.goodput_share,
                r.faster_path_share,
                r.fast_retransmits,
                r.fast_retransmit_pct,
                r.timeouts,
                ideal,
                r.mean_buffer_pkts
            );
        }
        if !self.notes.is_empty() {
            let _ = writeln!(s, "notes: {}", self.notes.trim());
        }
        s
    }
}
