//! Lab description files (`lab/*.toml`).
//!
//! A lab file names a scenario and lists the emulated paths. Every path has
//! two directions: **up** (client -> proxy) and **down** (proxy -> client).
//! Plain keys (`rate_mbit`, `delay_ms`, `queue_bytes`, `loss`) apply to both
//! directions; `up_*` / `down_*` keys override one direction. Unknown keys are
//! rejected (serde `deny_unknown_fields`) so that a typo such as `rate_mbps`
//! fails loudly instead of silently producing an unshaped path.
//!
//! [`LabConfig::validate`] checks value ranges and reports the offending key
//! together with a hint on how to fix it; [`LabConfig::resolve`] turns the
//! sparse user description into fully-specified per-direction parameters that
//! the emulator consumes.
//!
//! Files: the types, parsing and resolution here; the range checks in
//! `validate`; the parser errors' fix-it hints in `hint`.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

mod hint;
#[cfg(test)]
mod tests;
mod validate;

use hint::parse_hint;

/// Maximum number of paths: addresses are 10.77.<i>.x and kernel MPTCP
/// allows at most 8 subflows.
pub const MAX_PATHS: usize = 8;
/// Highest rate the userspace emulator is meant to shape accurately.
pub const MAX_RATE_MBIT: f64 = 1000.0;
/// Largest Ethernet frame we relay (MTU 1500 + 14 byte header).
pub const MAX_FRAME_BYTES: u64 = 1514;
/// Largest IP packet (MTU).
pub const MTU_BYTES: u64 = 1500;
/// Floor for the default (BDP-sized) queue so very short paths still buffer
/// a few packets.
pub const MIN_DEFAULT_QUEUE_BYTES: u64 = 4 * MTU_BYTES;

/// Error produced while loading or validating a lab file. The message names
/// the bad key (e.g. `path[1].rate_mbit`) and says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read lab file {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("{origin}: invalid `{key}`: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
}

/// Gilbert-Elliott two-state loss model (per direction, independent state).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertConfig {
    /// Per-packet probability of moving from the good to the bad state.
    pub p_good_bad: f64,
    /// Per-packet probability of moving from the bad to the good state.
    pub p_bad_good: f64,
    /// Loss probability while in the bad state (default 1.0).
    #[serde(default = "one")]
    pub loss_bad: f64,
    /// Loss probability while in the good state (default 0.0).
    #[serde(default)]
    pub loss_good: f64,
}

/// Link-layer retransmission jitter of a radio link (`rlc = { ... }` on a
/// path, both directions): each packet's radio block is sent up to
/// `max_attempts` times, every attempt fails with probability
/// `block_error`, each failure adds `retx_ms` before the packet is
/// delivered, and delivery stays in sequence, so the packets behind a
/// retransmitted one wait for it (cellular HARQ/RLC acknowledged mode).
/// The path's rate is unchanged; nothing is lost to it. Draws are per
/// packet, which matches a radio that sends about one packet per
/// transmission interval (LTE's 1 ms at about 10 Mbit/s); on much faster
/// paths it overstates the jitter. The simulator runs the same model
/// (`braid_net::rlc`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RlcConfig {
    /// Probability that one attempt fails (the block error rate, 0..1).
    pub block_error: f64,
    /// Delay each retransmission adds, ms (LTE's HARQ round trip: 8).
    pub retx_ms: f64,
    /// Attempts at most, the first included (default 4).
    #[serde(default = "four")]
    pub max_attempts: u32,
}

fn four() -> u32 {
    4
}

fn one() -> f64 {
    1.0
}

/// One step of a time-varying path: from `at_s` seconds after the emulator
/// starts, the given values replace the current ones (unset values keep
/// their previous setting).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceEntry {
    pub at_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_rate_mbit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_rate_mbit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_delay_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_delay_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
}

/// One emulated path as written in the lab file (`[[path]]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_rate_mbit: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_rate_mbit: Option<f64>,
    /// One-way delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_delay_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_delay_ms: Option<f64>,
    /// Drop-tail limit in IP bytes; default one bandwidth-delay product.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_queue_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_queue_bytes: Option<u64>,
    /// ECN marking threshold in IP bytes, both directions: an ECN-capable
    /// packet (ECT(0)/ECT(1) in its IP header) that finds more than this
    /// queued is forwarded marked CE (RFC 3168 §5) instead of waiting for
    /// the drop-tail limit. Unset: no marking (packets not ECN-capable never
    /// see it either way). Must be below the direction's queue limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_mark_bytes: Option<u64>,
    /// Bernoulli loss probability (0..1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_loss: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_loss: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gilbert: Option<GilbertConfig>,
    /// Link-layer retransmission jitter, both directions ([`RlcConfig`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlc: Option<RlcConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TraceEntry>,
}

/// A whole lab file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabConfig {
    pub name: String,
    /// Seed for the loss RNGs (default 1) so runs are repeatable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(rename = "path", default)]
    pub paths: Vec<PathConfig>,
}

/// Link direction through the emulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client -> proxy (braid-cli -> braid-prx).
    Up,
    /// Proxy -> client.
    Down,
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::Up, Direction::Down];
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Down => "down",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Loss process of one direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossSpec {
    None,
    Bernoulli(f64),
    Gilbert(GilbertConfig),
}

/// Fully resolved trace step for one direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DirTraceStep {
    pub at_s: f64,
    pub rate_bps: Option<f64>,
    pub delay_s: Option<f64>,
    pub loss: Option<f64>,
}

/// Fully resolved parameters of one path direction (what the emulator runs).
#[derive(Debug, Clone, PartialEq)]
pub struct DirParams {
    pub rate_bps: f64,
    pub delay_s: f64,
    pub queue_bytes: u64,
    /// Queued bytes above which an ECN-capable arrival is marked CE.
    pub ecn_mark_bytes: Option<u64>,
    pub loss: LossSpec,
    /// Link-layer retransmission jitter, if the path has it.
    pub rlc: Option<RlcConfig>,
    pub trace: Vec<DirTraceStep>,
}

impl LabConfig {
    /// Parse and validate TOML text. `origin` (a file name) prefixes errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<LabConfig, ConfigError> {
        let cfg: LabConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: origin.to_string(),
            message: parse_hint(e.to_string()),
        })?;
        cfg.validate_with_origin(origin)?;
        Ok(cfg)
    }

    /// Serialize back to TOML (used to hand the config to the emulator).
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).expect("LabConfig is always TOML-serializable")
    }

    /// Check every value; the error names the offending key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_with_origin(&format!("lab `{}`", self.name))
    }

    /// Resolved parameters of path `i` in direction `dir`.
    ///
    /// Panics if `i` is out of range; call on a validated config.
    pub fn resolve(&self, i: usize, dir: Direction) -> DirParams {
        let p = &self.paths[i];
        let pick = |up: Option<f64>, down: Option<f64>, both: Option<f64>| match dir {
            Direction::Up => up.or(both),
            Direction::Down => down.or(both),
        };
        let rate_mbit =
            pick(p.up_rate_mbit, p.down_rate_mbit, p.rate_mbit).expect("validated: rate set");
        let delay_ms = pick(p.up_delay_ms, p.down_delay_ms, p.delay_ms).unwrap_or(0.0);
        let rtt_ms = p.up_delay_ms.or(p.delay_ms).unwrap_or(0.0)
            + p.down_delay_ms.or(p.delay_ms).unwrap_or(0.0);
        let queue = match dir {
            Direction::Up => p.up_queue_bytes.or(p.queue_bytes),
            Direction::Down => p.down_queue_bytes.or(p.queue_bytes),
        };
        let queue_bytes =
            queue.unwrap_or_else(|| bdp_bytes(rate_mbit, rtt_ms).max(MIN_DEFAULT_QUEUE_BYTES));
        let loss = if let Some(g) = p.gilbert {
            LossSpec::Gilbert(g)
        } else {
            match pick(p.up_loss, p.down_loss, p.loss) {
                Some(l) if l > 0.0 => LossSpec::Bernoulli(l),
                _ => LossSpec::None,
            }
        };
        let trace = p
            .trace
            .iter()
            .map(|e| DirTraceStep {
                at_s: e.at_s,
                rate_bps: pick(e.up_rate_mbit, e.down_rate_mbit, e.rate_mbit).map(|r| r * 1e6),
                delay_s: pick(e.up_delay_ms, e.down_delay_ms, e.delay_ms).map(|d| d / 1e3),
                loss: e.loss,
            })
            .collect();
        DirParams {
            rate_bps: rate_mbit * 1e6,
            delay_s: delay_ms / 1e3,
            queue_bytes,
            ecn_mark_bytes: p.ecn_mark_bytes,
            loss,
            rlc: p.rlc,
            trace,
        }
    }

    /// Configured (initial) rate of each path in one direction, in Mbit/s.
    pub fn rates_mbit(&self, dir: Direction) -> Vec<f64> {
        (0..self.paths.len())
            .map(|i| self.resolve(i, dir).rate_bps / 1e6)
            .collect()
    }

    /// Sum of the configured path rates in one direction, in Mbit/s.
    pub fn sum_rate_mbit(&self, dir: Direction) -> f64 {
        self.rates_mbit(dir).iter().sum()
    }

    /// Index of the best single path in `dir`: highest rate, ties broken by
    /// the lower round-trip delay.
    pub fn best_path(&self, dir: Direction) -> usize {
        let rtt = |i: usize| {
            self.resolve(i, Direction::Up).delay_s + self.resolve(i, Direction::Down).delay_s
        };
        let rates = self.rates_mbit(dir);
        // Reverse so that on a complete tie max_by (which keeps the last
        // maximum) picks the lowest index.
        (0..self.paths.len())
            .rev()
            .max_by(|&a, &b| {
                rates[a]
                    .total_cmp(&rates[b])
                    .then(rtt(b).total_cmp(&rtt(a)))
            })
            .unwrap_or(0)
    }
}

/// Load and validate a lab file.
pub fn load_config(path: impl AsRef<Path>) -> Result<LabConfig, ConfigError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.display().to_string(),
        source,
    })?;
    LabConfig::from_toml_str(&text, &path.display().to_string())
}

/// Load and validate `lab/NAME.toml` of this source tree: the shipped lab
/// files, for the workspace's tests and diagnostics (which run from the
/// tree, not from an installation).
pub fn shipped(name: &str) -> Result<LabConfig, ConfigError> {
    load_config(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../lab")
            .join(format!("{name}.toml")),
    )
}

/// Bandwidth-delay product in bytes for `rate_mbit` and round trip `rtt_ms`.
pub fn bdp_bytes(rate_mbit: f64, rtt_ms: f64) -> u64 {
    (rate_mbit * 1e6 / 8.0 * rtt_ms / 1e3).round() as u64
}
