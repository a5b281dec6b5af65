//! End-to-end behaviour of a sender and receiver over two links.

use super::*;

enum Ev {
    Data(Segment),
    Ack(Ack),
    SenderTimer,
    ReceiverTimer,
}

/// One sender, one receiver, a bottleneck in each direction (rate, one-way
/// delay, infinite FIFO) and a drop rule for data packets.
struct Loop {
    s: TcpSender,
    r: TcpReceiver,
    q: crate::event::EventQueue<Ev>,
    now: Instant,
    rate_bps: f64,
    delay: Duration,
    fwd_free: Instant,
    rev_free: Instant,
    s_timer: Option<Instant>,
    r_timer: Option<Instant>,
    out: Vec<Segment>,
    /// (time, seq, retransmit) of every data packet sent.
    sent: Vec<(Instant, u64, bool)>,
    max_flight: u64,
    /// Extra random delay per data packet, up to this many microseconds,
    /// which reorders packets (as multipath striping does).
    jitter: Option<(rand_chacha::ChaCha8Rng, u64)>,
}

impl Loop {
    fn new(cfg: TcpConfig, total: Option<u64>, rate_bps: f64, delay: Duration) -> Self {
        Loop {
            r: TcpReceiver::new(&cfg, 0),
            s: TcpSender::new(cfg, 0, total),
            q: crate::event::EventQueue::default(),
            now: Instant::ZERO,
            rate_bps,
            delay,
            fwd_free: Instant::ZERO,
            rev_free: Instant::ZERO,
            s_timer: None,
            r_timer: None,
            out: Vec::new(),
            sent: Vec::new(),
            max_flight: 0,
            jitter: None,
        }
    }

    fn push(&mut self, at: Instant, ev: Ev) {
        self.q.push(at, ev);
    }

    fn flush(&mut self, drop: &mut dyn FnMut(&Segment) -> bool) {
        let out = std::mem::take(&mut self.out);
        for seg in &out {
            self.sent.push((self.now, seg.seq, seg.retransmit));
            if drop(seg) {
                continue;
            }
            let depart = self.now.max(self.fwd_free) + tx_time(seg.wire_bytes, self.rate_bps);
            self.fwd_free = depart;
            let extra = match self.jitter.as_mut() {
                Some((rng, max_us)) => {
                    Duration::from_micros(rand::Rng::gen_range(rng, 0..=*max_us))
                }
                None => Duration::ZERO,
            };
            self.push(depart + self.delay + extra, Ev::Data(*seg));
        }
        self.out = out;
        self.out.clear();
        self.max_flight = self.max_flight.max(self.s.snd_max() - self.s.snd_una());
        if let Some(t) = self.s.poll_timeout() {
            if !matches!(self.s_timer, Some(x) if x <= t) {
                self.s_timer = Some(t);
                self.push(t, Ev::SenderTimer);
            }
        }
    }

    fn send_ack(&mut self, a: Option<Ack>) {
        if let Some(a) = a {
            let depart = self.now.max(self.rev_free) + tx_time(a.wire_bytes, self.rate_bps);
            self.rev_free = depart;
            self.push(depart + self.delay, Ev::Ack(a));
        }
        if let Some(t) = self.r.poll_timeout() {
            if !matches!(self.r_timer, Some(x) if x <= t) {
                self.r_timer = Some(t);
                self.push(t, Ev::ReceiverTimer);
            }
        }
    }

    fn run(&mut self, until: Instant, drop: &mut dyn FnMut(&Segment) -> bool) {
        self.s.start(self.now, &mut self.out);
        self.flush(drop);
        while let Some((at, ev)) = self.q.pop() {
            if at > until || self.s.is_done() {
                break;
            }
            self.now = at;
            match ev {
                Ev::Data(seg) => {
                    let a = self.r.on_segment(self.now, &seg);
                    self.send_ack(a);
                }
                Ev::Ack(a) => {
                    self.s.on_ack(self.now, &a, &mut self.out);
                    self.flush(drop);
                }
                Ev::SenderTimer => {
                    self.s_timer = None;
                    self.s.handle_timeout(self.now, &mut self.out);
                    self.flush(drop);
                }
                Ev::ReceiverTimer => {
                    self.r_timer = None;
                    let a = self.r.handle_timeout(self.now);
                    self.send_ack(a);
                }
            }
        }
    }

    fn retransmit_times(&self) -> Vec<(Instant, u64)> {
        self.sent
            .iter()
            .filter(|x| x.2)
            .map(|x| (x.0, x.1))
            .collect()
    }
}

/// Drops the first transmission of each listed packet.
fn drop_first(list: &'static [u64]) -> impl FnMut(&Segment) -> bool {
    move |s: &Segment| !s.retransmit && list.contains(&s.seq)
}

#[test]
fn window_never_exceeds_max_cwnd() {
    // 10 Mbit/s, 100 ms RTT: the pipe holds ~83 packets, more than 50
    let mut l = Loop::new(TcpConfig::default(), None, 10e6, Duration::from_millis(50));
    l.run(Instant::from_secs_f64(20.0), &mut |_| false);
    assert_eq!(l.max_flight, 50);
    assert_eq!(l.s.cwnd(), 50.0);
    let st = l.s.stats();
    assert_eq!((st.retransmits, st.timeouts), (0, 0));
    // window-limited: 50 packets per ~100.3 ms RTT
    let rate = l.r.delivered_bytes() as f64 * 8.0 / 20.0;
    assert!(rate > 5.0e6 && rate < 50.0 * 1460.0 * 8.0 / 0.1, "{rate}");
}

#[test]
fn sack_recovers_two_losses_in_one_window_without_timeout() {
    let c = TcpConfig {
        sack: true,
        ..TcpConfig::default()
    };
    let mut l = Loop::new(c, Some(300), 10e6, Duration::from_millis(50));
    l.run(Instant::from_secs_f64(60.0), &mut drop_first(&[40, 44]));
    assert!(l.s.is_done());
    assert_eq!(l.r.delivered_packets(), 300);
    let st = l.s.stats();
    assert_eq!(
        (st.timeouts, st.fast_retransmits, st.retransmits),
        (0, 1, 2)
    );
    let rtx = l.retransmit_times();
    assert_eq!(rtx.iter().map(|x| x.1).collect::<Vec<_>>(), vec![40, 44]);
    // both holes are repaired within the same round trip
    assert!(rtx[1].0 - rtx[0].0 < Duration::from_millis(50), "{rtx:?}");

    // NewReno needs one round trip per hole (the partial ACK)
    let mut l = Loop::new(
        TcpConfig::default(),
        Some(300),
        10e6,
        Duration::from_millis(50),
    );
    l.run(Instant::from_secs_f64(60.0), &mut drop_first(&[40, 44]));
    assert!(l.s.is_done());
    let st = l.s.stats();
    assert_eq!(
        (st.timeouts, st.fast_retransmits, st.retransmits),
        (0, 1, 2)
    );
    let rtx = l.retransmit_times();
    assert!(rtx[1].0 - rtx[0].0 > Duration::from_millis(100), "{rtx:?}");
}

#[test]
fn sack_recovers_many_losses_in_one_window_without_timeout() {
    let c = TcpConfig {
        sack: true,
        ..TcpConfig::default()
    };
    let mut l = Loop::new(c, Some(300), 10e6, Duration::from_millis(50));
    l.run(
        Instant::from_secs_f64(60.0),
        &mut drop_first(&[40, 42, 45, 47, 50]),
    );
    assert!(l.s.is_done());
    let st = l.s.stats();
    assert_eq!(
        (st.timeouts, st.fast_retransmits, st.retransmits),
        (0, 1, 5)
    );
}

#[test]
fn delayed_acks_halve_the_ack_count() {
    let c = TcpConfig {
        delayed_ack: true,
        ..TcpConfig::default()
    };
    let mut l = Loop::new(c, Some(1001), 10e6, Duration::from_millis(50));
    l.run(Instant::from_secs_f64(60.0), &mut |_| false);
    assert!(l.s.is_done());
    let acks = l.r.stats().acks_sent;
    assert!((500..=550).contains(&acks), "{acks}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Whatever is lost (retransmissions included) and however packets are
    /// reordered, a finite transfer ends with everything delivered once, in
    /// order, and the receiver never sees a packet beyond its window.
    #[test]
    fn transfer_always_completes(
        seed: u64,
        loss in 0.0f64..0.3,
        sack: bool,
        delack: bool,
        burst in 0u32..5,
        wnd in 4u32..64,
        jitter_us in prop_oneof![Just(0u64), 0u64..30_000],
    ) {
        use rand::{Rng, SeedableRng};
        let c = TcpConfig { sack, delayed_ack: delack, max_burst: burst, max_cwnd_pkts: wnd, ..TcpConfig::default() };
        let total = 400;
        let mut l = Loop::new(c, Some(total), 10e6, Duration::from_millis(20));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        if jitter_us > 0 {
            l.jitter = Some((rand_chacha::ChaCha8Rng::seed_from_u64(!seed), jitter_us));
        }
        l.run(Instant::from_secs_f64(100_000.0), &mut |_| rng.gen_bool(loss));
        prop_assert!(l.s.is_done());
        prop_assert_eq!(l.r.delivered_packets(), total);
        prop_assert_eq!(l.r.delivered_bytes(), total * 1460);
        prop_assert_eq!(l.r.stats().beyond_window, 0);
        prop_assert!(l.max_flight <= u64::from(wnd));
    }
}
