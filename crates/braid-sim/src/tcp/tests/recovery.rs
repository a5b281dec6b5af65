//! Loss recovery and congestion signals beyond NewReno: SACK pipe,
//! timestamps, ECN, RACK, TCP-PRISM's NACKs and spurious timeouts.

use super::*;

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

/// The ACK of the last packet sent before an ECN reduction still carries
/// the old echo (the receiver got that packet before the CWR one): it does
/// not reduce again, as in ns-2 (`seqno > recover_`); an ECE on the ACK of
/// a packet sent after the reduction does. With `>=` a single mark cut the
/// window twice whenever the window was small.
#[test]
fn ecn_echo_up_to_the_reduction_point_is_the_mark_already_answered() {
    let c = TcpConfig {
        ecn: true,
        ..cfg(4, 0)
    };
    let mut s = TcpSender::new(c, 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    let mut e = ack(1);
    e.ece = true;
    s.on_ack(ms(100), &e, &mut out);
    assert_eq!(s.stats().ecn_reductions, 1);
    let recover = s.snd_max();
    let mut stale = ack(recover);
    stale.ece = true;
    s.on_ack(ms(110), &stale, &mut out);
    assert_eq!(s.stats().ecn_reductions, 1, "the echo of the answered mark");
    assert!(s.snd_max() > recover, "new packets went out");
    let mut fresh = ack(recover + 1);
    fresh.ece = true;
    s.on_ack(ms(200), &fresh, &mut out);
    assert_eq!(s.stats().ecn_reductions, 2, "a mark on a packet sent after");
}

/// RACK's detection (RFC 8985 Section 6.2): a retransmission still missing
/// once a packet sent after it is SACKed, and its round trip plus a
/// quarter SRTT have passed, is sent again on that ACK, without waiting
/// for the retransmission timer; without RACK RFC 6675 recovery never
/// resends it. SACKs of packets sent before it say nothing about it,
/// however late.
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
        // The retransmission is lost too; later SACKs keep coming, of
        // packets sent before it.
        s.on_ack(ms(250), &sack_ack(1, &[(2, 6)]), &mut out);
        // Most of the window is SACKed now, so pipe leaves room for new
        // packets.
        s.on_ack(ms(340), &sack_ack(1, &[(2, 10)]), &mut out);
        assert!(out.iter().all(|p| p.seq != 1), "too early: {out:?}");
        // 10 and 11 left at 100 ms, before the retransmission; the first
        // packet sent after it is 12.
        let first_new = out.iter().map(|p| p.seq).min().unwrap();
        assert_eq!(first_new, 12, "{out:?}");
        out.clear();
        // Packets sent before the retransmission arrive: nothing new.
        s.on_ack(ms(440), &sack_ack(1, &[(2, 12)]), &mut out);
        assert!(out.iter().all(|p| p.seq != 1), "{out:?}");
        out.clear();
        // A packet sent after the retransmission is SACKed.
        s.on_ack(ms(450), &sack_ack(1, &[(2, first_new + 1)]), &mut out);
        let again = out.iter().filter(|p| p.seq == 1).count();
        assert_eq!(again, usize::from(rack), "rack {rack}: {out:?}");
        assert_eq!(s.stats().timeouts, 0);
    }
}

/// Linux leaves the loss state a timeout began when RACK finds one of the
/// go-back-N's retransmissions lost again (`tcp_fastretrans_alert`, case
/// `TCP_CA_Loss`, `FLAG_LOST_RETRANS`): fast recovery with a window
/// reduced from the one slow start rebuilt resends it at once, without a
/// second timeout, and the timeout can no longer be undone. Without RACK
/// the model waits for the timer, and an ACK echoing an original's
/// timestamp still undoes the timeout.
#[test]
fn a_retransmission_lost_after_a_timeout_is_resent_by_fast_recovery() {
    for rack in [false, true] {
        let c = TcpConfig {
            rack,
            pacing: false,
            rto_undo: true,
            ..TcpConfig::linux(1386, 2048)
        };
        let mut s = TcpSender::new(c, 0, None);
        let mut out = Vec::new();
        s.start(ms(1), &mut out);
        for a in 1..=10 {
            s.on_ack(ms(101), &ack(a), &mut out);
        }
        assert_eq!(s.snd_max(), 30);
        out.clear();
        // Everything from 10 on is lost: the timer resends 10.
        let t = s.poll_timeout().unwrap();
        s.handle_timeout(t, &mut out);
        assert_eq!(seqs(&out), vec![10]);
        let ssthresh = s.ssthresh();
        out.clear();
        // Slow start resends 11, 12 on its ACK; 11 is lost again, 12
        // arrives (and whatever the duplicate ACKs clock out after it).
        let mut now = t + Duration::from_millis(100);
        s.on_ack(now, &ack(11), &mut out);
        assert_eq!(seqs(&out), vec![11, 12]);
        out.clear();
        let mut top = 13;
        for _ in 0..4 {
            now += Duration::from_millis(100);
            s.on_ack(now, &sack_ack(11, &[(12, top)]), &mut out);
            if out.iter().any(|p| p.seq == 11) {
                break;
            }
            top = out.iter().map(|p| p.seq + 1).max().unwrap_or(top).max(top);
            out.clear();
        }
        let resent = out.iter().any(|p| p.seq == 11);
        assert_eq!(resent, rack, "rack {rack}: {out:?}");
        assert_eq!(s.in_recovery(), rack);
        if rack {
            assert!(s.poll_timeout().unwrap() > now, "resent by the ACK");
            assert!(s.ssthresh() < ssthresh, "{} after {ssthresh}", s.ssthresh());
        }
        // Everything arrives; the ACK echoes an original's timestamp
        // (sent at 101 ms, before the timeout).
        out.clear();
        let mut k = ack(s.snd_max());
        k.tsecr = Some(101);
        s.on_ack(now + Duration::from_millis(100), &k, &mut out);
        assert_eq!(s.stats().rto_undos, u64::from(!rack), "rack {rack}");
        if rack {
            assert!(s.cwnd() < 30.0, "cwnd {}", s.cwnd());
        }
        assert_eq!(s.stats().timeouts, 1);
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

/// Linux undoes a timeout that an ACK shows was spurious (`rto_undo`):
/// the original's ACK, echoing a timestamp older than the timeout's
/// retransmission, puts back the window and ssthresh, and the rest of the
/// window is not resent. Without the undo (ns-2) the same ACK goes on
/// with slow start from one packet and goes back N. An ACK echoing the
/// retransmission itself says nothing about the timeout and undoes
/// nothing.
#[test]
fn a_spurious_timeout_is_undone_by_the_originals_echo() {
    for (undo, echo_original) in [(true, true), (false, true), (true, false)] {
        // Unpaced: the hand-fed ACKs expect each to release its packets.
        let c = TcpConfig {
            rto_undo: undo,
            pacing: false,
            ..TcpConfig::linux(1386, 2048)
        };
        let mut s = TcpSender::new(c, 0, None);
        let mut out = Vec::new();
        s.start(ms(1), &mut out);
        // Ten packets at 1 ms, each acknowledged 100 ms later: slow start
        // to a window of 20, packets 10..30 in flight.
        for a in 1..=10 {
            let mut k = ack(a);
            k.tsecr = Some(1);
            s.on_ack(ms(101), &k, &mut out);
        }
        let (cwnd, max) = (s.cwnd(), s.snd_max());
        assert_eq!((cwnd, max), (20.0, 30));
        let sent_at = out.iter().find(|p| p.seq == 10).unwrap().tsval;
        out.clear();
        let t = s.poll_timeout().unwrap();
        s.handle_timeout(t, &mut out);
        assert_eq!((s.cwnd(), seqs(&out)), (1.0, vec![10]));
        out.clear();
        // Packets 10..15 arrive, late: the ACK echoes the original's
        // TSval, or the retransmission's.
        let mut k = ack(15);
        k.tsecr = Some(if echo_original {
            sent_at
        } else {
            t.as_nanos() as u32 / 1_000_000
        });
        s.on_ack(t + Duration::from_millis(5), &k, &mut out);
        let resent = out.iter().filter(|p| p.seq < max).count();
        if undo && echo_original {
            assert_eq!(s.stats().rto_undos, 1);
            assert!(s.cwnd() >= cwnd, "cwnd {} back to {cwnd}", s.cwnd());
            assert_eq!(
                resent,
                0,
                "nothing before {max} is resent: {:?}",
                seqs(&out)
            );
            assert!(out.iter().all(|p| !p.retransmit));
        } else {
            assert_eq!(s.stats().rto_undos, 0);
            assert!(s.cwnd() < 10.0, "cwnd {}", s.cwnd());
            assert!(resent > 0, "goes back N: {:?}", seqs(&out));
        }
    }
}

/// `TcpConfig::pacing`: once the RTT is measured, new packets leave no
/// faster than 200 % of cwnd/SRTT in slow start; the sender asks for a
/// timer at the next departure and sends then. Without pacing an ACK
/// releases its packets at once.
#[test]
fn a_paced_sender_spreads_its_window_over_the_round_trip() {
    for pacing in [false, true] {
        let c = TcpConfig {
            pacing,
            ..TcpConfig::linux(1386, 2048)
        };
        let mut s = TcpSender::new(c, 0, None);
        let mut out = Vec::new();
        s.start(ms(0), &mut out);
        assert_eq!(out.len(), 10, "the first window leaves at once");
        out.clear();
        // Packets 0 and 1 acknowledged after 100 ms: cwnd 12, four may go.
        let mut k = ack(2);
        k.tsecr = Some(1);
        s.on_ack(ms(100), &k, &mut out);
        if !pacing {
            assert_eq!(out.len(), 4);
            assert!(s.poll_timeout().unwrap() >= ms(300), "only the RTO");
            continue;
        }
        // 200 % of 12 packets per 100 ms: one packet every 4.17 ms.
        assert_eq!(seqs(&out), vec![10]);
        let next = s.poll_timeout().unwrap();
        let gap = next.saturating_since(ms(100)).as_secs_f64();
        assert!((gap - 0.1 / 24.0).abs() < 1e-4, "gap {gap}");
        out.clear();
        s.handle_timeout(next, &mut out);
        assert_eq!(seqs(&out), vec![11]);
        let mut t = s.poll_timeout().unwrap();
        for _ in 0..2 {
            s.handle_timeout(t, &mut out);
            t = s.poll_timeout().unwrap();
        }
        assert_eq!(seqs(&out), vec![11, 12, 13]);
        // The window is full: only the retransmission timer is left.
        assert!(t >= next + Duration::from_millis(200), "{t:?}");
    }
}
