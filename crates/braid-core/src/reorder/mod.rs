//! The receiver's resequencer: BMP, the Buffer Management Policy of PET/BMP
//! (Chebrolu, Raman, Rao, "A Network Layer Approach to Enable TCP over
//! Multiple Interfaces", Section V-B; design criteria 3-5 of Section IV).
//!
//! Why it exists: striping one TCP connection over paths with different
//! delays reorders its segments, and TCP answers reordering with DUP-ACKs
//! and spurious fast retransmits. BMP hides the reordering from TCP by
//! buffering at the receiver and handing packets up in order (criterion 3),
//! without waiting forever on a packet that was really lost (criterion 4),
//! and without dumping a whole buffer on TCP in one burst (criterion 5).
//!
//! Packets carry a u64 tunnel sequence number. They are released strictly
//! in order, starting at `first_seq`. The missing number at the head of the
//! line (`next_expected`, while higher numbers are buffered) is declared
//! lost — *skipped*, which makes the buffered packets behind it releasable —
//! when
//! - comparison-based (paper, V-B): a higher number has arrived on every
//!   *active* path. Paths deliver in order, so nothing older can still come
//!   on them.
//! - the previous-on-path link says so: a packet arrived on path p whose
//!   predecessor on p was number N, and N has not arrived (FIFO paths).
//!   Such numbers are remembered (bounded set) and skipped when they reach
//!   the head.
//! - timer-based fallback (paper, V-B: needed because an idle or slow path
//!   would stall the comparison forever): the head gap has been waiting
//!   `loss_timeout` (0.5 s in the paper), or, with `adaptive_hold`, the
//!   hold measured from how long gaps take to fill (`hold`).
//!
//! With `repair_wait` (the sender repairs losses) the first two give way
//! to the timer: a gap known lost waits for its repair for the hold, and
//! is released the moment the repair fills it.
//! - overflow: buffering the packet would exceed `max_buffer_bytes`, or the
//!   packet is more than [`MAX_SPAN`] numbers ahead of `next_expected`.
//!
//! Packets that become releasable together are paced (criterion 5): the
//! first goes at once, each next one no earlier than `pace_fraction` x the
//! smoothed inter-arrival gap after the previous release. (The paper paces
//! ACKs; pacing the hand-over to TCP has the same effect, as V-B notes.)
//! The spacing never exceeds `pace_fraction` x the mean arrival gap of
//! the batch itself: a batch leaves within `pace_fraction` x the time it
//! took to arrive, however slow the arrivals became while it waited (see
//! `release`).
//! Packets released because of a buffer overflow are not paced: memory
//! wins over smoothness there.
//!
//! Mode `Off` releases every packet at once, in arrival order
//! (pass-through), still counting `received`/`released`.
//!
//! Memory is bounded everywhere: buffered payload by `max_buffer_bytes`,
//! the accepted sequence span by [`MAX_SPAN`], the known-lost set by
//! [`MAX_KNOWN_LOST`], the skip history by a fixed count, per-path state
//! by a fixed 256-entry table (one per possible `PathId`).
//!
//! Files: the state and the entry points here; the loss rules in `loss`;
//! the buffer and the paced release queue in `release`; the measured hold
//! in `hold`; the configuration and counters in `config`. Tests: `tests`,
//! and the hold while the sender repairs in `tests_hold`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::path::PathId;
use crate::time::{Duration, Instant};

/// How far ahead of `next_expected` a packet may be. A packet further
/// ahead forces the older gaps to be declared lost (`lost_overflow`) so the
/// window slides rather than grows: a bogus or very late-path number must
/// not make the resequencer track an unbounded range.
pub const MAX_SPAN: u64 = 1 << 20;

/// Capacity of the set of numbers known lost from previous-on-path links
/// but not yet at the head. When full, the entries farthest from the head
/// are forgotten (the timer still covers them).
pub const MAX_KNOWN_LOST: usize = 4096;

/// Number of skipped ranges remembered to tell a late packet (its number
/// was given up) from a duplicate (its number was delivered).
const SKIP_HISTORY: usize = 1024;

/// One slot per possible `PathId` (u8).
const PATH_SLOTS: usize = 256;

mod config;
mod hold;
mod loss;
mod release;
pub use config::{ReorderConfig, ReorderMode, ReorderStats};
pub use hold::HoldEstimator;

/// Why a range of numbers was skipped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Cause {
    Comparison,
    PrevLink,
    Timer,
    Overflow,
}

/// What the comparison-based detector knows about one path.
#[derive(Copy, Clone, Debug, Default)]
struct PathSlot {
    /// Seen (or registered with `add_path`) at least once.
    known: bool,
    /// `remove_path` was called and no packet arrived since.
    removed: bool,
    /// Last arrival (or registration); activity is measured from it.
    last_activity: Instant,
    /// Highest number delivered on the path; `None` if nothing yet.
    max_seq: Option<u64>,
    /// Out-of-order packets that arrived on the path and wait in `buf`,
    /// and their bytes (`braid status` shows occupancy per path).
    buffered_packets: u64,
    buffered_bytes: usize,
}

/// Resequencer over payloads of type `P` (bytes in the daemon, a segment
/// descriptor in the simulator).
///
/// Sans-IO: time comes in as `now`; the caller drives `handle_packet`,
/// `handle_timeout` at `poll_timeout`, and drains `poll_release`.
pub struct Resequencer<P> {
    cfg: ReorderConfig,
    /// Lowest number neither received in order nor skipped: the head of
    /// the line. Everything below it is released (maybe still queued).
    next_expected: u64,
    /// Out-of-order packets, all numbered above `next_expected`:
    /// (len, path, arrival time, payload). A payload of `None` is a
    /// packet already handed up out of order ([`Resequencer::handle_unordered`]):
    /// it holds its number's place, counts for nothing else.
    buf: BTreeMap<u64, (usize, PathId, Instant, Option<P>)>,
    /// Packets handed up out of order, waiting for `poll_release` (which
    /// takes them before `ready`, unpaced).
    unordered: VecDeque<P>,
    /// One past the highest number known lost ([`Resequencer::note_loss`]):
    /// while `next_expected` is below it, the line waits for a repair.
    loss_horizon: u64,
    /// In-order packets awaiting `poll_release`: (seq, len, arrival time,
    /// payload).
    ready: VecDeque<(u64, usize, Instant, P)>,
    /// When the head of `ready` may go (meaningful while non-empty).
    next_release_at: Instant,
    /// The current release episode (the packets queued since `ready` was
    /// last empty): how many, and their earliest and latest arrivals. Its
    /// mean arrival gap bounds the pace (`episode_interval`).
    episode_packets: u64,
    episode_first_arrival: Instant,
    episode_last_arrival: Instant,
    /// Queued packets numbered below this skip pacing (overflow flush).
    urgent_upto: u64,
    /// Numbers >= next_expected known lost via previous-on-path links.
    known_lost: BTreeSet<u64>,
    /// Recently skipped ranges [start, end), ascending, merged, with when
    /// their gap was first seen if the loss timer skipped them.
    skipped: VecDeque<(u64, u64, Option<Instant>)>,
    /// Numbers below this are older than the skip history: treat as late.
    history_floor: u64,
    paths: Box<[PathSlot; PATH_SLOTS]>,
    /// Ids of known paths, so scans touch only those (at most 256).
    path_list: Vec<u8>,
    last_arrival: Option<Instant>,
    /// EWMA (gain 1/8) of the inter-arrival gap, nanoseconds.
    smoothed_gap_ns: Option<f64>,
    /// Loss timer for the current head gap; `Some` iff `buf` is non-empty.
    loss_deadline: Option<Instant>,
    /// When the current head gap's loss timer was armed from (the gap's
    /// first sighting, or the arming time): a hold that grows later is
    /// counted from here ([`Resequencer::set_hold_floor`]).
    loss_armed_at: Option<Instant>,
    /// Buffered packets in arrival order (arrival time, number); entries
    /// no longer buffered are dropped lazily from the front. The front is
    /// the earliest arrival still buffered: every number below it that is
    /// missing has been missing since then.
    arrivals: VecDeque<(Instant, u64)>,
    /// Latest `now` seen by `handle_packet`/`handle_timeout`.
    last_now: Instant,
    /// Measured gap-fill waits (`ReorderConfig::adaptive_hold`).
    hold: HoldEstimator,
    /// While the loss timer skips a gap: when that gap was first seen.
    timer_seen: Option<Instant>,
    /// Least hold while the sender repairs losses: the time a repair
    /// takes, from the paths' round trips ([`Resequencer::set_hold_floor`]).
    hold_floor: Option<Duration>,
    stats: ReorderStats,
}

/// How far the measured hold may exceed the repair floor
/// ([`Resequencer::set_hold_floor`]): Linux TCP's minimum RTO. A gap held
/// longer than the expected repair plus that is one the inner TCP has
/// already retransmitted by its own timer, so holding it only adds stall.
pub const REPAIR_HOLD_EXTRA: Duration = Duration::from_millis(200);

impl<P> Resequencer<P> {
    /// `first_seq`: the first sequence number expected.
    pub fn new(cfg: ReorderConfig, first_seq: u64) -> Self {
        Resequencer {
            cfg,
            next_expected: first_seq,
            buf: BTreeMap::new(),
            unordered: VecDeque::new(),
            loss_horizon: 0,
            ready: VecDeque::new(),
            next_release_at: Instant::ZERO,
            episode_packets: 0,
            episode_first_arrival: Instant::ZERO,
            episode_last_arrival: Instant::ZERO,
            urgent_upto: 0,
            known_lost: BTreeSet::new(),
            skipped: VecDeque::new(),
            history_floor: first_seq,
            paths: Box::new([PathSlot::default(); PATH_SLOTS]),
            path_list: Vec::new(),
            last_arrival: None,
            smoothed_gap_ns: None,
            loss_deadline: None,
            loss_armed_at: None,
            arrivals: VecDeque::new(),
            last_now: Instant::ZERO,
            hold: HoldEstimator::default(),
            timer_seen: None,
            hold_floor: None,
            stats: ReorderStats::default(),
        }
    }

    /// One packet arrived on `path` at `now`. `prev_on_path` is the number
    /// sent before it on the same path, if known. `len` counts toward the
    /// buffer limit.
    ///
    /// Numbers below `next_expected` are dropped: counted `late` if they
    /// had been skipped as lost (or are older than the remembered skip
    /// history), `duplicates` if they had been delivered. A number already
    /// buffered is a duplicate too. A packet arriving on a removed path
    /// makes that path count again for comparison (it is evidently alive).
    pub fn handle_packet(
        &mut self,
        now: Instant,
        path: PathId,
        seq: u64,
        prev_on_path: Option<u64>,
        len: usize,
        payload: P,
    ) {
        self.last_now = self.last_now.max(now);
        self.stats.received += 1;
        self.note_arrival(now, path, seq);

        if self.cfg.mode == ReorderMode::Off {
            // Pass-through: no resequencing, no duplicate detection (TCP
            // copes with duplicates); track the highest number for info.
            if seq >= self.next_expected {
                self.next_expected = seq.saturating_add(1);
            }
            self.push_ready(now, seq, len, now, payload);
            return;
        }

        let ne_before = self.next_expected;
        if seq < self.next_expected {
            if self.was_skipped(seq) {
                self.stats.late += 1;
                // Given up too early: measure how long it really took.
                if let Some(seen) = self.skipped_seen_at(seq) {
                    self.hold.on_sample(now, now.saturating_since(seen));
                }
            } else {
                self.stats.duplicates += 1;
            }
            return;
        }
        if self.buf.contains_key(&seq) {
            self.stats.duplicates += 1;
            // A copy on another path still raised that path's highest
            // number, which may settle the head gap by comparison.
            self.advance(now);
            self.rearm(now, ne_before);
            return;
        }

        // Bound the span: slide the window rather than track a huge range.
        if seq - self.next_expected > MAX_SPAN {
            self.skip_to(now, seq - MAX_SPAN, Cause::Overflow);
        }

        self.note_links(now, seq, prev_on_path);
        if seq == self.next_expected {
            self.next_expected = seq.saturating_add(1);
            self.push_ready(now, seq, len, now, payload);
        } else {
            self.insert_buffered(now, path, seq, len, payload);
        }
        self.advance(now);
        self.rearm(now, ne_before);
    }

    /// One packet that needs no order arrived (a pure TCP ACK: a later
    /// cumulative ACK makes an earlier one redundant, and TCP ignores an
    /// ACK older than one it has seen). While the line waits behind a
    /// number known lost ([`Resequencer::note_loss`]), for its repair, it
    /// is handed up at once, unpaced, and leaves only its number behind,
    /// so that the gap is still tracked, repaired and given up as before,
    /// but nothing waits on it. Otherwise (in order, a gap that is only
    /// the paths' reordering, or the resequencer off) it is an ordinary
    /// packet: ACKs that overtook each other across paths still go up in
    /// order, so the inner TCP's ACK clock stays smooth.
    ///
    /// Why: holding the ACKs of a download behind a lost ACK for its
    /// repair stalls the ACK clock for the repair's round trip. On a
    /// 46.6 Mbit/s path beside a 7 Mbit/s one with bursty loss, both
    /// 157-160 ms away, the ACKs waited 0.4 s behind lost ones, the
    /// inner TCP timed out twice and carried 3.2 Mbit/s, where the fast
    /// path alone carried 37 (`lab/sweep-random.sh 40 2027`, set 31).
    pub fn handle_unordered(
        &mut self,
        now: Instant,
        path: PathId,
        seq: u64,
        prev_on_path: Option<u64>,
        len: usize,
        payload: P,
    ) {
        if self.cfg.mode == ReorderMode::Off
            || seq <= self.next_expected
            || self.next_expected >= self.loss_horizon
            || self.buf.contains_key(&seq)
            || seq - self.next_expected > MAX_SPAN
        {
            return self.handle_packet(now, path, seq, prev_on_path, len, payload);
        }
        self.last_now = self.last_now.max(now);
        self.stats.received += 1;
        self.stats.unordered += 1;
        self.note_arrival(now, path, seq);
        let ne_before = self.next_expected;
        self.note_links(now, seq, prev_on_path);
        self.unordered.push_back(payload);
        self.buf.insert(seq, (0, path, now, None));
        self.note_buffered_arrival(now, seq);
        self.advance(now);
        self.rearm(now, ne_before);
    }

    /// What the arrival of `seq` (not yet released, not a duplicate) tells
    /// about the numbers around it.
    fn note_links(&mut self, now: Instant, seq: u64, prev_on_path: Option<u64>) {
        // Previous-on-path link: on a FIFO path the predecessor would have
        // arrived before this packet, so if it is still missing it is lost
        // (unless its repair is awaited).
        if let Some(n) = prev_on_path.filter(|_| !self.cfg.repair_wait) {
            if n >= self.next_expected && n < seq && !self.buf.contains_key(&n) {
                self.known_lost.insert(n);
                if self.known_lost.len() > MAX_KNOWN_LOST {
                    self.known_lost.pop_last();
                }
            }
        }
        // It arrived after all (non-FIFO path): not lost.
        self.known_lost.remove(&seq);
        // It fills a gap that packets above it were waiting on.
        if let Some(seen) = self.first_seen_above(seq) {
            self.stats.gaps_filled += 1;
            self.hold.on_sample(now, now.saturating_since(seen));
        }
    }

    /// Number `seq` is known lost (a later packet on its path arrived;
    /// its repair is on the way): until the line passes it, packets that
    /// need no order go up ahead of it ([`Resequencer::handle_unordered`]).
    pub fn note_loss(&mut self, seq: u64) {
        self.loss_horizon = self.loss_horizon.max(seq.saturating_add(1));
    }

    /// The loss timer's value: measured with `adaptive_hold`, else fixed.
    /// With `adaptive_hold` and a [hold floor](Resequencer::set_hold_floor),
    /// never below the floor, and the floor alone before any wait was
    /// measured.
    pub fn hold(&self) -> Duration {
        if !self.cfg.adaptive_hold {
            return self.cfg.loss_timeout;
        }
        let (min, max) = (self.cfg.min_hold, self.cfg.max_hold.max(self.cfg.min_hold));
        match self.hold_floor {
            Some(f) if self.hold.samples() == 0 => f.clamp(min, max),
            Some(f) => {
                let f = f.clamp(min, max);
                self.hold
                    .hold(self.cfg.loss_timeout, min, max)
                    .clamp(f, (f + REPAIR_HOLD_EXTRA).min(max))
            }
            None => self.hold.hold(self.cfg.loss_timeout, min, max),
        }
    }

    /// Sets the least hold (with `adaptive_hold`): how long a repair of a
    /// path loss takes to arrive once its gap is seen, which the caller
    /// knows from the paths' round trips and the resequencer cannot
    /// measure before the first repair. The measured hold is then kept
    /// within [`REPAIR_HOLD_EXTRA`] above it: a repair later than that
    /// found its loss by a timeout (a lone packet lost on a path), and one
    /// such late arrival (680 ms, a lost TCP ACK) had set the hold to
    /// 866 ms for the next 10-20 s, each later lost ACK stalling the inner
    /// TCP that long.
    ///
    /// Why: the measured hold follows the waits seen, and before the first
    /// loss those are only the paths' delay spread. On `lab/lossy.toml`
    /// with 30 % loss on one path the hold had fallen to its 50 ms minimum
    /// when the first repairs were needed, took about 120 ms, and came
    /// after their gaps were released: the inner TCP took them for losses
    /// and halved its window early in the transfer. Before any wait was
    /// measured the fixed 0.5 s held the first lost packet (a TCP ACK) past
    /// the inner TCP's 200 ms RTO. `None` restores the measured hold alone.
    ///
    /// A floor that raises the hold while a gap is held extends that gap's
    /// deadline to the new hold, counted from when the gap's timer was
    /// armed. (The caller sets the floor on every report, mostly
    /// unchanged; that must not restart the timer.) The floor rises when a
    /// path's round trip is first measured, which is when its first
    /// packets are still on their way.
    /// On random set 7/22 of `lab/sweep-random.sh` (17 Mbit/s at 10 ms
    /// beside 34.5 Mbit/s at 142 ms) the tunnel came up on the far path,
    /// the near path's first packets overtook the far path's, and the gap
    /// armed with the 98 ms hold of that moment was given up 31 ms before
    /// its packets arrived, though the floor had risen to 141 ms meanwhile:
    /// the inner TCP took them for lost and left slow start at 16 packets.
    pub fn set_hold_floor(&mut self, floor: Option<Duration>) {
        let before = self.hold();
        self.hold_floor = floor;
        let hold = self.hold();
        if hold > before {
            if let (Some(d), Some(armed)) = (self.loss_deadline, self.loss_armed_at) {
                self.loss_deadline = Some(d.max(armed + hold));
            }
        }
    }

    /// The least hold last set by [`Resequencer::set_hold_floor`].
    pub fn hold_floor(&self) -> Option<Duration> {
        self.hold_floor
    }

    /// When `handle_timeout` or `poll_release` next has work: the earliest
    /// of the next paced release (possibly already due), the loss-timer
    /// deadline, and the moment comparison-based detection becomes able to
    /// skip the head gap because the paths holding it back went inactive.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut take = |x: Instant| t = Some(t.map_or(x, |y: Instant| y.min(x)));
        if !self.unordered.is_empty() {
            take(self.last_now);
        }
        if !self.ready.is_empty() {
            take(self.next_release_at);
        }
        if let Some(d) = self.loss_deadline {
            take(d);
        }
        if let Some(c) = self.comparison_deadline() {
            take(c);
        }
        t
    }

    /// The path is gone: stop waiting on it for comparison-based detection.
    /// (The effect, if any, is reported by `poll_timeout` and applied by
    /// the next `handle_timeout`/`handle_packet`.)
    pub fn remove_path(&mut self, path: PathId) {
        let slot = &mut self.paths[path.0 as usize];
        if slot.known {
            slot.removed = true;
        }
    }

    /// Registers a path before it delivers anything, so comparison-based
    /// detection waits for it (for up to `active_window` from `now`).
    /// Without this a path is only considered once a packet arrives on it,
    /// and a packet in flight on a not-yet-seen path could be skipped early.
    pub fn add_path(&mut self, now: Instant, path: PathId) {
        self.touch_path(path);
        let slot = &mut self.paths[path.0 as usize];
        slot.removed = false;
        slot.last_activity = slot.last_activity.max(now);
    }

    /// The next sequence number to be released: the lowest number neither
    /// received in order nor skipped (the head of the line). Packets below
    /// it may still be queued for paced release (`stats().queued_packets`).
    pub fn next_expected(&self) -> u64 {
        self.next_expected
    }

    pub fn stats(&self) -> &ReorderStats {
        &self.stats
    }

    /// Counters, with the current hold filled in.
    pub fn stats_now(&self) -> ReorderStats {
        ReorderStats {
            hold_ns: self.hold().as_nanos().min(u64::MAX as u128) as u64,
            ..self.stats.clone()
        }
    }

    /// Out-of-order packets waiting in the buffer that arrived on `path`,
    /// and their bytes.
    pub fn buffered_on(&self, path: PathId) -> (u64, usize) {
        let s = &self.paths[path.0 as usize];
        (s.buffered_packets, s.buffered_bytes)
    }

    // ---- internals -------------------------------------------------------

    /// Updates the inter-arrival EWMA and the path table. Gaps longer than
    /// `loss_timeout` are idle periods, not a rate: they are left out, or
    /// one pause would pace the next burst absurdly slowly.
    fn note_arrival(&mut self, now: Instant, path: PathId, seq: u64) {
        if let Some(prev) = self.last_arrival {
            let gap = now.saturating_since(prev);
            if gap <= self.cfg.loss_timeout {
                let g = gap.as_nanos() as f64;
                self.smoothed_gap_ns = Some(match self.smoothed_gap_ns {
                    None => g,
                    Some(s) => s + (g - s) / 8.0,
                });
            }
        }
        self.last_arrival = Some(self.last_arrival.map_or(now, |p| p.max(now)));

        self.touch_path(path);
        let slot = &mut self.paths[path.0 as usize];
        slot.removed = false;
        slot.last_activity = slot.last_activity.max(now);
        slot.max_seq = Some(slot.max_seq.map_or(seq, |m| m.max(seq)));
    }

    fn touch_path(&mut self, path: PathId) {
        let slot = &mut self.paths[path.0 as usize];
        if !slot.known {
            slot.known = true;
            self.path_list.push(path.0);
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hold;
