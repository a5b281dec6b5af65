//! Pure model of one emulated link direction, independent of sockets and
//! threads so it can be unit-tested with synthetic timestamps.
//!
//! Why exact serialization instead of a token bucket: a token bucket lets a
//! burst through at line rate and then stalls, which distorts the RTT samples
//! and rate estimates that multipath schedulers depend on. Here every packet
//! gets a virtual departure time
//! `depart = max(arrival, previous depart) + ip_bytes * 8 / rate`, and is
//! delivered at `depart + one_way_delay`. Scheduling is on this virtual
//! timeline, so late wake-ups of the sending thread never accumulate into a
//! rate error.
//!
//! The queue limit is drop-tail on the bytes that are still waiting for (or
//! in) serialization at the arrival instant, like a router's output queue.
//!
//! ECN (RFC 3168 §5): with `ecn_mark_bytes` set, an ECN-capable packet
//! (ECT(0) or ECT(1)) that finds more than that many bytes queued is
//! delivered with Congestion Experienced instead of waiting for the queue
//! to overflow; packets that are not ECN-capable see the plain drop-tail
//! queue. The mark is on the instantaneous queue, a step at one threshold
//! (as DCTCP's switches or CoDel-ECN's target, without RED's average and
//! random early marks), so a run is deterministic. A full queue still drops.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{DirParams, GilbertConfig, LossSpec, RlcConfig};

/// Random loss process (Bernoulli or Gilbert-Elliott) driven by a seeded
/// RNG so that a run is repeatable.
#[derive(Debug, Clone)]
pub struct LossModel {
    spec: LossSpec,
    bad: bool,
    rng: ChaCha8Rng,
}

impl LossModel {
    pub fn new(spec: LossSpec, seed: u64) -> Self {
        LossModel {
            spec,
            bad: false,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Replace the loss process (keeping the random stream).
    pub fn set_spec(&mut self, spec: LossSpec) {
        self.spec = spec;
        self.bad = false;
    }

    /// Replace the Bernoulli probability (trace step).
    pub fn set_bernoulli(&mut self, p: f64) {
        self.spec = if p > 0.0 {
            LossSpec::Bernoulli(p)
        } else {
            LossSpec::None
        };
    }

    /// Decide the fate of the next packet: `true` = drop.
    pub fn lose(&mut self) -> bool {
        match self.spec {
            LossSpec::None => false,
            LossSpec::Bernoulli(p) => self.rng.gen::<f64>() < p,
            LossSpec::Gilbert(GilbertConfig {
                p_good_bad,
                p_bad_good,
                loss_bad,
                loss_good,
            }) => {
                let flip = if self.bad { p_bad_good } else { p_good_bad };
                if self.rng.gen::<f64>() < flip {
                    self.bad = !self.bad;
                }
                let p = if self.bad { loss_bad } else { loss_good };
                self.rng.gen::<f64>() < p
            }
        }
    }
}

/// Mixed into a link's seed for its retransmission jitter's stream, apart
/// from the loss model's (the simulator's `braid_net` link draws the same).
pub const RLC_STREAM: u64 = 0x726c_6300_0000_0000;

/// How far apart a radio link with `rlc` delivers the packets a hold
/// released together: the emulator sends packets due at one instant back
/// to back, microseconds apart, and the model schedules them so (the
/// simulator's `braid_net` link is given the same spacing).
pub const RLC_RELEASE_GAP: Duration = Duration::from_micros(2);

/// Link-layer retransmission jitter ([`RlcConfig`]) with its own seeded
/// stream, so a path with it keeps its loss draws unchanged.
#[derive(Debug, Clone)]
struct RlcJitter {
    cfg: RlcConfig,
    retx: Duration,
    rng: ChaCha8Rng,
}

impl RlcJitter {
    fn new(cfg: RlcConfig, seed: u64) -> Self {
        RlcJitter {
            cfg,
            retx: Duration::from_secs_f64(cfg.retx_ms / 1e3),
            rng: ChaCha8Rng::seed_from_u64(seed ^ RLC_STREAM),
        }
    }

    /// Delay the next packet's retransmissions add: one `retx` per failed
    /// attempt, at most `max_attempts - 1` of them.
    fn extra(&mut self) -> Duration {
        let mut k = 0;
        while k + 1 < self.cfg.max_attempts && self.rng.gen::<f64>() < self.cfg.block_error {
            k += 1;
        }
        self.retx * k
    }
}

/// What happened to an offered packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver (send on the egress interface) at this instant.
    Deliver(Instant),
    /// Deliver at this instant marked Congestion Experienced (an
    /// ECN-capable packet that found the queue above `ecn_mark_bytes`).
    Mark(Instant),
    /// Dropped because the queue limit would be exceeded.
    DropQueue,
    /// Dropped by the random loss process.
    DropLoss,
}

/// State of one link direction.
#[derive(Debug)]
pub struct Link {
    start: Instant,
    rate_bps: f64,
    delay: Duration,
    queue_limit: u64,
    /// Queued bytes above which an ECN-capable arrival is marked CE.
    ecn_mark_bytes: Option<u64>,
    loss: LossModel,
    /// Retransmission jitter of a radio link, if configured.
    rlc: Option<RlcJitter>,
    trace: Vec<crate::config::DirTraceStep>,
    next_trace: usize,
    /// Rate, delay and loss before any trace step, restored by
    /// [`Link::restart_trace`].
    base_rate_bps: f64,
    base_delay: Duration,
    base_loss: LossSpec,
    /// Virtual time at which the serializer becomes free.
    busy_until: Instant,
    /// Latest delivery time handed out (links never reorder).
    last_delivery: Instant,
    /// (departure time, ip bytes) of packets not yet fully serialized.
    backlog: VecDeque<(Instant, u64)>,
    backlog_bytes: u64,
}

impl Link {
    pub fn new(params: &DirParams, seed: u64, start: Instant) -> Self {
        Link {
            start,
            rate_bps: params.rate_bps,
            delay: Duration::from_secs_f64(params.delay_s),
            queue_limit: params.queue_bytes,
            ecn_mark_bytes: params.ecn_mark_bytes,
            loss: LossModel::new(params.loss, seed),
            rlc: params.rlc.map(|r| RlcJitter::new(r, seed)),
            trace: params.trace.clone(),
            next_trace: 0,
            base_rate_bps: params.rate_bps,
            base_delay: Duration::from_secs_f64(params.delay_s),
            base_loss: params.loss,
            busy_until: start,
            last_delivery: start,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
        }
    }

    /// Apply trace steps that are due at `now`.
    fn apply_trace(&mut self, now: Instant) {
        let t = now.saturating_duration_since(self.start).as_secs_f64();
        while let Some(step) = self.trace.get(self.next_trace) {
            if step.at_s > t {
                break;
            }
            if let Some(r) = step.rate_bps {
                self.rate_bps = r;
            }
            if let Some(d) = step.delay_s {
                self.delay = Duration::from_secs_f64(d);
            }
            if let Some(l) = step.loss {
                self.loss.set_bernoulli(l);
            }
            self.next_trace += 1;
        }
    }

    /// Start the trace over with `at` as its time zero: the link goes back
    /// to its configured rate, delay and loss, and the steps apply again
    /// from `at + at_s`. `braid lab bench` does this when each mode's
    /// measurement starts, so that every mode sees the same path history
    /// (a trace's `at_s` would otherwise count from `lab up`). Packets
    /// already scheduled keep their delivery times.
    pub fn restart_trace(&mut self, at: Instant) {
        self.start = at;
        self.next_trace = 0;
        self.rate_bps = self.base_rate_bps;
        self.delay = self.base_delay;
        self.loss.set_spec(self.base_loss);
    }

    /// Bytes queued (not yet fully serialized) at `now`.
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

    /// Current rate in bit/s (after trace steps).
    pub fn rate_bps(&self) -> f64 {
        self.rate_bps
    }

    /// Current one-way delay.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Offer a packet of `ip_bytes` that arrived at `now`, not ECN-capable.
    pub fn offer(&mut self, now: Instant, ip_bytes: u64) -> Verdict {
        self.offer_ecn(now, ip_bytes, false)
    }

    /// Offer a packet of `ip_bytes` that arrived at `now`; `ect` if its IP
    /// header says ECN-capable, so the queue may mark it instead of
    /// letting it wait for an overflow.
    pub fn offer_ecn(&mut self, now: Instant, ip_bytes: u64, ect: bool) -> Verdict {
        self.apply_trace(now);
        if self.loss.lose() {
            return Verdict::DropLoss;
        }
        let queued = self.queued_bytes(now);
        if queued + ip_bytes > self.queue_limit {
            return Verdict::DropQueue;
        }
        let mark = ect && self.ecn_mark_bytes.is_some_and(|th| queued > th);
        let tx = Duration::from_secs_f64(ip_bytes as f64 * 8.0 / self.rate_bps);
        let depart = self.busy_until.max(now) + tx;
        self.busy_until = depart;
        self.backlog.push_back((depart, ip_bytes));
        self.backlog_bytes += ip_bytes;
        // A retransmitted packet is late, and (in-sequence delivery) so are
        // the packets behind it, which then follow it back to back.
        let deliver = match self.rlc.as_mut() {
            Some(r) => {
                let at = depart + self.delay + r.extra();
                if at <= self.last_delivery {
                    self.last_delivery + RLC_RELEASE_GAP
                } else {
                    at
                }
            }
            None => (depart + self.delay).max(self.last_delivery),
        };
        self.last_delivery = deliver;
        if mark {
            Verdict::Mark(deliver)
        } else {
            Verdict::Deliver(deliver)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(rate_mbit: f64, delay_ms: f64, queue: u64, loss: LossSpec) -> DirParams {
        DirParams {
            rate_bps: rate_mbit * 1e6,
            delay_s: delay_ms / 1e3,
            queue_bytes: queue,
            ecn_mark_bytes: None,
            loss,
            rlc: None,
            trace: vec![],
        }
    }

    #[test]
    fn ecn_capable_packets_are_marked_above_the_threshold() {
        let t0 = Instant::now();
        let mut p = params(10.0, 0.0, 15_000, LossSpec::None);
        p.ecn_mark_bytes = Some(6_000);
        let mut l = Link::new(&p, 1, t0);
        // 1500-byte packets at once: the 5th finds 6000 bytes (not above),
        // the 6th 7500 (above).
        let v: Vec<_> = (0..10).map(|_| l.offer_ecn(t0, 1500, true)).collect();
        assert!(
            v[..5].iter().all(|v| matches!(v, Verdict::Deliver(_))),
            "{v:?}"
        );
        assert!(
            v[5..].iter().all(|v| matches!(v, Verdict::Mark(_))),
            "{v:?}"
        );
        // A full queue still drops, marked or not.
        assert_eq!(l.offer_ecn(t0, 1500, true), Verdict::DropQueue);
        // Not ECN-capable: never marked, the same drop-tail queue.
        let mut l = Link::new(&p, 1, t0);
        let v: Vec<_> = (0..11).map(|_| l.offer_ecn(t0, 1500, false)).collect();
        assert!(
            v[..10].iter().all(|v| matches!(v, Verdict::Deliver(_))),
            "{v:?}"
        );
        assert_eq!(v[10], Verdict::DropQueue);
        // Without a threshold an ECN-capable packet is not marked.
        let mut l = Link::new(&params(10.0, 0.0, 15_000, LossSpec::None), 1, t0);
        assert!((0..10).all(|_| matches!(l.offer_ecn(t0, 1500, true), Verdict::Deliver(_))));
    }

    #[test]
    fn serializes_back_to_back_packets_exactly() {
        let t0 = Instant::now();
        let mut l = Link::new(&params(10.0, 20.0, 1_000_000, LossSpec::None), 1, t0);
        // 1500 bytes at 10 Mbit/s = 1.2 ms.
        let mut last = t0;
        for k in 1..=100u32 {
            match l.offer(t0, 1500) {
                Verdict::Deliver(at) => {
                    let expect = t0 + Duration::from_micros(1200) * k + Duration::from_millis(20);
                    let err = at.max(expect) - at.min(expect);
                    assert!(err < Duration::from_micros(1), "k={k} err={err:?}");
                    assert!(at > last);
                    last = at;
                }
                v => panic!("{v:?}"),
            }
        }
    }

    #[test]
    fn idle_link_only_adds_serialization_and_delay() {
        let t0 = Instant::now();
        let mut l = Link::new(&params(8.0, 10.0, 100_000, LossSpec::None), 1, t0);
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(
            l.offer(t1, 1000),
            Verdict::Deliver(t1 + Duration::from_millis(11))
        );
    }

    #[test]
    fn drop_tail_limits_backlog() {
        let t0 = Instant::now();
        let mut l = Link::new(&params(10.0, 0.0, 15_000, LossSpec::None), 1, t0);
        let verdicts: Vec<_> = (0..20).map(|_| l.offer(t0, 1500)).collect();
        let delivered = verdicts
            .iter()
            .filter(|v| matches!(v, Verdict::Deliver(_)))
            .count();
        assert_eq!(delivered, 10);
        assert!(verdicts[10..].iter().all(|v| *v == Verdict::DropQueue));
        // After 1.2 ms one packet has left the queue: room for one more.
        assert!(matches!(
            l.offer(t0 + Duration::from_micros(1201), 1500),
            Verdict::Deliver(_)
        ));
        assert_eq!(
            l.offer(t0 + Duration::from_micros(1202), 1500),
            Verdict::DropQueue
        );
    }

    #[test]
    fn bernoulli_loss_rate_is_close() {
        let mut m = LossModel::new(LossSpec::Bernoulli(0.1), 7);
        let lost = (0..100_000).filter(|_| m.lose()).count();
        assert!((9_500..10_500).contains(&lost), "{lost}");
    }

    #[test]
    fn gilbert_loss_is_bursty_with_expected_mean() {
        let g = GilbertConfig {
            p_good_bad: 0.01,
            p_bad_good: 0.3,
            loss_bad: 0.5,
            loss_good: 0.0,
        };
        let mut m = LossModel::new(LossSpec::Gilbert(g), 3);
        let n = 400_000;
        let seq: Vec<bool> = (0..n).map(|_| m.lose()).collect();
        let lost = seq.iter().filter(|&&x| x).count() as f64;
        // stationary P(bad) = p_gb / (p_gb + p_bg)
        let expect = 0.01 / 0.31 * 0.5;
        assert!(
            (lost / n as f64 - expect).abs() < 0.004,
            "{}",
            lost / n as f64
        );
        // burstiness: P(loss | previous loss) well above the mean
        let pairs = seq.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        assert!(pairs / lost > 3.0 * expect);
    }

    #[test]
    fn trace_changes_rate_and_delay() {
        let t0 = Instant::now();
        let mut p = params(10.0, 20.0, 1_000_000, LossSpec::None);
        p.trace = vec![crate::config::DirTraceStep {
            at_s: 1.0,
            rate_bps: Some(1e6),
            delay_s: Some(0.05),
            loss: None,
        }];
        let mut l = Link::new(&p, 1, t0);
        let t1 = t0 + Duration::from_secs(2);
        // 1250 bytes at 1 Mbit/s = 10 ms, plus 50 ms.
        assert_eq!(
            l.offer(t1, 1250),
            Verdict::Deliver(t1 + Duration::from_millis(60))
        );
        assert_eq!(l.rate_bps(), 1e6);
    }

    #[test]
    fn restarting_the_trace_restores_the_base_and_replays_the_steps() {
        let t0 = Instant::now();
        let mut p = params(10.0, 20.0, 1_000_000, LossSpec::None);
        p.trace = vec![crate::config::DirTraceStep {
            at_s: 1.0,
            rate_bps: Some(1e6),
            delay_s: Some(0.05),
            loss: Some(1.0),
        }];
        let mut l = Link::new(&p, 1, t0);
        assert_eq!(
            l.offer(t0 + Duration::from_secs(2), 1250),
            Verdict::DropLoss
        );
        assert_eq!(l.rate_bps(), 1e6);
        // Restart at t = 10 s: configured values again, step due at 11 s.
        let r = t0 + Duration::from_secs(10);
        l.restart_trace(r);
        assert_eq!(l.rate_bps(), 10e6);
        assert_eq!(l.delay(), Duration::from_millis(20));
        let t = r + Duration::from_millis(900);
        // 1250 bytes at 10 Mbit/s = 1 ms, plus 20 ms.
        assert_eq!(
            l.offer(t, 1250),
            Verdict::Deliver(t + Duration::from_millis(21))
        );
        assert_eq!(
            l.offer(r + Duration::from_millis(1100), 1250),
            Verdict::DropLoss
        );
        assert_eq!(l.delay(), Duration::from_millis(50));
    }

    #[test]
    fn deliveries_never_reorder_when_delay_shrinks() {
        let t0 = Instant::now();
        let mut p = params(100.0, 50.0, 1_000_000, LossSpec::None);
        p.trace = vec![crate::config::DirTraceStep {
            at_s: 0.001,
            rate_bps: None,
            delay_s: Some(0.0),
            loss: None,
        }];
        let mut l = Link::new(&p, 1, t0);
        let Verdict::Deliver(a) = l.offer(t0, 100) else {
            panic!()
        };
        let Verdict::Deliver(b) = l.offer(t0 + Duration::from_millis(2), 100) else {
            panic!()
        };
        assert!(b >= a);
    }
    /// The shared network model (`braid-net`, used by the simulator and
    /// the connection tests) and this emulator give the same departures
    /// for the same arrivals: same drop decisions (queue and, with the
    /// same seed, random loss), the same CE marks (`ecn_mark_bytes`, on a
    /// mix of ECN-capable and other packets) and delivery instants within
    /// a nanosecond.
    #[test]
    fn shared_model_gives_the_same_departures() {
        use braid_core::time::Instant as SimInstant;
        use braid_net::{GilbertParams, LinkParams, TraceStep, Verdict as NetVerdict};
        use rand::Rng;

        let gilbert = LossSpec::Gilbert(GilbertConfig {
            p_good_bad: 0.01,
            p_bad_good: 0.2,
            loss_bad: 0.8,
            loss_good: 0.001,
        });
        let cases = [
            (LossSpec::None, None),
            (LossSpec::Bernoulli(0.02), None),
            (gilbert, None),
            (gilbert, Some(15_000)),
        ];
        for (case, (loss, mark)) in cases.into_iter().enumerate() {
            let mut p = params(10.0, 20.0, 30_000, loss);
            p.ecn_mark_bytes = mark;
            p.trace = vec![crate::config::DirTraceStep {
                at_s: 0.5,
                rate_bps: Some(4e6),
                delay_s: Some(0.035),
                loss: None,
            }];
            let mut net = LinkParams::new(p.rate_bps / 1e6, p.delay_s * 1e3, p.queue_bytes);
            net.ecn_mark_bytes = mark;
            match loss {
                LossSpec::None => {}
                LossSpec::Bernoulli(l) => net.loss = l,
                LossSpec::Gilbert(g) => {
                    net.gilbert = Some(GilbertParams {
                        p_good_bad: g.p_good_bad,
                        p_bad_good: g.p_bad_good,
                        loss_bad: g.loss_bad,
                        loss_good: g.loss_good,
                    })
                }
            }
            net.trace = vec![TraceStep {
                at_s: 0.5,
                rate_mbit: Some(4.0),
                delay_ms: Some(35.0),
                ..TraceStep::default()
            }];
            let t0 = Instant::now();
            let mut lab = Link::new(&p, 17, t0);
            let mut model = braid_net::Link::new(&net, 17, SimInstant::ZERO);
            let mut rng = ChaCha8Rng::seed_from_u64(case as u64);
            let mut at_ns = 0u64;
            let (mut delivered, mut dropped, mut marked) = (0, 0, 0);
            for _ in 0..5000 {
                // Bursty arrivals around 12 Mbit/s: the queue fills and drops.
                at_ns += rng.gen_range(0..1_600_000u64);
                let bytes = rng.gen_range(40..=1500u64);
                let ect = mark.is_some() && rng.gen_bool(0.5);
                let a = lab.offer_ecn(t0 + Duration::from_nanos(at_ns), bytes, ect);
                let b = model.offer(SimInstant::from_nanos(at_ns), bytes, ect);
                match (a, b) {
                    (Verdict::Deliver(x), NetVerdict::Deliver { at, ce: false })
                    | (Verdict::Mark(x), NetVerdict::Deliver { at, ce: true }) => {
                        let x = (x - t0).as_nanos() as u64;
                        assert!(x.abs_diff(at.as_nanos()) <= 1, "case {case}: {x} vs {at:?}");
                        delivered += 1;
                        marked += matches!(a, Verdict::Mark(_)) as u32;
                    }
                    (Verdict::DropQueue, NetVerdict::Dropped(braid_net::Drop::Queue))
                    | (Verdict::DropLoss, NetVerdict::Dropped(braid_net::Drop::Loss)) => {
                        dropped += 1
                    }
                    (a, b) => panic!("case {case} at {at_ns} ns: lab {a:?}, model {b:?}"),
                }
            }
            assert!(
                delivered > 1000 && dropped > 50,
                "case {case}: {delivered} {dropped}"
            );
            assert_eq!(mark.is_some(), marked > 100, "case {case}: {marked} marks");
        }
    }
}
