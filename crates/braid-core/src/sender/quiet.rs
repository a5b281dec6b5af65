//! A path that goes quiet: it stops reporting while the other paths go on
//! reporting packets sent after its own. Its packets in flight are copied
//! to the other paths as each becomes overdue, and the path counts as
//! farther by its loss timeout until it reports again.
//!
//! Why: a delay step (a handover onto a longer backhaul) or an outage
//! shows first as silence. On `lab/handover.toml` (cellular 15 ms away
//! moving to 215 ms beside 20 ms Wi-Fi) the sender heard nothing new from
//! the cellular path for 440 ms, a round trip at the new delay. Its
//! packets were found lost only by the path's timeout (RTO plus half an
//! RTT, at least 218 ms after each left), after the peer's resequencer had
//! given their gaps up, and PET went on placing a quarter of the stream on
//! the path: its delay estimate could not move before a late packet was
//! reported, and then waited out the rise's hold. The inner TCP stalled
//! for 0.9 s and retransmitted 74 segments (`braid sim run
//! lab/handover.toml`: 22.84 Mbit/s against 24.13 for Wi-Fi alone).
//!
//! The rule (`RackCase::Quiet` in `rack.rs`): a path with packets behind
//! its oldest one has gone quiet once a packet sent after that one was
//! reported on any path, the path itself has reported nothing for its SRTT
//! plus the reordering window (from the later of the packet's send and
//! the path's last report), and another path reported at least a window
//! after that. On a clean path, whose losses the FIFO rule and the peer's
//! NACKs find once a later packet on the path arrives, this is what now
//! declares its packets lost before the path's timeout; a lossy path's
//! packets are declared lost a window after they left anyway, and the
//! path goes quiet too if nothing came from it since. A lost report
//! cannot make a path quiet while its later reports come; a whole window
//! without one can, and then costs a copy of what the path had in
//! flight.
//!
//! A path can also go quiet at a packet's timeout (`Sender::quiet_at_timeout`):
//! it holds packets behind it, has reported nothing for its SRTT plus the
//! window, and another path reported a window after its silence began, or
//! (a clean path) the other path is idle, with nothing to report. The
//! cross-path rule needs a later packet reported, which a far other path
//! brings only after its own round trip, and an idle one never; a near
//! path whose delay steps past its timeout meets the timeout first.
//! Change set 13/0 of `lab/sweep-changes.sh 40 13` (1.66 Mbit/s 35.5 ms
//! away moving to 272 ms, beside 13.57 Mbit/s 123 ms away): the server's
//! timer found the inner TCP's ACKs on the moved path lost 0.24 s after
//! they left, when the far path's reports of later ones were still on
//! their way; the path still looked the nearest and their copies went on
//! it again. With the path quiet at the timeout the copies go on the far
//! path: 12.45 -> 12.90 Mbit/s with the first condition (its far path
//! alone 13.10), 13.08 with the idle path's too; 3/28 and 9/33 of the
//! same draws gain 3.9 and 5.1.
//!
//! In the lab the handover's cellular path lost packets at its 30 kB
//! queue, so its peer measured loss above 1 %: with the quiet state kept
//! to clean paths, the state was never set in two of three runs (`tunnel
//! totals` in the client's log: quiet 0, 805-830 repairs, 22.1 Mbit/s)
//! and was in the third (quiet 1, 49 repairs, 23.25).
//!
//! While quiet the path counts as farther by its loss timeout at the time
//! it went quiet (`PathState::quiet_delay`) where packets are placed: in
//! PET's choice of a path (`Pet::choice_delays`), in the choice of a path
//! for repairs and copies (`Sender::delivery_cost`), and in the pacing
//! bound, which lets the other paths' queues hold the inner TCP's window
//! while the quiet path's share of it comes back as copies (as it lets
//! them for a path not yet heard from). New packets and copies go there
//! only when the other paths are booked that far ahead. PET's predicted
//! arrivals keep the measured delay: its queue correction learns from
//! their error. Taking the path out of use altogether did as well on
//! delay steps but worse on outages (seven draws of 30 change sets, in
//! all 0.6 % more than without the rule, against 1.2 % with the delay):
//! the inner TCP's whole window fell on the other paths' pacing queues,
//! which dropped what they could not hold, and the inner TCP timed out
//! more often. Without the delay in the pacing bound, the delay steps
//! gained nothing in all (set 1/24 of those draws: 21.92 Mbit/s before
//! the rule, 15.60 with it and the old bound, 20.99 as shipped).
//!
//! The path is back to its measured delay when it reports the newest
//! original it held when it went quiet, or a later packet (it has
//! delivered everything it held), with its delay estimate moved to a step
//! the late packets showed (`OwdEstimator::follow_pending_rise`: the
//! silence lasted a round trip, longer than any hold the estimator would
//! wait for); if their delays rose but not yet as a clear step (too few
//! samples, or spread like a queue that builds), or without such a
//! report, after its loss timeout from when it went quiet: a path that
//! stays dark is tried again at that pace.

use super::{slot, Sender};
use crate::path::PathId;
use crate::time::Instant;

use super::path_sender::Quiet;

impl<P> Sender<P> {
    /// The quiet-path rule found a packet on `id` overdue.
    pub(super) fn went_quiet(&mut self, now: Instant, id: PathId) {
        let s = slot(id);
        if self.per_path[s].quiet.is_some() {
            return;
        }
        let Some(i) = self.paths.iter().position(|p| p.id == id) else {
            return;
        };
        let Some(last_seq) = self.per_path[s].last_seq else {
            return;
        };
        self.per_path[s].quiet = Some(Quiet {
            last_seq,
            found: now,
        });
        // The scheduler reads the delay at its next decision; the path set
        // did not change (ADAS and WRR restart their weights on a change).
        self.paths[i].quiet_delay = Some(self.loss_timeout(&self.paths[i]));
        self.stats.quiet_paths += 1;
    }

    /// A feedback frame from path `id` reported packets up to `seq` (its
    /// delay samples taken): a quiet path that has delivered all it held
    /// when it went quiet is back at its measured delay, moved to a step
    /// its late packets showed.
    pub(super) fn quiet_reported(&mut self, now: Instant, id: PathId, seq: u64) {
        let s = slot(id);
        let Some(q) = self.per_path[s].quiet else {
            return;
        };
        if seq < q.last_seq {
            return;
        }
        let Some(i) = self.paths.iter().position(|p| p.id == id) else {
            return;
        };
        let owd = &mut self.paths[i].owd;
        if owd.rise_pending() {
            if !owd.follow_pending_rise(now) {
                // Not a clear step yet: the expiry tries the path again.
                return;
            }
            self.stats.delay_rises += 1;
            self.paths[i].rtt.restart_min();
        }
        self.leave_quiet(i);
    }

    /// When quiet path `i` is tried again without a report.
    fn quiet_until(&self, i: usize) -> Option<Instant> {
        let p = &self.paths[i];
        let q = self.per_path[slot(p.id)].quiet?;
        Some(q.found + self.loss_timeout(p))
    }

    /// Puts quiet paths whose time is up back at their measured delay.
    pub(super) fn expire_quiet(&mut self, now: Instant) {
        for i in 0..self.paths.len() {
            if self.quiet_until(i).is_some_and(|t| t <= now) {
                self.leave_quiet(i);
            }
        }
    }

    /// The earliest time a quiet path is tried again.
    pub(super) fn quiet_expiry(&self) -> Option<Instant> {
        (0..self.paths.len())
            .filter_map(|i| self.quiet_until(i))
            .min()
    }

    /// Path `i` is back at its measured delay.
    fn leave_quiet(&mut self, i: usize) {
        let ps = &mut self.per_path[slot(self.paths[i].id)];
        if ps.quiet.take().is_some() {
            ps.back_from = Some(self.next_seq);
        }
        self.paths[i].quiet_delay = None;
    }
}
