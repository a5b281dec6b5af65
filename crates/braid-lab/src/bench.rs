//! `braid lab bench`: goodput of one bulk TCP transfer client -> server
//! under several "modes" on a running lab, compared to the sum of the
//! configured path rates.
//!
//! Built-in modes:
//! * `single-best`: plain TCP bound (`-B`) to the best path's address - what
//!   you get without aggregation.
//! * `mptcp`: kernel MPTCP with one subflow per path (in-kernel path
//!   manager, `mptcpize run` on both ends) - the reference to beat.
//!
//! Extension point: [`Mode::custom`] takes a closure that prepares the
//! environment (e.g. starts the braid proxy in `braid-prx` and the braid
//! client in `braid-cli` with [`NsProcess::spawn`], installs a route for the
//! server through the tunnel) and returns a [`ModeSetup`] saying where
//! iperf3 should connect. Processes in the setup are stopped and the
//! teardown closure runs after the measurement, even on error.

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use crate::cmd::{ns_run, NsProcess};
use crate::config::{Direction, LabConfig};
use crate::iperf::{run_iperf3, IperfSpec};
use crate::topo;

/// What a mode's setup hands to the measurement.
pub struct ModeSetup {
    /// Address iperf3 connects to (normally the server [`topo::SRV_ADDR`]).
    pub target: Ipv4Addr,
    /// Client source address (`iperf3 -B`), if any.
    pub bind: Option<Ipv4Addr>,
    /// Run iperf3 under `mptcpize`.
    pub mptcp: bool,
    /// Helper processes (tunnel daemons ...); stopped after the run.
    pub processes: Vec<NsProcess>,
    /// Undo environment changes after the run (routes, sysctls ...).
    pub teardown: Option<Box<dyn FnOnce()>>,
    /// A mode that moves its own data instead of iperf3 (a file sent with
    /// `braid send`): run in iperf3's place, while the trace plays and the
    /// emulator's counters run; what it reports is the mode's goodput.
    pub transfer: Option<TransferFn>,
}

/// See [`ModeSetup::transfer`].
pub type TransferFn = Box<dyn FnOnce() -> anyhow::Result<Transferred>>;

/// What a [`TransferFn`] delivered: payload bytes verified at the
/// receiver, and the seconds from its start to the receiver's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transferred {
    pub bytes: u64,
    pub seconds: f64,
}

impl Transferred {
    /// Goodput in Mbit/s.
    pub fn mbps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.seconds.max(1e-9) / 1e6
    }
}

impl ModeSetup {
    /// Plain TCP to the server, no helpers.
    pub fn direct() -> Self {
        ModeSetup {
            target: topo::SRV_ADDR,
            bind: None,
            mptcp: false,
            processes: Vec::new(),
            teardown: None,
            transfer: None,
        }
    }
}

/// Runs a setup's cleanup when dropped (also on error paths).
struct SetupGuard(ModeSetup);

impl Drop for SetupGuard {
    fn drop(&mut self) {
        for p in &mut self.0.processes {
            p.stop();
        }
        if let Some(t) = self.0.teardown.take() {
            t();
        }
    }
}

/// Context handed to a mode's setup closure.
pub struct BenchContext<'a> {
    pub cfg: &'a LabConfig,
    pub opts: &'a BenchOptions,
}

type SetupFn = Box<dyn Fn(&BenchContext) -> anyhow::Result<ModeSetup>>;

/// A bench mode.
pub enum Mode {
    SingleBest,
    Mptcp,
    /// Named mode with a user-supplied setup (e.g. "braid-minrtt").
    Custom {
        name: String,
        setup: SetupFn,
    },
}

impl Mode {
    /// A custom mode; see the module docs.
    pub fn custom(
        name: impl Into<String>,
        setup: impl Fn(&BenchContext) -> anyhow::Result<ModeSetup> + 'static,
    ) -> Mode {
        Mode::Custom {
            name: name.into(),
            setup: Box::new(setup),
        }
    }

    /// Parse a built-in mode name (`single-best`, `mptcp`).
    pub fn parse(s: &str) -> anyhow::Result<Mode> {
        match s {
            "single-best" => Ok(Mode::SingleBest),
            "mptcp" => Ok(Mode::Mptcp),
            other => bail!("unknown bench mode `{other}`: built-in modes are `single-best` and `mptcp`; braid modes must be registered with Mode::custom"),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Mode::SingleBest => "single-best",
            Mode::Mptcp => "mptcp",
            Mode::Custom { name, .. } => name,
        }
    }

    fn setup(&self, ctx: &BenchContext) -> anyhow::Result<ModeSetup> {
        match self {
            Mode::SingleBest => {
                let i = ctx.cfg.best_path(data_direction(ctx.opts));
                Ok(ModeSetup {
                    bind: Some(topo::cli_addr(i)),
                    ..ModeSetup::direct()
                })
            }
            Mode::Mptcp => setup_mptcp(ctx.cfg),
            Mode::Custom { setup, .. } => setup(ctx),
        }
    }
}

/// Bench parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchOptions {
    /// iperf3 duration (`-t`).
    pub duration_s: u32,
    /// Start-up seconds excluded from the result (`-O`); 0 = count slow start.
    pub omit_s: u32,
    /// Download (server -> client) instead of upload.
    pub reverse: bool,
    pub port: u16,
    /// Pause between modes so queues drain and TIME_WAITs settle.
    pub settle_s: f64,
    /// Also report goodput from this second of each test on
    /// ([`BenchResult::goodput_from_mbps`]), counted from the start of the
    /// test with the omitted start-up included.
    #[serde(default)]
    pub from_s: Option<u32>,
    /// UDP at this offered rate (Mbit/s of iperf3 payload) instead of TCP:
    /// every mode then reports its loss and jitter (real-time traffic).
    #[serde(default)]
    pub udp_rate_mbit: Option<f64>,
    /// A kernel TCP flow (iperf3, CUBIC) on this path alone, from the
    /// client's address on it to the proxy's, in the data direction,
    /// beside every mode's measurement and as long as iperf3's test:
    /// what a mode leaves a competing flow on a shared bottleneck
    /// ([`BenchResult::cross_tcp_mbps`]).
    #[serde(default)]
    pub cross_tcp_path: Option<usize>,
    /// With `cross_tcp_path`: the competing flow starts this many seconds
    /// before each mode's measurement (its goodput still reported over
    /// the measurement's interval alone), so that it
    /// already holds its path and its queue when the measurement begins.
    #[serde(default)]
    pub cross_lead_s: u32,
    /// Tunnel modes: start the measurement once every path of the
    /// tunnel is up, waiting at most this many seconds after it first
    /// carries traffic (0: at once). `braid sim run --wait-paths` does the
    /// same in simulation.
    #[serde(default)]
    pub wait_paths_s: f64,
    /// Tunnel modes: let the tunnel idle this many seconds (after the wait
    /// for its paths) before the measurement starts, as a bond in use was
    /// up before its transfer (0: no pause). `braid sim run --idle` does
    /// the same in simulation, counted there from the tunnel's
    /// establishment.
    #[serde(default)]
    pub idle_s: f64,
}

/// Port of the competing flow's iperf3 (next to the measurement's).
fn cross_port(opts: &BenchOptions) -> u16 {
    opts.port + 1
}

/// Starts the competing TCP flow on path `i` (see
/// [`BenchOptions::cross_tcp_path`]) in a thread; joined for its goodput.
fn start_cross_tcp(
    i: usize,
    opts: &BenchOptions,
) -> std::thread::JoinHandle<anyhow::Result<crate::iperf::IperfResult>> {
    let spec = IperfSpec {
        client_ns: topo::NS_CLI.into(),
        server_ns: topo::NS_PRX.into(),
        target: topo::prx_addr(i),
        bind: Some(topo::cli_addr(i)),
        port: cross_port(opts),
        // iperf3 runs its omitted seconds before its measured ones: the
        // lead is omitted, so both flows measure the same interval.
        duration_s: opts.duration_s,
        omit_s: opts.omit_s + opts.cross_lead_s,
        reverse: opts.reverse,
        ..IperfSpec::default()
    };
    std::thread::spawn(move || run_iperf3(&spec))
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            duration_s: 15,
            omit_s: 0,
            reverse: false,
            port: 5201,
            settle_s: 1.0,
            from_s: None,
            udp_rate_mbit: None,
            cross_tcp_path: None,
            cross_lead_s: 0,
            wait_paths_s: 0.0,
            idle_s: 0.0,
        }
    }
}

/// How long the emulated paths take to empty what a mode left in them:
/// the fullest queue at its path's rate, plus that path's round trip, plus
/// 0.2 s. The pause between modes is at least this long.
///
/// Why: a queue of seconds outlives a fixed pause. `lab/sweep-random.sh
/// 40 11` set 28 (46.4 Mbit/s 288 ms away with a 6.7 MB queue, 1.15 s
/// deep, beside 1.47 Mbit/s): after single-best's TCP had filled that
/// queue, braid-pet started behind its tail with the default 1 s pause
/// and measured 9.45 and 9.46 Mbit/s (fast path at 8.2); with braid-pet
/// first, alone, or after a 3 s idle, 30.6-37.4.
fn drain_s(cfg: &LabConfig) -> f64 {
    let mut longest: f64 = 0.0;
    for i in 0..cfg.paths.len() {
        let dirs = [
            cfg.resolve(i, Direction::Up),
            cfg.resolve(i, Direction::Down),
        ];
        let rtt = dirs[0].delay_s + dirs[1].delay_s;
        for p in dirs.iter().filter(|p| p.rate_bps > 0.0) {
            longest = longest.max(p.queue_bytes as f64 * 8.0 / p.rate_bps + rtt);
        }
    }
    longest + 0.2
}

fn data_direction(opts: &BenchOptions) -> Direction {
    if opts.reverse {
        Direction::Down
    } else {
        Direction::Up
    }
}

/// One mode's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    pub mode: String,
    /// iperf3 receiver's bits_per_second, in Mbit/s.
    pub goodput_mbps: f64,
    /// Goodput from [`BenchOptions::from_s`] on (the steady part of a long
    /// run), in Mbit/s; only with `from_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_from_mbps: Option<f64>,
    /// goodput / sum of the configured path rates (data direction).
    pub share_of_sum: f64,
    /// TCP retransmissions reported by the sender (all subflows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// IP-level rate each path delivered during the run (emulator counters).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path_mbps: Vec<f64>,
    /// UDP runs: the datagrams lost end to end, in percent (iperf3's
    /// `lost_percent`: what the paths lost and braid did not repair, plus
    /// what the sender's own queues dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    /// UDP runs: the receiver's jitter in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// With [`BenchOptions::cross_tcp_path`]: the competing kernel TCP
    /// flow's goodput over its test, in Mbit/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_tcp_mbps: Option<f64>,
}

/// `{"scenario": name, "results": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub scenario: String,
    /// Sum of configured path rates in the data direction (Mbit/s).
    #[serde(default)]
    pub sum_mbps: f64,
    pub results: Vec<BenchResult>,
}

/// Kernel MPTCP: allow 8 subflows on both ends and add a `subflow` endpoint
/// for every path but the first (the initial subflow already uses path 0
/// through the main table). Endpoints are flushed again on teardown.
fn setup_mptcp(cfg: &LabConfig) -> anyhow::Result<ModeSetup> {
    for ns in [topo::NS_CLI, topo::NS_SRV] {
        ns_run(ns, &["sysctl", "-qw", "net.mptcp.enabled=1"])
            .context("enabling MPTCP (kernel without CONFIG_MPTCP?)")?;
        ns_run(
            ns,
            &[
                "ip",
                "mptcp",
                "limits",
                "set",
                "subflow",
                "8",
                "add_addr_accepted",
                "8",
            ],
        )?;
    }
    ns_run(topo::NS_CLI, &["ip", "mptcp", "endpoint", "flush"])?;
    for i in 1..cfg.paths.len() {
        ns_run(
            topo::NS_CLI,
            &[
                "ip",
                "mptcp",
                "endpoint",
                "add",
                &topo::cli_addr(i).to_string(),
                "dev",
                &topo::path_if(i),
                "subflow",
            ],
        )?;
    }
    crate::preflight::ensure(
        crate::preflight::MPTCP_TOOLS,
        &crate::preflight::Lookup::from_env(),
        None,
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    Ok(ModeSetup {
        mptcp: true,
        teardown: Some(Box::new(|| {
            let _ = ns_run(topo::NS_CLI, &["ip", "mptcp", "endpoint", "flush"]);
        })),
        ..ModeSetup::direct()
    })
}

/// Resets every TCP connection of the measurement port left in the client
/// and server namespaces (`ss -K`), once a mode's measurement is over.
///
/// Why: iperf3 stops at the end of its test, but the kernel keeps sending
/// what its socket still buffered. After `mptcp` on `lab/cellular.toml`
/// an established socket with 630 kB unsent and its subflows still sent
/// for about 2 s, through the next mode's first seconds: braid-pet's path
/// a met that traffic in its bottleneck queue during the inner TCP's slow
/// start, the drops were (rightly) taken for congestion, and the inner
/// CUBIC, cut at a window of 53-170 packets, delivered 0.53-0.71 of the
/// sum instead of 0.90 in four runs of seven (braid-pet alone: 0.898-0.900
/// in five of five). What a connection sends after its test counts for no
/// mode, so ending it costs no measurement.
pub fn end_leftover_connections(port: u16) {
    end_connections_in(&[topo::NS_CLI, topo::NS_SRV], port);
}

/// Resets every TCP connection from or to `port` in the namespaces `ns`
/// (`ss -K`): what [`end_leftover_connections`] does in the lab's, for
/// tests that build namespaces of their own.
pub fn end_connections_in(ns: &[&str], port: u16) {
    let filter = format!("( dport = :{port} or sport = :{port} )");
    for ns in ns {
        // Best effort: a kernel without INET_DIAG_DESTROY leaves them.
        let _ = ns_run(ns, &["ss", "-K", "-tnH", &filter]);
    }
}

/// [`bench_with`] with default options (15 s upload per mode).
pub fn bench(cfg: &LabConfig, modes: &[Mode]) -> anyhow::Result<BenchReport> {
    bench_with(cfg, modes, &BenchOptions::default())
}

/// Measure every mode on the running lab (call [`topo::up`] with the same
/// config first). Modes run one after another; each result is the iperf3
/// receiver's goodput.
pub fn bench_with(
    cfg: &LabConfig,
    modes: &[Mode],
    opts: &BenchOptions,
) -> anyhow::Result<BenchReport> {
    let stats = crate::stats::read_stats().context("lab is not up (call braid_lab::up first)")?;
    if stats.scenario != cfg.name || stats.paths.len() != cfg.paths.len() {
        bail!(
            "the running lab is `{}` with {} paths, not `{}`; bring the right lab up first",
            stats.scenario,
            stats.paths.len(),
            cfg.name
        );
    }
    if let Some(r) = opts.udp_rate_mbit {
        if !(r.is_finite() && r > 0.0) {
            bail!("UDP rate {r} Mbit/s: give a positive rate");
        }
    }
    if let Some(f) = opts.from_s {
        let total = opts.duration_s + opts.omit_s;
        if f >= total {
            bail!(
                "--from {f} is not before the end of the test ({} s omitted + {} s measured = {total} s); choose a smaller --from",
                opts.omit_s,
                opts.duration_s
            );
        }
    }
    if opts.cross_lead_s > 0 && opts.cross_tcp_path.is_none() {
        bail!("a head start for the competing TCP flow needs the flow: name its path too");
    }
    if let Some(i) = opts.cross_tcp_path {
        if i >= cfg.paths.len() {
            bail!(
                "no path {i} for the competing TCP flow: the lab has {} paths",
                cfg.paths.len()
            );
        }
    }
    let dir = data_direction(opts);
    let sum = cfg.sum_rate_mbit(dir);
    let mut results = Vec::new();
    let settle = opts.settle_s.max(drain_s(cfg));
    for (k, mode) in modes.iter().enumerate() {
        if k > 0 {
            std::thread::sleep(Duration::from_secs_f64(settle));
        }
        let ctx = BenchContext { cfg, opts };
        let mut guard = SetupGuard(
            mode.setup(&ctx)
                .with_context(|| format!("setting up mode {}", mode.name()))?,
        );
        let transfer = guard.0.transfer.take();
        let setup = &guard.0;
        let spec = IperfSpec {
            target: setup.target,
            bind: setup.bind,
            mptcp: setup.mptcp,
            port: opts.port,
            duration_s: opts.duration_s,
            omit_s: opts.omit_s,
            reverse: opts.reverse,
            intervals: opts.from_s.is_some(),
            udp_rate_mbit: opts.udp_rate_mbit,
            ..IperfSpec::default()
        };
        // Every mode sees the same path history: the trace starts over
        // when its measurement starts, not at `lab up`.
        topo::restart_trace_clock().context("restarting the trace clock")?;
        let cross = opts.cross_tcp_path.map(|i| start_cross_tcp(i, opts));
        // The competing flow's head start, before the measurement's own.
        std::thread::sleep(Duration::from_secs(u64::from(opts.cross_lead_s)));
        let before = crate::stats::read_stats()?;
        let t0 = std::time::Instant::now();
        let r = match transfer {
            Some(t) => {
                let done = t().with_context(|| format!("mode {}", mode.name()))?;
                crate::iperf::IperfResult {
                    received_mbps: done.mbps(),
                    sent_mbps: done.mbps(),
                    received_bytes: done.bytes,
                    seconds: done.seconds,
                    retransmits: None,
                    lost_percent: None,
                    jitter_ms: None,
                    intervals: Vec::new(),
                }
            }
            None => run_iperf3(&spec).with_context(|| format!("mode {}", mode.name()))?,
        };
        let cross_tcp_mbps = match cross {
            None => None,
            Some(h) => Some(
                h.join()
                    .map_err(|_| anyhow::anyhow!("the competing TCP flow's thread panicked"))?
                    .with_context(|| format!("the competing TCP flow beside {}", mode.name()))?
                    .received_mbps,
            ),
        };
        let after = crate::stats::read_stats()?;
        let dt = (after.uptime_s - before.uptime_s)
            .max(t0.elapsed().as_secs_f64() * 0.5)
            .max(1e-3);
        end_leftover_connections(opts.port);
        if opts.cross_tcp_path.is_some() {
            end_leftover_connections(cross_port(opts));
        }
        drop(guard);
        let path_mbps = before
            .paths
            .iter()
            .zip(&after.paths)
            .map(|(b, a)| {
                let (b, a) = match dir {
                    Direction::Up => (&b.up, &a.up),
                    Direction::Down => (&b.down, &a.down),
                };
                (a.tx_bytes.saturating_sub(b.tx_bytes)) as f64 * 8.0 / dt / 1e6
            })
            .collect();
        results.push(BenchResult {
            mode: mode.name().to_string(),
            goodput_mbps: r.received_mbps,
            goodput_from_mbps: opts.from_s.and_then(|f| r.goodput_from_mbps(f as f64)),
            share_of_sum: r.received_mbps / sum,
            retransmits: r.retransmits,
            path_mbps,
            lost_percent: r.lost_percent.filter(|_| opts.udp_rate_mbit.is_some()),
            jitter_ms: r.jitter_ms.filter(|_| opts.udp_rate_mbit.is_some()),
            cross_tcp_mbps,
        });
    }
    Ok(BenchReport {
        scenario: cfg.name.clone(),
        sum_mbps: sum,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pause between modes outlasts the deepest queue: 6.7 MB at
    /// 46.4 Mbit/s drains in 1.15 s, plus the path's 576 ms round trip
    /// and 0.2 s; the thin path's queue (0.09 s) does not count.
    #[test]
    fn the_pause_between_modes_outlasts_the_deepest_queue() {
        let cfg = LabConfig::from_toml_str(
            "name = \"deep\"\n\
             [[path]]\nname = \"thin\"\nrate_mbit = 1.47\ndelay_ms = 181.6\nqueue_bytes = 16684\n\
             [[path]]\nname = \"fat\"\nrate_mbit = 46.43\ndelay_ms = 287.9\nqueue_bytes = 6683598\n",
            "test",
        )
        .unwrap();
        let want = 6_683_598.0 * 8.0 / 46.43e6 + 2.0 * 0.2879 + 0.2;
        assert!((drain_s(&cfg) - want).abs() < 1e-9, "{}", drain_s(&cfg));
        assert!(drain_s(&cfg) > 1.9);
        // Shallow queues leave the default pause (1 s) in charge.
        let cfg = crate::shipped("two-equal").unwrap();
        assert!(drain_s(&cfg) < 1.0, "{}", drain_s(&cfg));
    }
}
