//! FEC through the shipped connection (`conn_util::Pair`): Reed-Solomon
//! parity (MPLOT eqs 9, 10, 12) repairs path losses without a
//! retransmission round trip, costs nothing measurable on clean paths,
//! and `auto` turns it on for a far path only.
//!
//! The inner source is constant-rate (the harness has no TCP model).

use crate::conn_util;

use braid_core::conn::{ConnConfig, Counters};
use braid_core::repair::RepairMode;
use conn_util::*;

fn mode(m: RepairMode) -> ConnConfig {
    ConnConfig {
        repair: m,
        ..ConnConfig::default()
    }
}

struct Run {
    up: f64,
    down: f64,
    client: Counters,
    server: Counters,
    client_arq: u64,
    server_arq: u64,
    lost_random: u64,
}

/// 6000 packets each way at 1 ms over `links`, with `loss` on the paths
/// listed in `lossy`.
fn run(m: RepairMode, links: Vec<LinkSpec>, lossy: &[usize], loss: f64) -> Run {
    let cfg = mode(m);
    let mut p = Pair::with_config(7, links, cfg.clone(), cfg);
    p.run_for(ms(600));
    assert!(p.client_established());
    for &l in lossy {
        p.set_loss(l, loss);
    }
    let n = 6000;
    p.stream(0..n, ms(1));
    p.run_for(ms(3000));
    let (up, o1) = residual(&numbers(&p.server_rx), n);
    let (down, o2) = residual(&numbers(&p.client_rx), n);
    assert!(o1 && o2, "out of order or duplicated");
    let c = p.client.status(p.now);
    let s = p.server.status(p.now);
    let r = Run {
        up,
        down,
        client: c.tunnel.counters.clone(),
        server: s.peers[0].tunnel.counters.clone(),
        client_arq: c.tunnel.sender.repairs_sent,
        server_arq: s.peers[0].tunnel.sender.repairs_sent,
        lost_random: p.lost_random,
    };
    eprintln!(
        "{m:?}: residual up {:.3} % down {:.3} %, random drops {}; parity sent {} / {} (reactive {} / {}), rebuilt {} / {}, ARQ copies {} / {}",
        up * 100.0,
        down * 100.0,
        r.lost_random,
        r.client.fec_parity_sent,
        r.server.fec_parity_sent,
        r.client.fec_parity_reactive,
        r.server.fec_parity_reactive,
        r.server.fec_rebuilt,
        r.client.fec_rebuilt,
        r.client_arq,
        r.server_arq,
    );
    r
}

/// 5 % random loss on every path, both ways, `repair = "fec"`: parity
/// rebuilds the losses with no retransmission at all, and the inner
/// traffic sees a fraction of a percent of them (without repair, 5 %).
#[test]
fn fec_repairs_losses_without_retransmission() {
    let fec = run(RepairMode::Fec, three_links(), &[0, 1, 2], 0.05);
    assert!(fec.lost_random > 500, "the paths did lose packets");
    assert_eq!(
        (fec.client_arq, fec.server_arq),
        (0, 0),
        "no retransmission round trips"
    );
    assert!(fec.server.fec_rebuilt > 100 && fec.client.fec_rebuilt > 100);
    assert!(fec.up < 0.005, "uplink residual {:.3} %", fec.up * 100.0);
    assert!(
        fec.down < 0.005,
        "downlink residual {:.3} %",
        fec.down * 100.0
    );
    let off = run(RepairMode::Off, three_links(), &[0, 1, 2], 0.05);
    assert!(off.up > 0.02 && off.down > 0.02);
    assert!(fec.up * 10.0 < off.up && fec.down * 10.0 < off.down);
}

/// On clean paths FEC measures no loss, so eq 9 gives a code rate of 0
/// and no parity goes out: repair adds at most 1 % of the traffic (here
/// none), in `fec` and in `auto`.
#[test]
fn clean_paths_cost_at_most_one_percent() {
    for m in [RepairMode::Fec, RepairMode::Auto] {
        let r = run(m, three_links(), &[], 0.0);
        assert_eq!((r.up, r.down), (0.0, 0.0));
        for c in [&r.client, &r.server] {
            assert!(
                c.fec_parity_bytes as f64 <= 0.01 * c.tx_bytes as f64,
                "{m:?}: {} parity bytes of {}",
                c.fec_parity_bytes,
                c.tx_bytes
            );
        }
        assert_eq!(r.client_arq + r.server_arq, 0);
    }
}

/// `auto` with two far paths (200 and 205 ms one way, above the 150 ms
/// budget), the nearer one, which carries the stream, lossy: its losses
/// are rebuilt from parity instead of resent, and the residual stays
/// small. (Next to a path with room to spare, a path that delivers later
/// carries little: the scheduler knows both rates before the stream
/// starts, `conn::tunnel::startup`, and keeps to the earliest path, see
/// `sched::pet`.)
#[test]
fn auto_uses_fec_for_a_far_path() {
    let links = vec![
        LinkSpec {
            rate_bps: 10e6,
            delay: ms(200),
        },
        LinkSpec {
            rate_bps: 10e6,
            delay: ms(205),
        },
    ];
    let r = run(RepairMode::Auto, links.clone(), &[0], 0.05);
    let off = run(RepairMode::Off, links, &[0], 0.05);
    eprintln!(
        "auto: residual up {:.4} down {:.4}, rebuilt {} + {}; off: {:.4} {:.4}",
        r.up, r.down, r.client.fec_rebuilt, r.server.fec_rebuilt, off.up, off.down
    );
    assert!(r.lost_random > 20, "the far path lost packets");
    assert!(r.client.fec_parity_sent > 0 && r.server.fec_parity_sent > 0);
    assert!(r.client.fec_rebuilt > 0 && r.server.fec_rebuilt > 0);
    assert!(r.up < 0.02 && r.down < 0.02, "{} {}", r.up, r.down);
    assert!(r.up + r.down < 0.5 * (off.up + off.down));
}
