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

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

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

    fn validate_with_origin(&self, origin: &str) -> Result<(), ConfigError> {
        let bad = |key: String, message: String| ConfigError::Invalid {
            origin: origin.to_string(),
            key,
            message,
        };
        if self.name.trim().is_empty() {
            return Err(bad(
                "name".into(),
                "must not be empty; add e.g. name = \"two-equal\"".into(),
            ));
        }
        if self.paths.is_empty() {
            return Err(bad(
                "path".into(),
                "no paths defined; add at least one [[path]] table with name and rate_mbit".into(),
            ));
        }
        if self.paths.len() > MAX_PATHS {
            return Err(bad(
                "path".into(),
                format!("{} paths defined, at most {MAX_PATHS} are supported; remove some [[path]] tables", self.paths.len()),
            ));
        }
        for (i, p) in self.paths.iter().enumerate() {
            let k = |field: &str| format!("path[{i}].{field}");
            if p.name.trim().is_empty() {
                return Err(bad(
                    k("name"),
                    "must not be empty; add e.g. name = \"a\"".into(),
                ));
            }
            if let Some(j) = self.paths[..i].iter().position(|q| q.name == p.name) {
                return Err(bad(
                    k("name"),
                    format!(
                        "\"{}\" is already used by path[{j}]; path names must be unique",
                        p.name
                    ),
                ));
            }
            for (field, v) in [
                ("rate_mbit", p.rate_mbit),
                ("up_rate_mbit", p.up_rate_mbit),
                ("down_rate_mbit", p.down_rate_mbit),
            ] {
                if let Some(v) = v {
                    check_rate(v).map_err(|m| bad(k(field), m))?;
                }
            }
            for dir in Direction::BOTH {
                let (field, v) = match dir {
                    Direction::Up => ("up_rate_mbit", p.up_rate_mbit),
                    Direction::Down => ("down_rate_mbit", p.down_rate_mbit),
                };
                if v.or(p.rate_mbit).is_none() {
                    return Err(bad(
                        k("rate_mbit"),
                        format!("missing: the {dir} direction has no rate; set rate_mbit = 10.0 (both directions) or {field}"),
                    ));
                }
            }
            for (field, v) in [
                ("delay_ms", p.delay_ms),
                ("up_delay_ms", p.up_delay_ms),
                ("down_delay_ms", p.down_delay_ms),
            ] {
                if let Some(v) = v {
                    check_delay(v).map_err(|m| bad(k(field), m))?;
                }
            }
            for (field, v) in [
                ("queue_bytes", p.queue_bytes),
                ("up_queue_bytes", p.up_queue_bytes),
                ("down_queue_bytes", p.down_queue_bytes),
            ] {
                if let Some(v) = v {
                    if v < MTU_BYTES {
                        return Err(bad(
                            k(field),
                            format!("{v} is smaller than one full-size packet ({MTU_BYTES} bytes), nothing could pass; use at least {MTU_BYTES} or omit it for one bandwidth-delay product"),
                        ));
                    }
                }
            }
            if let Some(th) = p.ecn_mark_bytes {
                for dir in Direction::BOTH {
                    let q = self.resolve(i, dir).queue_bytes;
                    if th >= q {
                        return Err(bad(
                            k("ecn_mark_bytes"),
                            format!("{th} is not below the {dir} queue limit ({q} bytes), so the queue would drop before it marks; use less, e.g. half of queue_bytes ({})", q / 2),
                        ));
                    }
                }
            }
            for (field, v) in [
                ("loss", p.loss),
                ("up_loss", p.up_loss),
                ("down_loss", p.down_loss),
            ] {
                if let Some(v) = v {
                    check_prob(v, true).map_err(|m| bad(k(field), m))?;
                }
            }
            if let Some(g) = &p.gilbert {
                if p.loss.or(p.up_loss).or(p.down_loss).is_some() {
                    return Err(bad(
                        k("gilbert"),
                        "cannot be combined with loss/up_loss/down_loss; keep only one loss model"
                            .into(),
                    ));
                }
                for (field, v, allow_one) in [
                    ("p_good_bad", g.p_good_bad, true),
                    ("p_bad_good", g.p_bad_good, true),
                    ("loss_bad", g.loss_bad, true),
                    ("loss_good", g.loss_good, false),
                ] {
                    check_prob(v, allow_one).map_err(|m| bad(k(&format!("gilbert.{field}")), m))?;
                }
                if g.p_bad_good == 0.0 && g.p_good_bad > 0.0 {
                    return Err(bad(k("gilbert.p_bad_good"), "is 0, so the path would stay in the bad state forever; use a value > 0 (e.g. 0.3)".into()));
                }
            }
            let mut prev = -1.0f64;
            for (t, e) in p.trace.iter().enumerate() {
                let tk = |field: &str| k(&format!("trace[{t}].{field}"));
                if !(e.at_s.is_finite() && e.at_s >= 0.0) {
                    return Err(bad(
                        tk("at_s"),
                        format!("{} must be a time in seconds >= 0", e.at_s),
                    ));
                }
                if e.at_s <= prev {
                    return Err(bad(tk("at_s"), format!("{} is not after the previous entry ({prev}); trace entries must be sorted by strictly increasing at_s", e.at_s)));
                }
                prev = e.at_s;
                for (field, v) in [
                    ("rate_mbit", e.rate_mbit),
                    ("up_rate_mbit", e.up_rate_mbit),
                    ("down_rate_mbit", e.down_rate_mbit),
                ] {
                    if let Some(v) = v {
                        check_rate(v).map_err(|m| bad(tk(field), m))?;
                    }
                }
                for (field, v) in [
                    ("delay_ms", e.delay_ms),
                    ("up_delay_ms", e.up_delay_ms),
                    ("down_delay_ms", e.down_delay_ms),
                ] {
                    if let Some(v) = v {
                        check_delay(v).map_err(|m| bad(tk(field), m))?;
                    }
                }
                if let Some(v) = e.loss {
                    check_prob(v, true).map_err(|m| bad(tk("loss"), m))?;
                    if p.gilbert.is_some() {
                        return Err(bad(
                            tk("loss"),
                            "cannot change loss on a path that uses gilbert; remove one of them"
                                .into(),
                        ));
                    }
                }
                let any = e
                    .rate_mbit
                    .or(e.up_rate_mbit)
                    .or(e.down_rate_mbit)
                    .or(e.delay_ms)
                    .or(e.up_delay_ms)
                    .or(e.down_delay_ms)
                    .or(e.loss);
                if any.is_none() {
                    return Err(bad(k(&format!("trace[{t}]")), "changes nothing; set at least one of rate_mbit, delay_ms, loss (or up_/down_ variants)".into()));
                }
            }
        }
        Ok(())
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

/// Bandwidth-delay product in bytes for `rate_mbit` and round trip `rtt_ms`.
pub fn bdp_bytes(rate_mbit: f64, rtt_ms: f64) -> u64 {
    (rate_mbit * 1e6 / 8.0 * rtt_ms / 1e3).round() as u64
}

fn check_rate(v: f64) -> Result<(), String> {
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("{v} must be a rate in Mbit/s > 0, e.g. 10.0"));
    }
    if v > MAX_RATE_MBIT {
        return Err(format!("{v} Mbit/s is above the {MAX_RATE_MBIT} Mbit/s the userspace emulator can shape accurately; use a lower rate"));
    }
    Ok(())
}

fn check_delay(v: f64) -> Result<(), String> {
    if !(v.is_finite() && (0.0..=10_000.0).contains(&v)) {
        return Err(format!(
            "{v} must be a one-way delay in milliseconds between 0 and 10000, e.g. 20.0"
        ));
    }
    Ok(())
}

fn check_prob(v: f64, allow_one: bool) -> Result<(), String> {
    let ok = v.is_finite() && v >= 0.0 && if allow_one { v <= 1.0 } else { v < 1.0 };
    if !ok {
        let range = if allow_one { "0.0..=1.0" } else { "0.0..1.0" };
        return Err(format!(
            "{v} must be a probability in {range} (e.g. 0.01 for 1 %), not a percentage"
        ));
    }
    Ok(())
}

/// Add a short fix-it hint to common serde/toml errors.
fn parse_hint(msg: String) -> String {
    let msg = msg.trim_end().to_string();
    if msg.contains("unknown field") {
        match did_you_mean(&msg) {
            Some(s) => format!("{msg}\nhint: did you mean `{s}`?"),
            None => format!("{msg}\nhint: the key above is misspelled or not supported; use one of the keys listed as expected"),
        }
    } else if msg.contains("missing field") {
        format!("{msg}\nhint: add the missing key to the table shown above")
    } else if msg.contains("invalid type") {
        format!("{msg}\nhint: numbers with a fraction need a decimal point (10.0, not \"10\"); queue_bytes is an integer")
    } else {
        msg
    }
}

/// From "unknown field `x`, expected one of `a`, `b`" pick the expected key
/// closest to `x` (edit distance <= 3).
fn did_you_mean(msg: &str) -> Option<String> {
    let (_, rest) = msg.split_once("unknown field `")?;
    let (bad, rest) = rest.split_once('`')?;
    let (_, expected) = rest.split_once("expected")?;
    let first_line = expected.lines().next().unwrap_or("");
    first_line
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|k| (edit_distance(bad, k), k))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, k)| k.to_string())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + (ca != *cb) as usize).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "two-equal"
[[path]]
name = "a"
rate_mbit = 10.0
delay_ms = 20.0
queue_bytes = 50000
[[path]]
name = "b"
rate_mbit = 10.0
down_rate_mbit = 20.0
delay_ms = 20.0
loss = 0.01
"#;

    fn err(text: &str) -> String {
        LabConfig::from_toml_str(text, "t.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_and_resolves() {
        let c = LabConfig::from_toml_str(GOOD, "t.toml").unwrap();
        assert_eq!(c.paths.len(), 2);
        let a = c.resolve(0, Direction::Up);
        assert_eq!(a.rate_bps, 10e6);
        assert_eq!(a.delay_s, 0.020);
        assert_eq!(a.queue_bytes, 50000);
        assert_eq!(a.loss, LossSpec::None);
        let b = c.resolve(1, Direction::Down);
        assert_eq!(b.rate_bps, 20e6);
        // default queue = one BDP of the direction's rate over the RTT.
        assert_eq!(b.queue_bytes, bdp_bytes(20.0, 40.0));
        assert_eq!(b.loss, LossSpec::Bernoulli(0.01));
        assert_eq!(c.sum_rate_mbit(Direction::Up), 20.0);
        assert_eq!(c.best_path(Direction::Down), 1);
        assert_eq!(c.best_path(Direction::Up), 0);
        assert_eq!(a.ecn_mark_bytes, None);
        let e = LabConfig::from_toml_str(
            &GOOD.replace(
                "queue_bytes = 50000",
                "queue_bytes = 50000\necn_mark_bytes = 30000",
            ),
            "t",
        )
        .unwrap();
        assert_eq!(e.resolve(0, Direction::Down).ecn_mark_bytes, Some(30000));
    }

    #[test]
    fn roundtrips_through_toml() {
        let mut c = LabConfig::from_toml_str(GOOD, "t.toml").unwrap();
        c.paths[0].gilbert = None;
        c.paths[0].trace = vec![TraceEntry {
            at_s: 1.0,
            rate_mbit: Some(5.0),
            ..Default::default()
        }];
        let back = LabConfig::from_toml_str(&c.to_toml_string(), "rt").unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn unknown_key_is_named() {
        let e = err("name = \"x\"\n[[path]]\nname = \"a\"\nrate_mbps = 10.0\n");
        assert!(e.contains("rate_mbps"), "{e}");
        assert!(e.contains("t.toml"), "{e}");
        assert!(e.contains("did you mean `rate_mbit`"), "{e}");
    }

    #[test]
    fn unknown_top_level_key_is_named() {
        let e = err("name = \"x\"\npaths = 3\n");
        assert!(e.contains("paths"), "{e}");
    }

    #[test]
    fn missing_rate_is_named() {
        let e = err("name = \"x\"\n[[path]]\nname = \"a\"\ndelay_ms = 5.0\n");
        assert!(e.contains("path[0].rate_mbit"), "{e}");
        assert!(e.contains("set rate_mbit"), "{e}");
    }

    #[test]
    fn bad_values_are_named() {
        let base = "name = \"x\"\n[[path]]\nname = \"a\"\nrate_mbit = 10.0\n";
        let cases = [
            ("rate_mbit = -1.0\n", "path[1].rate_mbit"),
            ("rate_mbit = 5.0\ndelay_ms = -3.0\n", "path[1].delay_ms"),
            ("rate_mbit = 5.0\nloss = 5.0\n", "path[1].loss"),
            ("rate_mbit = 5.0\nqueue_bytes = 100\n", "path[1].queue_bytes"),
            ("rate_mbit = 5.0\nloss = 0.1\ngilbert = { p_good_bad = 0.1, p_bad_good = 0.1 }\n", "path[1].gilbert"),
            ("rate_mbit = 5.0\ngilbert = { p_good_bad = 0.1, p_bad_good = 2.0 }\n", "path[1].gilbert.p_bad_good"),
            ("rate_mbit = 5.0\ntrace = [ { at_s = 2.0, rate_mbit = 1.0 }, { at_s = 1.0, rate_mbit = 2.0 } ]\n", "path[1].trace[1].at_s"),
            ("rate_mbit = 5.0\ntrace = [ { at_s = 2.0 } ]\n", "path[1].trace[0]"),
            ("rate_mbit = 5000.0\n", "path[1].rate_mbit"),
            ("rate_mbit = 5.0\nqueue_bytes = 20000\necn_mark_bytes = 20000\n", "path[1].ecn_mark_bytes"),
        ];
        for (extra, key) in cases {
            let text = format!("{base}[[path]]\nname = \"b\"\n{extra}");
            let e = err(&text);
            assert!(e.contains(&format!("`{key}`")), "expected {key} in: {e}");
        }
        let e = err(&format!("{base}[[path]]\nname = \"a\"\nrate_mbit = 1.0\n"));
        assert!(e.contains("path[1].name"), "{e}");
        assert!(err("name = \"x\"\n").contains("`path`"));
        let e = err("name = \"x\"\n[[path]]\nname = \"a\"\nrate_mbit = \"10\"\n");
        assert!(e.contains("rate_mbit") && e.contains("hint"), "{e}");
    }

    #[test]
    fn one_direction_rate_is_enough_only_if_both_set() {
        let e = err("name = \"x\"\n[[path]]\nname = \"a\"\nup_rate_mbit = 5.0\n");
        assert!(e.contains("down direction"), "{e}");
        LabConfig::from_toml_str(
            "name = \"x\"\n[[path]]\nname = \"a\"\nup_rate_mbit = 5.0\ndown_rate_mbit = 50.0\n",
            "t",
        )
        .unwrap();
    }

    #[test]
    fn shipped_lab_files_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                load_config(&p).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 3);
    }
}
