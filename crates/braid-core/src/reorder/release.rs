//! Handing packets up: the in-order release queue and its pacing (BMP's
//! design criterion 5, "no burst to TCP"), and the bounded buffer of
//! out-of-order packets that feeds it (criterion 3 within memory).
//!
//! Why a concept of its own: what is released and when is independent of
//! why a gap was given up (`loss`). A packet enters `ready` either in
//! order or when a skip makes it in order; from there it leaves at most
//! every `pace_fraction` x the smoothed inter-arrival gap, unless it was
//! flushed by an overflow or a skip (`urgent`), where memory and the
//! inner TCP's progress come before smoothness.

use super::{Cause, ReorderMode, Resequencer, MAX_SPAN};
use crate::path::PathId;
use crate::time::{Duration, Instant};

impl<P> Resequencer<P> {
    /// Next packet to hand up at `now`, if one is due (pacing respected).
    pub fn poll_release(&mut self, now: Instant) -> Option<P> {
        if let Some(p) = self.unordered.pop_front() {
            self.stats.released += 1;
            return Some(p);
        }
        let (seq, _, _, _) = self.ready.front()?;
        let urgent = self.is_urgent(*seq);
        if !urgent && now < self.next_release_at {
            return None;
        }
        let (_, len, _, payload) = self.ready.pop_front()?;
        self.stats.released += 1;
        self.stats.queued_packets -= 1;
        self.stats.queued_bytes -= len;
        // The next release is spaced from when this one was due, not from
        // when the caller got round to it: a wake-up that comes late (a
        // busy core, a coarse timer) releases what fell due meanwhile, so
        // the release rate stays 1 / pace interval. Spacing from `now`
        // lost the lateness at every packet: with a 2 us interval and
        // wake-ups 1 ms late, a batch drained at 1000 packets/s, and a
        // tunnel striping over two fast paths (whose pacing queues
        // reorder nearly every packet) moved a quarter of one path's rate.
        let due = self.next_release_at.min(now);
        if let Some(&(next, _, _, _)) = self.ready.front() {
            self.next_release_at = if self.is_urgent(next) {
                now
            } else {
                let pace = self.pace_interval();
                due + self.episode_interval().map_or(pace, |e| pace.min(e))
            };
        }
        Some(payload)
    }

    /// The spacing that keeps pace with the episode's own arrivals:
    /// `pace_fraction` x the mean gap between the arrivals of the packets
    /// queued since `ready` was last empty. The release interval never
    /// exceeds it, so a batch drains at least 1 / `pace_fraction` times as
    /// fast as it arrived.
    ///
    /// Why: the pace interval follows the smoothed inter-arrival gap *now*,
    /// and arrivals slow down exactly while a batch waits behind a gap: the
    /// inner TCP's window fills with the held packets and it stops sending.
    /// In the fault swarm's seed 2015 (one 20 Mbit/s path, 114 ms, 1.1 %
    /// loss, the inner TCP with Linux's RTO floor) 182 packets that had
    /// arrived within 0.4 s were released at about 20 a second once the
    /// loss timer gave their gap up, because the last few arrivals had come
    /// tens of milliseconds apart. The inner TCP's retransmission of the
    /// lost segment queued behind them, and so did each retransmission
    /// after a timeout: 9.3 s without progress.
    pub(super) fn episode_interval(&self) -> Option<Duration> {
        let n = self.episode_packets.checked_sub(1).filter(|&n| n > 0)?;
        let span = self
            .episode_last_arrival
            .saturating_since(self.episode_first_arrival);
        let f = self.cfg.pace_fraction;
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        (f.is_finite() && f > 0.0).then(|| (span / n).mul_f64(f.min(1.0)))
    }

    /// Smoothed inter-arrival gap (EWMA, gain 1/8) that pacing uses.
    pub fn smoothed_gap(&self) -> Option<Duration> {
        self.smoothed_gap_ns.map(|g| Duration::from_nanos(g as u64))
    }

    /// Current spacing between paced releases.
    pub fn pace_interval(&self) -> Duration {
        let f = self.cfg.pace_fraction;
        if self.cfg.mode == ReorderMode::Off || !f.is_finite() || f <= 0.0 {
            return Duration::ZERO;
        }
        match self.smoothed_gap_ns {
            Some(g) => Some(Duration::from_nanos((g * f) as u64))
                .filter(|&d| d >= self.cfg.min_pace_interval)
                .unwrap_or(Duration::ZERO),
            None => Duration::ZERO,
        }
    }

    pub(super) fn is_urgent(&self, seq: u64) -> bool {
        self.cfg.mode == ReorderMode::Bmp && seq < self.urgent_upto
    }

    /// Everything queued now skips pacing.
    pub(super) fn mark_urgent(&mut self, now: Instant) {
        if let Some((last, _, _, _)) = self.ready.back() {
            self.urgent_upto = self.urgent_upto.max(last.saturating_add(1));
            self.next_release_at = self.next_release_at.min(now);
        }
    }

    pub(super) fn push_ready(
        &mut self,
        now: Instant,
        seq: u64,
        len: usize,
        arrived: Instant,
        payload: P,
    ) {
        if self.ready.is_empty() {
            // Nothing waiting: this one goes at once, and a new release
            // episode begins.
            self.next_release_at = now;
            self.episode_packets = 0;
            self.episode_first_arrival = arrived;
            self.episode_last_arrival = arrived;
        }
        self.episode_packets = self.episode_packets.saturating_add(1);
        self.episode_first_arrival = self.episode_first_arrival.min(arrived);
        self.episode_last_arrival = self.episode_last_arrival.max(arrived);
        self.ready.push_back((seq, len, arrived, payload));
        self.stats.queued_packets += 1;
        self.stats.queued_bytes += len;
        if self.cfg.mode == ReorderMode::Bmp && self.stats.queued_bytes > self.cfg.max_buffer_bytes
        {
            // Pacing must not become a second, unbounded buffer.
            self.mark_urgent(now);
        }
    }

    /// Moves the lowest buffered packet to the release queue.
    pub(super) fn pop_buffered_to_ready(&mut self, now: Instant) {
        if let Some((seq, (len, path, arrived, payload))) = self.buf.pop_first() {
            // A number whose packet went up out of order: nothing to hand up.
            let Some(payload) = payload else { return };
            self.stats.buffered_packets -= 1;
            self.stats.buffered_bytes -= len;
            let slot = &mut self.paths[path.0 as usize];
            slot.buffered_packets -= 1;
            slot.buffered_bytes -= len;
            self.push_ready(now, seq, len, arrived, payload);
        }
    }

    /// Releases the buffered run that starts at `next_expected`.
    pub(super) fn drain_contiguous(&mut self, now: Instant) {
        while self.buf.keys().next() == Some(&self.next_expected) {
            self.pop_buffered_to_ready(now);
            self.next_expected = self.next_expected.saturating_add(1);
        }
    }

    /// Buffers an out-of-order packet within `max_buffer_bytes`: while it
    /// does not fit, the head gap is declared lost and the in-order run
    /// behind it released (criterion 4 beats criterion 3 when memory runs
    /// out). If it still does not fit (everything buffered is above it) or
    /// is larger than the whole buffer, it is dropped.
    pub(super) fn insert_buffered(
        &mut self,
        now: Instant,
        path: PathId,
        seq: u64,
        len: usize,
        payload: P,
    ) {
        let max = self.cfg.max_buffer_bytes;
        if len > max {
            // Could never fit: do not throw the buffer away for it.
            self.stats.dropped_overflow += 1;
            return;
        }
        let mut flushed = false;
        while self.stats.buffered_bytes + len > max {
            let first = match self.buf.keys().next() {
                Some(&k) if k < seq => k,
                _ => break,
            };
            let from = self.next_expected;
            self.skip_range(from, first, Cause::Overflow);
            self.next_expected = first;
            self.drain_contiguous(now);
            flushed = true;
        }
        if seq == self.next_expected {
            // The run released above reached it: it is in order now.
            self.next_expected = seq.saturating_add(1);
            self.push_ready(now, seq, len, now, payload);
        } else if self.stats.buffered_bytes + len > max {
            self.stats.dropped_overflow += 1;
        } else {
            self.buf.insert(seq, (len, path, now, Some(payload)));
            let slot = &mut self.paths[path.0 as usize];
            slot.buffered_packets += 1;
            slot.buffered_bytes += len;
            self.note_buffered_arrival(now, seq);
            self.stats.buffered_packets += 1;
            self.stats.buffered_bytes += len;
            self.stats.max_buffered_bytes =
                self.stats.max_buffered_bytes.max(self.stats.buffered_bytes);
        }
        if flushed {
            self.mark_urgent(now);
        }
    }

    /// Remembers when `seq`, now in `buf`, arrived (the front of
    /// `arrivals` dates the head gap).
    pub(super) fn note_buffered_arrival(&mut self, now: Instant, seq: u64) {
        self.arrivals.push_back((now, seq));
        if self.arrivals.len() > MAX_SPAN as usize {
            // Forgetting the earliest only makes the timer later.
            self.arrivals.pop_front();
        }
    }
}
