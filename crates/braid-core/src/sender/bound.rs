//! The bound on a pacing queue's delay: how long `Sender::send_paced`
//! lets a packet wait for its path before dropping it, so that the inner
//! TCP still sees congestion (`SenderConfig::pacing_delay_factor`), and how
//! it follows paths that leave use.

use super::pacing::Delays;
use super::{slot, Sender, SenderConfig};
use crate::path::PathState;
use crate::time::{Duration, Instant};

impl<P> Sender<P> {
    /// Room the pacing bound leaves for the peer's resequencer to hold a
    /// gap while its repair travels (`SenderConfig::pacing_repair_room`):
    /// that many [`Sender::repair_wait`]s while a usable path loses at
    /// least `pacing_repair_room_loss` of its packets, else none (and none
    /// with repair off).
    pub(super) fn repair_room(&self) -> Duration {
        let factor = self.cfg.pacing_repair_room;
        if !factor.is_finite() || factor <= 0.0 {
            return Duration::ZERO;
        }
        let losing = self.paths.iter().filter(|p| p.usable).any(|p| {
            self.per_path[slot(p.id)].repair.peer_loss_rate >= self.cfg.pacing_repair_room_loss
        });
        if !losing {
            return Duration::ZERO;
        }
        self.repair_wait().unwrap_or_default().mul_f64(factor)
    }

    /// The bound on a pacing queue's delay for a packet scheduled at
    /// `now` ([`pacing_bound`] of this sender's paths, their relative
    /// delays and its repair room): what `send_paced` holds a packet's
    /// wait to. After a path has left use, not lower than the bound then
    /// for [`BOUND_HOLD_AFTER_LEAVE`], and after that less what
    /// [`BOUND_HALF_LIFE_AFTER_LEAVE`] has taken off its excess.
    pub(super) fn pacing_bound_now(&self, now: Instant) -> Duration {
        let bound = self.pacing_bound_of_paths(now);
        match self.bound_at_leave {
            Some((was, at)) if was > bound => {
                let falling = now.saturating_since(at + BOUND_HOLD_AFTER_LEAVE);
                let halvings = falling.as_secs_f64() / BOUND_HALF_LIFE_AFTER_LEAVE.as_secs_f64();
                bound + (was - bound).mul_f64(0.5f64.powf(halvings))
            }
            _ => bound,
        }
    }

    /// Called at each send: if a path has left use since the last one
    /// (declared down), the bound of the last send before the leave, or
    /// [`Sender::window_at_leave`] if longer, is where the pacing bound
    /// stays ([`BOUND_HOLD_AFTER_LEAVE`]) and then falls from
    /// ([`BOUND_HALF_LIFE_AFTER_LEAVE`]). A leave during another's hold
    /// may raise the held bound but does not restart the hold: a path
    /// that goes down and up again and again would otherwise keep the
    /// bound at its peak. Returns this send's bound (`None` without
    /// pacing), which the send itself then uses rather than computing it
    /// again.
    pub(super) fn note_paths_left(&mut self, now: Instant) -> Option<Duration> {
        if !self.cfg.pacing {
            return None;
        }
        let usable = self
            .paths
            .iter()
            .filter(|p| p.usable)
            .fold(0u32, |m, p| m | 1 << slot(p.id));
        if let Some((bound, was)) = self.bound_last {
            if was & !usable != 0 {
                let held = bound.max(self.window_at_leave(now, was, was & !usable));
                self.bound_at_leave = match self.bound_at_leave {
                    Some((h, at)) if now.saturating_since(at) < BOUND_HOLD_AFTER_LEAVE => {
                        Some((h.max(held), at))
                    }
                    _ => Some((held, now)),
                };
            }
        }
        let bound = self.pacing_bound_now(now);
        self.bound_last = Some((bound, usable));
        Some(bound)
    }

    /// What the pacing bound holds when a path leaves, at least: how long
    /// the usable paths take to deliver what their pacing queues hold and
    /// what the paths that left (`left`, a mask of path slots) still had
    /// in flight, at their rate estimates; at most the round trip of the
    /// slowest path that was in use (`was`) plus [`INNER_RTO_MARGIN`], and
    /// at most `pacing_max_backlog`.
    ///
    /// Why: the bound of that moment counts the paths that remain, but
    /// the inner TCP's window was grown for all of them. When the path
    /// that left carried the larger share, its packets come back to the
    /// remaining paths' queues as copies (`sender/quiet.rs`, the loss
    /// rules), and the inner TCP's next sends queue behind them. A bound
    /// of the remaining paths' delays dropped what was beyond it, in
    /// every round trip as the window came back, and the inner TCP cut
    /// its window in each. The cap: a packet held longer than the inner
    /// TCP's round trip plus its smallest retransmission timeout margin
    /// is sent again by it anyway, after a timeout that resets its window.
    /// (`queued` is the longest of the remaining paths' pacing queues,
    /// and the stranded bytes are spread over all of them at their rate
    /// estimates: an estimate, the closer the fewer paths remain.)
    ///
    /// Change set 1/2 of `lab/sweep-changes.sh` in the lab (7.89 Mbit/s
    /// 84 ms away, dark for 1.9 s, beside 3.87 Mbit/s 61 ms away): the
    /// dark path was declared down (600 ms without an arrival) before the
    /// quiet rule found it, so the bound at the leave was the slower
    /// path's own, 0.17 s, while that path's queue already held 0.31 s of
    /// copies. 218 of the inner TCP's packets were dropped over 1.6 s and
    /// its window went 267 -> 186 -> 130 -> 91 packets. Before this rule:
    /// 7.86-8.65 Mbit/s in twelve upload runs (with and without
    /// [`BOUND_HOLD_AFTER_LEAVE`]), where the build before the pair fix of
    /// `OpenPair::raised`, its near path unpaced and its bottleneck queue
    /// holding the window, carried 9.27-9.42. Held this way (0.34-0.37 s,
    /// near the cap of 0.37: the dark path's 174 ms round trip and the
    /// margin): 9.47-9.51 in ten of fifteen runs and 8.60-8.64 in five,
    /// 151-161 drops where counted. In those five the inner TCP's window
    /// still took a third cut after the outage, to 91 packets instead of
    /// 130. Downloads (the server's sender) were 8.62-9.53 before and
    /// 8.63-9.52 after in three runs each, high in one and two of them.
    fn window_at_leave(&self, now: Instant, was: u32, left: u32) -> Duration {
        let in_use = |p: &&PathState, mask: u32| mask & 1 << slot(p.id) != 0;
        let rate = self.usable_rate_bps();
        if rate <= 0.0 {
            return Duration::ZERO;
        }
        let queued = self
            .paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| self.per_path[slot(p.id)].pacer_free)
            .map(|t| t.saturating_since(now))
            .max()
            .unwrap_or_default();
        let stranded: u64 = self
            .paths
            .iter()
            .filter(|p| in_use(p, left))
            .map(|p| p.in_flight_bytes)
            .sum();
        let slowest = self
            .paths
            .iter()
            .filter(|p| in_use(p, was) && p.rtt.has_samples())
            .map(|p| p.rtt.srtt())
            .max()
            .unwrap_or_default();
        (queued + Duration::from_secs_f64((stranded as f64 * 8.0 / rate).min(3600.0)))
            .min(slowest + INNER_RTO_MARGIN)
            .min(self.cfg.pacing_max_backlog)
    }

    /// [`pacing_bound`] of the paths as they are now, or longer while a
    /// path's queue drains what the stranded rule moved off it
    /// ([`Sender::stranded_drain_bound`]).
    fn pacing_bound_of_paths(&self, now: Instant) -> Duration {
        let delays = self.relative_delays();
        let bound = pacing_bound(&self.cfg, &self.paths, &delays, now, self.repair_room());
        self.stranded_drain_bound(now, &delays)
            .map_or(bound, |d| bound.max(d))
    }
}

/// The bound on a pacing queue's delay (see `SenderConfig::pacing_delay_factor`).
///
/// Every usable path counts, paced or not: a far path whose only
/// estimate came from small packets is not paced, and if the bound
/// left it out, the near path's queue could never grow as long as the
/// delay difference, EDPF would never choose the far path, and the
/// far path would never carry the full-size pairs that get it paced.
/// In the lab this left a 2 Mbit/s path of fast-slow unused for a
/// whole run, one run in three.
///
/// A path not heard from yet counts too, for a while: its round trip
/// is at least the time since the connection first sent on it
/// (`PathState::silent_since`). A transfer starts as soon as the near
/// path answers; a path 280 ms further away answers 560 ms later, and
/// meanwhile the bound, counting the near path alone (50 ms), stopped
/// TCP's slow start at a window of 80 packets. CUBIC then climbed from
/// there for ten seconds before the window covered the far path.
///
/// The lower bound counts only while the silence is shorter than
/// [`FIRST_ANSWER_ROUND_TRIPS`] times `pacing_max_backlog`, so a path
/// that never answers lengthens the bound only during the first
/// seconds of a connection. Not while it is shorter than the cap alone:
/// a path's first answer can take two of its round trips (the first
/// packet on a link waits for the next hop's address to be resolved
/// over the same link), and on `lab/geo.toml` (600 ms one way) the far
/// path answered 2.4 s after the first keepalive. Between 2 s and
/// 2.4 s the bound fell to the near path's 50 ms, the pacing queue
/// dropped 68 packets of the inner TCP's slow start at once, and CUBIC,
/// its window then capped near the 150 packets it had reached, did not
/// grow past the 520 the far path needs within a 15 s transfer: braid
/// ran below the near path alone (inner `ss -ti` and `braid status`
/// each second).
///
/// With repair, `repair_room` ([`Sender::repair_room`]) is added on top
/// of the bound's lower end: the packets the peer's resequencer holds
/// while a repair travels still count in the inner TCP's window.
///
/// A function of its arguments alone: the sender's configuration, the
/// paths' estimates, their relative one-way delays as the caller
/// computed them for this decision, and the repair room.
pub(super) fn pacing_bound(
    cfg: &SenderConfig,
    paths: &[PathState],
    delays: &Delays,
    now: Instant,
    repair_room: Duration,
) -> Duration {
    let near_rtt = near_rtt(paths);
    let silent = paths
        .iter()
        .filter_map(|p| p.silent_since)
        .map(|t| now.saturating_since(t))
        .filter(|&rtt| rtt < cfg.pacing_max_backlog * FIRST_ANSWER_ROUND_TRIPS)
        .map(|rtt| rtt.saturating_sub(near_rtt) / 2);
    // A quiet path counts as far as the scheduler takes it
    // (`sender/quiet.rs`): the inner TCP's window still spans its packets,
    // and what it held was copied onto the other paths' queues.
    let far = paths
        .iter()
        .filter(|p| p.usable)
        .filter_map(|p| Some(delays[slot(p.id)]? + p.quiet_delay.unwrap_or_default()))
        .chain(silent)
        .max()
        .unwrap_or_default();
    ((far.mul_f64(cfg.pacing_delay_factor.max(0.0)) + near_rtt).max(cfg.pacing_min_backlog)
        + repair_room)
        .min(cfg.pacing_max_backlog)
}

/// How long a pacing queue lets an inner TCP retransmission wait
/// (`PacketInfo::retransmit`): twice the pacing bound, at most
/// `pacing_max_backlog`, where new data gets the bound itself, counted
/// without the retransmissions queued past it
/// (`PathSender::retransmits_past_bound`), and never more than this.
///
/// Why: a drop at the bound is the inner TCP's congestion signal, and
/// one drop per window is all it needs; a retransmission comes from a
/// TCP that already took the signal and cut its window. Dropping it as
/// well costs that TCP its retransmission timer. That happens when slow
/// start on far paths overshoots by so much that CUBIC's cut to 0.7 of
/// the window still leaves it above what the paths and the bound hold,
/// so the queue stays at the bound through the whole recovery. Random
/// set 4242/12 of the sweeps (2.11 and 4.84 Mbit/s, 189 and 173 ms
/// away, simulated with the tunnel idle 3 s first): slow start reached
/// 664 packets, the queue dropped 237 of them, then 141 more during the
/// recovery, 60 of them retransmissions; two timeouts left the window
/// at two packets with 8 s to go, and braid carried 2.55 Mbit/s where
/// the faster path alone carries 4.57. With the room no retransmission
/// is dropped, CUBIC cuts twice (664 -> 466 -> 326) without a timeout,
/// and braid carries 6.47 of the paths' 6.95.
///
/// Why new data does not count them: counted, the retransmissions took
/// the room of the new data sent in the same recovery. On `lab/fade.toml`
/// after 3 s idle the first packet sent after the recovery's point was
/// dropped so, the simulated inner TCP (whose SACK recovery, as ns-2's,
/// does not start again before an ACK beyond that point) timed out, and
/// braid fell to 19.19 Mbit/s, below the DSL path alone (19.31; 20.10
/// now). Twice the bound keeps what a queue can take bounded.
pub(super) fn retransmit_bound(cfg: &SenderConfig, bound: Duration) -> Duration {
    (bound * 2).min(cfg.pacing_max_backlog.max(bound))
}

/// The smallest round trip of the usable paths (zero before any sample):
/// what a packet on the nearest path takes at least, on which every
/// pacing bound builds.
pub(super) fn near_rtt(paths: &[PathState]) -> Duration {
    paths
        .iter()
        .filter(|p| p.usable)
        .filter_map(|p| p.rtt.min_rtt())
        .min()
        .unwrap_or_default()
}

/// How many of its round trips a path may take to answer the first
/// packet sent on it (see [`pacing_bound`]): one to resolve the next
/// hop's link address, one for the packet and its answer.
const FIRST_ANSWER_ROUND_TRIPS: u32 = 2;

/// How fast the pacing bound falls after a path has left use (declared
/// down): what it exceeds the bound of the remaining paths by halves in
/// this time.
///
/// Why: a far path in use sets the bound (twice its delay beyond the
/// nearest path), and the inner TCP's window grows to span that delay.
/// When the path went down, the bound fell at once to that of the
/// remaining paths, and their pacing queues dropped whatever of the
/// window was beyond it. Change set 5/2 of `lab/sweep-changes.sh` (1.01
/// Mbit/s 124 ms away going dark beside 42.88 Mbit/s 9 ms away): the
/// bound fell from about 250 ms to its 50 ms floor, the queues dropped
/// 2956 of the inner TCP's packets over 1.5 s (its recovery sent more
/// as each drop was found), and it timed out; 37.68 Mbit/s where the
/// fast path alone carries 41.39. Falling with this half-life, the
/// window shrinks by the inner TCP's own reductions as the queue
/// exceeds the bound: 39.52, and set 3/4 (28.57 Mbit/s 193 ms away dark
/// for 2.2 s beside 34.45 Mbit/s 62 ms away) 31.79 -> 39.31, above its
/// best path alone (33.26). Only when a path leaves: a bound that fell
/// gradually at every fall (a quiet path heard from again, a delay
/// estimate that came down) cost two sets a quarter and more (a delay
/// step of 26.6 Mbit/s beside 2.4: 15.51 -> 11.40).
pub(super) const BOUND_HALF_LIFE_AFTER_LEAVE: Duration = Duration::from_millis(500);

/// How much longer than its round trip the inner TCP waits for an
/// acknowledgement before it retransmits on a timeout, at least: Linux's
/// smallest retransmission timeout margin (`TCP_RTO_MIN`, 200 ms, over
/// the smoothed round trip). See [`Sender::window_at_leave`].
pub(super) const INNER_RTO_MARGIN: Duration = Duration::from_millis(200);

/// How long the pacing bound stays where it was when a path left use
/// (declared down) before it falls ([`BOUND_HALF_LIFE_AFTER_LEAVE`]).
///
/// Why: a path that goes dark often comes back within a second or two (a
/// radio outage), and the inner TCP's window, grown for every path, is
/// the one it needs again then. Held, the bound lets the remaining paths'
/// pacing queues keep that window, as the dark path's own bottleneck
/// queue would have: the inner TCP loses what is beyond the bound at the
/// leave and cuts its window once or twice. Falling from the first send
/// after the leave, the bound dropped packets in every round trip, and
/// the inner TCP cut its window in each. Change set 1/2 of
/// `lab/sweep-changes.sh` (7.89 Mbit/s 84 ms away, dark for 1.9 s, beside
/// 3.87 Mbit/s 61 ms away), simulated: the dark path went quiet before
/// it was declared down, so the bound at the leave counted its loss
/// timeout (0.44 s); the slower path's queue sat at the bound as it fell
/// to 0.17 s, dropping a packet every 30 ms for a second, and CUBIC had
/// not climbed back by the end of the run: 8.07 Mbit/s, 9.16 with the
/// hold. (In the lab the path was declared down first:
/// [`Sender::window_at_leave`].)
///
/// Seven draws of 30 change sets (`IDLE=3 lab/sweep-changes.sh 30 1` to
/// `30 7`, simulated, Mbit/s in all): 5038.4 without a hold; 5047.0,
/// 5049.5, 5048.0 and 5049.5 with 0.5, 1, 1.5 and 2 s. From 1.5 s on,
/// set 5/2 (1.01 Mbit/s going dark beside 42.88, for which the bound
/// falls at all) lost 39.28 -> 37.93: the window the fast path's queue
/// held for the slow path's delay stayed that much longer.
pub(super) const BOUND_HOLD_AFTER_LEAVE: Duration = Duration::from_millis(1000);
