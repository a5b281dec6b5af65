//! The sender's own queues, as a scheduler reads them ([`SendQueues`]).
//!
//! A pacing [`Sender`](crate::sender::Sender) (see `SenderConfig::pacing`)
//! holds a local queue per path and releases it at slightly below the
//! path's estimated rate. How long that queue is describes the sender, not
//! the path, so it is not part of [`PathState`](crate::path::PathState):
//! the sender passes it to [`Scheduler::select`](super::Scheduler::select)
//! next to the paths, for the one decision, and a scheduler never keeps it.

use crate::path::{PathId, MAX_PATHS};
use crate::time::Instant;

/// For each path slot, when the sender's pacing queue on the path will
/// have released everything queued so far; `None` when the sender does not
/// pace the path (no pacing, or no rate estimate for it yet).
///
/// A packet queued now on a paced path leaves at `max(now, free_at)`, so
/// EDPF's A_l (PET/BMP eq. 1) is known exactly instead of modelled: PET
/// counts a paced path's backlog from here and takes its bottleneck as
/// (almost) empty.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SendQueues {
    free_at: [Option<Instant>; MAX_PATHS],
}

impl SendQueues {
    /// No path is paced: a sender without pacing (the paper's setting, and
    /// the simulator's reproductions) and schedulers' own tests.
    pub const UNPACED: SendQueues = SendQueues {
        free_at: [None; MAX_PATHS],
    };

    /// When the sender's queue on path `id` is free, if the sender paces it.
    pub fn free_at(&self, id: PathId) -> Option<Instant> {
        self.free_at[slot(id)]
    }

    /// Records that the sender paces path `id` and its queue is free at
    /// `at` (`Some`), or that it does not pace it (`None`).
    pub fn set(&mut self, id: PathId, at: Option<Instant>) {
        self.free_at[slot(id)] = at;
    }
}

impl Default for SendQueues {
    fn default() -> Self {
        Self::UNPACED
    }
}

/// The slot of a path in per-path tables, as everywhere in the core.
fn slot(id: PathId) -> usize {
    id.0 as usize % MAX_PATHS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_has_its_own_entry_and_unset_ones_are_unpaced() {
        let mut q = SendQueues::default();
        assert_eq!(q, SendQueues::UNPACED);
        q.set(PathId(3), Some(Instant::from_millis(7)));
        assert_eq!(q.free_at(PathId(3)), Some(Instant::from_millis(7)));
        assert_eq!(q.free_at(PathId(2)), None);
        q.set(PathId(3), None);
        assert_eq!(q, SendQueues::UNPACED);
    }
}
