//! The notices of losses the sender will not repair (`Control::SKIP`),
//! gathered for a moment and sent together, charged to the pacer of each
//! path they go on.
//!
//! Why: the sender gives up a repair when every path is booked past its
//! pacing bound (`Sender::resend`), and it finds losses one feedback at a
//! time, so a notice per finding went out with one or two entries each.
//! Change set 4/2 of `lab/sweep-changes.sh 40 4` (40.3 Mbit/s 102 ms away
//! dark for 0.5 s, beside 2.0 Mbit/s 29 ms away with a 15 kB buffer) gave
//! up 405 repairs in 100 ms: 265 notices of 63 bytes, one every 0.6 ms,
//! all on the near path, whose pacer was already booked 210 ms ahead with
//! repair copies. Uncharged, they came on top of the path's rate and
//! overflowed its buffer (63 packets dropped); the drops made the thin
//! path lossy to PET's thin rule (`sched/pet/thin.rs`), and it carried no
//! data for the rest of the run (31.96 Mbit/s, where the fast path alone
//! carries 36.75). Gathered for [`SKIP_BATCH_DELAY`], those notices fill
//! a few frames; a receiver learns of a given-up loss that much later,
//! against the round trips its resequencer holds the gap for.

use super::{Control, Outputs, Tunnel};
use crate::time::{Duration, Instant};

/// How long a notice waits for others to go out with it.
const SKIP_BATCH_DELAY: Duration = Duration::from_millis(5);

/// Most entries in one notice; more go out at once.
const SKIP_BATCH_MAX: usize = Control::SKIP_MAX_ENTRIES;

/// Given-up losses not yet announced, and since when the oldest waits.
#[derive(Clone, Debug, Default)]
pub(super) struct SkipNotices {
    seqs: Vec<u64>,
    since: Option<Instant>,
}

impl SkipNotices {
    /// Adds `seqs`, found at `now`.
    fn note(&mut self, now: Instant, seqs: Vec<u64>) {
        if seqs.is_empty() {
            return;
        }
        self.since.get_or_insert(now);
        self.seqs.extend(seqs);
    }

    /// When the gathered notices must go out.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.since.map(|t| t + SKIP_BATCH_DELAY)
    }

    /// The next frame's worth of entries if they are due at `now` (their
    /// delay has passed, or a frame is full).
    fn take_due(&mut self, now: Instant) -> Option<Vec<u64>> {
        let full = self.seqs.len() >= SKIP_BATCH_MAX;
        if !full && self.deadline().is_none_or(|t| now < t) {
            return None;
        }
        let n = self.seqs.len().min(SKIP_BATCH_MAX);
        let due: Vec<u64> = self.seqs.drain(..n).collect();
        if self.seqs.is_empty() {
            self.since = None;
        }
        Some(due)
    }
}

impl Tunnel {
    /// Gathers the sender's given-up losses and sends the notices that are
    /// due, on the paths that return earliest (`Tunnel::reverse_paths`),
    /// each charged to that path's pacer.
    pub(super) fn send_skips(&mut self, now: Instant, out: &mut Outputs) {
        let found = self.sender.take_unrepaired();
        self.skips.note(now, found);
        while let Some(seqs) = self.skips.take_due(now) {
            let body: Vec<u8> = seqs
                .iter()
                .flat_map(|&s| (s as u32).to_be_bytes())
                .collect();
            let c = Control {
                kind: Control::SKIP,
                body: &body,
            };
            let mut b = vec![0u8; c.buffer_len()];
            if c.emit(&mut b).is_err() {
                continue;
            }
            for id in self.reverse_paths() {
                self.sender
                    .charge_pacer(now, id, b.len() + crate::conn::OUTER_OVERHEAD);
                self.transmit(now, id, &b, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_wait_for_the_batch_delay_or_a_full_frame() {
        let ms = Instant::from_millis;
        let mut s = SkipNotices::default();
        assert_eq!(s.take_due(ms(0)), None);
        s.note(ms(10), vec![1, 2]);
        s.note(ms(12), vec![3]);
        assert_eq!(s.deadline(), Some(ms(10) + SKIP_BATCH_DELAY));
        assert_eq!(s.take_due(ms(14)), None, "the first waits 5 ms");
        assert_eq!(s.take_due(ms(15)), Some(vec![1, 2, 3]));
        assert_eq!(s.deadline(), None);
        // A full frame goes at once, the rest when due.
        s.note(ms(20), (0..300).collect());
        assert_eq!(s.take_due(ms(20)).map(|v| v.len()), Some(SKIP_BATCH_MAX));
        assert_eq!(s.take_due(ms(20)), None);
        assert_eq!(
            s.take_due(ms(25)).map(|v| v.len()),
            Some(300 - SKIP_BATCH_MAX)
        );
    }
}
