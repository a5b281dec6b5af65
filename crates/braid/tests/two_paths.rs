//! Two paths must not be slower than one (issue 9, point 7): the real
//! daemons (this build's binary), kernel TUN devices and kernel TCP
//! (iperf3) in two network namespaces joined by two *unshaped* veth pairs,
//! the topology of docs/recipe.sh. There the tunnel, not the links, is the
//! bottleneck: each daemon is bound by its CPU, so a second path can only
//! help if it does not cost more than it carries.
//!
//! One run alternates the client's configuration between one path (a) and
//! two paths (a and b), `ROUNDS` times, each round with a fresh pair of
//! daemons and one iperf3 upload, and asserts the median two-path
//! throughput is at least 0.95 x the median one-path throughput. It prints
//! each round's throughput, the inner TCP's retransmissions and both
//! daemons' CPU per bit (from /proc/PID/stat), and the paths' shares and
//! resequencer counters, so a failure says where the cost went.
//!
//! Root only (namespaces, TUN), so `#[ignore]`d like the other netns
//! tests; `.ci/run` runs it as root with `--include-ignored`. Run it alone
//! and under the lab lock, since the figures are CPU figures:
//!
//! ```text
//! flock /tmp/braid-lab.lock cargo test -p braid --test two_paths -- --include-ignored --nocapture
//! ```
//! `BRAID_TWO_PATHS_SECONDS` (default 3) and `BRAID_TWO_PATHS_ROUNDS`
//! (default 3) lengthen it for a measurement.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod ns_util;
use ns_util::{keygen, ok, sh, Lab};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

fn can_run() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err("no /dev/net/tun".into());
    }
    use braid_lab::preflight::{ensure, Lookup, Tool};
    let tools = [
        Tool {
            program: "ip",
            package: "iproute2",
            purpose: "namespaces and veths",
        },
        Tool {
            program: "iperf3",
            package: "iperf3",
            purpose: "TCP through the tunnel",
        },
    ];
    ensure(&tools, &Lookup::from_env(), None)
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}");
}

fn status(socket: &Path) -> Option<serde_json::Value> {
    let o = sh(&[
        BRAID,
        "status",
        "--json",
        "--socket",
        socket.to_str().unwrap(),
    ]);
    if !o.status.success() {
        return None;
    }
    serde_json::from_slice(&o.stdout).ok()
}

/// CPU time (user + system) the process has used, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces), from the
    // last ')': state is field 3, utime 14 and stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// One upload's figures.
#[derive(Debug)]
struct Round {
    mbps: f64,
    retransmits: u64,
    /// CPU nanoseconds per delivered bit, client and server.
    client_ns_per_bit: f64,
    server_ns_per_bit: f64,
    detail: String,
}

struct Topology {
    lab: Lab,
    cli: String,
    srv: String,
    dir: PathBuf,
    spub: String,
    cpub: String,
}

fn build() -> Topology {
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("braid-twopaths-{id}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (cli, srv) = (format!("b2p-c{id}"), format!("b2p-s{id}"));
    let lab = Lab::new(vec![cli.clone(), srv.clone()], dir.clone());
    ok(&["ip", "netns", "add", &cli]);
    ok(&["ip", "netns", "add", &srv]);
    for ns in [&cli, &srv] {
        ok(&["ip", "-n", ns, "link", "set", "lo", "up"]);
    }
    for i in 1..=2 {
        // Interface names are limited to 15 characters.
        let tail = id % 10_000_000;
        let (c, s) = (format!("b2c{tail}x{i}"), format!("b2s{tail}x{i}"));
        ok(&["ip", "link", "add", &c, "type", "veth", "peer", "name", &s]);
        ok(&["ip", "link", "set", &c, "netns", &cli]);
        ok(&["ip", "link", "set", &s, "netns", &srv]);
        let (ca, sa) = (format!("10.88.{i}.2/24"), format!("10.88.{i}.1/24"));
        ok(&["ip", "-n", &cli, "addr", "add", &ca, "dev", &c]);
        ok(&["ip", "-n", &srv, "addr", "add", &sa, "dev", &s]);
        ok(&["ip", "-n", &cli, "link", "set", &c, "up"]);
        ok(&["ip", "-n", &srv, "link", "set", &s, "up"]);
    }
    let key = |name: &str| keygen(BRAID, &dir, name);
    let (spub, cpub) = (key("server.key"), key("client.key"));
    Topology {
        lab,
        cli,
        srv,
        dir,
        spub,
        cpub,
    }
}

impl Topology {
    fn spawn(&self, ns: &str, role: &str, tag: &str) -> Child {
        let log = std::fs::File::create(self.dir.join(format!("{role}-{tag}.log"))).unwrap();
        Command::new("ip")
            .args(["netns", "exec", ns, BRAID, role, "--config"])
            .arg(self.dir.join(format!("{role}.toml")))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    /// One upload through `paths` (1 or 2) with fresh daemons.
    fn round(&mut self, paths: usize, seconds: u64, tag: &str) -> Round {
        let d = self.dir.display();
        let (spub, cpub) = (&self.spub, &self.cpub);
        std::fs::write(
            self.dir.join("server.toml"),
            format!(
                "listen = \"0.0.0.0:51820\"\nprivate_key_file = \"server.key\"\nnetwork = \"10.77.0.0/24\"\n\
                 control_socket = \"{d}/server.sock\"\n[metrics]\nenabled = false\n\
                 [[client]]\nname = \"lab\"\npublic_key = \"{cpub}\"\n"
            ),
        )
        .unwrap();
        let mut client = format!(
            "server = \"10.88.1.1:51820\"\nserver_public_key = \"{spub}\"\nprivate_key_file = \"client.key\"\n\
             control_socket = \"{d}/client.sock\"\n[metrics]\nenabled = false\n\
             [[path]]\nname = \"a\"\nbind = \"10.88.1.2\"\n"
        );
        if paths == 2 {
            client +=
                "[[path]]\nname = \"b\"\nbind = \"10.88.2.2\"\nserver = \"10.88.2.1:51820\"\n";
        }
        std::fs::write(self.dir.join("client.toml"), client).unwrap();
        let (ssock, csock) = (self.dir.join("server.sock"), self.dir.join("client.sock"));
        let _ = std::fs::remove_file(&ssock);
        let _ = std::fs::remove_file(&csock);

        let server = self.spawn(&self.srv.clone(), "server", tag);
        let (spid, start) = (server.id(), self.lab.children.len());
        self.lab.children.push(server);
        wait_for(
            "the server's control socket",
            Duration::from_secs(5),
            || ssock.exists(),
        );
        let client = self.spawn(&self.cli.clone(), "client", tag);
        let cpid = client.id();
        self.lab.children.push(client);
        wait_for(
            "the tunnel and its paths up",
            Duration::from_secs(10),
            || {
                status(&csock).is_some_and(|s| {
                    s["tunnels"][0]["established"] == true
                        && s["tunnels"][0]["paths"]
                            .as_array()
                            .is_some_and(|p| p.len() == paths && p.iter().all(|p| p["up"] == true))
                })
            },
        );
        let iperf_s = Command::new("ip")
            .args(["netns", "exec", &self.srv, "iperf3", "-s", "-1", "-B"])
            .arg("10.77.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let _iperf_s = ns_util::Reap(Some(iperf_s));
        std::thread::sleep(Duration::from_millis(300));

        let (c0, s0) = (cpu_seconds(cpid), cpu_seconds(spid));
        let out = Command::new("ip")
            .args(["netns", "exec", &self.cli, "iperf3", "-c", "10.77.0.1"])
            .args(["-t", &seconds.to_string(), "-J"])
            .output()
            .unwrap();
        let (c1, s1) = (cpu_seconds(cpid), cpu_seconds(spid));
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "iperf3 gave no JSON ({e}): {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let sent = &j["end"]["sum_sent"];
        let bps = j["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or_else(|| panic!("no throughput in iperf3's report: {j}"));
        let bits = bps * seconds as f64;
        let retransmits = sent["retransmits"].as_u64().unwrap_or(0);

        let (cs, ss) = (status(&csock).unwrap(), status(&ssock).unwrap());
        let mut detail = String::new();
        for p in cs["tunnels"][0]["paths"].as_array().unwrap() {
            detail += &format!(
                " path {}: {} data pkts, rtt {:.2} ms, bw {:.0} Mbit/s;",
                p["name"].as_str().unwrap_or("?"),
                p["data_tx_packets"],
                p["rtt_ms"].as_f64().unwrap_or(-1.0),
                p["bandwidth_bps"].as_f64().unwrap_or(0.0) / 1e6,
            );
        }
        let t = &ss["tunnels"][0];
        detail += &format!(
            " server resequencer: released {} lost {} late {} max buffered {} B; client pacing drops {}",
            t["reorder_released"],
            t["reorder_lost"],
            t["reorder_late"],
            t["reorder_max_buffered_bytes"],
            cs["tunnels"][0]["pacing_drops"],
        );

        // Stop this round's daemons (the Lab's drop would too, at the end).
        for c in self.lab.children.drain(start..).collect::<Vec<_>>() {
            let mut c = c;
            let _ = sh(&["kill", &c.id().to_string()]);
            let _ = c.wait();
        }
        Round {
            mbps: bps / 1e6,
            retransmits,
            client_ns_per_bit: (c1 - c0) * 1e9 / bits,
            server_ns_per_bit: (s1 - s0) * 1e9 / bits,
            detail,
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iperf3 (bash .ci/run runs it as root)"]
fn two_unshaped_paths_deliver_at_least_one_paths_throughput() {
    if let Err(why) = can_run() {
        panic!("cannot run: {why} (run as root; `bash .ci/run` installs the tools)");
    }
    let seconds = env_or("BRAID_TWO_PATHS_SECONDS", 3);
    let rounds = env_or("BRAID_TWO_PATHS_ROUNDS", 3);
    let mut topo = build();
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        // Alternate which goes first, so a drift in the machine's load
        // (other work on a shared host) weighs on both alike.
        let order: [usize; 2] = if r % 2 == 0 { [1, 2] } else { [2, 1] };
        for paths in order {
            let x = topo.round(paths, seconds, &format!("{r}-{paths}"));
            eprintln!(
                "round {r}, {paths} path(s): {:.0} Mbit/s, {} TCP retransmits, CPU {:.2} ns/bit client, {:.2} ns/bit server;{}",
                x.mbps, x.retransmits, x.client_ns_per_bit, x.server_ns_per_bit, x.detail
            );
            if paths == 1 { &mut one } else { &mut two }.push(x);
        }
    }
    let m1 = median(one.iter().map(|r| r.mbps).collect());
    let m2 = median(two.iter().map(|r| r.mbps).collect());
    let cpu = |v: &[Round]| {
        median(
            v.iter()
                .map(|r| r.client_ns_per_bit + r.server_ns_per_bit)
                .collect(),
        )
    };
    eprintln!(
        "median: one path {m1:.0} Mbit/s ({:.2} ns/bit both daemons), two paths {m2:.0} Mbit/s ({:.2} ns/bit); ratio {:.2}",
        cpu(&one),
        cpu(&two),
        m2 / m1
    );
    assert!(m1 > 0.0 && m2 > 0.0, "no traffic: {one:?} {two:?}");
    assert!(
        m2 >= 0.95 * m1,
        "two paths delivered {m2:.0} Mbit/s, less than 0.95 x one path's {m1:.0} Mbit/s (median of {rounds} rounds each)"
    );
    drop(topo.lab);
}
