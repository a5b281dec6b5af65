//! The sender's own state of one path, in one record ([`PathSender`]):
//! what it has in flight there, its pacing queue and pacer, its pair
//! samples, its loss classifier and its repair counters.
//!
//! Why one record: these were once ten arrays indexed by path slot, and
//! resetting a path meant resetting each of them (and remembering which
//! to keep). The path's estimates ([`crate::path::PathState`]) stay apart,
//! in the slice the scheduler is given.

use std::collections::VecDeque;

use super::repair_copy::CopyBudget;
use super::share::ShareCap;
use super::spacing::ArrivalSpacing;
use super::{PairSamples, PathRepairStats, Transmit};
use crate::repair::LossClassifier;
use crate::time::{Duration, Instant};

/// A packet in a pacing queue, with its payload: the queue owns it until
/// `Sender::poll_transmit` hands both over.
#[derive(Debug)]
pub(super) struct Paced<P> {
    pub tx: Transmit,
    pub release_at: Instant,
    pub payload: P,
}

/// The sender's state of one path slot.
#[derive(Debug)]
pub(super) struct PathSender<P> {
    /// In-flight sequence numbers, in send order.
    pub unacked: VecDeque<u64>,
    /// The last original packet sent on the path (the next one's `prev_delta`).
    pub last_seq: Option<u64>,
    /// First packet of the pair currently open on the path.
    pub open_pair: Option<u64>,
    /// The pacing queue, in release order.
    pub paced: VecDeque<Paced<P>>,
    /// When the pacer is free for the next packet.
    pub pacer_free: Option<Instant>,
    /// Release time of the last packet queued, and its seq.
    pub last_release: Option<(u64, Instant)>,
    /// Whether the path is paced: a full-size pair has measured it, and
    /// no small pair since, unless the path is thin (`pace_samples`).
    pub pace_ok: bool,
    /// The latest full-size pair samples and their median.
    pub pair_samples: PairSamples,
    /// Congestion or random loss (R-MTP §3.2).
    pub classifier: LossClassifier,
    /// The cap congestion losses put on the path's pacing rate.
    pub share: ShareCap,
    /// Repair counters.
    pub repair: PathRepairStats,
    /// What copies of other paths' repairs the path may still take.
    pub copy_budget: CopyBudget,
    /// Set while the path has gone quiet (`sender/quiet.rs`).
    pub quiet: Option<Quiet>,
    /// The spacing of its latest arrivals (`sender/spacing.rs`).
    pub spacing: ArrivalSpacing,
    /// Until when what the path holds drains, once the stranded rule
    /// moved packets off it (`sender/stranded.rs`).
    pub drained_at: Option<Instant>,
    /// The inner TCP retransmissions queued past the pacing bound: new
    /// data's wait is counted without them (`bound::retransmit_bound`).
    pub retransmits_past_bound: PastBound,
    /// The sender's next number when the path last came back into use
    /// (usable again, or no longer quiet): packets numbered before it
    /// were given other paths while it was out (`sender/requeue.rs`).
    pub back_from: Option<u64>,
}

/// The inner TCP retransmissions a pacing queue holds past its bound, as
/// (release time, time on the path) in release order, and the sum of
/// those times. An entry is forgotten at its release time as booked: a
/// queue whose release times slip later, or that a repair copy goes
/// ahead of, forgets it sooner than it leaves, so the credit errs short,
/// never long.
#[derive(Debug, Default)]
pub(super) struct PastBound {
    entries: VecDeque<(Instant, Duration)>,
    sum: Duration,
}

impl PastBound {
    /// Forgets what is released by `now`.
    fn prune(&mut self, now: Instant) {
        while let Some(&(at, gap)) = self.entries.front() {
            if at > now {
                break;
            }
            self.entries.pop_front();
            self.sum = self.sum.saturating_sub(gap);
        }
    }

    /// A retransmission released at `at` for `gap` on the path, queued
    /// past the bound at `now`.
    pub fn push(&mut self, now: Instant, at: Instant, gap: Duration) {
        self.prune(now);
        self.entries.push_back((at, gap));
        self.sum += gap;
    }

    /// How much of the pacing queue's wait at `now` is retransmissions
    /// queued past the bound and not yet released.
    pub fn queued(&mut self, now: Instant) -> Duration {
        self.prune(now);
        self.sum
    }
}

/// A path that went quiet: its oldest packet was overdue while the other
/// paths reported packets sent after it (`sender/quiet.rs`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Quiet {
    /// The newest original sent on the path when it went quiet: a report
    /// from the path of it or a later packet shows the path has delivered
    /// all it held.
    pub last_seq: u64,
    /// When it was found.
    pub found: Instant,
}

impl<P> Default for PathSender<P> {
    fn default() -> Self {
        PathSender {
            unacked: VecDeque::new(),
            last_seq: None,
            open_pair: None,
            paced: VecDeque::new(),
            pacer_free: None,
            last_release: None,
            pace_ok: false,
            pair_samples: PairSamples::default(),
            classifier: LossClassifier::default(),
            share: ShareCap::default(),
            repair: PathRepairStats::default(),
            copy_budget: CopyBudget::default(),
            quiet: None,
            spacing: ArrivalSpacing::default(),
            drained_at: None,
            retransmits_past_bound: PastBound::default(),
            back_from: None,
        }
    }
}

impl<P> PathSender<P> {
    /// The state of a path that was removed: everything afresh (its
    /// queued packets dropped) but its repair counters, which
    /// `Sender::path_repair_stats` still reports.
    pub fn reset_removed(&mut self) {
        *self = PathSender {
            repair: self.repair,
            ..PathSender::default()
        };
    }
}
