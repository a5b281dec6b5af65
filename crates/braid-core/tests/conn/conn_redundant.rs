//! The redundant mode through the shipped connection (`conn_util::Pair`,
//! Phatak et al. Sec 1 "reliability first"): a small request/response flow
//! every 20 ms over two paths, one of them cut mid-run in both directions.
//! With redundancy each packet has a copy on the other path, so nothing is
//! lost and nothing waits for a repair; without it the packets on the cut
//! path are lost (repair off) or arrive a loss timeout late (ARQ).

use crate::conn_util;

use braid_core::conn::ConnConfig;
use braid_core::redundancy::RedundancyConfig;
use braid_core::repair::RepairMode;
use braid_core::time::{Duration, Instant};
use conn_util::*;

/// 10 Mbit/s with 10 ms, and 8 Mbit/s with 15 ms one way: the second
/// survives the cut.
fn two_links() -> Vec<LinkSpec> {
    vec![
        LinkSpec {
            rate_bps: 10e6,
            delay: ms(10),
        },
        LinkSpec {
            rate_bps: 8e6,
            delay: ms(15),
        },
    ]
}

struct Outcome {
    /// Requests (up) and responses (down) never delivered.
    lost_up: usize,
    lost_down: usize,
    /// One-way latency of each delivered packet, both directions.
    latencies: Vec<Duration>,
    copy_bytes: u64,
}

const N: u64 = 500;
const GAP: Duration = Duration::from_millis(20);
/// Path 0 goes dark at this request.
const CUT_AT: u64 = 200;

fn run(cfg: ConnConfig) -> Outcome {
    let mut p = Pair::with_config(11, two_links(), cfg.clone(), cfg);
    p.run_for(ms(500));
    assert!(p.client_established());
    // Both paths up and measured before the flow starts.
    for n in 0..50 {
        p.send_both(1_000_000 + n);
        p.run_for(ms(10));
    }
    p.run_for(ms(500));
    let (up0, down0) = (p.server_rx.len(), p.client_rx.len());
    let mut sent_at = vec![Instant::ZERO; N as usize];
    let mut seen_up = vec![None; N as usize];
    let mut seen_down = vec![None; N as usize];
    let (mut up_i, mut down_i) = (up0, down0);
    let mut record = |p: &Pair, up_i: &mut usize, down_i: &mut usize| {
        for (rx, i, seen) in [
            (&p.server_rx, up_i, &mut seen_up),
            (&p.client_rx, down_i, &mut seen_down),
        ] {
            while *i < rx.len() {
                let n = number(&rx[*i]) as usize;
                if n < N as usize && seen[n].is_none() {
                    seen[n] = Some(p.now);
                }
                *i += 1;
            }
        }
    };
    for n in 0..N {
        if n == CUT_AT {
            p.set_blackhole(0, true);
        }
        sent_at[n as usize] = p.now;
        p.send_both(n);
        // 1 ms steps, so latencies are known to the millisecond.
        for _ in 0..GAP.as_millis() {
            p.run_for(ms(1));
            record(&p, &mut up_i, &mut down_i);
        }
    }
    for _ in 0..3000 {
        p.run_for(ms(1));
        record(&p, &mut up_i, &mut down_i);
    }
    let mut latencies = Vec::new();
    for seen in [&seen_up, &seen_down] {
        for (n, t) in seen.iter().enumerate() {
            if let Some(t) = t {
                latencies.push(t.saturating_since(sent_at[n]));
            }
        }
    }
    latencies.sort();
    let c = p.client.status(p.now);
    let s = p.server.status(p.now);
    Outcome {
        lost_up: seen_up.iter().filter(|t| t.is_none()).count(),
        lost_down: seen_down.iter().filter(|t| t.is_none()).count(),
        latencies,
        copy_bytes: c.tunnel.sender.redundant_bytes + s.peers[0].tunnel.sender.redundant_bytes,
    }
}

fn p99(v: &[Duration]) -> Duration {
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

fn redundant(repair: RepairMode) -> ConnConfig {
    ConnConfig {
        repair,
        redundancy: RedundancyConfig {
            enabled: true,
            ..RedundancyConfig::default()
        },
        ..ConnConfig::default()
    }
}

#[test]
fn a_cut_path_costs_a_redundant_flow_nothing() {
    let with = run(redundant(RepairMode::Arq));
    let p99_with = p99(&with.latencies);
    eprintln!(
        "redundant: lost {} up {} down, p99 one-way {:?}, max {:?}, copies {} B",
        with.lost_up,
        with.lost_down,
        p99_with,
        with.latencies.last(),
        with.copy_bytes
    );
    assert_eq!((with.lost_up, with.lost_down), (0, 0));
    // The surviving path's one-way delay is 15 ms; p99 within 10 ms of it.
    assert!(p99_with <= ms(25), "p99 {p99_with:?}");
    assert!(with.copy_bytes > 0);

    // Without redundancy and without repair the cut loses packets.
    let bare = run(ConnConfig {
        repair: RepairMode::Off,
        ..ConnConfig::default()
    });
    eprintln!(
        "no redundancy, no repair: lost {} up {} down, p99 {:?}",
        bare.lost_up,
        bare.lost_down,
        p99(&bare.latencies)
    );
    assert!(bare.lost_up + bare.lost_down > 0);
    assert_eq!(bare.copy_bytes, 0);

    // With ARQ but no redundancy the packets on the cut path come a loss
    // timeout late: far outside what an interactive flow tolerates.
    let arq = run(ConnConfig::default());
    let late = arq.latencies.iter().filter(|&&l| l > ms(100)).count();
    eprintln!(
        "no redundancy, arq: lost {} up {} down, {} packets over 100 ms, max {:?}",
        arq.lost_up,
        arq.lost_down,
        late,
        arq.latencies.last()
    );
    assert!(arq.lost_up + arq.lost_down + late > 0);

    // Redundancy with repair off works as well: copies, not repairs, carry it.
    let no_arq = run(redundant(RepairMode::Off));
    assert_eq!((no_arq.lost_up, no_arq.lost_down), (0, 0));
    assert!(p99(&no_arq.latencies) <= ms(25));
}
