//! The receiving half of an R-MTP session (`SPECS.md` §4.1).
//!
//! Two queues, as in §3.4:
//! - the **reliability buffer** holds frames inside the window,
//!   `cum .. cum + window`, out of order, and is what the SACK bitmap
//!   describes;
//! - the **receiver queue**, a fixed number of frames after it, holds
//!   frames already in order (and acknowledged, below `cum`) until the
//!   application reads them; it smooths the bunching that rate and delay
//!   mismatch between channels cause. When it is full, in-order frames
//!   wait in the reliability buffer, `cum` stops, and every ACK reports no
//!   free slot, which stops the sender; when the application reads, one
//!   [`AckFlags::UPDATE`](crate::rmtp::wire::AckFlags::UPDATE) ACK reports
//!   the room.
//!
//! Every data frame is acknowledged on its own channel's reverse
//! direction with the channel's long-run jitter and, for the second frame
//! of a packet pair, its dispersion ([`JitterTracker`]).
//!
//! Memory is bounded: at most `max_window` frames in the reliability
//! buffer and `queue_frames` in the queue, each at most `max_payload`
//! bytes; frames outside the window are acknowledged and dropped.

use std::collections::{BTreeMap, VecDeque};

use crate::rmtp::jitter::JitterTracker;
use crate::rmtp::wire::{Ack, DataView, MAX_CHANNELS, MAX_WORDS};
use crate::time::Instant;

/// Settings of a receiver.
#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverConfig {
    /// Largest reliability window accepted, frames (rounded down to a
    /// multiple of 32, at most `32 · MAX_WORDS`).
    pub max_window: usize,
    /// Receiver queue, frames.
    pub queue_frames: usize,
    /// Largest payload accepted.
    pub max_payload: usize,
}

impl ReceiverConfig {
    pub fn new() -> Self {
        ReceiverConfig {
            max_window: 32 * MAX_WORDS,
            queue_frames: 256,
            max_payload: 1500,
        }
    }
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a frame was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecvError {
    #[error("frame payload of {len} bytes exceeds the receiver's limit of {max}")]
    TooLong { len: usize, max: usize },
    #[error("frame {seq} past the stream's end at {fin}")]
    PastFin { seq: u64, fin: u64 },
    #[error("a second FIN at frame {seq}, the first was at {fin}")]
    ConflictingFin { seq: u64, fin: u64 },
}

/// A frame handed to the application, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub seq: u64,
    /// Payload bytes (the length for a virtual frame).
    pub len: usize,
    pub payload: Vec<u8>,
    pub fin: bool,
}

#[derive(Clone, Debug)]
struct Held {
    len: usize,
    payload: Vec<u8>,
    fin: bool,
}

/// Counters for reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub frames: u64,
    pub duplicates: u64,
    pub outside_window: u64,
    pub largest_buffer: usize,
    pub largest_queue: usize,
}

/// The receiving half of a session.
#[derive(Debug)]
pub struct Receiver {
    cfg: ReceiverConfig,
    cum: u64,
    held: BTreeMap<u64, Held>,
    queue: VecDeque<Chunk>,
    jitter: Vec<JitterTracker>,
    acks: VecDeque<Ack>,
    fin: Option<u64>,
    words: u8,
    advertised_full: bool,
    last_channel: u8,
    finished: bool,
    stats: ReceiverStats,
}

impl Receiver {
    pub fn new(cfg: ReceiverConfig) -> Self {
        Receiver {
            cfg,
            cum: 0,
            held: BTreeMap::new(),
            queue: VecDeque::new(),
            jitter: vec![JitterTracker::default(); MAX_CHANNELS],
            acks: VecDeque::new(),
            fin: None,
            words: 1,
            advertised_full: false,
            last_channel: 0,
            finished: false,
            stats: ReceiverStats::default(),
        }
    }

    fn max_words(&self) -> u8 {
        (self.cfg.max_window / 32).clamp(1, MAX_WORDS) as u8
    }

    fn queue_free(&self) -> u16 {
        self.cfg
            .queue_frames
            .saturating_sub(self.queue.len())
            .min(usize::from(u16::MAX)) as u16
    }

    /// Moves in-order frames from the reliability buffer to the queue.
    fn advance(&mut self) {
        while self.queue.len() < self.cfg.queue_frames {
            let Some(h) = self.held.remove(&self.cum) else {
                break;
            };
            self.queue.push_back(Chunk {
                seq: self.cum,
                len: h.len,
                payload: h.payload,
                fin: h.fin,
            });
            self.cum += 1;
        }
        self.stats.largest_queue = self.stats.largest_queue.max(self.queue.len());
    }

    fn ack(&self, channel: u8, chan_seq: u32, seq: u64, pair_us: u32, update: bool) -> Ack {
        let mut bitmap = [0u32; MAX_WORDS];
        let span = u64::from(self.words) * 32;
        for (&s, _) in self.held.range(self.cum..self.cum + span) {
            let i = s - self.cum;
            bitmap[(i / 32) as usize] |= 1u32 << (31 - (i % 32) as u32);
        }
        Ack {
            update,
            ce: false,
            done: self.fin.is_some_and(|f| self.cum > f),
            channel,
            words: self.words,
            queue_free: self.queue_free(),
            chan_seq,
            pair_us,
            jitter_us: self.jitter[usize::from(channel)].long_run_us(),
            seq,
            cum: self.cum,
            bitmap,
        }
    }

    /// A data frame arrived at `now` without a Congestion Experienced
    /// mark (or from a socket that cannot read one). Returns whether it
    /// was new.
    pub fn handle_data(&mut self, now: Instant, v: &DataView<'_>) -> Result<bool, RecvError> {
        self.handle_data_ecn(now, v, false)
    }

    /// A data frame arrived at `now`; `ce`: its IP header carried ECN's
    /// Congestion Experienced mark (RFC 3168). The mark is echoed in the
    /// frame's ACK ([`Ack::ce`]) for the sender's rate rule. Returns
    /// whether the frame was new.
    pub fn handle_data_ecn(
        &mut self,
        now: Instant,
        v: &DataView<'_>,
        ce: bool,
    ) -> Result<bool, RecvError> {
        let h = &v.header;
        let len = usize::from(h.len);
        if len > self.cfg.max_payload {
            return Err(RecvError::TooLong {
                len,
                max: self.cfg.max_payload,
            });
        }
        if let Some(f) = self.fin {
            if h.seq > f {
                return Err(RecvError::PastFin { seq: h.seq, fin: f });
            }
            if h.fin && h.seq != f {
                return Err(RecvError::ConflictingFin { seq: h.seq, fin: f });
            }
        }
        let ch = usize::from(h.channel).min(MAX_CHANNELS - 1);
        let pair = self.jitter[ch].on_frame(now, h);
        // The window only grows (the sender never shrinks it): a frame
        // sent before a resize, arriving late over a slow channel, must
        // not shrink the span and make the frames after it fall outside.
        self.words = self.words.max(h.window_words).clamp(1, self.max_words());
        self.last_channel = ch as u8;
        self.stats.frames += 1;
        let span = u64::from(self.words) * 32;
        let new = if h.seq < self.cum || self.held.contains_key(&h.seq) {
            self.stats.duplicates += 1;
            false
        } else if h.seq >= self.cum + span {
            self.stats.outside_window += 1;
            false
        } else {
            if h.fin {
                if let Some((&top, _)) = self.held.iter().next_back() {
                    if top > h.seq {
                        return Err(RecvError::PastFin {
                            seq: top,
                            fin: h.seq,
                        });
                    }
                }
                self.fin = Some(h.seq);
            }
            self.held.insert(
                h.seq,
                Held {
                    len,
                    payload: if h.virtual_payload {
                        Vec::new()
                    } else {
                        v.payload.to_vec()
                    },
                    fin: h.fin,
                },
            );
            self.stats.largest_buffer = self.stats.largest_buffer.max(self.held.len());
            self.advance();
            true
        };
        let pair_us = pair.map_or(0, |d| (d.as_micros().clamp(1, u128::from(u32::MAX))) as u32);
        let mut a = self.ack(ch as u8, h.chan_seq, h.seq, pair_us, false);
        a.ce = ce;
        self.acks.push_back(a);
        Ok(new)
    }

    /// The next acknowledgement to send, on the reverse of its `channel`.
    ///
    /// Its cumulative point, bitmap and free queue slots are read now,
    /// not when its frame arrived: an application that reads between the
    /// two (as `braid recv` and the simulator do, at once) frees the queue
    /// first. Taken at arrival, a retransmission that filled a hole with
    /// more in-order frames behind it than the queue holds (a loss on a
    /// 300 ms path next to a 15 ms one: a window of 1600 frames against a
    /// queue of 256) reported the queue full although the application
    /// emptied it a moment later; every such report stopped the sender
    /// and halved every channel's rate (§3.4 (2)), five times a second
    /// on `lab/satellite.toml`. The frame's own fields (channel, its
    /// sequence numbers, jitter, pair dispersion, CE) stay those of its
    /// arrival.
    pub fn poll_ack(&mut self) -> Option<Ack> {
        let a = self.acks.pop_front()?;
        let mut fresh = self.ack(a.channel, a.chan_seq, a.seq, a.pair_us, a.update);
        fresh.ce = a.ce;
        fresh.jitter_us = a.jitter_us;
        self.advertised_full = fresh.queue_free == 0;
        Some(fresh)
    }

    /// The next in-order frame for the application.
    pub fn poll_read(&mut self) -> Option<Chunk> {
        let c = self.queue.pop_front()?;
        if c.fin {
            self.finished = true;
        }
        self.advance();
        if self.advertised_full && self.queue_free() > 0 {
            self.advertised_full = false;
            let a = self.ack(self.last_channel, 0, 0, 0, true);
            self.acks.push_back(a);
        }
        Some(c)
    }

    /// The application has read the last frame.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Frames in the reliability buffer and in the receiver queue.
    pub fn buffered(&self) -> (usize, usize) {
        (self.held.len(), self.queue.len())
    }

    pub fn stats(&self) -> &ReceiverStats {
        &self.stats
    }

    /// The channel's long-run jitter, µs.
    pub fn long_run_jitter_us(&self, channel: usize) -> i32 {
        self.jitter
            .get(channel)
            .map_or(0, JitterTracker::long_run_us)
    }
}
