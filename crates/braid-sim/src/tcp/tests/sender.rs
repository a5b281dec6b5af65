//! The sender's state machine fed by hand: slow start, congestion
//! avoidance, fast retransmit, NewReno, timeouts and bursts.

use super::*;

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

/// A timeout of the timer's own retransmission holds ssthresh (RFC 5681
/// Section 3.1, Linux's `tcp_enter_loss`): halved once, for the window
/// in flight, not again for the one retransmission (ns-2's window()/2
/// left it at 2).
#[test]
fn a_repeated_timeout_holds_ssthresh() {
    let mut s = TcpSender::new(cfg(20, 0), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    assert_eq!(out.len(), 20);
    out.clear();
    s.handle_timeout(ms(3000), &mut out);
    assert_eq!((s.cwnd(), s.ssthresh()), (1.0, 10));
    s.handle_timeout(ms(9000), &mut out);
    assert_eq!(s.stats().timeouts, 2);
    assert_eq!((s.cwnd(), s.ssthresh()), (1.0, 10), "halved again");
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
