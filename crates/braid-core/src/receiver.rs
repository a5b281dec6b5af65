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
use crate::repair::PathLossDetector;
use crate::time::{Duration, Instant};
use crate::wire::{
    self, DataFlags, DataHeader, FeedbackEntry, NackRange, NackRate, MAX_FEEDBACK_ENTRIES,
    MAX_NACK_RANGES,
};

#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    pub reorder: ReorderConfig,
    /// Entries that trigger a feedback frame (1 = per packet, as SIG-ACKs).
    pub feedback_max_entries: usize,
    /// Longest an entry waits before its frame goes out.
    pub feedback_max_delay: Duration,
    /// Longest an entry waits while every pending entry of the path
    /// reports a small packet (at most `small_packet_bytes`): reports of
    /// TCP ACKs cost about as much as the ACKs, and the reverse direction
    /// carrying them may be the busy one (an upload's uplink), while the
    /// sender of ACKs has no pacing or pair estimates waiting on them.
    /// Never shorter than `feedback_max_delay`.
    pub feedback_max_delay_small: Duration,
    /// Inner packets of at most this many bytes count as small.
    pub small_packet_bytes: usize,
    /// Report per-path losses at once in NACK frames (`repair::detect`,
    /// PRISM §5.2.3). Off by default; the tunnel turns it on with repair.
    pub nack: bool,
    /// Later packets on a path before a gap in its chain is reported lost
    /// (PRISM: 1).
    pub loss_threshold: u32,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            reorder: ReorderConfig::default(),
            feedback_max_entries: 1,
            feedback_max_delay: Duration::ZERO,
            feedback_max_delay_small: Duration::ZERO,
            small_packet_bytes: crate::sched::SMALL_PACKET_BYTES as usize,
            nack: false,
            loss_threshold: 1,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Pending {
    entries: Vec<FeedbackEntry>,
    since: Option<Instant>,
    /// Some pending entry reports a packet larger than `small_packet_bytes`.
    large: bool,
}

impl Pending {
    /// When the pending entries must go out.
    fn due(&self, cfg: &ReceiverConfig) -> Option<Instant> {
        let delay = if self.large {
            cfg.feedback_max_delay
        } else {
            cfg.feedback_max_delay_small.max(cfg.feedback_max_delay)
        };
        self.since.map(|t| t + delay)
    }
}

pub struct Receiver<P> {
    cfg: ReceiverConfig,
    reseq: Resequencer<P>,
    highest: Option<u64>,
    pending: Vec<Pending>,
    /// Per-path gap detection (PRISM §5.2.3).
    detector: PathLossDetector,
    /// Lost runs not yet reported.
    nacks: Vec<NackRange>,
    /// Feedback frames emitted.
    pub feedback_frames: u64,
    /// NACK frames emitted.
    pub nack_frames: u64,
    /// Repair copies received (flag `REPAIR`).
    pub repairs_received: u64,
    /// Packets rebuilt from FEC parity ([`Receiver::handle_rebuilt`]).
    pub fec_rebuilt: u64,
}

impl<P> Receiver<P> {
    pub fn new(mut cfg: ReceiverConfig) -> Self {
        cfg.feedback_max_entries = cfg.feedback_max_entries.clamp(1, MAX_FEEDBACK_ENTRIES);
        Receiver {
            reseq: Resequencer::new(cfg.reorder.clone(), 0),
            detector: PathLossDetector::new(cfg.loss_threshold),
            cfg,
            highest: None,
            pending: (0..MAX_PATHS).map(|_| Pending::default()).collect(),
            nacks: Vec::new(),
            feedback_frames: 0,
            nack_frames: 0,
            repairs_received: 0,
            fec_rebuilt: 0,
        }
    }

    /// One data frame arrived at `now`; `len` bytes of inner packet.
    pub fn handle_data(&mut self, now: Instant, hdr: &DataHeader, len: usize, payload: P) {
        self.data(now, hdr, len, payload, false);
    }

    /// A data frame whose inner packet needs no order (a pure TCP ACK):
    /// handed up at once while the line waits for the repair of a loss
    /// this receiver detected ([`Resequencer::handle_unordered`]);
    /// feedback and loss detection as for any data frame.
    pub fn handle_unordered_data(
        &mut self,
        now: Instant,
        hdr: &DataHeader,
        len: usize,
        payload: P,
    ) {
        self.data(now, hdr, len, payload, true);
    }

    fn data(&mut self, now: Instant, hdr: &DataHeader, len: usize, payload: P, unordered: bool) {
        let seq = wire::seq::extend(hdr.seq, self.highest.unwrap_or(0));
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
        let prev = match hdr.prev_delta {
            0 => None,
            d => seq.checked_sub(d as u64),
        };
        if hdr.flags.has(DataFlags::REPAIR) {
            self.repairs_received += 1;
        } else if self.cfg.nack {
            let slot = hdr.path.0 as usize % MAX_PATHS;
            if let Some(run) = self.detector.on_data(slot, seq, prev) {
                self.reseq.note_loss(run.upto);
                if self.nacks.len() >= MAX_NACK_RANGES {
                    // The sender's FIFO rule and timeout still find it.
                    self.nacks.remove(0);
                }
                self.nacks.push(NackRange {
                    path: hdr.path,
                    after: run.after.map(|a| a as u32),
                    upto: run.upto as u32,
                });
            }
        }
        let p = &mut self.pending[hdr.path.0 as usize % MAX_PATHS];
        if p.entries.len() < MAX_FEEDBACK_ENTRIES {
            p.entries.push(FeedbackEntry {
                seq: hdr.seq,
                rx_time_ns: now.as_nanos(),
            });
            p.since.get_or_insert(now);
            p.large |= len > self.cfg.small_packet_bytes;
        }
        if unordered {
            self.reseq
                .handle_unordered(now, hdr.path, seq, prev, len, payload);
        } else {
            self.reseq
                .handle_packet(now, hdr.path, seq, prev, len, payload);
        }
    }

    /// A packet rebuilt from FEC parity that came on `path`: it fills its
    /// gap in the resequencer like a repair copy. No feedback is sent for
    /// it and no per-path loss detection sees it: it did not cross a path
    /// as data, and the sender must count its first copy as lost (eq 2's
    /// loss statistics).
    pub fn handle_rebuilt(&mut self, now: Instant, path: PathId, seq: u64, len: usize, payload: P) {
        self.fec_rebuilt += 1;
        self.highest = Some(self.highest.map_or(seq, |h| h.max(seq)));
        self.reseq.handle_packet(now, path, seq, None, len, payload);
    }

    /// Writes the next due feedback frame into `buf`; returns the path to
    /// send it on and its length.
    pub fn poll_feedback(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PathId, usize)> {
        let max = self.cfg.feedback_max_entries;
        let cfg = &self.cfg;
        let (i, p) = self.pending.iter_mut().enumerate().find(|(_, p)| {
            !p.entries.is_empty()
                && (p.entries.len() >= max || p.due(cfg).is_some_and(|t| now >= t))
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
        // What stays behind (beyond MAX_FEEDBACK_ENTRIES) keeps the stricter bound.
        p.large &= !p.entries.is_empty();
        self.feedback_frames += 1;
        Some((path, len))
    }

    /// Writes a NACK frame into `buf` (at least
    /// `wire::nack_len(MAX_NACK_RANGES, MAX_NACK_RATES)` bytes) if a loss
    /// waits to be reported: the runs, and the loss rate of every path
    /// that delivered anything. The caller sends it on the path that
    /// returns earliest (the frame names its paths), and on a second one
    /// when reverse paths lose packets.
    pub fn poll_nack(&mut self, buf: &mut [u8]) -> Option<usize> {
        if self.nacks.is_empty() {
            return None;
        }
        let rates: Vec<NackRate> = (0..MAX_PATHS)
            .filter(|&s| self.detector.seen(s))
            .map(|s| NackRate::from_fraction(PathId(s as u8), self.detector.loss_rate(s)))
            .collect();
        let len = wire::emit_nack(&self.nacks, &rates, buf).ok()?;
        self.nacks.clear();
        self.nack_frames += 1;
        Some(len)
    }

    /// The receiver's smoothed rate of loss events on `path`, and its
    /// counts of packets received and loss runs detected.
    pub fn path_loss(&self, path: PathId) -> (f64, u64, u64) {
        let s = path.0 as usize % MAX_PATHS;
        let (rx, runs) = self.detector.counts(s);
        (self.detector.loss_rate(s), rx, runs)
    }

    /// The peer's sender will not repair packet `seq32` (low 32 bits):
    /// its gap is released without waiting for the hold.
    pub fn give_up(&mut self, now: Instant, seq32: u32) {
        let seq = wire::seq::extend(seq32, self.highest.unwrap_or(0));
        self.reseq.give_up(now, seq);
    }

    /// Next inner packet to deliver at `now`.
    pub fn poll_release(&mut self, now: Instant) -> Option<P> {
        self.reseq.poll_release(now)
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.reseq.handle_timeout(now);
    }

    /// The resequencer's least hold while losses are repaired (see
    /// [`Resequencer::set_hold_floor`]).
    pub fn set_hold_floor(&mut self, floor: Option<crate::time::Duration>) {
        self.reseq.set_hold_floor(floor);
    }

    /// The resequencer's least hold, as last set.
    pub fn hold_floor(&self) -> Option<crate::time::Duration> {
        self.reseq.hold_floor()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let fb = self.pending.iter().filter_map(|p| p.due(&self.cfg)).min();
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

    /// Resequencer counters with the current hold filled in.
    pub fn reorder_stats_now(&self) -> ReorderStats {
        self.reseq.stats_now()
    }

    /// Packets (and bytes) from `path` waiting in the resequencer.
    pub fn reorder_buffered_on(&self, path: PathId) -> (u64, usize) {
        self.reseq.buffered_on(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{DataFlags, Frame};

    fn data(seq: u32) -> DataHeader {
        DataHeader {
            flags: DataFlags::default(),
            path: PathId(0),
            prev_delta: if seq == 0 { 0 } else { 1 },
            seq,
        }
    }

    /// Polls every 100 µs for `until`, feeding a packet every `gap`;
    /// returns each frame's send time and entries.
    fn run(
        cfg: ReceiverConfig,
        gap: Duration,
        until: Duration,
    ) -> Vec<(Instant, Vec<FeedbackEntry>)> {
        let mut r: Receiver<()> = Receiver::new(cfg);
        let mut buf = vec![0u8; wire::feedback_max_len(MAX_FEEDBACK_ENTRIES)];
        let mut frames = vec![];
        let (mut next, mut seq) = (Instant::ZERO, 0u32);
        let mut now = Instant::ZERO;
        while now <= Instant::ZERO + until {
            if now >= next {
                r.handle_data(now, &data(seq), 1400, ());
                seq += 1;
                next += gap;
            }
            while let Some((path, n)) = r.poll_feedback(now, &mut buf) {
                assert_eq!(path, PathId(0));
                let Ok(Frame::Feedback(v)) = wire::decode(&buf[..n]) else {
                    panic!("not a feedback frame");
                };
                frames.push((now, v.entries().collect()));
            }
            while r.poll_release(now).is_some() {}
            now += Duration::from_micros(100);
        }
        frames
    }

    #[test]
    fn feedback_is_batched_by_count_and_age() {
        let cfg = ReceiverConfig {
            feedback_max_entries: 16,
            feedback_max_delay: Duration::from_millis(10),
            ..ReceiverConfig::default()
        };
        // One packet every 1.2 ms (10 Mbit/s of 1500-byte packets): the
        // age bound closes frames of about 9 entries.
        let frames = run(
            cfg.clone(),
            Duration::from_micros(1200),
            Duration::from_millis(200),
        );
        let entries: Vec<u32> = frames
            .iter()
            .flat_map(|f| f.1.iter().map(|e| e.seq))
            .collect();
        assert_eq!(
            entries,
            (0..entries.len() as u32).collect::<Vec<_>>(),
            "every arrival once, in order"
        );
        assert!(entries.len() >= 160, "{} entries", entries.len());
        for (at, es) in &frames {
            let oldest = Instant::from_nanos(es[0].rx_time_ns);
            assert!(
                at.saturating_since(oldest) <= Duration::from_millis(10),
                "an entry waited past the bound"
            );
            assert!(es.len() <= 16);
        }
        assert!(
            frames.len() <= entries.len() / 7,
            "{} frames for {} entries",
            frames.len(),
            entries.len()
        );
        // Ten times the rate: the count bound closes full frames first.
        let frames = run(cfg, Duration::from_micros(120), Duration::from_millis(50));
        assert!(frames.iter().filter(|f| f.1.len() == 16).count() >= frames.len() - 1);
    }

    #[test]
    fn reports_of_small_packets_wait_longer() {
        let cfg = ReceiverConfig {
            feedback_max_entries: 32,
            feedback_max_delay: Duration::from_millis(10),
            feedback_max_delay_small: Duration::from_millis(40),
            ..ReceiverConfig::default()
        };
        let mut r: Receiver<()> = Receiver::new(cfg);
        let mut buf = vec![0u8; wire::feedback_max_len(MAX_FEEDBACK_ENTRIES)];
        let t0 = Instant::from_millis(1);
        r.handle_data(t0, &data(0), 52, ());
        while r.poll_release(t0).is_some() {}
        assert_eq!(r.poll_timeout(), Some(t0 + Duration::from_millis(40)));
        let t1 = t0 + Duration::from_millis(15);
        assert!(
            r.poll_feedback(t1, &mut buf).is_none(),
            "an ACK's report waits"
        );
        // A full-size packet joins: the whole batch is due 10 ms after the
        // oldest entry, so now.
        r.handle_data(t1, &data(1), 1400, ());
        let (_, n) = r.poll_feedback(t1, &mut buf).expect("due");
        let Ok(Frame::Feedback(v)) = wire::decode(&buf[..n]) else {
            panic!("not feedback");
        };
        assert_eq!(v.len(), 2);
        // Afterwards small packets again get the long bound.
        r.handle_data(t1, &data(2), 52, ());
        let t2 = t1 + Duration::from_millis(39);
        assert!(r.poll_feedback(t2, &mut buf).is_none());
        assert!(r
            .poll_feedback(t1 + Duration::from_millis(40), &mut buf)
            .is_some());
    }

    #[test]
    fn one_entry_per_frame_without_batching() {
        let frames = run(
            ReceiverConfig::default(),
            Duration::from_micros(1200),
            Duration::from_millis(20),
        );
        assert!(frames.len() >= 16);
        assert!(frames.iter().all(|f| f.1.len() == 1));
    }
}
