//! MPLOT scenario files (`scenarios/mplot-*.toml`): the paper's §IV
//! experiments as data.
//!
//! ```toml
//! name = "mplot-fig11"
//! description = "..."
//! notes = "..."
//! [mplot]
//! schemes = ["MPLOT", "PTCP"]
//! sweep = "paths"            # what x is: "paths", "theta" or "loss"
//! values = [2, 3, 4, 5]
//! paths = 3                  # M when not swept
//! total_rate_mbit = 10       # split equally over the M paths, or
//! # path_rate_mbit = 10      # per path (Fig 3)
//! rtt_ms = 40
//! loss = 0.3                 # i.i.d. loss per path, or
//! # loss_model = "two-state" | "down" (with p_down) | "bimodal" (lo, hi)
//! sessions = 10
//! tcp_per_path = 0           # ECN TCP-SACK flows on every path (Fig 7)
//! reverse_loss = false       # ACKs cross the forward loss model too
//! duration_s = 20
//! warmup_s = 2
//! seeds = 1
//! ```

use serde::Deserialize;

/// A scheme of the MPLOT experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MplotScheme {
    /// MPLOT: aggregate FEC, rank mapping.
    Mplot,
    /// The same FEC, heterogeneity-blind mapping (§IV-B).
    Blind,
    /// FEC run separately on each path (§IV-C).
    PerPath,
    /// One aggregate FIFO striped over a TCP-SACK subflow per path, with
    /// ECN, ACKs on the packet's own path, no FEC (§IV-G; see
    /// `super::tcp_flows`).
    Ptcp,
}

impl MplotScheme {
    pub fn name(self) -> &'static str {
        match self {
            MplotScheme::Mplot => "MPLOT",
            MplotScheme::Blind => "BLIND",
            MplotScheme::PerPath => "PER-PATH",
            MplotScheme::Ptcp => "PTCP",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        [
            MplotScheme::Mplot,
            MplotScheme::Blind,
            MplotScheme::PerPath,
            MplotScheme::Ptcp,
        ]
        .into_iter()
        .find(|m| m.name().eq_ignore_ascii_case(s))
    }
}

/// The `[mplot]` table.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MplotSpec {
    pub schemes: Vec<String>,
    /// What the sweep varies: `paths`, `theta`, `loss` or `p_down`.
    pub sweep: String,
    pub values: Vec<f64>,
    #[serde(default = "d_paths")]
    pub paths: usize,
    /// Aggregate capacity, split equally over the paths.
    #[serde(default)]
    pub total_rate_mbit: Option<f64>,
    /// Capacity of each path (Fig 3), instead of `total_rate_mbit`.
    #[serde(default)]
    pub path_rate_mbit: Option<f64>,
    #[serde(default = "d_rtt")]
    pub rtt_ms: f64,
    /// i.i.d. loss per path (`loss_model = "iid"`).
    #[serde(default)]
    pub loss: f64,
    /// `iid`, `two-state` (25 % / 75 %, 250 ms each), `down` (plus DOWN,
    /// `p_down`), `bimodal` (`loss_lo` / `loss_hi`, 250 ms each).
    #[serde(default = "d_model")]
    pub loss_model: String,
    #[serde(default)]
    pub p_down: f64,
    #[serde(default)]
    pub loss_lo: f64,
    #[serde(default)]
    pub loss_hi: f64,
    /// Loss correlation across path indices (θ of §IV-E).
    #[serde(default)]
    pub theta: f64,
    #[serde(default = "d_sessions")]
    pub sessions: usize,
    /// ECN-capable TCP-SACK flows on every path besides the sessions
    /// (§IV-D, Fig 7: as many as MPLOT sources).
    #[serde(default)]
    pub tcp_per_path: usize,
    /// ACKs cross a lossy channel with the forward paths' loss model too
    /// (independent draws and states per path). The paper does not say
    /// whether its reverse paths lose ACKs; its §IV-C argues that ACKs on
    /// any path "reduce the number of timeouts", which only matters if
    /// they can. Off: reverse paths are loss-free.
    #[serde(default)]
    pub reverse_loss: bool,
    #[serde(default = "d_duration")]
    pub duration_s: f64,
    #[serde(default = "d_warmup")]
    pub warmup_s: f64,
    #[serde(default = "d_seeds")]
    pub seeds: u32,
    #[serde(default = "d_first_seed")]
    pub first_seed: u64,
}

fn d_paths() -> usize {
    3
}
fn d_rtt() -> f64 {
    40.0
}
fn d_model() -> String {
    "iid".into()
}
fn d_sessions() -> usize {
    10
}
fn d_duration() -> f64 {
    20.0
}
fn d_warmup() -> f64 {
    2.0
}
fn d_seeds() -> u32 {
    1
}
fn d_first_seed() -> u64 {
    1
}

/// A whole file.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MplotScenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub notes: String,
    pub mplot: MplotSpec,
}

/// Why a scenario file was refused.
#[derive(Debug, thiserror::Error)]
pub enum MplotScenarioError {
    #[error("cannot read {path}: {err}")]
    Io { path: String, err: std::io::Error },
    #[error("{origin}: {err}")]
    Toml {
        origin: String,
        err: toml::de::Error,
    },
    #[error("{origin}: `{key}` {why}")]
    Invalid {
        origin: String,
        key: &'static str,
        why: String,
    },
}

impl MplotScenario {
    /// Whether a TOML text is an MPLOT scenario (has an `[mplot]` table).
    pub fn is_mplot(text: &str) -> bool {
        text.parse::<toml::Table>()
            .map(|t| t.contains_key("mplot"))
            .unwrap_or(false)
    }

    pub fn load(path: &std::path::Path) -> Result<Self, MplotScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|err| MplotScenarioError::Io {
            path: path.display().to_string(),
            err,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, origin: &str) -> Result<Self, MplotScenarioError> {
        let sc: MplotScenario = toml::from_str(text).map_err(|err| MplotScenarioError::Toml {
            origin: origin.into(),
            err,
        })?;
        sc.validate(origin)?;
        Ok(sc)
    }

    /// The schemes, parsed.
    pub fn schemes(&self) -> Vec<MplotScheme> {
        self.mplot
            .schemes
            .iter()
            .filter_map(|s| MplotScheme::parse(s))
            .collect()
    }

    fn validate(&self, origin: &str) -> Result<(), MplotScenarioError> {
        let bad = |key, why: &str| {
            Err(MplotScenarioError::Invalid {
                origin: origin.into(),
                key,
                why: why.into(),
            })
        };
        let m = &self.mplot;
        for s in &m.schemes {
            if MplotScheme::parse(s).is_none() {
                return bad(
                    "mplot.schemes",
                    &format!("has {s:?}; use MPLOT, BLIND, PER-PATH or PTCP"),
                );
            }
        }
        if m.schemes.is_empty() {
            return bad("mplot.schemes", "must list at least one scheme");
        }
        if !["paths", "theta", "loss", "p_down"].contains(&m.sweep.as_str()) {
            return bad(
                "mplot.sweep",
                "must be \"paths\", \"theta\", \"loss\" or \"p_down\"",
            );
        }
        if m.values.is_empty() {
            return bad("mplot.values", "must list at least one value");
        }
        if m.sweep == "paths"
            && m.values
                .iter()
                .any(|v| *v < 1.0 || *v > 16.0 || v.fract() != 0.0)
        {
            return bad("mplot.values", "paths must be whole numbers 1..=16");
        }
        if !(1..=16).contains(&m.paths) {
            return bad("mplot.paths", "must be 1..=16");
        }
        match (m.total_rate_mbit, m.path_rate_mbit) {
            (Some(r), None) | (None, Some(r)) if r > 0.0 && r.is_finite() => {}
            _ => {
                return bad(
                    "mplot.total_rate_mbit",
                    "give exactly one of total_rate_mbit or path_rate_mbit, positive",
                )
            }
        }
        if !["iid", "two-state", "down", "bimodal"].contains(&m.loss_model.as_str()) {
            return bad(
                "mplot.loss_model",
                "must be \"iid\", \"two-state\", \"down\" or \"bimodal\"",
            );
        }
        if !(0.0..=1.0).contains(&m.loss) || !(0.0..=1.0).contains(&m.theta) {
            return bad("mplot.loss", "loss and theta must be in 0..=1");
        }
        if m.rtt_ms <= 0.0 || m.sessions == 0 || m.duration_s <= m.warmup_s || m.warmup_s < 0.0 {
            return bad(
                "mplot.duration_s",
                "needs rtt_ms > 0, sessions >= 1 and duration_s > warmup_s >= 0",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = "name = 't'\n[mplot]\nschemes = ['MPLOT']\nsweep = 'paths'\nvalues = [1, 2]\ntotal_rate_mbit = 10\n";

    #[test]
    fn minimal_file_parses() {
        let s = MplotScenario::parse(MIN, "t").unwrap();
        assert_eq!(s.schemes(), vec![MplotScheme::Mplot]);
        assert_eq!(s.mplot.sessions, 10);
        assert!(MplotScenario::is_mplot(MIN));
        assert!(!MplotScenario::is_mplot("name = 'x'\n"));
    }

    #[test]
    fn errors_name_the_key() {
        let e = MplotScenario::parse(&MIN.replace("'MPLOT'", "'FOO'"), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mplot.schemes") && e.contains("PTCP"), "{e}");
        let e = MplotScenario::parse(&MIN.replace("total_rate_mbit = 10", ""), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("total_rate_mbit"), "{e}");
        let e = MplotScenario::parse(&MIN.replace("[1, 2]", "[0.5]"), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mplot.values"), "{e}");
    }
}
