//! Inner header compression through the shipped connection
//! (`conn_util::Pair`, `braid_core::compress`): TCP packets of several
//! connections, both ways, over three paths that lose 5 % of everything
//! (installs, feedback and compressed packets alike), arrive byte for byte
//! as they were sent, and take fewer bytes on the paths than without
//! compression.

use std::net::Ipv4Addr;

use crate::conn_util;

use braid_core::conn::{ConnConfig, Counters};
use conn_util::*;

/// Payload bytes of each test segment; its first 8 carry its number.
const PAYLOAD: usize = 160;

/// A TCP segment with timestamps of connection `flow`, numbered `n`, with
/// a correct IPv4 header checksum (as a host sends it).
fn segment(src: Ipv4Addr, dst: Ipv4Addr, flow: u16, n: u64) -> Vec<u8> {
    let total = 52 + PAYLOAD;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[1] = 0x02;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[4..6].copy_from_slice(&(n as u16).to_be_bytes());
    p[6] = 0x40;
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    p[20..22].copy_from_slice(&(40_000 + flow).to_be_bytes());
    p[22..24].copy_from_slice(&5201u16.to_be_bytes());
    p[24..28].copy_from_slice(&((n * PAYLOAD as u64) as u32).to_be_bytes());
    p[28..32].copy_from_slice(&7u32.to_be_bytes());
    p[32] = 0x80;
    p[33] = 0x18;
    p[34..36].copy_from_slice(&501u16.to_be_bytes());
    p[36..38].copy_from_slice(&(n as u16 ^ 0x5a5a).to_be_bytes());
    p[40..44].copy_from_slice(&[1, 1, 8, 10]);
    p[44..48].copy_from_slice(&(n as u32).to_be_bytes());
    p[52..60].copy_from_slice(&n.to_be_bytes());
    braid_core::compress::header::write_ipv4_checksum(&mut p);
    p
}

fn number_of(p: &[u8]) -> u64 {
    u64::from_be_bytes(p[52..60].try_into().unwrap())
}

struct Run {
    /// Client's and server's counters.
    counters: (Counters, Counters),
    /// Fraction of segments not delivered, up and down.
    residual: (f64, f64),
    /// Bytes both ends sent on the paths.
    tx_bytes: u64,
}

/// `n` segments each way over three connections, 5 % loss on every path.
fn run(cfg: ConnConfig, n: u64) -> Run {
    let mut p = Pair::with_config(23, three_links(), cfg.clone(), cfg);
    p.run_for(ms(300));
    assert!(p.client_established());
    for l in 0..3 {
        p.set_loss(l, 0.05);
    }
    let me = p.client_address();
    let far = Ipv4Addr::new(198, 51, 100, 7);
    let mut up = Vec::new();
    let mut down = Vec::new();
    for i in 0..n {
        let flow = (i % 3) as u16;
        let (u, d) = (segment(me, far, flow, i), segment(far, me, flow, i));
        p.client.send_packet(p.now, &u);
        p.server.send_packet(p.now, &d);
        up.push(u);
        down.push(d);
        p.drain();
        p.run_for(ms(1));
    }
    p.run_for(ms(3000));
    // Every packet delivered is one sent, byte for byte, in order.
    let check = |got: &[Vec<u8>], sent: &[Vec<u8>]| {
        let nums: Vec<u64> = got.iter().map(|g| number_of(g)).collect();
        assert!(nums.windows(2).all(|w| w[1] > w[0]), "out of order");
        for g in got {
            assert_eq!(g, &sent[number_of(g) as usize], "changed on the way");
        }
        1.0 - got.len() as f64 / sent.len() as f64
    };
    let residual = (check(&p.server_rx, &up), check(&p.client_rx, &down));
    let c = p.client.status(p.now).tunnel.counters;
    let s = p.server.status(p.now).peers[0].tunnel.counters.clone();
    Run {
        tx_bytes: c.tx_bytes + s.tx_bytes,
        counters: (c, s),
        residual,
    }
}

#[test]
fn compressed_headers_arrive_as_sent_over_lossy_paths() {
    let n = 3000;
    let on = run(ConnConfig::default(), n);
    let off = run(
        ConnConfig {
            compress_headers: false,
            ..ConnConfig::default()
        },
        n,
    );
    for r in [&on, &off] {
        assert!(
            r.residual.0 < 0.005 && r.residual.1 < 0.005,
            "{:?}",
            r.residual
        );
    }
    for c in [&on.counters.0, &on.counters.1] {
        assert_eq!(c.drop_bad_header, 0);
        // Every first copy of a segment, and the repairs, went compressed;
        // the installs stop within a round trip or so of each connection's
        // start.
        assert!(c.headers_compressed >= n, "{}", c.headers_compressed);
        assert!(
            c.header_installs > 0 && c.header_installs < n / 10,
            "{} installs",
            c.header_installs
        );
    }
    assert_eq!(off.counters.0.headers_compressed, 0);
    // 26 bytes fewer per segment each way, most of the data bytes sent.
    let saved = off.tx_bytes as f64 - on.tx_bytes as f64;
    assert!(
        saved > 0.8 * 26.0 * 2.0 * n as f64,
        "saved {saved} bytes of {}",
        off.tx_bytes
    );
}

/// The client restarts mid-stream: both ends start their contexts afresh
/// (the server's state for the client is new), and the new tunnel's
/// compressed packets rebuild.
#[test]
fn contexts_start_afresh_when_the_client_restarts() {
    let mut p = Pair::new(29, three_links());
    p.run_for(ms(300));
    let me = p.client_address();
    let far = Ipv4Addr::new(198, 51, 100, 7);
    let send = |p: &mut Pair, range: std::ops::Range<u64>| {
        for i in range {
            p.client.send_packet(p.now, &segment(me, far, 0, i));
            p.server.send_packet(p.now, &segment(far, me, 0, i));
            p.drain();
            p.run_for(ms(2));
        }
        p.run_for(ms(500));
    };
    send(&mut p, 0..300);
    let before = p.server_rx.len();
    assert!(before >= 295, "{before}");
    p.restart_client(ConnConfig::default());
    p.run_for(ms(500));
    assert!(p.client.params().is_some(), "re-established");
    send(&mut p, 300..600);
    let got: Vec<u64> = p.server_rx[before..].iter().map(|g| number_of(g)).collect();
    assert!(
        got.len() >= 295 && got.iter().all(|&x| x >= 300),
        "{}",
        got.len()
    );
    let c = p.client.status(p.now).tunnel.counters;
    let s = &p.server.status(p.now).peers[0].tunnel.counters;
    assert_eq!(c.drop_bad_header + s.drop_bad_header, 0);
    assert!(c.headers_compressed > 250 && s.headers_compressed > 250);
    assert!(p.client_rx.iter().filter(|g| number_of(g) >= 300).count() >= 295);
}
