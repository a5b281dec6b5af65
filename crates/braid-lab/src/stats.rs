//! Emulator counters.
//!
//! The emulator runs in its own process (inside `braid-emu`), so tests and
//! the bench read its counters from a JSON file that it rewrites
//! periodically (atomically, via rename) under [`crate::RUN_DIR`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

/// Location of the stats file.
pub fn stats_path() -> PathBuf {
    Path::new(crate::RUN_DIR).join("stats.json")
}

/// Counters of one path direction. Bytes are IP bytes (frame - 14).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirStats {
    /// Frames received from the ingress interface.
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Frames sent on the egress interface.
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Dropped by the drop-tail queue limit.
    pub drops_queue: u64,
    /// Dropped by the random loss process.
    pub drops_loss: u64,
    /// ECN-capable frames forwarded marked CE (`ecn_mark_bytes`).
    #[serde(default)]
    pub ce_marks: u64,
    /// Frames the kernel refused to send (should stay 0).
    pub send_errors: u64,
    /// Current and peak backlog waiting for serialization.
    pub queued_bytes: u64,
    pub max_queued_bytes: u64,
    /// Current rate / one-way delay (after trace steps).
    pub rate_mbit: f64,
    pub delay_ms: f64,
    /// How late frames left compared to their scheduled instant: mean and max
    /// in microseconds (timing quality of the emulator itself).
    pub late_us_mean: f64,
    pub late_us_max: f64,
    /// Frames sent more than 1 ms after their scheduled instant.
    #[serde(default)]
    pub late_over_1ms: u64,
    /// The direction's thread runs with SCHED_FIFO priority.
    #[serde(default)]
    pub realtime: bool,
}

/// Counters of one path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathStats {
    pub name: String,
    pub up: DirStats,
    pub down: DirStats,
}

/// The whole stats file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmuStats {
    pub scenario: String,
    pub pid: u32,
    pub uptime_s: f64,
    /// How many times the trace clock was restarted (`SIGUSR1`).
    #[serde(default)]
    pub trace_restarts: u64,
    pub paths: Vec<PathStats>,
}

/// Read the emulator's latest stats file.
pub fn read_stats() -> anyhow::Result<EmuStats> {
    let p = stats_path();
    let text = std::fs::read_to_string(&p)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e} (is the lab up?)", p.display()))?;
    Ok(serde_json::from_str(&text)?)
}

/// Lock-free live counters shared between an emulator thread and the stats
/// writer.
#[derive(Debug, Default)]
pub(crate) struct DirCounters {
    pub rx_packets: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub tx_packets: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub drops_queue: AtomicU64,
    pub drops_loss: AtomicU64,
    pub ce_marks: AtomicU64,
    pub send_errors: AtomicU64,
    pub queued_bytes: AtomicU64,
    pub max_queued_bytes: AtomicU64,
    /// f64 bits
    pub rate_bps: AtomicU64,
    /// f64 bits
    pub delay_s: AtomicU64,
    pub late_ns_sum: AtomicU64,
    pub late_ns_max: AtomicU64,
    pub late_over_1ms: AtomicU64,
    pub realtime: AtomicU64,
}

impl DirCounters {
    pub fn snapshot(&self) -> DirStats {
        let tx = self.tx_packets.load(Relaxed);
        DirStats {
            rx_packets: self.rx_packets.load(Relaxed),
            rx_bytes: self.rx_bytes.load(Relaxed),
            tx_packets: tx,
            tx_bytes: self.tx_bytes.load(Relaxed),
            drops_queue: self.drops_queue.load(Relaxed),
            drops_loss: self.drops_loss.load(Relaxed),
            ce_marks: self.ce_marks.load(Relaxed),
            send_errors: self.send_errors.load(Relaxed),
            queued_bytes: self.queued_bytes.load(Relaxed),
            max_queued_bytes: self.max_queued_bytes.load(Relaxed),
            rate_mbit: f64::from_bits(self.rate_bps.load(Relaxed)) / 1e6,
            delay_ms: f64::from_bits(self.delay_s.load(Relaxed)) * 1e3,
            late_us_mean: if tx == 0 {
                0.0
            } else {
                self.late_ns_sum.load(Relaxed) as f64 / tx as f64 / 1e3
            },
            late_us_max: self.late_ns_max.load(Relaxed) as f64 / 1e3,
            late_over_1ms: self.late_over_1ms.load(Relaxed),
            realtime: self.realtime.load(Relaxed) != 0,
        }
    }
}

/// Write `stats` atomically to `path` (write temp file, then rename) so a
/// reader never sees a half-written file.
pub(crate) fn write_atomic(path: &Path, stats: &EmuStats) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(
        &tmp,
        serde_json::to_vec_pretty(stats).expect("serializable"),
    )?;
    std::fs::rename(&tmp, path)
}
