//! A scenario's `[tcp]` section: the TCP settings it may override on
//! ns-2's defaults.

use serde::Deserialize;

use braid_core::time::Duration;

use crate::tcp::TcpConfig;

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
    /// TCP timestamps (RFC 7323).
    pub timestamps: Option<bool>,
    /// Linux's reordering metric and undo (`TcpConfig::reordering`; PRISM's
    /// testbed TCP, Section 7.1.2).
    pub reordering: Option<bool>,
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
        if let Some(v) = self.timestamps {
            c.timestamps = v;
        }
        if let Some(v) = self.reordering {
            c.reordering = v;
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
