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
//!   ([`crate::rmtp::window::window_frames`]: the smallest multiple of 32 above
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
//!
//! The code is split by concept: this file holds the sender's state,
//! the stream's framing and [`Sender::poll_transmit`]; `config` its
//! settings, errors and counters; `sizing` the reliability window;
//! `acks` what an acknowledgement does (SACK, markers, rate input, flow
//! control); `timers` the timeouts of probes and silent channels.

mod acks;
mod config;
mod sizing;
mod timers;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::rmtp::channel::{Channel, State};
use crate::rmtp::rate::ChannelRate;
use crate::rmtp::wire::{DataHeader, MAX_CHANNELS};
use crate::time::Instant;

pub use config::{SenderConfig, SenderError, SenderStats, Transmit};

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
            .filter(|(_, c)| c.state == State::Up && c.pacer.ready(now))
            .min_by_key(|(_, c)| c.pacer.next())?;
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
}
