//! `cargo +nightly fuzz run server_datagrams`: a whole server connection
//! (`braid_core::conn::Server`) driven with arbitrary datagrams from
//! arbitrary addresses at arbitrary times never panics and keeps its
//! output queue bounded.
//!
//! Random bytes rarely pass MAC1 or the AEAD, so half of the inputs (first
//! byte odd) first complete a genuine handshake and then send every chunk
//! *encrypted by the client's session*: the fuzzer's bytes then reach the
//! server's frame decoders, resequencer and tunnel logic.
//!
//! Input: `[mode] ([addr] [dt_ms] [len_hi] [len_lo] [len bytes])*`.
#![no_main]

use braid_core::conn::Output;
use braid_core::time::Instant;
use braid_fuzz::{client_session_with, server, T0};
use libfuzzer_sys::fuzz_target;
use std::net::{Ipv4Addr, SocketAddr};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let mut srv = server();
    let mut now = T0;
    let mut session = if mode & 1 == 1 {
        Some(client_session_with(&mut srv, now))
    } else {
        None
    };
    while rest.len() >= 4 {
        let (head, tail) = rest.split_at(4);
        let len = (u16::from_be_bytes([head[2], head[3]]) as usize).min(tail.len());
        let (chunk, tail) = tail.split_at(len);
        rest = tail;
        now = Instant::from_nanos(now.as_nanos() + head[1] as u64 * 1_000_000);
        let from = SocketAddr::from((Ipv4Addr::new(192, 0, 2, head[0] % 4), 40000));
        match session.as_mut() {
            Some(s) => {
                let mut packet = Vec::new();
                if s.encrypt(chunk, &mut packet, now).is_ok() {
                    srv.handle_datagram(now, from, &packet);
                }
            }
            None => srv.handle_datagram(now, from, chunk),
        }
        if srv.poll_timeout().is_some_and(|t| t <= now) {
            srv.handle_timeout(now);
        }
        let mut n = 0;
        while let Some(o) = srv.poll_output() {
            n += 1;
            assert!(n <= 1 << 20, "unbounded output");
            if let Output::Transmit(t) = o {
                assert!(t.bytes.len() <= 65_535);
            }
        }
    }
});
