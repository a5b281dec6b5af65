//! `cargo +nightly fuzz run server_datagrams`: a whole server connection
//! (`braid_core::conn::Server`) driven with arbitrary datagrams from
//! arbitrary addresses at arbitrary times never panics and keeps its
//! output queue bounded.
//!
//! Random bytes rarely pass MAC1 or the AEAD, so the server has completed
//! a genuine handshake with the fuzzers' client, and chunks whose mode
//! byte is odd are sent *encrypted by the client's session*: the fuzzer's
//! bytes then reach the server's frame decoders, resequencer and tunnel
//! logic. The server lives across inputs (as a real one does) and is made
//! afresh every 256 inputs: a handshake per input would spend the time on
//! key agreement instead of the code under test.
//!
//! Input: `([mode] [addr] [dt_ms] [len_hi] [len_lo] [len bytes])*`.
#![no_main]

use braid_core::conn::{Output, Server};
use braid_core::crypto::Session;
use braid_core::time::Instant;
use braid_fuzz::{client_session_with, server, T0};
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::net::{Ipv4Addr, SocketAddr};

struct State {
    srv: Server,
    session: Session,
    now: Instant,
    inputs: u32,
}

fn fresh() -> State {
    let mut srv = server();
    let session = client_session_with(&mut srv, T0);
    State {
        srv,
        session,
        now: T0,
        inputs: 0,
    }
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(fresh());
}

fuzz_target!(|data: &[u8]| {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.inputs += 1;
        if s.inputs > 256 {
            *s = fresh();
        }
        drive(&mut s, data);
    });
});

fn drive(s: &mut State, mut rest: &[u8]) {
    while rest.len() >= 5 {
        let (head, tail) = rest.split_at(5);
        let len = (u16::from_be_bytes([head[3], head[4]]) as usize).min(tail.len());
        let (chunk, tail) = tail.split_at(len);
        rest = tail;
        s.now = Instant::from_nanos(s.now.as_nanos() + head[2] as u64 * 1_000_000);
        let now = s.now;
        let from = SocketAddr::from((Ipv4Addr::new(192, 0, 2, head[1] % 4), 40000));
        if head[0] & 1 == 1 {
            let mut packet = Vec::new();
            if s.session.encrypt(chunk, &mut packet, now).is_ok() {
                s.srv.handle_datagram(now, from, &packet);
            } else {
                s.inputs = u32::MAX / 2; // session expired: start afresh next input
            }
        } else {
            s.srv.handle_datagram(now, from, chunk);
        }
        if s.srv.poll_timeout().is_some_and(|t| t <= now) {
            s.srv.handle_timeout(now);
        }
        let mut n = 0;
        while let Some(o) = s.srv.poll_output() {
            n += 1;
            assert!(n <= 1 << 20, "unbounded output");
            if let Output::Transmit(t) = o {
                assert!(t.bytes.len() <= 65_535);
            }
        }
    }
}
