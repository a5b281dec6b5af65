//! The redundant mode in the emulated lab (Phatak et al. Sec 1,
//! "reliability first"): an interactive flow, a 64-byte UDP request every
//! 20 ms answered by the lab's "internet" server, runs through the real
//! tunnel over two paths; 2 s in, path p0 stops answering (nothing in or
//! out) for the rest of the run.
//!
//! With `[redundancy] enabled = true` every request and response has a
//! copy on the other path: none may be lost, and the flow's p99 round
//! trip must stay within 10 ms of the surviving path's RTT (measured with
//! ping before the run). Without redundancy the same flow must lose
//! packets: a response that never comes or comes after 200 ms, which an
//! interactive application (a call's jitter buffer, a game) treats as lost.
//!
//! Needs root, network namespaces, python3, nft and ping, so it is
//! `#[ignore]`d; `.ci/run` runs it as root with `--include-ignored`,
//! where a missing tool fails it. Run it alone under the lab lock:
//! `flock /tmp/braid-lab.lock cargo test -p braid --test lab_redundant -- --include-ignored --nocapture`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use braid_core::sched::SchedulerKind;
use braid_lab::topo::{self, NS_CLI, NS_SRV};
use braid_lab::LabConfig;

const LAB: &str = r#"
name = "redundant-test"
[[path]]
name = "p0"
rate_mbit = 10.0
delay_ms = 10.0
[[path]]
name = "p1"
rate_mbit = 10.0
delay_ms = 20.0
"#;

const PORT: u16 = 5998;
/// Requests, one every 20 ms: 8 s.
const REQUESTS: u32 = 400;
/// Path p0 is cut this long after the flow starts.
const CUT_AFTER: Duration = Duration::from_secs(2);
/// A response later than this counts as lost to an interactive flow.
const DEADLINE_MS: f64 = 200.0;

/// Answers every datagram with itself.
const ECHO: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
while True:
    b, a = s.recvfrom(2048)
    s.sendto(b, a)
"#;

/// Sends `n` numbered 64-byte requests `gap_ms` apart from `src`, and
/// prints each one's round trip in ms (or -1: no answer within 2 s of the
/// last request), one per line.
const FLOW: &str = r#"
import select, socket, struct, sys, time
dst, port, src, n, gap = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]) / 1e3
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((src, 0))
sent = [None] * n
rtt = [-1.0] * n
t0 = time.monotonic()
i = 0
end = t0 + n * gap + 2.0
while time.monotonic() < end:
    now = time.monotonic()
    if i < n and now >= t0 + i * gap:
        sent[i] = now
        s.sendto(struct.pack("!I", i) + b"x" * 60, (dst, port))
        i += 1
        continue
    wait = (t0 + i * gap) - now if i < n else end - now
    r, _, _ = select.select([s], [], [], max(0.0, min(wait, 0.005)))
    if r:
        b = s.recv(2048)
        k = struct.unpack("!I", b[:4])[0]
        if k < n and sent[k] is not None and rtt[k] < 0:
            rtt[k] = (time.monotonic() - sent[k]) * 1e3
print("\n".join("%.3f" % x for x in rtt), flush=True)
"#;

mod ns_util;
use ns_util::{nft, Reap};

#[test]
#[ignore = "needs root, network namespaces, python3, nft and ping (bash .ci/run runs it as root)"]
fn a_cut_path_costs_a_redundant_interactive_flow_nothing() {
    use braid_lab::preflight::Tool;
    let extra = [
        Tool {
            program: "python3",
            package: "python3",
            purpose: "the test's interactive flow",
        },
        Tool {
            program: "nft",
            package: "nftables",
            purpose: "cutting a path",
        },
        Tool {
            program: "ping",
            package: "iputils-ping",
            purpose: "the surviving path's RTT",
        },
    ];
    ns_util::require_lab(&extra);
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_braid"));
    let cfg = LabConfig::from_toml_str(LAB, "test lab").unwrap();
    let _lock = topo::LabLock::acquire().unwrap();
    braid_lab::up(
        &cfg,
        &braid_lab::EmulatorCommand::new(&exe).with_args(["lab", "emulate"]),
    )
    .unwrap();
    let result = std::panic::catch_unwind(|| check(&cfg, &exe));
    let _ = Command::new("ip")
        .args([
            "netns", "exec", NS_CLI, "nft", "delete", "table", "inet", "braidred",
        ])
        .stderr(Stdio::null())
        .status();
    braid_lab::down().unwrap();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// The surviving path's RTT: the median of 40 pings to the proxy over p1.
fn survivor_rtt_ms() -> f64 {
    let out = Command::new("ip")
        .args([
            "netns", "exec", NS_CLI, "ping", "-n", "-c", "40", "-i", "0.05",
        ])
        .arg(topo::prx_addr(1).to_string())
        .output()
        .expect("ping");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(v.len() >= 30, "ping over p1 failed:\n{text}");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Run {
    rtts: Vec<f64>,
    /// No answer at all.
    lost: usize,
    /// Answered after the interactive deadline.
    late: usize,
    p99: f64,
}

fn flow_run(cfg: &LabConfig, exe: &Path, redundancy: bool) -> Run {
    let extra = if redundancy {
        "[redundancy]\nenabled = true\n"
    } else {
        ""
    };
    let (daemons, teardown) =
        braid::labtunnel::start_with(cfg, SchedulerKind::Pet, exe, extra).unwrap();
    let echo = Reap(Some(
        Command::new("ip")
            .args(["netns", "exec", NS_SRV, "python3", "-c", ECHO])
            .arg(PORT.to_string())
            .spawn()
            .unwrap(),
    ));
    // Both paths up and measured by keepalives before the flow starts.
    std::thread::sleep(Duration::from_secs(2));
    let flow = Reap(Some(
        Command::new("ip")
            .args(["netns", "exec", NS_CLI, "python3", "-c", FLOW])
            .args([
                topo::SRV_ADDR.to_string(),
                PORT.to_string(),
                braid::labtunnel::CLIENT_TUNNEL_ADDR.to_string(),
                REQUESTS.to_string(),
                "20".to_string(),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    std::thread::sleep(CUT_AFTER);
    let dev = topo::path_if(0);
    nft(
        NS_CLI,
        &format!(
            "table inet braidred {{\n\
               chain o {{\n type filter hook output priority 0; policy accept;\n oifname \"{dev}\" drop\n }}\n\
               chain i {{\n type filter hook input priority 0; policy accept;\n iifname \"{dev}\" drop\n }}\n\
             }}\n"
        ),
    );
    let out = flow.output();
    nft(NS_CLI, "delete table inet braidred");
    drop(echo);
    let status = Command::new("ip")
        .args(["netns", "exec", NS_CLI])
        .arg(exe)
        .args(["status", "--json", "--socket"])
        .arg(format!("{}/client.sock", braid::labtunnel::WORK_DIR))
        .output();
    if let Ok(s) = status {
        let text = String::from_utf8_lossy(&s.stdout);
        if let Some(i) = text.find("\"redundant_bytes\"") {
            eprintln!("client status: {}", &text[i..text.len().min(i + 30)]);
        }
    }
    drop(daemons);
    teardown();
    let rtts: Vec<f64> = out.lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert_eq!(rtts.len(), REQUESTS as usize, "flow output: {out}");
    let lost = rtts.iter().filter(|&&r| r < 0.0).count();
    let late = rtts.iter().filter(|&&r| r > DEADLINE_MS).count();
    let mut answered: Vec<f64> = rtts.iter().copied().filter(|&r| r >= 0.0).collect();
    answered.sort_by(f64::total_cmp);
    let p99 = answered
        .get(answered.len() * 99 / 100)
        .copied()
        .unwrap_or(f64::INFINITY);
    Run {
        rtts,
        lost,
        late,
        p99,
    }
}

fn check(cfg: &LabConfig, exe: &Path) {
    let survivor = survivor_rtt_ms();
    let with = flow_run(cfg, exe, true);
    let without = flow_run(cfg, exe, false);
    for (name, r) in [("redundancy", &with), ("no redundancy", &without)] {
        let max = r.rtts.iter().copied().fold(0.0, f64::max);
        eprintln!(
            "{name}: {} requests, lost {}, later than {DEADLINE_MS} ms {}, p99 {:.1} ms, max {max:.1} ms (p1 RTT {survivor:.1} ms)",
            r.rtts.len(),
            r.lost,
            r.late,
            r.p99
        );
    }
    assert_eq!(with.lost, 0, "the redundant flow lost requests");
    assert_eq!(with.late, 0, "the redundant flow had late responses");
    assert!(
        with.p99 <= survivor + 10.0,
        "p99 {:.1} ms is more than 10 ms above the surviving path's RTT {survivor:.1} ms",
        with.p99
    );
    assert!(
        without.lost + without.late > 0,
        "without redundancy the cut cost nothing: the test does not test"
    );
}
