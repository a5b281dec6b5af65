//! A unidirectional link: a queue (FIFO or WFQ) in front of a transmitter
//! of fixed rate, then a propagation delay. Bernoulli loss models channel
//! errors: a corrupted packet uses the link but does not arrive.

use std::collections::VecDeque;

use braid_core::time::{tx_time, Duration, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::wfq::Wfq;

/// Queueing discipline in front of the transmitter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Discipline {
    Fifo,
    Wfq,
}

#[derive(Clone, Debug)]
pub struct LinkSpec {
    pub rate_bps: f64,
    pub delay: Duration,
    /// Drop-tail buffer (bytes), not counting the packet in transmission.
    pub queue_bytes: u64,
    pub loss: f64,
    pub discipline: Discipline,
}

/// Per-link counters.
#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub drops_queue: u64,
    pub drops_loss: u64,
}

enum Queue<P> {
    Fifo(VecDeque<(u32, P)>, u64),
    Wfq(Box<Wfq<P>>),
}

pub struct Link<P> {
    pub spec: LinkSpec,
    queue: Queue<P>,
    in_tx: Option<P>,
    pub stats: LinkStats,
}

impl<P> Link<P> {
    pub fn new(spec: LinkSpec) -> Self {
        let queue = match spec.discipline {
            Discipline::Fifo => Queue::Fifo(VecDeque::new(), 0),
            Discipline::Wfq => Queue::Wfq(Box::default()),
        };
        Link {
            spec,
            queue,
            in_tx: None,
            stats: LinkStats::default(),
        }
    }

    /// A packet of `len` bytes of class `flow` arrives. Returns when its
    /// transmission ends if the transmitter was idle (the caller schedules
    /// `tx_done` then).
    pub fn enqueue(&mut self, now: Instant, flow: u32, len: u32, pkt: P) -> Option<Instant> {
        if self.in_tx.is_none() {
            self.in_tx = Some(pkt);
            return Some(now + tx_time(len, self.spec.rate_bps));
        }
        let limit = self.spec.queue_bytes;
        match &mut self.queue {
            Queue::Fifo(q, bytes) => {
                if *bytes + len as u64 > limit {
                    self.stats.drops_queue += 1;
                } else {
                    *bytes += len as u64;
                    q.push_back((len, pkt));
                }
            }
            Queue::Wfq(w) => self.stats.drops_queue += w.push(flow, len, pkt, limit) as u64,
        }
        None
    }

    /// The packet in transmission has left. Returns it (or `None` if the
    /// channel corrupted it) and, if another packet starts, its end time.
    pub fn tx_done(
        &mut self,
        now: Instant,
        len_of: impl Fn(&P) -> u32,
        rng: &mut ChaCha8Rng,
    ) -> (Option<P>, Option<Instant>) {
        let done = self.in_tx.take();
        let mut out = done;
        if let Some(p) = &out {
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += len_of(p) as u64;
            if self.spec.loss > 0.0 && rng.gen::<f64>() < self.spec.loss {
                self.stats.drops_loss += 1;
                out = None;
            }
        }
        let next = match &mut self.queue {
            Queue::Fifo(q, bytes) => q.pop_front().map(|(len, p)| {
                *bytes -= len as u64;
                p
            }),
            Queue::Wfq(w) => w.pop(),
        };
        let next_done = next.map(|p| {
            let t = now + tx_time(len_of(&p), self.spec.rate_bps);
            self.in_tx = Some(p);
            t
        });
        (out, next_done)
    }

    pub fn delay(&self) -> Duration {
        self.spec.delay
    }
}
