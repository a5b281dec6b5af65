//! Declaring gaps lost (BMP's design criterion 4, "do not wait forever
//! on a lost packet"): the comparison rule, previous-on-path links, the
//! loss timer and the sender's give-up, and the skip history that tells a
//! late packet from a duplicate.
//!
//! Why a concept of its own: each rule decides only *that* the numbers
//! below some bound will not come (or no longer matter); releasing what
//! is behind them is `release`'s. With the sender repairing losses
//! (`repair_wait`), the comparison and link rules give way to the timer,
//! so a gap known lost is held for its repair (see the module overview).

use super::{Cause, PathSlot, ReorderMode, Resequencer, MAX_KNOWN_LOST, MAX_SPAN, SKIP_HISTORY};
use crate::time::Instant;

impl<P> Resequencer<P> {
    /// When the gap at `seq` was first seen: the earliest arrival among the
    /// packets buffered above it. `None` if nothing is buffered above it.
    pub(super) fn first_seen_above(&self, seq: u64) -> Option<Instant> {
        let (&top, _) = self.buf.last_key_value()?;
        if top <= seq {
            return None;
        }
        self.arrivals
            .iter()
            .find(|&&(_, n)| n > seq && self.buf.contains_key(&n))
            .map(|&(t, _)| t)
    }

    /// When the gap of a number the loss timer gave up was first seen.
    pub(super) fn skipped_seen_at(&self, seq: u64) -> Option<Instant> {
        if seq < self.history_floor {
            return None;
        }
        let i = self.skipped.partition_point(|&(s, _, _)| s <= seq);
        (i > 0 && seq < self.skipped[i - 1].1)
            .then(|| self.skipped[i - 1].2)
            .flatten()
    }

    /// Runs timers due at `now` (loss timer). Extra calls are no-ops.
    ///
    /// On loss-timer expiry the missing numbers up to the next buffered
    /// packet are skipped (`lost_timer`) and the timer restarts for any new
    /// head gap. It also re-runs comparison-based detection, since a path
    /// that fell silent for `active_window` no longer holds it back.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.last_now = self.last_now.max(now);
        if self.cfg.mode == ReorderMode::Off {
            return;
        }
        // With `timer_from_first_seen` several gaps may be due at once.
        loop {
            let ne_before = self.next_expected;
            let mut fired = false;
            if let Some(deadline) = self.loss_deadline {
                if now >= deadline {
                    if let Some(first) = self.buf.keys().next().copied() {
                        let from = self.next_expected;
                        self.timer_seen = self.first_seen_above(from);
                        self.skip_range(from, first, Cause::Timer);
                        self.timer_seen = None;
                        self.next_expected = first;
                    }
                    self.loss_deadline = None;
                    fired = true;
                }
            }
            self.advance(now);
            self.rearm(now, ne_before);
            if !fired {
                break;
            }
        }
    }

    /// The sender will not repair `seq`: stop holding its gap (it is
    /// skipped as a known loss when it reaches the head). Numbers already
    /// released, buffered or outside the span are ignored.
    pub fn give_up(&mut self, now: Instant, seq: u64) {
        self.last_now = self.last_now.max(now);
        if self.cfg.mode == ReorderMode::Off
            || seq < self.next_expected
            || seq - self.next_expected > MAX_SPAN
            || self.buf.contains_key(&seq)
        {
            return;
        }
        self.known_lost.insert(seq);
        if self.known_lost.len() > MAX_KNOWN_LOST {
            self.known_lost.pop_last();
        }
        let ne_before = self.next_expected;
        self.advance(now);
        self.rearm(now, ne_before);
    }

    /// Counts the missing numbers [from, to) as lost and remembers them.
    /// Those already known lost by a previous-on-path link are counted
    /// under that cause whatever triggered the skip. The caller moves
    /// `next_expected` to `to`.
    pub(super) fn skip_range(&mut self, from: u64, to: u64, cause: Cause) {
        if to <= from {
            return;
        }
        // known_lost only holds numbers >= next_expected == from.
        let rest = self.known_lost.split_off(&to);
        let by_link = std::mem::replace(&mut self.known_lost, rest).len() as u64;
        let n = to - from;
        self.stats.lost_prev_link += by_link;
        let other = n - by_link.min(n);
        match cause {
            Cause::Comparison => self.stats.lost_comparison += other,
            Cause::PrevLink => self.stats.lost_prev_link += other,
            Cause::Timer => self.stats.lost_timer += other,
            Cause::Overflow => self.stats.lost_overflow += other,
        }
        let seen = self.timer_seen;
        match self.skipped.back_mut() {
            Some(last) if last.1 == from && last.2 == seen => last.1 = to,
            _ => self.skipped.push_back((from, to, seen)),
        }
        if self.skipped.len() > SKIP_HISTORY {
            if let Some((_, end, _)) = self.skipped.pop_front() {
                self.history_floor = self.history_floor.max(end);
            }
        }
    }

    /// Whether `seq` (< next_expected) was given up rather than delivered.
    pub(super) fn was_skipped(&self, seq: u64) -> bool {
        if seq < self.history_floor {
            return true;
        }
        let i = self.skipped.partition_point(|&(s, _, _)| s <= seq);
        i > 0 && seq < self.skipped[i - 1].1
    }

    /// Advances `next_expected` to `target`, releasing buffered packets and
    /// declaring the missing numbers lost; what it releases is not paced.
    pub(super) fn skip_to(&mut self, now: Instant, target: u64, cause: Cause) {
        while self.next_expected < target {
            let ne = self.next_expected;
            match self.buf.keys().next().copied() {
                Some(k) if k == ne => {
                    self.pop_buffered_to_ready(now);
                    self.next_expected = ne + 1;
                }
                Some(k) if k < target => {
                    self.skip_range(ne, k, cause);
                    self.next_expected = k;
                }
                _ => {
                    self.skip_range(ne, target, cause);
                    self.next_expected = target;
                }
            }
        }
        self.drain_contiguous(now);
        self.mark_urgent(now);
    }

    /// Whether the path counts for comparison at `now`.
    pub(super) fn active(&self, slot: &PathSlot, now: Instant) -> bool {
        slot.known && !slot.removed && now < slot.last_activity + self.cfg.active_window
    }

    /// Comparison-based detection: every missing number below the returned
    /// bound has been overtaken on every active path. `None` if there is no
    /// active path or an active path has delivered nothing yet.
    pub(super) fn comparison_bound(&self, now: Instant) -> Option<u64> {
        let mut bound: Option<u64> = None;
        for &id in &self.path_list {
            let slot = &self.paths[id as usize];
            if !self.active(slot, now) {
                continue;
            }
            let m = slot.max_seq?;
            bound = Some(bound.map_or(m, |b| b.min(m)));
        }
        bound
    }

    /// Skips everything that loss detection allows at `now` and releases
    /// what becomes in order.
    pub(super) fn advance(&mut self, now: Instant) {
        loop {
            self.drain_contiguous(now);
            let ne = self.next_expected;
            if self.known_lost.first() == Some(&ne) {
                self.skip_range(ne, ne + 1, Cause::PrevLink);
                self.next_expected = ne + 1;
                continue;
            }
            let Some(&first) = self.buf.keys().next() else {
                break;
            };
            if self.cfg.comparison && !self.cfg.repair_wait {
                if let Some(bound) = self.comparison_bound(now) {
                    let target = bound.min(first);
                    if target > ne {
                        self.skip_range(ne, target, Cause::Comparison);
                        self.next_expected = target;
                        continue;
                    }
                }
            }
            break;
        }
    }

    /// The loss timer belongs to the head gap (paper: a timer per expected
    /// number N), started when the gap reaches the head or, with
    /// `timer_from_first_seen`, when it was first seen: the arrival of the
    /// earliest packet still buffered above it.
    pub(super) fn rearm(&mut self, now: Instant, ne_before: u64) {
        if self.buf.is_empty() {
            self.loss_deadline = None;
            self.arrivals.clear();
            return;
        }
        while let Some(&(_, seq)) = self.arrivals.front() {
            if seq >= self.next_expected && self.buf.contains_key(&seq) {
                break;
            }
            self.arrivals.pop_front();
        }
        let seen = match self.arrivals.front() {
            Some(&(t, _)) if self.cfg.timer_from_first_seen => t,
            _ => now,
        };
        if self.next_expected != ne_before || self.loss_deadline.is_none() {
            self.loss_armed_at = Some(seen.min(now));
            self.loss_deadline = Some(seen.min(now) + self.hold());
        }
    }

    /// When comparison-based detection could next skip the head gap without
    /// new arrivals: once every path holding it back (active, not past the
    /// gap) has gone quiet for `active_window` while some path past the gap
    /// is still active. Never earlier than the latest `now` seen, so a
    /// caller looping on `poll_timeout` cannot spin.
    pub(super) fn comparison_deadline(&self) -> Option<Instant> {
        if self.cfg.mode != ReorderMode::Bmp
            || !self.cfg.comparison
            || self.cfg.repair_wait
            || self.buf.is_empty()
        {
            return None;
        }
        let ne = self.next_expected;
        let mut t = self.last_now;
        for &id in &self.path_list {
            let slot = &self.paths[id as usize];
            if !slot.known || slot.removed {
                continue;
            }
            let blocking = !matches!(slot.max_seq, Some(m) if m > ne);
            if blocking {
                t = t.max(slot.last_activity + self.cfg.active_window);
            }
        }
        let any_past_gap = self.path_list.iter().any(|&id| {
            let slot = &self.paths[id as usize];
            slot.max_seq.is_some_and(|m| m > ne) && self.active(slot, t)
        });
        any_past_gap.then_some(t)
    }
}
