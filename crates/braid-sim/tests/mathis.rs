//! Validates the TCP model against the Mathis et al. (1997) steady-state
//! throughput formula, BW = MSS / RTT * sqrt(3 / (2p)), on a single path
//! with Bernoulli loss: 100 Mbit/s, 50 ms one-way delay each way, an
//! infinite drop-tail queue, lossless ACK path, no delayed ACKs and a window
//! ceiling high enough never to bind.
//!
//! The loop here is deliberately self-contained (only the simulator's event
//! queue, none of its links or topology) so that the model is checked
//! independently of the simulator that uses it.

use braid_core::time::{tx_time, Duration, Instant};
use braid_sim::tcp::{Ack, Segment, TcpConfig, TcpReceiver, TcpSender};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const RATE_BPS: f64 = 100e6;
const ONE_WAY: Duration = Duration::from_millis(50);

enum Ev {
    Data(Segment),
    Ack(Ack),
    SenderTimer,
}

struct Outcome {
    goodput_bps: f64,
    loss_rate: f64,
    timeouts: u64,
    fast_retransmits: u64,
}

fn run(p: f64, seed: u64, warmup: Duration, measure: Duration) -> Outcome {
    let cfg = TcpConfig {
        max_cwnd_pkts: 10_000,
        ..TcpConfig::default()
    };
    let mut s = TcpSender::new(cfg.clone(), 0, None);
    let mut r = TcpReceiver::new(&cfg, 0);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Ordered by (time, insertion), as the simulator's own queue.
    let mut q = braid_sim::event::EventQueue::default();
    let push = |q: &mut braid_sim::event::EventQueue<Ev>, at: Instant, ev: Ev| q.push(at, ev);
    let (mut fwd_free, mut rev_free) = (Instant::ZERO, Instant::ZERO);
    let mut timer_at: Option<Instant> = None;
    let mut out = Vec::new();
    let (mut sent, mut dropped) = (0u64, 0u64);
    let start = Instant::ZERO + warmup;
    let end = start + measure;
    let mut bytes_at_start = None;

    let mut now = Instant::ZERO;
    s.start(now, &mut out);
    loop {
        // hand what the sender produced to the link, then arm its timer
        for seg in out.drain(..) {
            let depart = now.max(fwd_free) + tx_time(seg.wire_bytes, RATE_BPS);
            fwd_free = depart;
            sent += 1;
            if rng.gen_bool(p) {
                dropped += 1; // lost on the channel after using the link
                continue;
            }
            push(&mut q, depart + ONE_WAY, Ev::Data(seg));
        }
        if let Some(t) = s.poll_timeout() {
            if !matches!(timer_at, Some(x) if x <= t) {
                timer_at = Some(t);
                push(&mut q, t, Ev::SenderTimer);
            }
        }
        let Some((at, ev)) = q.pop() else { break };
        if bytes_at_start.is_none() && at >= start {
            bytes_at_start = Some(r.delivered_bytes());
        }
        if at > end {
            break;
        }
        now = at;
        match ev {
            Ev::Data(seg) => {
                if let Some(a) = r.on_segment(now, &seg) {
                    let depart = now.max(rev_free) + tx_time(a.wire_bytes, RATE_BPS);
                    rev_free = depart;
                    push(&mut q, depart + ONE_WAY, Ev::Ack(a));
                }
            }
            Ev::Ack(a) => s.on_ack(now, &a, &mut out),
            Ev::SenderTimer => {
                timer_at = None;
                s.handle_timeout(now, &mut out);
            }
        }
    }
    let st = s.stats();
    Outcome {
        goodput_bps: (r.delivered_bytes() - bytes_at_start.unwrap_or(0)) as f64 * 8.0
            / measure.as_secs_f64(),
        loss_rate: dropped as f64 / sent as f64,
        timeouts: st.timeouts,
        fast_retransmits: st.fast_retransmits,
    }
}

#[test]
fn newreno_throughput_matches_mathis_formula() {
    let cfg = TcpConfig::default();
    let mss_bits = f64::from(cfg.mss_bytes) * 8.0;
    let rtt = 2.0 * ONE_WAY.as_secs_f64()
        + tx_time(cfg.wire_bytes(), RATE_BPS).as_secs_f64()
        + tx_time(cfg.header_bytes, RATE_BPS).as_secs_f64();
    let seeds = [1u64, 2, 3, 4, 5, 6];
    let mut failures = Vec::new();
    for (p, secs) in [
        (0.001, 2000.0),
        (0.005, 1000.0),
        (0.01, 1000.0),
        (0.02, 1000.0),
    ] {
        let mut goodput = 0.0;
        let (mut loss, mut tos, mut frs) = (0.0, 0, 0);
        for &seed in &seeds {
            let o = run(
                p,
                seed,
                Duration::from_secs(20),
                Duration::from_secs_f64(secs),
            );
            goodput += o.goodput_bps / seeds.len() as f64;
            loss += o.loss_rate / seeds.len() as f64;
            tos += o.timeouts;
            frs += o.fast_retransmits;
        }
        let mathis = mss_bits / rtt * (3.0 / (2.0 * p)).sqrt();
        let ratio = goodput / mathis;
        println!(
            "p = {p:<5}  goodput {:>7.3} Mbit/s  Mathis {:>7.3} Mbit/s  ratio {ratio:.3}  \
             (measured loss {loss:.5}, {frs} fast retransmits, {tos} timeouts over {} seeds)",
            goodput / 1e6,
            mathis / 1e6,
            seeds.len()
        );
        if !(0.75..=1.25).contains(&ratio) {
            failures.push((p, ratio));
        }
    }
    assert!(failures.is_empty(), "outside Mathis +-25%: {failures:?}");
}
