//! The real tunnel in the emulated lab: a 50 MB TCP transfer from the
//! client host to the "internet" server over three paths, one of which is
//! blackholed midway (nothing in or out, as when a link stops answering)
//! and restored. Every byte must arrive: the SHA-256 of what the server
//! received equals that of what the client sent, and the client must have
//! taken the path out of use and back.
//!
//! A second test moves 50 MB over `lab/far.toml` (10 Mbit/20 ms next to
//! 10 Mbit/300 ms): the far path must carry at least a third of the
//! bytes, and the SHA-256 must match; before and after it, a ping
//! through the idle bond must see the near path's round trip (within
//! 5 ms).
//!
//! Needs root, network namespaces, python3, nft and iperf3, so it is
//! `#[ignore]`d (reported as ignored by a plain `cargo test`); `.ci/run`
//! runs it as root with `--include-ignored`, where a missing tool fails it.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use braid_core::sched::SchedulerKind;
use braid_lab::topo::{self, NS_CLI, NS_SRV};
use braid_lab::LabConfig;

const LAB: &str = r#"
name = "transfer-test"
[[path]]
name = "p0"
rate_mbit = 25.0
delay_ms = 5.0
[[path]]
name = "p1"
rate_mbit = 25.0
delay_ms = 10.0
[[path]]
name = "p2"
rate_mbit = 25.0
delay_ms = 15.0
"#;

const BYTES: u64 = 50 * 1000 * 1000;
const PORT: u16 = 5999;

mod ns_util;
use ns_util::{nft, start_sink, start_source, tx_bytes};

#[test]
#[ignore = "needs root, network namespaces, python3, nft and iperf3 (bash .ci/run runs it as root)"]
fn fifty_megabytes_survive_a_path_cut() {
    use braid_lab::preflight::Tool;
    let extra = [
        Tool {
            program: "python3",
            package: "python3",
            purpose: "the test's data source and sink",
        },
        Tool {
            program: "nft",
            package: "nftables",
            purpose: "cutting a path",
        },
    ];
    ns_util::require_lab(&extra);
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_braid"));
    let cfg = LabConfig::from_toml_str(LAB, "test lab").unwrap();
    in_lab(&cfg, &exe, run_transfer);
}

/// Brings the lab of `cfg` up under the lab lock, runs `run` in it and
/// takes the lab down again, whether `run` passed or panicked.
fn in_lab(cfg: &LabConfig, exe: &std::path::Path, run: fn(&LabConfig, &std::path::Path)) {
    let _lock = topo::LabLock::acquire().unwrap();
    braid_lab::up(
        cfg,
        &braid_lab::EmulatorCommand::new(exe).with_args(["lab", "emulate"]),
    )
    .unwrap();
    let result = std::panic::catch_unwind(|| run(cfg, exe));
    braid_lab::down().unwrap();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

fn run_transfer(cfg: &LabConfig, exe: &std::path::Path) {
    let (daemons, teardown) = braid::labtunnel::start(cfg, SchedulerKind::Pet, exe).unwrap();
    let sink = start_sink(PORT);
    let t0 = Instant::now();
    let source = start_source(PORT, BYTES, None);

    // Midway, path 1 stops answering for 3 s, then comes back.
    std::thread::sleep(Duration::from_secs(2));
    let dev = topo::path_if(1);
    nft(
        NS_CLI,
        &format!(
            "table inet braidtest {{\n\
               chain o {{\n type filter hook output priority 0; policy accept;\n oifname \"{dev}\" drop\n }}\n\
               chain i {{\n type filter hook input priority 0; policy accept;\n iifname \"{dev}\" drop\n }}\n\
             }}\n"
        ),
    );
    std::thread::sleep(Duration::from_secs(3));
    nft(NS_CLI, "delete table inet braidtest");

    let sent = source.output();
    let got = sink.output();
    let secs = t0.elapsed().as_secs_f64();
    drop(daemons);
    teardown();
    eprintln!(
        "sent {sent}\ngot  {got}\n{BYTES} bytes in {secs:.1} s ({:.1} Mbit/s)",
        BYTES as f64 * 8.0 / secs / 1e6
    );
    assert!(
        sent.ends_with(&BYTES.to_string()),
        "source did not finish: {sent:?}"
    );
    assert_eq!(sent, got, "what arrived differs from what was sent");

    let log =
        std::fs::read_to_string(format!("{}/client.log", braid::labtunnel::WORK_DIR)).unwrap();
    let down = log
        .lines()
        .position(|l| l.contains("path down") && l.contains("p1"));
    let up_again = down.and_then(|d| {
        log.lines()
            .skip(d)
            .position(|l| l.contains("path up") && l.contains("p1"))
    });
    assert!(
        down.is_some(),
        "the client never took path p1 out of use:\n{log}"
    );
    assert!(up_again.is_some(), "path p1 never came back:\n{log}");
}

#[test]
#[ignore = "needs root, network namespaces, python3 and iperf3 (bash .ci/run runs it as root)"]
fn fifty_megabytes_over_a_far_path() {
    use braid_lab::preflight::Tool;
    let extra = [Tool {
        program: "python3",
        package: "python3",
        purpose: "the test's data source and sink",
    }];
    ns_util::require_lab(&extra);
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_braid"));
    let cfg = braid_lab::shipped("far").unwrap();
    in_lab(&cfg, &exe, run_far_transfer);
}

/// Round trip of an idle bond against its near path (issue 13: "a ping
/// through an idle bond sees the near path's RTT, not the far path's"):
/// the mean of ten pings from the client's tunnel address to the server
/// host, and of ten over path 0 alone (client end to proxy end), after
/// one warm-up each (ARP, and the tunnel's first packet after a pause).
/// Returns (bond, near path) in milliseconds.
fn idle_round_trips() -> (f64, f64) {
    let every = Duration::from_millis(200);
    let ping = |src, dst| {
        braid_lab::ping(NS_CLI, Some(src), dst, 1, every).unwrap();
        braid_lab::ping(NS_CLI, Some(src), dst, 10, every).unwrap()
    };
    let bond = ping(braid::labtunnel::CLIENT_TUNNEL_ADDR, topo::SRV_ADDR);
    let near = ping(topo::cli_addr(0), topo::prx_addr(0));
    eprintln!(
        "idle ping: bond {:.1} ms (min {:.1}, max {:.1}), near path {:.1} ms",
        bond.avg_ms, bond.min_ms, bond.max_ms, near.avg_ms
    );
    assert_eq!(bond.received, bond.sent, "pings lost through the idle bond");
    (bond.avg_ms, near.avg_ms)
}

/// The idle bond's round trip is within 5 ms of the near path's.
fn assert_idle_rtt_near(when: &str) {
    let (bond, near) = idle_round_trips();
    assert!(
        (bond - near).abs() <= 5.0,
        "{when}: an idle bond pings at {bond:.1} ms, the near path at {near:.1} ms"
    );
}

fn run_far_transfer(cfg: &LabConfig, exe: &std::path::Path) {
    let (daemons, teardown) = braid::labtunnel::start(cfg, SchedulerKind::Pet, exe).unwrap();
    assert_idle_rtt_near("before the transfer");
    let sink = start_sink(PORT);
    let before = [tx_bytes(0), tx_bytes(1)];
    let t0 = Instant::now();
    // As the lab bench's iperf3 (`-C cubic`): a host's default may be
    // BBR, whose window of about twice the near path's BDP never covers a
    // path 280 ms further away, so braid rightly keeps off it.
    let source = start_source(PORT, BYTES, Some("cubic"));
    let sent = source.output();
    let got = sink.output();
    let secs = t0.elapsed().as_secs_f64();
    let near = tx_bytes(0) - before[0];
    let far = tx_bytes(1) - before[1];
    let client_status = print_statuses(exe);
    // The far path carried a third of the transfer a moment ago; an idle
    // bond must still answer at the near path's round trip.
    assert_idle_rtt_near("after the transfer");
    drop(daemons);
    teardown();
    // Repair on clean paths costs at most 1 % of the traffic (issue 12):
    // `far` loses nothing on its links, so copies are spurious repairs or
    // repairs of the bottleneck's rare overflows.
    let n = |p: &str| client_status.pointer(p).and_then(|x| x.as_u64());
    let copies = n("/tunnels/0/repair/repairs_sent").expect("client repair counters");
    let packets: u64 = (0..2)
        .filter_map(|i| n(&format!("/tunnels/0/paths/{i}/tx_packets")))
        .sum();
    eprintln!("repair copies {copies} of {packets} packets sent");
    assert!(
        packets > 0 && copies as f64 <= 0.01 * packets as f64,
        "repair sent {copies} copies for {packets} packets on clean paths"
    );
    let far_share = far as f64 / (near + far).max(1) as f64;
    eprintln!(
        "sent {sent}\ngot  {got}\n{BYTES} bytes in {secs:.1} s ({:.1} Mbit/s); \
         near path {near} bytes, far path {far} bytes ({far_share:.3})",
        BYTES as f64 * 8.0 / secs / 1e6
    );
    assert!(
        sent.ends_with(&BYTES.to_string()),
        "source did not finish: {sent:?}"
    );
    assert_eq!(sent, got, "what arrived differs from what was sent");
    assert!(
        far_share >= 1.0 / 3.0,
        "the far path carried {far_share:.3} of the bytes (near {near}, far {far})"
    );
}

/// `lab/lossy.toml` with the lossy path's loss raised to 5 % each way.
const LOSSY_LAB: &str = r#"
name = "lossy-transfer-test"
seed = 1
[[path]]
name = "clean"
rate_mbit = 10.0
delay_ms = 20.0
queue_bytes = 50000
[[path]]
name = "lossy"
rate_mbit = 10.0
delay_ms = 30.0
queue_bytes = 75000
loss = 0.05
"#;

/// TCP segments the kernel of namespace `ns` has retransmitted
/// (`Tcp: RetransSegs` of its /proc/net/snmp). The tunnel itself speaks
/// UDP, so in the client namespace this counts the inner TCP only.
fn retrans_segs(ns: &str) -> u64 {
    braid_lab::snmp::counter(ns, "Tcp", "RetransSegs").unwrap()
}

/// `braid status --json` of the lab tunnel's daemon `sock` ("client" or
/// "server") in namespace `ns`.
fn braid_status(exe: &std::path::Path, ns: &str, sock: &str) -> std::process::Output {
    Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(exe)
        .args(["status", "--json", "--socket"])
        .arg(format!("{}/{sock}.sock", braid::labtunnel::WORK_DIR))
        .output()
        .expect("braid status")
}

/// Prints both daemons' nonzero loss and repair counters and returns the
/// client's `braid status --json`.
fn print_statuses(exe: &std::path::Path) -> serde_json::Value {
    let mut client_status = serde_json::Value::Null;
    for (ns, sock) in [(NS_CLI, "client"), (NS_SRV, "server")] {
        let out = braid_status(exe, ns, sock);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            eprintln!(
                "{sock} status: {e}: {} {}",
                String::from_utf8_lossy(&out.stdout)
                    .chars()
                    .take(300)
                    .collect::<String>(),
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::Value::Null
        });
        let mut found = Vec::new();
        find_leaves(&v, "", &mut found);
        eprintln!("{sock} status: {}", found.join(" "));
        if sock == "client" {
            client_status = v;
        }
    }
    client_status
}

/// The nonzero counters of loss and repair anywhere in `v`, as
/// `path=value`.
fn find_leaves(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    const WORDS: [&str; 7] = [
        "lost",
        "late",
        "repair",
        "skip",
        "drop",
        "hold",
        "congestion",
    ];
    match v {
        serde_json::Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| find_leaves(x, &format!("{at}.{k}"), out)),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| find_leaves(x, &format!("{at}[{i}]"), out)),
        serde_json::Value::Number(n) if n.as_f64().is_some_and(|x| x != 0.0) => {
            let leaf = at.rsplit('.').next().unwrap_or(at);
            if WORDS.iter().any(|w| leaf.contains(w)) {
                out.push(format!("{at}={n}"));
            }
        }
        _ => {}
    }
}

/// A 50 MB TCP upload over a clean path and one losing 5 % of its packets
/// each way: every byte arrives (equal SHA-256), and the inner TCP's
/// retransmissions are reported. The tunnel repairs the path losses, so
/// the inner TCP retransmits far fewer segments than the path lost.
#[test]
#[ignore = "needs root, network namespaces, python3 and iperf3 (bash .ci/run runs it as root)"]
fn fifty_megabytes_over_a_five_percent_lossy_path() {
    ns_util::require_lab(&[]);
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_braid"));
    let cfg = LabConfig::from_toml_str(LOSSY_LAB, "lossy test lab").unwrap();
    in_lab(&cfg, &exe, run_lossy_transfer);
}

fn run_lossy_transfer(cfg: &LabConfig, exe: &std::path::Path) {
    let (daemons, teardown) = braid::labtunnel::start(cfg, SchedulerKind::Pet, exe).unwrap();
    let sink = start_sink(PORT);
    let retrans_before = retrans_segs(NS_CLI);
    let t0 = Instant::now();
    let source = start_source(PORT, BYTES, None);
    let sent = source.output();
    let got = sink.output();
    let secs = t0.elapsed().as_secs_f64();
    let retrans = retrans_segs(NS_CLI) - retrans_before;
    // Where the inner TCP's losses came from: the client's sender (repairs
    // sent, losses passed on as congestion, pacing drops) and the server's
    // resequencer (gaps given up by its timer, repairs that came late).
    let client_status = print_statuses(exe);
    drop(daemons);
    teardown();
    // Full-size segments: about 1.3 kB of payload each through the tunnel.
    let segments = BYTES / 1300;
    eprintln!(
        "sent {sent}\ngot  {got}\n{BYTES} bytes in {secs:.1} s ({:.1} Mbit/s); inner TCP retransmitted {retrans} segments (about {:.3} % of {segments})",
        BYTES as f64 * 8.0 / secs / 1e6,
        retrans as f64 * 100.0 / segments as f64
    );
    assert!(
        sent.ends_with(&BYTES.to_string()),
        "source did not finish: {sent:?}"
    );
    assert_eq!(sent, got, "what arrived differs from what was sent");
    // The lossy path carries about half the segments and loses 5 % of
    // them (2.5 % of all); without repair TCP would retransmit at least
    // that many. The tunnel repairs nearly all of them: in five runs on
    // a loaded machine (load average 13) the client repaired 1800 of the
    // lossy path's 1815 losses (1821 of 1839 in another) and passed the
    // rest on as congestion, and the inner TCP retransmitted 0.55-0.96 %
    // of its segments, about as many as the client's pacing queues
    // dropped (211 retransmissions and 196 drops in one run, 357 and 356
    // in another). Those
    // drops are the tunnel's own congestion signal, passed on by design;
    // the simulation's pacing drops fewer (the daemons' timing on a busy
    // machine delays releases and lets the queue fill). So the bound is
    // on the repair, and on the retransmissions with margin.
    let n = |p: &str| client_status.pointer(p).and_then(|x| x.as_u64());
    let lost = n("/tunnels/0/paths/1/lost_packets");
    let repaired = n("/tunnels/0/paths/1/repair/repaired_arq");
    if let (Some(lost), Some(repaired)) = (lost, repaired) {
        assert!(
            lost > 0 && repaired as f64 >= 0.9 * lost as f64,
            "the lossy path's losses were not repaired: {repaired} of {lost}"
        );
    } else {
        panic!("client status has no per-path repair counters: {client_status}");
    }
    assert!(
        (retrans as f64) < 0.015 * segments as f64,
        "inner TCP retransmitted {retrans} of about {segments} segments"
    );
}

/// Two paths whose delays differ by 30 ms, so that striping reorders
/// nearly every window.
const RPC_LAB: &str = r#"
name = "prism-rpc-test"
[[path]]
name = "near"
rate_mbit = 10.0
delay_ms = 10.0
[[path]]
name = "far"
rate_mbit = 10.0
delay_ms = 40.0
"#;

/// `reorder = "prism-rpc"` in the real tunnel (daemons and core): the
/// client's resequencer is off, so the data reaches the server's TCP out
/// of order, and the client's reverse-path controller holds and rewrites
/// the duplicate ACKs that reordering causes (PRISM Section 5.2.2). The
/// 50 MB must arrive intact, and `braid status` must show the controller
/// at work: ACKs seen, held and rewritten. This test used to stall in most
/// runs (the source never finished): a packet the tunnel dropped before a
/// path left bytes the controller's segment map skipped, and a rewritten
/// ACK acknowledged them (`braid_core::rpc::tcp`, `index_of_sent`).
#[test]
#[ignore = "needs root, network namespaces and python3 (bash .ci/run runs it as root)"]
fn fifty_megabytes_with_prism_reverse_path_control() {
    ns_util::require_lab(&[]);
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_braid"));
    let cfg = LabConfig::from_toml_str(RPC_LAB, "prism-rpc test lab").unwrap();
    in_lab(&cfg, &exe, run_rpc_transfer);
}

fn run_rpc_transfer(cfg: &LabConfig, exe: &std::path::Path) {
    let (daemons, teardown) = braid::labtunnel::start_with(
        cfg,
        SchedulerKind::Pet,
        exe,
        braid::labtunnel::PRISM_RPC_TUNING,
    )
    .unwrap();
    let sink = start_sink(PORT);
    let t0 = Instant::now();
    let source = start_source(PORT, BYTES, None);
    let sent = source.output();
    let got = sink.output();
    let secs = t0.elapsed().as_secs_f64();
    let status = braid_status(exe, NS_CLI, "client");
    drop(daemons);
    teardown();
    eprintln!(
        "sent {sent}\ngot  {got}\n{BYTES} bytes in {secs:.1} s ({:.1} Mbit/s)",
        BYTES as f64 * 8.0 / secs / 1e6
    );
    assert!(
        sent.ends_with(&BYTES.to_string()),
        "source did not finish: {sent:?}"
    );
    assert_eq!(sent, got, "what arrived differs from what was sent");
    let text = String::from_utf8_lossy(&status.stdout);
    let v: serde_json::Value = serde_json::from_str(&text).expect("status JSON");
    let t = &v["tunnels"][0];
    let rpc = &t["rpc"];
    eprintln!(
        "client rpc: {rpc}; resequencer released {}",
        t["reorder_released"]
    );
    let n = |k: &str| {
        rpc[k]
            .as_u64()
            .unwrap_or_else(|| panic!("rpc.{k} in {text}"))
    };
    // About one ACK per two 1.3 kB segments.
    assert!(n("acks_in") > BYTES / 1300 / 4, "{rpc}");
    assert!(n("acks_held") > 0, "no duplicate ACK was held: {rpc}");
    assert!(n("acks_rewritten") > 0, "{rpc}");
}

/// The tunnel shares a path with other traffic as a TCP flow would
/// (`braid_core::sender`'s share cap): on `lab/two-equal.toml` a kernel
/// TCP flow on path `a` beside braid-pet's measurement (`braid lab bench
/// --cross-tcp a`) must get a fair part of that path. Before the cap,
/// the tunnel kept the path's capacity and left that flow 0.30-0.43 of
/// its 10 Mbit/s (three runs); with it, 6.2-6.8. The tunnel must still
/// carry more than the best path alone (9.65 Mbit/s of TCP on one path).
#[test]
#[ignore = "needs root, network namespaces and iperf3 (bash .ci/run runs it as root)"]
fn the_tunnel_leaves_a_competing_flow_its_share_of_a_path() {
    ns_util::require_lab(&[]);
    let report = ns_util::with_shipped_lab("two-equal", |cfg, exe| {
        let mode =
            braid::labtunnel::mode("braid-pet", SchedulerKind::Pet, exe.to_path_buf()).unwrap();
        let opts = braid_lab::BenchOptions {
            duration_s: 10,
            omit_s: 2,
            cross_tcp_path: Some(0),
            ..Default::default()
        };
        braid_lab::bench_with(cfg, &[mode], &opts).unwrap()
    });
    let r = &report.results[0];
    let cross = r.cross_tcp_mbps.expect("cross_tcp_mbps");
    eprintln!(
        "braid-pet {:.2} Mbit/s (paths {:?}), the competing flow on path a {cross:.2}",
        r.goodput_mbps, r.path_mbps
    );
    assert!(
        cross > 3.0,
        "the competing flow got {cross:.2} of path a's 10 Mbit/s beside the tunnel"
    );
    assert!(
        r.goodput_mbps > 10.0,
        "the tunnel carried {:.2} Mbit/s with a competing flow, not more than the best path alone",
        r.goodput_mbps
    );
}
