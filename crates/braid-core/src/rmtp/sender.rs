//! The sending half of an R-MTP session (`SPECS.md` §4.1).
//!
//! Call order, quinn style: feed application bytes with [`Sender::write`]
//! (or [`Sender::write_virtual`] in a simulation) and [`Sender::finish`];
//! feed every acknowledgement to [`Sender::handle_ack`]; call
//! [`Sender::poll_transmit`] until it returns `None` after each of these;
//! arm a timer for [`Sender::poll_timeout`] and call
//! [`Sender::handle_timeout`] when it fires. Nothing here reads a clock or
//! touches a socket.
//!
//! What happens inside:
//! - **Channels.** Each one-way channel has its own rate ([`ChannelRate`]):
//!   probed with a packet pair, started at half the pair rate, paced, and
//!   moved only by the long-run jitter (never by losses). Each sends at its
//!   own rate, so its share of the stream is `rate_i / Σ rate`.
//! - **Reliability window.** Frames are numbered across channels; no frame
//!   at or past `cum + window` is sent, `cum` being the receiver's
//!   cumulative acknowledgement. The window is sized once
//!   ([`window::window_frames`]: the smallest multiple of 32 above
//!   `max(2·ΣBDP, MWS)`) when every channel has finished its first probe
//!   (or a probe timeout after the start), and fixed thereafter, but for
//!   growing when a channel it was not sized from comes up; until then
//!   it is 32 frames.
//! - **Retransmission — braid's design; the start of §3.3 (the SACK bitmap
//!   and the marker frames) is missing from the supplied text.** A channel
//!   is FIFO, so each acknowledged frame is a *marker* for the frames sent
//!   before it on the same channel: any of those the ACK's bitmap does not
//!   show as held is lost, found without a timer. A lost frame is resent,
//!   before any new frame, by whichever channel's pacing slot comes first,
//!   which favours the fastest channel (`SPECS.md`'s suggestion). Only a
//!   channel gone silent needs a timer: when neither an ACK nor a marker
//!   has come for `max(min_rto, srtt + 4·rttvar)` (doubling while silent),
//!   its outstanding frames are lost.
//! - **Channels removed and added — braid's design; the paper omits it
//!   "for space".** A channel silent for `dead_after` timeouts in a row is
//!   *down*: its frames go to the others and it sends nothing but a packet
//!   pair every `reprobe` to see whether it came back; [`Sender::remove_channel`]
//!   does the same at once (and no reprobes). [`Sender::add_channel`]
//!   starts a new one with a packet pair; when a pair's ACK comes back, the
//!   channel runs at half the pair rate.
//! - **Receiver-queue flow control (§3.4 (2)).** An ACK reporting no free
//!   slot stops data on every channel and halves every channel's rate;
//!   data resumes when an ACK reports room (the receiver sends one when
//!   the application frees space). While stopped, one frame is re-sent
//!   every `persist` so that a lost space report cannot deadlock the pair.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::rmtp::channel::{Channel, State};
use crate::rmtp::rate::{ChannelRate, RateConfig};
use crate::rmtp::window::{self, ChannelShape};
use crate::rmtp::wire::{Ack, DataHeader, MAX_CHANNELS, MAX_WORDS};
use crate::time::{Duration, Instant};

/// Settings of a sender.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderConfig {
    /// Channels at the start (more may be added).
    pub channels: usize,
    /// Payload bytes per frame (the paper's runs: 1400).
    pub frame_payload: usize,
    /// Largest window the receiver accepts, frames.
    pub max_window: usize,
    /// Frames carry sizes only (simulation).
    pub virtual_payload: bool,
    pub rate: RateConfig,
    /// A pair that is not acknowledged by then is sent again.
    pub probe_timeout: Duration,
    pub min_rto: Duration,
    /// Timeouts in a row that take a channel down.
    pub dead_after: u32,
    /// A down channel is probed again this often.
    pub reprobe: Duration,
    /// A packet pair is sent every this many frames of a channel.
    pub pair_every: u64,
    /// While the receiver queue is full, one frame is sent this often.
    pub persist: Duration,
    /// Pacing slots a channel may catch up after the sender was late, as
    /// time (whole periods of it; none when shorter than a period).
    pub pacing_catch_up: Duration,
}

impl SenderConfig {
    pub fn new(channels: usize) -> Self {
        SenderConfig {
            channels,
            frame_payload: 1400,
            max_window: 32 * MAX_WORDS,
            virtual_payload: false,
            rate: RateConfig::default(),
            probe_timeout: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            dead_after: 3,
            reprobe: Duration::from_secs(1),
            pair_every: 64,
            persist: Duration::from_millis(500),
            pacing_catch_up: Duration::from_millis(4),
        }
    }
}

/// Why a sender could not be built or written to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SenderError {
    #[error("an R-MTP session needs 1..={MAX_CHANNELS} channels, not {0}")]
    Channels(usize),
    #[error("frame_payload = {0}: it must be 1..=65535 bytes")]
    Payload(usize),
    #[error("the stream is finished; nothing more can be written")]
    Finished,
    #[error("bytes written to a sender configured for virtual (size-only) frames, or the reverse")]
    WrongCoding,
    #[error("no channel {0}")]
    NoChannel(usize),
}

/// One frame to put on a channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub channel: usize,
    pub header: DataHeader,
    /// The payload (empty for virtual frames).
    pub payload: Vec<u8>,
}

/// Counters for reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub frames_sent: u64,
    pub retransmits: u64,
    pub lost_marker: u64,
    pub lost_timeout: u64,
    pub pairs: u64,
    pub flow_stops: u64,
    pub channels_down: u64,
}

#[derive(Clone, Debug)]
struct FrameState {
    len: u16,
    fin: bool,
    payload: Vec<u8>,
    sacked: bool,
}

/// The sending half of a session.
#[derive(Debug)]
pub struct Sender {
    cfg: SenderConfig,
    channels: Vec<Channel>,
    frames: BTreeMap<u64, FrameState>,
    retx: BTreeSet<u64>,
    pending: VecDeque<u8>,
    pending_virtual: u64,
    cum: u64,
    next_seq: u64,
    window: usize,
    window_fixed: bool,
    /// Channels the window was sized from.
    sized_with: usize,
    started: Option<Instant>,
    finished: bool,
    fin_sent: bool,
    done: bool,
    stopped: bool,
    persist_at: Option<Instant>,
    stats: SenderStats,
}

impl Sender {
    pub fn new(cfg: SenderConfig) -> Result<Self, SenderError> {
        if cfg.channels == 0 || cfg.channels > MAX_CHANNELS {
            return Err(SenderError::Channels(cfg.channels));
        }
        if cfg.frame_payload == 0 || cfg.frame_payload > usize::from(u16::MAX) {
            return Err(SenderError::Payload(cfg.frame_payload));
        }
        let channels = (0..cfg.channels)
            .map(|_| Channel::new(cfg.rate.clone()))
            .collect();
        Ok(Sender {
            channels,
            frames: BTreeMap::new(),
            retx: BTreeSet::new(),
            pending: VecDeque::new(),
            pending_virtual: 0,
            cum: 0,
            next_seq: 0,
            window: 32,
            window_fixed: false,
            sized_with: 0,
            started: None,
            finished: false,
            fin_sent: false,
            done: false,
            stopped: false,
            persist_at: None,
            stats: SenderStats::default(),
            cfg,
        })
    }

    /// Queues stream bytes.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), SenderError> {
        if self.finished {
            return Err(SenderError::Finished);
        }
        if self.cfg.virtual_payload {
            return Err(SenderError::WrongCoding);
        }
        self.pending.extend(bytes);
        Ok(())
    }

    /// Queues `n` stream bytes of a virtual (size-only) stream.
    pub fn write_virtual(&mut self, n: u64) -> Result<(), SenderError> {
        if self.finished {
            return Err(SenderError::Finished);
        }
        if !self.cfg.virtual_payload {
            return Err(SenderError::WrongCoding);
        }
        self.pending_virtual += n;
        Ok(())
    }

    /// No more bytes: the last frame carries FIN.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Bytes written and not yet framed.
    pub fn buffered(&self) -> u64 {
        self.pending.len() as u64 + self.pending_virtual
    }

    /// Frames sent and not yet below the receiver's cumulative ACK.
    pub fn unacked_frames(&self) -> usize {
        self.frames.len()
    }

    /// Every frame, FIN included, has reached the receiver.
    pub fn is_done(&self) -> bool {
        self.done
    }

    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// The reliability window, frames, and whether it is fixed yet.
    pub fn window(&self) -> (usize, bool) {
        (self.window, self.window_fixed)
    }

    /// Channel `i`'s current rate, frames/s (`None`: not running).
    pub fn channel_rate(&self, i: usize) -> Option<f64> {
        let c = self.channels.get(i)?;
        (c.state == State::Up).then(|| c.rate.rate_fps())
    }

    /// Channel `i`'s rate controller.
    pub fn channel_controller(&self, i: usize) -> Option<&ChannelRate> {
        self.channels.get(i).map(|c| &c.rate)
    }

    /// Whether channel `i` is running.
    pub fn channel_up(&self, i: usize) -> bool {
        self.channels.get(i).is_some_and(|c| c.state == State::Up)
    }

    /// Data is stopped by a full receiver queue.
    pub fn flow_stopped(&self) -> bool {
        self.stopped
    }

    /// Adds a channel; it is probed with a packet pair before it carries
    /// data. Returns its index.
    pub fn add_channel(&mut self) -> Result<usize, SenderError> {
        if self.channels.len() >= MAX_CHANNELS {
            return Err(SenderError::Channels(self.channels.len() + 1));
        }
        self.channels.push(Channel::new(self.cfg.rate.clone()));
        Ok(self.channels.len() - 1)
    }

    /// Removes channel `i`: it sends nothing more, and its frames in flight
    /// are resent on the others.
    pub fn remove_channel(&mut self, i: usize) -> Result<(), SenderError> {
        if i >= self.channels.len() {
            return Err(SenderError::NoChannel(i));
        }
        self.channels[i].state = State::Removed;
        self.fail_outstanding(i, false);
        Ok(())
    }

    fn fail_outstanding(&mut self, i: usize, timeout: bool) {
        let out = std::mem::take(&mut self.channels[i].outstanding);
        for (_, seq, _, _) in out {
            self.mark_lost(seq, timeout);
        }
    }

    fn mark_lost(&mut self, seq: u64, timeout: bool) {
        if let Some(f) = self.frames.get(&seq) {
            if !f.sacked && self.retx.insert(seq) {
                if timeout {
                    self.stats.lost_timeout += 1;
                } else {
                    self.stats.lost_marker += 1;
                }
            }
        }
    }

    fn window_words(&self) -> u8 {
        self.window.div_ceil(32).clamp(1, MAX_WORDS) as u8
    }

    /// Fixes the window once every channel has probed, or a probe timeout
    /// after the start; grows it (never shrinks it) when a channel it was
    /// not sized from comes up later. The paper fixes the window for the
    /// connection's life; but a channel whose first pair comes back after
    /// the probe timeout (a 600 ms path behind a loaded host) or one added
    /// while running would otherwise be held to a window sized without it:
    /// in the lab (`lab/far.toml`, 20 and 300 ms) one run in three carried
    /// 0.08 of the paths' sum that way. The receiver follows the window the
    /// data frames announce, so growing it needs nothing more.
    fn maybe_fix_window(&mut self, now: Instant) {
        if self.window_fixed {
            let up = self
                .channels
                .iter()
                .filter(|c| {
                    c.state == State::Up && c.srtt.is_some() && c.rate.ideal_fps().is_some()
                })
                .count();
            if up <= self.sized_with {
                return;
            }
        }
        let all_up = self
            .channels
            .iter()
            .all(|c| matches!(c.state, State::Up | State::Removed));
        let late = self
            .started
            .is_some_and(|s| now.saturating_since(s) >= self.cfg.probe_timeout);
        if !(all_up || late) {
            return;
        }
        let shapes: Vec<ChannelShape> = self
            .channels
            .iter()
            .filter(|c| c.state == State::Up)
            .filter_map(|c| {
                let rtt = c.srtt?.as_secs_f64();
                Some(ChannelShape {
                    rate_fps: c.rate.ideal_fps()?,
                    rtt_s: rtt,
                    one_way_s: rtt / 2.0,
                })
            })
            .collect();
        if shapes.is_empty() {
            return;
        }
        self.window = self
            .window
            .max(window::window_frames(&shapes, self.cfg.max_window));
        self.sized_with = shapes.len();
        self.window_fixed = true;
    }

    fn have_new_frame(&self) -> bool {
        let room = self.next_seq < self.cum + self.window as u64;
        room && (self.buffered() > 0 || (self.finished && !self.fin_sent))
    }

    fn has_work(&self) -> bool {
        !self.retx.is_empty() || self.have_new_frame()
    }

    /// Takes the next frame to send: a lost one first, else a new one.
    fn next_frame(&mut self) -> Option<(u64, bool)> {
        if let Some(&seq) = self.retx.iter().next() {
            self.retx.remove(&seq);
            return Some((seq, true));
        }
        if !self.have_new_frame() {
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let cap = self.cfg.frame_payload;
        let (len, payload) = if self.cfg.virtual_payload {
            let n = self.pending_virtual.min(cap as u64);
            self.pending_virtual -= n;
            (n as u16, Vec::new())
        } else {
            let n = self.pending.len().min(cap);
            (n as u16, self.pending.drain(..n).collect())
        };
        let fin = self.finished && self.buffered() == 0;
        if fin {
            self.fin_sent = true;
        }
        self.frames.insert(
            seq,
            FrameState {
                len,
                fin,
                payload,
                sacked: false,
            },
        );
        Some((seq, false))
    }

    fn emit(
        &mut self,
        now: Instant,
        ch: usize,
        seq: u64,
        retx: bool,
        pair1: bool,
        pair2: bool,
    ) -> Transmit {
        let words = self.window_words();
        let f = &self.frames[&seq];
        let c = &mut self.channels[ch];
        // Whole microseconds of the sender's clock, modulo 2^32.
        let sent_us = (now.as_nanos() / 1000) as u32;
        let header = DataHeader {
            fin: f.fin,
            virtual_payload: self.cfg.virtual_payload,
            pair1,
            pair2,
            retx,
            channel: ch as u8,
            window_words: words,
            len: f.len,
            chan_seq: c.chan_seq,
            sent_us,
            seq,
        };
        c.outstanding
            .push_back((c.chan_seq, seq, now, u8::from(pair1) + 2 * u8::from(pair2)));
        c.chan_seq = c.chan_seq.wrapping_add(1);
        c.since_pair += 1;
        self.stats.frames_sent += 1;
        if retx {
            self.stats.retransmits += 1;
        }
        Transmit {
            channel: ch,
            header,
            payload: f.payload.clone(),
        }
    }

    /// The next frame to put on a channel, if any is due at `now`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.done {
            return None;
        }
        self.started.get_or_insert(now);
        self.maybe_fix_window(now);
        // Probes first: two frames back to back on the channel.
        for i in 0..self.channels.len() {
            let c = &self.channels[i];
            if c.pair_pending {
                if let Some((seq, retx)) = self.next_frame() {
                    self.channels[i].pair_pending = false;
                    return Some(self.emit(now, i, seq, retx, false, true));
                }
                self.channels[i].pair_pending = false;
                continue;
            }
            let due = match c.state {
                State::Probe => true,
                State::Down(at) => now >= at,
                _ => false,
            };
            if due && self.has_work() {
                let (seq, retx) = self.next_frame()?;
                let c = &mut self.channels[i];
                c.state = State::Probing(now + self.cfg.probe_timeout);
                c.pair_pending = true;
                c.since_pair = 0;
                self.stats.pairs += 1;
                return Some(self.emit(now, i, seq, retx, true, false));
            }
        }
        if self.stopped {
            if self.persist_at.is_some_and(|t| now >= t) {
                self.persist_at = Some(now + self.cfg.persist);
                // A running channel if there is one, else any not removed.
                // While stopped nothing else is sent: a channel taken down
                // (three timeouts of persist frames whose ACKs were lost)
                // is reprobed only when there is work, and when every
                // frame left is SACKed (the receiver holds them all behind
                // a full queue) there is none. With persist frames only on
                // a running channel, a lost report of room left the pair
                // waiting on each other until something else woke the
                // channel (`a_stopped_sender_whose_channel_went_down_still_
                // draws_the_final_ack`: 4 s after the channel returned).
                let ch = self
                    .channels
                    .iter()
                    .position(|c| c.state == State::Up)
                    .or_else(|| self.channels.iter().position(|c| c.state != State::Removed))?;
                let seq = match self.frames.keys().next() {
                    Some(&s) => s,
                    None => self.next_frame()?.0,
                };
                return Some(self.emit(now, ch, seq, true, false, false));
            }
            return None;
        }
        if !self.has_work() {
            return None;
        }
        // The running channel whose pacing slot comes first.
        let (i, _) = self
            .channels
            .iter()
            .enumerate()
            .filter(|(_, c)| c.state == State::Up && c.next_send <= now)
            .min_by_key(|(_, c)| c.next_send)?;
        let (seq, retx) = self.next_frame()?;
        let pair = self.channels[i].since_pair >= self.cfg.pair_every && self.has_work();
        let c = &mut self.channels[i];
        c.take_slot(now, self.cfg.pacing_catch_up, pair);
        if pair {
            c.pair_pending = true;
            c.since_pair = 0;
            self.stats.pairs += 1;
        }
        Some(self.emit(now, i, seq, retx, pair, false))
    }

    /// An acknowledgement arrived.
    pub fn handle_ack(&mut self, now: Instant, ack: &Ack) {
        let ch = usize::from(ack.channel);
        if !ack.update && ch < self.channels.len() {
            self.on_channel_ack(now, ch, ack);
        }
        // SACK: frames the bitmap shows held.
        let top = ack.cum.saturating_add(u64::from(ack.words) * 32);
        let held: Vec<u64> = self
            .frames
            .range(ack.cum..top)
            .filter(|(s, f)| !f.sacked && ack.has(**s))
            .map(|(s, _)| *s)
            .collect();
        for s in held {
            if let Some(f) = self.frames.get_mut(&s) {
                f.sacked = true;
            }
            self.retx.remove(&s);
        }
        if ack.cum > self.cum {
            self.cum = ack.cum.min(self.next_seq);
            self.frames = self.frames.split_off(&self.cum);
            self.retx = self.retx.split_off(&self.cum);
        }
        if ack.done || (self.fin_sent && self.cum >= self.next_seq) {
            self.done = true;
            self.frames.clear();
            self.retx.clear();
        }
        // Flow control on the receiver queue.
        if ack.queue_free == 0 {
            if !self.stopped {
                self.stopped = true;
                self.stats.flow_stops += 1;
                self.persist_at = Some(now + self.cfg.persist);
                for c in &mut self.channels {
                    c.rate.halve();
                }
            }
        } else if self.stopped {
            self.stopped = false;
            self.persist_at = None;
        }
    }

    fn on_channel_ack(&mut self, now: Instant, ch: usize, ack: &Ack) {
        let min_rto = self.cfg.min_rto;
        let c = &mut self.channels[ch];
        c.last_ack_at = now;
        c.silent = 0;
        // The acknowledged transmission, and the markers it makes of the
        // frames sent before it on this channel.
        let mut pair_pos = 0;
        let mut lost = Vec::new();
        while let Some(&(cs, seq, sent, pp)) = c.outstanding.front() {
            let d = ack.chan_seq.wrapping_sub(cs) as i32;
            if d < 0 {
                break;
            }
            c.outstanding.pop_front();
            if d == 0 {
                let rtt = now.saturating_since(sent);
                c.rtt_sample(rtt);
                pair_pos = pp;
                // Acknowledged but not held (it fell outside the
                // receiver's window): lost, or nothing would ever resend
                // it, since no later marker covers it.
                if !ack.has(seq) {
                    lost.push(seq);
                }
                // The second frame's ACK follows the first's within a
                // dispersion; one RTT later the pair is given up.
                if let (1, State::Probing(dl)) = (pp, c.state) {
                    c.state = State::Probing(dl.min(now + rtt));
                }
                break;
            }
            if !ack.has(seq) {
                lost.push(seq);
            }
        }
        let srtt = c.srtt.unwrap_or(min_rto);
        if pair_pos == 2 {
            if ack.pair_us > 0 {
                c.rate
                    .on_pair(Duration::from_micros(u64::from(ack.pair_us)));
                if matches!(c.state, State::Probing(_) | State::Down(_)) {
                    c.state = State::Up;
                    c.next_send = now;
                }
            } else if matches!(c.state, State::Probing(_)) {
                c.state = State::Probe;
            }
        }
        if c.state == State::Up {
            if ack.ce {
                c.rate.on_ce(now, srtt);
            }
            c.rate.on_jitter(now, ack.jitter_us, srtt);
        }
        for s in lost {
            self.mark_lost(s, false);
        }
        self.maybe_fix_window(now);
    }

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
                State::Up if work && !self.stopped => at(c.next_send),
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
