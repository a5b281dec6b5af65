//! What a sender or receiver refuses or holds back, driven directly
//! without paths: bad configuration, packets outside the receiver's
//! window, a packet that does not fit its path's window, and blocks past
//! the span the receiver accepts.

use super::tests::payload;
use super::*;
use crate::time::Instant;

#[test]
fn senders_refuse_bad_configs_and_misuse() {
    assert_eq!(
        Sender::new(SenderConfig::new(0)).err(),
        Some(SenderError::Paths(0))
    );
    assert_eq!(
        Sender::new(SenderConfig::new(17)).err(),
        Some(SenderError::Paths(17))
    );
    let mut c = SenderConfig::new(1);
    c.max_packet = 200;
    assert_eq!(Sender::new(c).err(), Some(SenderError::PacketSize(200)));
    let mut s = Sender::new(SenderConfig::new(1)).unwrap();
    assert_eq!(s.write_virtual(10), Err(SenderError::WrongCoding));
    s.finish();
    assert_eq!(s.write(b"x"), Err(SenderError::Finished));
}

#[test]
fn a_receiver_refuses_what_it_cannot_hold() {
    let mut r = Receiver::new(ReceiverConfig::new(2, 0));
    let h = DataHeader {
        fin: false,
        virtual_shard: false,
        path: 0,
        pos: 0,
        data: 2,
        total: 4,
        shard_len: 4,
        block: 500,
        seq: 0,
        offset: 0,
        block_bytes: 8,
    };
    // One packet, ECN-marked or not, arriving now.
    let feed = |r: &mut Receiver, ce: bool, header: DataHeader, shard: &[u8]| {
        r.handle_data(Instant::ZERO, ce, &DataView { header, shard })
    };
    assert!(matches!(
        feed(&mut r, false, h, &[1, 2, 3, 4]),
        Err(RecvError::Window { .. })
    ));
    let h2 = DataHeader {
        path: 5,
        block: 0,
        ..h
    };
    assert_eq!(feed(&mut r, false, h2, &[0; 4]), Err(RecvError::Path(5)));
    let ok = DataHeader { block: 0, ..h };
    feed(&mut r, true, ok, &[1; 4]).unwrap();
    let (_, ack) = r.poll_ack().unwrap();
    assert_eq!((ack.have, ack.decoded, ack.ce_paths), (1, false, 1));
    let bad = DataHeader {
        block: 0,
        pos: 1,
        offset: 9,
        ..h
    };
    assert_eq!(
        feed(&mut r, false, bad, &[1; 4]),
        Err(RecvError::Inconsistent(0))
    );
    // The parity position completes the block: F = 2 distinct packets.
    let p = DataHeader {
        block: 0,
        pos: 3,
        ..h
    };
    let code = crate::fec::BlockCode::new(2, 2).unwrap();
    let parity = code.encode(&[[1u8; 4], [1u8; 4]]).unwrap();
    feed(&mut r, false, p, &parity[1]).unwrap();
    let (_, ack) = r.poll_ack().unwrap();
    // The CE mark of the first packet is echoed a second time, then no more.
    assert!(ack.decoded && ack.cum_block == 1 && ack.ce_paths == 1);
    assert_eq!(r.poll_read().unwrap().data, vec![1u8; 8]);
}

/// A path sends a packet only when the whole packet fits its window: a
/// 3000-byte window takes five 550-byte packets (2750 bytes), not a sixth
/// that would carry the flight to 3300 because 250 bytes were still free.
#[test]
fn a_window_is_never_overshot_by_a_packet() {
    let mut c = SenderConfig::new(1);
    c.cc.initial_window = 4;
    c.large_packet = None;
    let mut s = Sender::new(c).unwrap();
    s.write(&payload(100_000, 1)).unwrap();
    let now = Instant::ZERO;
    let mut sizes = Vec::new();
    while let Some(t) = s.poll_transmit(now).unwrap() {
        sizes.push(t.size);
    }
    let window = s.path(0).window();
    assert_eq!(window, 3000.0);
    assert_eq!(sizes, vec![550; 5], "sent {sizes:?}");
    assert!(s.path(0).in_flight as f64 <= window);
}

/// A block held (on a far or lossy path) while the blocks after it
/// decode: the sender bounds the span from its oldest unrecovered block,
/// which the receiver's window counts from, not the number of
/// unrecovered blocks, which here drops to one.
#[test]
fn a_held_block_bounds_the_blocks_after_it() {
    let mut cfg = SenderConfig::new(1);
    cfg.cc.initial_window = 40;
    cfg.max_blocks = 3;
    cfg.max_block_data = 5;
    let mut s = Sender::new(cfg).unwrap();
    s.write(&payload(200_000, 2)).unwrap();
    let t0 = Instant::ZERO;
    let mut sent = Vec::new();
    while let Some(t) = s.poll_transmit(t0).unwrap() {
        sent.push(t.header);
    }
    assert!(sent.iter().all(|h| h.block < 3), "{sent:?}");
    assert!(sent.iter().any(|h| h.block == 2));
    // Blocks 1 and 2 arrive whole and decode; block 0 is held.
    let t1 = Instant::from_millis(50);
    for h in sent.clone().iter().filter(|h| h.block > 0) {
        let ack = wire::Ack {
            path: 0,
            pos: h.pos,
            have: h.data,
            decoded: true,
            ce_paths: 0,
            block: h.block,
            cum_block: 0,
            seq: h.seq,
        };
        s.handle_ack(t1, &ack);
    }
    assert_eq!(s.unrecovered(), 1);
    while let Some(t) = s.poll_transmit(t1).unwrap() {
        sent.push(t.header);
    }
    let newest = sent.iter().map(|h| h.block).max().unwrap();
    assert!(
        newest < 3,
        "block {newest} sent while block 0 is unrecovered"
    );
}
