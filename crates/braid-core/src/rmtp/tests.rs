//! Sender and receiver together over in-memory channels: every frame goes
//! through the wire encoder and the checked decoder; channels have a rate,
//! a delay, random loss and random extra delay (which reorders).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::wire::{decode, emit_ack, emit_data, Frame, ACK_FIXED_LEN, DATA_HEADER_LEN};
use super::*;
use crate::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
struct ChanSpec {
    kbit: f64,
    delay_ms: u64,
    loss: f64,
    /// Up to this much extra delay per frame, uniformly (reorders).
    jitter_ms: u64,
    /// The channel stops carrying anything at this time.
    dies_at_ms: Option<u64>,
    /// Nothing offered in this interval (ms) arrives, either way.
    blackout_ms: Option<(u64, u64)>,
}

impl ChanSpec {
    fn clean(kbit: f64, delay_ms: u64) -> Self {
        ChanSpec {
            kbit,
            delay_ms,
            loss: 0.0,
            jitter_ms: 0,
            dies_at_ms: None,
            blackout_ms: None,
        }
    }
}

struct Link {
    spec: ChanSpec,
    busy_until: Instant,
}

impl Link {
    fn offer(&mut self, now: Instant, bytes: usize, rng: &mut ChaCha8Rng) -> Option<Instant> {
        if self
            .spec
            .dies_at_ms
            .is_some_and(|d| now >= Instant::from_millis(d))
        {
            return None;
        }
        if self
            .spec
            .blackout_ms
            .is_some_and(|(a, b)| (Instant::from_millis(a)..Instant::from_millis(b)).contains(&now))
        {
            return None;
        }
        let start = self.busy_until.max(now);
        let ser = Duration::from_secs_f64(bytes as f64 * 8.0 / (self.spec.kbit * 1e3));
        self.busy_until = start + ser;
        if rng.gen::<f64>() < self.spec.loss {
            return None;
        }
        let extra = if self.spec.jitter_ms > 0 {
            Duration::from_micros(rng.gen_range(0..self.spec.jitter_ms * 1000))
        } else {
            Duration::ZERO
        };
        Some(self.busy_until + Duration::from_millis(self.spec.delay_ms) + extra)
    }
}

enum Ev {
    Data(Vec<u8>),
    Ack(Vec<u8>),
    Read,
}

struct Outcome {
    received: Vec<u8>,
    done_at: Option<Instant>,
    sender: Sender,
    receiver: Receiver,
    /// Largest (reliability buffer, receiver queue, sender frames) seen.
    peak: (usize, usize, usize),
}

struct Opts {
    /// The application reads one frame every this long (None: at once).
    read_every: Option<Duration>,
    /// Its first read (default: `read_every` after the start).
    read_from: Option<Duration>,
    queue_frames: usize,
    /// Channel added at this time (index = specs.len() - 1, not started).
    add_last_at_ms: Option<u64>,
    limit_s: u64,
    /// Data frames for which this returns true are lost (on top of the
    /// channel's random loss).
    lose: Option<fn(&DataHeader) -> bool>,
    /// The receiver's ACKs leave before the application reads (as
    /// `braid recv` did).
    ack_before_read: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            read_every: None,
            read_from: None,
            queue_frames: 256,
            add_last_at_ms: None,
            limit_s: 120,
            lose: None,
            ack_before_read: false,
        }
    }
}

fn run(specs: &[ChanSpec], data: &[u8], seed: u64, o: &Opts) -> Outcome {
    let started = if o.add_last_at_ms.is_some() {
        specs.len() - 1
    } else {
        specs.len()
    };
    let mut scfg = SenderConfig::new(started);
    scfg.frame_payload = 1000;
    let mut sender = Sender::new(scfg).unwrap();
    let mut rcfg = ReceiverConfig::new();
    rcfg.queue_frames = o.queue_frames;
    let mut receiver = Receiver::new(rcfg);
    sender.write(data).unwrap();
    sender.finish();
    let mut fwd: Vec<Link> = specs
        .iter()
        .map(|&spec| Link {
            spec,
            busy_until: Instant::ZERO,
        })
        .collect();
    let mut rev: Vec<Link> = specs
        .iter()
        .map(|&spec| Link {
            spec: ChanSpec {
                loss: spec.loss / 2.0,
                ..spec
            },
            busy_until: Instant::ZERO,
        })
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut heap: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut evs = std::collections::HashMap::new();
    let mut id = 0u64;
    let mut push = |heap: &mut BinaryHeap<Reverse<(Instant, u64)>>,
                    evs: &mut std::collections::HashMap<u64, Ev>,
                    at: Instant,
                    ev: Ev| {
        heap.push(Reverse((at, id)));
        evs.insert(id, ev);
        id += 1;
    };
    let mut received = Vec::new();
    let mut done_at = None;
    let mut now = Instant::ZERO;
    let mut timer: Option<Instant> = None;
    let mut added = o.add_last_at_ms.is_none();
    let mut peak = (0, 0, 0);
    let limit = Instant::from_millis(o.limit_s * 1000);
    if let Some(r) = o.read_every {
        push(
            &mut heap,
            &mut evs,
            o.read_from.unwrap_or(r).into_instant(),
            Ev::Read,
        );
    }
    loop {
        if !added && now >= Instant::from_millis(o.add_last_at_ms.unwrap()) {
            assert_eq!(sender.add_channel().unwrap(), specs.len() - 1);
            added = true;
        }
        while let Some(t) = sender.poll_transmit(now) {
            let mut buf = vec![0u8; DATA_HEADER_LEN + t.payload.len()];
            let n = emit_data(&t.header, &t.payload, &mut buf).unwrap();
            buf.truncate(n);
            let at = fwd[t.channel].offer(now, n + 28, &mut rng);
            if o.lose.is_some_and(|f| f(&t.header)) {
                continue;
            }
            if let Some(at) = at {
                push(&mut heap, &mut evs, at, Ev::Data(buf));
            }
        }
        let want = sender.poll_timeout();
        if want.is_some() && want != timer {
            timer = want;
        }
        let next_ev = heap.peek().map(|Reverse((t, _))| *t);
        let next = match (next_ev, timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let next = match (next, o.add_last_at_ms) {
            (n, Some(a)) if !added => {
                Some(n.map_or(Instant::from_millis(a), |n| n.min(Instant::from_millis(a))))
            }
            (n, _) => n,
        };
        let Some(next) = next else { break };
        if next > limit || done_at.is_some() && receiver.is_finished() {
            break;
        }
        now = next.max(now);
        if timer.is_some_and(|t| t <= now) {
            timer = None;
            sender.handle_timeout(now);
        }
        while heap.peek().is_some_and(|Reverse((t, _))| *t <= now) {
            let Reverse((_, k)) = heap.pop().unwrap();
            match evs.remove(&k).unwrap() {
                Ev::Data(buf) => {
                    let Ok(Frame::Data(v)) = decode(&buf) else {
                        panic!("data frame failed to decode")
                    };
                    receiver.handle_data(now, &v).unwrap();
                    if o.ack_before_read {
                        for (at, b) in acks_onto(&mut receiver, &mut rev, now, &mut rng) {
                            push(&mut heap, &mut evs, at, Ev::Ack(b));
                        }
                    }
                    if o.read_every.is_none() {
                        while let Some(c) = receiver.poll_read() {
                            received.extend_from_slice(&c.payload);
                        }
                    }
                    if !o.ack_before_read {
                        for (at, b) in acks_onto(&mut receiver, &mut rev, now, &mut rng) {
                            push(&mut heap, &mut evs, at, Ev::Ack(b));
                        }
                    }
                }
                Ev::Ack(buf) => {
                    let Ok(Frame::Ack(a)) = decode(&buf) else {
                        panic!("ack failed to decode")
                    };
                    sender.handle_ack(now, &a);
                    if sender.is_done() && done_at.is_none() {
                        done_at = Some(now);
                    }
                }
                Ev::Read => {
                    if let Some(c) = receiver.poll_read() {
                        received.extend_from_slice(&c.payload);
                    }
                    for (at, b) in acks_onto(&mut receiver, &mut rev, now, &mut rng) {
                        push(&mut heap, &mut evs, at, Ev::Ack(b));
                    }
                    if !receiver.is_finished() {
                        push(&mut heap, &mut evs, now + o.read_every.unwrap(), Ev::Read);
                    }
                }
            }
        }
        let (b, q) = receiver.buffered();
        peak = (
            peak.0.max(b),
            peak.1.max(q),
            peak.2.max(sender.unacked_frames()),
        );
    }
    Outcome {
        received,
        done_at,
        sender,
        receiver,
        peak,
    }
}

const MAX_WORDS_T: usize = wire::MAX_WORDS;

/// The receiver's pending ACKs, encoded and offered to the reverse link
/// of their channel: (arrival time, bytes) of those not lost.
fn acks_onto(
    receiver: &mut Receiver,
    rev: &mut [Link],
    now: Instant,
    rng: &mut ChaCha8Rng,
) -> Vec<(Instant, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(a) = receiver.poll_ack() {
        let mut b = vec![0u8; ACK_FIXED_LEN + 4 * MAX_WORDS_T];
        let n = emit_ack(&a, &mut b).unwrap();
        b.truncate(n);
        if let Some(at) = rev[usize::from(a.channel)].offer(now, n + 28, rng) {
            out.push((at, b));
        }
    }
    out
}

trait IntoInstant {
    fn into_instant(self) -> Instant;
}
impl IntoInstant for Duration {
    fn into_instant(self) -> Instant {
        Instant::ZERO + self
    }
}

fn data(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen()).collect()
}

#[test]
fn one_clean_channel_delivers_everything_at_about_its_rate() {
    // 800 kbit/s, 20 ms: 400 kB takes 4 s of serialisation (plus headers).
    let d = data(400_000, 1);
    let o = run(&[ChanSpec::clean(800.0, 20)], &d, 1, &Opts::default());
    assert_eq!(o.received, d);
    let t = o.done_at.expect("finished").as_secs_f64();
    let ideal = 400.0 * 1052.0 * 8.0 / 800e3;
    assert!(t < ideal * 1.15, "{t} s against an ideal {ideal} s");
    assert_eq!(o.sender.stats().retransmits, 0);
    assert_eq!(o.sender.channel_controller(0).unwrap().cuts, 0);
    // The pair rate is the channel's: 800 kbit/s / (1052 B · 8) frames/s.
    let ideal_fps = o.sender.channel_controller(0).unwrap().ideal_fps().unwrap();
    assert!(
        (ideal_fps - 800e3 / (1052.0 * 8.0)).abs() < 1.0,
        "{ideal_fps}"
    );
    // The window: 2·BDP ≈ 2 · 95 frames/s · 0.06 s ≈ 11: 32 frames.
    assert_eq!(o.sender.window(), (32, true));
}

#[test]
fn two_equal_channels_halve_the_time() {
    let d = data(400_000, 2);
    let one = run(&[ChanSpec::clean(800.0, 20)], &d, 2, &Opts::default());
    let two = run(
        &[ChanSpec::clean(800.0, 20), ChanSpec::clean(800.0, 20)],
        &d,
        2,
        &Opts::default(),
    );
    assert_eq!(two.received, d);
    let (t1, t2) = (
        one.done_at.unwrap().as_secs_f64(),
        two.done_at.unwrap().as_secs_f64(),
    );
    assert!(t2 < 0.6 * t1, "two channels {t2} s, one {t1} s");
}

#[test]
fn wireless_losses_do_not_cut_the_rate() {
    // 20 % random loss with no queue: every loss is a transmission loss.
    let d = data(200_000, 3);
    let mut c = ChanSpec::clean(800.0, 20);
    c.loss = 0.2;
    let o = run(&[c], &d, 3, &Opts::default());
    assert_eq!(o.received, d);
    let ctl = o.sender.channel_controller(0).unwrap();
    assert_eq!(ctl.cuts, 0);
    assert_eq!(ctl.rate_fps(), ctl.ideal_fps().unwrap());
    assert!(o.sender.stats().lost_marker > 20, "{:?}", o.sender.stats());
    // At the full rate, 200 frames need about 200 / 0.8 transmissions.
    let t = o.done_at.unwrap().as_secs_f64();
    let lossless = 200.0 * 1052.0 * 8.0 / 800e3;
    assert!(
        t < lossless / 0.8 * 1.4,
        "{t} s against {lossless} s lossless"
    );
}

#[test]
fn a_full_receiver_queue_stops_the_sender_and_nothing_is_lost() {
    // The application reads 50 frames/s; the channel carries ~95.
    let d = data(150_000, 4);
    let o = run(
        &[ChanSpec::clean(800.0, 20)],
        &d,
        4,
        &Opts {
            read_every: Some(Duration::from_millis(20)),
            queue_frames: 16,
            ..Opts::default()
        },
    );
    assert_eq!(o.received, d);
    assert!(o.sender.stats().flow_stops >= 1, "{:?}", o.sender.stats());
    assert!(o.peak.1 <= 16, "queue peaked at {}", o.peak.1);
    // It took the reader's time, not the channel's.
    assert!(o.done_at.unwrap().as_secs_f64() >= 150.0 * 0.02 * 0.9);
}

#[test]
fn a_dead_channel_is_removed_and_its_frames_go_elsewhere() {
    let d = data(300_000, 5);
    let mut dying = ChanSpec::clean(800.0, 20);
    dying.dies_at_ms = Some(1500);
    let o = run(
        &[dying, ChanSpec::clean(400.0, 30)],
        &d,
        5,
        &Opts::default(),
    );
    assert_eq!(o.received, d);
    assert!(!o.sender.channel_up(0));
    assert!(o.sender.channel_up(1));
    assert!(o.sender.stats().channels_down >= 1);
    assert!(o.sender.stats().lost_timeout >= 1);
}

#[test]
fn a_channel_added_while_running_is_probed_and_carries_data() {
    let d = data(400_000, 6);
    let alone = run(&[ChanSpec::clean(400.0, 20)], &d, 6, &Opts::default());
    let o = run(
        &[ChanSpec::clean(400.0, 20), ChanSpec::clean(400.0, 20)],
        &d,
        6,
        &Opts {
            add_last_at_ms: Some(2000),
            ..Opts::default()
        },
    );
    assert_eq!(o.received, d);
    assert!(o.sender.channel_up(1));
    let r = o.sender.channel_controller(1).unwrap();
    assert!(r.ideal_fps().is_some());
    assert!(
        o.done_at.unwrap() < alone.done_at.unwrap(),
        "{:?} vs alone {:?}",
        o.done_at,
        alone.done_at
    );
}

#[test]
fn window_is_sized_from_both_channels_after_probing() {
    // 8 Mbit/s at 100 ms and 800 kbit/s at 300 ms: BDP 95 + 28.5 frames,
    // twice is 247; MWS = (0.15 + 0.05 + queueing) · 1045 frames/s ≈ 210.
    let d = data(600_000, 7);
    let o = run(
        &[ChanSpec::clean(8000.0, 50), ChanSpec::clean(800.0, 150)],
        &d,
        7,
        &Opts::default(),
    );
    assert_eq!(o.received, d);
    let (w, fixed) = o.sender.window();
    assert!(fixed);
    assert_eq!(w % 32, 0);
    assert!((224..=320).contains(&w), "window {w}");
    assert!(o.peak.0 <= w, "buffer {} over the window {w}", o.peak.0);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Under loss and reordering, with one to three channels, every
        /// byte arrives once and in order, and the receiver's buffers never
        /// pass the window and the queue.
        #[test]
        fn every_byte_once_in_order_with_bounded_buffers(
            seed in 0u64..1000,
            n in 1usize..60_000,
            chans in proptest::collection::vec(
                (100.0f64..2000.0, 5u64..80, 0.0f64..0.3, 0u64..40), 1..4),
            queue in 4usize..64,
        ) {
            let specs: Vec<ChanSpec> = chans.iter().map(|&(kbit, delay_ms, loss, jitter_ms)| ChanSpec {
                kbit, delay_ms, loss, jitter_ms, dies_at_ms: None, blackout_ms: None,
            }).collect();
            let d = data(n, seed);
            let o = run(&specs, &d, seed, &Opts { queue_frames: queue, limit_s: 600, ..Opts::default() });
            prop_assert!(o.received == d, "delivered {} of {} bytes", o.received.len(), d.len());
            prop_assert!(o.done_at.is_some());
            prop_assert!(o.receiver.is_finished());
            let (w, _) = o.sender.window();
            prop_assert!(o.peak.0 <= w, "reliability buffer {} over window {}", o.peak.0, w);
            prop_assert!(o.peak.1 <= queue);
            prop_assert!(o.peak.2 <= w + 1, "sender held {} frames, window {}", o.peak.2, w);
        }
    }
}

/// One channel driven by hand, 5 ms each way, the pair 1 ms apart at the
/// receiver; `ce(i)` says whether data frame `i` arrives CE-marked.
/// Returns the sender after `frames` frames, each answered before the next
/// is sent.
fn hand_driven(frames: u64, ce: impl Fn(u64) -> bool) -> Sender {
    let mut s = Sender::new(SenderConfig::new(1)).unwrap();
    let mut r = Receiver::new(ReceiverConfig::new());
    s.write(&vec![7u8; 1400 * 400]).unwrap();
    let mut now = Instant::ZERO;
    let mut buf = vec![0u8; 2048];
    for i in 0..frames {
        let Some(t) = s.poll_transmit(now).or_else(|| {
            now = s.poll_timeout().unwrap_or(now).max(now);
            s.poll_transmit(now)
        }) else {
            panic!("nothing to send at frame {i}");
        };
        let n = emit_data(&t.header, &t.payload, &mut buf).unwrap();
        let Ok(Frame::Data(v)) = decode(&buf[..n]) else {
            panic!("data")
        };
        let arrive =
            now + Duration::from_millis(5) + Duration::from_millis(u64::from(v.header.pair2));
        r.handle_data_ecn(arrive, &v, ce(i)).unwrap();
        while r.poll_read().is_some() {}
        while let Some(a) = r.poll_ack() {
            assert_eq!(a.ce, ce(i) && !a.update, "the ACK echoes the mark");
            let m = emit_ack(&a, &mut buf).unwrap();
            let Ok(Frame::Ack(a)) = decode(&buf[..m]) else {
                panic!("ack")
            };
            s.handle_ack(arrive + Duration::from_millis(5), &a);
        }
        now += Duration::from_millis(2);
    }
    s
}

#[test]
fn a_ce_echo_cuts_the_rate_once_per_epoch_and_no_mark_cuts_nothing() {
    let clean = hand_driven(200, |_| false);
    let c = clean.channel_controller(0).unwrap();
    assert_eq!((c.cuts, c.ce_cuts), (0, 0));
    // Marks on frames 100 and 101, 3 ms apart (one build-up, within the
    // 10 ms RTT): one cut.
    let marked = hand_driven(110, |i| (100..102).contains(&i));
    let m = marked.channel_controller(0).unwrap();
    assert_eq!((m.cuts, m.ce_cuts), (1, 1));
    assert!(
        m.rate_fps() < c.rate_fps(),
        "{} vs {}",
        m.rate_fps(),
        c.rate_fps()
    );
}

#[test]
fn a_channel_whose_pair_returns_after_the_probe_timeout_grows_the_window() {
    // 8 Mbit/s at 25 ms next to 8 Mbit/s at 700 ms: the far pair's ACK
    // comes back after 1.4 s, past the 1 s probe timeout, so the window is
    // first sized from the near channel alone (2 · 48 frames: 128).
    let d = data(4_000_000, 8);
    let o = run(
        &[ChanSpec::clean(8000.0, 25), ChanSpec::clean(8000.0, 700)],
        &d,
        8,
        &Opts::default(),
    );
    assert_eq!(o.received, d);
    let (w, fixed) = o.sender.window();
    assert!(fixed);
    // The far channel alone holds 8 Mbit/s · 1.4 s / 1052 B ≈ 1330
    // frames; twice that is past the largest window, 2048.
    assert_eq!(w, 2048, "window {w}");
    assert!(o.peak.0 <= w, "buffer {} over the window {w}", o.peak.0);
}

#[test]
fn a_late_frame_from_before_a_resize_does_not_shrink_the_receivers_window() {
    let mut r = Receiver::new(ReceiverConfig::new());
    let frame = |seq: u64, words: u8| DataHeader {
        window_words: words,
        len: 1,
        chan_seq: seq as u32,
        seq,
        ..DataHeader::default()
    };
    let view = |h: &DataHeader| DataView {
        header: *h,
        payload: b"x",
    };
    let t = Instant::from_millis(1);
    assert!(r.handle_data(t, &view(&frame(1, 4))).unwrap());
    // Sent while the window was one word, arriving after the resize.
    assert!(r.handle_data(t, &view(&frame(2, 1))).unwrap());
    // Frame 100 is inside four words past cum 0: held, and the ACK shows it.
    assert!(r.handle_data(t, &view(&frame(100, 4))).unwrap());
    let last = std::iter::from_fn(|| r.poll_ack()).last().unwrap();
    assert!(last.has(100) && last.words == 4);
}

/// `lab/satellite.toml` in miniature: 20 Mbit/s at 15 ms next to
/// 10 Mbit/s at 300 ms that loses 0.5 %, and the far channel's last
/// hundred first transmissions lost as well.
fn satellite(seed: u64, o: &Opts) -> (Outcome, Vec<u8>) {
    let d = data(4_000_000, 9);
    let mut far = ChanSpec::clean(10_000.0, 300);
    far.loss = 0.005;
    let o = run(&[ChanSpec::clean(20_000.0, 15), far], &d, seed, o);
    (o, d)
}

#[test]
fn a_far_lossy_channel_losing_the_final_block_finishes_without_stopping_the_sender() {
    // The application reads every frame at once, so the receiver queue
    // never holds back a frame: no ACK may report it full. When ACKs
    // were built as their frame arrived, before the read, a resend that
    // filled a hole with more than the queue's 256 frames behind it
    // reported the queue full, and each report stopped the sender and
    // halved both rates: 1-4 stops in each of these runs.
    for seed in 0..4 {
        let (o, d) = satellite(
            seed,
            &Opts {
                lose: Some(|h| h.channel == 1 && !h.retx && h.seq >= 3900),
                ..Opts::default()
            },
        );
        assert_eq!(o.received.len(), d.len(), "seed {seed}");
        assert!(o.received == d, "seed {seed}");
        let st = o.sender.stats();
        assert_eq!(st.flow_stops, 0, "seed {seed}: {st:?}");
        assert!(
            st.retransmits >= 10,
            "seed {seed}: the block was lost: {st:?}"
        );
        // 4 MB at 30 Mbit/s is 1.1 s; start-up (probes, the far RTT) and
        // the lost block's timeout on a 600 ms RTT add under 3 s.
        let t = o.done_at.expect("finished").as_secs_f64();
        assert!(t < 4.0, "seed {seed}: {t} s");
    }
}

#[test]
fn a_stopped_sender_whose_channel_went_down_still_draws_the_final_ack() {
    // 8 Mbit/s at 300 ms: all 30 frames are out before the receiver's
    // first ACK is back. The reader starts at 1.5 s, so the queue (8
    // frames) fills, the rest wait in the reliability buffer (all SACKed)
    // and the sender stops. From 1 s to 10 s the channel carries nothing:
    // the persist frames and their ACKs are lost, three timeouts take the
    // channel down, and the receiver's report of room (when the reader
    // has drained it, at about 2.6 s) is lost too. With every frame
    // SACKed there is nothing to resend and a down channel is reprobed
    // only when there is; persist frames went only on a running channel,
    // so the sender sent nothing on the channel's return and finished at
    // 14.0 s, not within a persist interval of 10 s. Persist frames now
    // go on a channel that is down when none is running.
    let d = data(30_000, 10);
    let mut c = ChanSpec::clean(8000.0, 300);
    c.blackout_ms = Some((1000, 10_000));
    let o = run(
        &[c],
        &d,
        10,
        &Opts {
            read_every: Some(Duration::from_millis(50)),
            read_from: Some(Duration::from_millis(1500)),
            queue_frames: 8,
            ..Opts::default()
        },
    );
    let st = o.sender.stats();
    assert!(st.flow_stops >= 1, "{st:?}");
    assert!(st.channels_down >= 1, "{st:?}");
    assert!(
        o.received == d,
        "delivered {} of {}",
        o.received.len(),
        d.len()
    );
    // Within a persist interval and an RTT of the channel's return.
    let t = o.done_at.expect("the sender finished").as_secs_f64();
    assert!(t < 11.5, "{t} s");
}
