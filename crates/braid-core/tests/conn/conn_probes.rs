//! Rate probes (`conn::tunnel::rate_probe`): filler pairs that measure a
//! path with full-size packets when nothing else has.

use braid_core::conn::PathStatus;
use braid_core::path::PathId;

use crate::conn_util::*;

/// The server's view of the client's paths.
fn server_paths(p: &Pair) -> Vec<PathStatus> {
    let s = p.server.status(p.now);
    s.peers
        .first()
        .map(|peer| peer.tunnel.paths.clone())
        .unwrap_or_default()
}

/// A thin path that comes up while the tunnel carries a connection's
/// small packets both ways (a download's handshake and control messages:
/// it never idles) gets the server's rate estimate from pairs of those
/// small packets. Such an estimate paces nothing
/// (`sender/pace_samples.rs`), so the path is probed with full-size
/// filler at once, not `BUSY_PROBE_AFTER` (3 s) after it came up: within
/// a second the server paces it, before a download's first window could
/// overflow its queue. Lab set 7/5 of `lab/sweep-random.sh 40 7`: its
/// 1.81 Mbit/s path, measured so, stayed unpaced until 3 s, took 63
/// packets in 0.5 s of the download's slow start and dropped 17.
#[test]
fn a_path_measured_by_small_pairs_alone_is_probed_at_once() {
    let far = LinkSpec {
        rate_bps: 30e6,
        delay: ms(103),
    };
    let thin = LinkSpec {
        rate_bps: 1.8e6,
        delay: ms(38),
    };
    let mut p = Pair::new(23, vec![far]);
    // Established and idle: the quiet probes measure the far path.
    p.run_for(ms(2000));
    assert!(p.client_established());
    assert!(
        server_paths(&p)[0].pacing_rate_bps.is_some(),
        "far path paced"
    );
    let mut k = 0;
    // Small packets both ways every 20 ms.
    let mut busy = |p: &mut Pair, d: u64| {
        for _ in 0..d / 20 {
            p.send_up_sized(k, 60);
            p.send_down_sized(k, 60);
            p.send_down_sized(k + 1_000_000, 60);
            k += 1;
            p.run_for(ms(20));
        }
    };
    busy(&mut p, 200);
    let i = p.add_link(thin);
    p.client
        .add_path(p.now, PathId(i as u8), server_addr())
        .unwrap();
    let t_add = p.now;
    let mut small_only = false;
    let mut paced_at = None;
    while p.now < t_add + ms(2500) && paced_at.is_none() {
        busy(&mut p, 20);
        let x = server_paths(&p).get(i).cloned();
        if let Some(x) = x.filter(|x| x.bandwidth_bps.is_some()) {
            small_only |= x.pacing_rate_bps.is_none();
            if x.pacing_rate_bps.is_some() {
                paced_at = Some(p.now - t_add);
            }
        }
    }
    assert!(
        small_only,
        "the thin path was first measured by small pairs"
    );
    let paced_at = paced_at.expect("thin path paced");
    assert!(
        paced_at <= ms(1000),
        "paced {paced_at:?} after it was added"
    );
    let x = &server_paths(&p)[i];
    let rate = x.pacing_rate_bps.expect("paced");
    assert!((1.2e6..=2.0e6).contains(&rate), "paced at {rate}");
}
