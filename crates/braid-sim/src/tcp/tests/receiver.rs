//! The receiver: which ACKs it sends, when, and what they carry.

use super::*;

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
