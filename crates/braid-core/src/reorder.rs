//! The receiver's resequencer: BMP of PET/BMP (Section V-B). CONTRACT (to
//! be implemented); see the item docs.
//!
//! Packets carry a tunnel sequence number. Released strictly in order;
//! a missing number is declared lost (and skipped) when
//! - comparison-based: a higher number has arrived on every *active* path
//!   (paths deliver in order, so nothing older can still come on them), or
//! - the previous-on-path link says so: a packet arrived on path p whose
//!   predecessor on p was number N, and N has not arrived (FIFO paths), or
//! - timer-based fallback: the gap has been waiting `loss_timeout` (0.5 s).
//! Packets that become releasable together are paced (criterion 5): after
//! the first, each waits `pace_fraction` x the smoothed inter-arrival gap.
//! Buffered bytes never exceed `max_buffer_bytes`: past it the oldest gap
//! is declared lost. Mode `Off` releases every packet at once (pass-through).

use crate::path::PathId;
use crate::time::{Duration, Instant};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReorderMode {
    /// Pass-through: release on arrival, no resequencing.
    Off,
    /// Resequence with loss detection (BMP).
    Bmp,
}

#[derive(Clone, Debug)]
pub struct ReorderConfig {
    pub mode: ReorderMode,
    /// Timer-based loss detection (paper: 0.5 s).
    pub loss_timeout: Duration,
    /// Enable comparison-based loss detection.
    pub comparison: bool,
    /// A path counts as active for comparison if it delivered within this.
    pub active_window: Duration,
    /// Release pacing; 0 disables it.
    pub pace_fraction: f64,
    /// Bound on buffered payload bytes.
    pub max_buffer_bytes: usize,
}

impl Default for ReorderConfig {
    fn default() -> Self {
        ReorderConfig {
            mode: ReorderMode::Bmp,
            loss_timeout: Duration::from_millis(500),
            comparison: true,
            active_window: Duration::from_secs(1),
            pace_fraction: 0.5,
            max_buffer_bytes: 4 << 20,
        }
    }
}

/// Counters for status and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReorderStats {
    pub received: u64,
    pub released: u64,
    pub duplicates: u64,
    /// Packets older than the release point (arrived after being given up).
    pub late: u64,
    /// Sequence numbers skipped as lost, by cause.
    pub lost_comparison: u64,
    pub lost_prev_link: u64,
    pub lost_timer: u64,
    pub lost_overflow: u64,
    pub buffered_packets: usize,
    pub buffered_bytes: usize,
    pub max_buffered_bytes: usize,
}

/// Resequencer over payloads of type `P` (bytes in the daemon, a segment
/// descriptor in the simulator).
pub struct Resequencer<P> {
    _p: core::marker::PhantomData<P>,
}

impl<P> Resequencer<P> {
    /// `first_seq`: the first sequence number expected.
    pub fn new(cfg: ReorderConfig, first_seq: u64) -> Self {
        let _ = (cfg, first_seq);
        todo!()
    }
    /// One packet arrived on `path` at `now`. `prev_on_path` is the number
    /// sent before it on the same path, if known. `len` counts toward the
    /// buffer limit.
    pub fn handle_packet(&mut self, now: Instant, path: PathId, seq: u64, prev_on_path: Option<u64>, len: usize, payload: P) {
        let _ = (now, path, seq, prev_on_path, len, payload);
        todo!()
    }
    /// Runs timers due at `now` (loss timer). Extra calls are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        let _ = now;
        todo!()
    }
    /// Next packet to hand up at `now`, if one is due (pacing respected).
    pub fn poll_release(&mut self, now: Instant) -> Option<P> {
        let _ = now;
        todo!()
    }
    /// When `handle_timeout` or `poll_release` next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        todo!()
    }
    /// The path is gone: stop waiting on it for comparison-based detection.
    pub fn remove_path(&mut self, path: PathId) {
        let _ = path;
        todo!()
    }
    /// The next sequence number to be released.
    pub fn next_expected(&self) -> u64 {
        todo!()
    }
    pub fn stats(&self) -> &ReorderStats {
        todo!()
    }
}
