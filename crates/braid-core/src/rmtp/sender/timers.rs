//! The sender's timers: probes not answered, pacing slots, persist
//! frames and channels gone silent. See the module doc of `sender`.

use super::Sender;
use crate::rmtp::channel::State;
use crate::time::Instant;

impl Sender {
    /// When [`Sender::handle_timeout`] wants to be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.done {
            return None;
        }
        let mut t: Option<Instant> = None;
        let mut at = |x: Instant| t = Some(t.map_or(x, |y| y.min(x)));
        let work = self.has_work();
        for c in &self.channels {
            match c.state {
                State::Up if work && !self.stopped => at(c.pacer.next()),
                State::Probing(dl) => at(dl),
                State::Down(r) if work => at(r),
                _ => {}
            }
            if c.state != State::Removed {
                if let Some(d) = c.rto_deadline(self.cfg.min_rto) {
                    at(d);
                }
            }
        }
        if let Some(p) = self.persist_at {
            at(p);
        }
        // No timer for fixing the window: it is fixed on the next ACK or
        // transmit after the probe timeout, and with neither there is no
        // channel to size it from.
        t
    }

    /// Timers: probes not answered, silent channels.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.maybe_fix_window(now);
        let mut timed_out = false;
        for i in 0..self.channels.len() {
            let c = &mut self.channels[i];
            if let State::Probing(dl) = c.state {
                if now >= dl {
                    c.state = State::Probe;
                }
            }
            if c.state == State::Removed {
                continue;
            }
            let Some(d) = c.rto_deadline(self.cfg.min_rto) else {
                continue;
            };
            if now < d {
                continue;
            }
            c.silent += 1;
            c.last_ack_at = now;
            if c.silent >= self.cfg.dead_after {
                c.state = State::Down(now + self.cfg.reprobe);
                self.stats.channels_down += 1;
            }
            self.fail_outstanding(i, true);
            timed_out = true;
        }
        // A timeout with nothing to resend and nothing new: every frame
        // left is SACKed, but the ACK that would move the cumulative point
        // past them was lost. Resending the lowest draws a fresh ACK;
        // without it the sender waited for an ACK that never came (a lab
        // transfer over a lossy 300 ms path stalled at 100 %).
        if timed_out && self.retx.is_empty() && !self.have_new_frame() {
            if let Some(&seq) = self.frames.keys().next() {
                self.retx.insert(seq);
            }
        }
    }
}
