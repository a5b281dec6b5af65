//! Network-namespace topology of the lab, built with `ip` (iproute2).
//!
//! ```text
//!  braid-cli            braid-emu               braid-prx            braid-srv
//!  eth<i> 10.77.i.1 ==  c<i> ~emulator~ p<i> ==  eth<i> 10.77.i.2
//!                                                 wan0 10.78.0.1  ==  eth0 10.78.0.2
//! ```
//!
//! * One veth pair per side of every path; the emulator relays frames
//!   between `c<i>` and `p<i>` (L2, so ARP passes and `braid-emu` needs no
//!   addresses).
//! * Each path's two ends know each other's link address from the start
//!   (fixed MACs, [`path_mac`], and permanent neighbour entries,
//!   [`pin_neighbour`]), so no address resolution crosses the emulator.
//!   On a real path the delay lies beyond the host's gateway, which
//!   answers ARP at once; through the emulator the first packet on a
//!   path waited a whole emulated round trip for it, a start-up cost no
//!   real path has: the proxy saw the 213 ms path of
//!   `lab/sweep-random.sh 40 2027` set 36 come up 0.57 s after the
//!   tunnel was established, and 0.21 s after with the entries pinned.
//! * `braid-cli` has one routing table per path (`100+i`, selected by
//!   `ip rule from 10.77.i.1`) so a socket bound to a path's address leaves
//!   on that path (MPTCP subflows, `iperf3 -B`, braid's per-path sockets);
//!   the main table's default route is path 0.
//! * Offloads are disabled on every veth: with TSO/GSO/GRO on, the relay
//!   would see 64 KB super-frames (serialization would be wrong) and frames
//!   with partial checksums that the far end drops.
//! * A relayed run adds a fifth namespace, `braid-rly`, that takes one
//!   path's client end as a community relay's uplink
//!   ([`crate::relayhost`]).
//! * `up` starts by tearing down leftovers, so a crashed run (emulator
//!   killed, namespaces left behind) never blocks the next one.

use std::ffi::OsString;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::cmd::{self, ns_run, run, run_quiet, NsProcess};
use crate::config::LabConfig;

/// Client host namespace.
pub const NS_CLI: &str = "braid-cli";
/// Emulator namespace.
pub const NS_EMU: &str = "braid-emu";
/// Proxy namespace.
pub const NS_PRX: &str = "braid-prx";
/// "Internet" server namespace.
pub const NS_SRV: &str = "braid-srv";
/// All lab namespaces, in creation order.
pub const NAMESPACES: [&str; 4] = [NS_CLI, NS_EMU, NS_PRX, NS_SRV];
/// A community relay's host, made only for a relayed run
/// ([`crate::relayhost`]).
pub const NS_RLY: &str = "braid-rly";
/// What [`down`] removes: the lab's namespaces and the relay host's.
const ALL_NAMESPACES: [&str; 5] = [NS_CLI, NS_EMU, NS_PRX, NS_SRV, NS_RLY];

/// Proxy address on the proxy <-> server link.
pub const PRX_WAN_ADDR: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 1);
/// The "internet" server.
pub const SRV_ADDR: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 2);
/// Proxy-side interface towards the server.
pub const PRX_WAN_IF: &str = "wan0";
/// Server interface.
pub const SRV_IF: &str = "eth0";

/// Client address of path `i` (10.77.i.1).
pub fn cli_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, i as u8, 1)
}
/// Proxy address of path `i` (10.77.i.2).
pub fn prx_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, i as u8, 2)
}
/// Link address of path `i`'s interface in braid-cli (`proxy` false) or
/// braid-prx (`proxy` true): locally administered, fixed so that each end
/// can be told the other's ([`pin_neighbour`]).
pub fn path_mac(i: usize, proxy: bool) -> String {
    format!("02:77:00:00:{:02x}:{:02x}", i, 1 + u8::from(proxy))
}

/// Tells namespace `ns` that path `i`'s far end (the proxy's address if
/// `proxy_end`, else the client's) is at its fixed link address
/// ([`path_mac`]) for good: no ARP over the emulated link (module docs).
pub(crate) fn pin_neighbour(ns: &str, i: usize, proxy_end: bool) -> anyhow::Result<()> {
    let addr = if proxy_end { prx_addr(i) } else { cli_addr(i) };
    let mac = path_mac(i, proxy_end);
    ip(
        ns,
        &[
            "neigh",
            "replace",
            &addr.to_string(),
            "lladdr",
            &mac,
            "dev",
            &path_if(i),
            "nud",
            "permanent",
        ],
    )
}

/// Interface of path `i` in braid-cli and braid-prx.
pub fn path_if(i: usize) -> String {
    format!("eth{i}")
}
/// Emulator-side veth facing the client.
pub fn emu_cli_if(i: usize) -> String {
    format!("c{i}")
}
/// Emulator-side veth facing the proxy.
pub fn emu_prx_if(i: usize) -> String {
    format!("p{i}")
}
/// Policy-routing table of path `i` in braid-cli.
pub fn path_table(i: usize) -> u32 {
    100 + i as u32
}
/// Pid file of the emulator process.
pub fn emulator_pid_path() -> PathBuf {
    Path::new(crate::RUN_DIR).join("emu.pid")
}
/// Config handed to the emulator.
pub fn emulator_config_path() -> PathBuf {
    Path::new(crate::RUN_DIR).join("lab.toml")
}
/// Emulator stdout/stderr.
pub fn emulator_log_path() -> PathBuf {
    Path::new(crate::RUN_DIR).join("emu.log")
}

/// How to start the emulator process: `program args... <lab file>`, run via
/// `ip netns exec braid-emu`. The stand-alone test binary is
/// `braid-lab-emu`; the `braid` CLI passes itself with args
/// `["lab", "emulate"]`.
#[derive(Debug, Clone)]
pub struct EmulatorCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl EmulatorCommand {
    pub fn new(program: impl Into<PathBuf>) -> Self {
        EmulatorCommand {
            program: program.into(),
            args: Vec::new(),
        }
    }
    pub fn with_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
}

/// Cross-process lock for the (single, fixed-name) lab. Hold it for the
/// whole time you use the lab so that tests of different crates/binaries
/// running in parallel do not tear down each other's namespaces. Blocks
/// until free; released on drop. Lives outside [`crate::RUN_DIR`] because
/// [`down`] removes that directory.
#[derive(Debug)]
pub struct LabLock {
    _file: std::fs::File,
}

/// Path of the lock file used by [`LabLock`].
pub const LOCK_PATH: &str = "/run/braid-lab.lock";

impl LabLock {
    pub fn acquire() -> anyhow::Result<LabLock> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK_PATH)
            .with_context(|| format!("opening {LOCK_PATH}"))?;
        loop {
            // SAFETY: flock on an fd we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(LabLock { _file: file });
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e).context("locking the lab");
            }
        }
    }
}

/// What [`up`] brought up.
#[derive(Debug, Clone)]
pub struct LabInfo {
    pub name: String,
    pub paths: usize,
    pub emulator_pid: i32,
}

/// Check that we can build the lab: root, every program of
/// [`crate::preflight::LAB_TOOLS`] on `PATH`, and `ip netns` working.
/// Returns a one-line reason if not. Installs nothing; the commands call
/// [`crate::preflight::lab_preflight`], which installs what is missing.
pub fn check_environment() -> Result<(), String> {
    if !crate::preflight::is_root() {
        return Err(
            "not running as root (network namespaces need CAP_SYS_ADMIN/CAP_NET_ADMIN)".into(),
        );
    }
    crate::preflight::ensure(
        crate::preflight::LAB_TOOLS,
        &crate::preflight::Lookup::from_env(),
        None,
    )?;
    // Unique per call: tests of one process check in parallel.
    static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = format!("braid-probe-{}-{n}", std::process::id());
    if !run_quiet(&["ip", "netns", "add", &probe]) {
        return Err("`ip netns add` does not work here (no namespace support?)".into());
    }
    let ok = run_quiet(&[
        "ip", "netns", "exec", &probe, "ip", "link", "set", "lo", "up",
    ]);
    run_quiet(&["ip", "netns", "del", &probe]);
    if !ok {
        return Err("`ip netns exec` does not work here".into());
    }
    Ok(())
}

/// Names of existing namespaces.
pub fn list_namespaces() -> Vec<String> {
    run(&["ip", "netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// True if all lab namespaces exist and the emulator is alive.
pub fn is_up() -> bool {
    let ns = list_namespaces();
    NAMESPACES.iter().all(|n| ns.iter().any(|x| x == n))
        && read_pid().is_some_and(|p| cmd::alive(p) && pid_in_ns(p, NS_EMU))
}

/// Restart the emulator's trace clock: every path's trace starts over now
/// (configured rate, delay and loss; steps at `now + at_s`). Returns once
/// the emulator has acknowledged it in its stats file.
pub fn restart_trace_clock() -> anyhow::Result<()> {
    let before = crate::stats::read_stats()?.trace_restarts;
    let pid = read_pid().context("no emulator pid file: is the lab up?")?;
    if !pid_in_ns(pid, NS_EMU) || !cmd::signal(pid, libc::SIGUSR1) {
        bail!("the emulator (pid {pid}) is not running; bring the lab up again");
    }
    let t0 = Instant::now();
    while crate::stats::read_stats()?.trace_restarts <= before {
        if t0.elapsed() > Duration::from_secs(3) {
            bail!("the emulator did not acknowledge the trace restart within 3 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn read_pid() -> Option<i32> {
    std::fs::read_to_string(emulator_pid_path())
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Is `pid` a process whose network namespace is the named one?
fn pid_in_ns(pid: i32, ns: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let a = std::fs::metadata(format!("/run/netns/{ns}"));
    let b = std::fs::metadata(format!("/proc/{pid}/ns/net"));
    matches!((a, b), (Ok(a), Ok(b)) if a.ino() == b.ino() && a.dev() == b.dev())
}

pub(crate) fn ns_pids(ns: &str) -> Vec<i32> {
    run(&["ip", "netns", "pids", ns])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Tear everything down: stop the emulator (pid file) and every process
/// still running inside a lab namespace (iperf3, tunnel daemons), delete
/// the namespaces (which removes all veths, routes, MPTCP endpoints) and
/// the run directory. Safe to call when nothing is up.
pub fn down() -> anyhow::Result<()> {
    if let Some(pid) = read_pid() {
        // Only if it really lives in our namespace: a stale pid file must not
        // make us kill an unrelated process that reused the pid.
        if pid_in_ns(pid, NS_EMU) {
            cmd::stop_pid(pid, Duration::from_millis(500));
        }
    }
    let existing = list_namespaces();
    for ns in ALL_NAMESPACES {
        if !existing.iter().any(|x| x == ns) && !Path::new("/run/netns").join(ns).exists() {
            continue;
        }
        for pid in ns_pids(ns) {
            cmd::stop_pid(pid, Duration::from_millis(500));
        }
        if !run_quiet(&["ip", "netns", "del", ns]) && Path::new("/run/netns").join(ns).exists() {
            // Retry once: deletion can race with exiting processes.
            std::thread::sleep(Duration::from_millis(100));
            run(&["ip", "netns", "del", ns]).with_context(|| format!("deleting namespace {ns}"))?;
        }
    }
    let _ = std::fs::remove_dir_all(crate::RUN_DIR);
    let left: Vec<String> = list_namespaces()
        .into_iter()
        .filter(|n| ALL_NAMESPACES.contains(&n.as_str()))
        .collect();
    if !left.is_empty() {
        bail!("namespaces still present after teardown: {left:?}");
    }
    Ok(())
}

pub(crate) fn sysctl(ns: &str, kv: &str) -> anyhow::Result<()> {
    ns_run(ns, &["sysctl", "-qw", kv]).map(|_| ())
}

/// Disable every offload that makes the kernel hand us non-wire-sized or
/// partially checksummed frames.
pub(crate) fn disable_offloads(ns: &str, dev: &str) -> anyhow::Result<()> {
    ns_run(
        ns,
        &[
            "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx",
            "off",
        ],
    )
    .with_context(|| format!("disabling offloads on {dev} in {ns}"))?;
    Ok(())
}

pub(crate) fn ip(ns: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut argv = vec!["ip", "-n", ns];
    argv.extend_from_slice(args);
    run(&argv).map(|_| ())
}

/// Creates namespace `ns` with its loopback up, no reverse-path filter
/// and no IPv6.
pub(crate) fn add_namespace(ns: &str) -> anyhow::Result<()> {
    run(&["ip", "netns", "add", ns])?;
    ip(ns, &["link", "set", "lo", "up"])?;
    for kv in [
        "net.ipv4.conf.all.rp_filter=0",
        "net.ipv4.conf.default.rp_filter=0",
        // No IPv6: keeps router solicitations / DAD out of the emulator.
        "net.ipv6.conf.all.disable_ipv6=1",
        "net.ipv6.conf.default.disable_ipv6=1",
    ] {
        sysctl(ns, kv)?;
    }
    Ok(())
}

/// Build the lab for `cfg` and start the emulator with `emu`. Idempotent:
/// leftovers of any previous run are removed first. On failure everything
/// created so far is torn down again.
pub fn up(cfg: &LabConfig, emu: &EmulatorCommand) -> anyhow::Result<LabInfo> {
    cfg.validate()?;
    down().context("cleaning up a previous lab")?;
    match build(cfg, emu) {
        Ok(info) => Ok(info),
        Err(e) => {
            let _ = down();
            Err(e)
        }
    }
}

fn build(cfg: &LabConfig, emu: &EmulatorCommand) -> anyhow::Result<LabInfo> {
    std::fs::create_dir_all(crate::RUN_DIR)
        .with_context(|| format!("creating {}", crate::RUN_DIR))?;
    for ns in NAMESPACES {
        add_namespace(ns)?;
    }
    sysctl(NS_PRX, "net.ipv4.ip_forward=1")?;
    // The emulator namespace must never route or answer anything itself.
    sysctl(NS_EMU, "net.ipv4.ip_forward=0")?;

    for i in 0..cfg.paths.len() {
        let (pif, cif, xif) = (path_if(i), emu_cli_if(i), emu_prx_if(i));
        let (cmac, pmac) = (path_mac(i, false), path_mac(i, true));
        ip(
            NS_CLI,
            &[
                "link", "add", &pif, "address", &cmac, "type", "veth", "peer", "name", &cif,
                "netns", NS_EMU,
            ],
        )?;
        ip(
            NS_PRX,
            &[
                "link", "add", &pif, "address", &pmac, "type", "veth", "peer", "name", &xif,
                "netns", NS_EMU,
            ],
        )?;
        for (ns, dev) in [
            (NS_CLI, &pif),
            (NS_EMU, &cif),
            (NS_EMU, &xif),
            (NS_PRX, &pif),
        ] {
            disable_offloads(ns, dev)?;
            sysctl(ns, &format!("net.ipv4.conf.{dev}.rp_filter=0"))?;
        }
        for dev in [&cif, &xif] {
            ip(NS_EMU, &["link", "set", dev, "promisc", "on", "up"])?;
            // Nothing in braid-emu should talk on these links.
            ip(NS_EMU, &["link", "set", dev, "arp", "off"])?;
        }
        let pa = format!("{}/24", prx_addr(i));
        ip(NS_PRX, &["addr", "add", &pa, "dev", &pif])?;
        ip(NS_PRX, &["link", "set", &pif, "up"])?;
        pin_neighbour(NS_PRX, i, false)?;
        address_client_path(i)?;
    }
    ip(
        NS_CLI,
        &[
            "route",
            "add",
            "default",
            "via",
            &prx_addr(0).to_string(),
            "dev",
            &path_if(0),
        ],
    )?;

    ip(
        NS_PRX,
        &[
            "link", "add", PRX_WAN_IF, "type", "veth", "peer", "name", SRV_IF, "netns", NS_SRV,
        ],
    )?;
    disable_offloads(NS_PRX, PRX_WAN_IF)?;
    disable_offloads(NS_SRV, SRV_IF)?;
    ip(
        NS_PRX,
        &[
            "addr",
            "add",
            &format!("{PRX_WAN_ADDR}/24"),
            "dev",
            PRX_WAN_IF,
        ],
    )?;
    ip(NS_PRX, &["link", "set", PRX_WAN_IF, "up"])?;
    ip(
        NS_SRV,
        &["addr", "add", &format!("{SRV_ADDR}/24"), "dev", SRV_IF],
    )?;
    ip(NS_SRV, &["link", "set", SRV_IF, "up"])?;
    ip(
        NS_SRV,
        &[
            "route",
            "add",
            "10.77.0.0/16",
            "via",
            &PRX_WAN_ADDR.to_string(),
        ],
    )?;

    let pid = start_emulator(cfg, emu)?;
    Ok(LabInfo {
        name: cfg.name.clone(),
        paths: cfg.paths.len(),
        emulator_pid: pid,
    })
}

/// Gives the client's end of path `i` (its `eth<i>`, in `braid-cli`) its
/// address and its own routing table, selected by source address, so a
/// socket bound to `10.77.i.1` leaves on that path.
pub(crate) fn address_client_path(i: usize) -> anyhow::Result<()> {
    let pif = path_if(i);
    let ca = format!("{}/24", cli_addr(i));
    ip(NS_CLI, &["addr", "add", &ca, "dev", &pif])?;
    ip(NS_CLI, &["link", "set", &pif, "up"])?;
    pin_neighbour(NS_CLI, i, true)?;
    let table = path_table(i).to_string();
    let net = format!("10.77.{i}.0/24");
    let src = cli_addr(i).to_string();
    let gw = prx_addr(i).to_string();
    let prio = (1000 + i).to_string();
    ip(
        NS_CLI,
        &[
            "route", "add", &net, "dev", &pif, "src", &src, "table", &table,
        ],
    )?;
    ip(
        NS_CLI,
        &[
            "route", "add", "default", "via", &gw, "dev", &pif, "table", &table,
        ],
    )?;
    ip(
        NS_CLI,
        &[
            "rule", "add", "from", &src, "table", &table, "priority", &prio,
        ],
    )
}

fn start_emulator(cfg: &LabConfig, emu: &EmulatorCommand) -> anyhow::Result<i32> {
    let cfg_path = emulator_config_path();
    std::fs::write(&cfg_path, cfg.to_toml_string())
        .with_context(|| format!("writing {}", cfg_path.display()))?;
    let mut argv: Vec<OsString> = vec![emu.program.clone().into_os_string()];
    argv.extend(emu.args.iter().cloned());
    argv.push(cfg_path.into_os_string());
    let mut proc = NsProcess::spawn(NS_EMU, &argv, Some(&emulator_log_path()))?;
    let pid = proc.pid();
    std::fs::write(emulator_pid_path(), format!("{pid}\n"))?;
    // Ready once it has written a stats file carrying its pid.
    let t0 = Instant::now();
    loop {
        if let Some(status) = proc.try_wait() {
            let log = std::fs::read_to_string(emulator_log_path()).unwrap_or_default();
            bail!(
                "emulator `{}` exited during start ({status}): {}",
                proc.label,
                log.trim()
            );
        }
        if crate::stats::read_stats().is_ok_and(|s| s.pid as i32 == pid) {
            break;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            bail!("emulator `{}` did not become ready within 10 s", proc.label);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(proc.detach())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path end gets its own unicast, locally administered address
    /// (`ip link add ... address` refuses a multicast one), for every path
    /// a lab file may have.
    #[test]
    fn path_macs_are_distinct_local_unicast() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..braid_core::path::MAX_PATHS {
            for proxy in [false, true] {
                let mac = path_mac(i, proxy);
                let bytes: Vec<u8> = mac
                    .split(':')
                    .map(|b| u8::from_str_radix(b, 16).expect("hex"))
                    .collect();
                assert_eq!(bytes.len(), 6, "{mac}");
                assert_eq!(bytes[0] & 0b11, 0b10, "{mac}: local unicast");
                assert!(seen.insert(mac.clone()), "{mac} twice");
            }
        }
    }
}
