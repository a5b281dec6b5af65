//! Unit tests of scenario parsing and checking.

use super::*;

const MIN: &str = "name = 'x'\nschemes = ['MTCP']\n[[path]]\nrate_kbps = 100\n";

#[test]
fn minimal_file_parses_with_defaults() {
    let s = Scenario::parse(MIN, "t").unwrap();
    assert_eq!(s.paths[0].wired_delay_ms, 50.0);
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
