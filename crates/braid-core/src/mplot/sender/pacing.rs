//! Per-path pacing of MPLOT's sender (`SenderConfig::pacing`): each path's
//! packets take slots of a [`crate::pacer::Pacer`] at `gain x w_i /
//! SRTT_i`, so a window leaves spread over the round trip.

use super::Sender;
use crate::time::{tx_time, Duration, Instant};

impl Sender {
    /// The rate path `path` is paced at, bit/s: `gain x w / SRTT`, or
    /// `None` when pacing is off or the path has no RTT sample yet (its
    /// initial window leaves at once, as TCP's does).
    pub fn pacing_rate(&self, path: usize) -> Option<f64> {
        let p = self.cfg.pacing?;
        let cc = &self.cc[path];
        if !cc.rtt().has_samples() {
            return None;
        }
        let srtt = cc.srtt().as_secs_f64();
        if srtt <= 0.0 {
            return None;
        }
        let gain = if cc.in_slow_start() {
            p.slow_start_gain
        } else {
            p.gain
        };
        Some(gain.max(0.1) * cc.window() * 8.0 / srtt)
    }

    /// Whether path `path`'s pacer lets a packet leave at `now`; if not,
    /// the path is to be woken when it does.
    pub(super) fn pacer_ready(&mut self, now: Instant, path: usize) -> bool {
        if self.pacing_rate(path).is_none() || self.pacers[path].ready(now) {
            return true;
        }
        self.pace_wake[path] = Some(self.pacers[path].next());
        self.pace_held[path] = true;
        false
    }

    /// A packet of `size` bytes left on `path` at `now`: it takes its
    /// transmission time at the pacing rate from the path's slot.
    pub(super) fn take_pacer(&mut self, now: Instant, path: usize, size: usize) {
        let Some(rate) = self.pacing_rate(path) else {
            return;
        };
        // Only a path its pacer held back has slots to catch up: one that
        // waited for its window (or for data) sends from `now`, else the
        // window an ACK batch opens would leave as one burst of up to
        // `catch_up` of slots.
        let catch_up = if std::mem::take(&mut self.pace_held[path]) {
            self.catch_up(path)
        } else {
            Duration::ZERO
        };
        self.pacers[path].take(now, tx_time(size as u32, rate), catch_up);
    }

    /// How far behind its schedule path `path` may catch up after a late
    /// call: `catch_up_rtts` of its smallest RTT, at least
    /// `Pacing::MIN_CATCH_UP`.
    fn catch_up(&self, path: usize) -> Duration {
        let Some(p) = self.cfg.pacing else {
            return Duration::ZERO;
        };
        let min = self.cc[path].rtt().min_rtt().unwrap_or_default();
        min.mul_f64(p.catch_up_rtts.max(0.0))
            .max(super::Pacing::MIN_CATCH_UP)
    }

    /// The earliest instant a path held back by its pacer may send.
    pub(super) fn pace_deadline(&self) -> Option<Instant> {
        self.pace_wake.iter().flatten().min().copied()
    }

    /// Forgets the wake-ups that are due at `now` (the caller polls for
    /// packets after `handle_timeout`; a path still held back asks again).
    pub(super) fn clear_pace_wakes(&mut self, now: Instant) {
        for w in &mut self.pace_wake {
            if w.is_some_and(|t| t <= now) {
                *w = None;
            }
        }
    }
}
