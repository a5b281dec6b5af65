//! R-MTP scenario files (`scenarios/rmtp-*.toml`): the paper's §4
//! experiments (`SPECS.md` §4.2) as data.
//!
//! ```toml
//! name = "rmtp-fig45"
//! description = "..."
//! notes = "..."
//! [rmtp]
//! schemes = ["RMTP", "RMTP-FAST", "RMTP-SLOW", "NEWRENO"]
//! sweep = "fast_loss"   # what x is: "fast_loss" (loss on the first link),
//!                       # "link" (the run uses only link x), or "none"
//! values = [0.0, 0.3]
//! frames = 1000         # the paper's 1000 × 1400 B
//! frame_bytes = 1400
//! seeds = 3
//! [[rmtp.link]]         # first the fast link, last the slow one
//! name = "aviator"
//! rate_kbit = 1300
//! delay_ms = 5
//! queue_frames = 20
//! loss = 0.0
//! ```

use serde::Deserialize;

/// A scheme of the R-MTP experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RmtpScheme {
    /// R-MTP over every link of the run.
    Rmtp,
    /// R-MTP over the first (fast) link alone.
    RmtpFast,
    /// R-MTP over the last (slow) link alone.
    RmtpSlow,
    /// NewReno (the kernel TCP of the paper) over the first link.
    NewReno,
    /// NewReno over the last link.
    NewRenoSlow,
}

impl RmtpScheme {
    pub const ALL: [RmtpScheme; 5] = [
        RmtpScheme::Rmtp,
        RmtpScheme::RmtpFast,
        RmtpScheme::RmtpSlow,
        RmtpScheme::NewReno,
        RmtpScheme::NewRenoSlow,
    ];
    pub fn name(self) -> &'static str {
        match self {
            RmtpScheme::Rmtp => "RMTP",
            RmtpScheme::RmtpFast => "RMTP-FAST",
            RmtpScheme::RmtpSlow => "RMTP-SLOW",
            RmtpScheme::NewReno => "NEWRENO",
            RmtpScheme::NewRenoSlow => "NEWRENO-SLOW",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
    }
}

fn d_frames() -> u64 {
    1000
}
fn d_frame_bytes() -> usize {
    1400
}
fn d_seeds() -> u32 {
    3
}
fn d_queue() -> u64 {
    20
}

/// One link: the same rate and delay both ways; loss only forward.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RmtpLink {
    pub name: String,
    pub rate_kbit: f64,
    pub delay_ms: f64,
    /// Drop-tail queue in front of the link, in frames of the run.
    #[serde(default = "d_queue")]
    pub queue_frames: u64,
    /// i.i.d. loss of the forward direction, after the queue (a lossy
    /// last hop: lost frames used the air time).
    #[serde(default)]
    pub loss: f64,
}

/// The `[rmtp]` table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RmtpSpec {
    pub schemes: Vec<String>,
    pub sweep: String,
    pub values: Vec<f64>,
    #[serde(default = "d_frames")]
    pub frames: u64,
    #[serde(default = "d_frame_bytes")]
    pub frame_bytes: usize,
    #[serde(default = "d_seeds")]
    pub seeds: u32,
    #[serde(default)]
    pub first_seed: u64,
    pub link: Vec<RmtpLink>,
}

/// A scenario file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RmtpScenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub notes: String,
    pub rmtp: RmtpSpec,
}

/// Why a scenario file was refused.
#[derive(Debug, thiserror::Error)]
pub enum RmtpScenarioError {
    #[error("cannot read {path}: {err}")]
    Read { path: String, err: std::io::Error },
    #[error("{path}: {err}")]
    Parse { path: String, err: toml::de::Error },
    #[error("{path}: {msg}")]
    Invalid { path: String, msg: String },
}

impl RmtpScenario {
    /// Whether a file's text is an R-MTP scenario (it has an `[rmtp]`
    /// table).
    pub fn is_rmtp(text: &str) -> bool {
        text.lines().any(|l| l.trim() == "[rmtp]")
    }

    pub fn parse(text: &str, path: &str) -> Result<Self, RmtpScenarioError> {
        let sc: RmtpScenario = toml::from_str(text).map_err(|err| RmtpScenarioError::Parse {
            path: path.to_string(),
            err,
        })?;
        let bad = |msg: String| RmtpScenarioError::Invalid {
            path: path.to_string(),
            msg,
        };
        let r = &sc.rmtp;
        for s in &r.schemes {
            if RmtpScheme::parse(s).is_none() {
                return Err(bad(format!(
                    "unknown scheme {s:?}; use RMTP, RMTP-FAST, RMTP-SLOW, NEWRENO or NEWRENO-SLOW"
                )));
            }
        }
        if !["fast_loss", "link", "none"].contains(&r.sweep.as_str()) {
            return Err(bad(format!(
                "sweep = {:?}; use \"fast_loss\", \"link\" or \"none\"",
                r.sweep
            )));
        }
        if r.link.is_empty() || r.link.len() > 8 {
            return Err(bad(format!(
                "{} [[rmtp.link]] tables; give 1 to 8",
                r.link.len()
            )));
        }
        for l in &r.link {
            if !(l.rate_kbit > 0.0 && l.delay_ms >= 0.0 && (0.0..1.0).contains(&l.loss)) {
                return Err(bad(format!(
                    "link {:?}: rate_kbit must be > 0, delay_ms >= 0 and loss in [0, 1)",
                    l.name
                )));
            }
            if l.queue_frames < 2 {
                return Err(bad(format!(
                    "link {:?}: queue_frames = {}; give at least 2 (a packet pair)",
                    l.name, l.queue_frames
                )));
            }
        }
        for &x in &r.values {
            let ok = match r.sweep.as_str() {
                "fast_loss" => (0.0..1.0).contains(&x),
                "link" => x >= 0.0 && (x as usize) < r.link.len() && x.fract() == 0.0,
                _ => true,
            };
            if !ok {
                return Err(bad(format!(
                    "value {x} does not fit sweep {:?} over {} links",
                    r.sweep,
                    r.link.len()
                )));
            }
        }
        if r.frames == 0 || r.frame_bytes == 0 || r.frame_bytes > 1500 {
            return Err(bad(
                "frames must be > 0 and frame_bytes in 1..=1500".to_string()
            ));
        }
        Ok(sc)
    }

    pub fn load(path: &std::path::Path) -> Result<Self, RmtpScenarioError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| RmtpScenarioError::Read {
            path: p.clone(),
            err,
        })?;
        Self::parse(&text, &p)
    }

    pub fn schemes(&self) -> Vec<RmtpScheme> {
        self.rmtp
            .schemes
            .iter()
            .filter_map(|s| RmtpScheme::parse(s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
name = "t"
[rmtp]
schemes = ["RMTP", "NEWRENO"]
sweep = "fast_loss"
values = [0.0, 0.3]
[[rmtp.link]]
name = "a"
rate_kbit = 1300
delay_ms = 5
"#;

    #[test]
    fn a_scenario_parses_with_defaults() {
        let sc = RmtpScenario::parse(OK, "t.toml").unwrap();
        assert!(RmtpScenario::is_rmtp(OK));
        assert_eq!(sc.rmtp.frames, 1000);
        assert_eq!(sc.rmtp.frame_bytes, 1400);
        assert_eq!(sc.rmtp.link[0].queue_frames, 20);
        assert_eq!(sc.schemes(), vec![RmtpScheme::Rmtp, RmtpScheme::NewReno]);
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let e = |t: &str| RmtpScenario::parse(t, "t.toml").unwrap_err().to_string();
        assert!(e(&OK.replace("\"NEWRENO\"", "\"TCP\"")).contains("unknown scheme \"TCP\""));
        assert!(e(&OK.replace("fast_loss", "speed")).contains("sweep = \"speed\""));
        assert!(e(&OK.replace("0.3]", "1.5]")).contains("value 1.5"));
        assert!(
            e(&OK.replace("rate_kbit = 1300", "rate_kbit = 0")).contains("rate_kbit must be > 0")
        );
        assert!(
            e(&OK.replace("delay_ms = 5", "delay_ms = 5\nqueue_frames = 1")).contains("at least 2")
        );
    }
}
