//! A path whose packets arrive much later than PET predicted is due a
//! probe pair (`PetConfig::late_probe`).
//!
//! Why: a path's rate is measured only by pairs, and a path that carries
//! only the first packets of pairs whose second goes elsewhere never
//! measures it again. A thin path nearer than the fastest counts as far
//! as it (`near.rs`) and took single packets only: a pair's second did
//! not follow its first there (it does now when EDPF placed the first
//! under the rule, `OpenPair::raised`; a path given packets one at a
//! time, each after the last pair's deadline, is still in this case).
//! Its estimate stays what its first pairs measured, and the periodic
//! probe (`probe_interval`) never comes, since each of its first packets
//! counted as a pair. On change set 6/22
//! (`lab/sweep-changes.sh 30 6`: 1.44 Mbit/s 6.7 ms away falling to 0.24
//! beside 13.3 and 2.4 Mbit/s, 15 kB queues) such a path kept its 1.4
//! Mbit/s estimate for the ten seconds after the fall; PET went on placing
//! packets on it, each arrived 150-270 ms after the others and held the
//! stream in the resequencer, and the bond carried 7.1 Mbit/s against
//! 12.8 for its fastest path alone. Probed when late, it measured the
//! fall within half a second: 14.0.
//!
//! The rule: a packet that arrives more than `late_probe` after PET
//! predicted marks its path late: on an unpaced path, net of the queue
//! corrections made since it was sent; a paced path's predictions do not
//! use them, and it gets none (`Pet::on_delivery`). The next
//! full-size packet EDPF places there, or that may go there as a probe
//! (`probe_slack`), is a probe: its second follows it. Again late, the
//! path is probed again
//! - a round trip of it after a probe that found its rate fallen (the
//!   probe's sample may not be in before that), so that a fall is followed
//!   down;
//! - `probe_interval` after a probe that found the rate it expected: the
//!   packets are late for another reason (the path's delay rose and its
//!   estimate has not followed yet) and another probe would measure the
//!   same. Probed every round trip, a path whose delay had stepped from
//!   13 to 192 ms (change set 7/14) had its packets paired there all run
//!   long and the bond lost 6 %.
//!
//! Only a path heard from within its round trip is probed for being late:
//! a path that went silent is the quiet rule's (`sender/quiet.rs`), and a
//! probe tells nothing about a path that has gone. In the fault swarm
//! (seed 80, a 20 Mbit/s path that leaves 3.5 s in beside 1 Mbit/s with
//! bursts of loss) a probe pair went onto the path 0.4 s after it left,
//! and the run took another course, with a 4.6 s stall of the inner TCP
//! (a retransmission lost in a burst, then its backed-off timeout).
//!
//! Only a packet larger than `PetConfig::small_packet_bytes` opens such a
//! probe (a pair of small packets measures no rate worth it,
//! `SenderConfig::pacing_min_pair_len`): the ACKs of a fast download
//! overran a thin path's return direction, came late every round trip
//! there, and pairs of them measured nothing. A probe that goes to a late
//! path for any other reason (its periodic probe, with a small packet)
//! leaves it due its own.

use super::Pet;
use crate::path::{PathState, MAX_PATHS};
use crate::time::Instant;

/// A late path's probe that finds its rate estimate at least this share
/// of what it was before the probe found no fall.
const RATE_UNCHANGED: f64 = 0.8;

/// Which paths came late, and their last probes for it.
#[derive(Clone, Debug, Default)]
pub(super) struct Late {
    /// Packets on the path arrived later than predicted by more than
    /// `PetConfig::late_probe` since its last probe for it.
    late: [bool; MAX_PATHS],
    /// When the path last got a probe for being late, and its rate
    /// estimate then.
    probed: [Option<(Instant, Option<f64>)>; MAX_PATHS],
}

fn slot(p: &PathState) -> usize {
    p.id.0 as usize % MAX_PATHS
}

impl Pet {
    /// Takes note of a packet on `path` that arrived `residual_ns` later
    /// than predicted (net of the corrections made since it was sent).
    pub(super) fn note_late(&mut self, path: &PathState, residual_ns: i64) {
        let bound = self.cfg.late_probe;
        if !bound.is_zero() && residual_ns > bound.as_nanos() as i64 {
            self.late.late[slot(path)] = true;
        }
    }

    /// Whether `p` is due a probe now for being late (module doc): it came
    /// late, reported within its round trip, and its last such probe is
    /// old enough. Only a packet that is not small may be it, which the
    /// caller knows.
    pub(super) fn late_probe_due(&self, now: Instant, p: &PathState) -> bool {
        let wait = |rate_then: Option<f64>| match (rate_then, p.bw.estimate_bps()) {
            (Some(then), Some(rate)) if rate >= RATE_UNCHANGED * then => self.cfg.probe_interval,
            _ => p.rtt.srtt(),
        };
        self.late.late[slot(p)]
            && p.last_feedback
                .is_some_and(|t| now.saturating_since(t) <= p.rtt.srtt())
            && self.late.probed[slot(p)]
                .is_none_or(|(t, then)| now.saturating_since(t) >= wait(then))
    }

    /// `p`, due a probe for being late, gets it now.
    pub(super) fn late_probe_sent(&mut self, now: Instant, p: &PathState) {
        let s = slot(p);
        self.late.late[s] = false;
        self.late.probed[s] = Some((now, p.bw.estimate_bps()));
    }
}
