//! One direction of one path; see the crate documentation for the model.

use std::collections::VecDeque;

use braid_core::time::{tx_time, Duration, Instant};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::cross::ParetoOnOff;
use crate::loss::LossProcess;
use crate::params::{ms, LinkParams, TraceStep};
use crate::red::{Red, RedVerdict};
use crate::rlc::{Rlc, RlcParams};

/// Why a packet did not get through.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Drop {
    /// The path is away (trace `up = false`).
    Down,
    /// The random loss process.
    Loss,
    /// The drop-tail limit.
    Queue,
    /// RED dropped it (early, not ECN-capable, or above `max_th`).
    Red,
}

/// What happened to an offered packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It arrives at the far end at `at`; `ce` if RED or the
    /// `ecn_mark_bytes` step marked it Congestion Experienced.
    Deliver {
        at: Instant,
        ce: bool,
    },
    Dropped(Drop),
}

impl Verdict {
    pub fn delivered_at(self) -> Option<Instant> {
        match self {
            Verdict::Deliver { at, .. } => Some(at),
            Verdict::Dropped(_) => None,
        }
    }
}

/// Mixed with a link's seed and `RlcParams::seed` for its retransmission
/// stream (a caller that wants a given stream passes its seed xor this).
pub const RLC_SEED_MIX: u64 = 0x5eed_c0ff_ee00_0002;

/// Counters of one link direction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub offered: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub drops_down: u64,
    pub drops_loss: u64,
    pub drops_queue: u64,
    pub drops_red: u64,
    pub ce_marks: u64,
    /// Cross-traffic packets offered and dropped by the queue.
    pub cross_packets: u64,
    pub cross_drops: u64,
    /// The largest backlog seen at an arrival, bytes.
    pub max_queued_bytes: u64,
}

/// One link direction.
#[derive(Clone, Debug)]
pub struct Link {
    start: Instant,
    rate_bps: f64,
    delay: Duration,
    queue_limit: u64,
    /// Queued bytes above which an ECN-capable arrival is marked CE
    /// (`LinkParams::ecn_mark_bytes`).
    ecn_mark_bytes: Option<u64>,
    up: bool,
    loss: LossProcess,
    /// The loss process's RNG: seeded exactly as the lab's, and used for
    /// nothing else, so the same seed loses the same packets there.
    rng: ChaCha8Rng,
    /// RED and cross traffic draw from their own stream.
    aux_rng: ChaCha8Rng,
    red: Option<(Red, bool)>,
    cross: Option<ParetoOnOff>,
    /// Link-layer retransmissions, on their own stream (seeded from the
    /// params' seed and this link's).
    rlc: Option<Rlc>,
    trace: Vec<TraceStep>,
    next_trace: usize,
    busy_until: Instant,
    last_delivery: Instant,
    /// (departure, ip bytes) of packets not yet fully serialized.
    backlog: VecDeque<(Instant, u64)>,
    backlog_bytes: u64,
    pub stats: LinkStats,
}

impl Link {
    /// A link that starts at `start` (trace times count from there), with
    /// its random streams seeded by `seed` (the lab uses the lab file's
    /// seed plus the path and direction).
    pub fn new(p: &LinkParams, seed: u64, start: Instant) -> Self {
        let loss = LossProcess::from_params(p);
        let mut aux_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_c0ff_ee00_0001);
        let cross = p.cross.map(|c| ParetoOnOff::new(c, start, &mut aux_rng));
        Link {
            start,
            rate_bps: p.rate_bps(),
            delay: p.delay(),
            queue_limit: p.queue_bytes,
            ecn_mark_bytes: p.ecn_mark_bytes,
            up: true,
            loss,
            rng: ChaCha8Rng::seed_from_u64(seed),
            aux_rng,
            red: p.red.map(|r| (Red::new(r), r.ecn)),
            cross,
            rlc: p.rlc.map(|r| {
                Rlc::new(&RlcParams {
                    seed: r.seed ^ seed ^ RLC_SEED_MIX,
                    ..r
                })
            }),
            trace: p.trace.clone(),
            next_trace: 0,
            busy_until: start,
            last_delivery: start,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            stats: LinkStats::default(),
        }
    }

    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    pub fn delay(&self) -> Duration {
        self.delay
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Takes the path away or brings it back now (a test's blackhole; a
    /// scenario uses trace steps).
    pub fn set_up(&mut self, up: bool) {
        self.up = up;
    }

    pub fn loss_process(&self) -> &LossProcess {
        &self.loss
    }

    /// The earliest trace step still to come, as an absolute time.
    pub fn next_trace_at(&self) -> Option<Instant> {
        self.trace
            .get(self.next_trace)
            .map(|s| self.start + Duration::from_secs_f64(s.at_s.max(0.0)))
    }

    fn apply_trace(&mut self, now: Instant) {
        let t = now.saturating_since(self.start).as_secs_f64();
        while let Some(step) = self.trace.get(self.next_trace) {
            if step.at_s > t {
                break;
            }
            if let Some(r) = step.rate_mbit {
                self.rate_bps = r * 1e6;
            }
            if let Some(d) = step.delay_ms {
                self.delay = ms(d);
            }
            if let Some(l) = step.loss {
                // As the lab: a trace loss replaces the process by Bernoulli.
                self.loss = if l > 0.0 {
                    LossProcess::Bernoulli(l)
                } else {
                    LossProcess::None
                };
            }
            if let Some(up) = step.up {
                self.up = up;
            }
            self.next_trace += 1;
        }
    }

    /// Bytes waiting for or in serialization at `now`.
    pub fn queued_bytes(&mut self, now: Instant) -> u64 {
        while let Some(&(dep, bytes)) = self.backlog.front() {
            if dep > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= bytes;
        }
        self.backlog_bytes
    }

    /// Serializes `bytes` arriving at `now` (the queue checks passed).
    fn enqueue(&mut self, now: Instant, bytes: u64) -> Instant {
        // The lab's arithmetic, so both give the same nanoseconds.
        let tx = Duration::from_secs_f64(bytes as f64 * 8.0 / self.rate_bps);
        let depart = self.busy_until.max(now) + tx;
        self.busy_until = depart;
        self.backlog.push_back((depart, bytes));
        self.backlog_bytes += bytes;
        depart
    }

    /// The queue's decision for an arrival of `bytes` at `now`: `Ok(ce)`
    /// to accept it.
    fn admit(&mut self, now: Instant, bytes: u64, ecn_capable: bool) -> Result<bool, Drop> {
        let queued = self.queued_bytes(now);
        self.stats.max_queued_bytes = self.stats.max_queued_bytes.max(queued);
        if queued + bytes > self.queue_limit {
            return Err(Drop::Queue);
        }
        // The lab's step mark, on the backlog this packet found (the
        // emulator's order: random loss, then the drop-tail limit, then
        // the mark).
        let step = ecn_capable && self.ecn_mark_bytes.is_some_and(|th| queued > th);
        let Some((red, ecn)) = self.red.as_mut() else {
            return Ok(step);
        };
        let idle_since = (queued == 0).then(|| self.busy_until.min(now));
        let slot = tx_time(1500, self.rate_bps);
        match red.on_arrival(now, queued, bytes, idle_since, slot, &mut self.aux_rng) {
            RedVerdict::Pass => Ok(step),
            RedVerdict::Signal if *ecn && ecn_capable => Ok(true),
            RedVerdict::Signal | RedVerdict::Drop => Err(Drop::Red),
        }
    }

    /// Feeds the cross-traffic packets due by `now` into the queue.
    fn inject_cross(&mut self, now: Instant) {
        while let Some(t) = self
            .cross
            .as_ref()
            .map(|c| c.next_at())
            .filter(|&t| t <= now)
        {
            let bytes = self.cross.as_ref().map_or(0, |c| c.packet_bytes()) as u64;
            self.apply_trace(t);
            self.stats.cross_packets += 1;
            if !self.up || self.admit(t, bytes, false).is_err() {
                self.stats.cross_drops += 1;
            } else {
                self.enqueue(t, bytes);
            }
            if let Some(c) = self.cross.as_mut() {
                c.advance(&mut self.aux_rng);
            }
        }
    }

    /// Offers a packet of `ip_bytes` arriving at `now` (calls must come in
    /// time order).
    pub fn offer(&mut self, now: Instant, ip_bytes: u64, ecn_capable: bool) -> Verdict {
        self.offer_with(now, ip_bytes, ecn_capable, None)
    }

    /// As [`Self::offer`], with the loss decision's uniform draw given
    /// (correlated loss across paths).
    pub fn offer_with(
        &mut self,
        now: Instant,
        ip_bytes: u64,
        ecn_capable: bool,
        u: Option<f64>,
    ) -> Verdict {
        self.inject_cross(now);
        self.apply_trace(now);
        self.stats.offered += 1;
        if !self.up {
            self.stats.drops_down += 1;
            return Verdict::Dropped(Drop::Down);
        }
        if self.loss.lose(now, &mut self.rng, u) {
            self.stats.drops_loss += 1;
            return Verdict::Dropped(Drop::Loss);
        }
        let ce = match self.admit(now, ip_bytes, ecn_capable) {
            Ok(ce) => ce,
            Err(d) => {
                match d {
                    Drop::Queue => self.stats.drops_queue += 1,
                    _ => self.stats.drops_red += 1,
                }
                return Verdict::Dropped(d);
            }
        };
        let depart = self.enqueue(now, ip_bytes);
        let mut at = depart + self.delay;
        if let Some(r) = &mut self.rlc {
            at = r.deliver_at(at);
        }
        let at = at.max(self.last_delivery);
        self.last_delivery = at;
        self.stats.delivered += 1;
        self.stats.delivered_bytes += ip_bytes;
        self.stats.ce_marks += ce as u64;
        Verdict::Deliver { at, ce }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{GilbertParams, ParetoOnOffParams, RedParams};
    use proptest::prelude::*;

    fn t(ms_: u64) -> Instant {
        Instant::from_millis(ms_)
    }

    #[test]
    fn serializes_back_to_back_and_adds_delay() {
        let mut l = Link::new(&LinkParams::new(10.0, 20.0, 1_000_000), 1, Instant::ZERO);
        for k in 1..=100u64 {
            let at = l.offer(Instant::ZERO, 1500, false).delivered_at().unwrap();
            // 1500 bytes at 10 Mbit/s = 1.2 ms.
            let want = Instant::from_micros(1200 * k) + Duration::from_millis(20);
            assert!(at.as_nanos().abs_diff(want.as_nanos()) < 1_000, "k={k}");
        }
        let idle = t(1000);
        assert_eq!(
            l.offer(idle, 1250, false),
            Verdict::Deliver {
                at: idle + Duration::from_millis(21),
                ce: false
            }
        );
    }

    #[test]
    fn drop_tail_counts_bytes_not_yet_serialized() {
        let mut l = Link::new(&LinkParams::new(10.0, 0.0, 15_000), 1, Instant::ZERO);
        let v: Vec<_> = (0..20)
            .map(|_| l.offer(Instant::ZERO, 1500, false))
            .collect();
        assert_eq!(v.iter().filter(|x| x.delivered_at().is_some()).count(), 10);
        assert!(v[10..].iter().all(|x| *x == Verdict::Dropped(Drop::Queue)));
        assert!(l
            .offer(Instant::from_micros(1201), 1500, false)
            .delivered_at()
            .is_some());
        assert_eq!(
            l.offer(Instant::from_micros(1202), 1500, false),
            Verdict::Dropped(Drop::Queue)
        );
        assert_eq!(l.stats.drops_queue, 11);
    }

    #[test]
    fn trace_changes_rate_delay_loss_and_presence() {
        let mut p = LinkParams::new(10.0, 20.0, 1_000_000);
        p.trace = vec![
            TraceStep {
                at_s: 1.0,
                rate_mbit: Some(1.0),
                delay_ms: Some(50.0),
                ..TraceStep::default()
            },
            TraceStep {
                at_s: 2.0,
                up: Some(false),
                ..TraceStep::default()
            },
            TraceStep {
                at_s: 3.0,
                up: Some(true),
                loss: Some(1.0),
                ..TraceStep::default()
            },
        ];
        let mut l = Link::new(&p, 1, Instant::ZERO);
        assert_eq!(l.offer(t(1500), 1250, false).delivered_at(), Some(t(1560)));
        assert_eq!(l.offer(t(2500), 100, false), Verdict::Dropped(Drop::Down));
        assert_eq!(l.offer(t(3500), 100, false), Verdict::Dropped(Drop::Loss));
        assert_eq!(l.next_trace_at(), None);
    }

    #[test]
    fn gilbert_and_markov_specs_select_their_process() {
        let mut p = LinkParams::new(10.0, 0.0, 1_000_000);
        p.gilbert = Some(GilbertParams {
            p_good_bad: 1.0,
            p_bad_good: 0.0,
            loss_bad: 1.0,
            loss_good: 0.0,
        });
        let mut l = Link::new(&p, 1, Instant::ZERO);
        assert_eq!(l.offer(t(0), 100, false), Verdict::Dropped(Drop::Loss));
        p.gilbert = None;
        p.markov = Some(crate::MarkovParams {
            states: vec![crate::MarkovState {
                loss: 1.0,
                mean_holding_ms: 10.0,
            }],
            jump: vec![],
            initial: 0,
        });
        let mut l = Link::new(&p, 1, Instant::ZERO);
        assert!((0..100).all(|k| l.offer(t(k), 100, false) == Verdict::Dropped(Drop::Loss)));
    }

    /// RED with ECN marks ECN-capable packets where it drops others, and a
    /// standing queue between the thresholds gets signals, not tail drops.
    #[test]
    fn red_marks_ecn_capable_and_drops_the_rest() {
        let mut p = LinkParams::new(10.0, 0.0, 100_000);
        p.red = Some(RedParams {
            min_th_bytes: 5_000,
            max_th_bytes: 60_000,
            max_p: 0.2,
            weight: 0.05,
            ecn: true,
            gentle: false,
            max_packet_bytes: None,
        });
        for ecn in [true, false] {
            let mut l = Link::new(&p, 3, Instant::ZERO);
            // Offer 12 Mbit/s into 10 Mbit/s for 2 s.
            let gap = Duration::from_micros(1000);
            let mut now = Instant::ZERO;
            for _ in 0..2000 {
                l.offer(now, 1500, ecn);
                now += gap;
            }
            let s = &l.stats;
            if ecn {
                assert!(s.ce_marks > 10, "{s:?}");
                assert!(s.drops_red < s.ce_marks, "{s:?}");
            } else {
                assert_eq!(s.ce_marks, 0);
                assert!(s.drops_red > 10, "{s:?}");
            }
            assert_eq!(s.drops_queue, 0, "RED keeps the queue short: {s:?}");
        }
    }

    /// Cross traffic takes its share of the serializer: a packet offered
    /// during an on period waits behind it.
    #[test]
    fn cross_traffic_shares_the_queue() {
        let mut p = LinkParams::new(1.0, 0.0, 1_000_000);
        p.cross = Some(ParetoOnOffParams {
            rate_mbit: 0.9,
            packet_bytes: 1000,
            mean_on_ms: 1e9,
            shape: 2.0,
            off_ms: 0.0,
            off_pareto: false,
        });
        let mut l = Link::new(&p, 1, Instant::ZERO);
        let mut sent = 0u64;
        let mut now = Instant::ZERO;
        let mut last = Instant::ZERO;
        for _ in 0..100 {
            if let Some(at) = l.offer(now, 1000, false).delivered_at() {
                sent += 1000;
                last = at;
            }
            now += Duration::from_millis(8);
        }
        assert_eq!(sent, 100_000, "the queue is large enough for everything");
        // Alone, 100 packets of 8 ms each at 8 ms spacing end at 0.808 s.
        // With 0.9 Mbit/s of cross traffic the FIFO serves 1.9 Mbit/s of
        // arrivals at 1 Mbit/s: the last of ours leaves after ~1.52 s.
        assert!(last > t(1450) && last < t(1600), "{last:?}");
        // 0.9 Mbit/s of 1000-byte packets for 0.8 s.
        assert!((88..=92).contains(&l.stats.cross_packets), "{:?}", l.stats);
    }

    proptest! {
        /// Whatever arrives: deliveries never reorder, never beat
        /// serialization plus delay, and the backlog stays within the limit.
        #[test]
        fn deliveries_in_order_and_bounded(
            gaps in proptest::collection::vec((0u64..3000, 40u64..1500), 1..300),
            queue in 1500u64..60_000,
            rate in 1u32..100,
            delay in 0u32..100,
        ) {
            let mut l = Link::new(&LinkParams::new(rate as f64, delay as f64, queue), 1, Instant::ZERO);
            let mut now = Instant::ZERO;
            let mut last = Instant::ZERO;
            for (gap, bytes) in gaps {
                now += Duration::from_micros(gap);
                if let Some(at) = l.offer(now, bytes, false).delivered_at() {
                    prop_assert!(at >= last);
                    let min = now + Duration::from_secs_f64(bytes as f64 * 8.0 / (rate as f64 * 1e6))
                        + Duration::from_millis(delay as u64);
                    prop_assert!(at + Duration::from_nanos(2) >= min);
                    last = at;
                }
                prop_assert!(l.queued_bytes(now) <= queue);
            }
        }
    }
}
