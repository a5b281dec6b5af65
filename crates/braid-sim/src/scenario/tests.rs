//! Unit tests of scenario parsing and checking.

use super::*;

const MIN: &str = "name = 'x'\nschemes = ['MTCP']\n[[path]]\nrate_kbps = 100\n";

#[test]
fn minimal_file_parses_with_defaults() {
    let s = Scenario::parse(MIN, "t").unwrap();
    assert_eq!(s.paths[0].wired_delay_ms, 50.0);
    assert_eq!(
        s.paths[0].reverse_delay_ms(),
        50.0,
        "the way back as the way out"
    );
    assert_eq!(s.braid.loss_timeout_ms, 500.0);
    assert_eq!(s.tcp.config().max_cwnd_pkts, 50);
}

#[test]
fn errors_name_the_key() {
    let e = Scenario::parse(&MIN.replace("MTCP", "FOO"), "t")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("schemes") && e.contains("FOO") && e.contains("PET-BMP"),
        "{e}"
    );
    let e = Scenario::parse(&format!("{MIN}loss = 2.0\n"), "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("path[0].loss"), "{e}");
    // Links the world would build and braid_net::QueuedLink refuse.
    let e = Scenario::parse(&format!("{MIN}uplink_rate_kbps = 0\n"), "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("path[0].uplink_rate_kbps"), "{e}");
    let e = Scenario::parse(&format!("{MIN}wired_reverse_delay_ms = -5\n"), "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("path[0].wired_reverse_delay_ms"), "{e}");
    let e = Scenario::parse(&format!("{MIN}[server]\ndelay_ms = -1\n"), "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("server.delay_ms"), "{e}");
    let two = "name = 'x'\nschemes = ['SRR']\n[[path]]\nrate_kbps = 1\n[[path]]\nrate_kbps = 1\n";
    let e = Scenario::parse(
        &format!("{two}[sweep]\nparam = 'delay'\nvalues = [1]\n"),
        "t",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("sweep.param") && e.contains("bandwidth_ratio"),
        "{e}"
    );
    let e = Scenario::parse(
        &format!("{two}[sweep]\nparam = 'bandwidth_ratio'\nvalues = [2]\n"),
        "t",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sweep.total_rate_kbps"), "{e}");
    let e = Scenario::parse(
        &format!("{MIN}[sweep]\nparam = 'bandwidth_ratio'\nvalues = [2]\ntotal_rate_kbps = 10\n"),
        "t",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("two [[path]]"), "{e}");
    let s = Scenario::parse(
        &format!("{two}[sweep]\nparam = 'total_rate_kbps'\nvalues = [100]\nbandwidth_ratio = 3\n"),
        "t",
    )
    .unwrap();
    assert_eq!(s.sweep.unwrap().at(100.0), (100.0, 3.0));
    let e = Scenario::parse(&format!("{MIN}colour = 1\n"), "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("colour"), "{e}");
}

#[test]
fn a_warmup_must_be_shorter_than_the_run() {
    let top = |extra: &str| MIN.replace("schemes", &format!("{extra}\nschemes"));
    assert_eq!(Scenario::parse(MIN, "t").unwrap().warmup_s, 0.0);
    assert_eq!(
        Scenario::parse(&top("warmup_s = 10.0"), "t")
            .unwrap()
            .warmup_s,
        10.0
    );
    for bad in [
        "warmup_s = 60.0",
        "warmup_s = -1.0",
        "duration_s = 5.0\nwarmup_s = 5.0",
    ] {
        let e = Scenario::parse(&top(bad), "t").unwrap_err().to_string();
        assert!(
            e.contains("warmup_s") && e.contains("duration_s"),
            "{bad}: {e}"
        );
    }
}

/// Goodput after a warm-up leaves the slow start out: on a 1 s round trip
/// it is higher than over the whole run, and the report says so.
#[test]
fn goodput_after_the_warmup_leaves_the_slow_start_out() {
    let file = "name = 'w'\nduration_s = 30.0\nschemes = ['MTCP']\n\
                [tcp]\nmax_cwnd_pkts = 256\n\
                [[path]]\nrate_kbps = 1000\nwired_delay_ms = 500\nqueue_bytes = 10000000\n";
    let whole = Scenario::parse(file, "t").unwrap();
    let warm = Scenario::parse(
        &file.replace("duration_s", "warmup_s = 10.0\nduration_s"),
        "t",
    )
    .unwrap();
    let g = |sc: &Scenario| {
        let out = crate::sweep::run(sc, &crate::SweepOptions::default());
        (out.report.results[0].goodput_kbps, out.report.to_table())
    };
    let ((g_whole, t_whole), (g_warm, t_warm)) = (g(&whole), g(&warm));
    // Nothing drops: after the start-up the path is full.
    assert!(g_warm > 0.9 * 1000.0, "{g_warm}");
    assert!(g_warm > g_whole + 50.0, "{g_warm} vs {g_whole}");
    assert!(t_warm.contains("goodput after the first 10 s"), "{t_warm}");
    assert!(!t_whole.contains("goodput after"), "{t_whole}");
}

/// `wired_reverse_delay_ms` shortens only the way back: a TCP over a
/// 500 ms path whose ACKs come back undelayed has half the round trip, so
/// its slow start fills the path sooner and more arrives in 10 s.
#[test]
fn a_shorter_way_back_shortens_the_round_trip() {
    let file = "name = 'r'\nduration_s = 10.0\nschemes = ['MTCP']\n\
                [tcp]\nmax_cwnd_pkts = 256\n\
                [[path]]\nrate_kbps = 1000\nwired_delay_ms = 500\nqueue_bytes = 10000000\n";
    let both = Scenario::parse(file, "t").unwrap();
    let fwd = Scenario::parse(&format!("{file}wired_reverse_delay_ms = 0\n"), "t").unwrap();
    assert_eq!(fwd.paths[0].reverse_delay_ms(), 0.0);
    let g = |sc: &Scenario| {
        crate::sweep::run(sc, &crate::SweepOptions::default())
            .report
            .results[0]
            .goodput_kbps
    };
    let (g_both, g_fwd) = (g(&both), g(&fwd));
    assert!(g_fwd > 1.2 * g_both, "{g_fwd} vs {g_both}");
}
