//! A path whose oldest packet in flight is overdue counts farther, by how
//! overdue it is, where PET chooses a path (`PathState::overdue_delay`).
//!
//! Why: a delay step shows first as silence, and the quiet rule
//! (`sender/quiet.rs`) needs another path to go on reporting packets sent
//! after the silent path's. A stream that uses one path alone has none:
//! the inner TCP's ACKs of an upload, which keep their own delays and go
//! on the nearest path. On `lab/handover.toml` the cellular path (15 ms
//! away) moves to 215 ms beside 20 ms Wi-Fi; the server went on sending
//! the ACKs on the cellular downlink for 0.8 s after the step, each 200
//! ms late, and the upload, clocked by them, ran at a third of its rate
//! that long (`braid sim run lab/handover.toml --handshake`). Its data
//! had left the path within 0.1 s, by the quiet rule.
//!
//! The rule: before each choice of a path, a path whose oldest packet in
//! flight (sent, not still in its pacing queue) left longer ago than the
//! path's report time (SRTT plus the reordering window, as the loss rule
//! counts it, `rack.rs`) counts farther by the excess. The packet has not
//! been reported, so the path's round trip is at least its age, whatever
//! the estimates say. The excess grows with the silence, so a path a few
//! milliseconds nearer than another loses its packets to it within
//! milliseconds of its report time, and a far path with a long queue
//! ahead only when the silence outgrows that. It only steers new packets:
//! nothing is declared lost or copied (the loss and quiet rules do that),
//! and predictions of arrival keep the measured delays. While the path is
//! quiet the larger of the two delays counts. A lost packet is overdue
//! only until the loss rules declare it, which on a lossy path is the
//! moment it becomes overdue.

use super::rack::overdue_after;
use super::{slot, Fate, Sender};
use crate::time::Instant;

impl<P> Sender<P> {
    /// Sets each path's `overdue_delay` for a choice of a path at `now`.
    pub(super) fn note_overdue(&mut self, now: Instant) {
        for i in 0..self.paths.len() {
            let late = self.oldest_sent(i).and_then(|sent| {
                let p = &self.paths[i];
                now.saturating_since(sent)
                    .checked_sub(overdue_after(p)?)
                    .filter(|d| !d.is_zero())
            });
            self.paths[i].overdue_delay = late;
        }
    }

    /// When path `i`'s oldest packet in flight left: `None` if it has none
    /// or the packet is still in the path's pacing queue
    /// (`Sender::oldest_unreported`, as the loss timeout reads it).
    fn oldest_sent(&self, i: usize) -> Option<Instant> {
        let (r, queued) = self.oldest_unreported(slot(self.paths[i].id))?;
        (matches!(r.fate, Fate::InFlight) && !queued).then_some(r.sent_at)
    }
}
