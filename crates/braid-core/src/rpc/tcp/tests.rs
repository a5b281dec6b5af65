use super::*;
use crate::time::Duration;

const A: [u8; 4] = [10, 99, 0, 2];
const B: [u8; 4] = [10, 78, 0, 2];
const ISN: u32 = 0xffff_f000; // wraps within the test's byte range
const MSS: u32 = 1000;
const L0: PathId = PathId(0);
const L1: PathId = PathId(1);

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

/// An IPv4 TCP packet from `src` to `dst` with the given fields, SACK
/// blocks (as an option after two NOPs) and payload, checksummed.
fn packet(
    src: [u8; 4],
    dst: [u8; 4],
    seq: u32,
    ack: u32,
    sack: &[(u32, u32)],
    payload: usize,
) -> Vec<u8> {
    let mut opts = Vec::new();
    if !sack.is_empty() {
        opts.extend_from_slice(&[
            TCP_OPT_NOP,
            TCP_OPT_NOP,
            TCP_OPT_SACK,
            2 + 8 * sack.len() as u8,
        ]);
        for &(l, r) in sack {
            opts.extend_from_slice(&l.to_be_bytes());
            opts.extend_from_slice(&r.to_be_bytes());
        }
    }
    let hlen = 20 + opts.len();
    let total = 20 + hlen + payload;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = PROTO_TCP;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    let t = &mut p[20..];
    t[0..2].copy_from_slice(&5001u16.to_be_bytes());
    t[2..4].copy_from_slice(&40000u16.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = ((hlen / 4) as u8) << 4;
    t[13] = FLAG_ACK;
    t[20..20 + opts.len()].copy_from_slice(&opts);
    let h = parse(&p).unwrap();
    fix_checksum(&mut p, &h);
    p
}

/// Data segment `k` (MSS bytes) from B to A.
fn data(k: u32) -> Vec<u8> {
    let mut p = packet(B, A, ISN.wrapping_add(k * MSS), 1, &[], MSS as usize);
    // Ports of the data direction.
    p[20..22].copy_from_slice(&40000u16.to_be_bytes());
    p[22..24].copy_from_slice(&5001u16.to_be_bytes());
    let h = parse(&p).unwrap();
    fix_checksum(&mut p, &h);
    p
}

/// The receiver's ACK: next byte expected after segment `cum`, SACK
/// blocks in segments.
fn ack(cum: u32, sack: &[(u32, u32)]) -> Vec<u8> {
    let s: Vec<(u32, u32)> = sack
        .iter()
        .map(|&(l, r)| (ISN.wrapping_add(l * MSS), ISN.wrapping_add(r * MSS)))
        .collect();
    packet(A, B, 1, ISN.wrapping_add(cum * MSS), &s, 0)
}

fn checksum_ok(p: &[u8]) -> bool {
    let h = parse(p).unwrap();
    let mut q = p.to_vec();
    fix_checksum(&mut q, &h);
    q == p
}

fn ack_value(p: &[u8]) -> u32 {
    parse(p).unwrap().ack
}

fn drain(r: &mut TcpRpc) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| r.poll_release()).collect()
}

fn rpc() -> TcpRpc {
    TcpRpc::new(RpcConfig {
        capacity: 64,
        loss_detection: true,
        max_hold: Some(Duration::from_millis(500)),
    })
}

/// Segment 1 (on the slower link) arrives after 2 and 3: the receiver's
/// two duplicate ACKs with SACK blocks are held, and come out rewritten
/// (in-order byte values, no SACK, valid checksums) when 1 arrives.
#[test]
fn duplicate_acks_from_reordering_are_held_and_rewritten() {
    let mut r = rpc();
    r.on_data_sent(at(0), &data(0), L0);
    r.on_data_sent(at(0), &data(1), L1);
    r.on_data_sent(at(0), &data(2), L0);
    r.on_data_sent(at(0), &data(3), L0);
    let a = ack(1, &[]);
    assert_eq!(r.handle_packet(at(10), a.clone()), None);
    assert_eq!(drain(&mut r), vec![a], "an advancing ACK passes as it is");
    assert_eq!(r.handle_packet(at(11), ack(1, &[(2, 3)])), None);
    assert_eq!(r.handle_packet(at(12), ack(1, &[(2, 4)])), None);
    assert!(drain(&mut r).is_empty(), "duplicate ACKs are held");
    assert_eq!(r.held(), 2);
    assert_eq!(r.handle_packet(at(20), ack(4, &[])), None);
    let out = drain(&mut r);
    let values: Vec<u32> = out.iter().map(|p| ack_value(p)).collect();
    let seg = |k: u32| ISN.wrapping_add(k * MSS);
    assert_eq!(values, vec![seg(2), seg(3), seg(4)]);
    for p in &out {
        assert!(checksum_ok(p), "checksum recomputed");
        let h = parse(p).unwrap();
        assert_eq!(
            sack_blocks(&p[h.l4 + 20..h.l4 + h.hlen]).1,
            0,
            "SACK blanked"
        );
    }
    assert!(r.poll_event().is_some(), "identifications reported");
    assert_eq!(r.stats().losses_detected, 0);
    // Every ACK of the in-order stream counts, the advancing ones too.
    assert_eq!(r.stats().rewritten, 4);
}

/// Segment 0 is lost on link 0 and segment 2, sent after it on the same
/// link, arrives: a per-link loss (FIFO links, Section 5.2.3), reported
/// for the scheduler, and the duplicate ACK goes to the sender unchanged
/// so that its own loss recovery starts.
#[test]
fn a_loss_on_a_link_is_reported_and_acks_pass_unchanged() {
    let mut r = rpc();
    r.on_data_sent(at(0), &data(0), L0);
    r.on_data_sent(at(0), &data(1), L1);
    r.on_data_sent(at(0), &data(2), L0);
    let d = ack(0, &[(2, 3)]);
    assert_eq!(r.handle_packet(at(10), d.clone()), None);
    assert_eq!(drain(&mut r), vec![d]);
    let evs: Vec<RpcEvent> = std::iter::from_fn(|| r.poll_event()).collect();
    assert!(
        evs.contains(&RpcEvent::Lost { seq: 0, link: L0 }),
        "{evs:?}"
    );
    assert_eq!(r.stats().losses_detected, 1);
}

/// A held ACK whose hole never fills is released by the hold bound.
#[test]
fn the_hold_bound_releases_a_stuck_ack() {
    let mut r = rpc();
    r.on_data_sent(at(0), &data(0), L0);
    r.on_data_sent(at(0), &data(1), L1);
    assert_eq!(r.handle_packet(at(10), ack(0, &[(1, 2)])), None);
    assert!(drain(&mut r).is_empty());
    let t = r.poll_timeout().expect("a hold timer");
    assert!(t <= at(10 + 500));
    r.handle_timeout(t);
    assert_eq!(drain(&mut r).len(), 1);
    assert_eq!(r.held(), 0);
}

/// Packets of other connections, data-carrying ACKs and malformed
/// packets pass through untouched.
#[test]
fn other_packets_pass_through() {
    let mut r = rpc();
    r.on_data_sent(at(0), &data(0), L0);
    let mut other = ack(0, &[(1, 2)]);
    other[12] = 1; // another source
    assert_eq!(r.handle_packet(at(1), other.clone()), Some(other));
    let with_data = packet(A, B, 1, ISN, &[], 10);
    assert_eq!(r.handle_packet(at(1), with_data.clone()), Some(with_data));
    let short = vec![0x45u8; 10];
    assert_eq!(r.handle_packet(at(1), short.clone()), Some(short));
    let mut bad = ack(1, &[]);
    bad[2..4].copy_from_slice(&1000u16.to_be_bytes()); // longer than it is
    assert_eq!(r.handle_packet(at(1), bad.clone()), Some(bad));
}

/// Connections beyond `MAX_FLOWS` push out the least recently active,
/// whose held ACKs are forwarded rather than lost.
#[test]
fn flows_are_bounded() {
    let mut r = rpc();
    r.on_data_sent(at(0), &data(0), L0);
    r.on_data_sent(at(0), &data(1), L1);
    assert_eq!(r.handle_packet(at(1), ack(0, &[(1, 2)])), None);
    assert_eq!(r.held(), 1);
    for i in 0..MAX_FLOWS as u8 {
        let mut d = data(0);
        d[16] = 20 + i;
        let h = parse(&d).unwrap();
        fix_checksum(&mut d, &h);
        r.on_data_sent(at(2 + u64::from(i)), &d, L0);
    }
    assert_eq!(r.flows.len(), MAX_FLOWS);
    assert_eq!(r.held(), 0);
    assert_eq!(drain(&mut r).len(), 1, "the held ACK was forwarded");
}

/// Puts a timestamp option with `tsval` into an ACK built by [`ack`]
/// (over its two leading NOPs and SACK option's start is not possible, so
/// the packet is rebuilt with the option appended).
fn with_tsval(p: &[u8], tsval: u32) -> Vec<u8> {
    let h = parse(p).unwrap();
    let mut opts = p[h.l4 + 20..h.l4 + h.hlen].to_vec();
    opts.extend_from_slice(&[TCP_OPT_NOP, TCP_OPT_NOP, TCP_OPT_TIMESTAMP, 10]);
    opts.extend_from_slice(&tsval.to_be_bytes());
    opts.extend_from_slice(&7u32.to_be_bytes());
    let hlen = 20 + opts.len();
    let total = 20 + hlen;
    let mut q = p[..40].to_vec();
    q.extend_from_slice(&opts);
    q[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    q[20 + 12] = ((hlen / 4) as u8) << 4;
    let h = parse(&q).unwrap();
    fix_checksum(&mut q, &h);
    q
}

fn tsval(p: &[u8]) -> u32 {
    let h = parse(p).unwrap();
    let at = h.l4 + 20 + tsval_at(&p[h.l4 + 20..h.l4 + h.hlen]).unwrap();
    u32::from_be_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

/// Released ACKs never carry a timestamp older than one released before
/// them: the sender's PAWS check would discard them.
#[test]
fn released_acks_keep_timestamps_in_order() {
    let mut r = rpc();
    r.on_data_sent(at(0), &data(0), L1);
    r.on_data_sent(at(0), &data(1), L0);
    r.on_data_sent(at(0), &data(2), L0);
    // Segments 1 and 2 (fast link) arrive first: two held duplicates.
    assert_eq!(
        r.handle_packet(at(10), with_tsval(&ack(0, &[(1, 2)]), 100)),
        None
    );
    assert_eq!(
        r.handle_packet(at(11), with_tsval(&ack(0, &[(1, 3)]), 101)),
        None
    );
    assert!(drain(&mut r).is_empty());
    // Segment 0 arrives: its ACK, the newest, goes out first, then the
    // held ones it releases, which would otherwise carry older TSvals.
    assert_eq!(r.handle_packet(at(20), with_tsval(&ack(3, &[]), 150)), None);
    let out = drain(&mut r);
    let ts: Vec<u32> = out.iter().map(|p| tsval(p)).collect();
    assert_eq!(ts, vec![150, 150, 150]);
    let seg = |k: u32| ISN.wrapping_add(k * MSS);
    let values: Vec<u32> = out.iter().map(|p| ack_value(p)).collect();
    assert_eq!(values, vec![seg(1), seg(2), seg(3)]);
    for p in &out {
        assert!(checksum_ok(p));
    }
}

/// Segment 2 left the sender but never crossed the tunnel (dropped before
/// a path). No released ACK may acknowledge it: the sender would free
/// data the receiver never got and stall for good. And while it is the
/// hole, duplicate ACKs pass as they came so the sender resends it.
#[test]
fn bytes_the_tunnel_never_carried_are_never_acknowledged() {
    let mut r = rpc();
    let seg = |k: u32| ISN.wrapping_add(k * MSS);
    r.on_data_sent(at(0), &data(0), L0);
    r.on_data_sent(at(0), &data(1), L1);
    // data(2) is dropped inside the tunnel.
    r.on_data_sent(at(0), &data(3), L0);
    r.on_data_sent(at(0), &data(4), L0);
    assert_eq!(r.handle_packet(at(10), ack(1, &[])), None);
    assert_eq!(drain(&mut r).len(), 1);
    // 3 arrives before 1 (reordering): held.
    assert_eq!(r.handle_packet(at(11), ack(1, &[(3, 4)])), None);
    assert!(
        drain(&mut r).is_empty(),
        "a duplicate from reordering is held"
    );
    // 1 arrives: the receiver acknowledges up to 2, the hole it never got.
    assert_eq!(r.handle_packet(at(20), ack(2, &[(3, 4)])), None);
    let out = drain(&mut r);
    assert!(!out.is_empty());
    for p in &out {
        assert!(
            ack_value(p).wrapping_sub(seg(2)) as i32 <= 0,
            "released ACK {:#x} acknowledges bytes past {:#x}, which the receiver lacks",
            ack_value(p),
            seg(2)
        );
        assert!(checksum_ok(p));
    }
    // 4 arrives: the hole is the unsent segment, so the duplicate goes to
    // the sender at once, with its SACK blocks.
    let d = ack(2, &[(3, 5)]);
    assert_eq!(r.handle_packet(at(21), d.clone()), None);
    assert_eq!(drain(&mut r), vec![d]);
    assert_eq!(r.held(), 0);
    // The sender resends 2, through the tunnel this time; the receiver has
    // everything.
    r.on_data_sent(at(30), &data(2), L1);
    assert_eq!(r.handle_packet(at(40), ack(5, &[])), None);
    let out = drain(&mut r);
    assert_eq!(out.last().map(|p| ack_value(p)), Some(seg(5)));
}
