//! A scenario swept over a parameter (`[sweep]` in the scenario file): the
//! whole scenario is run once per value and every scheme gives one row per
//! value. The one parameter so far is Phatak et al.'s bandwidth ratio
//! (Fig 4): two paths with a fixed total rate, split `x : 1`.

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
    /// The faster path's share of the raw rate, `x/(x+1)`: what that path
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
}

#[derive(Clone, Debug, Serialize)]
pub struct RatioReport {
    pub scenario: String,
    pub description: String,
    pub notes: String,
    pub duration_s: f64,
    pub seeds: u32,
    /// What x is.
    pub param: String,
    pub rows: Vec<Row>,
}

/// The scenario with its two paths set to the bandwidth ratio `x`.
pub fn at_ratio(sc: &Scenario, x: f64, total_kbps: f64) -> Scenario {
    let mut s = sc.clone();
    s.sweep = None;
    s.paths[0].rate_kbps = total_kbps * x / (x + 1.0);
    s.paths[1].rate_kbps = total_kbps / (x + 1.0);
    s
}

/// Runs every value of the scenario's `[sweep]`. Panics if it has none
/// (callers check [`Scenario::sweep`]).
pub fn run(sc: &Scenario, opts: &SweepOptions) -> RatioReport {
    let sw = sc.sweep.as_ref().expect("scenario has a [sweep]");
    let mss = f64::from(sc.tcp.config().mss_bytes);
    let mut rows = Vec::new();
    let mut seeds = 0;
    for &x in &sw.values {
        let s = at_ratio(sc, x, sw.total_rate_kbps);
        let out = sweep::run(&s, opts);
        seeds = out.report.seeds;
        for r in &out.report.results {
            let slow_kbps = r.per_path_kbps.get(1).copied().unwrap_or(0.0);
            let slow_path_packets = slow_kbps * 1000.0 * sc.duration_s / 8.0 / mss;
            rows.push(Row {
                scheme: r.scheme.clone(),
                x,
                goodput_kbps: r.goodput_kbps,
                raw_kbps: sw.total_rate_kbps,
                goodput_share: r.goodput_kbps / sw.total_rate_kbps,
                faster_path_share: x / (x + 1.0),
                fast_retransmits: r.fast_retransmits,
                slow_path_packets,
                fast_retransmit_pct: if slow_path_packets > 0.0 {
                    100.0 * r.fast_retransmits / slow_path_packets
                } else {
                    0.0
                },
                timeouts: r.timeouts,
                dupacks: r.dupacks,
            });
        }
    }
    RatioReport {
        scenario: sc.name.clone(),
        description: sc.description.clone(),
        notes: sc.notes.clone(),
        duration_s: sc.duration_s,
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
            "{} s simulated, {} seed(s); x = {}",
            self.duration_s, self.seeds, self.param
        );
        let _ = writeln!(
            s,
            "{:<9} {:>5} {:>10} {:>7} {:>7} {:>9} {:>8} {:>8}",
            "scheme", "x", "kbit/s", "share", "fast", "fast rtx", "rtx %", "timeouts"
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:<9} {:>5} {:>10.1} {:>7.3} {:>7.3} {:>9.1} {:>8.2} {:>8.1}",
                r.scheme,
                r.x,
                r.goodput_kbps,
                r.goodput_share,
                r.faster_path_share,
                r.fast_retransmits,
                r.fast_retransmit_pct,
                r.timeouts
            );
        }
        if !self.notes.is_empty() {
            let _ = writeln!(s, "notes: {}", self.notes.trim());
        }
        s
    }
}
