//! A braid server under handshake floods, in network namespaces: a client
//! namespace with a legitimate tunnel, a server namespace, and an attacker
//! namespace that floods the server with `braid bench flood` (replayed
//! initiation, valid initiations from unknown keys, the same from spoofed
//! random sources, garbage). For an unflooded baseline and during each
//! flood it measures the tunnel's ping loss and median RTT, iperf3
//! throughput through the tunnel, the time a restarted client takes to
//! handshake, the server's CPU time per datagram of the flood it read,
//! and how often its threads woke up.
//! Under the spoofed flood a brand-new client, from a fourth namespace and
//! an address the server never saw, handshakes too (cookies under load).
//!
//! Throughput is compared with a control as well as with the baseline:
//! the replay flood at the same rate sent to a port nothing listens on,
//! just before and just after each flood. On a machine where the
//! generator shares the server's cores the flood costs the tunnel
//! throughput even when the daemon reads nothing; the ratio to the
//! control is what the daemon's own work costs, and the strict mode holds
//! it to the issue's 80 %. The short form (without `BRAID_FLOOD_STRICT`,
//! as CI runs it) runs one control after the baseline, for the record.
//!
//! Root only (namespaces, TUN, raw sockets): `#[ignore]`d in a plain
//! `cargo test`, run by `bash .ci/run` as root, where it fails if it cannot run. Traffic
//! stays between the test's own namespaces. Run it under the lab lock:
//!
//! ```sh
//! cargo test --release -p braid --test flood -- --ignored --nocapture
//! ```
//!
//! `BRAID_FLOOD_SECONDS` (default 4: half ping, half iperf3) and
//! `BRAID_FLOOD_PPS` (default 300000, 30000 in a debug build) set each
//! flood's length and rate; CI runs the short default. The figures are printed as JSON lines. The
//! restarted client is held to the issue's bounds (1 s; 2 s under the
//! spoofed flood) in every run; the tunnel's figures and the brand-new
//! client's 2 s are the issue's targets when `BRAID_FLOOD_STRICT=1`
//! (throughput: at least 80 % of the control's), and looser bounds
//! otherwise (the brand-new client must get in by its first retry after
//! the flood ends; see docs/DEPLOY.md for measured figures).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod ns_util;
use ns_util::{env_or, keygen, ok, sh, Lab};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

fn can_run() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err("no /dev/net/tun".into());
    }
    for tool in [["ip", "-V"], ["iperf3", "--version"], ["ping", "-V"]] {
        if !Command::new(tool[0])
            .arg(tool[1])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return Err(format!("no `{}` command", tool[0]));
        }
    }
    Ok(())
}

fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if f() {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn status(socket: &Path) -> Option<serde_json::Value> {
    ns_util::status(BRAID, socket)
}

fn counter(s: &serde_json::Value, name: &str) -> u64 {
    s["counters"][name].as_u64().unwrap_or(0)
}

/// utime + stime of a process, from /proc (clock ticks of 10 ms).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15; `rest` starts at field 3.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// Voluntary context switches of all of a process's threads (each one
/// a wake-up after the thread slept, e.g. in `epoll_wait`), from /proc.
fn wakeups(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("status")).ok())
        .filter_map(|st| {
            st.lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .sum()
}

/// Ping through the tunnel: (loss fraction, median RTT in ms).
fn ping(ns: &str, seconds: f64) -> (f64, f64) {
    let count = ((seconds / 0.02) as u32).max(10).to_string();
    let o = sh(&[
        "ip",
        "netns",
        "exec",
        ns,
        "ping",
        "-n",
        "-c",
        &count,
        "-i",
        "0.02",
        "-W",
        "1",
        "10.77.0.1",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    let mut rtts: Vec<f64> = out
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect();
    rtts.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let sent: f64 = count.parse().unwrap();
    let loss = 1.0 - rtts.len() as f64 / sent;
    let median = rtts.get(rtts.len() / 2).copied().unwrap_or(f64::NAN);
    (loss, median)
}

/// iperf3 upload through the tunnel, Mbit/s received.
fn iperf(ns: &str, seconds: f64) -> f64 {
    let t = format!("{:.0}", seconds.max(1.0));
    let o = sh(&[
        "ip",
        "netns",
        "exec",
        ns,
        "iperf3",
        "-c",
        "10.77.0.1",
        "-t",
        &t,
        "-J",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0)
        / 1e6
}

#[derive(Debug)]
struct Row {
    flood: &'static str,
    sent_pps: f64,
    ping_loss: f64,
    rtt_ms: f64,
    mbps: f64,
    restart_s: Option<f64>,
    /// The brand-new client's handshake time during the flood.
    fresh_s: Option<f64>,
    /// Whether it handshook at all, if not during the flood then within
    /// its first retry after the flood ended.
    fresh_in: Option<bool>,
    server_cpu_s: f64,
    /// The server's wake-ups (voluntary context switches) per second.
    server_wakeups_per_s: f64,
    read: u64,
    kernel_drops: u64,
    /// Dropped by the kernel on the handshake socket (buffer full, or
    /// filtered as no initiation).
    kernel_handshake: u64,
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2, iperf3 and ping (bash .ci/run runs it as root)"]
fn server_survives_handshake_floods() {
    if let Err(why) = can_run() {
        panic!("cannot run: {why} (run as root; `bash .ci/run` installs the tools)");
    }
    let seconds: f64 = env_or("BRAID_FLOOD_SECONDS", 4.0);
    // A debug build (plain `cargo test`, as CI runs it) floods at a tenth
    // of the rate: its server and flood generator are that much slower.
    let default_pps = if cfg!(debug_assertions) {
        30_000
    } else {
        300_000
    };
    let pps: u64 = env_or("BRAID_FLOOD_PPS", default_pps);
    let strict = std::env::var("BRAID_FLOOD_STRICT").is_ok_and(|v| v == "1");
    let id = std::process::id();
    let dir = std::env::temp_dir().join(format!("braid-flood-{id}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ns = [
        format!("bfc{id}"),
        format!("bfs{id}"),
        format!("bfa{id}"),
        format!("bfn{id}"),
    ];
    let mut lab = Lab::new(ns.to_vec(), dir.clone());
    let [cli, srv, atk, fresh_ns] = &ns;
    for n in &ns {
        ok(&["ip", "netns", "add", n]);
        ok(&["ip", "-n", n, "link", "set", "lo", "up"]);
    }
    // Client, attacker and brand-new client each have a link to the
    // server.
    for (i, peer) in [(1, cli), (2, atk), (3, fresh_ns)] {
        let (a, b) = (format!("bfp{id}x{i}"), format!("bfq{id}x{i}"));
        let (a, b) = (&a[..a.len().min(15)], &b[..b.len().min(15)]);
        ok(&["ip", "link", "add", a, "type", "veth", "peer", "name", b]);
        ok(&["ip", "link", "set", a, "netns", peer]);
        ok(&["ip", "link", "set", b, "netns", srv]);
        ok(&[
            "ip",
            "-n",
            peer,
            "addr",
            "add",
            &format!("10.89.{i}.2/24"),
            "dev",
            a,
        ]);
        ok(&[
            "ip",
            "-n",
            srv,
            "addr",
            "add",
            &format!("10.89.{i}.1/24"),
            "dev",
            b,
        ]);
        ok(&["ip", "-n", peer, "link", "set", a, "up"]);
        ok(&["ip", "-n", srv, "link", "set", b, "up"]);
    }
    // Spoofed sources: the server's replies to them go back to the
    // attacker's namespace (and die there); no reverse-path filter.
    ok(&[
        "ip",
        "-n",
        srv,
        "route",
        "add",
        "10.200.0.0/16",
        "via",
        "10.89.2.2",
    ]);
    for key in ["all", "default"] {
        ok(&[
            "ip",
            "netns",
            "exec",
            srv,
            "sysctl",
            "-qw",
            &format!("net.ipv4.conf.{key}.rp_filter=0"),
        ]);
    }
    let key = |name: &str| keygen(BRAID, &dir, name);
    let (spub, cpub, fpub) = (key("server.key"), key("client.key"), key("fresh.key"));
    let d = dir.display();
    std::fs::write(
        dir.join("server.toml"),
        format!(
            "listen = \"0.0.0.0:51820\"\nprivate_key_file = \"server.key\"\nnetwork = \"10.77.0.0/24\"\n\
             control_socket = \"{d}/server.sock\"\n[metrics]\nenabled = false\n\
             [[client]]\nname = \"legit\"\npublic_key = \"{cpub}\"\n\
             [[client]]\nname = \"fresh\"\npublic_key = \"{fpub}\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("client.toml"),
        format!(
            "server = \"10.89.1.1:51820\"\nserver_public_key = \"{spub}\"\nprivate_key_file = \"client.key\"\n\
             control_socket = \"{d}/client.sock\"\n[metrics]\nenabled = false\n\
             [[path]]\nname = \"a\"\nbind = \"10.89.1.2\"\n"
        ),
    )
    .unwrap();
    // The brand-new client: its own namespace and address, first started
    // under the spoofed flood.
    std::fs::write(
        dir.join("fresh.toml"),
        format!(
            "server = \"10.89.3.1:51820\"\nserver_public_key = \"{spub}\"\nprivate_key_file = \"fresh.key\"\n\
             control_socket = \"{d}/fresh.sock\"\n[metrics]\nenabled = false\n\
             [[path]]\nname = \"a\"\nbind = \"10.89.3.2\"\n"
        ),
    )
    .unwrap();
    let spawn_in = |ns: &str, args: &[&str], log: &str| -> Child {
        let log = std::fs::File::create(dir.join(log)).unwrap();
        Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let server_toml = dir.join("server.toml");
    let client_toml = dir.join("client.toml");
    let server = spawn_in(
        srv,
        &[BRAID, "server", "--config", server_toml.to_str().unwrap()],
        "server.log",
    );
    let server_pid = server.id();
    lab.children.push(server);
    let server_sock = dir.join("server.sock");
    let client_sock = dir.join("client.sock");
    assert!(wait_for(Duration::from_secs(5), || server_sock.exists()).is_some());
    lab.children.push(spawn_in(
        srv,
        &["iperf3", "-s", "-B", "10.77.0.1"],
        "iperf3.log",
    ));
    let start_client = |lab: &mut Lab| {
        let _ = std::fs::remove_file(&client_sock);
        let c = spawn_in(
            cli,
            &[BRAID, "client", "--config", client_toml.to_str().unwrap()],
            "client.log",
        );
        lab.children.push(c);
    };
    let established =
        || status(&client_sock).is_some_and(|s| s["tunnels"][0]["established"] == true);
    start_client(&mut lab);
    assert!(
        wait_for(Duration::from_secs(10), established).is_some(),
        "tunnel up before the floods"
    );
    std::thread::sleep(Duration::from_millis(500));

    // Every other row is a control: the replay flood at the same rate to
    // a port nothing listens on, so that the server's kernel and the
    // generator cost the machine what they do in a flood, but the
    // daemon reads nothing. What the tunnel loses there is the machine's
    // share, not the daemon's. Each flood is compared with the controls
    // just before and just after it, as the machine's other load drifts.
    let control = ("control", Some("replay"), 51829);
    let flood = |k: &'static str| (k, Some(k), 51820);
    // The strict mode brackets every flood with controls; the short form
    // (CI) runs one control, for the record, and spends its time on the
    // floods' own assertions.
    let kinds: Vec<(&'static str, Option<&str>, u16)> = if strict {
        vec![
            ("baseline", None, 51820),
            control,
            flood("replay"),
            control,
            flood("unknown-key"),
            control,
            flood("spoofed"),
            control,
            flood("garbage"),
            control,
            ("control-last", Some("replay"), 51829),
        ]
    } else {
        vec![
            ("baseline", None, 51820),
            control,
            flood("replay"),
            flood("unknown-key"),
            flood("spoofed"),
            flood("garbage"),
        ]
    };
    let fresh_toml = dir.join("fresh.toml");
    let fresh_sock = dir.join("fresh.sock");
    // How long the brand-new client may take while the flood lasts; the
    // strict bound is the issue's 2 s.
    let fresh_wait = 10.0;
    let half = seconds / 2.0;
    let mut rows = Vec::new();
    for (name, kind, port) in kinds {
        let restart = port == 51820 && matches!(kind, Some("replay" | "unknown-key" | "spoofed"));
        // The flood outlasts the measurements and the client restart.
        let fresh = name == "spoofed";
        let flood_secs =
            seconds + if restart { 4.0 } else { 1.0 } + if fresh { fresh_wait + 1.0 } else { 0.0 };
        let flood_start = Instant::now();
        let flood = kind.map(|k| {
            let mut args = vec![
                BRAID.to_string(),
                "bench".into(),
                "flood".into(),
                "--target".into(),
                format!("10.89.2.1:{port}"),
                "--kind".into(),
                k.into(),
                "--pps".into(),
                pps.to_string(),
                "--seconds".into(),
                format!("{flood_secs}"),
                "--server-key".into(),
                spub.clone(),
            ];
            if k == "replay" {
                args.push("--client-key".into());
                args.push(dir.join("client.key").display().to_string());
            }
            Command::new("ip")
                .args(["netns", "exec", atk])
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        });
        std::thread::sleep(Duration::from_millis(300));
        let before = status(&server_sock).expect("server answers status");
        let cpu0 = cpu_time(server_pid);
        let (wake0, wake_t0) = (wakeups(server_pid), Instant::now());
        let (ping_loss, rtt_ms) = ping(cli, half);
        let mbps = iperf(cli, half);
        let cpu = cpu_time(server_pid) - cpu0;
        let woke = (wakeups(server_pid) - wake0) as f64 / wake_t0.elapsed().as_secs_f64();
        let after = status(&server_sock).expect("server answers status under flood");
        let restart_s = if restart {
            let mut old = lab.children.pop().expect("the client is the last child");
            let _ = sh(&["kill", &old.id().to_string()]);
            let _ = old.wait();
            start_client(&mut lab);
            wait_for(Duration::from_secs(10), established).map(|d| d.as_secs_f64())
        } else {
            None
        };
        let mut fresh_child = None;
        let fresh_s = if fresh {
            let left = flood_secs - 0.5 - flood_start.elapsed().as_secs_f64();
            assert!(
                left >= 2.0,
                "the flood ends too soon for the brand-new client"
            );
            let _ = std::fs::remove_file(&fresh_sock);
            fresh_child = Some(spawn_in(
                fresh_ns,
                &[BRAID, "client", "--config", fresh_toml.to_str().unwrap()],
                "fresh.log",
            ));
            let t = wait_for(Duration::from_secs_f64(left.min(fresh_wait)), || {
                status(&fresh_sock).is_some_and(|s| s["tunnels"][0]["established"] == true)
            })
            .map(|d| d.as_secs_f64());
            // What it saw: cookie replies, attempts.
            if let Some(st) = status(&fresh_sock) {
                eprintln!("brand-new client during the flood: {}", st["counters"]);
            }
            let log = std::fs::read_to_string(dir.join("fresh.log")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "its log: {}",
                lines[lines.len().saturating_sub(8)..].join("\n")
            );
            t
        } else {
            None
        };
        let sent_pps = match flood {
            Some(f) => {
                let o = f.wait_with_output().unwrap();
                let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| {
                    panic!("flood output: {}", String::from_utf8_lossy(&o.stderr))
                });
                v["pps"].as_f64().unwrap_or(0.0)
            }
            None => 0.0,
        };
        // Not in during the flood: it must be by its first retry (5 s)
        // after the flood ended.
        let fresh_in = fresh_child.map(|mut c| {
            let done = fresh_s.is_some()
                || wait_for(Duration::from_secs(7), || {
                    status(&fresh_sock).is_some_and(|s| s["tunnels"][0]["established"] == true)
                })
                .is_some();
            let _ = sh(&["kill", &c.id().to_string()]);
            let _ = c.wait();
            done
        });
        let delta = |n: &str| counter(&after, n) - counter(&before, n);
        let read = delta("rx_datagrams") + delta("drop_handshake_queue") + delta("drop_stale");
        let row = Row {
            flood: name,
            sent_pps,
            ping_loss,
            rtt_ms,
            mbps,
            restart_s,
            fresh_s,
            fresh_in,
            server_cpu_s: cpu.as_secs_f64(),
            server_wakeups_per_s: woke,
            read,
            kernel_drops: delta("drop_kernel_rxq"),
            kernel_handshake: delta("drop_kernel_handshake"),
        };
        // What reached the server's sockets: read, or dropped by the
        // kernel on arrival.
        let arrived = row.read + row.kernel_drops + row.kernel_handshake;
        eprintln!(
            "{{\"flood\":\"{}\",\"sent_pps\":{:.0},\"ping_loss\":{:.4},\"median_rtt_ms\":{:.2},\"iperf_mbps\":{:.1},\"restart_s\":{},\"fresh_client_s\":{},\"server_cpu_s\":{:.2},\"server_wakeups_per_s\":{:.0},\"datagrams_read\":{},\"kernel_drops\":{},\"kernel_handshake_drops\":{},\"server_us_per_datagram_read\":{:.2},\"server_us_per_datagram_arrived\":{:.3}}}",
            row.flood,
            row.sent_pps,
            row.ping_loss,
            row.rtt_ms,
            row.mbps,
            row.restart_s.map_or("null".into(), |s| format!("{s:.2}")),
            match (row.fresh_s, row.fresh_in) {
                (Some(s), _) => format!("{s:.2}"),
                (None, Some(true)) => "\"after the flood\"".into(),
                (None, Some(false)) => "\"never\"".into(),
                (None, None) => "null".into(),
            },
            row.server_cpu_s,
            row.server_wakeups_per_s,
            row.read,
            row.kernel_drops,
            row.kernel_handshake,
            row.server_cpu_s * 1e6 / row.read.max(1) as f64,
            row.server_cpu_s * 1e6 / arrived.max(1) as f64
        );
        if restart {
            // Settle the restarted client before the next flood.
            std::thread::sleep(Duration::from_millis(500));
        }
        rows.push(row);
    }
    let s = status(&server_sock).expect("server alive after the floods");
    eprintln!("server counters after the floods: {}", s["counters"]);
    let base = &rows[0];
    assert!(base.ping_loss <= 0.05, "baseline {base:?}");
    assert!(base.mbps > 0.0, "baseline {base:?}");
    // Throughput during each flood against the baseline and against the
    // controls on either side of it (what the tunnel keeps when the
    // daemon reads nothing).
    let mut of_control = Vec::new();
    for i in 1..rows.len() {
        let r = &rows[i];
        if r.flood.starts_with("control") {
            continue;
        }
        // Only where controls stand on either side (the strict mode).
        let (Some(before), Some(after)) = (rows.get(i - 1), rows.get(i + 1)) else {
            continue;
        };
        if !(before.flood.starts_with("control") && after.flood.starts_with("control")) {
            continue;
        }
        let c = (before.mbps + after.mbps) / 2.0;
        of_control.push((r.flood, r.mbps, c));
    }
    let summary: Vec<String> = of_control
        .iter()
        .map(|(f, mbps, c)| {
            format!(
                "\"{f}\":{{\"mbps\":{mbps:.1},\"control_mbps\":{c:.1},\"of_baseline\":{:.3},\"of_control\":{:.3}}}",
                mbps / base.mbps,
                mbps / c.max(f64::MIN_POSITIVE)
            )
        })
        .collect();
    let mut fields = vec![format!("\"baseline_mbps\":{:.1}", base.mbps)];
    fields.extend(summary);
    eprintln!("{{{}}}", fields.join(","));
    if strict {
        for (f, mbps, c) in &of_control {
            // The daemon's own work costs the tunnel at most 20 % of what
            // it keeps while the same flood goes to a closed port (the
            // spoofed flood has no throughput target).
            if *f != "spoofed" {
                assert!(
                    *mbps >= 0.8 * c,
                    "{f}: {mbps:.1} Mbit/s against the controls' {c:.1}"
                );
            }
        }
    }
    for r in &rows[1..] {
        assert!(r.sent_pps > 0.0, "{r:?}");
        if r.flood.starts_with("control") {
            assert!(r.ping_loss <= 0.2, "{r:?}");
            continue;
        }
        if strict {
            assert!(r.ping_loss <= 0.01, "{r:?}");
            if r.flood != "spoofed" {
                assert!(r.rtt_ms <= base.rtt_ms + 5.0, "{r:?} vs {base:?}");
            }
        } else {
            // The tunnel keeps working through every flood.
            assert!(r.ping_loss <= 0.2, "{r:?}");
            assert!(r.mbps > 0.1 * base.mbps, "{r:?} vs {base:?}");
        }
        if let Some(t) = r.restart_s {
            // The issue's bounds in every run: the restarted client's
            // first initiation comes from a connected address, which the
            // kernel steers past the flood (see daemon/steer.rs).
            let bound = if r.flood == "spoofed" { 2.0 } else { 1.0 };
            assert!(t <= bound, "restarted client took {t} s: {r:?}");
        } else if r.flood != "garbage" {
            panic!("restarted client never handshook: {r:?}");
        }
        if r.flood == "spoofed" {
            // A brand-new client competes with the flood for the handshake
            // socket's reads (see DEPLOY.md); it is never locked out.
            assert_eq!(r.fresh_in, Some(true), "brand-new client: {r:?}");
            if strict {
                assert!(
                    r.fresh_s.is_some_and(|t| t <= 2.0),
                    "brand-new client under the spoofed flood: {r:?}"
                );
            }
        }
    }
    // Every flood left its mark in the counters, and the server's kernel
    // socket drops are visible.
    // Initiations were dropped before the queue and answered with cookies
    // instead of Diffie-Hellman; garbage was sorted as such.
    assert!(counter(&s, "drop_handshake_queue") > 0, "{}", s["counters"]);
    assert!(counter(&s, "handshake_cookie") > 0, "{}", s["counters"]);
    assert!(counter(&s, "handshake_bad_mac") + counter(&s, "drop_malformed") > 0);
    assert!(s["counters"].get("drop_kernel_rxq").is_some());
    assert!(s["counters"].get("drop_kernel_handshake").is_some());
}
