//! Property tests of the wire format: decoding arbitrary bytes never panics,
//! emit -> decode round-trips every frame type, and sequence-number
//! extension recovers any value within half the serial space of its
//! reference.

use braid_core::path::PathId;
use braid_core::wire::{
    decode, emit_feedback, feedback_len, feedback_max_len, seq, Control, DataFlags, DataHeader,
    FeedbackEntry, Frame, Keepalive, WireError, MAX_FEEDBACK_ENTRIES,
};
use braid_core::wire::{
    emit_nack, nack_len, NackRange, NackRate, MAX_NACK_RANGES, MAX_NACK_RATES, TYPE_NACK,
};
use proptest::prelude::*;

fn arb_header() -> impl Strategy<Value = DataHeader> {
    (0..=DataFlags::ALL, any::<u8>(), any::<u16>(), any::<u32>()).prop_map(
        |(flags, path, prev_delta, seq)| DataHeader {
            // At most one of the two header forms.
            flags: DataFlags(if flags & DataFlags::INSTALL != 0 {
                flags & !DataFlags::COMPRESSED
            } else {
                flags
            }),
            path: PathId(path),
            prev_delta,
            seq,
        },
    )
}

fn arb_range() -> impl Strategy<Value = NackRange> {
    (any::<u8>(), any::<Option<u32>>(), any::<u32>()).prop_map(|(path, after, upto)| NackRange {
        path: PathId(path),
        after,
        upto,
    })
}

fn arb_rate() -> impl Strategy<Value = NackRate> {
    (any::<u8>(), any::<u16>()).prop_map(|(path, loss)| NackRate {
        path: PathId(path),
        loss,
    })
}

fn arb_entry() -> impl Strategy<Value = FeedbackEntry> {
    (any::<u32>(), any::<u64>()).prop_map(|(seq, rx_time_ns)| FeedbackEntry { seq, rx_time_ns })
}

fn arb_keepalive() -> impl Strategy<Value = Keepalive> {
    (any::<u8>(), any::<u32>(), any::<u64>()).prop_map(|(path, id, tx_time_ns)| Keepalive {
        path: PathId(path),
        id,
        tx_time_ns,
    })
}

/// Touches every accessor of a decoded frame.
fn exercise(frame: &Frame<'_>) -> usize {
    match frame {
        Frame::Data(h, payload) => h.seq as usize + payload.len(),
        Frame::Feedback(v) => {
            let n = v.entries().map(|e| e.seq as usize & 1).sum::<usize>();
            assert_eq!(v.entries().count(), v.len());
            assert!(v.len() <= MAX_FEEDBACK_ENTRIES);
            n + v.len()
        }
        Frame::Keepalive(k) | Frame::KeepaliveAck(k) => k.id as usize,
        Frame::Control(c) => c.kind as usize + c.body.len(),
        Frame::Nack(v) => {
            assert!(v.ranges().len() <= MAX_NACK_RANGES);
            assert!(v.rates().len() <= MAX_NACK_RATES);
            v.ranges().map(|r| r.upto as usize & 1).sum::<usize>()
                + v.rates().map(|r| r.loss as usize).sum::<usize>()
        }
        Frame::Parity(h, shard) => {
            assert!(h.is_valid() && shard.len() >= 2);
            h.index as usize + shard.len()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn decode_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        if let Ok(frame) = decode(&bytes) {
            exercise(&frame);
        }
    }

    #[test]
    fn decode_typed_garbage_never_panics(
        ty in 0u8..=6,
        rest in proptest::collection::vec(any::<u8>(), 0..(feedback_max_len(MAX_FEEDBACK_ENTRIES) + 16)),
    ) {
        // Arbitrary bytes rarely start with a valid type; force one.
        let mut bytes = vec![ty];
        bytes.extend_from_slice(&rest);
        match decode(&bytes) {
            Ok(Frame::Feedback(v)) => {
                // Strict decoding: one encoding per frame, so what decodes
                // re-encodes to the same bytes.
                let entries: Vec<FeedbackEntry> = v.entries().collect();
                let mut again = vec![0u8; feedback_len(&entries)];
                emit_feedback(v.path, &entries, &mut again).unwrap();
                prop_assert_eq!(again, bytes);
            }
            Ok(frame) => { exercise(&frame); }
            Err(WireError::Truncated { need, got }) => {
                prop_assert_eq!(got, bytes.len());
                prop_assert!(need > got);
            }
            Err(WireError::TrailingBytes(n)) => prop_assert!(n > 0 && n < bytes.len()),
            Err(_) => {}
        }
    }

    #[test]
    fn data_round_trip(h in arb_header(), payload in proptest::collection::vec(any::<u8>(), 0..1500)) {
        let mut buf = vec![0u8; DataHeader::LEN + payload.len()];
        h.emit(&mut buf).unwrap();
        buf[DataHeader::LEN..].copy_from_slice(&payload);
        prop_assert_eq!(decode(&buf), Ok(Frame::Data(h, &payload[..])));
    }

    #[test]
    fn data_with_undefined_flags_is_rejected(h in arb_header()) {
        let bad = DataHeader { flags: DataFlags(h.flags.0 | 0x80), ..h };
        let mut buf = [0u8; DataHeader::LEN];
        prop_assert!(matches!(bad.emit(&mut buf), Err(WireError::BadFlags(_))));
        h.emit(&mut buf).unwrap();
        buf[1] = bad.flags.0;
        prop_assert_eq!(decode(&buf), Err(WireError::BadFlags(0x80)));
        // Both header forms at once are refused the same way.
        buf[1] = h.flags.0 | DataFlags::INSTALL | DataFlags::COMPRESSED;
        let both = DataFlags::INSTALL | DataFlags::COMPRESSED;
        prop_assert_eq!(decode(&buf), Err(WireError::BadFlags(both)));
    }

    #[test]
    fn feedback_round_trip(
        path in any::<u8>(),
        entries in proptest::collection::vec(arb_entry(), 0..=MAX_FEEDBACK_ENTRIES),
        slack in 0usize..32,
    ) {
        let mut buf = vec![0u8; feedback_len(&entries) + slack];
        let n = emit_feedback(PathId(path), &entries, &mut buf).unwrap();
        prop_assert_eq!(n, feedback_len(&entries));
        prop_assert!(n <= feedback_max_len(entries.len()));
        match decode(&buf[..n]) {
            Ok(Frame::Feedback(v)) => {
                prop_assert_eq!(v.path, PathId(path));
                prop_assert_eq!(v.len(), entries.len());
                prop_assert_eq!(v.entries().collect::<Vec<_>>(), entries);
            }
            other => prop_assert!(false, "unexpected {:?}", other),
        }
        if slack > 0 {
            prop_assert_eq!(decode(&buf), Err(WireError::TrailingBytes(slack)));
        }
    }

    #[test]
    fn feedback_of_close_arrivals_is_compact(
        start in any::<u32>(),
        t0 in any::<u64>(),
        steps in proptest::collection::vec((1u32..100, 0u64..2_000_000), 0..MAX_FEEDBACK_ENTRIES),
    ) {
        let mut entries = vec![FeedbackEntry { seq: start, rx_time_ns: t0 }];
        for (ds, dt) in steps {
            let last = *entries.last().unwrap();
            entries.push(FeedbackEntry {
                seq: last.seq.wrapping_add(ds),
                rx_time_ns: last.rx_time_ns.wrapping_add(dt),
            });
        }
        let n = feedback_len(&entries);
        // At most 1 + 3 bytes per entry after the first.
        prop_assert!(n <= 3 + 12 + 4 * (entries.len() - 1));
        let mut buf = vec![0u8; n];
        emit_feedback(PathId(1), &entries, &mut buf).unwrap();
        match decode(&buf) {
            Ok(Frame::Feedback(v)) => prop_assert_eq!(v.entries().collect::<Vec<_>>(), entries),
            other => prop_assert!(false, "unexpected {:?}", other),
        }
        for cut in 3..n {
            let truncated = matches!(decode(&buf[..cut]), Err(WireError::Truncated { .. }));
            prop_assert!(truncated, "cut at {}", cut);
        }
    }

    #[test]
    fn feedback_too_small_buffer(entries in proptest::collection::vec(arb_entry(), 0..=MAX_FEEDBACK_ENTRIES), short in 1usize..12) {
        let need = feedback_len(&entries);
        let mut buf = vec![0u8; need.saturating_sub(short)];
        prop_assert_eq!(emit_feedback(PathId(0), &entries, &mut buf), Err(WireError::BufferTooSmall { need }));
    }

    #[test]
    fn keepalive_round_trip(k in arb_keepalive(), ack in any::<bool>()) {
        let mut buf = [0u8; Keepalive::LEN];
        k.emit(ack, &mut buf).unwrap();
        let expected = if ack { Frame::KeepaliveAck(k) } else { Frame::Keepalive(k) };
        prop_assert_eq!(decode(&buf), Ok(expected));
    }

    #[test]
    fn control_round_trip(kind in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..600)) {
        let c = Control { kind, body: &body };
        let mut buf = vec![0u8; c.buffer_len()];
        prop_assert_eq!(c.emit(&mut buf), Ok(Control::HEADER_LEN + body.len()));
        prop_assert_eq!(decode(&buf), Ok(Frame::Control(c)));
    }

    #[test]
    fn seq_extend_round_trips_within_half_space(reference in any::<u64>(), off in -(1i64 << 31) + 1..=(1i64 << 31)) {
        let v = reference as i128 + off as i128;
        prop_assume!(v >= 0 && v <= u64::MAX as i128);
        let v = v as u64;
        prop_assert_eq!(seq::extend(v as u32, reference), v);
    }

    #[test]
    fn seq_extend_small_references(reference in 0u64..(1u64 << 34), off in -(1i64 << 31) + 1..=(1i64 << 31)) {
        // Concentrate on references near zero, where underflow is possible.
        let v = reference as i128 + off as i128;
        prop_assume!(v >= 0);
        let v = v as u64;
        prop_assert_eq!(seq::extend(v as u32, reference), v);
    }

    #[test]
    fn seq_extend_is_a_candidate_and_nearest(wire in any::<u32>(), reference in any::<u64>()) {
        let v = seq::extend(wire, reference);
        prop_assert_eq!(v as u32, wire);
        let dist = (v as i128 - reference as i128).abs();
        // Nearest, unless the nearest would leave the u64 range.
        if ((1u64 << 32)..=u64::MAX - (1 << 32)).contains(&reference) {
            prop_assert!(dist <= 1 << 31);
        } else {
            prop_assert!(dist < 1 << 32);
        }
    }

    #[test]
    fn nack_round_trips(
        ranges in proptest::collection::vec(arb_range(), 0..=MAX_NACK_RANGES),
        rates in proptest::collection::vec(arb_rate(), 0..=MAX_NACK_RATES),
    ) {
        let mut buf = vec![0u8; nack_len(ranges.len(), rates.len())];
        let n = emit_nack(&ranges, &rates, &mut buf).unwrap();
        prop_assert_eq!(n, buf.len());
        let Ok(Frame::Nack(v)) = decode(&buf) else {
            return Err(TestCaseError::fail("not a nack"));
        };
        prop_assert_eq!(v.ranges().collect::<Vec<_>>(), ranges);
        prop_assert_eq!(v.rates().collect::<Vec<_>>(), rates);
    }

    /// Arbitrary bytes behind a NACK type byte never panic, and whatever
    /// decodes re-encodes to the same bytes.
    #[test]
    fn nack_arbitrary_bodies_decode_exactly(body in proptest::collection::vec(any::<u8>(), 0..400), version_ok in any::<bool>()) {
        let mut bytes = vec![TYPE_NACK];
        bytes.extend_from_slice(&body);
        if version_ok && bytes.len() > 1 {
            bytes[1] = braid_core::wire::NACK_VERSION;
        }
        if let Ok(Frame::Nack(v)) = decode(&bytes) {
            let ranges: Vec<NackRange> = v.ranges().collect();
            let rates: Vec<NackRate> = v.rates().collect();
            let mut out = vec![0u8; bytes.len()];
            let n = emit_nack(&ranges, &rates, &mut out).unwrap();
            prop_assert_eq!(&out[..n], &bytes[..]);
        }
    }

    /// Arbitrary bytes behind a parity type byte never panic, and whatever
    /// decodes re-encodes to the same bytes.
    #[test]
    fn parity_arbitrary_bodies_decode_exactly(body in proptest::collection::vec(any::<u8>(), 0..300), version_ok in any::<bool>()) {
        let mut bytes = vec![braid_core::wire::TYPE_PARITY];
        bytes.extend_from_slice(&body);
        if version_ok && bytes.len() > 1 {
            bytes[1] = braid_core::wire::PARITY_VERSION;
        }
        if let Ok(Frame::Parity(h, shard)) = decode(&bytes) {
            let mut out = vec![0u8; bytes.len()];
            let n = h.emit(shard, &mut out).unwrap();
            prop_assert_eq!(&out[..n], &bytes[..]);
        }
    }
}
