//! Scenario files: TOML describing the topology of PET/BMP Fig. 1/3 (a
//! server, the proxy, one base station per path, the multi-homed client),
//! the schemes to compare and the cross traffic. Unknown keys are errors so
//! that a typo does not silently fall back to a default.

use serde::Deserialize;

use braid_core::time::Duration;

use crate::tcp::TcpConfig;

/// Comparison schemes of PET/BMP Section III-B and VI, by report name.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// One TCP per path, throughputs summed (application-layer striping).
    Mtcp,
    /// One path whose capacity is the sum of all paths'.
    Asi,
    /// The best single path alone (the best flow of the MTCP run).
    Hbi,
    /// Idealised EDPF with known parameters, no client buffering.
    Edpf,
    /// Weighted round robin, no buffering.
    Wrr,
    /// Weighted round robin with BMP at the client.
    WrrBmp,
    /// PET with BMP.
    PetBmp,
    /// PET without client buffering.
    Pet,
    /// MPTCP's default scheduler (lowest RTT) with BMP.
    MinRttBmp,
    /// Phatak et al.'s striping: packets split by rate (surplus round
    /// robin, Fig 4), handed to TCP in arrival order. Runs braid's smooth
    /// weighted round robin with the true rates, which interleaves in the
    /// same proportions.
    Srr,
    /// The same striping with braid's BMP resequencer at the client.
    SrrBmp,
    /// PRISM's ADAS scheduler without ACK control or resequencing.
    Adas,
    /// ADAS with BMP at the client.
    AdasBmp,
}

impl Scheme {
    pub const ALL: [Scheme; 13] = [
        Scheme::Mtcp,
        Scheme::Asi,
        Scheme::Hbi,
        Scheme::Edpf,
        Scheme::Wrr,
        Scheme::WrrBmp,
        Scheme::PetBmp,
        Scheme::Pet,
        Scheme::MinRttBmp,
        Scheme::Srr,
        Scheme::SrrBmp,
        Scheme::Adas,
        Scheme::AdasBmp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scheme::Mtcp => "MTCP",
            Scheme::Asi => "ASI",
            Scheme::Hbi => "HBI",
            Scheme::Edpf => "EDPF",
            Scheme::Wrr => "WRR",
            Scheme::WrrBmp => "WRR-BMP",
            Scheme::PetBmp => "PET-BMP",
            Scheme::Pet => "PET",
            Scheme::MinRttBmp => "MINRTT-BMP",
            Scheme::Srr => "SRR",
            Scheme::SrrBmp => "SRR-BMP",
            Scheme::Adas => "ADAS",
            Scheme::AdasBmp => "ADAS-BMP",
        }
    }

    pub fn parse(s: &str) -> Option<Scheme> {
        Scheme::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }

    /// Whether packets go through the braid tunnel (proxy + client core).
    pub fn tunnelled(self) -> bool {
        !matches!(self, Scheme::Mtcp | Scheme::Asi | Scheme::Hbi)
    }
}

/// One wireless path: proxy -> base station (wired) -> client (wireless).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Wireless (bottleneck) rate at the base station, kbit/s.
    pub rate_kbps: f64,
    /// Proxy to base station link.
    #[serde(default = "default_wired_rate")]
    pub wired_rate_kbps: f64,
    #[serde(default = "default_wired_delay")]
    pub wired_delay_ms: f64,
    /// Base-station buffer (bytes), shared by all flows under WFQ.
    #[serde(default = "default_bs_queue")]
    pub queue_bytes: u64,
    /// Uniform channel error rate on the wireless downlink.
    #[serde(default)]
    pub loss: f64,
    /// Uplink rate (client to base station), kbit/s; default = rate_kbps.
    pub uplink_rate_kbps: Option<f64>,
}

fn default_wired_rate() -> f64 {
    10_000.0
}
fn default_wired_delay() -> f64 {
    50.0
}
fn default_bs_queue() -> u64 {
    10_000_000
}

/// Server to proxy link.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    #[serde(default = "default_wired_rate")]
    pub rate_kbps: f64,
    #[serde(default = "default_server_delay")]
    pub delay_ms: f64,
}

fn default_server_delay() -> f64 {
    15.0
}

impl Default for ServerSpec {
    fn default() -> Self {
        ServerSpec {
            rate_kbps: default_wired_rate(),
            delay_ms: default_server_delay(),
        }
    }
}

/// braid's knobs in the simulation.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BraidSpec {
    /// Bytes the tunnel adds to every data packet on the path. The paper's
    /// ns-2 runs did not charge IP-in-IP encapsulation, hence 0 there.
    #[serde(default)]
    pub tunnel_overhead_bytes: u32,
    /// BMP timer-based loss detection (paper: 0.5 s).
    #[serde(default = "default_loss_timeout")]
    pub loss_timeout_ms: f64,
    /// BMP release pacing as a fraction of the mean inter-arrival gap.
    #[serde(default = "default_pace")]
    pub pace_fraction: f64,
    /// Feedback entries per frame (1 = a SIG-ACK per packet as in the paper).
    #[serde(default = "default_fb_entries")]
    pub feedback_max_entries: usize,
    /// BMP buffer bound.
    #[serde(default = "default_reorder_buffer")]
    pub max_buffer_bytes: usize,
    /// EWMA weight of a new packet-pair sample.
    #[serde(default = "default_bw_weight")]
    pub bw_weight_new: f64,
    /// PET probes a path left unused this long.
    #[serde(default = "default_probe")]
    pub probe_interval_ms: f64,
    /// Hold a pair's first packet on a path without a bandwidth estimate
    /// for its partner (`SenderConfig::hold_unmeasured_pairs`); false is
    /// the paper's open-loop PET.
    #[serde(default = "default_true")]
    pub hold_unmeasured_pairs: bool,
}

fn default_true() -> bool {
    true
}

fn default_loss_timeout() -> f64 {
    500.0
}
fn default_pace() -> f64 {
    0.5
}
fn default_fb_entries() -> usize {
    1
}
fn default_reorder_buffer() -> usize {
    4 << 20
}
fn default_bw_weight() -> f64 {
    0.8
}
fn default_probe() -> f64 {
    1000.0
}

impl Default for BraidSpec {
    fn default() -> Self {
        toml::from_str("").expect("defaults parse")
    }
}

/// Random cross traffic at each base station (PET/BMP Section III-A, VI-C).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossSpec {
    /// Number of randomly drawn cross-traffic scenarios.
    #[serde(default = "default_cross_scenarios")]
    pub scenarios: u32,
    /// Inclusive range of FTP flows per base station.
    pub ftp: [u32; 2],
    /// Inclusive range of web clients per base station.
    pub web: [u32; 2],
    /// FTP transfer size range, kbytes (uniform).
    #[serde(default = "default_ftp_size")]
    pub ftp_size_kbytes: [f64; 2],
    /// Mean think time between web requests, seconds (exponential).
    #[serde(default = "default_think")]
    pub web_think_mean_s: f64,
    /// Mean web object size, kbytes (Pareto).
    #[serde(default = "default_web_size")]
    pub web_size_mean_kbytes: f64,
    /// Pareto shape of web object sizes.
    #[serde(default = "default_web_shape")]
    pub web_size_shape: f64,
    /// One-way delay from the cross-traffic servers to the base station.
    #[serde(default = "default_cross_delay")]
    pub delay_ms: f64,
}

fn default_cross_scenarios() -> u32 {
    10
}
fn default_ftp_size() -> [f64; 2] {
    [200.0, 2000.0]
}
fn default_think() -> f64 {
    5.0
}
fn default_web_size() -> f64 {
    12.0
}
fn default_web_shape() -> f64 {
    1.2
}
fn default_cross_delay() -> f64 {
    65.0
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Why a number may differ from the paper's, for the report.
    #[serde(default)]
    pub notes: String,
    #[serde(default = "default_duration")]
    pub duration_s: f64,
    #[serde(default = "default_seeds")]
    pub seeds: u32,
    #[serde(default = "default_first_seed")]
    pub first_seed: u64,
    pub schemes: Vec<String>,
    #[serde(default)]
    pub server: ServerSpec,
    #[serde(rename = "path")]
    pub paths: Vec<PathSpec>,
    #[serde(default)]
    pub tcp: TcpSpec,
    #[serde(default)]
    pub braid: BraidSpec,
    pub cross: Option<CrossSpec>,
    /// Run the scenario once per value of a parameter ([`crate::ratio`]).
    pub sweep: Option<SweepSpec>,
}

/// A parameter swept over values, one run of every scheme per value, on
/// two paths whose rates are `total · r/(r+1)` and `total/(r+1)`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// What x is: `"bandwidth_ratio"` (r = x at a fixed
    /// `total_rate_kbps`; Phatak et al. Figs 4 and 6) or
    /// `"total_rate_kbps"` (total = x at a fixed `bandwidth_ratio`; Fig 5).
    pub param: String,
    pub values: Vec<f64>,
    pub total_rate_kbps: Option<f64>,
    pub bandwidth_ratio: Option<f64>,
}

impl SweepSpec {
    /// The two paths' total rate (kbit/s) and bandwidth ratio at `x`.
    pub fn at(&self, x: f64) -> (f64, f64) {
        if self.param == "total_rate_kbps" {
            (x, self.bandwidth_ratio.unwrap_or(1.0))
        } else {
            (self.total_rate_kbps.unwrap_or(1.0), x)
        }
    }
}

fn default_duration() -> f64 {
    60.0
}
fn default_seeds() -> u32 {
    1
}
fn default_first_seed() -> u64 {
    1
}

/// TCP settings a scenario may override; the rest are ns-2's defaults
/// ([`TcpConfig::default`]).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    pub mss_bytes: Option<u32>,
    pub header_bytes: Option<u32>,
    pub max_cwnd_pkts: Option<u32>,
    pub max_burst: Option<u32>,
    pub delayed_ack: Option<bool>,
    pub sack: Option<bool>,
    pub min_rto_ms: Option<f64>,
    pub initial_rto_ms: Option<f64>,
}

impl TcpSpec {
    pub fn config(&self) -> TcpConfig {
        let mut c = TcpConfig::default();
        if let Some(v) = self.mss_bytes {
            c.mss_bytes = v;
        }
        if let Some(v) = self.header_bytes {
            c.header_bytes = v;
        }
        if let Some(v) = self.max_cwnd_pkts {
            c.max_cwnd_pkts = v;
        }
        if let Some(v) = self.max_burst {
            c.max_burst = v;
        }
        if let Some(v) = self.delayed_ack {
            c.delayed_ack = v;
        }
        if let Some(v) = self.sack {
            c.sack = v;
        }
        if let Some(v) = self.min_rto_ms {
            c.min_rto = Duration::from_secs_f64(v / 1e3);
        }
        if let Some(v) = self.initial_rto_ms {
            c.initial_rto = Duration::from_secs_f64(v / 1e3);
        }
        c
    }
}

/// A scenario file that cannot be used, with what to change.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read {path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("{path}: {msg}")]
    Parse { path: String, msg: String },
    #[error("{path}: `{key}` {msg}")]
    Invalid {
        path: String,
        key: String,
        msg: String,
    },
}

impl Scenario {
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| ScenarioError::Io {
            path: p.clone(),
            err,
        })?;
        Self::parse(&text, &p)
    }

    /// Parses and validates; `origin` names the source in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            path: origin.into(),
            msg: e.to_string(),
        })?;
        s.validate(origin)?;
        Ok(s)
    }

    fn validate(&self, origin: &str) -> Result<(), ScenarioError> {
        let bad = |key: &str, msg: &str| {
            Err(ScenarioError::Invalid {
                path: origin.into(),
                key: key.into(),
                msg: msg.into(),
            })
        };
        if self.paths.is_empty() || self.paths.len() > braid_core::path::MAX_PATHS {
            return bad("path", "needs between 1 and 16 [[path]] tables");
        }
        if !(self.duration_s > 0.0 && self.duration_s <= 86_400.0) {
            return bad("duration_s", "must be in (0, 86400] seconds");
        }
        if self.seeds == 0 {
            return bad("seeds", "must be at least 1");
        }
        if self.schemes.is_empty() {
            return bad(
                "schemes",
                "lists no scheme; use e.g. [\"MTCP\", \"PET-BMP\"]",
            );
        }
        for name in &self.schemes {
            if Scheme::parse(name).is_none() {
                let all: Vec<&str> = Scheme::ALL.iter().map(|s| s.name()).collect();
                return bad(
                    "schemes",
                    &format!("has unknown scheme {name:?}; known: {}", all.join(", ")),
                );
            }
        }
        for (i, p) in self.paths.iter().enumerate() {
            for (k, v) in [
                ("rate_kbps", p.rate_kbps),
                ("wired_rate_kbps", p.wired_rate_kbps),
            ] {
                if !(v > 0.0 && v.is_finite()) {
                    return bad(
                        &format!("path[{i}].{k}"),
                        "must be a positive number of kbit/s",
                    );
                }
            }
            if !(p.wired_delay_ms >= 0.0 && p.wired_delay_ms.is_finite()) {
                return bad(&format!("path[{i}].wired_delay_ms"), "must be >= 0");
            }
            if !(0.0..1.0).contains(&p.loss) {
                return bad(&format!("path[{i}].loss"), "must be in [0, 1)");
            }
        }
        if let Some(c) = &self.cross {
            if c.ftp[0] > c.ftp[1] || c.web[0] > c.web[1] {
                return bad(
                    "cross.ftp/cross.web",
                    "ranges are [min, max] with min <= max",
                );
            }
            if c.ftp[1] > 100 || c.web[1] > 200 {
                return bad(
                    "cross.ftp/cross.web",
                    "at most 100 FTP and 200 web sources per base station",
                );
            }
        }
        if let Some(sw) = &self.sweep {
            let (fixed, key) = match sw.param.as_str() {
                "bandwidth_ratio" => (sw.total_rate_kbps, "sweep.total_rate_kbps"),
                "total_rate_kbps" => (sw.bandwidth_ratio, "sweep.bandwidth_ratio"),
                other => {
                    return bad(
                        "sweep.param",
                        &format!(
                            "{other:?} is not a sweepable parameter; use \"bandwidth_ratio\" or \"total_rate_kbps\""
                        ),
                    )
                }
            };
            if self.paths.len() != 2 {
                return bad("sweep", "needs exactly two [[path]] tables");
            }
            if sw.values.is_empty() || sw.values.iter().any(|v| !(v.is_finite() && *v >= 1.0)) {
                return bad(
                    "sweep.values",
                    "must be a non-empty list of numbers >= 1 (ratios, or kbit/s)",
                );
            }
            match fixed {
                Some(v) if v.is_finite() && v >= 1.0 => {}
                _ => {
                    return bad(
                        key,
                        &format!("must be given (>= 1) when sweeping {}", sw.param),
                    )
                }
            }
        }
        if self.tcp.max_cwnd_pkts == Some(0) {
            return bad("tcp.max_cwnd_pkts", "must be at least 1");
        }
        Ok(())
    }

    pub fn schemes(&self) -> Vec<Scheme> {
        self.schemes
            .iter()
            .filter_map(|s| Scheme::parse(s))
            .collect()
    }

    /// Number of cross-traffic scenarios (1 when there is no cross traffic).
    pub fn cross_scenarios(&self) -> u32 {
        self.cross.as_ref().map_or(1, |c| c.scenarios.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = "name = 'x'\nschemes = ['MTCP']\n[[path]]\nrate_kbps = 100\n";

    #[test]
    fn minimal_file_parses_with_defaults() {
        let s = Scenario::parse(MIN, "t").unwrap();
        assert_eq!(s.paths[0].wired_delay_ms, 50.0);
        assert_eq!(s.braid.loss_timeout_ms, 500.0);
        assert_eq!(s.tcp.config().max_cwnd_pkts, 50);
    }

    #[test]
    fn errors_name_the_key() {
        let e = Scenario::parse(&MIN.replace("MTCP", "FOO"), "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("schemes") && e.contains("FOO") && e.contains("PET-BMP"),
            "{e}"
        );
        let e = Scenario::parse(&format!("{MIN}loss = 2.0\n"), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("path[0].loss"), "{e}");
        let two =
            "name = 'x'\nschemes = ['SRR']\n[[path]]\nrate_kbps = 1\n[[path]]\nrate_kbps = 1\n";
        let e = Scenario::parse(
            &format!("{two}[sweep]\nparam = 'delay'\nvalues = [1]\n"),
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("sweep.param") && e.contains("bandwidth_ratio"),
            "{e}"
        );
        let e = Scenario::parse(
            &format!("{two}[sweep]\nparam = 'bandwidth_ratio'\nvalues = [2]\n"),
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sweep.total_rate_kbps"), "{e}");
        let e = Scenario::parse(
            &format!(
                "{MIN}[sweep]\nparam = 'bandwidth_ratio'\nvalues = [2]\ntotal_rate_kbps = 10\n"
            ),
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("two [[path]]"), "{e}");
        let s = Scenario::parse(
            &format!(
                "{two}[sweep]\nparam = 'total_rate_kbps'\nvalues = [100]\nbandwidth_ratio = 3\n"
            ),
            "t",
        )
        .unwrap();
        assert_eq!(s.sweep.unwrap().at(100.0), (100.0, 3.0));
        let e = Scenario::parse(&format!("{MIN}colour = 1\n"), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
    }
}
