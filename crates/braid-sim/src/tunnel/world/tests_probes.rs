//! World tests of the tunnel's rate probes (`tunnel::rate_probe`): filler
//! pairs that measure a path an idle tunnel, or a busy one, has no rate
//! for, and what a transfer gains from them.

use super::tests::{lab_set, lab_world, run_transfer};
use super::*;

/// 46.8 Mbit/s 213 ms away beside 4.64 Mbit/s 16 ms away (a random set of
/// `lab/sweep-random.sh 40 2027`, set 36): the near path is thin, the
/// fast one far.
fn thin_near_fast_far() -> LabConfig {
    LabConfig::from_toml_str(
        "name = \"thin-near-fast-far\"\nseed = 37\n\
         [[path]]\nname = \"p0\"\nrate_mbit = 46.82\ndelay_ms = 213.3\nqueue_bytes = 2496676\n\
         [[path]]\nname = \"p1\"\nrate_mbit = 4.64\ndelay_ms = 16.3\nqueue_bytes = 18908\n",
        "test",
    )
    .unwrap()
}

/// The world of `thin_near_fast_far` with `pairs` rate probe pairs a
/// path, whose transfer starts after the tunnel idled 3 s.
fn idle_world(pairs: u32) -> TunnelWorld {
    let conn = ConnConfig {
        rate_probe_pairs: pairs,
        ..ConnConfig::default()
    };
    let mut w = lab_world(&thin_near_fast_far(), conn);
    w.lead = Duration::from_secs(3);
    w
}

/// An idle tunnel measures every path with its rate probes
/// (`ConnConfig::rate_probe_pairs`): before the transfer both sides have
/// a rate for both paths, the fillers are dropped by the receiving tunnel
/// (none reaches the inner TCP), and no path gets more than its pairs.
/// With the probes off, the far path is still unmeasured.
#[test]
fn an_idle_tunnel_measures_every_path_with_filler() {
    let idle = |pairs: u32| {
        let mut w = idle_world(pairs);
        w.run_until(Instant::from_millis(2900));
        assert!(w.started.is_none());
        w
    };
    let w = idle(2);
    let (c, s) = (w.client.status(w.now), w.server.status(w.now));
    for (side, st) in [("client", &c.tunnel), ("server", &s.peers[0].tunnel)] {
        let rates: Vec<_> = st.paths.iter().map(|p| p.bandwidth_bps).collect();
        assert!(rates.iter().all(|r| r.is_some()), "{side}: {rates:?}");
    }
    let sent = c.tunnel.counters.rate_probes_sent;
    let dropped = s.peers[0].tunnel.counters.rate_probe_fillers;
    assert!((4..=8).contains(&sent), "{sent} fillers sent");
    assert_eq!(dropped, sent, "fillers sent and dropped (no loss here)");
    assert_eq!(w.rx.delivered_bytes(), 0);
    assert_eq!(
        s.peers[0].tunnel.counters.packets_delivered, 0,
        "a filler went up"
    );

    let w = idle(0);
    let c = w.client.status(w.now);
    assert_eq!(c.tunnel.counters.rate_probes_sent, 0);
    assert!(c.tunnel.paths.iter().any(|p| p.bandwidth_bps.is_none()));
}

/// A transfer that starts as the tunnel comes up, over 32.2 Mbit/s 228 ms
/// away beside 1.43 Mbit/s 23 ms away (`lab/sweep-random.sh 40 2027` set
/// 25), with the inner TCP paced: the near path's queue never grows as
/// long as the delay difference, so PET never pairs the far path. Its
/// busy probes (`tunnel::rate_probe`, `BUSY_PROBE_AFTER`) measure it
/// without holding the stream, and the transfer moves onto it; without
/// them it runs on the thin path all along.
#[test]
fn a_far_path_a_busy_tunnel_never_pairs_is_probed_with_filler() {
    let cfg = lab_set(
        "far-fast-beside-thin-near",
        26,
        &[
            ("far", 32.2, 228.1, 1836205, None),
            ("near", 1.43, 23.1, 16516, None),
        ],
    );
    let run = |pairs: u32| {
        let conn = ConnConfig {
            rate_probe_pairs: pairs,
            ..ConnConfig::default()
        };
        let mut w = lab_world(&cfg, conn);
        run_transfer(&mut w, 15);
        let c = w.client.status(w.now);
        let mbps = w.tx.snd_una() as f64 * f64::from(w.mss) * 8.0 / 15.0 / 1e6;
        (
            c.tunnel.paths[0].bandwidth_bps,
            c.tunnel.counters.rate_probes_sent,
            mbps,
        )
    };
    let (far, probes, mbps) = run(2);
    assert!(far.is_some(), "the far path was never measured");
    assert!((2..=4).contains(&probes), "{probes} fillers");
    assert!(mbps > 10.0, "{mbps:.2} Mbit/s");
    let (far, probes, mbps) = run(0);
    assert!(far.is_none() && probes == 0);
    assert!(mbps < 2.0, "without probes: {mbps:.2} Mbit/s");
}

/// The same set with the tunnel idle 3 s before a 15 s transfer: the
/// rate probes give both paths a rate, so the thin near path counts as far
/// as the fast one (`PetConfig::near_floor`), the transfer starts on
/// the fast path and the inner TCP's slow start runs to the fast path's
/// window. Measured over the transfer's 15 s: 41.6 Mbit/s, against 16.4
/// without the probes (HyStart ended slow start at 48 packets on the near
/// path, and the far path got its first pair 2 s in) and 28.3 for the
/// fast path alone (the lab bench's measure, the first 2 s left out; 46.3
/// and 18.2 for the tunnel so measured). A transfer that starts with the
/// tunnel (no idle spell) leaves no time for the probes, and starts as
/// before.
#[test]
fn a_bond_idle_before_its_transfer_starts_on_its_fast_far_path() {
    let run = |pairs: u32| {
        let mut w = idle_world(pairs);
        run_transfer(&mut w, 15);
        w.rx.delivered_bytes() as f64 * 8.0 / 15.0 / 1e6
    };
    let (with, without) = (run(2), run(0));
    let alone = crate::tunnel::run_lab(
        &thin_near_fast_far(),
        &[crate::tunnel::LabMode::SingleBest],
        &LabRunOptions::default(),
    )
    .results[0]
        .goodput_mbps;
    eprintln!("with probes {with:.2}, without {without:.2}, fast path alone {alone:.2} Mbit/s");
    assert!(with > alone, "{with} against the fast path's {alone}");
    assert!(
        with > 1.5 * without,
        "{with} against {without} without probes"
    );
}
