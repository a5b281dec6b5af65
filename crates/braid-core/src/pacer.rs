//! A pacing slot: when a path may send its next packet, so that a window's
//! worth of packets leaves spread over the round trip instead of in one
//! burst at line rate.
//!
//! Why pace at all: a bottleneck queue of about one bandwidth-delay product
//! absorbs a window sent at the path's rate, but a window released in one
//! burst (an ACK-clocked sender whose ACKs come back in batches, a
//! reopened window after a cut, a late wake-up of the sending loop) piles
//! up at the bottleneck and overflows it long before the path is full.
//! Linux paces TCP at `2 x cwnd / SRTT` in slow start and `1.2 x cwnd /
//! SRTT` after it (`tcp_update_pacing_rate`, `sysctl_tcp_pacing_ss_ratio`
//! and `_ca_ratio`) for this reason.
//!
//! The slot is the only state: each packet takes its transmission time at
//! the pacing rate from it. Used by R-MTP's channels (rate from packet
//! pairs) and MPLOT's paths (rate from the window); the tunnel's sender
//! paces through queues of its own (`sender/pacing.rs`), whose release
//! times EDPF needs to see.

use crate::time::{Duration, Instant};

/// The instant a path's next packet may leave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pacer {
    next: Instant,
}

impl Pacer {
    /// A pacer whose first slot is free at once.
    pub fn new() -> Self {
        Pacer::default()
    }

    /// When the next packet may leave.
    pub fn next(&self) -> Instant {
        self.next
    }

    /// Whether a packet may leave at `now`.
    pub fn ready(&self, now: Instant) -> bool {
        self.next <= now
    }

    /// Moves the slot to `at` (a path that starts over, or a probe that
    /// must leave now).
    pub fn reset(&mut self, at: Instant) {
        self.next = at;
    }

    /// Takes the slot at `now` for a packet that occupies `gap` of the
    /// pacing rate (its bytes over the rate; two packets' worth for the
    /// first of a back-to-back pair).
    ///
    /// Slots missed because the caller came late (a sleeping or
    /// descheduled send loop: 1-10 ms on a loaded host) are caught up, up
    /// to `catch_up`; without that every late wake-up lost its slots and
    /// the path ran below its rate. An idle path does not save up more for
    /// a burst: a caller more than `max(catch_up, gap)` behind the slot
    /// starts again from `now - catch_up`.
    pub fn take(&mut self, now: Instant, gap: Duration, catch_up: Duration) {
        if self.next + catch_up.max(gap) < now {
            self.next = now - catch_up;
        }
        self.next += gap;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn slots_follow_the_gap_and_a_late_caller_catches_up_within_the_bound() {
        let t0 = Instant::from_millis(100);
        let mut p = Pacer::new();
        p.reset(t0);
        assert!(p.ready(t0) && !p.ready(t0 - ms(1)));
        // On time: back to back at the gap.
        p.take(t0, ms(1), ms(4));
        assert_eq!(p.next(), t0 + ms(1));
        assert!(!p.ready(t0 + Duration::from_micros(999)));
        // 3 ms late: the missed slots stay due.
        p.take(t0 + ms(4), ms(1), ms(4));
        assert_eq!(p.next(), t0 + ms(2));
        // 50 ms late: at most 4 ms are caught up.
        let now = t0 + ms(52);
        p.take(now, ms(1), ms(4));
        assert_eq!(p.next(), now - ms(3));
        // No catch-up: an idle path starts from now.
        let now = now + ms(20);
        p.take(now, ms(2), Duration::ZERO);
        assert_eq!(p.next(), now + ms(2));
    }

    #[test]
    fn a_caller_late_by_less_than_one_gap_keeps_its_schedule() {
        let mut p = Pacer::new();
        p.reset(Instant::from_millis(10));
        // Half a gap late with no catch-up allowed: the slot is not moved
        // to now, so the path keeps its rate on a timer that wakes late.
        p.take(Instant::from_micros(10_500), ms(1), Duration::ZERO);
        assert_eq!(p.next(), Instant::from_millis(11));
    }
}
