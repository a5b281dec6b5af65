//! A link whose queue holds the packets themselves and chooses their
//! order: FIFO or fair queueing ([`crate::wfq`]), in front of a
//! transmitter of fixed rate, then the one-way delay. This is the link of
//! PET/BMP's topology (Chebrolu, Raman, Rao, Section III, Fig. 1): wired
//! FIFO hops and, at each base station, the wireless bottleneck behind an
//! equal-weight fair queue.
//!
//! Why a second link next to [`crate::Link`]: `Link` gives every packet
//! its verdict when it arrives, which a FIFO allows (a packet's departure
//! depends only on the arrivals before it). Under fair queueing a packet's
//! turn depends on packets of other flows that arrive *after* it, so the
//! order is only known when the transmitter frees. A `QueuedLink` is
//! therefore driven by events: [`QueuedLink::enqueue`] says when a
//! transmission starting now ends, and the caller calls
//! [`QueuedLink::tx_done`] at that instant.
//!
//! It uses the lab files' parameters ([`LinkParams`]: `rate_mbit`,
//! `delay_ms`, `queue_bytes`, `loss`, `gilbert`, `markov`) and
//! [`crate::Link`]'s loss processes and counters, with these differences
//! of model, each the paper's:
//!
//! - `queue_bytes` bounds the bytes *waiting*, not the packet in
//!   transmission (ns-2's queue, which PET/BMP's simulations use), and
//!   each packet counts the bytes the caller gives for it;
//! - the loss process is drawn when a transmission ends: a packet the
//!   wireless channel corrupts has used the channel (PET/BMP Section III,
//!   random losses on the wireless link), where [`crate::Link`] draws at
//!   the arrival as the lab's emulator does;
//! - the draw uses an RNG the caller passes, so a simulator can draw all
//!   its links' channel errors from one seeded stream;
//! - a transmission lasts [`tx_time`] (nanoseconds rounded);
//! - with `rlc` set, a delivered packet's retransmissions on the radio
//!   link ([`crate::rlc`]) delay it and the packets behind it (in-sequence
//!   delivery over all the classes the link carries: one RLC entity per
//!   link).
//!
//! RED, the ECN step, traces and cross traffic are not modelled here:
//! [`QueuedLink::new`] refuses parameters that set them.

use std::collections::VecDeque;

use braid_core::time::{tx_time, Duration, Instant};
use rand_chacha::ChaCha8Rng;

use crate::link::LinkStats;
use crate::loss::LossProcess;
use crate::params::LinkParams;
use crate::rlc::Rlc;
use crate::wfq::Wfq;

/// The queueing discipline in front of the transmitter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Discipline {
    /// First in, first out, drop-tail.
    Fifo,
    /// Equal-weight fair queueing over the packets' classes, one shared
    /// buffer that pushes out the longest class's tail ([`crate::wfq`]).
    Wfq,
}

#[derive(Debug)]
enum Queue<P> {
    /// Packets with their lengths, and the bytes they hold.
    Fifo(VecDeque<(u32, P)>, u64),
    Wfq(Box<Wfq<P>>),
}

/// One direction of one link; see the module documentation.
#[derive(Debug)]
pub struct QueuedLink<P> {
    rate_bps: f64,
    delay: Duration,
    queue_limit: u64,
    loss: LossProcess,
    queue: Queue<P>,
    /// The packet in transmission, with its length.
    in_tx: Option<(u32, P)>,
    /// Link-layer retransmissions (`LinkParams::rlc`), seeded by the
    /// params.
    rlc: Option<Rlc>,
    pub stats: LinkStats,
}

/// What the end of a transmission gives.
#[derive(Debug)]
pub struct TxDone<P> {
    /// The packet sent, with when it reaches the far end (`None` if the
    /// channel corrupted it).
    pub delivered: Option<(Instant, P)>,
    /// When the transmission of the next queued packet, started now, ends.
    pub next_done: Option<Instant>,
}

impl<P> QueuedLink<P> {
    /// A link of `p`'s rate, delay, queue limit and loss process.
    pub fn new(p: &LinkParams, discipline: Discipline) -> Result<Self, String> {
        p.check()?;
        if p.red.is_some() || p.ecn_mark_bytes.is_some() || p.cross.is_some() || !p.trace.is_empty()
        {
            return Err(
                "a queued link models rate, delay, queue_bytes and loss only \
                 (not red, ecn_mark_bytes, cross or trace)"
                    .into(),
            );
        }
        Ok(QueuedLink {
            rate_bps: p.rate_bps(),
            delay: p.delay(),
            queue_limit: p.queue_bytes,
            loss: LossProcess::from_params(p),
            queue: match discipline {
                Discipline::Fifo => Queue::Fifo(VecDeque::new(), 0),
                Discipline::Wfq => Queue::Wfq(Box::default()),
            },
            in_tx: None,
            rlc: p.rlc.as_ref().map(Rlc::new),
            stats: LinkStats::default(),
        })
    }

    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Bytes waiting for the transmitter (the packet in transmission not
    /// counted).
    pub fn queued_bytes(&self) -> u64 {
        match &self.queue {
            Queue::Fifo(_, bytes) => *bytes,
            Queue::Wfq(w) => w.bytes(),
        }
    }

    /// A packet of `len` bytes and class `class` arrives at `now`. If the
    /// transmitter was idle it starts now, and the result is when its
    /// transmission ends (the caller calls [`Self::tx_done`] then);
    /// otherwise it waits in the queue, or is dropped if the queue is full.
    pub fn enqueue(&mut self, now: Instant, class: u32, len: u32, pkt: P) -> Option<Instant> {
        self.stats.offered += 1;
        if self.in_tx.is_none() {
            self.in_tx = Some((len, pkt));
            return Some(now + tx_time(len, self.rate_bps));
        }
        let queued = self.queued_bytes();
        self.stats.max_queued_bytes = self.stats.max_queued_bytes.max(queued);
        let limit = self.queue_limit;
        match &mut self.queue {
            Queue::Fifo(q, bytes) => {
                if bytes.saturating_add(len as u64) > limit {
                    self.stats.drops_queue += 1;
                } else {
                    *bytes += len as u64;
                    q.push_back((len, pkt));
                }
            }
            Queue::Wfq(w) => self.stats.drops_queue += w.push(class, len, pkt, limit) as u64,
        }
        None
    }

    /// The transmission that [`Self::enqueue`] or an earlier `tx_done`
    /// announced for `now` ends: the channel's loss process decides the
    /// packet's fate (drawing from `rng`), and the next queued packet
    /// starts.
    pub fn tx_done(&mut self, now: Instant, rng: &mut ChaCha8Rng) -> TxDone<P> {
        let delivered = self.in_tx.take().and_then(|(len, p)| {
            if self.loss.lose(now, rng, None) {
                self.stats.drops_loss += 1;
                return None;
            }
            self.stats.delivered += 1;
            self.stats.delivered_bytes += len as u64;
            let ready = now + self.delay;
            let at = match &mut self.rlc {
                Some(r) => r.deliver_at(ready),
                None => ready,
            };
            Some((at, p))
        });
        let next = match &mut self.queue {
            Queue::Fifo(q, bytes) => q.pop_front().inspect(|(len, _)| *bytes -= *len as u64),
            Queue::Wfq(w) => w.pop_with_len(),
        };
        let next_done = next.map(|(len, p)| {
            self.in_tx = Some((len, p));
            now + tx_time(len, self.rate_bps)
        });
        TxDone {
            delivered,
            next_done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn run(
        link: &mut QueuedLink<u32>,
        arrivals: &[(u64, u32, u32, u32)],
        rng: &mut ChaCha8Rng,
    ) -> Vec<(Instant, u32)> {
        // A minimal event loop: arrivals (µs, class, len, id) and the
        // transmitter's end times, in time order.
        let mut out = Vec::new();
        let mut done: Option<Instant> = None;
        let mut i = 0;
        loop {
            let next_arrival = arrivals.get(i).map(|a| Instant::from_micros(a.0));
            match (next_arrival, done) {
                (Some(a), d) if d.is_none_or(|d| a < d) => {
                    let (_, class, len, id) = arrivals[i];
                    if let Some(t) = link.enqueue(a, class, len, id) {
                        done = Some(t);
                    }
                    i += 1;
                }
                (_, Some(d)) => {
                    let r = link.tx_done(d, rng);
                    out.extend(r.delivered);
                    done = r.next_done;
                }
                (None, None) => return out,
                (Some(_), None) => unreachable!(),
            }
        }
    }

    #[test]
    fn fifo_serializes_then_delays() {
        let mut l =
            QueuedLink::new(&LinkParams::new(10.0, 20.0, 1_000_000), Discipline::Fifo).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let arr: Vec<_> = (0..5).map(|k| (0, 0, 1500, k)).collect();
        let out = run(&mut l, &arr, &mut rng);
        // 1500 bytes at 10 Mbit/s = 1.2 ms each, then 20 ms.
        let want: Vec<_> = (0..5u64)
            .map(|k| (Instant::from_micros(1200 * (k + 1) + 20_000), k as u32))
            .collect();
        assert_eq!(out, want);
        assert_eq!(l.stats.delivered_bytes, 7500);
    }

    #[test]
    fn queue_limit_excludes_the_packet_in_transmission() {
        let mut l = QueuedLink::new(&LinkParams::new(10.0, 0.0, 3000), Discipline::Fifo).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let arr: Vec<_> = (0..6).map(|k| (0, 0, 1500, k)).collect();
        let out = run(&mut l, &arr, &mut rng);
        // One in transmission, two waiting; three dropped.
        assert_eq!(out.iter().map(|o| o.1).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(l.stats.drops_queue, 3);
        assert_eq!(l.stats.offered, 6);
    }

    /// A greedy class cannot lock another out of the fair queue: behind
    /// the packet in transmission, the late class's packets alternate with
    /// the greedy one's (equal finish tags go to the earlier arrival).
    #[test]
    fn wfq_serves_a_late_class_at_once() {
        let mut l = QueuedLink::new(&LinkParams::new(1.0, 0.0, 30_000), Discipline::Wfq).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut arr: Vec<_> = (0..20).map(|k| (0, 1, 1000, k)).collect();
        arr.extend((0..3).map(|k| (100, 2, 1000, 100 + k)));
        let out = run(&mut l, &arr, &mut rng);
        let pos: Vec<_> = out
            .iter()
            .enumerate()
            .filter(|(_, o)| o.1 >= 100)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(pos, vec![2, 4, 6], "{out:?}");
        assert_eq!(out.len(), 23);
    }

    /// Channel errors are drawn when a transmission ends, so a lost packet
    /// has used the transmitter: the survivors keep their slots.
    #[test]
    fn a_lost_packet_uses_the_channel() {
        let mut p = LinkParams::new(10.0, 0.0, 1_000_000);
        p.loss = 0.5;
        let mut l = QueuedLink::new(&p, Discipline::Fifo).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let arr: Vec<_> = (0..200).map(|k| (0, 0, 1500, k)).collect();
        let out = run(&mut l, &arr, &mut rng);
        for (at, k) in &out {
            assert_eq!(*at, Instant::from_micros(1200 * (*k as u64 + 1)));
        }
        assert_eq!(l.stats.drops_loss as usize + out.len(), 200);
        assert!((70..130).contains(&out.len()), "{}", out.len());
    }

    proptest::proptest! {
        /// One model: a FIFO `QueuedLink` with room for everything and no
        /// loss delivers every packet when `Link` does, up to the
        /// nanosecond each transmission's rounding may add (tx_time rounds,
        /// `Link` keeps the lab's float arithmetic).
        #[test]
        fn fifo_agrees_with_link(
            arrivals in proptest::collection::vec((0u64..3000, 40u32..1500), 1..200),
            rate in 1u32..100,
            delay in 0u32..100,
        ) {
            let p = LinkParams::new(rate as f64, delay as f64, u64::MAX);
            let mut q = QueuedLink::new(&p, Discipline::Fifo).unwrap();
            let mut l = crate::Link::new(&p, 1, Instant::ZERO);
            let mut t = 0u64;
            let timed: Vec<_> = arrivals
                .iter()
                .enumerate()
                .map(|(k, &(gap, len))| {
                    t += gap;
                    (t, 0, len, k as u32)
                })
                .collect();
            let want: Vec<Instant> = timed
                .iter()
                .map(|&(us, _, len, _)| {
                    l.offer(Instant::from_micros(us), len as u64, false)
                        .delivered_at()
                        .expect("no loss, no limit")
                })
                .collect();
            let got = run(&mut q, &timed, &mut ChaCha8Rng::seed_from_u64(1));
            proptest::prop_assert_eq!(got.len(), want.len());
            for (k, ((at, id), w)) in got.iter().zip(&want).enumerate() {
                proptest::prop_assert_eq!(*id as usize, k);
                let slack = k as u64 + 1;
                proptest::prop_assert!(
                    at.as_nanos().abs_diff(w.as_nanos()) <= slack,
                    "packet {}: {:?} vs {:?}", k, at, w
                );
            }
        }
    }

    /// With RLC retransmissions the link still delivers in FIFO order,
    /// each packet no earlier than without them and at most its own
    /// retransmissions (3 x 10 ms) or the packet ahead later; the same
    /// seed gives the same deliveries.
    #[test]
    fn rlc_keeps_fifo_order_and_is_deterministic() {
        let plain = LinkParams::new(2.0, 50.0, 1_000_000);
        let p = LinkParams {
            rlc: Some(crate::RlcParams {
                seed: 5,
                ..Default::default()
            }),
            ..plain.clone()
        };
        let arr: Vec<_> = (0..2000u32)
            .map(|k| (u64::from(k) * 4000, 0, 1000, k))
            .collect();
        let go = |p: &LinkParams| {
            let mut l = QueuedLink::new(p, Discipline::Fifo).unwrap();
            run(&mut l, &arr, &mut ChaCha8Rng::seed_from_u64(1))
        };
        let (base, got) = (go(&plain), go(&p));
        assert_eq!(got, go(&p));
        assert_eq!(got.len(), base.len());
        let mut later = 0;
        for (k, ((at, id), (b, bid))) in got.iter().zip(&base).enumerate() {
            assert_eq!(id, bid);
            assert!(at >= b);
            let cap = *b + Duration::from_millis(30);
            assert!(k == 0 || *at <= cap.max(got[k - 1].0), "packet {k}");
            assert!(k == 0 || *at >= got[k - 1].0);
            later += (at > b) as u32;
        }
        // About 10 % retransmitted, plus the packets they hold back.
        assert!((200..700).contains(&later), "{later}");
    }

    #[test]
    fn refuses_what_it_does_not_model() {
        let mut p = LinkParams::new(10.0, 0.0, 1_000_000);
        p.ecn_mark_bytes = Some(1000);
        assert!(QueuedLink::<u32>::new(&p, Discipline::Fifo).is_err());
    }
}
