//! The receiving half of one tunnel direction: the client for the
//! downlink, the proxy for the uplink.
//!
//! Every data frame is reported back to the sender in a feedback entry
//! (the paper's SIG-ACK: sequence number and arrival time on the
//! receiver's clock) and handed to the resequencer (BMP), which releases
//! inner packets in order. Feedback for a path is sent on that same path
//! so that it measures the path's round trip and proves the path alive.
//! With `feedback_max_entries = 1` every packet is acknowledged at once,
//! as in the paper; larger batches trade a little delay for less overhead.
//!
//! Call order: `handle_data` per data frame; then drain `poll_feedback`
//! and `poll_release`; `handle_timeout` when `poll_timeout` is due.

use crate::path::{PathId, MAX_PATHS};
use crate::reorder::{ReorderConfig, ReorderStats, Resequencer};
use crate::time::{Duration, Instant};
use crate::wire::{self, DataHeader, FeedbackEntry, MAX_FEEDBACK_ENTRIES};

#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    pub reorder: ReorderConfig,
    /// Entries that trigger a feedback frame (1 = per packet, as SIG-ACKs).
    pub feedback_max_entries: usize,
    /// Longest an entry waits before its frame goes out.
    pub feedback_max_delay: Duration,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            reorder: ReorderConfig::default(),
            feedback_max_entries: 1,
            feedback_max_delay: Duration::ZERO,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Pending {
    entries: Vec<FeedbackEntry>,
    since: Option<Instant>,
}

pub struct Receiver<P> {
    cfg: ReceiverConfig,
    reseq: Resequencer<P>,
    highest: Option<u64>,
    pending: Vec<Pending>,
    /// Feedback frames emitted.
    pub feedback_frames: u64,
}

impl<P> Receiver<P> {
    pub fn new(mut cfg: ReceiverConfig) -> Self {
        cfg.feedback_max_entries = cfg.feedback_max_entries.clamp(1, MAX_FEEDBACK_ENTRIES);
        Receiver {
            reseq: Resequencer::new(cfg.reorder.clone(), 0),
            cfg,
            highest: None,
            pending: (0..MAX_PATHS).map(|_| Pending::default()).collect(),
            feedback_frames: 0,
        }
    }

    /// One data frame arrived at `now`; `len` bytes of inner packet.
    pub fn handle_data(&mut self, now: Instant, hdr: &DataHeader, len: usize, payload: P) {
        let seq = wire::seq::extend(hdr.seq, self.highest.unwrap_or(0));
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
        let prev = match hdr.prev_delta {
            0 => None,
            d => seq.checked_sub(d as u64),
        };
        let p = &mut self.pending[hdr.path.0 as usize % MAX_PATHS];
        if p.entries.len() < MAX_FEEDBACK_ENTRIES {
            p.entries.push(FeedbackEntry {
                seq: hdr.seq,
                rx_time_ns: now.as_nanos(),
            });
            p.since.get_or_insert(now);
        }
        self.reseq
            .handle_packet(now, hdr.path, seq, prev, len, payload);
    }

    /// Writes the next due feedback frame into `buf`; returns the path to
    /// send it on and its length.
    pub fn poll_feedback(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PathId, usize)> {
        let max = self.cfg.feedback_max_entries;
        let delay = self.cfg.feedback_max_delay;
        let (i, p) = self.pending.iter_mut().enumerate().find(|(_, p)| {
            !p.entries.is_empty()
                && (p.entries.len() >= max || p.since.is_some_and(|t| now >= t + delay))
        })?;
        let n = p.entries.len().min(MAX_FEEDBACK_ENTRIES);
        let path = PathId(i as u8);
        let len = wire::emit_feedback(path, &p.entries[..n], buf).ok()?;
        p.entries.drain(..n);
        p.since = if p.entries.is_empty() {
            None
        } else {
            Some(now)
        };
        self.feedback_frames += 1;
        Some((path, len))
    }

    /// Next inner packet to deliver at `now`.
    pub fn poll_release(&mut self, now: Instant) -> Option<P> {
        self.reseq.poll_release(now)
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.reseq.handle_timeout(now);
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let fb = self
            .pending
            .iter()
            .filter_map(|p| p.since.map(|t| t + self.cfg.feedback_max_delay))
            .min();
        match (fb, self.reseq.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A path exists: the resequencer waits on it in comparison-based loss
    /// detection even before it has delivered anything.
    pub fn add_path(&mut self, now: Instant, path: PathId) {
        self.reseq.add_path(now, path);
    }

    /// The path is gone: the resequencer stops waiting on it.
    pub fn remove_path(&mut self, path: PathId) {
        self.pending[path.0 as usize % MAX_PATHS] = Pending::default();
        self.reseq.remove_path(path);
    }

    pub fn reorder_stats(&self) -> &ReorderStats {
        self.reseq.stats()
    }
}
