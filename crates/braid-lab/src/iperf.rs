//! Measurement tools run inside the lab: iperf3 (TCP/UDP, optionally under
//! `mptcpize` for kernel MPTCP) and ping.
//!
//! iperf3 is used because it is what people compare against; we always take
//! the *receiver's* `bits_per_second` as goodput (what actually arrived), not
//! what the sender pushed into its socket.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::cmd::{ns_command, ns_run, NsProcess};
use crate::topo;

/// One iperf3 run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IperfSpec {
    /// Namespace of the iperf3 client (default braid-cli).
    pub client_ns: String,
    /// Namespace of the iperf3 server (default braid-srv).
    pub server_ns: String,
    /// Address the client connects to (default the server 10.78.0.2).
    pub target: Ipv4Addr,
    pub port: u16,
    /// Client source address (`-B`), e.g. a path address 10.77.i.1.
    pub bind: Option<Ipv4Addr>,
    pub duration_s: u32,
    /// Seconds at the start excluded from the result (`-O`).
    pub omit_s: u32,
    /// Server sends, client receives (`-R`).
    pub reverse: bool,
    /// Run both ends under `mptcpize run` (kernel MPTCP).
    pub mptcp: bool,
    /// UDP at this offered rate instead of TCP.
    pub udp_rate_mbit: Option<f64>,
    /// UDP payload length (`-l`); IP packet = len + 28.
    pub udp_len: u32,
    /// Parallel streams (`-P`).
    pub streams: u32,
    /// TCP congestion control of the sender (`-C`). The comparisons are of
    /// kernel CUBIC, whatever the host's default is.
    pub congestion: Option<String>,
    /// Also collect the receiver's per-second intervals
    /// ([`IperfResult::intervals`]); for an upload this asks the server for
    /// its report (`--get-server-output`).
    #[serde(default)]
    pub intervals: bool,
}

impl Default for IperfSpec {
    fn default() -> Self {
        IperfSpec {
            client_ns: topo::NS_CLI.into(),
            server_ns: topo::NS_SRV.into(),
            target: topo::SRV_ADDR,
            port: 5201,
            bind: None,
            duration_s: 10,
            omit_s: 0,
            reverse: false,
            mptcp: false,
            udp_rate_mbit: None,
            udp_len: 1400,
            streams: 1,
            congestion: Some("cubic".into()),
            intervals: false,
        }
    }
}

/// Result of one iperf3 run (rates in Mbit/s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IperfResult {
    /// Receiver's rate = goodput.
    pub received_mbps: f64,
    /// Sender's rate.
    pub sent_mbps: f64,
    pub received_bytes: u64,
    /// Length of the receiver's measurement interval.
    pub seconds: f64,
    /// TCP retransmissions (sender side), if reported.
    pub retransmits: Option<u64>,
    /// UDP loss percentage, if UDP.
    pub lost_percent: Option<f64>,
    /// UDP jitter (RFC 3550's smoothed interarrival variation) the
    /// receiver measured, in ms, if UDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// The receiver's reporting intervals, in order, the omitted start-up
    /// included (empty unless [`IperfSpec::intervals`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<Interval>,
}

/// One reporting interval of the receiving end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Start, in seconds since the test began (omitted start-up included).
    pub start_s: f64,
    pub seconds: f64,
    pub bytes: u64,
}

impl IperfResult {
    /// Goodput (Mbit/s) over the receiver's intervals that start at or after
    /// `from_s` seconds into the test (the omitted start-up counts towards
    /// `from_s`), or `None` if there is no such interval.
    pub fn goodput_from_mbps(&self, from_s: f64) -> Option<f64> {
        let (secs, bytes) = self
            .intervals
            .iter()
            .filter(|i| i.start_s >= from_s - 1e-3)
            .fold((0.0, 0u64), |(s, b), i| (s + i.seconds, b + i.bytes));
        (secs > 0.0).then(|| bytes as f64 * 8.0 / secs / 1e6)
    }
}

/// The receiver's intervals from iperf3 `-J` output: the client's own
/// intervals when it received (`-R`), else the server's report
/// (`server_output_json`, present with `--get-server-output`). `omit_s` is
/// the `-O` value: if the report leaves the omitted intervals out, the
/// remaining ones start that much later into the test.
fn receiver_intervals(v: &serde_json::Value, reverse: bool, omit_s: u32) -> Vec<Interval> {
    let side = if reverse {
        Some(v)
    } else {
        v.get("server_output_json")
    };
    let Some(list) = side
        .and_then(|s| s.get("intervals"))
        .and_then(|i| i.as_array())
    else {
        return Vec::new();
    };
    let sums: Vec<&serde_json::Value> = list.iter().filter_map(|i| i.get("sum")).collect();
    let has_omitted = sums
        .iter()
        .any(|s| s.get("omitted").and_then(|o| o.as_bool()) == Some(true));
    let mut t = if has_omitted { 0.0 } else { omit_s as f64 };
    let mut out = Vec::with_capacity(sums.len());
    for s in sums {
        let seconds = s.get("seconds").and_then(|x| x.as_f64()).unwrap_or(0.0);
        let bytes = s.get("bytes").and_then(|x| x.as_f64()).unwrap_or(0.0) as u64;
        out.push(Interval {
            start_s: t,
            seconds,
            bytes,
        });
        t += seconds;
    }
    out
}

/// Parse iperf3 `-J` output.
pub fn parse_iperf_json(text: &str) -> anyhow::Result<IperfResult> {
    let v: serde_json::Value = serde_json::from_str(text).context("iperf3 did not print JSON")?;
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        bail!("iperf3 error: {err}");
    }
    let end = v.get("end").context("iperf3 JSON has no `end` section")?;
    let recv = end
        .get("sum_received")
        .context("iperf3 JSON has no end.sum_received")?;
    let sent = end.get("sum_sent").or_else(|| end.get("sum"));
    let f =
        |o: Option<&serde_json::Value>, k: &str| o.and_then(|o| o.get(k)).and_then(|x| x.as_f64());
    Ok(IperfResult {
        received_mbps: f(Some(recv), "bits_per_second").context("no receiver bits_per_second")?
            / 1e6,
        sent_mbps: f(sent, "bits_per_second").unwrap_or(0.0) / 1e6,
        received_bytes: f(Some(recv), "bytes").unwrap_or(0.0) as u64,
        seconds: f(Some(recv), "seconds").unwrap_or(0.0),
        retransmits: sent
            .and_then(|s| s.get("retransmits"))
            .and_then(|x| x.as_u64()),
        lost_percent: f(end.get("sum"), "lost_percent").or(f(Some(recv), "lost_percent")),
        jitter_ms: f(end.get("sum"), "jitter_ms").or(f(Some(recv), "jitter_ms")),
        intervals: Vec::new(),
    })
}

fn wrap(mptcp: bool, argv: Vec<String>) -> Vec<String> {
    if mptcp {
        let mut w = vec!["mptcpize".to_string(), "run".to_string()];
        w.extend(argv);
        w
    } else {
        argv
    }
}

/// Wait until something listens on `port` in `ns` (TCP or MPTCP).
fn wait_listening(ns: &str, port: u16, server: &mut NsProcess) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let filter = format!("sport = :{port}");
    loop {
        if let Some(st) = server.try_wait() {
            bail!("iperf3 server exited early ({st})");
        }
        // A failure to run `ss` is reported as such, never as "not listening".
        let out = ns_run(ns, &["ss", "-Hlnt", &filter]).context(
            "checking for iperf3's listening socket with `ss` (apt-get install iproute2)",
        )?;
        if !out.trim().is_empty() {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(5) {
            bail!("iperf3 server in {ns} is not listening on port {port} after 5 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run one iperf3 measurement: start a one-shot server, run the client with
/// `-J`, return the parsed result. Both processes are stopped on any error.
pub fn run_iperf3(spec: &IperfSpec) -> anyhow::Result<IperfResult> {
    let port = spec.port.to_string();
    let mut srv = vec![
        "iperf3".to_string(),
        "-s".into(),
        "-1".into(),
        "-p".into(),
        port.clone(),
    ];
    if spec.intervals && !spec.reverse {
        // `--get-server-output` hands the client the server's report as
        // JSON only if the server itself reports in JSON.
        srv.push("-J".into());
    }
    let srv_argv = wrap(spec.mptcp, srv);
    let mut server = NsProcess::spawn(&spec.server_ns, &srv_argv, None)?;
    wait_listening(&spec.server_ns, spec.port, &mut server)?;

    let mut argv: Vec<String> = vec!["iperf3", "-c", &spec.target.to_string(), "-p", &port, "-J"]
        .into_iter()
        .map(String::from)
        .collect();
    argv.extend(["-t".into(), spec.duration_s.to_string()]);
    if spec.omit_s > 0 {
        argv.extend(["-O".into(), spec.omit_s.to_string()]);
    }
    if let Some(b) = spec.bind {
        argv.extend(["-B".into(), b.to_string()]);
    }
    if spec.reverse {
        argv.push("-R".into());
    } else if spec.intervals {
        argv.push("--get-server-output".into());
    }
    if spec.streams > 1 {
        argv.extend(["-P".into(), spec.streams.to_string()]);
    }
    if let (Some(cc), None) = (&spec.congestion, spec.udp_rate_mbit) {
        argv.extend(["-C".into(), cc.clone()]);
    }
    if let Some(r) = spec.udp_rate_mbit {
        argv.extend([
            "-u".into(),
            "-b".into(),
            format!("{}K", (r * 1000.0).round() as u64),
            "-l".into(),
            spec.udp_len.to_string(),
            // Socket buffers of up to 4 MB: a receiver that a busy machine
            // leaves unscheduled for a few hundred milliseconds would
            // otherwise overflow a 208 KiB buffer and report datagrams the
            // path delivered as lost.
            "-w".into(),
            udp_socket_buffer().to_string(),
        ]);
    }
    let argv = wrap(spec.mptcp, argv);
    let mut cmd = ns_command(&spec.client_ns, &argv);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().context("starting iperf3 client")?;
    let pid = child.id() as i32;
    // Watchdog: a wedged client (e.g. path down) must not hang the bench.
    let limit = Duration::from_secs((spec.duration_s + spec.omit_s) as u64 + 30);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = done.clone();
    let watchdog = std::thread::spawn(move || {
        let t0 = Instant::now();
        while !d2.load(std::sync::atomic::Ordering::Relaxed) {
            if t0.elapsed() > limit {
                crate::cmd::signal(pid, libc::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let out = child.wait_with_output();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = watchdog.join();
    let out = out.context("waiting for iperf3 client")?;
    let _ = server.wait_timeout(Duration::from_secs(2));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut r = parse_iperf_json(&text).with_context(|| {
        format!(
            "iperf3 client `{}` failed ({}): {}",
            argv.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    if spec.intervals {
        let v: serde_json::Value = serde_json::from_str(&text)?;
        r.intervals = receiver_intervals(&v, spec.reverse, spec.omit_s);
        if r.intervals.is_empty() {
            bail!(
                "iperf3 reported no receiver intervals (`{}`)",
                argv.join(" ")
            );
        }
    }
    Ok(r)
}

/// The UDP socket buffer to ask iperf3 for: 4 MB, or less where the
/// kernel caps buffers lower (`net.core.rmem_max`/`wmem_max`, 208 KiB on
/// many kernels). iperf3 refuses to run at all when it gets less than it
/// asked for ("socket buffer size not set correctly").
fn udp_socket_buffer() -> u64 {
    let cap = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    [cap("rmem_max"), cap("wmem_max")]
        .into_iter()
        .flatten()
        .fold(4 << 20, u64::min)
}

/// Summary of a ping run (milliseconds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingStats {
    pub sent: u32,
    pub received: u32,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub mdev_ms: f64,
}

/// Parse the summary lines of iputils `ping`.
pub fn parse_ping(text: &str) -> anyhow::Result<PingStats> {
    let mut sent = 0;
    let mut received = 0;
    let mut rtt = None;
    for line in text.lines() {
        if line.contains("packets transmitted") {
            let nums: Vec<u32> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|s| s.parse().ok())
                .collect();
            if nums.len() >= 2 {
                sent = nums[0];
                received = nums[1];
            }
        }
        if let Some((_, r)) = line.split_once(" = ") {
            if line.starts_with("rtt") || line.starts_with("round-trip") {
                // "40.4/44.5/81.0/12.1 ms" optionally followed by ", pipe 4"
                let r = r.split(" ms").next().unwrap_or("");
                let v: Vec<f64> = r.split('/').filter_map(|x| x.trim().parse().ok()).collect();
                if v.len() == 4 {
                    rtt = Some((v[0], v[1], v[2], v[3]));
                }
            }
        }
    }
    let (min_ms, avg_ms, max_ms, mdev_ms) =
        rtt.context("no rtt line in ping output (all lost?)")?;
    Ok(PingStats {
        sent,
        received,
        min_ms,
        avg_ms,
        max_ms,
        mdev_ms,
    })
}

/// Ping `dst` from `ns` (optionally from source `src`) `count` times every
/// `interval`. The paths' ends know each other's link addresses
/// (`topo::pin_neighbour`), but the first reply of a fresh lab may still
/// include address resolution on the proxy's link to the server, so
/// callers that want the path RTT should send a warm-up ping first.
pub fn ping(
    ns: &str,
    src: Option<Ipv4Addr>,
    dst: Ipv4Addr,
    count: u32,
    interval: Duration,
) -> anyhow::Result<PingStats> {
    let mut argv = vec![
        "ping".to_string(),
        "-n".into(),
        "-q".into(),
        "-c".into(),
        count.to_string(),
        "-i".into(),
        format!("{:.3}", interval.as_secs_f64()),
    ];
    if let Some(s) = src {
        argv.extend(["-I".into(), s.to_string()]);
    }
    argv.push(dst.to_string());
    let mut cmd = ns_command(ns, &argv);
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .context("running ping (apt-get install iputils-ping)")?;
    parse_ping(&String::from_utf8_lossy(&out.stdout)).with_context(|| {
        format!(
            "`{}`: {}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ping_summary() {
        let t = "--- 10.77.0.2 ping statistics ---\n10 packets transmitted, 9 received, 10% packet loss, time 1808ms\nrtt min/avg/max/mdev = 40.420/44.537/81.066/12.176 ms\n";
        let p = parse_ping(t).unwrap();
        assert_eq!((p.sent, p.received), (10, 9));
        assert_eq!(p.avg_ms, 44.537);
        let t = "5 packets transmitted, 5 received, 0% packet loss, time 215ms\nrtt min/avg/max/mdev = 200.919/200.936/200.962/0.014 ms, pipe 4\n";
        assert_eq!(parse_ping(t).unwrap().max_ms, 200.962);
    }

    #[test]
    fn goodput_from_a_second_counts_only_later_intervals() {
        // Upload: the server's report, with two omitted start-up seconds
        // that restart the interval clock (as iperf3 does).
        let iv = |start: f64, bytes: u64, omitted: bool| {
            format!(
                r#"{{"sum":{{"start":{start},"end":{},"seconds":1.0,"bytes":{bytes},"omitted":{omitted}}}}}"#,
                start + 1.0
            )
        };
        let server = [
            iv(0.0, 100_000, true),
            iv(1.0, 200_000, true),
            iv(0.0, 1_000_000, false),
            iv(1.0, 1_000_000, false),
            iv(2.0, 2_000_000, false),
            iv(3.0, 2_000_000, false),
        ]
        .join(",");
        let t = format!(
            r#"{{"intervals":[],"server_output_json":{{"intervals":[{server}]}},"end":{{}}}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        let r = IperfResult {
            received_mbps: 0.0,
            sent_mbps: 0.0,
            received_bytes: 0,
            seconds: 0.0,
            retransmits: None,
            lost_percent: None,
            jitter_ms: None,
            intervals: receiver_intervals(&v, false, 2),
        };
        assert_eq!(r.intervals.len(), 6);
        assert_eq!(r.intervals[4].start_s, 4.0);
        // From second 4: the last two intervals, 4 MB in 2 s = 16 Mbit/s.
        assert_eq!(r.goodput_from_mbps(4.0), Some(16.0));
        assert_eq!(r.goodput_from_mbps(2.0), Some(12.0));
        assert_eq!(r.goodput_from_mbps(6.0), None);
        // The same report without the omitted intervals: clock shifted by -O.
        let server = [
            iv(0.0, 1_000_000, false),
            iv(1.0, 1_000_000, false),
            iv(2.0, 2_000_000, false),
        ]
        .join(",");
        let t = format!(r#"{{"server_output_json":{{"intervals":[{server}]}}}}"#);
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        let ivs = receiver_intervals(&v, false, 2);
        assert_eq!(ivs[2].start_s, 4.0);
        // Download: the client's own intervals; no server report needed.
        let t = format!(r#"{{"intervals":[{}]}}"#, iv(0.0, 5, false));
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        assert_eq!(receiver_intervals(&v, true, 0).len(), 1);
        assert!(receiver_intervals(&v, false, 0).is_empty());
    }

    #[test]
    fn parses_iperf_tcp_json() {
        let t = r#"{"end":{"sum_sent":{"bytes":100,"bits_per_second":10e6,"retransmits":3},"sum_received":{"bytes":90,"seconds":5.0,"bits_per_second":9.5e6}}}"#;
        let r = parse_iperf_json(t).unwrap();
        assert_eq!(r.received_mbps, 9.5);
        assert_eq!(r.retransmits, Some(3));
        assert!(parse_iperf_json(r#"{"error":"unable to connect"}"#)
            .unwrap_err()
            .to_string()
            .contains("unable"));
    }
}
