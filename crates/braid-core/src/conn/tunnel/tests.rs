//! The tunnel's wiring between its sender and its receiver, driven with
//! plaintext frames (no sessions): what the end-to-end tests in
//! `tests/conn_*.rs` cannot see from outside.

use super::{Arrival, Outputs, Role, Tunnel};
use crate::conn::ConnConfig;
use crate::path::PathId;
use crate::sched::PacketInfo;
use crate::time::{Duration, Instant};
use crate::wire::{self, FeedbackEntry, Keepalive};

fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

fn client() -> (Tunnel, Outputs) {
    let mut t = Tunnel::new(Role::Client, None, &ConnConfig::default(), None);
    t.add_link(PathId(0), "127.0.0.1:9".parse().unwrap());
    (t, Outputs::new(1024))
}

/// The echo of a keepalive sent at `sent`, arriving at `now` on path 0.
fn keepalive_ack(t: &mut Tunnel, out: &mut Outputs, sent: u64, now: u64) {
    let k = Keepalive {
        path: PathId(0),
        id: 1,
        tx_time_ns: sent * 1_000_000,
    };
    let mut b = [0u8; Keepalive::LEN];
    k.emit(true, &mut b).unwrap();
    t.on_frame(ms(now), Arrival::Path(PathId(0)), b.len(), &b, out);
}

/// A feedback frame on path 0 reporting `seqs` received at `now`.
fn feedback(t: &mut Tunnel, out: &mut Outputs, seqs: &[u64], now: u64) {
    let entries: Vec<FeedbackEntry> = seqs
        .iter()
        .map(|&s| FeedbackEntry {
            seq: s as u32,
            rx_time_ns: now * 1_000_000,
        })
        .collect();
    let mut b = vec![0u8; wire::feedback_max_len(entries.len())];
    let n = wire::emit_feedback(PathId(0), &entries, &mut b).unwrap();
    t.on_frame(ms(now), Arrival::Path(PathId(0)), n, &b[..n], out);
}

/// The resequencer's least hold follows the paths' round trips as they
/// are measured, without waiting for a data packet to arrive: set from
/// the first keepalive round trip, then raised when data reports measure
/// a longer one. (It used to be recomputed on every data packet
/// received; a tunnel that only sends had none.)
#[test]
fn the_hold_floor_follows_an_rtt_change() {
    let (mut t, mut out) = client();
    assert_eq!(t.receiver.hold_floor(), None, "no path measured yet");

    // A 40 ms keepalive round trip brings the path up and measures it.
    keepalive_ack(&mut t, &mut out, 0, 40);
    let first = t.receiver.hold_floor().expect("a floor from the keepalive");
    assert_eq!(Some(first), t.sender.repair_wait());
    // 1.25 x (40 ms + the 50 ms least window) + 10 ms.
    assert_eq!(first, Duration::from_micros(122_500));

    // Data sent at 100 ms is reported 300 ms later: a longer round trip.
    let pkt = PacketInfo {
        len: 1200,
        retransmit: false,
        stream: false,
    };
    let mut seqs = Vec::new();
    for _ in 0..4 {
        match t.sender.send_paced(ms(100), &pkt, Vec::new) {
            crate::sender::SendOutcome::Transmit(tx) => seqs.push(tx.seq),
            crate::sender::SendOutcome::Queued { seq, .. } => seqs.push(seq),
            o => panic!("not sent: {o:?}"),
        }
    }
    while t.sender.poll_transmit(ms(100)).is_some() {}
    feedback(&mut t, &mut out, &seqs, 400);
    let second = t.receiver.hold_floor().expect("a floor after the reports");
    assert_eq!(Some(second), t.sender.repair_wait());
    assert!(second > first, "{second:?} after {first:?}");

    // The path going down leaves no usable path: no floor.
    t.path_down(
        ms(400),
        PathId(0),
        super::links::DownCause::Silent,
        &mut out,
    );
    assert_eq!(t.receiver.hold_floor(), None);
}

/// The server takes a path out when the client says it went down
/// (`Control::PATH_DOWN`), unless something arrived on it within a
/// keepalive interval: then the client's silence ended with an outage
/// that is over, and the resequencer must go on waiting for the packets
/// in flight on the path (`Tunnel::peer_path_silent`).
#[test]
fn the_server_keeps_a_path_it_hears_from_when_the_client_says_it_went_down() {
    let mut t = Tunnel::new(Role::Server, None, &ConnConfig::default(), None);
    let mut out = Outputs::new(1024);
    let from = super::Arrival::From("127.0.0.1:7".parse().unwrap());
    let keepalive = |t: &mut Tunnel, out: &mut Outputs, path: u8, now: u64| {
        let k = Keepalive {
            path: PathId(path),
            id: 1,
            tx_time_ns: now * 1_000_000,
        };
        let mut b = [0u8; Keepalive::LEN];
        k.emit(false, &mut b).unwrap();
        t.on_frame(ms(now), from, b.len(), &b, out);
    };
    let path_down = |t: &mut Tunnel, out: &mut Outputs, now: u64| {
        let c = super::Control {
            kind: super::Control::PATH_DOWN,
            body: &[1, super::Control::DOWN_SILENT],
        };
        let mut b = vec![0u8; c.buffer_len()];
        c.emit(&mut b).unwrap();
        t.on_frame(ms(now), from, b.len(), &b, out);
    };
    let up = |t: &Tunnel| t.links.iter().find(|l| l.id == PathId(1)).unwrap().up;
    keepalive(&mut t, &mut out, 0, 0);
    keepalive(&mut t, &mut out, 1, 0);
    assert!(up(&t));
    // Heard 150 ms ago (the keepalive interval is 200 ms): kept.
    path_down(&mut t, &mut out, 150);
    assert!(up(&t), "a path heard 150 ms ago was taken out");
    // Heard 250 ms ago: taken out.
    path_down(&mut t, &mut out, 250);
    assert!(!up(&t), "a path silent for 250 ms was kept");
}
