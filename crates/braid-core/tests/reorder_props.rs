//! Property tests of the BMP resequencer (PET/BMP Section V-B, criteria
//! 3-5): whatever the arrival order, it never hands packets up out of order
//! or twice, never exceeds its memory bound, and (with FIFO paths) delivers
//! everything that arrived unless it counted it as late or overflow.

use std::collections::BTreeSet;

use braid_core::reorder::{ReorderConfig, ReorderMode, Resequencer};
use braid_core::time::{Duration, Instant};
use braid_core::PathId;
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Arrival {
    at: Instant,
    path: u8,
    seq: u64,
    prev: Option<u64>,
    len: usize,
}

#[derive(Debug, Default)]
struct Outcome {
    delivered: Vec<u64>,
}

/// Delivers `arrivals` (time-ordered), servicing `poll_timeout` between
/// them, then drives time forward until nothing is pending. Checks the
/// per-step invariants on the way.
fn run(
    cfg: ReorderConfig,
    arrivals: &[Arrival],
    register_paths: u8,
) -> (Outcome, Resequencer<u64>) {
    let max = cfg.max_buffer_bytes;
    let mut r: Resequencer<u64> = Resequencer::new(cfg, 0);
    for p in 0..register_paths {
        r.add_path(Instant::ZERO, PathId(p));
    }
    let mut out = Outcome::default();
    let mut now = Instant::ZERO;
    let mut budget: u64 = 100_000;

    fn drain(r: &mut Resequencer<u64>, now: Instant, out: &mut Outcome, max: usize) {
        while let Some(s) = r.poll_release(now) {
            out.delivered.push(s);
        }
        assert!(
            r.stats().buffered_bytes <= max,
            "buffer {} > {}",
            r.stats().buffered_bytes,
            max
        );
    }

    let mut service_until =
        |r: &mut Resequencer<u64>, now: &mut Instant, until: Option<Instant>, out: &mut Outcome| {
            while let Some(t) = r.poll_timeout() {
                if until.is_some_and(|u| t > u) {
                    break;
                }
                budget = budget
                    .checked_sub(1)
                    .expect("poll_timeout keeps reporting work: spinning");
                *now = (*now).max(t);
                r.handle_timeout(*now);
                drain(r, *now, out, max);
            }
            if let Some(u) = until {
                *now = (*now).max(u);
            }
        };

    for a in arrivals {
        service_until(&mut r, &mut now, Some(a.at), &mut out);
        r.handle_packet(now, PathId(a.path), a.seq, a.prev, a.len, a.seq);
        drain(&mut r, now, &mut out, max);
    }
    service_until(&mut r, &mut now, None, &mut out);
    assert_eq!(r.poll_timeout(), None);
    (out, r)
}

/// Invariants every run must satisfy, FIFO paths or not.
fn check_common(out: &Outcome, r: &Resequencer<u64>, arrivals: &[Arrival], max: usize) {
    for w in out.delivered.windows(2) {
        assert!(w[0] < w[1], "out of order or twice: {} then {}", w[0], w[1]);
    }
    let arrived: BTreeSet<u64> = arrivals.iter().map(|a| a.seq).collect();
    for s in &out.delivered {
        assert!(arrived.contains(s), "delivered {s} which never arrived");
    }
    let st = r.stats();
    assert_eq!(st.received, arrivals.len() as u64);
    assert_eq!(st.released, out.delivered.len() as u64);
    assert_eq!(st.buffered_packets, 0);
    assert_eq!(st.buffered_bytes, 0);
    assert_eq!(st.queued_packets, 0);
    assert!(st.max_buffered_bytes <= max);
    let missing = arrived.len() - out.delivered.len();
    assert!(
        missing as u64 <= st.late + st.dropped_overflow,
        "{missing} arrived but undelivered, only {} late + {} overflow",
        st.late,
        st.dropped_overflow
    );
}

/// Raw material for a FIFO scenario: per sequence number its path and
/// whether it survives, an interleaving, duplicates, gaps and lengths.
#[derive(Clone, Debug)]
struct FifoPlan {
    assign: Vec<(u8, bool)>,
    picks: Vec<u8>,
    dups: Vec<(usize, usize)>,
    gaps_us: Vec<u64>,
    lens: Vec<usize>,
}

fn fifo_plan(max_gap_us: u64) -> impl Strategy<Value = FifoPlan> {
    (1usize..=300, 1u8..=4).prop_flat_map(move |(n, paths)| {
        (
            proptest::collection::vec((0..paths, proptest::bool::weighted(0.85)), n),
            proptest::collection::vec(any::<u8>(), n),
            proptest::collection::vec((any::<usize>(), any::<usize>()), 0..20),
            proptest::collection::vec(0..=max_gap_us, 1..64),
            proptest::collection::vec(1usize..=1500, 1..32),
        )
            .prop_map(|(assign, picks, dups, gaps_us, lens)| FifoPlan {
                assign,
                picks,
                dups,
                gaps_us,
                lens,
            })
    })
}

/// Each path delivers its own packets in sending (increasing) order; the
/// interleaving between paths is arbitrary; duplicates follow the original.
fn build_fifo(plan: &FifoPlan) -> Vec<Arrival> {
    let mut queues: Vec<std::collections::VecDeque<(u64, Option<u64>)>> =
        vec![Default::default(); 4];
    let mut last_on_path: [Option<u64>; 4] = [None; 4];
    for (s, &(p, present)) in plan.assign.iter().enumerate() {
        let s = s as u64;
        let prev = last_on_path[p as usize];
        last_on_path[p as usize] = Some(s);
        if present {
            queues[p as usize].push_back((s, prev));
        }
    }
    let mut order: Vec<(u8, u64, Option<u64>)> = Vec::new();
    let mut i = 0;
    loop {
        let nonempty: Vec<usize> = (0..4).filter(|&p| !queues[p].is_empty()).collect();
        if nonempty.is_empty() {
            break;
        }
        let p = nonempty[plan.picks[i % plan.picks.len()] as usize % nonempty.len()];
        i += 1;
        let (s, prev) = queues[p].pop_front().unwrap();
        order.push((p as u8, s, prev));
    }
    for &(a, b) in &plan.dups {
        if order.is_empty() {
            break;
        }
        let from = a % order.len();
        let to = from + 1 + b % (order.len() - from);
        let copy = order[from];
        order.insert(to, copy);
    }
    let mut t = Instant::ZERO;
    order
        .into_iter()
        .enumerate()
        .map(|(k, (path, seq, prev))| {
            t += Duration::from_micros(plan.gaps_us[k % plan.gaps_us.len()]);
            Arrival {
                at: t,
                path,
                seq,
                prev,
                len: plan.lens[seq as usize % plan.lens.len()],
            }
        })
        .collect()
}

fn arb_cfg() -> impl Strategy<Value = ReorderConfig> {
    (
        any::<bool>(),
        0u64..=1500,
        0.0f64..=1.0,
        1500usize..=40_000,
        100u64..=800,
        any::<bool>(),
        (any::<bool>(), any::<bool>(), 0u64..=200, 0u64..=2000),
    )
        .prop_map(
            |(
                comparison,
                window_ms,
                pace_fraction,
                max_buffer_bytes,
                timeout_ms,
                first_seen,
                (adaptive_hold, repair_wait, min_ms, span_ms),
            )| {
                ReorderConfig {
                    mode: ReorderMode::Bmp,
                    loss_timeout: Duration::from_millis(timeout_ms),
                    comparison,
                    active_window: Duration::from_millis(window_ms),
                    pace_fraction,
                    min_pace_interval: ReorderConfig::default().min_pace_interval,
                    max_buffer_bytes,
                    timer_from_first_seen: first_seen,
                    adaptive_hold,
                    min_hold: Duration::from_millis(min_ms),
                    max_hold: Duration::from_millis(min_ms + span_ms),
                    repair_wait,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Fast arrivals (all within the loss timeout and active window), every
    /// path registered, ample buffer: FIFO paths mean loss detection is
    /// never wrong, so exactly the packets that arrived are delivered.
    #[test]
    fn fifo_fast_delivers_every_arrival_in_order(plan in fifo_plan(1000), pace in 0.0f64..=1.0) {
        let arrivals = build_fifo(&plan);
        let cfg = ReorderConfig { pace_fraction: pace, ..ReorderConfig::default() };
        let max = cfg.max_buffer_bytes;
        let (out, r) = run(cfg, &arrivals, 4);
        check_common(&out, &r, &arrivals, max);
        let arrived: Vec<u64> = arrivals.iter().map(|a| a.seq).collect::<BTreeSet<_>>().into_iter().collect();
        prop_assert_eq!(&out.delivered, &arrived);
        prop_assert_eq!(r.stats().late, 0);
        prop_assert_eq!(r.stats().dropped_overflow, 0);
    }

    /// Slow, bursty arrivals, small buffers, any configuration: timers,
    /// inactive paths and overflow all fire; the invariants still hold.
    #[test]
    fn fifo_any_config_keeps_invariants(plan in fifo_plan(400_000), cfg in arb_cfg(), register in 0u8..=4) {
        let arrivals = build_fifo(&plan);
        let max = cfg.max_buffer_bytes;
        let (out, r) = run(cfg, &arrivals, register);
        check_common(&out, &r, &arrivals, max);
    }

    /// Arbitrary (non-FIFO) arrival, arbitrary prev links, duplicates:
    /// never out of order, never twice, never over the memory bound.
    #[test]
    fn arbitrary_arrival_never_out_of_order_or_twice(
        raw in proptest::collection::vec(
            (0u64..300, 0u8..4, proptest::option::of(0u64..300), 1usize..=1500, 0u64..=300_000),
            0..400,
        ),
        cfg in arb_cfg(),
    ) {
        let mut t = Instant::ZERO;
        let arrivals: Vec<Arrival> = raw
            .into_iter()
            .map(|(seq, path, prev, len, gap_us)| {
                t += Duration::from_micros(gap_us);
                Arrival { at: t, path, seq, prev, len }
            })
            .collect();
        let max = cfg.max_buffer_bytes;
        let (out, r) = run(cfg, &arrivals, 0);
        check_common(&out, &r, &arrivals, max);
    }
}

/// Off mode hands everything up in arrival order, duplicates included.
#[test]
fn off_mode_passes_everything_through() {
    let cfg = ReorderConfig {
        mode: ReorderMode::Off,
        ..ReorderConfig::default()
    };
    let arrivals: Vec<Arrival> = [5u64, 1, 3, 3, 0]
        .into_iter()
        .enumerate()
        .map(|(i, seq)| Arrival {
            at: Instant::from_millis(i as u64),
            path: 0,
            seq,
            prev: None,
            len: 100,
        })
        .collect();
    let (out, r) = run(cfg, &arrivals, 0);
    assert_eq!(out.delivered, vec![5, 1, 3, 3, 0]);
    assert_eq!(r.stats().released, 5);
}
