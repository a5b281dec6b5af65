//! `braid lab ...`: the emulated multipath testbed (crate `braid-lab`) from
//! the command line: namespaces, the userspace link emulator, and the
//! iperf3 comparison of a single path, kernel MPTCP and braid.

use std::path::PathBuf;

use anyhow::Context;
use braid_lab::{BenchOptions, LabConfig, Mode};
use clap::Subcommand;
use serde::Serialize;

use crate::sim::Format;

#[derive(Subcommand)]
pub enum LabCmd {
    /// Create the namespaces (braid-cli, braid-emu, braid-prx, braid-srv),
    /// the emulated paths and start the link emulator. Cleans up leftovers
    /// of a previous run first.
    Up {
        /// Lab file, e.g. lab/three-paths.toml.
        file: PathBuf,
    },
    /// Remove everything `up` created.
    Down,
    /// Run the link emulator in the foreground (started by `up` inside braid-emu).
    #[command(hide = true)]
    Emulate { file: PathBuf },
    /// Bring the lab up, measure goodput with iperf3 for each mode, tear down.
    Bench {
        /// Lab file, e.g. lab/two-equal.toml.
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Modes to measure: single-best, mptcp, braid-<scheduler> (pet, wrr, minrtt, adas, rr, edpf, single)
        /// through the tunnel; braid-<scheduler>-rpc replaces the resequencer with PRISM's
        /// reverse-path ACK control (braid-pet-rpc, braid-adas-rpc); and braid-send: a file
        /// sent with `braid send` (MPLOT) over every path, checked by SHA-256 on both ends
        /// (braid-send-rmtp: the same with `--transport rmtp`).
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "single-best,mptcp,braid-pet"
        )]
        modes: Vec<String>,
        /// Seconds per measurement.
        #[arg(long, default_value_t = 15)]
        duration: u32,
        /// Leading seconds (slow start) excluded from each measurement.
        #[arg(long, default_value_t = 2)]
        omit: u32,
        /// Also report goodput from this second of each test on
        /// (`goodput_from_mbps`, counted from the start of the test, the
        /// omitted start-up included), next to the whole test's.
        #[arg(long, value_name = "SECONDS")]
        from: Option<u32>,
        /// Measure UDP instead of TCP (iperf3 -u): offer this rate in Mbit/s,
        /// or with a `%` suffix this share of the sum of the path rates
        /// (e.g. `--udp 60%`); every mode reports loss and jitter.
        #[arg(long, value_name = "MBIT|PERCENT%")]
        udp: Option<String>,
        /// braid-send, braid-send-rmtp: the file's size in MB (10^6 bytes); default: what
        /// --duration seconds at the sum of the path rates carry.
        #[arg(long, value_name = "MB")]
        send_mb: Option<f64>,
        /// braid-<scheduler> modes: carry this path (its name in the lab file) through a
        /// community relay (`braid relay`, PRISM) on a relay host whose own uplink is that
        /// emulated path; the client reaches the relay over a local link the emulator leaves
        /// alone. The other modes use the path directly.
        #[arg(long, value_name = "PATH")]
        relay: Option<String>,
        /// Run a kernel TCP flow (iperf3, CUBIC) on this path alone (its name in the lab file),
        /// client to proxy, beside every mode's measurement, and report what it got
        /// (`cross TCP`, `cross_tcp_mbps`): what each mode leaves a competing flow on a shared
        /// bottleneck.
        #[arg(long, value_name = "PATH")]
        cross_tcp: Option<String>,
        /// With --cross-tcp: start the competing flow this many seconds before each mode's
        /// measurement, so that it already holds its path (and fills its queue) when the
        /// measurement begins; its goodput is still reported over the measurement alone.
        #[arg(long, value_name = "SECONDS", default_value_t = 0)]
        cross_lead: u32,
        /// braid-<scheduler> modes: start the measurement once every path of the tunnel is
        /// up (`braid status`), waiting at most this many seconds after the tunnel first
        /// carries traffic (default 0: at once). A far path comes up hundreds of milliseconds
        /// after a near one; this measures a bond that is up before its transfer, as `braid
        /// sim run --wait-paths` does (without it, iperf3's own start here usually takes long
        /// enough for the paths to come up). With --cross-lead the lead follows the wait here, while
        /// the simulator counts both from establishment and waits for the longer.
        #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
        wait_paths: f64,
        /// braid-<scheduler> modes: let the tunnel idle this many seconds (after --wait-paths)
        /// before the measurement starts (default 0: at once). This measures a bond that was
        /// up before its transfer, as one in use is: by then it has sent its rate probes and
        /// knows every path's rate. `braid sim run --idle` does the same in simulation.
        #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
        idle: f64,
        /// TCP modes: measure a download (proxy to client, iperf3 -R) instead of an upload.
        /// The tunnel's server then schedules the data and the client resequences it.
        #[arg(long)]
        download: bool,
        /// Leave the lab up afterwards.
        #[arg(long)]
        keep: bool,
    },
}

/// Bytes braid adds to every inner packet on the path: outer IPv4 (20) and
/// UDP (8), the transport header (9), the AEAD tag (16) and the data
/// header (9).
pub const TUNNEL_OVERHEAD: u32 = braid_core::conn::OUTER_OVERHEAD as u32;
/// Path MTU the lab paths have.
pub const PATH_MTU: u32 = 1500;
/// TCP/IPv4 headers with the timestamp option.
const TCP_IP_HEADERS: u32 = 52;

/// The best share of the path rate (IP bytes) TCP goodput can reach
/// through the tunnel with full-size segments: their payload over the
/// path bytes of one, whose headers go compressed
/// (`braid_core::compress`).
pub fn ceiling_share() -> f64 {
    let on_path = PATH_MTU - braid_core::compress::header::MAX_GAIN as u32;
    (PATH_MTU - TUNNEL_OVERHEAD - TCP_IP_HEADERS) as f64 / on_path as f64
}

#[derive(Serialize)]
struct Output<'a> {
    scenario: &'a str,
    ceiling_share: f64,
    sum_mbps: f64,
    results: &'a [braid_lab::BenchResult],
}

fn load(file: &PathBuf) -> anyhow::Result<LabConfig> {
    braid_lab::load_config(file).with_context(|| format!("lab file {}", file.display()))
}

/// This executable's `lab emulate`, which `lab up` starts in the emulator namespace.
pub fn emulator_command() -> anyhow::Result<braid_lab::EmulatorCommand> {
    let exe = std::env::current_exe().context("locating the braid executable")?;
    Ok(braid_lab::EmulatorCommand::new(exe).with_args(["lab", "emulate"]))
}

/// Before anything is created: root, every program the run will start
/// (installed with apt-get as root when missing; `mptcpize` only when the
/// `mptcp` mode is asked for) and working namespaces.
fn require_lab_environment(mptcp: bool) -> anyhow::Result<()> {
    braid_lab::preflight::lab_preflight(mptcp)
        .map_err(|why| anyhow::anyhow!("the lab cannot run here: {why}"))
}

/// A `braid-<scheduler>` bench mode, or `braid-<scheduler>-rpc`: the same
/// with PRISM's reverse-path ACK control (`reorder = "prism-rpc"`) in
/// place of the receiver's resequencer (`braid-adas-rpc` is PRISM's own
/// combination).
fn braid_mode(name: &str, relayed: Option<usize>) -> anyhow::Result<Mode> {
    let sched = name.strip_prefix("braid-").unwrap_or(name);
    let (sched, extra) = match sched.strip_suffix("-rpc") {
        Some(s) => (s, braid::labtunnel::PRISM_RPC_TUNING.to_string()),
        None => (sched, String::new()),
    };
    let kind = braid_core::sched::SchedulerKind::parse(sched).with_context(|| {
        format!("unknown scheduler `{sched}` in mode `{name}`; use one of rr, wrr, edpf, pet, minrtt, adas, single, each optionally followed by -rpc (e.g. braid-pet-rpc)")
    })?;
    braid::labtunnel::mode_with(
        name,
        kind,
        std::env::current_exe().context("locating the braid executable")?,
        extra,
        relayed,
    )
}

/// The index of the path that option `flag` names in `cfg`.
fn named_path(cfg: &LabConfig, flag: &str, name: &str) -> anyhow::Result<usize> {
    cfg.paths
        .iter()
        .position(|p| p.name == name)
        .with_context(|| {
            let names: Vec<&str> = cfg.paths.iter().map(|p| p.name.as_str()).collect();
            format!(
                "{flag} {name}: the lab file has no path of that name; its paths are {}",
                names.join(", ")
            )
        })
}

/// Checks `--wait-paths` (seconds), which `braid lab bench` and `braid
/// sim run` share.
pub(crate) fn check_wait_paths(wait_paths: f64) -> anyhow::Result<()> {
    if !(0.0..=60.0).contains(&wait_paths) {
        anyhow::bail!("--wait-paths must be between 0 and 60 seconds (got {wait_paths})");
    }
    Ok(())
}

/// The path `--cross-tcp` names, if any, checked with `--cross-lead`
/// (`lead`: whether a head start was asked for), which needs it.
pub(crate) fn cross_tcp_path(
    cfg: &LabConfig,
    name: Option<&str>,
    lead: bool,
) -> anyhow::Result<Option<usize>> {
    let path = name
        .map(|name| named_path(cfg, "--cross-tcp", name))
        .transpose()?;
    if lead && path.is_none() {
        anyhow::bail!("--cross-lead is the head start of the competing flow of --cross-tcp; name its path with --cross-tcp");
    }
    Ok(path)
}

pub fn run(cmd: LabCmd) -> anyhow::Result<()> {
    match cmd {
        LabCmd::Up { file } => {
            let cfg = load(&file)?;
            require_lab_environment(false)?;
            let info = braid_lab::up(&cfg, &emulator_command()?)?;
            println!(
                "lab `{}` is up: {} paths, emulator pid {}",
                info.name, info.paths, info.emulator_pid
            );
            println!("client namespace braid-cli, proxy braid-prx, server braid-srv ({}); `braid lab down` removes it", braid_lab::topo::SRV_ADDR);
            Ok(())
        }
        LabCmd::Down => {
            braid_lab::down()?;
            println!("lab removed");
            Ok(())
        }
        LabCmd::Emulate { file } => {
            let cfg = load(&file)?;
            match braid_lab::run_emulator(&cfg)? {}
        }
        LabCmd::Bench {
            file,
            format,
            modes,
            duration,
            omit,
            from,
            udp,
            send_mb,
            relay,
            cross_tcp,
            cross_lead,
            wait_paths,
            idle,
            download,
            keep,
        } => {
            let send_bytes = match send_mb {
                Some(mb) if !(mb.is_finite() && mb > 0.0) => {
                    anyhow::bail!("--send-mb {mb}: give a positive size in MB, e.g. --send-mb 200")
                }
                Some(mb) => Some((mb * 1e6) as u64),
                None => None,
            };
            if let Some(f) = from {
                if f >= duration + omit {
                    anyhow::bail!("--from {f} is not before the end of the test (--omit {omit} + --duration {duration} = {} s); choose a smaller --from", duration + omit);
                }
            }
            check_wait_paths(wait_paths)?;
            if !(0.0..=600.0).contains(&idle) {
                anyhow::bail!("--idle must be between 0 and 600 seconds (got {idle})");
            }
            let cfg = load(&file)?;
            let udp_rate_mbit = udp
                .as_deref()
                .map(|u| {
                    let dir = if download {
                        braid_lab::Direction::Down
                    } else {
                        braid_lab::Direction::Up
                    };
                    udp_rate(u, cfg.sum_rate_mbit(dir))
                })
                .transpose()?;
            let relayed = relay
                .as_deref()
                .map(|name| named_path(&cfg, "--relay", name))
                .transpose()?;
            let cross_tcp_path = cross_tcp_path(&cfg, cross_tcp.as_deref(), cross_lead > 0)?;
            if relayed.is_some() && relayed == cross_tcp_path {
                anyhow::bail!("--relay and --cross-tcp name the same path: a relayed path's client address is the relay host's, so the competing flow cannot start there; choose another path for one of them");
            }
            let tunnel_mode = modes.iter().any(|m| is_tunnel_mode(m));
            if wait_paths > 0.0 && !tunnel_mode {
                anyhow::bail!("--wait-paths applies to the braid-<scheduler> modes (e.g. --modes braid-pet), and none is asked for");
            }
            if idle > 0.0 && !tunnel_mode {
                anyhow::bail!("--idle applies to the braid-<scheduler> modes (e.g. --modes braid-pet), and none is asked for");
            }
            if download
                && modes
                    .iter()
                    .any(|m| braid::labsend::transport_of(m).is_some())
            {
                anyhow::bail!("--download applies to the TCP and UDP modes; braid-send always sends client to proxy (leave braid-send out, or --download off)");
            }
            if download && cross_tcp.is_some() {
                anyhow::bail!("--cross-tcp's competing flow goes client to proxy, so with --download it would not share the data's direction; use one or the other");
            }
            if relay.is_some() && !tunnel_mode {
                anyhow::bail!("--relay applies to the braid-<scheduler> modes (e.g. --modes braid-pet), and none is asked for");
            }
            let modes: Vec<Mode> = modes
                .iter()
                .map(|m| {
                    if let Some(transport) = braid::labsend::transport_of(m) {
                        Ok(braid::labsend::mode(
                            std::env::current_exe().context("locating the braid executable")?,
                            send_bytes,
                            transport,
                        ))
                    } else if is_tunnel_mode(m) {
                        braid_mode(m, relayed)
                    } else {
                        Mode::parse(m)
                    }
                })
                .collect::<anyhow::Result<_>>()?;
            require_lab_environment(modes.iter().any(|m| matches!(m, Mode::Mptcp)))?;
            // One lab at a time on this host: wait for other benches and tests.
            let _lock = braid_lab::topo::LabLock::acquire()?;
            braid_lab::up(&cfg, &emulator_command()?)?;
            let opts = BenchOptions {
                duration_s: duration,
                omit_s: omit,
                from_s: from,
                udp_rate_mbit,
                cross_tcp_path,
                cross_lead_s: cross_lead,
                wait_paths_s: wait_paths,
                idle_s: idle,
                reverse: download,
                ..Default::default()
            };
            let report = braid_lab::bench_with(&cfg, &modes, &opts);
            if !keep {
                braid_lab::down()?;
            }
            let report = report?;
            let out = Output {
                scenario: &report.scenario,
                ceiling_share: ceiling_share(),
                sum_mbps: report.sum_mbps,
                results: &report.results,
            };
            match format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&out)?),
                Format::Table => print!("{}", table(&out, from)),
            }
            Ok(())
        }
    }
}

/// A `braid-<scheduler>[-rpc]` mode: one that runs the tunnel.
fn is_tunnel_mode(m: &str) -> bool {
    m.starts_with("braid-") && braid::labsend::transport_of(m).is_none()
}

/// The offered UDP rate of `--udp`: Mbit/s, or `N%` of `sum` (the sum of
/// the path rates in the data direction).
fn udp_rate(arg: &str, sum: f64) -> anyhow::Result<f64> {
    let bad = || {
        anyhow::anyhow!(
            "--udp {arg}: give a rate in Mbit/s (`--udp 12`) or a share of the sum of the path rates (`--udp 60%`)"
        )
    };
    let r = match arg.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0 * sum,
        None => arg.trim().parse::<f64>().map_err(|_| bad())?,
    };
    if !(r.is_finite() && r > 0.0) {
        return Err(bad());
    }
    Ok(r)
}

/// The human-readable report: one row per mode; with `--from`, a column of
/// goodput from that second on next to the whole test's.
fn table(out: &Output, from: Option<u32>) -> String {
    use std::fmt::Write;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "lab {}: sum of path rates {:.2} Mbit/s; tunnel ceiling {:.3} of it",
        out.scenario, out.sum_mbps, out.ceiling_share
    );
    let from_head = from.map(|f| format!("from {f} s")).unwrap_or_default();
    let udp = out.results.iter().any(|r| r.lost_percent.is_some());
    let cross = out.results.iter().any(|r| r.cross_tcp_mbps.is_some());
    let cross_head = if cross {
        format!(" {:>10}", "cross TCP")
    } else {
        String::new()
    };
    let udp_head = if udp {
        format!(" {:>9} {:>10}", "loss %", "jitter ms")
    } else {
        String::new()
    };
    let _ = writeln!(
        t,
        "{:<16} {:>10} {:>14} {:>10}{udp_head}{cross_head}",
        "mode", "Mbit/s", "share of sum", from_head
    );
    // A figure a row may lack: `-` in its place.
    let opt = |v: Option<f64>, p: usize| v.map_or("-".into(), |v| format!("{v:.p$}"));
    for r in out.results {
        let from_col = match from {
            None => String::new(),
            Some(_) => opt(r.goodput_from_mbps, 2),
        };
        let udp_cols = if udp {
            format!(" {:>9} {:>10}", opt(r.lost_percent, 3), opt(r.jitter_ms, 2))
        } else {
            String::new()
        };
        let cross_col = if cross {
            format!(" {:>10}", opt(r.cross_tcp_mbps, 2))
        } else {
            String::new()
        };
        let _ = writeln!(
            t,
            "{:<16} {:>10.2} {:>14.3} {:>10}{udp_cols}{cross_col}",
            r.mode, r.goodput_mbps, r.share_of_sum, from_col
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(mode: &str, g: f64, from: Option<f64>) -> braid_lab::BenchResult {
        braid_lab::BenchResult {
            mode: mode.into(),
            goodput_mbps: g,
            goodput_from_mbps: from,
            share_of_sum: g / 20.0,
            retransmits: None,
            path_mbps: vec![],
            lost_percent: None,
            jitter_ms: None,
            cross_tcp_mbps: None,
        }
    }

    #[test]
    fn from_adds_a_column_and_a_json_field_next_to_the_whole_test() {
        let results = [
            result("mptcp", 18.0, Some(19.0)),
            result("braid-pet", 17.5, Some(18.25)),
        ];
        let out = Output {
            scenario: "two-equal",
            ceiling_share: ceiling_share(),
            sum_mbps: 20.0,
            results: &results,
        };
        let t = table(&out, Some(20));
        assert!(t.lines().nth(1).unwrap().contains("from 20 s"), "{t}");
        let row = t.lines().find(|l| l.starts_with("braid-pet")).unwrap();
        assert!(row.contains("17.50") && row.contains("18.25"), "{row}");
        let j = serde_json::to_value(&out).unwrap();
        let r = &j["results"][1];
        assert_eq!(r["goodput_mbps"], 17.5);
        assert_eq!(r["goodput_from_mbps"], 18.25);
        // Without --from, neither the column nor the field.
        let plain = [result("mptcp", 18.0, None)];
        let out = Output {
            results: &plain,
            ..out
        };
        assert!(!table(&out, None).contains("from"));
        let j = serde_json::to_value(&out).unwrap();
        assert!(j["results"][0].get("goodput_from_mbps").is_none());
    }

    #[test]
    fn cross_tcp_adds_a_column_and_a_json_field() {
        let mut with = result("braid-pet", 17.5, None);
        with.cross_tcp_mbps = Some(0.43);
        let results = [result("single-best", 4.8, None), with];
        let out = Output {
            scenario: "two-equal",
            ceiling_share: 0.924,
            sum_mbps: 20.0,
            results: &results,
        };
        let t = table(&out, None);
        assert!(t.lines().nth(1).unwrap().contains("cross TCP"), "{t}");
        let row = t.lines().find(|l| l.starts_with("braid-pet")).unwrap();
        assert!(row.trim_end().ends_with("0.43"), "{row}");
        let row = t.lines().find(|l| l.starts_with("single-best")).unwrap();
        assert!(row.trim_end().ends_with('-'), "{row}");
        let j = serde_json::to_value(&out).unwrap();
        assert_eq!(j["results"][1]["cross_tcp_mbps"], 0.43);
        assert!(j["results"][0].get("cross_tcp_mbps").is_none());
        let plain = [result("mptcp", 18.0, None)];
        let out = Output {
            results: &plain,
            ..out
        };
        assert!(!table(&out, None).contains("cross"));
    }

    #[test]
    fn relay_and_cross_tcp_name_a_path_of_the_lab_file() {
        let cfg = braid_lab::shipped("fast-slow").unwrap();
        assert_eq!(super::named_path(&cfg, "--relay", "slow").unwrap(), 1);
        let e = super::named_path(&cfg, "--relay", "wifi")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--relay wifi") && e.contains("fast, slow"),
            "{e}"
        );
        assert!(super::is_tunnel_mode("braid-adas-rpc"));
        assert!(!super::is_tunnel_mode("braid-send"));
        assert!(!super::is_tunnel_mode("mptcp"));
    }

    #[test]
    fn ceiling_counts_every_header() {
        // 1500 - 62 (tunnel) - 52 (TCP/IP with timestamps) = 1386 bytes
        // of payload, in 1500 - 26 (compressed headers) = 1474 on the path.
        assert!((super::ceiling_share() - 1386.0 / 1474.0).abs() < 1e-12);
    }

    #[test]
    fn bench_modes_name_every_scheduler() {
        assert!(super::braid_mode("braid-adas", None).is_ok());
        assert!(super::braid_mode("braid-pet-rpc", None).is_ok());
        assert!(super::braid_mode("braid-adas-rpc", None).is_ok());
        let e = super::braid_mode("braid-fast-rpc", None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("-rpc"), "{e}");
        let err = super::braid_mode("braid-adaz", None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("adaz") && err.contains("adas"), "{err}");
    }

    #[test]
    fn udp_rate_takes_mbit_or_a_share_of_the_sum() {
        assert_eq!(udp_rate("12", 20.0).unwrap(), 12.0);
        assert!((udp_rate("60%", 20.0).unwrap() - 12.0).abs() < 1e-9);
        for bad in ["", "x", "-3", "0%", "60 %%"] {
            let e = udp_rate(bad, 20.0).unwrap_err().to_string();
            assert!(e.contains("--udp 60%"), "{bad}: {e}");
        }
    }

    #[test]
    fn udp_results_add_loss_and_jitter_columns() {
        let mut r = result("braid-pet", 12.0, None);
        r.lost_percent = Some(0.05);
        r.jitter_ms = Some(1.234);
        let results = [r, result("single-best", 5.0, None)];
        let out = Output {
            scenario: "bursty",
            ceiling_share: 0.93,
            sum_mbps: 20.0,
            results: &results,
        };
        let t = table(&out, None);
        assert!(t.contains("loss %") && t.contains("jitter ms"), "{t}");
        assert!(t.contains("0.050") && t.contains("1.23"), "{t}");
        let tcp = [result("braid-pet", 12.0, None)];
        let out = Output {
            results: &tcp,
            ..out
        };
        assert!(!table(&out, None).contains("loss %"));
    }
}
