//! Property tests of PRISM's reverse-path controller (`braid_core::rpc`):
//! segments striped over FIFO links with random delays reach a SACK
//! receiver, whose ACKs go through the controller.
//!
//! - Without loss, the sender sees a strictly increasing ACK stream that
//!   ends at the last segment (no duplicate ACK survives reordering) and no
//!   loss is reported.
//! - With losses, every reported loss is a real one (FIFO links: no false
//!   NACK), every loss followed by a delivered segment on its link is
//!   reported, the forwarded ACK values never go back, and the held ACKs
//!   never exceed the tracked window.

use std::collections::BTreeSet;

use braid_core::rpc::{AckView, Rpc, RpcConfig, RpcEvent};
use braid_core::time::{Duration, Instant};
use braid_core::PathId;
use proptest::prelude::*;

/// A SACK receiver (RFC 2018): next expected segment and up to three
/// blocks, the one holding the latest arrival first.
#[derive(Default)]
struct Sink {
    got: BTreeSet<u64>,
    cum: u64,
}

impl Sink {
    fn arrive(&mut self, s: u64) -> AckView {
        self.got.insert(s);
        while self.got.contains(&self.cum) {
            self.cum += 1;
        }
        let mut blocks = Vec::new();
        let block_of = |s: u64| {
            let mut l = s;
            while l > self.cum && self.got.contains(&(l - 1)) {
                l -= 1;
            }
            let mut r = s;
            while self.got.contains(&r) {
                r += 1;
            }
            (l, r)
        };
        if s > self.cum {
            blocks.push(block_of(s));
        }
        let mut pos = self.cum;
        while blocks.len() < 3 {
            let Some(&n) = self.got.range(pos..).next() else {
                break;
            };
            let b = block_of(n);
            if !blocks.contains(&b) {
                blocks.push(b);
            }
            pos = b.1;
        }
        AckView::new(self.cum, &blocks)
    }
}

/// Arrival times of `n` segments sent 1 ms apart on the links `link[i]`,
/// each link with its own fixed delay: FIFO per link.
fn arrivals(links: &[u8], delays_ms: &[u64], lost: &BTreeSet<u64>) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = links
        .iter()
        .enumerate()
        .filter(|(s, _)| !lost.contains(&(*s as u64)))
        .map(|(s, &l)| (s as u64 + delays_ms[l as usize], s as u64))
        .collect();
    v.sort();
    v
}

fn run(
    links: &[u8],
    delays_ms: &[u64],
    lost: &BTreeSet<u64>,
    cfg: RpcConfig,
) -> (Vec<u64>, Vec<RpcEvent>, u64, u64) {
    let cap = cfg.capacity;
    let mut r: Rpc<()> = Rpc::new(cfg);
    for (s, &l) in links.iter().enumerate() {
        r.on_data_sent(Instant::ZERO, s as u64, PathId(l));
    }
    let mut sink = Sink::default();
    let mut out = Vec::new();
    let mut events = Vec::new();
    let mut max_held = 0;
    for (t, s) in arrivals(links, delays_ms, lost) {
        let ack = sink.arrive(s);
        r.handle_ack(Instant::ZERO + Duration::from_millis(t), &ack, ());
        max_held = max_held.max(r.held());
        assert!(r.held() <= cap.next_power_of_two());
        while let Some(x) = r.poll_release() {
            out.push(x.ack);
        }
        while let Some(e) = r.poll_event() {
            events.push(e);
        }
    }
    (out, events, max_held, sink.cum)
}

fn world() -> impl Strategy<Value = (Vec<u8>, Vec<u64>)> {
    (1usize..5).prop_flat_map(|n_links| {
        (
            prop::collection::vec(0..n_links as u8, 1..120),
            prop::collection::vec(0u64..80, n_links),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reordering_alone_yields_an_in_order_ack_stream((links, delays) in world()) {
        let cfg = RpcConfig { capacity: 256, loss_detection: true, max_hold: None };
        let (out, events, _, cum) = run(&links, &delays, &BTreeSet::new(), cfg);
        prop_assert_eq!(cum, links.len() as u64);
        prop_assert!(out.windows(2).all(|w| w[0] < w[1]), "not increasing: {:?}", out);
        prop_assert_eq!(out.last().copied(), Some(links.len() as u64));
        let losses = events.iter().filter(|e| matches!(e, RpcEvent::Lost { .. })).count();
        prop_assert_eq!(losses, 0);
    }

    #[test]
    fn losses_are_reported_exactly(
        (links, delays) in world(),
        lost_idx in prop::collection::btree_set(0u64..120, 0..10),
    ) {
        let lost: BTreeSet<u64> = lost_idx.into_iter().filter(|s| (*s as usize) < links.len()).collect();
        let cfg = RpcConfig { capacity: 256, loss_detection: true, max_hold: None };
        let (out, events, _, _) = run(&links, &delays, &lost, cfg);
        let reported: BTreeSet<u64> = events.iter().filter_map(|e| match e {
            RpcEvent::Lost { seq, .. } => Some(*seq),
            _ => None,
        }).collect();
        prop_assert!(reported.is_subset(&lost), "false loss: {:?} vs {:?}", reported, lost);
        for &s in &lost {
            let l = links[s as usize];
            let later_delivered = (s as usize + 1..links.len())
                .any(|k| links[k] == l && !lost.contains(&(k as u64)));
            if later_delivered {
                prop_assert!(reported.contains(&s), "missed loss {}", s);
            }
        }
        prop_assert!(out.windows(2).all(|w| w[0] <= w[1]), "ACK went back: {:?}", out);
    }
}
