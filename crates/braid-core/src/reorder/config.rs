//! The resequencer's settings and counters.

use crate::time::Duration;

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
    /// Release spacing below this is not kept: the batch goes at once.
    /// Not in the paper, whose paths were slow (a spacing of milliseconds).
    /// On fast paths the spacing is microseconds (2 us between full-size
    /// packets at 2.4 Gbit/s), shorter than the wake-up that would honour
    /// it, and each paced packet cost the daemon a timer wake-up: with two
    /// paths reordering nearly every packet, one wake-up per packet
    /// (`tests/conn/conn_fast_paths.rs`). Such a burst is no burst to TCP: it
    /// arrived that fast.
    pub min_pace_interval: Duration,
    /// Bound on buffered payload bytes.
    pub max_buffer_bytes: usize,
    /// Start the loss timer of a gap when the gap is first seen (a higher
    /// number arrived) rather than when it reaches the head of the line
    /// (the paper's timer per expected number). Not in the paper: after a
    /// burst of drops (a drop-tail queue overflowing in slow start loses
    /// every other packet) the gaps that neither comparison nor the
    /// previous-on-path link can settle, because another path is active
    /// but idle, expire together instead of one `loss_timeout` after
    /// another, which stalled TCP for tens of seconds in the lab. The
    /// simulator's fair-queueing scenarios reorder by more than the timer,
    /// so they keep the paper's rule.
    pub timer_from_first_seen: bool,
    /// Take the loss timer's value from measured gap-fill waits (see
    /// `hold`) instead of the fixed `loss_timeout`, within [`min_hold`,
    /// `max_hold`]. Off by default (the paper's fixed timer); the tunnel
    /// turns it on.
    ///
    /// [`min_hold`, `max_hold`]: ReorderConfig::min_hold
    pub adaptive_hold: bool,
    /// Shortest adaptive hold.
    pub min_hold: Duration,
    /// Longest adaptive hold (issue 13: about 2 s). Memory bounds it too:
    /// a gap is given up when `max_buffer_bytes` fills behind it.
    pub max_hold: Duration,
    /// The sender repairs losses (ARQ): loss evidence from
    /// previous-on-path links and comparison no longer skips a gap at once;
    /// the gap waits for its repair until the loss timer (the hold), and
    /// is released the moment the repair arrives.
    pub repair_wait: bool,
}

impl Default for ReorderConfig {
    fn default() -> Self {
        ReorderConfig {
            mode: ReorderMode::Bmp,
            loss_timeout: Duration::from_millis(500),
            comparison: true,
            active_window: Duration::from_secs(1),
            pace_fraction: 0.5,
            min_pace_interval: Duration::from_micros(20),
            max_buffer_bytes: 4 << 20,
            timer_from_first_seen: false,
            adaptive_hold: false,
            min_hold: Duration::from_millis(50),
            max_hold: Duration::from_secs(2),
            repair_wait: false,
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
    /// Packets waiting behind a gap (the resequencing buffer proper; this
    /// is what `max_buffer_bytes` bounds).
    pub buffered_packets: usize,
    pub buffered_bytes: usize,
    pub max_buffered_bytes: usize,
    /// Packets that arrived but were discarded because they could not fit
    /// in `max_buffer_bytes` even after the gaps before them were skipped.
    /// Their numbers are later skipped as lost too (counted again there).
    pub dropped_overflow: u64,
    /// Packets already in order, waiting for `poll_release` (pacing, or
    /// the caller has not polled yet).
    pub queued_packets: usize,
    pub queued_bytes: usize,
    /// Gaps that filled while held (reordering settled, or a repair came).
    pub gaps_filled: u64,
    /// Packets handed up at once ahead of a gap known lost because they
    /// need no order (pure TCP ACKs, `Resequencer::handle_unordered`).
    pub unordered: u64,
    /// The loss timer's current value (the hold), nanoseconds.
    pub hold_ns: u64,
}

impl ReorderStats {
    /// Sequence numbers skipped as lost, all causes together.
    pub fn lost(&self) -> u64 {
        self.lost_comparison + self.lost_prev_link + self.lost_timer + self.lost_overflow
    }
}
