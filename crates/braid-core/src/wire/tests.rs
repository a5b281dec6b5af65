//! Unit tests of the frame formats: byte arrays parsed and emitted.

use super::*;

static DATA_BYTES: [u8; 12] = [
    0x01, // type
    0x05, // flags: PAIR_FIRST | RETRANSMIT
    0x03, // path
    0x01, 0x02, // prev_delta 0x0102
    0xde, 0xad, 0xbe, 0xef, // seq
    0xaa, 0xbb, 0xcc, // inner packet
];

static FEEDBACK_BYTES: [u8; 19] = [
    0x02, // type
    0x07, // path
    0x02, // count
    0x00, 0x00, 0x00, 0x2a, // seq 42
    0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x42, 0x40, // rx 1_000_000
    0x03, // seq delta 3: seq 45
    0x80, 0x9f, 0x49, // rx delta 1_200_000 (varint): rx 2_200_000
];

static KEEPALIVE_BYTES: [u8; 14] = [
    0x03, // type
    0x09, // path
    0x12, 0x34, 0x56, 0x78, // id
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, // tx time
];

fn data_header() -> DataHeader {
    DataHeader {
        flags: DataFlags(DataFlags::PAIR_FIRST | DataFlags::RETRANSMIT),
        path: PathId(3),
        prev_delta: 0x0102,
        seq: 0xdead_beef,
    }
}

fn feedback_entries() -> [FeedbackEntry; 2] {
    [
        FeedbackEntry {
            seq: 42,
            rx_time_ns: 1_000_000,
        },
        FeedbackEntry {
            seq: 45,
            rx_time_ns: 2_200_000,
        },
    ]
}

fn keepalive() -> Keepalive {
    Keepalive {
        path: PathId(9),
        id: 0x1234_5678,
        tx_time_ns: 0x0000_0001_0000_0002,
    }
}

#[test]
fn test_parse_data() {
    match decode(&DATA_BYTES).unwrap() {
        Frame::Data(h, payload) => {
            assert_eq!(h, data_header());
            assert!(h.flags.has(DataFlags::PAIR_FIRST));
            assert!(h.flags.has(DataFlags::RETRANSMIT));
            assert!(!h.flags.has(DataFlags::PAIR_SECOND));
            assert_eq!(payload, &[0xaa, 0xbb, 0xcc]);
        }
        f => panic!("{f:?}"),
    }
}

#[test]
fn test_parse_data_empty_payload() {
    match decode(&DATA_BYTES[..9]).unwrap() {
        Frame::Data(h, payload) => {
            assert_eq!(h, data_header());
            assert!(payload.is_empty());
        }
        f => panic!("{f:?}"),
    }
}

#[test]
fn test_emit_data() {
    let mut buf = [0u8; 12];
    data_header().emit(&mut buf).unwrap();
    assert_eq!(&buf[..9], &DATA_BYTES[..9]);
    assert_eq!(&buf[9..], &[0, 0, 0], "emit wrote past the header");
}

#[test]
fn test_emit_data_errors() {
    let mut small = [0u8; 8];
    assert_eq!(
        data_header().emit(&mut small),
        Err(WireError::BufferTooSmall { need: 9 })
    );
    assert_eq!(small, [0; 8]);
    let mut buf = [0u8; 9];
    let bad = DataHeader {
        flags: DataFlags(0x91),
        ..data_header()
    };
    assert_eq!(bad.emit(&mut buf), Err(WireError::BadFlags(0x80)));
    let both = DataHeader {
        flags: DataFlags(DataFlags::INSTALL | DataFlags::COMPRESSED),
        ..data_header()
    };
    assert_eq!(both.emit(&mut buf), Err(WireError::BadFlags(0x60)));
}

#[test]
fn test_parse_data_bad_flags() {
    let mut bytes = DATA_BYTES;
    bytes[1] = 0x81;
    assert_eq!(decode(&bytes), Err(WireError::BadFlags(0x80)));
    // The two header forms exclude each other.
    bytes[1] = DataFlags::INSTALL | DataFlags::COMPRESSED;
    assert_eq!(decode(&bytes), Err(WireError::BadFlags(0x60)));
}

#[test]
fn test_parse_feedback() {
    match decode(&FEEDBACK_BYTES).unwrap() {
        Frame::Feedback(v) => {
            assert_eq!(v.path, PathId(7));
            assert_eq!(v.len(), 2);
            assert!(!v.is_empty());
            let entries = v.entries();
            assert_eq!(entries.len(), 2);
            assert!(entries.eq(feedback_entries()));
        }
        f => panic!("{f:?}"),
    }
}

#[test]
fn test_emit_feedback() {
    let mut buf = [0xffu8; 40];
    let n = emit_feedback(PathId(7), &feedback_entries(), &mut buf).unwrap();
    assert_eq!(n, 19);
    assert_eq!(n, feedback_len(&feedback_entries()));
    assert_eq!(&buf[..n], &FEEDBACK_BYTES[..]);
    assert!(buf[n..].iter().all(|&b| b == 0xff));
}

#[test]
fn test_feedback_empty() {
    let mut buf = [0u8; 3];
    assert_eq!(emit_feedback(PathId(1), &[], &mut buf), Ok(3));
    assert_eq!(buf, [0x02, 0x01, 0x00]);
    match decode(&buf).unwrap() {
        Frame::Feedback(v) => {
            assert!(v.is_empty());
            assert_eq!(v.entries().next(), None);
        }
        f => panic!("{f:?}"),
    }
}

#[test]
fn test_emit_feedback_errors() {
    let mut buf = [0u8; 18];
    assert_eq!(
        emit_feedback(PathId(7), &feedback_entries(), &mut buf),
        Err(WireError::BufferTooSmall { need: 19 })
    );
    let many = [FeedbackEntry {
        seq: 0,
        rx_time_ns: 0,
    }; MAX_FEEDBACK_ENTRIES + 1];
    let mut big = [0u8; feedback_max_len(MAX_FEEDBACK_ENTRIES + 1)];
    assert_eq!(
        emit_feedback(PathId(0), &many, &mut big),
        Err(WireError::TooManyEntries(65))
    );
    let max = [FeedbackEntry {
        seq: 1,
        rx_time_ns: 2,
    }; MAX_FEEDBACK_ENTRIES];
    assert_eq!(
        emit_feedback(PathId(0), &max, &mut big),
        Ok(feedback_len(&max))
    );
    match decode(&big[..feedback_len(&max)]).unwrap() {
        Frame::Feedback(v) => assert_eq!(v.len(), MAX_FEEDBACK_ENTRIES),
        f => panic!("{f:?}"),
    }
}

#[test]
fn test_parse_feedback_errors() {
    assert_eq!(
        decode(&FEEDBACK_BYTES[..2]),
        Err(WireError::Truncated { need: 3, got: 2 })
    );
    assert_eq!(
        decode(&FEEDBACK_BYTES[..18]),
        Err(WireError::Truncated { need: 19, got: 18 })
    );
    assert_eq!(
        decode(&FEEDBACK_BYTES[..10]),
        Err(WireError::Truncated { need: 11, got: 10 })
    );
    let mut long = [0u8; 22];
    long[..19].copy_from_slice(&FEEDBACK_BYTES);
    assert_eq!(decode(&long), Err(WireError::TrailingBytes(3)));
    let too_many = [0x02, 0x00, 65];
    assert_eq!(decode(&too_many), Err(WireError::TooManyEntries(65)));
    let too_many = [0x02, 0x00, 0xff];
    assert_eq!(decode(&too_many), Err(WireError::TooManyEntries(0xff)));
}

#[test]
fn test_parse_keepalive() {
    assert_eq!(decode(&KEEPALIVE_BYTES), Ok(Frame::Keepalive(keepalive())));
    let mut ack = KEEPALIVE_BYTES;
    ack[0] = 0x04;
    assert_eq!(decode(&ack), Ok(Frame::KeepaliveAck(keepalive())));
}

#[test]
fn test_emit_keepalive() {
    let mut buf = [0u8; 14];
    keepalive().emit(false, &mut buf).unwrap();
    assert_eq!(buf, KEEPALIVE_BYTES);
    keepalive().emit(true, &mut buf).unwrap();
    assert_eq!(buf[0], TYPE_KEEPALIVE_ACK);
    assert_eq!(&buf[1..], &KEEPALIVE_BYTES[1..]);
    let mut small = [0u8; 13];
    assert_eq!(
        keepalive().emit(false, &mut small),
        Err(WireError::BufferTooSmall { need: 14 })
    );
}

#[test]
fn test_parse_keepalive_errors() {
    assert_eq!(
        decode(&KEEPALIVE_BYTES[..13]),
        Err(WireError::Truncated { need: 14, got: 13 })
    );
    let mut long = [0u8; 15];
    long[..14].copy_from_slice(&KEEPALIVE_BYTES);
    assert_eq!(decode(&long), Err(WireError::TrailingBytes(1)));
}

static CONTROL_BYTES: [u8; 4] = [
    0x05, // type
    0x01, // kind: CLOSE
    0xab, 0xcd, // body
];

#[test]
fn test_parse_control() {
    assert_eq!(
        decode(&CONTROL_BYTES),
        Ok(Frame::Control(Control {
            kind: Control::CLOSE,
            body: &[0xab, 0xcd],
        }))
    );
    assert_eq!(
        decode(&CONTROL_BYTES[..2]),
        Ok(Frame::Control(Control {
            kind: Control::CLOSE,
            body: &[],
        }))
    );
    assert_eq!(
        decode(&CONTROL_BYTES[..1]),
        Err(WireError::Truncated { need: 2, got: 1 })
    );
}

#[test]
fn test_emit_control() {
    let c = Control {
        kind: Control::CLOSE,
        body: &[0xab, 0xcd],
    };
    let mut buf = [0xffu8; 6];
    assert_eq!(c.emit(&mut buf), Ok(4));
    assert_eq!(&buf[..4], &CONTROL_BYTES);
    assert_eq!(&buf[4..], &[0xff, 0xff]);
    let mut small = [0u8; 3];
    assert_eq!(
        c.emit(&mut small),
        Err(WireError::BufferTooSmall { need: 4 })
    );
}

#[test]
fn test_parse_generic_errors() {
    assert_eq!(decode(&[]), Err(WireError::Truncated { need: 1, got: 0 }));
    assert_eq!(decode(&[0x00]), Err(WireError::UnknownType(0x00)));
    assert_eq!(decode(&[0x08, 1, 2, 3]), Err(WireError::UnknownType(0x08)));
    assert_eq!(
        decode(&DATA_BYTES[..8]),
        Err(WireError::Truncated { need: 9, got: 8 })
    );
}

#[test]
fn errors_display() {
    assert_eq!(
        WireError::UnknownType(5).to_string(),
        "unknown frame type 0x05"
    );
    assert_eq!(
        WireError::TrailingBytes(3).to_string(),
        "3 trailing bytes after frame"
    );
}
