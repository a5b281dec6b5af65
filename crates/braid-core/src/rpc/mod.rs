//! RPC, PRISM's reverse-path ACK controller (PRISM Sections 5 and 6.2.1;
//! SPECS.md §1.2).
//!
//! PRISM does not resequence the striped data at the receiver. It lets the
//! data arrive out of order and controls the inner TCP's ACKs on their way
//! back to the sender instead: a duplicate ACK that only reordering caused
//! is held and rewritten, so the sender sees the in-order ACK stream it
//! would have seen had the data arrived in order; a real loss is detected
//! per link and reported to the sender at once (a NACK), after which the
//! held ACKs go out in their original form so the sender can count what
//! has left the network.
//!
//! The controller sits where the ACKs of the data it striped come back (the
//! proxy for a download). It is sans-IO: the caller tells it which link
//! carried each data segment ([`Rpc::on_data_sent`]), hands it every
//! returning ACK with an opaque payload `T` (the rest of the ACK, for
//! re-emission) ([`Rpc::handle_ack`]), services its timer
//! ([`Rpc::poll_timeout`], [`Rpc::handle_timeout`]) and pulls the ACKs to
//! forward ([`Rpc::poll_release`]) and the per-link events for the
//! scheduler ([`Rpc::poll_event`]).
//!
//! # Units
//!
//! Sequence numbers count *segments*, and an ACK value is the next
//! segment expected (every segment below it has arrived), as the
//! simulator's TCP model numbers them. A byte-stream adapter maps each
//! segment's first byte to its index before calling in.
//!
//! # Per ACK (Section 5.2)
//!
//! 1. **ACK identification** (5.2.1): the segments this ACK newly shows to
//!    have arrived, from its SACK blocks (A.1) and by scanning
//!    `[meta_cum, ack)` (A.2), compared with a meta-copy of the receiver's
//!    buffer (a bitmap of `capacity` segments from `meta_cum` on).
//! 2. **Per-link loss detection** (5.2.3): links deliver in FIFO order, so
//!    when a segment sent on link `l` is identified, every segment sent on
//!    `l` before it and not yet identified is lost (the paper's threshold of
//!    one packet). Each loss is reported as [`RpcEvent::Lost`] (for ADAS's
//!    weight cut, Section 4.2.3) and queued for the sender as a NACK.
//! 3. **ACK re-sequencing** (5.2.2, Algorithm 2 is truncated in the source;
//!    rebuilt from the prose): see [`State`] for what each state does.
//! 4. **Loss information** (6.2.1): the NACKed segments and
//!    `p = 1 − B_i / (2 ΣB)` of the congested link(s), attached to the next
//!    released ACK ([`LossInfo`]).
//!
//! # Readings where the paper is vague (SPECS.md §1.2)
//!
//! - A rewritten ACK carries the value the receiver would have sent had
//!   the identified segment `s` arrived in order, `s + 1`, never more than
//!   the cumulative ACK actually reached, and no SACK blocks (an in-order
//!   receiver sends none).
//! - The state machine leaves LOSS when `meta_cum` passes the highest lost
//!   segment (every loss recovered), through OUTOFLOSS to NORMAL on the
//!   next ACK.
//! - **Hold bound.** The paper holds an ACK until its hole fills, so a
//!   segment lost at the tail of a window (no later segment on its link to
//!   reveal it) would wait for the sender's RTO with every ACK held.
//!   [`RpcConfig::max_hold`] bounds the wait: when the oldest held ACK has
//!   waited that long, the hole is presumed lost, NACKed (with loss
//!   detection on) and every held ACK is released in its original form,
//!   as in LOSS. `None` is the paper's behaviour.
//! - **A segment sent more than once** gives no round-trip sample and
//!   reveals no losses when it is identified, since the ACK does not say
//!   which copy arrived (Karn's rule). The paper's identification assumes
//!   one copy; after a sender's timeout and go-back-N the latest copy sits
//!   behind the rest of the window on its link, and taking it for the one
//!   that arrived NACKed that whole window.
//! - With [`RpcConfig::loss_detection`] off the controller only
//!   re-sequences: the "partial RPC" of Fig 13, whose losses wait for the
//!   hold bound or the sender's RTO.
//!
//! Memory is fixed at construction: `capacity` segments of meta-buffer,
//! link map and hold slots, plus per-link histories bounded by `capacity`.
//! Nothing from the network can make it grow; segments beyond the tracked
//! window are passed through untouched.

use std::collections::VecDeque;

use crate::path::{PathId, MAX_PATHS};
use crate::time::{Duration, Instant};

mod hold;
pub mod tcp;
#[cfg(test)]
mod tests;

/// Most SACK blocks an ACK may carry (RFC 2018: at most four fit).
pub const MAX_SACK_BLOCKS: usize = 4;
/// Most lost segments one [`LossInfo`] names; more go on the next ACK.
pub const MAX_NACK: usize = 8;

/// The parts of an inner TCP ACK the controller reads and writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct AckView {
    /// Next segment expected.
    pub ack: u64,
    /// SACK blocks, half-open segment ranges `[left, right)`, the most
    /// recent arrival's block first (RFC 2018 Section 4).
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    pub n_sack: u8,
}

impl AckView {
    pub fn new(ack: u64, blocks: &[(u64, u64)]) -> Self {
        let mut v = AckView {
            ack,
            ..Default::default()
        };
        for (i, b) in blocks.iter().take(MAX_SACK_BLOCKS).enumerate() {
            v.sack[i] = *b;
            v.n_sack = i as u8 + 1;
        }
        v
    }

    pub fn blocks(&self) -> &[(u64, u64)] {
        &self.sack[..usize::from(self.n_sack).min(MAX_SACK_BLOCKS)]
    }
}

/// Loss information for the sender (Section 6.2.1).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LossInfo {
    /// The lost segments (a NACK); the first `n` are meaningful.
    pub lost: [u64; MAX_NACK],
    pub n: u8,
    /// The window factor: the product of `1 − B_i / (2 ΣB)` over the
    /// distinct links the NACKed segments were lost on (each further
    /// congested link applies the reduction again, Section 6.2.2). A link
    /// is charged once per window, as TCP reduces once per window: a loss
    /// of a segment sent before the link's last charge is NACKed with a
    /// factor of 1. The paper does not say; charging every NACK cut the
    /// window many times for one queue overflow (a slow-start overshoot
    /// loses dozens of packets on a link) and held PRISM at 0.85 of ideal
    /// in Fig 13 and far lower after a timeout in Fig 7.
    pub p: f64,
}

impl LossInfo {
    pub fn seqs(&self) -> &[u64] {
        &self.lost[..usize::from(self.n).min(MAX_NACK)]
    }
}

/// One ACK to forward to the sender.
#[derive(Clone, Debug, PartialEq)]
pub struct Release<T> {
    /// The caller's payload given with the ACK.
    pub inner: T,
    /// The ACK value to send.
    pub ack: u64,
    /// Forwarded as it came (keep its SACK blocks). `false`: rewritten,
    /// send it with `ack` and without SACK blocks.
    pub original: bool,
    /// Loss information to attach (Section 6.2.1).
    pub loss: Option<LossInfo>,
}

/// What the controller learnt about a link.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RpcEvent {
    /// A segment sent on the link arrived (ADAS: `N_i -= 1`, additive
    /// increase of `W_i`, Section 4.2.3).
    Identified { seq: u64, link: PathId },
    /// A segment sent on the link was lost (ADAS: halve `W_i`).
    Lost { seq: u64, link: PathId },
}

/// The state machine of Fig 5.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Duplicate ACKs caused by reordering are held and rewritten; a
    /// cumulative advance releases the held ACKs it covers in order.
    Normal,
    /// A loss was just detected: the loss information goes out with the
    /// next released ACK, every held ACK is released in its original form,
    /// then LOSS.
    LossDetect,
    /// Every ACK is forwarded in its original form until the losses are
    /// recovered, so the sender can count what has left the network.
    Loss,
    /// The losses are recovered; the next ACK returns to NORMAL.
    OutOfLoss,
}

/// Tuning of [`Rpc`].
#[derive(Clone, Debug, PartialEq)]
pub struct RpcConfig {
    /// Segments tracked from the cumulative ACK on (meta-buffer, link map
    /// and hold slots); rounded up to a power of two. At least the
    /// sender's window.
    pub capacity: u64,
    /// Per-link loss detection and NACKs (full RPC). Off: re-sequencing
    /// only (Fig 13's partial RPC).
    pub loss_detection: bool,
    /// Longest an ACK is held (module docs); `None` = until the hole fills.
    /// The bound used is the larger of this and an RTO-style
    /// `SRTT + 4·RTTVAR` of the round trips the controller measures itself
    /// (a segment's departure to the ACK that identifies it, RFC 6298's
    /// smoothing): reordering between links never lasts longer than the
    /// slowest link's round trip, so holding for less than that turns
    /// reordering into false losses on long-delay links.
    pub max_hold: Option<Duration>,
}

impl Default for RpcConfig {
    fn default() -> Self {
        RpcConfig {
            capacity: 1024,
            loss_detection: true,
            max_hold: Some(Duration::from_millis(500)),
        }
    }
}

/// Counters for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RpcStats {
    pub acks_in: u64,
    pub acks_out: u64,
    /// ACKs held at least once.
    pub held: u64,
    /// ACKs released rewritten.
    pub rewritten: u64,
    pub losses_detected: u64,
    pub nacks_sent: u64,
    /// Times the hold bound released the held ACKs.
    pub hold_expiries: u64,
    /// Most ACKs held at once.
    pub max_held: u64,
}

#[derive(Copy, Clone, Debug)]
struct SentOn {
    seq: u64,
    link: u8,
    /// Send order on that link.
    idx: u64,
    at: Instant,
    /// The segment was sent before this copy: when it is identified, the
    /// ACK cannot say which copy arrived (Karn's retransmission
    /// ambiguity).
    resent: bool,
}

/// The reverse-path controller of one TCP connection; see the module docs.
pub struct Rpc<T> {
    cfg: RpcConfig,
    mask: u64,
    state: State,
    /// Next segment the receiver expects, as far as ACKs have shown.
    meta_cum: u64,
    /// Segments above `meta_cum` known to have arrived, slot `seq & mask`.
    meta: Vec<bool>,
    /// Latest transmission of each tracked segment, slot `seq & mask`.
    sent: Vec<Option<SentOn>>,
    /// Segments the sender sent that never crossed a link (dropped before
    /// a path), slot `seq & mask`, cleared as `meta_cum` passes.
    unsent: Vec<bool>,
    /// Per-link scheduling history: `(seq, idx)` sent and not identified.
    history: Vec<VecDeque<(u64, u64)>>,
    next_idx: [u64; MAX_PATHS],
    rate_bps: [Option<f64>; MAX_PATHS],
    /// ACK-hold slots indexed by the identified segment (`wSeqNum`).
    held: Vec<Option<(u64, T)>>,
    n_held: u64,
    /// Identified segments in the order their ACKs were held (for the hold
    /// bound); entries already released are skipped lazily.
    hold_order: VecDeque<(Instant, u64)>,
    /// Highest segment declared lost in the current loss episode.
    loss_high: Option<u64>,
    /// Lost segments not yet NACKed, with their links.
    pending_nack: VecDeque<(u64, u8)>,
    /// Per link, the segment from which a loss charges `p` again: one past
    /// the highest segment sent when the link was last charged.
    charged_until: [u64; MAX_PATHS],
    /// One past the highest segment sent.
    high_sent: u64,
    out: VecDeque<Release<T>>,
    events: VecDeque<RpcEvent>,
    scratch: Vec<u64>,
    /// Round trips measured from departures to identification.
    rtt: crate::path::RttEstimator,
    /// Time of the ACK being processed.
    now: Instant,
    stats: RpcStats,
}

impl<T> Rpc<T> {
    pub fn new(cfg: RpcConfig) -> Self {
        let cap = cfg.capacity.clamp(16, 1 << 20).next_power_of_two();
        Rpc {
            mask: cap - 1,
            state: State::Normal,
            meta_cum: 0,
            meta: vec![false; cap as usize],
            sent: vec![None; cap as usize],
            unsent: vec![false; cap as usize],
            history: (0..MAX_PATHS).map(|_| VecDeque::new()).collect(),
            next_idx: [0; MAX_PATHS],
            rate_bps: [None; MAX_PATHS],
            held: (0..cap).map(|_| None).collect(),
            n_held: 0,
            hold_order: VecDeque::new(),
            loss_high: None,
            pending_nack: VecDeque::new(),
            charged_until: [0; MAX_PATHS],
            high_sent: 0,
            out: VecDeque::new(),
            events: VecDeque::new(),
            scratch: Vec::new(),
            rtt: crate::path::RttEstimator::new(Duration::ZERO),
            now: Instant::ZERO,
            stats: RpcStats::default(),
            cfg,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn stats(&self) -> RpcStats {
        self.stats
    }

    /// ACKs held now.
    pub fn held(&self) -> u64 {
        self.n_held
    }

    /// The next segment the receiver expects, as the ACKs have shown.
    pub fn meta_cum(&self) -> u64 {
        self.meta_cum
    }

    fn cap(&self) -> u64 {
        self.mask + 1
    }

    fn tracked(&self, seq: u64) -> bool {
        seq >= self.meta_cum && seq < self.meta_cum.saturating_add(self.cap())
    }

    /// The nominal rate of a link, `B_i` of the loss information's `p`;
    /// `None` takes the link out of the active set.
    pub fn set_link_rate(&mut self, link: PathId, rate_bps: Option<f64>) {
        if let Some(r) = self.rate_bps.get_mut(usize::from(link.0)) {
            *r = rate_bps.filter(|b| b.is_finite() && *b > 0.0);
        }
    }

    /// `p = 1 − B_i / (2 ΣB)` over the links with a rate (Section 6.2.1);
    /// 0.5, TCP's halving, when the link's rate is unknown.
    pub fn share_factor(&self, link: PathId) -> f64 {
        let sum: f64 = self.rate_bps.iter().flatten().sum();
        match self.rate_bps.get(usize::from(link.0)).copied().flatten() {
            Some(b) if sum > 0.0 => 1.0 - b / (2.0 * sum),
            _ => 0.5,
        }
    }

    /// Segment `seq` left on `link` (a retransmission too). Segments below
    /// the cumulative ACK or beyond the tracked window are not recorded.
    pub fn on_data_sent(&mut self, now: Instant, seq: u64, link: PathId) {
        let l = usize::from(link.0);
        if l >= MAX_PATHS || !self.tracked(seq) {
            return;
        }
        if self.history[l].len() as u64 >= self.cap() {
            // A link whose history is never drained (it went idle with
            // stale entries); the oldest entry is forgotten.
            self.history[l].pop_front();
        }
        self.high_sent = self.high_sent.max(seq + 1);
        let idx = self.next_idx[l];
        self.next_idx[l] += 1;
        self.history[l].push_back((seq, idx));
        let slot = (seq & self.mask) as usize;
        self.unsent[slot] = false;
        let resent = self.sent[slot].is_some_and(|e| e.seq == seq);
        self.sent[slot] = Some(SentOn {
            seq,
            link: link.0,
            idx,
            at: now,
            resent,
        });
        // A retransmission of a segment whose arrival was recorded (it
        // cannot be: the receiver would not need it) leaves `meta` as is.
    }

    /// Segment `seq` left the sender but was dropped before any link
    /// carried it. It is a hole no reordering will fill: while it is the
    /// hole at the cumulative ACK, the held ACKs and every duplicate are
    /// forwarded as they came, not held, so the sender's own loss
    /// recovery resends it at once instead of after the hold bound. No
    /// link is charged for it.
    pub fn on_data_unsent(&mut self, seq: u64) {
        if !self.tracked(seq) {
            return;
        }
        self.high_sent = self.high_sent.max(seq + 1);
        self.unsent[(seq & self.mask) as usize] = true;
    }

    /// The hole at the cumulative ACK is a segment no link carried.
    fn hole_unsent(&self) -> bool {
        self.unsent[(self.meta_cum & self.mask) as usize]
    }

    /// One returning ACK with the caller's payload. Pull what to forward
    /// with [`Self::poll_release`] and the link events with
    /// [`Self::poll_event`] afterwards.
    pub fn handle_ack(&mut self, now: Instant, view: &AckView, inner: T) {
        self.stats.acks_in += 1;
        self.now = now;
        let prev_cum = self.meta_cum;
        if view.ack < prev_cum {
            // Older than what was already seen (reordered on the way back):
            // forward it; the sender ignores a stale ACK.
            self.emit(inner, view.ack, true);
            return;
        }
        let causing = self.identify(view);
        let new_cum = view.ack.max(prev_cum);
        self.advance_cum(new_cum);
        if let Some(h) = self.loss_high {
            if self.state == State::Loss && self.meta_cum > h {
                self.state = State::OutOfLoss;
                self.loss_high = None;
            }
        }
        match self.state {
            State::LossDetect => {
                self.release_all_original();
                self.emit(inner, view.ack, true);
                self.state = State::Loss;
            }
            State::Loss => {
                self.emit(inner, view.ack, true);
            }
            State::Normal | State::OutOfLoss => {
                self.state = State::Normal;
                if new_cum > prev_cum {
                    self.release_covered(prev_cum, causing, inner, view.ack);
                    if self.hole_unsent() {
                        // The new hole will not fill by itself: the
                        // sender needs the duplicates to resend it.
                        self.release_all_original();
                    }
                } else if self.hole_unsent() {
                    self.release_all_original();
                    self.emit(inner, view.ack, true);
                } else if let Some(s) = causing.filter(|&s| s >= self.meta_cum) {
                    self.hold(now, s, inner);
                } else {
                    self.emit(inner, view.ack, true);
                }
            }
        }
    }

    /// When [`Self::handle_timeout`] is next due: the oldest held ACK's
    /// hold bound.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let bound = self.hold_bound()?;
        self.hold_order.front().map(|&(t, _)| t + bound)
    }

    /// The hold bound in force ([`RpcConfig::max_hold`]).
    pub fn hold_bound(&self) -> Option<Duration> {
        let floor = self.cfg.max_hold?;
        if !self.rtt.has_samples() {
            return Some(floor);
        }
        Some(floor.max(self.rtt.srtt() + self.rtt.rttvar() * 4))
    }

    /// The hold bound: when the oldest held ACK has waited `max_hold`, the
    /// hole at `meta_cum` is presumed lost and every held ACK is released
    /// in its original form (module docs). Extra calls are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        let Some(bound) = self.hold_bound() else {
            return;
        };
        self.skip_released_holds();
        let Some(&(t, _)) = self.hold_order.front() else {
            return;
        };
        if now < t + bound {
            return;
        }
        self.stats.hold_expiries += 1;
        let top = self
            .hold_order
            .iter()
            .map(|&(_, s)| s)
            .max()
            .unwrap_or(self.meta_cum);
        if self.cfg.loss_detection {
            let hole = self.meta_cum;
            if let Some(link) = self.link_of(hole) {
                self.declare_lost(hole, link);
            }
        }
        self.loss_high = Some(self.loss_high.map_or(top, |h| h.max(top)));
        self.release_all_original();
        self.state = State::Loss;
    }

    /// Releases every held ACK in its original form (the connection is
    /// no longer controlled).
    pub fn release_all(&mut self) {
        self.release_all_original();
    }

    pub fn poll_release(&mut self) -> Option<Release<T>> {
        self.out.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<RpcEvent> {
        self.events.pop_front()
    }

    // ----- internals -------------------------------------------------------

    fn link_of(&self, seq: u64) -> Option<u8> {
        self.sent[(seq & self.mask) as usize]
            .filter(|e| e.seq == seq)
            .map(|e| e.link)
    }

    fn known(&self, seq: u64) -> bool {
        seq < self.meta_cum || (self.tracked(seq) && self.meta[(seq & self.mask) as usize])
    }

    /// Step 1 and 2: marks the segments the ACK newly covers, reports them
    /// and the per-link losses they reveal. Returns the segment whose
    /// arrival caused the ACK: the newest in the first SACK block if that
    /// block is new, else the highest newly covered segment.
    fn identify(&mut self, view: &AckView) -> Option<u64> {
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        let lim = self.meta_cum.saturating_add(self.cap());
        let mut causing = None;
        // A.1: SACK blocks, first block first (it holds the latest arrival).
        for (k, &(l, r)) in view.blocks().iter().enumerate() {
            let (l, r) = (l.max(self.meta_cum).max(view.ack), r.min(lim));
            for s in l..r {
                if !self.known(s) {
                    self.meta[(s & self.mask) as usize] = true;
                    ids.push(s);
                    if k == 0 {
                        causing = Some(s);
                    }
                }
            }
        }
        // A.2: cumulative-ACK scan of [meta_cum, ack).
        for s in self.meta_cum..view.ack.min(lim) {
            if !self.known(s) {
                self.meta[(s & self.mask) as usize] = true;
                ids.push(s);
            }
        }
        if causing.is_none() {
            causing = ids.iter().copied().max();
        }
        for &s in &ids {
            if let Some(e) = self.sent[(s & self.mask) as usize].filter(|e| e.seq == s) {
                self.events.push_back(RpcEvent::Identified {
                    seq: s,
                    link: PathId(e.link),
                });
                if e.resent {
                    // Which copy arrived is unknown. Taking it for the
                    // latest would time it too short and, worse, declare
                    // lost every segment sent on the latest copy's link
                    // before it: after the sender's go-back-N those are
                    // usually still queued (a whole window NACKed at
                    // once). As Karn's rule for RTT samples, the arrival
                    // of an ambiguous segment proves nothing; the link's
                    // next unambiguous arrival reveals its losses.
                    continue;
                }
                if causing == Some(s) {
                    // One round-trip sample per ACK, from the segment whose
                    // arrival caused it.
                    self.rtt.update(self.now.saturating_since(e.at));
                }
                self.fifo_losses(e);
            }
        }
        self.scratch = ids;
        causing
    }

    /// Section 5.2.3: `e` arrived, so everything sent before it on its link
    /// and not yet identified is lost.
    fn fifo_losses(&mut self, e: SentOn) {
        let l = usize::from(e.link);
        while let Some(&(seq, idx)) = self.history[l].front() {
            if idx > e.idx {
                break;
            }
            self.history[l].pop_front();
            if idx == e.idx {
                break;
            }
            // A stale copy (the segment was sent again later, here or on
            // another link) or one already identified is not a loss.
            let latest = self.sent[(seq & self.mask) as usize]
                .is_some_and(|x| x.seq == seq && x.link == e.link && x.idx == idx);
            if self.cfg.loss_detection && latest && !self.known(seq) {
                self.declare_lost(seq, e.link);
            }
        }
    }

    fn declare_lost(&mut self, seq: u64, link: u8) {
        self.stats.losses_detected += 1;
        self.events.push_back(RpcEvent::Lost {
            seq,
            link: PathId(link),
        });
        if self.pending_nack.len() as u64 >= self.cap() {
            self.pending_nack.pop_front();
        }
        self.pending_nack.push_back((seq, link));
        self.loss_high = Some(self.loss_high.map_or(seq, |h| h.max(seq)));
        self.state = State::LossDetect;
    }

    /// Moves `meta_cum` to `to`, clearing the slots it passes.
    fn advance_cum(&mut self, to: u64) {
        if to <= self.meta_cum {
            return;
        }
        let from = self.meta_cum.max(to.saturating_sub(self.cap()));
        for s in from..to {
            self.meta[(s & self.mask) as usize] = false;
            self.unsent[(s & self.mask) as usize] = false;
        }
        self.meta_cum = to;
    }

    /// Up to [`MAX_NACK`] pending losses with their combined factor.
    fn take_loss_info(&mut self) -> Option<LossInfo> {
        if self.pending_nack.is_empty() {
            return None;
        }
        let mut info = LossInfo {
            lost: [0; MAX_NACK],
            n: 0,
            p: 1.0,
        };
        let mut links_seen = [false; MAX_PATHS];
        while usize::from(info.n) < MAX_NACK {
            let Some((seq, link)) = self.pending_nack.pop_front() else {
                break;
            };
            if seq < self.meta_cum {
                continue; // arrived after all (a stale NACK is worse than none)
            }
            info.lost[usize::from(info.n)] = seq;
            info.n += 1;
            let l = usize::from(link) % MAX_PATHS;
            if !links_seen[l] && seq >= self.charged_until[l] {
                links_seen[l] = true;
                self.charged_until[l] = self.high_sent;
                info.p *= self.share_factor(PathId(link));
            }
        }
        if info.n == 0 {
            return None;
        }
        self.stats.nacks_sent += 1;
        Some(info)
    }
}
