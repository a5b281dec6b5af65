//! Packets stranded behind a path whose rate fell: copies on the other
//! paths for those that would arrive later there (MPTCP's opportunistic
//! retransmission, Raiciu et al., NSDI 2012, applied to the bond's own
//! packets in flight).
//!
//! Why: the tunnel paces each path at its measured rate, so a path's
//! bottleneck holds little of the tunnel's while the rate holds. When it
//! falls (a cellular link that loses its signal), the path keeps
//! receiving at the old rate until its feedback shows the fall, a round
//! trip later, and what arrives in that time waits in its queue. Set 2/17
//! of `lab/sweep-changes.sh` (14.9 Mbit/s 156 ms away, down to 1.6 at
//! 9.1 s, beside 36.9 Mbit/s): about 450 packets took 3.8 s to drain,
//! longer than the peer's resequencer holds a gap (2 s at most), and the
//! inner TCP timed out twice: 17.9 Mbit/s where the other path alone
//! carried 35.6.
//!
//! The rule, run after every feedback frame:
//! - A path is looked at once what it has in flight would take longer
//!   than twice its smoothed round trip plus [`STRANDED_TRIGGER`] to drain at
//!   the rate it now delivers (the median of its recent pair samples, so
//!   one low sample does not move it, or the spacing of its latest
//!   arrivals if lower, `sender/spacing.rs`). While the rate holds, a
//!   path drains its packets in flight in about its round trip.
//! - Each of its packets would arrive once the bytes up to it have
//!   drained, less what already left the bottleneck (the path's rate
//!   times its smallest round trip). If that is later by
//!   [`STRANDED_MARGIN`] than a copy
//!   would arrive on the best other path (its delay, its serialisation,
//!   what its pacer is booked for, and the copies this pass gave it), the
//!   packet is taken off the path as lost and repaired there, never back
//!   on the path it was stranded on (`Record::avoid`). Newest first: the
//!   path delivers the oldest, the other paths the newest. Only paths
//!   with a rate take copies (their pacing rate, or their bandwidth
//!   estimate where they are not paced: see [`Sender::copy_rooms`]), and
//!   only up to the pacing bound: beyond it a copy would be given up and
//!   the receiver told to stop waiting for a packet that is only late.
//!   A copy that no path can take after all puts its packet back in
//!   flight on its path ([`Sender::unstrand`]). Originals only: a repair
//!   copy stranded again could be given up for its age.
//! - The path's loss rate is not charged (nothing was lost), and the
//!   original, when it comes, still measures its path
//!   (`Sender::late_original`).
//! - The originals still hold the path's queue: its pacer is booked
//!   until all that left the tunnel on it has drained at that rate, the
//!   stranded originals and the older packets left to it, so that new
//!   packets wait in the tunnel, where PET sees the path busy, and not
//!   behind them. Without the booking, PET took the path for empty once
//!   its packets were moved, put 56 new ones behind the stranded
//!   originals, and the stream waited 1.5 s for them (the same set: the
//!   inner TCP timed out all the same). Booked for the stranded
//!   originals alone, the path looked free 0.47 s early on
//!   `lab/fade.toml`, once the rule fired as soon as the spacing showed
//!   the fall (with 78 older packets left to it): 22 new packets waited
//!   behind the queue and the inner TCP timed out. Meanwhile the pacing
//!   bound reaches as far as the path's drain
//!   ([`Sender::stranded_drain_bound`]).

use super::bound::near_rtt;
use super::pacing::Delays;
use super::{slot, Fate, Sender};
use crate::path::PathId;
use crate::repair::RepairMode;
use crate::time::{Duration, Instant};

/// How much longer than twice its smoothed round trip a path must take
/// to drain what it has in flight, at the rate it now delivers, for the
/// rule to look at its packets. A path that keeps its rate drains them
/// in about one round trip; twice, because the pair samples of a far,
/// lossy path can read its rate low by a third or more, and once was
/// enough there to copy packets that were not late: a random set whose
/// 39 Mbit/s path was 287 ms away and lost 0.5 % fell from 35.3 to
/// 28.0 Mbit/s. The 250 ms cover a pacer's slip and the probing above
/// the rate.
pub const STRANDED_TRIGGER: Duration = Duration::from_millis(250);

/// How much later than a copy on another path a packet must be about to
/// arrive on its own for the copy: the least the peer's resequencer
/// holds a gap (`ReorderConfig::min_hold`). A packet later than its
/// successors by more than the peer's hold reaches the inner TCP as a
/// loss; the hold is the largest gap-fill wait measured (often 100-400
/// ms), and a first version that copied only packets 250 ms later than
/// a copy elsewhere left the packets between to arrive after the hold
/// (a 15 Mbit/s path falling to 1.5 beside 30 Mbit/s: the resequencer
/// gave up 40 gaps, the inner TCP halved its window twice and timed
/// out).
pub const STRANDED_MARGIN: Duration = Duration::from_millis(50);

/// Another path as a place for copies, in seconds: its delivery cost in
/// the frame of the paths' relative delays, how far ahead its pacer is
/// booked, and its pacing rate (bit/s), which books it further per copy.
/// Also where `sender/requeue.rs` moves queued packets.
pub(super) struct Room {
    pub id: PathId,
    pub cost: f64,
    pub booked: f64,
    pub rate: f64,
}

impl Room {
    /// When a copy given to this path now would arrive, in the same frame.
    pub fn arrives(&self) -> f64 {
        self.cost + self.booked
    }
}

impl<P> Sender<P> {
    /// Takes the packets stranded on a path whose rate fell off it, for
    /// repair on another path (see the module). Cheap while no path's
    /// packets in flight take long to drain: one comparison per path.
    pub(super) fn rescue_stranded(&mut self, now: Instant) {
        if self.cfg.repair.mode != RepairMode::Arq || !self.cfg.pacing {
            return;
        }
        for ps in &mut self.per_path {
            if ps.drained_at.is_some_and(|t| t <= now) {
                ps.drained_at = None;
            }
        }
        if self.paths.iter().filter(|p| p.usable).count() < 2 {
            return;
        }
        for i in 0..self.paths.len() {
            let id = self.paths[i].id;
            let (stranded, drained) = self.stranded_on(now, i);
            if stranded.is_empty() {
                continue;
            }
            // The path's queue holds all it was sent until `drained`, the
            // stranded originals and those left to it: its pacer is booked
            // until then (see the module).
            let ps = &mut self.per_path[slot(id)];
            ps.pacer_free = Some(ps.pacer_free.unwrap_or(now).max(drained));
            ps.drained_at = Some(drained);
            let taken: std::collections::HashSet<u64> = stranded.iter().copied().collect();
            ps.unacked.retain(|q| !taken.contains(q));
            for seq in stranded {
                self.strand(now, id, seq);
            }
        }
    }

    /// The packets on path `i` that a copy on another path would beat by
    /// the margin, oldest first, once the path is slow to drain (see the
    /// module), and when all that left the tunnel on the path will have
    /// drained from its bottleneck (`now` with no packets).
    fn stranded_on(&self, now: Instant, i: usize) -> (Vec<u64>, Instant) {
        let p = &self.paths[i];
        let s = slot(p.id);
        // What the path delivers: the median of its pair samples, not its
        // pacing rate, which a congestion cut or a share cap (the
        // tunnel's own yielding) lowers below what the bottleneck drains.
        // Or the spacing of its latest arrivals, if lower: the median of
        // its pair samples follows a fall of its rate late on a thin path
        // (`sender/spacing.rs`).
        let paced = self.pacing_rate(s).is_some();
        let spaced = self.spacing_fall(s);
        let (Some(rate), Some(min_rtt)) = (
            self.per_path[s]
                .pair_samples
                .median()
                .filter(|_| paced)
                .map(|m| spaced.map_or(m, |r| r.min(m))),
            p.rtt.min_rtt(),
        ) else {
            return (Vec::new(), now);
        };
        // Its smoothed round trip, not its smallest: after a delay step
        // (a handover) the packets in flight at the path's rate span the
        // new round trip, and measured against the old one they looked
        // stranded (a random set whose 27 Mbit/s path moved 250 ms
        // further away: 21.9 -> 14.4 Mbit/s).
        let limit = p.rtt.srtt() * 2 + STRANDED_TRIGGER;
        let drain = |bytes: u64| Duration::from_secs_f64(bytes as f64 * 8.0 / rate);
        // First a bound: the packets in flight include those still in
        // the path's own pacing queue.
        if !p.usable || drain(p.in_flight_bytes) <= limit {
            return (Vec::new(), now);
        }
        // Where copies could go: every other usable path with a rate
        // (`Room`). A path without one would take any number of copies
        // at once, the burst [`Sender::resend`] keeps off thin paths.
        let delays = self.relative_delays();
        let mut others = self.copy_rooms(now, p.id, &delays);
        // A copy booked further ahead than the pacing bound would be given
        // up (`Sender::resend`; it puts a stranded packet back instead):
        // the rest stay where they are.
        let bound = self.pacing_bound_now(now).as_secs_f64();
        if others.iter().all(|o| o.booked > bound) {
            return (Vec::new(), now);
        }
        let here = delays[s].unwrap_or_default().as_secs_f64();
        let margin = STRANDED_MARGIN.as_secs_f64();
        let waiting = self.per_path[s].paced.front().map(|q| q.tx.seq);
        // Each original that has left, oldest first, with when it
        // arrives: once the bytes ahead of it and its own have drained,
        // less what already left the bottleneck (about the path's rate
        // times its smallest round trip: on its way to the peer, or
        // arrived and not yet reported). Repair copies stay: a copy
        // stranded again could be given up for its age while it is only
        // late.
        let mut bytes = 0u64;
        let mut left = Vec::new();
        for &seq in &self.per_path[s].unacked {
            if Some(seq) == waiting {
                break; // the rest have not left: the pacer holds them
            }
            let Some(r) = self.record(seq) else {
                continue;
            };
            bytes += u64::from(r.len);
            if r.fate != Fate::InFlight || r.path != p.id || r.attempts > 0 {
                continue;
            }
            let queued = drain(bytes).saturating_sub(min_rtt);
            left.push((seq, r.len, here + queued.as_secs_f64()));
        }
        if drain(bytes) <= limit {
            return (Vec::new(), now);
        }
        // Copies go to the newest first, the latest to arrive here, while
        // a copy still arrives earlier by the margin: the path delivers
        // the oldest, the other paths the newest, and both finish about
        // together. Oldest first, the copies filled the other path's
        // room with packets the path would have delivered soon anyway,
        // and the newest, seconds late, were left for the peer's
        // resequencer to give up.
        let mut out = Vec::new();
        for &(seq, len, arrives) in left.iter().rev() {
            let Some(best) = others
                .iter_mut()
                .min_by(|a, b| a.arrives().total_cmp(&b.arrives()))
            else {
                break;
            };
            if best.booked > bound || arrives <= best.arrives() + margin {
                break;
            }
            out.push(seq);
            best.booked += crate::time::tx_time(len, best.rate).as_secs_f64();
        }
        out.reverse();
        (out, now + drain(bytes).saturating_sub(min_rtt))
    }

    /// The usable paths other than `except` with a rate, as places for
    /// copies at `now` ([`Room`]): their pacing rate, or, where a path is
    /// not paced, its bandwidth estimate, with a pacer free now.
    ///
    /// Why the estimate: a path whose pair samples are all of small
    /// packets is not paced (`sender/pace_samples.rs`), and a server's
    /// downlink that carries only the inner TCP's ACKs of an upload has
    /// nothing else. Paced paths alone, the server could copy none of
    /// the ACKs stranded on a thin downlink whose rate fell to its fast
    /// one: change set 9/13 of `lab/sweep-changes.sh` (1.65 Mbit/s 95 ms
    /// away falling to 0.27 at 7.7 s, beside 22.0 Mbit/s 119 ms away,
    /// `--idle 3`), where 200-360 ACKs waited up to 0.8 s and the inner
    /// TCP's window starved: 20.08 -> 20.38 Mbit/s (21.24 on the fast
    /// path alone), and no other set of the sweeps moved.
    pub(super) fn copy_rooms(&self, now: Instant, except: PathId, delays: &Delays) -> Vec<Room> {
        let queues = self.send_queues(now);
        self.paths
            .iter()
            .filter(|q| q.usable && q.id != except)
            .filter_map(|q| {
                let rate = self
                    .pacing_rate(slot(q.id))
                    .or_else(|| q.bw.estimate_bps())?;
                let free = queues.free_at(q.id).unwrap_or(now);
                Some(Room {
                    id: q.id,
                    cost: Self::delivery_cost(q, 1500, delays),
                    booked: free.saturating_since(now).as_secs_f64(),
                    rate,
                })
            })
            .collect()
    }

    /// Takes `seq` off `path` as lost without charging the path's loss
    /// rate, and queues its repair on another path.
    fn strand(&mut self, now: Instant, path: PathId, seq: u64) {
        if !self.take_off_path(path, seq) {
            return;
        }
        let Some(r) = self.record_mut(seq) else {
            return;
        };
        // The original still holds its place in the path's bottleneck
        // queue: `rescue_stranded` books the path's pacer for it.
        r.avoid = Some(path);
        self.stats.stranded += 1;
        self.queue_repair(now, seq);
    }

    /// The rate the spacing of path slot `s`'s latest arrivals shows
    /// (`sender/spacing.rs`), if what the path has in flight would take
    /// longer than its smoothed round trip plus [`STRANDED_TRIGGER`] to
    /// drain at it (or the rule moved packets off it and its queue is
    /// still draining): a fall that leaves packets queued, which the
    /// pacer and the stranded rule then follow before the pair median
    /// does.
    ///
    /// Why not always: on a path whose buffer a competing flow keeps
    /// full, the arrivals are spaced by that flow's packets as well, and
    /// a pacer that followed them at all times gave the flow the path
    /// (`lab/far.toml` with a competing TCP flow on its far path, from
    /// 20 s on: 13.1 -> 11.5 Mbit/s, the inner TCP's retransmissions
    /// tenfold). There the packets in flight span the flow's queue, and
    /// so does the smoothed round trip. Against 250 ms alone, set 1/12
    /// carried 31.77 Mbit/s (31.51 with the round trip), but the pacer
    /// followed the competing flow's spacing above as well.
    pub(super) fn spacing_fall(&self, s: usize) -> Option<f64> {
        let rate = self.per_path[s].spacing.rate()?;
        if self.per_path[s].drained_at.is_some() {
            return Some(rate);
        }
        let p = self.paths.iter().find(|p| slot(p.id) == s)?;
        let limit = p.rtt.srtt() + STRANDED_TRIGGER;
        let drain = Duration::from_secs_f64(p.in_flight_bytes as f64 * 8.0 / rate);
        (drain > limit).then_some(rate)
    }

    /// The pacing bound while a path drains what the stranded rule found
    /// on it (`PathSender::drained_at`): as far as a packet given to it
    /// now would arrive, its delay plus the drain, beyond the nearest
    /// round trip; `None` once every such path has drained.
    ///
    /// Why: the path's pacer is booked until then, so PET gives the other
    /// paths everything the inner TCP sends meanwhile, and with the bound
    /// of the paths' delays alone their pacing queues dropped it. Set 3/3
    /// of `lab/sweep-changes.sh` (21.1 Mbit/s 117 ms away with a 1.2 MB
    /// queue falling to 6.4 beside 6.9 Mbit/s): the far path was booked
    /// for 1.3 s, the near path's queue dropped 770 of the inner TCP's
    /// window of 830 packets, and the inner TCP timed out twice (13.40 ->
    /// 9.32 Mbit/s). The bound follows the path's own arrival time, as
    /// PET does (13.30).
    pub(super) fn stranded_drain_bound(&self, now: Instant, delays: &Delays) -> Option<Duration> {
        self.paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| {
                let until = self.per_path[slot(p.id)].drained_at?;
                let left = until.saturating_since(now);
                (!left.is_zero()).then_some(delays[slot(p.id)]? + left)
            })
            .max()
            .map(|d| (d + near_rtt(&self.paths)).min(self.cfg.pacing_max_backlog))
    }

    /// Puts stranded packet `seq` back in flight on the path it was taken
    /// off, when no other path can carry its copy (none usable, or all
    /// booked past the pacing bound): its original is still on its way
    /// there, only late. Giving it up instead would tell the peer to stop
    /// waiting for it (`Sender::take_unrepaired`), and the inner TCP
    /// would see a loss.
    pub(super) fn unstrand(&mut self, seq: u64, path: PathId) {
        let Some(r) = self.record_mut(seq) else {
            return;
        };
        if r.fate != Fate::Lost {
            return;
        }
        r.fate = Fate::InFlight;
        r.path = path;
        r.avoid = None;
        let len = r.len;
        if let Some(p) = self.paths.iter_mut().find(|p| p.id == path) {
            p.in_flight_packets += 1;
            p.in_flight_bytes += u64::from(len);
        }
        // Back in its place in the path's order (the FIFO rule and the
        // path's timeout see it again).
        let unacked = &mut self.per_path[slot(path)].unacked;
        let at = unacked
            .iter()
            .position(|&q| q > seq)
            .unwrap_or(unacked.len());
        unacked.insert(at, seq);
        self.stats.unstranded += 1;
    }
}
