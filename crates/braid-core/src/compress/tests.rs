//! The header codec on byte arrays, its refusals, round trips of
//! generated packets, decoders on arbitrary bytes, and the contexts'
//! life cycle.

use super::header::{self, CompressError, FlowKey, Varying};
use super::*;
use proptest::prelude::*;

/// A Linux-like TCP segment with timestamps: 10.77.0.2:40000 ->
/// 198.51.100.7:5201, DF, TTL 64, ECT(0), ACK|PSH, 3 payload bytes.
fn segment() -> Vec<u8> {
    let mut p = vec![
        0x45, 0x02, 0x00, 0x37, // ver/ihl, tos ECT(0), total 55
        0x12, 0x34, 0x40, 0x00, // id, DF
        0x40, 0x06, 0x00, 0x00, // ttl 64, tcp, checksum (below)
        10, 77, 0, 2, // src
        198, 51, 100, 7, // dst
        0x9c, 0x40, 0x14, 0x51, // ports 40000 -> 5201
        0xde, 0xad, 0xbe, 0xef, // seq
        0x01, 0x02, 0x03, 0x04, // ack
        0x80, 0x18, 0x01, 0xf5, // doff 8, ACK|PSH, window 501
        0xab, 0xcd, 0x00, 0x00, // tcp checksum, urgent 0
        0x01, 0x01, 0x08, 0x0a, // NOP NOP TS
        0x00, 0x00, 0x00, 0x11, // tsval
        0x00, 0x00, 0x00, 0x22, // tsecr
        b'a', b'b', b'c',
    ];
    seal(&mut p);
    p
}

/// Writes a correct IPv4 header checksum.
fn seal(p: &mut [u8]) {
    header::write_ipv4_checksum(p);
}

fn at(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

#[test]
fn a_segment_compresses_to_the_documented_bytes() {
    let p = segment();
    let s = header::split(&p).expect("compressible");
    assert_eq!(
        s.key,
        FlowKey {
            src: [10, 77, 0, 2],
            dst: [198, 51, 100, 7],
            src_port: 40000,
            dst_port: 5201,
            ttl: 64,
        }
    );
    assert_eq!(s.payload, b"abc");
    let mut out = Vec::new();
    header::emit(7, &s.varying, s.payload, &mut out);
    #[rustfmt::skip]
    let want = [
        7, 0x03, 0x02, 0x12, 0x34, // cid, ctl TS|DF, tos, ip id
        0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, // seq, ack
        0x18, 0x01, 0xf5, 0xab, 0xcd, // flags, window, tcp checksum
        0, 0, 0, 0x11, 0, 0, 0, 0x22, // tsval, tsecr
        b'a', b'b', b'c',
    ];
    assert_eq!(out, want);
    assert_eq!(p.len() - out.len(), header::MAX_GAIN);
    let mut back = Vec::new();
    header::rebuild(&s.key, &s.varying, s.payload, &mut back).unwrap();
    assert_eq!(back, p);
}

#[test]
fn a_segment_without_options_or_df_round_trips() {
    let mut p = segment();
    // Drop the timestamp option: data offset 5, 12 bytes fewer.
    p.drain(40..52);
    p[32] = 0x50;
    let total = p.len() as u16;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[6] = 0;
    seal(&mut p);
    let s = header::split(&p).expect("compressible");
    assert_eq!(s.varying.timestamps, None);
    assert!(!s.varying.df);
    let mut out = Vec::new();
    header::emit(1, &s.varying, s.payload, &mut out);
    assert_eq!(out.len(), 18 + 3);
    let c = header::parse(&out).unwrap();
    let mut back = Vec::new();
    header::rebuild(&s.key, &c.varying, c.payload, &mut back).unwrap();
    assert_eq!(back, p);
}

/// Whatever would not rebuild byte for byte goes uncompressed.
#[test]
fn split_refuses_what_it_cannot_rebuild() {
    let refused = |f: &dyn Fn(&mut Vec<u8>), reseal: bool| {
        let mut p = segment();
        f(&mut p);
        if reseal {
            seal(&mut p);
        }
        header::split(&p).is_none()
    };
    assert!(refused(&|p| p[0] = 0x46, true), "IPv4 options");
    assert!(refused(&|p| p[9] = 17, true), "UDP");
    assert!(refused(&|p| p[6] = 0x20, true), "more fragments");
    assert!(refused(&|p| p[7] = 1, true), "a fragment offset");
    assert!(
        refused(&|p| p[3] += 1, true),
        "total length not the packet's"
    );
    assert!(refused(&|p| p[10] ^= 1, false), "a wrong header checksum");
    assert!(refused(&|p| p[33] |= 0x20, true), "URG");
    assert!(refused(&|p| p[39] = 1, true), "an urgent pointer");
    assert!(refused(&|p| p[32] |= 0x01, true), "the AE bit");
    assert!(refused(&|p| p[40] = 2, true), "another option layout");
    assert!(refused(&|p| p[32] = 0x90, true), "a longer TCP header");
    assert!(refused(&|p| p.truncate(39), false), "too short");
    assert!(!refused(&|_| {}, false));
}

#[test]
fn parse_checks_length_and_control_bits() {
    let p = segment();
    let s = header::split(&p).unwrap();
    let mut out = Vec::new();
    header::emit(0, &s.varying, s.payload, &mut out);
    assert_eq!(
        header::parse(&out[..25]),
        Err(CompressError::Truncated { need: 26, got: 25 })
    );
    assert_eq!(
        header::parse(&out[..1]),
        Err(CompressError::Truncated { need: 18, got: 1 })
    );
    let mut bad = out.clone();
    bad[1] |= 0x80;
    assert_eq!(header::parse(&bad), Err(CompressError::BadControl(0x80)));
    let mut urg = out;
    urg[13] |= 0x20;
    assert_eq!(header::parse(&urg), Err(CompressError::BadControl(0x20)));
    let v = Varying {
        timestamps: None,
        ..s.varying
    };
    let big = vec![0u8; 65_536 - 40];
    assert_eq!(
        header::rebuild(&s.key, &v, &big, &mut Vec::new()),
        Err(CompressError::TooLong(65_536))
    );
}

/// Installs until one is reported; compressed after; an old
/// generation's report does not confirm a new context.
#[test]
fn a_context_is_compressed_only_after_an_install_was_reported() {
    let p = segment();
    let key = header::split(&p).unwrap().key;
    let mut c = Compressor::default();
    assert_eq!(c.choose(at(0), &key, 10), Form::Install(0));
    assert_eq!(c.choose(at(1), &key, 11), Form::Install(0));
    // A report of another packet confirms nothing.
    c.on_reported(12);
    assert_eq!(c.choose(at(2), &key, 13), Form::Install(0));
    c.on_reported(11);
    assert_eq!(c.choose(at(3), &key, 14), Form::Compressed(0));

    // A second connection gets the next id.
    let other = FlowKey {
        src_port: 40001,
        ..key
    };
    assert_eq!(c.choose(at(4), &other, 15), Form::Install(1));
    assert_eq!(c.contexts(), 2);
}

#[test]
fn ids_are_reused_only_after_the_idle_time() {
    let p = segment();
    let base = header::split(&p).unwrap().key;
    let key = |i: usize| FlowKey {
        src_port: i as u16,
        dst_port: (i >> 16) as u16,
        ..base
    };
    let mut c = Compressor::default();
    for i in 0..CONTEXTS {
        assert_eq!(c.choose(at(0), &key(i), i as u64), Form::Install(i as u8));
    }
    // Connection 0 stays busy; the others go quiet.
    c.choose(at(5_000), &key(0), 1000);
    // Full, and nothing idle long enough: plain.
    assert_eq!(c.choose(at(9_000), &key(500), 1001), Form::Plain);
    // 10 s after the others' last packet, the lowest of them is reused.
    assert_eq!(c.choose(at(10_000), &key(501), 1002), Form::Install(1));
    // Its old connection's install (seq 1) no longer confirms it.
    c.on_reported(1);
    assert_eq!(c.choose(at(10_001), &key(501), 1003), Form::Install(1));
    // The old connection, back, needs a new id.
    assert_eq!(c.choose(at(10_002), &key(1), 1004), Form::Install(2));
    assert_eq!(c.contexts(), CONTEXTS);
}

/// A packet whose first send went plain (every id in use) and whose
/// later copy (a repair) went as an install: a report of its number may
/// be the plain send's, so it confirms nothing.
#[test]
fn only_a_first_send_can_confirm_an_install() {
    let p = segment();
    let base = header::split(&p).unwrap().key;
    let key = |i: usize| FlowKey {
        src_port: i as u16,
        ..base
    };
    let mut c = Compressor::default();
    for i in 0..CONTEXTS {
        c.choose(at(0), &key(i), i as u64);
    }
    let late = key(CONTEXTS);
    assert_eq!(c.choose(at(9_000), &late, 1000), Form::Plain);
    // Its repair, once an id is free again, installs...
    assert_eq!(c.choose(at(10_000), &late, 1000), Form::Install(0));
    // ...but the report of 1000 may be the plain copy's.
    c.on_reported(1000);
    assert_eq!(c.choose(at(10_001), &late, 1001), Form::Install(0));
    c.on_reported(1001);
    assert_eq!(c.choose(at(10_002), &late, 1002), Form::Compressed(0));
}

#[test]
fn pending_installs_are_bounded() {
    let p = segment();
    let key = header::split(&p).unwrap().key;
    let mut c = Compressor::default();
    for seq in 0..(MAX_PENDING_INSTALLS as u64 + 100) {
        c.choose(at(0), &key, seq);
    }
    assert_eq!(c.pending.len(), MAX_PENDING_INSTALLS);
    // The oldest were forgotten; a recent one still confirms.
    c.on_reported(5);
    assert_eq!(c.choose(at(1), &key, 1 << 20), Form::Install(0));
    c.on_reported(MAX_PENDING_INSTALLS as u32 + 50);
    assert_eq!(c.choose(at(2), &key, (1 << 20) + 1), Form::Compressed(0));
}

/// The decompressor learns a context from an install and rebuilds later
/// compressed packets of it; a compressed packet of an id never
/// installed is refused.
#[test]
fn the_decompressor_rebuilds_after_an_install() {
    let p = segment();
    let s = header::split(&p).unwrap();
    let mut d = Decompressor::default();
    let mut compressed = Vec::new();
    emit(Form::Compressed(3), &s, &mut compressed);
    assert_eq!(
        d.rebuild(&compressed, &mut Vec::new()),
        Err(CompressError::UnknownContext(3))
    );
    let mut install = Vec::new();
    emit(Form::Install(3), &s, &mut install);
    assert_eq!(install.len(), p.len() - header::MAX_GAIN + FlowKey::LEN);
    let mut out = Vec::new();
    d.install(&install, &mut out).unwrap();
    assert_eq!(out, p);
    out.clear();
    d.rebuild(&compressed, &mut out).unwrap();
    assert_eq!(out, p);
    // A truncated install teaches nothing.
    let mut d2 = Decompressor::default();
    assert!(d2
        .install(&install[..FlowKey::LEN + 10], &mut Vec::new())
        .is_err());
    assert!(d2.rebuild(&compressed, &mut Vec::new()).is_err());
}

/// Generated IPv4/TCP packets that `split` accepts.
fn packets() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<[u8; 12]>(),
        any::<[u8; 16]>(),
        any::<(u8, u8, bool, bool)>(),
        any::<[u8; 8]>(),
        proptest::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(addr, tcp, (tos, flags, df, ts), tsv, payload)| {
            let opt = if ts { 12 } else { 0 };
            let total = 40 + opt + payload.len();
            let mut p = vec![0u8; total];
            p[0] = 0x45;
            p[1] = tos;
            p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
            p[4..6].copy_from_slice(&tcp[12..14]);
            p[6] = if df { 0x40 } else { 0 };
            p[8] = tcp[14];
            p[9] = 6;
            p[12..20].copy_from_slice(&addr[..8]);
            p[20..24].copy_from_slice(&addr[8..]);
            p[24..32].copy_from_slice(&tcp[..8]);
            p[32] = if ts { 0x80 } else { 0x50 };
            p[33] = flags & !0x20;
            p[34..38].copy_from_slice(&tcp[8..12]);
            if ts {
                p[40..44].copy_from_slice(&[1, 1, 8, 10]);
                p[44..52].copy_from_slice(&tsv);
            }
            p[40 + opt..].copy_from_slice(&payload);
            seal(&mut p);
            p
        })
}

proptest! {
    /// Every packet `split` accepts comes back byte for byte, through an
    /// install and through a compressed frame.
    #[test]
    fn compressible_packets_round_trip(p in packets(), cid in any::<u8>()) {
        let s = header::split(&p).expect("generated to be compressible");
        let mut d = Decompressor::default();
        let (mut install, mut compressed) = (Vec::new(), Vec::new());
        emit(Form::Install(cid), &s, &mut install);
        emit(Form::Compressed(cid), &s, &mut compressed);
        prop_assert!(compressed.len() < p.len() && install.len() < p.len());
        let mut out = Vec::new();
        d.install(&install, &mut out).unwrap();
        prop_assert_eq!(&out, &p);
        out.clear();
        d.rebuild(&compressed, &mut out).unwrap();
        prop_assert_eq!(&out, &p);
    }

    /// The decoders never panic on arbitrary bytes, and what they rebuild
    /// compresses back to the bytes they read.
    #[test]
    fn decoders_take_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
        let mut d = Decompressor::default();
        let mut out = Vec::new();
        if d.install(&bytes, &mut out).is_ok() {
            let s = header::split(&out).expect("a rebuilt packet is compressible");
            let mut again = Vec::new();
            emit(Form::Install(bytes[FlowKey::LEN]), &s, &mut again);
            prop_assert_eq!(&again, &bytes);
        }
        out.clear();
        if d.rebuild(&bytes, &mut out).is_ok() {
            let s = header::split(&out).expect("a rebuilt packet is compressible");
            let mut again = Vec::new();
            emit(Form::Compressed(bytes[0]), &s, &mut again);
            prop_assert_eq!(&again, &bytes);
        }
        let _ = header::split(&bytes);
    }
}
