//! Linux's reordering response (`sender::reorder`): the duplicate-ACK
//! threshold follows measured reordering, and timestamps undo a recovery
//! the original transmissions made unnecessary.

use super::*;

fn linux(init_cwnd: u32) -> TcpConfig {
    TcpConfig {
        sack: true,
        timestamps: true,
        reordering: true,
        ..cfg(init_cwnd, 0)
    }
}

/// Packet 0 arrives after 1..=6: the third duplicate starts a recovery,
/// the original's timestamp undoes it, and the six packets that overtook
/// it make six duplicates the threshold from then on. Packets 7..=10
/// arriving ahead of 6 then start no recovery; without the option they do.
#[test]
fn reordering_seen_raises_the_duplicate_ack_threshold() {
    for on in [false, true] {
        let c = TcpConfig {
            reordering: on,
            ..linux(20)
        };
        let mut s = TcpSender::new(c, 0, None);
        let mut out = Vec::new();
        s.start(ms(0), &mut out);
        let original = out[0].tsval;
        out.clear();
        for k in 2..=7 {
            s.on_ack(ms(100), &sack_ack(0, &[(1, k)]), &mut out);
        }
        assert_eq!(s.stats().fast_retransmits, 1);
        let mut a = ack(7);
        a.tsecr = Some(original);
        s.on_ack(ms(150), &a, &mut out);
        assert_eq!(s.in_recovery(), !on, "reordering {on}");
        // Everything acknowledged (leaving any recovery), then one more.
        s.on_ack(ms(150), &ack(s.snd_max()), &mut out);
        s.on_ack(ms(160), &ack(s.snd_una() + 1), &mut out);
        assert!(s.snd_max() > s.snd_una() + 6);
        let before = s.stats().fast_retransmits;
        let una = s.snd_una();
        for k in 2..=5 {
            s.on_ack(ms(200), &sack_ack(una, &[(una + 1, una + k)]), &mut out);
        }
        let fr = s.stats().fast_retransmits - before;
        assert_eq!(fr, if on { 0 } else { 1 }, "reordering {on}");
    }
}

/// A fast retransmit of packet 0, then the *original* 0 arrives: the ACK
/// echoes its timestamp, older than the retransmission, so the recovery
/// was spurious and the window it halved comes back.
#[test]
fn timestamps_undo_a_spurious_fast_retransmit() {
    let mut s = TcpSender::new(linux(10), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    let original = out[0].tsval;
    out.clear();
    for k in 2..=4 {
        s.on_ack(ms(100), &sack_ack(0, &[(1, k)]), &mut out);
    }
    assert!(s.in_recovery());
    assert_eq!(s.cwnd(), 5.0);
    let mut a = sack_ack(4, &[]);
    a.tsecr = Some(original);
    s.on_ack(ms(150), &a, &mut out);
    assert!(!s.in_recovery());
    assert!(s.cwnd() >= 10.0, "cwnd {}", s.cwnd());
    assert_eq!(s.stats().undos, 1);
}

/// The retransmission, not the original, fills the hole: the echo is the
/// retransmission's, the loss was real and the window stays halved.
#[test]
fn a_real_loss_is_not_undone() {
    let mut s = TcpSender::new(linux(10), 0, None);
    let mut out = Vec::new();
    s.start(ms(0), &mut out);
    out.clear();
    for k in 2..=4 {
        s.on_ack(ms(100), &sack_ack(0, &[(1, k)]), &mut out);
    }
    let rtx = out
        .iter()
        .find(|x| x.retransmit)
        .expect("retransmitted")
        .tsval;
    let mut a = sack_ack(10, &[]);
    a.tsecr = Some(rtx);
    s.on_ack(ms(300), &a, &mut out);
    assert!(!s.in_recovery());
    assert!(s.cwnd() < 6.0, "cwnd {}", s.cwnd());
    assert_eq!(s.stats().undos, 0);
}
