//! Two paths must not be slower than one (issue 9, point 7): the real
//! daemons (this build's binary), kernel TUN devices and kernel TCP
//! (iperf3) in two network namespaces joined by two *unshaped* veth pairs,
//! the topology of docs/recipe.sh. There the tunnel, not the links, is the
//! bottleneck: each daemon is bound by its CPU, so a second path can only
//! help if it does not cost more than it carries.
//!
//! One run alternates the client's configuration between one path (a) and
//! two paths (a and b), five times (`BRAID_TWO_PATHS_ROUNDS`), each round with a fresh pair of
//! daemons and one iperf3 upload, and asserts the median two-path
//! throughput is at least 0.95 x the median one-path throughput when
//! `BRAID_TWO_PATHS_STRICT=1` (the issue's target: 1.00, 1.00 and 1.03 in
//! three runs on an idle 2-core machine; 0.89-1.04 in seven runs while
//! other builds loaded it), and at least 0.75 x otherwise, the
//! bound CI holds (the issue reported 0.50-0.60 before the resequencer's
//! release-spacing fix; the noise floor of identical work is about +-12 %). It prints
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
//! (default 5) lengthen it for a measurement.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod ns_util;
use ns_util::{env_or, keygen, ok, sh, wait_for, Lab};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

fn can_run() -> Result<(), String> {
    use braid_lab::preflight::Tool;
    let tools = [
        Tool {
            program: "ip",
            package: "iproute2",
            purpose: "namespaces and veths",
        },
        Tool {
            program: "taskset",
            package: "util-linux",
            purpose: "pinning each side to its own CPU",
        },
        Tool {
            program: "iperf3",
            package: "iperf3",
            purpose: "TCP through the tunnel",
        },
    ];
    ns_util::can_run(&tools)
}

fn status(socket: &Path) -> Option<serde_json::Value> {
    ns_util::status(BRAID, socket)
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

/// The kernel's UDP error counters in namespace `ns` (`/proc/net/snmp`).
fn udp_errors(ns: &str) -> Vec<(String, u64)> {
    let mut udp = braid_lab::snmp::counters(ns, "Udp").unwrap();
    udp.retain(|(k, _)| k.ends_with("Errors"));
    udp
}

/// Packets each device in namespace `ns` dropped so far, sent and received.
fn link_drops(ns: &str) -> Vec<(String, u64)> {
    let j: serde_json::Value =
        serde_json::from_str(&ok(&["ip", "-n", ns, "-s", "-j", "link", "show"])).unwrap();
    j.as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let s = &l["stats64"];
            let n =
                s["rx"]["dropped"].as_u64().unwrap_or(0) + s["tx"]["dropped"].as_u64().unwrap_or(0);
            (l["ifname"].as_str().unwrap_or("?").to_string(), n)
        })
        .collect()
}

/// Times the process was woken (voluntary context switches).
fn wakeups(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `ip` (for `ip netns exec`) pinned to one CPU for `side` and run at a
/// raised priority. The tunnel is bound by its CPU here, so where the
/// machine's scheduler puts the daemons sets the figures: unpinned,
/// uploads in one run fell into two groups (115-200 and 280-410 Mbit/s),
/// one path or two alike, and the two-path median of three rounds ranged
/// from 0.67 to 1.73 times the one-path median. Pinned, the client's side
/// (iperf3 client, `braid client`) on the first CPU and the server's on
/// the last, every round runs alike. The priority keeps other work on a shared host (a
/// compiler) from taking most of the CPU the tunnel needs. `taskset`,
/// `nice` and `ip netns exec` all exec, so the child's pid is the
/// daemon's.
fn pinned(side: Side) -> Command {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = match side {
        Side::Client => 0,
        Side::Server => cpus - 1,
    };
    let mut c = Command::new("taskset");
    c.args([
        "-c",
        &cpu.to_string(),
        "nice",
        "-n",
        &NICE.to_string(),
        "ip",
    ]);
    c
}

#[derive(Copy, Clone)]
enum Side {
    Client,
    Server,
}

/// The priority of the tunnel's daemons and iperf3 (see [`pinned`]).
const NICE: i32 = -10;

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
        let side = if role == "client" {
            Side::Client
        } else {
            Side::Server
        };
        pinned(side)
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
        // BRAID_TWO_PATHS_SCHEDULER=NAME: both daemons schedule with NAME
        // instead of the default (to tell the cost of splitting a stream
        // from that of a second path being there, e.g. with `single`).
        let sched = std::env::var("BRAID_TWO_PATHS_SCHEDULER")
            .map(|s| format!("scheduler = \"{s}\"\n"))
            .unwrap_or_default();
        std::fs::write(
            self.dir.join("server.toml"),
            sched.clone()
                + &format!(
                "listen = \"0.0.0.0:51820\"\nprivate_key_file = \"server.key\"\nnetwork = \"10.77.0.0/24\"\n\
                 control_socket = \"{d}/server.sock\"\n[metrics]\nenabled = false\n\
                 [[client]]\nname = \"lab\"\npublic_key = \"{cpub}\"\n"
            ),
        )
        .unwrap();
        let mut client = sched.clone()
            + &format!(
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
        let iperf_s = pinned(Side::Server)
            .args(["netns", "exec", &self.srv, "iperf3", "-s", "-1", "-B"])
            .arg("10.77.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let _iperf_s = ns_util::Reap(Some(iperf_s));
        std::thread::sleep(Duration::from_millis(300));

        let u0 = (udp_errors(&self.srv), udp_errors(&self.cli));
        let l0 = (link_drops(&self.srv), link_drops(&self.cli));
        // BRAID_TWO_PATHS_PERF=DIR: profile both daemons during the upload
        // (`perf record`, DIR/perf-ROUND-ROLE.data) to see where the CPU goes.
        let perf: Vec<Child> = std::env::var("BRAID_TWO_PATHS_PERF")
            .ok()
            .into_iter()
            .flat_map(|d| [(d.clone(), cpid, "client"), (d, spid, "server")])
            .map(|(d, pid, role)| {
                Command::new("perf")
                    .args([
                        "record",
                        "-q",
                        "-g",
                        "-F",
                        "1999",
                        "-p",
                        &pid.to_string(),
                        "-o",
                    ])
                    .arg(Path::new(&d).join(format!("perf-{tag}-{role}.data")))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("perf")
            })
            .collect();
        let (c0, s0) = (cpu_seconds(cpid), cpu_seconds(spid));
        let (cw0, sw0) = (wakeups(cpid), wakeups(spid));
        let out = pinned(Side::Client)
            .args(["netns", "exec", &self.cli, "iperf3", "-c", "10.77.0.1"])
            .args(["-t", &seconds.to_string(), "-J"])
            .output()
            .unwrap();
        let (c1, s1) = (cpu_seconds(cpid), cpu_seconds(spid));
        for mut p in perf {
            let _ = sh(&["kill", "-INT", &p.id().to_string()]);
            let _ = p.wait();
        }
        let (cw1, sw1) = (wakeups(cpid), wakeups(spid));
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
        // Wake-ups per megabit: per-path timers or sockets that wake a
        // daemon more often show here whatever the machine's load.
        let mut detail = format!(
            " wake-ups per Mbit: client {:.1}, server {:.1};",
            (cw1 - cw0) as f64 * 1e6 / bits,
            (sw1 - sw0) as f64 * 1e6 / bits
        );
        for p in cs["tunnels"][0]["paths"].as_array().unwrap() {
            detail += &format!(
                " path {}: {} data pkts, rtt {:.2} ms, bw {:.0} Mbit/s;",
                p["name"].as_str().unwrap_or("?"),
                p["data_tx_packets"],
                p["rtt_ms"].as_f64().unwrap_or(-1.0),
                p["bandwidth_bps"].as_f64().unwrap_or(0.0) / 1e6,
            );
        }
        // What the server sends back per path: inner data (TCP ACKs) and
        // the rest (feedback, keepalives).
        for p in ss["tunnels"][0]["paths"].as_array().unwrap() {
            let (tx, data) = (
                p["tx_packets"].as_u64().unwrap_or(0),
                p["data_tx_packets"].as_u64().unwrap_or(0),
            );
            detail += &format!(
                " server on {}: {} data + {} other datagrams sent, {} received;",
                p["name"].as_str().unwrap_or("?"),
                data,
                tx.saturating_sub(data),
                p["rx_packets"]
            );
        }
        for (side, s) in [("server", &ss), ("client", &cs)] {
            let t = &s["tunnels"][0];
            detail += &format!(
                " {side} resequencer: released {} lost {} late {} max buffered {} B; pacing drops {};",
                t["reorder_released"],
                t["reorder_lost"],
                t["reorder_late"],
                t["reorder_max_buffered_bytes"],
                t["pacing_drops"],
            );
            // Every drop counter that moved, on either side.
            for (k, v) in s["counters"].as_object().into_iter().flatten() {
                if (k.starts_with("drop_") || k.contains("error")) && v.as_u64() != Some(0) {
                    detail += &format!(" {side} {k} {v};");
                }
            }
        }
        // Datagrams the kernel dropped (a full socket buffer) during the upload.
        for (side, ns, before) in [("server", &self.srv, &u0.0), ("client", &self.cli, &u0.1)] {
            for ((k, v), (_, v0)) in udp_errors(ns).iter().zip(before) {
                if v > v0 {
                    detail += &format!(" {side} kernel Udp {k} {};", v - v0);
                }
            }
        }
        // Packets a device dropped (a TUN's full queue) during the upload.
        for (side, ns, before) in [("server", &self.srv, &l0.0), ("client", &self.cli, &l0.1)] {
            for (dev, n) in link_drops(ns) {
                let n0 = before.iter().find(|(d, _)| *d == dev).map_or(0, |x| x.1);
                if n > n0 {
                    detail += &format!(" {side} {dev} dropped {};", n - n0);
                }
            }
        }
        // What the upload's socket still buffered must not be sent into the
        // next round (`braid_lab::end_leftover_connections`): end it.
        braid_lab::end_connections_in(&[&self.cli, &self.srv], 5201);
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
    let rounds = env_or("BRAID_TWO_PATHS_ROUNDS", 5);
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
    let bound = if std::env::var("BRAID_TWO_PATHS_STRICT").as_deref() == Ok("1") {
        0.95
    } else {
        0.75
    };
    assert!(
        m2 >= bound * m1,
        "two paths delivered {m2:.0} Mbit/s, less than {bound} x one path's {m1:.0} Mbit/s (median of {rounds} rounds each)"
    );
    drop(topo.lab);
}
