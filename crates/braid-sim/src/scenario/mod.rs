//! Scenario files: TOML describing the topology of PET/BMP Fig. 1/3 (a
//! server, the proxy, one base station per path, the multi-homed client),
//! the schemes to compare and the cross traffic. Unknown keys are errors so
//! that a typo does not silently fall back to a default.

use serde::Deserialize;

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
    /// PRISM: ADAS, the full reverse-path controller and a TCP-PRISM
    /// sender (PRISM Sections 4-6).
    Prism,
    /// ADAS with the reverse-path controller re-sequencing only (no loss
    /// detection, no NACK) and a plain TCP-SACK sender: Fig 13's partial RPC.
    PrismPartial,
    /// TCP-SACK over ADAS striping without ACK control (PRISM Section 7's
    /// vanilla TCP), as ns-2's agent: a fixed duplicate-ACK threshold.
    Vanilla,
    /// VANILLA with Linux's reordering response (the reordering metric and
    /// the timestamp undo, `TcpConfig::reordering`): the stock TCP-SACK of
    /// PRISM's Linux 2.4 testbed, which Section 7.1.2 describes as having
    /// "both a heuristic decision algorithm and an undo algorithm".
    VanillaLinux,
    /// Round robin.
    Rr,
    /// A uniformly random link per packet (PRISM Fig 12).
    Random,
    /// The link with the smallest expected arrival time hRTT alone (Fig 12).
    HrttOnly,
    /// ADAS's utilization rule alone, ties to the lowest index (Fig 12).
    UOnly,
    /// One link, no proxy: the first path's TCP of the MTCP run (Fig 10).
    NoProxy,
}

impl Scheme {
    pub const ALL: [Scheme; 22] = [
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
        Scheme::Prism,
        Scheme::PrismPartial,
        Scheme::Vanilla,
        Scheme::VanillaLinux,
        Scheme::Rr,
        Scheme::Random,
        Scheme::HrttOnly,
        Scheme::UOnly,
        Scheme::NoProxy,
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
            Scheme::Prism => "PRISM",
            Scheme::PrismPartial => "PRISM-PARTIAL",
            Scheme::Vanilla => "VANILLA",
            Scheme::VanillaLinux => "VANILLA-LINUX",
            Scheme::Rr => "RR",
            Scheme::Random => "RANDOM",
            Scheme::HrttOnly => "HRTT-ONLY",
            Scheme::UOnly => "U-ONLY",
            Scheme::NoProxy => "NO-PROXY",
        }
    }

    pub fn parse(s: &str) -> Option<Scheme> {
        Scheme::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
    }

    /// Whether packets go through the braid tunnel (proxy + client core).
    pub fn tunnelled(self) -> bool {
        !matches!(
            self,
            Scheme::Mtcp | Scheme::Asi | Scheme::Hbi | Scheme::NoProxy
        )
    }

    /// Derived from the MTCP run rather than simulated on its own.
    pub fn derived_from_mtcp(self) -> bool {
        matches!(self, Scheme::Hbi | Scheme::NoProxy)
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
    /// One-way delay of the proxy to base station link, the direction
    /// data takes, ms.
    #[serde(default = "default_wired_delay")]
    pub wired_delay_ms: f64,
    /// One-way delay of the way back, base station to proxy (the
    /// direction of the TCP ACKs), ms; default `wired_delay_ms`. A paper
    /// that quotes a measured delay of data-sized packets (PRISM's
    /// testbed, Section 7.3: "average delay from the UMTS trace with the
    /// packet size of 1 KB") gives the data direction only.
    pub wired_reverse_delay_ms: Option<f64>,
    /// Base-station buffer (bytes), shared by all flows under WFQ.
    #[serde(default = "default_bs_queue")]
    pub queue_bytes: u64,
    /// Uniform channel error rate on the wireless downlink.
    #[serde(default)]
    pub loss: f64,
    /// Uplink rate (client to base station), kbit/s; default = rate_kbps.
    pub uplink_rate_kbps: Option<f64>,
    /// `[join_s, leave_s]`: the path (a PRISM community member) is
    /// scheduled only in this interval of the run (PRISM Fig 8). Packets
    /// already in flight when it leaves still arrive.
    pub active_s: Option<[f64; 2]>,
    /// Link-layer retransmissions on the wireless downlink (a UMTS
    /// member's RLC, `braid_net::rlc`): each packet is delayed by a random
    /// number of TTIs and delivered in sequence. `rlc = {}` takes the
    /// defaults (10 % BLER, 10 ms per retransmission, 4 attempts); the
    /// stream is seeded from the run's seed, the path and `seed`.
    pub rlc: Option<braid_net::RlcParams>,
}

impl PathSpec {
    /// The base station to proxy delay, ms: `wired_reverse_delay_ms`,
    /// else the same as the way out.
    pub fn reverse_delay_ms(&self) -> f64 {
        self.wired_reverse_delay_ms.unwrap_or(self.wired_delay_ms)
    }
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
    /// Seconds at the start whose deliveries goodput leaves out (the lab
    /// bench's `--omit`): goodput is what the measured connection delivers
    /// after them, over the time after them. For figures that report a
    /// steady rate on paths whose slow start takes seconds (PRISM Fig 6:
    /// about 7 s at a 1 s round trip). Counters (retransmissions,
    /// timeouts, per-path rates) still cover the whole run. Default 0.
    #[serde(default)]
    pub warmup_s: f64,
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
    /// PRISM's knobs ([`PrismSpec`]).
    #[serde(default)]
    pub prism: PrismSpec,
    /// On/off background sources onto the paths' bottlenecks (PRISM Fig 12).
    #[serde(default, rename = "onoff")]
    pub onoff: Vec<OnOffSpec>,
}

/// A parameter swept over values, one run of every scheme per value.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// What x is. On two paths whose rates are `total · r/(r+1)` and
    /// `total/(r+1)`: `"bandwidth_ratio"` (r = x at a fixed
    /// `total_rate_kbps`; Phatak et al. Figs 4 and 6) or
    /// `"total_rate_kbps"` (total = x at a fixed `bandwidth_ratio`; Fig 5).
    /// For PRISM's figures: `"links"` (the first x `[[path]]` tables,
    /// Fig 10), `"disparity_pct"` (the first path's rate up by x %, the
    /// last's down by x %, Figs 11 and 13), `"delay_disparity_ms"` (x ms
    /// added to path `path`'s wired delay, Fig 6), `"loss_pct"` (path
    /// `path`'s loss at x %, Fig 7) and `"burst_s"` (every on/off source's
    /// mean on-time, Fig 12).
    pub param: String,
    pub values: Vec<f64>,
    pub total_rate_kbps: Option<f64>,
    pub bandwidth_ratio: Option<f64>,
    /// The path `delay_disparity_ms` and `loss_pct` change (default 1).
    pub path: Option<usize>,
}

/// The sweepable parameters, as `[sweep] param` spells them.
pub const SWEEP_PARAMS: [&str; 7] = [
    "bandwidth_ratio",
    "total_rate_kbps",
    "links",
    "disparity_pct",
    "delay_disparity_ms",
    "loss_pct",
    "burst_s",
];

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
        if !(self.warmup_s >= 0.0 && self.warmup_s < self.duration_s) {
            return bad(
                "warmup_s",
                "must be at least 0 and shorter than duration_s (goodput is measured after it)",
            );
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
        // Every link is a braid_net::QueuedLink, which refuses these.
        if !(self.server.rate_kbps > 0.0 && self.server.rate_kbps.is_finite()) {
            return bad("server.rate_kbps", "must be a positive number of kbit/s");
        }
        if !(self.server.delay_ms >= 0.0 && self.server.delay_ms.is_finite()) {
            return bad("server.delay_ms", "must be >= 0");
        }
        if let Some(c) = &self.cross {
            if !(c.delay_ms >= 0.0 && c.delay_ms.is_finite()) {
                return bad("cross.delay_ms", "must be >= 0");
            }
        }
        for (i, p) in self.paths.iter().enumerate() {
            for (k, v) in [
                ("rate_kbps", p.rate_kbps),
                ("wired_rate_kbps", p.wired_rate_kbps),
                ("uplink_rate_kbps", p.uplink_rate_kbps.unwrap_or(1.0)),
            ] {
                if !(v > 0.0 && v.is_finite()) {
                    return bad(
                        &format!("path[{i}].{k}"),
                        "must be a positive number of kbit/s",
                    );
                }
            }
            for (k, v) in [
                ("wired_delay_ms", p.wired_delay_ms),
                ("wired_reverse_delay_ms", p.reverse_delay_ms()),
            ] {
                if !(v >= 0.0 && v.is_finite()) {
                    return bad(&format!("path[{i}].{k}"), "must be >= 0 ms");
                }
            }
            if !(0.0..1.0).contains(&p.loss) {
                return bad(&format!("path[{i}].loss"), "must be in [0, 1)");
            }
            if let Some(Err(e)) = p.rlc.as_ref().map(|r| r.check()) {
                return bad(&format!("path[{i}].rlc"), &e);
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
        if let Some(p) = self.prism.ack_path {
            if p >= self.paths.len() {
                return bad("prism.ack_path", "must name a [[path]] (0-based index)");
            }
        }
        if !(self.prism.max_hold_ms >= 0.0 && self.prism.max_hold_ms.is_finite()) {
            return bad("prism.max_hold_ms", "must be >= 0 (0 = no bound)");
        }
        for (i, p) in self.paths.iter().enumerate() {
            if let Some([a, b]) = p.active_s {
                if !(a >= 0.0 && b > a) {
                    return bad(
                        &format!("path[{i}].active_s"),
                        "is [join_s, leave_s] with 0 <= join_s < leave_s",
                    );
                }
            }
        }
        for (i, o) in self.onoff.iter().enumerate() {
            if o.path >= self.paths.len() {
                return bad(
                    &format!("onoff[{i}].path"),
                    "must name a [[path]] (0-based index)",
                );
            }
            if !(o.rate_kbps > 0.0 && o.on_mean_s > 0.0 && o.off_s >= 0.0 && o.shape > 1.0) {
                return bad(
                    &format!("onoff[{i}]"),
                    "needs rate_kbps > 0, on_mean_s > 0, off_s >= 0 and shape > 1",
                );
            }
        }
        if let Some(sw) = &self.sweep {
            if !SWEEP_PARAMS.contains(&sw.param.as_str()) {
                return bad(
                    "sweep.param",
                    &format!(
                        "{:?} is not a sweepable parameter; use one of {}",
                        sw.param,
                        SWEEP_PARAMS.join(", ")
                    ),
                );
            }
            if sw.values.is_empty() || sw.values.iter().any(|v| !v.is_finite()) {
                return bad("sweep.values", "must be a non-empty list of numbers");
            }
            let path_ok = sw.path.unwrap_or(1) < self.paths.len();
            let prism_check = match sw.param.as_str() {
                "links" => sw
                    .values
                    .iter()
                    .all(|&v| v >= 1.0 && v.fract() == 0.0 && v as usize <= self.paths.len())
                    .then_some(())
                    .ok_or("sweep.values: each a whole number of links, at most the [[path]] tables given"),
                "disparity_pct" => sw
                    .values
                    .iter()
                    .all(|&v| (0.0..100.0).contains(&v))
                    .then_some(())
                    .ok_or("sweep.values: percentages in [0, 100)"),
                "delay_disparity_ms" => (path_ok && sw.values.iter().all(|&v| v >= 0.0))
                    .then_some(())
                    .ok_or("sweep: values >= 0 ms and `path` naming a [[path]]"),
                "loss_pct" => (path_ok && sw.values.iter().all(|&v| (0.0..100.0).contains(&v)))
                    .then_some(())
                    .ok_or("sweep: values in [0, 100) % and `path` naming a [[path]]"),
                "burst_s" => (!self.onoff.is_empty() && sw.values.iter().all(|&v| v > 0.0))
                    .then_some(())
                    .ok_or("sweep: burst_s needs [[onoff]] sources and values > 0 s"),
                _ => Ok(()),
            };
            if let Err(msg) = prism_check {
                let (key, msg) = msg.split_once(": ").unwrap_or(("sweep", msg));
                return bad(key, msg);
            }
            let two_path = match sw.param.as_str() {
                "bandwidth_ratio" => Some((sw.total_rate_kbps, "sweep.total_rate_kbps")),
                "total_rate_kbps" => Some((sw.bandwidth_ratio, "sweep.bandwidth_ratio")),
                _ => None,
            };
            if let Some((fixed, key)) = two_path {
                if self.paths.len() != 2 {
                    return bad("sweep", "needs exactly two [[path]] tables");
                }
                if sw.values.iter().any(|v| *v < 1.0) {
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

mod prism;
mod tcp;
pub use prism::{OnOffSpec, PrismSpec, RpcMode};
pub use tcp::TcpSpec;

#[cfg(test)]
mod tests;
