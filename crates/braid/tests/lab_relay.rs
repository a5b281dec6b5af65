//! A community relay (`braid relay`, PRISM Sections 2-3) carries a real
//! TCP transfer in the emulated lab. On `lab/two-equal.toml` the client's
//! second path goes through a relay host (`braid_lab::relayhost`) whose
//! own uplink is that emulated path: the client reaches the relay over a
//! local link, the relay forwards (still encrypted) over its uplink to the
//! server, and the first path goes to the server directly. A 20 MB upload
//! from the client's tunnel address must arrive intact (equal SHA-256);
//! the client must have sent a fair part of it to the relay host, the
//! relay's per-client counters (`braid status` on its control socket)
//! must show it forwarded that part (and no more than crossed its
//! uplink), and both paths must have carried data: the relayed path is
//! scheduled like any other. After the run the path is the client's
//! again.
//!
//! Needs root, network namespaces and python3, so it is `#[ignore]`d
//! (reported as ignored by a plain `cargo test`); `.ci/run` runs it as
//! root with `--include-ignored`, where a missing tool fails it.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use braid_core::sched::SchedulerKind;
use braid_lab::relayhost::CLI_LAN_IF;
use braid_lab::topo::{self, path_if, NS_CLI, NS_RLY};
use braid_lab::LabConfig;

mod ns_util;
use ns_util::{start_sink, start_source, tx_bytes, tx_bytes_in};

const BYTES: u64 = 20 * 1000 * 1000;
const PORT: u16 = 5998;
/// The client's path that goes through the relay.
const RELAYED: usize = 1;

#[test]
#[ignore = "needs root, network namespaces and python3 (bash .ci/run runs it as root)"]
fn a_relay_carries_twenty_megabytes_in_the_lab() {
    use braid_lab::preflight::Tool;
    ns_util::require_lab(&[Tool {
        program: "python3",
        package: "python3",
        purpose: "the test's data source and sink",
    }]);
    ns_util::with_shipped_lab("two-equal", run_relayed_transfer);
}

/// The relay's per-client counters as `braid status --json` reports them
/// (the first admitted client's), and the JSON as text.
fn relay_status(exe: &Path) -> (serde_json::Value, String) {
    let out = Command::new("ip")
        .args(["netns", "exec", NS_RLY])
        .arg(exe)
        .args(["status", "--json", "--socket"])
        .arg(format!("{}/relay.sock", braid::labtunnel::WORK_DIR))
        .output()
        .expect("braid status");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "status JSON ({e}): {text} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(v["role"], "relay", "{text}");
    (v["relayed"][0].clone(), text)
}

fn run_relayed_transfer(cfg: &LabConfig, exe: &Path) {
    // Path 1's interface keeps its counters when it moves to the relay
    // host and back.
    let at_start = tx_bytes(RELAYED);
    let (daemons, teardown) =
        braid::labtunnel::start_relayed(cfg, SchedulerKind::Pet, exe, "", Some(RELAYED)).unwrap();
    let uplink = || tx_bytes_in(NS_RLY, &path_if(RELAYED));
    let local = || tx_bytes_in(NS_CLI, CLI_LAN_IF);
    let sink = start_sink(PORT);
    let before = [tx_bytes(0), uplink(), local()];
    let t0 = Instant::now();
    let source = start_source(PORT, BYTES, None);
    let sent = source.output();
    let got = sink.output();
    let secs = t0.elapsed().as_secs_f64();
    let direct = tx_bytes(0) - before[0];
    let relayed = uplink() - before[1];
    let to_relay = local() - before[2];
    let (counters, status_text) = relay_status(exe);
    drop(daemons);
    let relayed_all = uplink() - at_start;
    teardown();
    let back = ns_util::sh(&["ip", "-n", NS_CLI, "-4", "addr", "show", &path_if(RELAYED)]);
    let c = |k: &str| {
        counters[k]
            .as_u64()
            .unwrap_or_else(|| panic!("no relayed[0].{k} in the relay's status: {status_text}"))
    };
    eprintln!(
        "sent {sent}\ngot  {got}\n{BYTES} bytes in {secs:.1} s ({:.1} Mbit/s); \
         direct path {direct} bytes, client to relay host {to_relay} bytes, \
         relay's uplink {relayed} bytes; relay: {counters}",
        BYTES as f64 * 8.0 / secs / 1e6
    );
    assert!(
        sent.ends_with(&BYTES.to_string()),
        "source did not finish: {sent:?}"
    );
    assert_eq!(sent, got, "what arrived differs from what was sent");
    // Two equal paths: each carries a fair part of the upload.
    assert!(direct > BYTES / 5, "the direct path carried {direct} bytes");
    assert!(
        to_relay > BYTES / 5,
        "the client sent {to_relay} bytes to the relay host"
    );
    assert!(
        relayed > BYTES / 5,
        "the relay's uplink (the relayed path) carried {relayed} bytes"
    );
    // The relay forwarded that path's datagrams (UDP payloads, so fewer
    // bytes than the frames on the path's interface) and the replies.
    let up = c("up_bytes");
    assert!(up > BYTES / 5, "the relay carried {up} bytes up of {BYTES}");
    assert!(
        up <= relayed_all,
        "the relay counted {up} bytes up, more than the {relayed_all} bytes that crossed its uplink while it ran"
    );
    assert!(
        c("down_packets") > 0,
        "no reply came back through the relay"
    );
    assert_eq!(
        c("up_limited") + c("down_limited"),
        0,
        "the relay's rate limit dropped datagrams"
    );
    let back = String::from_utf8_lossy(&back.stdout);
    assert!(
        back.contains(&format!("{}/24", topo::cli_addr(RELAYED))),
        "after the run path {RELAYED} is not the client's again: {back}"
    );
}
