use super::*;

const L0: PathId = PathId(0);
const L1: PathId = PathId(1);

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn drain(r: &mut Rpc<u32>) -> Vec<Release<u32>> {
    std::iter::from_fn(|| r.poll_release()).collect()
}

fn values(v: &[Release<u32>]) -> Vec<u64> {
    v.iter().map(|r| r.ack).collect()
}

fn rpc(loss_detection: bool, max_hold: Option<Duration>) -> Rpc<u32> {
    Rpc::new(RpcConfig {
        capacity: 64,
        loss_detection,
        max_hold,
    })
}

/// Reordering alone: the duplicate ACKs are held and come out rewritten,
/// one per segment, when the hole fills (Section 5.2.2).
#[test]
fn reordering_gives_the_sender_an_in_order_ack_stream() {
    let mut r = rpc(true, None);
    r.on_data_sent(Instant::ZERO, 0, L0);
    r.on_data_sent(Instant::ZERO, 1, L1);
    r.on_data_sent(Instant::ZERO, 2, L0);
    r.on_data_sent(Instant::ZERO, 3, L0);
    // Arrivals 0, 2, 3, 1.
    r.handle_ack(at(1), &AckView::new(1, &[]), 0);
    assert_eq!(values(&drain(&mut r)), vec![1]);
    r.handle_ack(at(2), &AckView::new(1, &[(2, 3)]), 1);
    r.handle_ack(at(3), &AckView::new(1, &[(2, 4)]), 2);
    assert!(drain(&mut r).is_empty(), "duplicates are held");
    assert_eq!(r.held(), 2);
    r.handle_ack(at(4), &AckView::new(4, &[]), 3);
    let out = drain(&mut r);
    assert_eq!(values(&out), vec![2, 3, 4]);
    assert!(out.iter().all(|x| !x.original && x.loss.is_none()));
    // The ACK that filled the hole goes first (it identifies segment 1),
    // then the held ones in segment order.
    assert_eq!(
        out.iter().map(|x| x.inner).collect::<Vec<_>>(),
        vec![3, 1, 2]
    );
    assert_eq!(r.held(), 0);
    assert_eq!(r.state(), State::Normal);
    assert_eq!(r.stats().losses_detected, 0);
}

/// A later segment on the same link shows an earlier one lost at once
/// (threshold one packet, Section 5.2.3): the loss information goes out
/// with the ACK, which is forwarded in its original form, and the state
/// machine runs LOSS -> OUTOFLOSS -> NORMAL (Fig 5).
#[test]
fn a_fifo_gap_on_one_link_is_nacked_and_the_state_machine_cycles() {
    let mut r = rpc(true, None);
    r.set_link_rate(L0, Some(360e3));
    r.set_link_rate(L1, Some(1080e3));
    for s in 0..4 {
        r.on_data_sent(Instant::ZERO, s, L0);
    }
    r.handle_ack(at(1), &AckView::new(1, &[]), 0);
    drain(&mut r);
    // Segment 1 is lost; 2 arrives.
    r.handle_ack(at(2), &AckView::new(1, &[(2, 3)]), 1);
    let out = drain(&mut r);
    assert_eq!(out.len(), 1);
    assert!(out[0].original);
    assert_eq!(out[0].ack, 1);
    let info = out[0].loss.expect("loss information");
    assert_eq!(info.seqs(), &[1]);
    assert!((info.p - 0.875).abs() < 1e-12, "{}", info.p);
    assert_eq!(r.state(), State::Loss);
    let ev: Vec<RpcEvent> = std::iter::from_fn(|| r.poll_event()).collect();
    assert!(ev.contains(&RpcEvent::Lost { seq: 1, link: L0 }));
    assert!(ev.contains(&RpcEvent::Identified { seq: 2, link: L0 }));
    // In LOSS, duplicates pass in their original form.
    r.handle_ack(at(3), &AckView::new(1, &[(2, 4)]), 2);
    let out = drain(&mut r);
    assert_eq!(values(&out), vec![1]);
    assert!(out[0].original && out[0].loss.is_none());
    // The retransmission, on the other link, fills the hole.
    r.on_data_sent(Instant::ZERO, 1, L1);
    r.handle_ack(at(4), &AckView::new(4, &[]), 3);
    assert_eq!(values(&drain(&mut r)), vec![4]);
    assert_eq!(r.state(), State::Normal);
    assert!(std::iter::from_fn(|| r.poll_event())
        .any(|e| e == RpcEvent::Identified { seq: 1, link: L1 }));
}

/// `p = 1 − B_i / (2 ΣB)` for the worked values of SPECS.md §1.2.
#[test]
fn share_factor_matches_the_paper() {
    let mut r = rpc(true, None);
    assert_eq!(r.share_factor(L0), 0.5, "unknown rate: TCP's halving");
    r.set_link_rate(L0, Some(1e6));
    assert_eq!(r.share_factor(L0), 0.5, "one link");
    r.set_link_rate(L1, Some(1e6));
    assert_eq!(r.share_factor(L0), 0.75, "two equal links");
    r.set_link_rate(L0, Some(1080e3));
    r.set_link_rate(L1, Some(360e3));
    assert!((r.share_factor(L0) - 0.625).abs() < 1e-12);
    assert!((r.share_factor(L1) - 0.875).abs() < 1e-12);
}

/// Without loss detection (partial RPC) a loss leaves the duplicates held;
/// the hold bound then releases them in their original form.
#[test]
fn partial_rpc_holds_until_the_bound_then_releases_originals() {
    let mut r = rpc(false, Some(Duration::from_millis(300)));
    for s in 0..5 {
        r.on_data_sent(Instant::ZERO, s, L0);
    }
    r.handle_ack(at(0), &AckView::new(1, &[]), 0);
    drain(&mut r);
    r.handle_ack(at(10), &AckView::new(1, &[(2, 3)]), 1);
    r.handle_ack(at(20), &AckView::new(1, &[(2, 4)]), 2);
    r.handle_ack(at(30), &AckView::new(1, &[(2, 5)]), 3);
    assert!(drain(&mut r).is_empty());
    assert_eq!(r.stats().losses_detected, 0);
    assert_eq!(r.poll_timeout(), Some(at(310)));
    r.handle_timeout(at(309));
    assert!(drain(&mut r).is_empty(), "not yet due");
    r.handle_timeout(at(310));
    let out = drain(&mut r);
    assert_eq!(values(&out), vec![1, 1, 1]);
    assert!(out.iter().all(|x| x.original && x.loss.is_none()));
    assert_eq!(r.poll_timeout(), None);
    assert_eq!(r.stats().hold_expiries, 1);
}

/// A tail loss (nothing sent after it on its link) is found by the hold
/// bound with loss detection on: the hole is NACKed.
#[test]
fn the_hold_bound_nacks_a_tail_loss() {
    let mut r = rpc(true, Some(Duration::from_millis(200)));
    r.on_data_sent(Instant::ZERO, 0, L1); // lost, last on its link
    r.on_data_sent(Instant::ZERO, 1, L0);
    r.on_data_sent(Instant::ZERO, 2, L0);
    r.handle_ack(at(5), &AckView::new(0, &[(1, 2)]), 0);
    r.handle_ack(at(6), &AckView::new(0, &[(1, 3)]), 1);
    assert!(drain(&mut r).is_empty());
    r.handle_timeout(at(205));
    let out = drain(&mut r);
    assert_eq!(values(&out), vec![0, 0]);
    assert_eq!(out[0].loss.map(|l| l.seqs().to_vec()), Some(vec![0]));
    assert_eq!(r.state(), State::Loss);
}

/// Without a bound (the paper) an ACK waits for its hole however long.
#[test]
fn without_a_bound_nothing_times_out() {
    let mut r = rpc(false, None);
    r.on_data_sent(Instant::ZERO, 0, L1);
    r.on_data_sent(Instant::ZERO, 1, L0);
    r.handle_ack(at(5), &AckView::new(0, &[(1, 2)]), 0);
    assert_eq!(r.poll_timeout(), None);
    r.handle_timeout(at(1_000_000));
    assert!(drain(&mut r).is_empty());
    assert_eq!(r.held(), 1);
}

/// A stale copy of a retransmitted segment left in a link's history is not
/// a loss when a later segment on that link is identified.
#[test]
fn a_retransmitted_segment_is_not_declared_lost_twice() {
    let mut r = rpc(true, None);
    r.on_data_sent(Instant::ZERO, 0, L0);
    r.on_data_sent(Instant::ZERO, 1, L0); // lost
    r.on_data_sent(Instant::ZERO, 2, L0);
    r.handle_ack(at(1), &AckView::new(1, &[]), 0);
    r.handle_ack(at(2), &AckView::new(1, &[(2, 3)]), 1);
    assert_eq!(r.stats().losses_detected, 1);
    r.on_data_sent(Instant::ZERO, 1, L1); // retransmission
    r.on_data_sent(Instant::ZERO, 3, L0);
    r.handle_ack(at(3), &AckView::new(1, &[(2, 4)]), 2);
    assert_eq!(r.stats().losses_detected, 1);
    r.handle_ack(at(4), &AckView::new(4, &[]), 3);
    assert_eq!(r.stats().losses_detected, 1);
    assert_eq!(r.meta_cum(), 4);
}

/// Segments beyond the tracked window and SACK blocks pointing there are
/// ignored, never indexed out of bounds.
#[test]
fn out_of_window_input_is_bounded() {
    let mut r = rpc(true, Some(Duration::from_millis(10)));
    r.on_data_sent(Instant::ZERO, u64::MAX - 1, L0);
    r.on_data_sent(Instant::ZERO, 1 << 40, PathId(200));
    r.handle_ack(
        at(1),
        &AckView::new(0, &[(5, u64::MAX), (u64::MAX - 3, 2)]),
        0,
    );
    assert!(r.held() <= 64);
    r.handle_ack(at(2), &AckView::new(u64::MAX / 2, &[]), 1);
    assert_eq!(r.meta_cum(), u64::MAX / 2);
    r.handle_timeout(at(100));
    assert!(drain(&mut r).len() >= 2);
}

/// Karn's ambiguity: segment 1 is lost on link 0 and NACKed; the sender
/// resends it on link 1 and, after its timeout, once more on link 0
/// behind segments 4 and 5, which are still queued there. When the ACK
/// shows 1 arrived (the first resend), that proves nothing about link 0:
/// 4 and 5 are not lost. Their own arrival later reveals nothing either,
/// and a real loss behind them on link 0 is still found.
#[test]
fn an_ambiguous_resend_reveals_no_losses() {
    let mut r = rpc(true, None);
    for s in 0..3 {
        r.on_data_sent(Instant::ZERO, s, L0);
    }
    r.handle_ack(at(1), &AckView::new(1, &[]), 0);
    r.handle_ack(at(2), &AckView::new(1, &[(2, 3)]), 1);
    assert_eq!(r.stats().losses_detected, 1, "1 is lost");
    drain(&mut r);
    r.on_data_sent(at(2), 1, L1);
    for s in 3..7 {
        r.on_data_sent(at(3), s, L0);
    }
    r.on_data_sent(at(4), 1, L0); // go-back-N after a timeout
    r.on_data_sent(at(4), 7, L0);
    // 3 arrives, then the first resend of 1 fills the hole.
    r.handle_ack(at(5), &AckView::new(1, &[(2, 4)]), 2);
    r.handle_ack(at(6), &AckView::new(4, &[]), 3);
    assert_eq!(r.stats().losses_detected, 1, "4-6 are queued, not lost");
    // 4 and 5 arrive, 6 is lost, 7 arrives: 6 alone is NACKed.
    r.handle_ack(at(7), &AckView::new(5, &[]), 4);
    r.handle_ack(at(8), &AckView::new(6, &[]), 5);
    r.handle_ack(at(9), &AckView::new(6, &[(7, 8)]), 6);
    assert_eq!(r.stats().losses_detected, 2);
    let info = drain(&mut r)
        .into_iter()
        .find_map(|x| x.loss)
        .expect("loss information");
    assert_eq!(info.seqs(), &[6]);
}
