//! Unit tests of the TCP model: hand-fed ACK sequences for the sender's
//! state machine, and a two-link loop for end-to-end behaviour.

use super::*;
use braid_core::time::{tx_time, Duration, Instant};
use proptest::prelude::*;

fn ms(x: u64) -> Instant {
    Instant::from_millis(x)
}

fn ack(a: u64) -> Ack {
    Ack::cumulative(0, a, 40)
}

fn seqs(out: &[Segment]) -> Vec<u64> {
    out.iter().map(|s| s.seq).collect()
}

fn cfg(init_cwnd: u32, max_burst: u32) -> TcpConfig {
    TcpConfig {
        init_cwnd_pkts: init_cwnd,
        max_burst,
        ..TcpConfig::default()
    }
}

// ----- sender, hand-fed ------------------------------------------------------

#[test]
fn slow_start_doubles_per_rtt() {
    let mut s = TcpSender::new(TcpConfig::default(), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    let mut per_round = vec![out.len()];
    for round in 1..=5u64 {
        let flight = std::mem::take(&mut out);
        for seg in &flight {
            s.on_ack(ms(100 * round), &ack(seg.seq + 1), &mut out);
        }
        per_round.push(out.len());
        assert!(out.iter().all(|seg| !seg.retransmit));
    }
    assert_eq!(per_round, vec![1, 2, 4, 8, 16, 32]);
    assert_eq!(s.cwnd(), 32.0);
    assert_eq!(s.stats().segments_sent, 63);
}

#[test]
fn congestion_avoidance_adds_one_over_cwnd_per_ack() {
    let c = TcpConfig {
        init_ssthresh_pkts: 10,
        ..cfg(10, 0)
    };
    let mut s = TcpSender::new(c, 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    assert_eq!(out.len(), 10);
    out.clear();
    s.on_ack(ms(100), &ack(1), &mut out);
    assert!((s.cwnd() - 10.1).abs() < 1e-12);
    let mut expect = 10.1;
    for a in 2..=10 {
        s.on_ack(ms(100), &ack(a), &mut out);
        expect += 1.0 / expect;
        assert!((s.cwnd() - expect).abs() < 1e-12);
    }
    // one window of ACKs grows the window by about one packet
    assert!(s.cwnd() > 10.9 && s.cwnd() < 11.0, "{}", s.cwnd());
    assert_eq!(s.ssthresh(), 10);
}

#[test]
fn fast_retransmit_on_third_dupack_not_second() {
    let mut s = TcpSender::new(cfg(10, 0), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    assert_eq!(seqs(&out), (0..10).collect::<Vec<_>>());
    out.clear();
    // packet 0 lost: packets 1, 2, 3 each produce a duplicate ACK of 0
    s.on_ack(ms(100), &ack(0), &mut out);
    s.on_ack(ms(100), &ack(0), &mut out);
    assert!(out.is_empty());
    assert_eq!(s.stats().fast_retransmits, 0);
    assert!(!s.in_recovery());
    s.on_ack(ms(100), &ack(0), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].seq, 0);
    assert!(out[0].retransmit);
    let st = s.stats();
    assert_eq!((st.fast_retransmits, st.retransmits, st.dupacks), (1, 1, 3));
    assert!(s.in_recovery());
    assert_eq!(s.ssthresh(), 5); // 10 in flight / 2
    assert_eq!(s.window(), 8); // ssthresh + 3
}

#[test]
fn newreno_partial_ack_retransmits_next_hole_and_full_ack_exits() {
    let mut s = TcpSender::new(cfg(10, 0), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    out.clear();
    // packets 0 and 5 lost: 1-4 and 6-9 arrive, 8 duplicate ACKs of 0
    for _ in 0..3 {
        s.on_ack(ms(100), &ack(0), &mut out);
    }
    assert_eq!(seqs(&out), vec![0]);
    out.clear();
    for _ in 0..5 {
        s.on_ack(ms(100), &ack(0), &mut out);
    }
    // window 5 + 8 = 13: packets 10, 11, 12 were clocked out by dupacks 6-8
    assert_eq!(seqs(&out), vec![10, 11, 12]);
    assert_eq!(s.window(), 13);
    out.clear();
    // retransmitted 0 arrives: ACK 5 is partial (recover = 10)
    s.on_ack(ms(200), &ack(5), &mut out);
    assert!(s.in_recovery(), "a partial ACK keeps NewReno in recovery");
    assert_eq!(out[0].seq, 5);
    assert!(out[0].retransmit);
    // deflated by 5 acked, plus one: 13 - 5 + 1 = 9, so 13 may go too
    assert_eq!(s.window(), 9);
    assert_eq!(seqs(&out), vec![5, 13]);
    assert_eq!(s.stats().fast_retransmits, 1);
    out.clear();
    // a further duplicate of 5 inflates again
    s.on_ack(ms(210), &ack(5), &mut out);
    assert_eq!(s.window(), 10);
    assert_eq!(seqs(&out), vec![14]);
    out.clear();
    // retransmitted 5 arrives: ACK 13 >= recover, full ACK
    s.on_ack(ms(300), &ack(13), &mut out);
    assert!(!s.in_recovery());
    assert!(
        (s.cwnd() - 5.2).abs() < 1e-12,
        "cwnd = ssthresh, then +1/cwnd: {}",
        s.cwnd()
    );
    assert_eq!(s.window(), 5);
    assert_eq!(seqs(&out), vec![15, 16, 17]);
    assert_eq!(s.stats().timeouts, 0);
}

#[test]
fn timeout_fires_at_rto_and_backs_off_by_doubling() {
    let mut s = TcpSender::new(TcpConfig::default(), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    assert_eq!(s.poll_timeout(), Some(ms(3000)));
    out.clear();
    s.handle_timeout(ms(2999), &mut out);
    assert!(out.is_empty());
    assert_eq!(s.stats().timeouts, 0);
    s.handle_timeout(ms(3000), &mut out);
    assert_eq!(seqs(&out), vec![0]);
    assert!(out[0].retransmit);
    assert_eq!(s.stats().timeouts, 1);
    assert_eq!(s.poll_timeout(), Some(ms(9000)));
    s.handle_timeout(ms(9000), &mut out);
    assert_eq!(s.poll_timeout(), Some(ms(21000)));
    s.handle_timeout(ms(21000), &mut out);
    assert_eq!(s.poll_timeout(), Some(ms(45000)));
    assert_eq!((s.stats().timeouts, s.stats().backoff), (3, 8));
    assert_eq!((s.cwnd(), s.ssthresh()), (1.0, 2));
    out.clear();
    // Karn: the ACK of a retransmitted packet gives no sample and keeps
    // the backoff (x8 of 3 s = 24 s)
    s.on_ack(ms(45100), &ack(1), &mut out);
    assert_eq!(s.stats().srtt, None);
    assert_eq!(s.poll_timeout(), Some(ms(45100 + 24000)));
    assert_eq!(seqs(&out), vec![1, 2]);
    // the first new packet is timed: its ACK samples 100 ms and ends the
    // backoff: RTO = srtt + 4 rttvar = 100 + 4 * 50 ms
    out.clear();
    s.on_ack(ms(45200), &ack(2), &mut out);
    assert_eq!(s.stats().srtt, Some(Duration::from_millis(100)));
    assert_eq!(s.stats().rto, Duration::from_millis(300));
    assert_eq!(s.stats().backoff, 1);
    assert_eq!(s.poll_timeout(), Some(ms(45500)));
}

#[test]
fn timeout_goes_back_n_and_dupacks_below_recover_do_not_fast_retransmit() {
    let mut s = TcpSender::new(cfg(10, 0), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    out.clear();
    s.handle_timeout(ms(3000), &mut out);
    assert_eq!(seqs(&out), vec![0]);
    assert_eq!(s.ssthresh(), 5);
    out.clear();
    for _ in 0..5 {
        s.on_ack(ms(3100), &ack(0), &mut out);
    }
    assert_eq!(s.stats().fast_retransmits, 0, "ns-2 bugfix: ack <= recover");
    assert!(out.is_empty());
    // ACK 3 (the receiver had 1, 2): slow start from 2 packets, go-back-N
    s.on_ack(ms(3200), &ack(3), &mut out);
    assert_eq!(seqs(&out), vec![3, 4]);
    assert!(out.iter().all(|seg| seg.retransmit));
}

#[test]
fn max_burst_limits_what_one_cumulative_ack_releases() {
    let mut s = TcpSender::new(cfg(8, 4), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    assert_eq!(seqs(&out), vec![0, 1, 2, 3]);
    out.clear();
    s.on_ack(ms(100), &ack(4), &mut out); // window 9 above 4: 9 allowed
    assert_eq!(seqs(&out), vec![4, 5, 6, 7]);
    // without the limit the same ACK releases the whole window
    let mut s = TcpSender::new(cfg(8, 0), 0, None);
    out.clear();
    s.start(ms(0), &mut out);
    assert_eq!(out.len(), 8);
    out.clear();
    s.on_ack(ms(100), &ack(8), &mut out);
    assert_eq!(seqs(&out), (8..17).collect::<Vec<_>>());
}

#[test]
fn finite_transfer_completes_and_stops_the_timer() {
    let mut s = TcpSender::new(cfg(4, 0), 0, Some(3));
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    assert_eq!(seqs(&out), vec![0, 1, 2]);
    s.on_ack(ms(100), &ack(2), &mut out);
    assert!(!s.is_done());
    s.on_ack(ms(100), &ack(3), &mut out);
    assert!(s.is_done());
    assert_eq!(s.poll_timeout(), None);
    assert_eq!(s.stats().packets_acked, 3);
}

// ----- receiver ----------------------------------------------------------------

fn seg(seq: u64) -> Segment {
    Segment {
        flow: 0,
        seq,
        payload_bytes: 1460,
        wire_bytes: 1500,
        retransmit: false,
        ect: false,
        ce: false,
        cwr: false,
        tsval: 0,
    }
}

#[test]
fn receiver_acks_every_segment_and_counts_in_order_bytes() {
    let mut r = TcpReceiver::new(&TcpConfig::default(), 0);
    assert_eq!(r.on_segment(ms(0), &seg(0)).unwrap().ack, 1);
    assert_eq!(r.delivered_bytes(), 1460);
    let a = r.on_segment(ms(1), &seg(2)).unwrap();
    assert_eq!(
        (a.ack, a.n_sack),
        (1, 0),
        "no SACK blocks unless configured"
    );
    assert_eq!(
        r.delivered_bytes(),
        1460,
        "out of order is held, not delivered"
    );
    let short = Segment {
        payload_bytes: 100,
        ..seg(1)
    };
    assert_eq!(r.on_segment(ms(2), &short).unwrap().ack, 3);
    assert_eq!(
        (r.delivered_packets(), r.delivered_bytes()),
        (3, 1460 + 100 + 1460)
    );
    assert_eq!(r.on_segment(ms(3), &seg(1)).unwrap().ack, 3);
    let st = r.stats();
    assert_eq!((st.duplicates, st.out_of_order, st.acks_sent), (1, 1, 4));
}

#[test]
fn delayed_ack_acks_every_second_segment_and_after_timeout() {
    let c = TcpConfig {
        delayed_ack: true,
        ..TcpConfig::default()
    };
    let mut r = TcpReceiver::new(&c, 0);
    assert_eq!(r.on_segment(ms(0), &seg(0)), None);
    assert_eq!(r.poll_timeout(), Some(ms(100)));
    assert_eq!(r.on_segment(ms(1), &seg(1)).unwrap().ack, 2);
    assert_eq!(r.poll_timeout(), None);
    assert_eq!(r.on_segment(ms(10), &seg(2)), None);
    assert_eq!(r.handle_timeout(ms(109)), None);
    assert_eq!(r.handle_timeout(ms(110)).unwrap().ack, 3);
    assert_eq!(r.poll_timeout(), None);
    // out of order and hole-filling segments are acknowledged at once
    assert_eq!(r.on_segment(ms(200), &seg(4)).unwrap().ack, 3);
    assert_eq!(r.on_segment(ms(201), &seg(3)).unwrap().ack, 5);
    assert_eq!(r.on_segment(ms(202), &seg(5)), None);
}

#[test]
fn receiver_reports_most_recent_sack_block_first() {
    let c = TcpConfig {
        sack: true,
        ..TcpConfig::default()
    };
    let mut r = TcpReceiver::new(&c, 0);
    r.on_segment(ms(0), &seg(0));
    let a = r.on_segment(ms(0), &seg(2)).unwrap();
    assert_eq!(a.sack_blocks(), &[(2, 3)]);
    let a = r.on_segment(ms(0), &seg(5)).unwrap();
    assert_eq!(a.sack_blocks(), &[(5, 6), (2, 3)]);
    let a = r.on_segment(ms(0), &seg(3)).unwrap();
    assert_eq!(a.sack_blocks(), &[(2, 4), (5, 6)]);
    let a = r.on_segment(ms(0), &seg(8)).unwrap();
    assert_eq!(a.sack_blocks(), &[(8, 9), (2, 4), (5, 6)]);
    let a = r.on_segment(ms(0), &seg(10)).unwrap();
    assert_eq!(a.sack_blocks(), &[(10, 11), (8, 9), (2, 4)]);
    let a = r.on_segment(ms(0), &seg(1)).unwrap();
    assert_eq!(a.ack, 4);
    assert_eq!(a.sack_blocks(), &[(10, 11), (8, 9), (5, 6)]);
}

// ----- end to end --------------------------------------------------------------

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

fn sack_ack(a: u64, blocks: &[(u64, u64)]) -> Ack {
    let mut k = Ack::cumulative(0, a, 40);
    k.sack[..blocks.len()].copy_from_slice(blocks);
    k.n_sack = blocks.len() as u8;
    k
}

#[test]
fn sack_recovery_follows_pipe_and_retransmits_a_hole_exposed_by_a_partial_ack() {
    let c = TcpConfig {
        sack: true,
        ..cfg(10, 0)
    };
    let mut s = TcpSender::new(c, 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    out.clear();
    // 0 and 8 lost; 1, 2, 3 arrive
    s.on_ack(ms(100), &sack_ack(0, &[(1, 2)]), &mut out);
    s.on_ack(ms(100), &sack_ack(0, &[(1, 3)]), &mut out);
    assert!(out.is_empty());
    s.on_ack(ms(100), &sack_ack(0, &[(1, 4)]), &mut out);
    assert_eq!(seqs(&out), vec![0], "3rd dupack: retransmit the first hole");
    assert_eq!((s.cwnd(), s.ssthresh()), (5.0, 5));
    out.clear();
    // pipe = 6 unSACKed not lost + 1 retransmitted = 7; each SACK lowers it
    s.on_ack(ms(101), &sack_ack(0, &[(1, 5)]), &mut out);
    s.on_ack(ms(101), &sack_ack(0, &[(1, 6)]), &mut out);
    assert!(out.is_empty());
    s.on_ack(ms(101), &sack_ack(0, &[(1, 7)]), &mut out); // pipe 4 < 5
    assert_eq!(seqs(&out), vec![10]);
    out.clear();
    // 9 arrives: 8 has only one SACKed packet above it, so it is not yet
    // deemed lost; pipe = {8, 10} + retransmitted 0 = 3: two new packets
    s.on_ack(ms(102), &sack_ack(0, &[(9, 10), (1, 8)]), &mut out);
    assert_eq!(seqs(&out), vec![11, 12]);
    out.clear();
    // retransmitted 0 arrives: the partial ACK exposes 8, which goes first
    s.on_ack(ms(200), &sack_ack(8, &[(9, 10)]), &mut out);
    assert!(s.in_recovery());
    assert_eq!(out[0].seq, 8);
    assert!(out[0].retransmit);
    assert_eq!(s.stats().retransmits, 2);
    out.clear();
    // full ACK: leave recovery with cwnd = ssthresh (+1/cwnd for this ACK)
    s.on_ack(ms(300), &sack_ack(11, &[]), &mut out);
    assert!(!s.in_recovery());
    assert!((s.cwnd() - 5.2).abs() < 1e-12);
    assert_eq!(s.stats().timeouts, 0);
}

/// RFC 7323 timestamps: the ACK of a retransmission measures it and ends
/// the backoff (as Linux); without them (ns-2) Karn's rule keeps the
/// backed-off timer until a packet sent after the timeout is acknowledged.
#[test]
fn timestamps_end_the_backoff_on_the_first_ack() {
    for ts in [false, true] {
        let c = TcpConfig {
            timestamps: ts,
            ..TcpConfig::default()
        };
        let mut s = TcpSender::new(c, 0, None);
        let mut out = Vec::new();
        s.start(Instant::ZERO, &mut out);
        for _ in 0..2 {
            let t = s.poll_timeout().unwrap();
            s.handle_timeout(t, &mut out);
        }
        assert_eq!(s.stats().backoff, 4);
        let t = s.poll_timeout().unwrap() - Duration::from_millis(1);
        // The receiver echoes the TSval of the copy that arrived: the
        // last retransmission (zero without timestamps).
        let mut a = Ack::cumulative(0, 1, 40);
        a.tsecr = ts.then(|| out.last().unwrap().tsval);
        s.on_ack(t, &a, &mut out);
        assert_eq!(s.stats().backoff, if ts { 1 } else { 4 }, "timestamps {ts}");
    }
}

/// RFC 3168: the receiver echoes a CE mark on every ACK until the sender
/// says CWR; the sender reduces its window once per window of data for
/// it, retransmits nothing, and sets CWR on its next new packet.
#[test]
fn ecn_echo_reduces_once_per_window_without_retransmitting() {
    let c = TcpConfig {
        ecn: true,
        ..cfg(10, 0)
    };
    // Receiver.
    let mut r = TcpReceiver::new(&c, 0);
    assert!(!r.on_segment(ms(0), &seg(0)).unwrap().ece);
    let marked = Segment { ce: true, ..seg(1) };
    assert!(r.on_segment(ms(1), &marked).unwrap().ece);
    assert!(r.on_segment(ms(2), &seg(2)).unwrap().ece, "echo until CWR");
    let cwr = Segment {
        cwr: true,
        ..seg(3)
    };
    assert!(!r.on_segment(ms(3), &cwr).unwrap().ece);
    // Sender.
    let mut s = TcpSender::new(c, 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    assert!(out.iter().all(|p| p.ect && !p.cwr));
    out.clear();
    s.on_ack(ms(100), &ack(1), &mut out);
    let before = s.cwnd();
    out.clear();
    let mut e = ack(2);
    e.ece = true;
    s.on_ack(ms(101), &e, &mut out);
    assert!(s.cwnd() < before * 0.6, "{} -> {}", before, s.cwnd());
    assert_eq!(s.stats().ecn_reductions, 1);
    assert_eq!(s.stats().retransmits, 0);
    // More echoes within the same window: no further reduction.
    let after = s.cwnd();
    for a in 3..6 {
        let mut e = ack(a);
        e.ece = true;
        s.on_ack(ms(102), &e, &mut out);
    }
    assert_eq!(s.stats().ecn_reductions, 1);
    assert!(s.cwnd() >= after);
    for a in 6..12 {
        s.on_ack(ms(103), &ack(a), &mut out);
    }
    assert!(!out.is_empty());
    let cwr_sent = out.iter().filter(|p| p.cwr).count();
    assert_eq!(cwr_sent, 1, "{out:?}");
}

/// RACK's time-based detection (RFC 8985 Section 6.2): a retransmission
/// still missing 1.25 SRTT later is sent again on the next ACK, without
/// waiting for the retransmission timer; without it RFC 6675 recovery
/// never resends it.
#[test]
fn rack_resends_a_lost_retransmission() {
    for rack in [false, true] {
        let c = TcpConfig {
            sack: true,
            timestamps: true,
            rack,
            ..cfg(10, 0)
        };
        let mut s = TcpSender::new(c, 0, None);
        let mut out = Vec::new();
        s.start(ms(0), &mut out);
        s.on_ack(ms(100), &ack(1), &mut out); // SRTT 100 ms
        out.clear();
        // Packet 1 lost; 2, 3, 4 SACKed: recovery retransmits 1.
        for (k, hi) in [3u64, 4, 5].into_iter().enumerate() {
            s.on_ack(ms(200 + k as u64), &sack_ack(1, &[(2, hi)]), &mut out);
        }
        assert_eq!(out.iter().filter(|p| p.seq == 1).count(), 1);
        out.clear();
        // The retransmission is lost too; later SACKs keep coming.
        s.on_ack(ms(250), &sack_ack(1, &[(2, 6)]), &mut out);
        assert!(out.iter().all(|p| p.seq != 1), "too early: {out:?}");
        // Most of the window is SACKed now, so pipe leaves room.
        s.on_ack(ms(340), &sack_ack(1, &[(2, 10)]), &mut out);
        let again = out.iter().filter(|p| p.seq == 1).count();
        assert_eq!(again, usize::from(rack), "rack {rack}: {out:?}");
        assert_eq!(s.stats().timeouts, 0);
    }
}

// ----- TCP-PRISM (PRISM Section 6.2.2) ----------------------------------------

fn nack_ack(a: u64, blocks: &[(u64, u64)], lost: &[u64], p: f64) -> Ack {
    let mut k = sack_ack(a, blocks);
    k.nack.lost[..lost.len()].copy_from_slice(lost);
    k.nack.n = lost.len() as u8;
    k.nack.p_ppm = (p * 1e6).round() as u32;
    k
}

#[test]
fn tcp_prism_retransmits_exactly_the_nacked_packets_and_scales_cwnd_by_p() {
    let c = TcpConfig {
        prism: true,
        ..cfg(10, 0)
    };
    let mut s = TcpSender::new(c, 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    assert_eq!(seqs(&out), (0..10).collect::<Vec<_>>());
    out.clear();
    // 0 arrived, 1 lost (NACKed with p = 0.75), 2 arrived.
    s.on_ack(ms(100), &ack(1), &mut out);
    let cwnd = s.cwnd();
    out.clear();
    s.on_ack(ms(101), &nack_ack(1, &[(2, 3)], &[1], 0.75), &mut out);
    assert_eq!(out.first().map(|x| (x.seq, x.retransmit)), Some((1, true)));
    assert!(
        (s.cwnd() - 0.75 * cwnd).abs() < 1e-9,
        "{} vs {cwnd}",
        s.cwnd()
    );
    assert_eq!(s.ssthresh(), (0.75 * cwnd) as u64);
    assert_eq!(s.stats().nacks, 1);
    // Further duplicates with a growing SACK block never retransmit
    // anything else, however many there are: only NACKs say what is lost.
    out.clear();
    for k in 3..9 {
        s.on_ack(ms(100 + k), &sack_ack(1, &[(2, k + 1)]), &mut out);
    }
    assert!(out.iter().all(|x| !x.retransmit), "{:?}", seqs(&out));
    assert_eq!(s.stats().retransmits, 1);
    assert_eq!(s.stats().fast_retransmits, 1);
    // The same NACK again, after the retransmission arrived, is stale.
    s.on_ack(ms(120), &ack(9), &mut out);
    let before = s.cwnd();
    s.on_ack(ms(121), &nack_ack(9, &[], &[1], 0.5), &mut out);
    assert_eq!(s.cwnd(), before);
}

#[test]
fn a_plain_sack_sender_ignores_the_nack_option() {
    let c = TcpConfig {
        sack: true,
        ..cfg(10, 0)
    };
    let mut s = TcpSender::new(c, 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    s.on_ack(ms(100), &ack(1), &mut out);
    out.clear();
    s.on_ack(ms(101), &nack_ack(1, &[(2, 3)], &[1], 0.5), &mut out);
    assert!(out.iter().all(|x| !x.retransmit));
    assert_eq!(s.stats().nacks, 0);
}

/// RFC 7323 Section 4.3: the receiver echoes the TSval of the segment
/// that last moved the left edge, not of a later out-of-order one, and
/// the earlier of a delayed ACK's two segments.
#[test]
fn receiver_echoes_ts_recent_by_the_rfc_7323_rules() {
    let c = TcpConfig {
        delayed_ack: false,
        ..cfg(10, 0)
    };
    let mut r = TcpReceiver::new(&c, 0);
    let at = |seq, tsval| Segment { tsval, ..seg(seq) };
    assert_eq!(r.on_segment(ms(0), &at(0, 100)).unwrap().tsecr, Some(100));
    // 1 lost; 2 and 3 arrive out of order: the echo stays at 100.
    assert_eq!(r.on_segment(ms(1), &at(2, 102)).unwrap().tsecr, Some(100));
    assert_eq!(r.on_segment(ms(2), &at(3, 103)).unwrap().tsecr, Some(100));
    // The retransmission of 1 fills the hole: its TSval is echoed.
    let a = r.on_segment(ms(3), &at(1, 150)).unwrap();
    assert_eq!((a.ack, a.tsecr), (4, Some(150)));
    let c = TcpConfig {
        delayed_ack: true,
        ..cfg(10, 0)
    };
    let mut r = TcpReceiver::new(&c, 0);
    assert!(r.on_segment(ms(0), &at(0, 10)).is_none());
    assert_eq!(r.on_segment(ms(1), &at(1, 11)).unwrap().tsecr, Some(10));
}

/// A spurious timeout must not poison the RTT estimate. The original's
/// ACK arrives after the timer fired and the packet was resent; it covers
/// a retransmitted packet, so Karn forbids timing it from the send times
/// and the echoed timestamp (the original's) gives the true RTT. Timing
/// it from the retransmission, as this model once did, measured a few
/// milliseconds, shrank the RTO below the path's RTT and brought a
/// spurious timeout every round trip (swarm seed 1585).
#[test]
fn spurious_timeout_keeps_the_rtt_estimate() {
    let c = TcpConfig {
        timestamps: true,
        ..TcpConfig::linux(1386, 2048)
    };
    let mut s = TcpSender::new(c.clone(), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    let first: Vec<u32> = out.iter().map(|p| p.tsval).collect();
    assert_eq!(first[0], 0);
    // The first ACK takes 1.5 s (the initial RTO is 1 s): a spurious timeout.
    let t = s.poll_timeout().unwrap();
    assert!(t < ms(1500));
    out.clear();
    s.handle_timeout(t, &mut out);
    assert_eq!(out.first().map(|p| p.seq), Some(0));
    assert_eq!(out[0].tsval, t.as_nanos() as u32 / 1_000_000);
    // The original's ACK: TSecr echoes the original's TSval (0 ms would be
    // "none" on the wire; 1 ms here).
    let mut a = ack(1);
    a.tsecr = Some(1);
    s.on_ack(ms(1501), &a, &mut out);
    let srtt = s.stats().srtt.unwrap();
    assert!(srtt >= Duration::from_millis(1400), "srtt {srtt:?}");
    // Without the echo no sample is taken: the estimate is not shortened.
    let mut s2 = TcpSender::new(c, 0, None);
    s2.start(ms(0), &mut out);
    let t = s2.poll_timeout().unwrap();
    s2.handle_timeout(t, &mut out);
    s2.on_ack(t + Duration::from_millis(5), &ack(1), &mut out);
    assert_eq!(s2.stats().srtt, None);
}
