//! Lossy paths through the shipped connection (`conn_util::Pair`): the
//! tunnel repairs path losses inside itself (issue: lossy paths), so the
//! inner traffic sees almost none of them.
//!
//! The inner source is constant-rate (the harness has no TCP model):
//! these tests check residual loss and goodput, not a TCP's response.

use crate::conn_util;

use braid_core::conn::ConnConfig;
use braid_core::repair::RepairMode;
use braid_core::time::Duration;
use conn_util::*;

fn off() -> ConnConfig {
    ConnConfig {
        repair: RepairMode::Off,
        ..ConnConfig::default()
    }
}

/// 5 % random loss on every path, both ways (data, feedback and NACKs
/// alike): the inner traffic sees under 0.1 % loss, in order. Without
/// repair it sees about the 5 %.
#[test]
fn five_percent_loss_everywhere_is_repaired() {
    let run = |cfg: ConnConfig| {
        let mut p = Pair::with_config(7, three_links(), cfg.clone(), cfg);
        p.run_for(ms(300));
        assert!(p.client_established());
        for l in 0..3 {
            p.set_loss(l, 0.05);
        }
        let n = 6000;
        p.stream(0..n, ms(1));
        p.run_for(ms(3000));
        let (up, up_in_order) = residual(&numbers(&p.server_rx), n);
        let (down, down_in_order) = residual(&numbers(&p.client_rx), n);
        assert!(up_in_order && down_in_order, "out of order or duplicated");
        (up, down, p)
    };
    let (up, down, p) = run(ConnConfig::default());
    let c = p.client.status(p.now);
    let s = p.server.status(p.now);
    eprintln!(
        "repair: residual up {:.4} % down {:.4} %; random drops {}; client repairs {}, server repairs {}; hold {:?}",
        up * 100.0,
        down * 100.0,
        p.lost_random,
        c.tunnel.sender.repairs_sent,
        s.peers[0].tunnel.sender.repairs_sent,
        Duration::from_nanos(c.tunnel.reorder.hold_ns),
    );
    assert!(p.lost_random > 500, "the paths did lose packets");
    assert!(up < 0.001, "uplink residual loss {:.3} %", up * 100.0);
    assert!(down < 0.001, "downlink residual loss {:.3} %", down * 100.0);
    assert!(c.tunnel.sender.repairs_sent > 0);
    let paths_repaired: u64 = c.tunnel.paths.iter().map(|x| x.losses_repaired).sum();
    assert!(paths_repaired > 0);
    assert!(c.tunnel.paths.iter().any(|x| x.rx_loss_rate > 0.0));
    // Memory stayed within the resequencer's bound.
    assert!(c.tunnel.reorder.max_buffered_bytes <= 4 << 20);
    // Repair copies cost about the loss rate, not a multiple of it: at
    // most a fifth of the data sent.
    let data: u64 = c.tunnel.paths.iter().map(|x| x.data_tx_packets).sum();
    assert!(
        c.tunnel.sender.repairs_sent * 5 < data,
        "{} repairs for {data} packets",
        c.tunnel.sender.repairs_sent
    );

    let (up_off, down_off, _) = run(off());
    assert!(
        up_off > 0.02 && down_off > 0.02,
        "without repair the loss reaches the inner traffic: {up_off} {down_off}"
    );
}

/// R-MTP's case: one of two paths loses 30 % of its packets. The inner
/// traffic offered at 1.5 x the clean path's rate is delivered above the
/// clean path's rate, and of what the paths lost under 0.5 % reaches it;
/// without repair several percent do. (What the tunnel's pacing queues
/// drop is never repaired. Here that is about a fifth of the offer: the
/// lossy path gets no packet-pair estimate for seconds, as pairs need
/// both packets, and its liveness flaps while only keepalives use it.)
#[test]
fn thirty_percent_loss_on_one_path_keeps_goodput_above_the_clean_path() {
    let links = || {
        vec![
            LinkSpec {
                rate_bps: 4e6,
                delay: ms(20),
            },
            LinkSpec {
                rate_bps: 4e6,
                delay: ms(30),
            },
        ]
    };
    let run = |cfg: ConnConfig| {
        let mut p = Pair::with_config(11, links(), cfg.clone(), cfg);
        p.run_for(ms(300));
        assert!(p.client_established());
        p.set_loss(1, 0.30);
        // 1000-byte inner packets (1062 on the wire): 4 Mbit/s is 470
        // packets/s; offer 1.5 x that for 10 s.
        let len = 1000;
        let gap = Duration::from_micros(1_000_000 / 705);
        let n = 7050;
        let t0 = p.now;
        for k in 0..n {
            p.send_up_sized(k, len);
            p.run_for(gap);
        }
        let elapsed = p.now.saturating_since(t0);
        p.run_for(ms(3000));
        let got = numbers(&p.server_rx);
        let (res, in_order) = residual(&got, n);
        assert!(in_order);
        let goodput_bps = got.len() as f64 * (len + 62) as f64 * 8.0 / elapsed.as_secs_f64();
        (res, goodput_bps, p)
    };
    let (res, goodput, p) = run(ConnConfig::default());
    let c = p.client.status(p.now);
    eprintln!(
        "repair: residual {:.4} %, goodput {:.2} Mbit/s, repairs {}, pacing drops {}, per path {:?}",
        res * 100.0,
        goodput / 1e6,
        c.tunnel.sender.repairs_sent,
        c.tunnel.sender.pacing_drops,
        c.tunnel
            .paths
            .iter()
            .map(|x| (
                x.data_tx_packets,
                x.losses_repaired,
                x.repairs_carried,
                x.losses_congestion,
                x.bandwidth_bps
            ))
            .collect::<Vec<_>>()
    );
    assert!(goodput > 4e6, "goodput {:.2} Mbit/s", goodput / 1e6);
    // The clean path's reports, which the lossy path's losses hold up now
    // and then, are not taken for its losses: neither by the cross-path
    // rule (`sender/rack.rs`, once 677 of its 4737 packets) nor by its
    // quiet case (`sender/quiet.rs`).
    let clean = &c.tunnel.paths[0];
    assert!(
        clean.losses_repaired * 100 < clean.data_tx_packets,
        "the clean path repaired {} of {} packets",
        clean.losses_repaired,
        clean.data_tx_packets
    );
    // The tunnel's own pacing drops (the offered load is above what it
    // estimates the paths carry) are never repaired, as a TCP must see
    // them; everything the paths lost is.
    let drops = c.tunnel.sender.pacing_drops as f64 / 7050.0;
    // Half a packet of slack: both are fractions of 7050, computed apart,
    // and with every path loss repaired they are equal.
    assert!(res + 0.5 / 7050.0 >= drops, "a pacing drop was repaired");
    let path_residual = (res - drops).max(0.0);
    // A path losing 30 % loses some repairs' feedback and NACKs too; a
    // few losses are found only by the path's timeout, after the
    // resequencer gave up on them.
    assert!(
        path_residual < 0.005,
        "residual path loss {:.3} %",
        path_residual * 100.0
    );
    let (res_off, goodput_off, p_off) = run(off());
    let drops_off = p_off.client.status(p_off.now).tunnel.sender.pacing_drops;
    eprintln!(
        "off: residual {:.4} %, goodput {:.2} Mbit/s, pacing drops {drops_off}",
        res_off * 100.0,
        goodput_off / 1e6
    );
    assert!(
        res_off - drops_off as f64 / 7050.0 > 0.02,
        "without repair the path loss reaches the inner traffic"
    );
}
