//! PRISM's sections of a scenario file (`[prism]`, `[[onoff]]`): how much
//! of the reverse-path controller the striping schemes run, and the on/off
//! background of PRISM Fig 12.

use serde::Deserialize;

/// How much of PRISM's reverse-path controller a scheme runs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RpcMode {
    /// No ACK control: the inner TCP's ACKs go straight to the server.
    #[default]
    Off,
    /// Re-sequencing only (Fig 13's partial RPC).
    Partial,
    /// Re-sequencing, per-link loss detection and NACKs.
    Full,
}

/// PRISM settings for the striping schemes without a resequencer (ADAS,
/// WRR, RR, RANDOM, HRTT-ONLY, U-ONLY). `PRISM`, `PRISM-PARTIAL`,
/// `VANILLA` and `VANILLA-LINUX` fix their own ACK control and TCP; schemes with BMP never use
/// the controller.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrismSpec {
    /// The reverse-path controller for those schemes.
    #[serde(default)]
    pub rpc: RpcMode,
    /// Their TCP sender is TCP-PRISM (acts on NACKs; only with `rpc = "full"`).
    #[serde(default)]
    pub tcp_prism: bool,
    /// Longest an ACK is held by the controller, ms; 0 = until its hole
    /// fills (the paper). `PRISM-PARTIAL` always uses 0.
    #[serde(default = "default_max_hold")]
    pub max_hold_ms: f64,
    /// The path the receiver's ACKs return over (PRISM: "one of the WWAN
    /// links"); default the one with the smallest wired delay.
    pub ack_path: Option<usize>,
    /// `WRR` is PRISM's WRR (`crate::prism::RoundWrr`: each link's quantum
    /// in a row per round, Section 4.2.1's Case A) instead of the
    /// interleaved smooth WRR the PET/BMP reproductions use.
    #[serde(default)]
    pub wrr_rounds: bool,
}

fn default_max_hold() -> f64 {
    500.0
}

impl Default for PrismSpec {
    fn default() -> Self {
        toml::from_str("").expect("defaults parse")
    }
}

/// A UDP on/off source sending onto one path's bottleneck (PRISM Section
/// 8.3.2): `rate_kbps` while on, on-times Pareto with mean `on_mean_s`,
/// off-times fixed `off_s`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnOffSpec {
    pub path: usize,
    pub rate_kbps: f64,
    pub on_mean_s: f64,
    #[serde(default = "default_off")]
    pub off_s: f64,
    /// Pareto shape of the on-times (the paper does not give it).
    #[serde(default = "default_onoff_shape")]
    pub shape: f64,
    #[serde(default = "default_onoff_pkt")]
    pub packet_bytes: u32,
}

fn default_off() -> f64 {
    1.0
}
fn default_onoff_shape() -> f64 {
    1.5
}
fn default_onoff_pkt() -> u32 {
    1500
}
