//! braid modes of `braid lab bench`: `braid server` runs in the proxy
//! namespace, `braid client` in the client namespace with one path per
//! emulated link, and iperf3 runs from the client's tunnel address to the
//! "internet" server through the tunnel.
//!
//! ```text
//! braid-cli: iperf3 -B 10.99.0.2 -> braid0 (TUN) -> braid client -- path i: 10.77.i.1 -> 10.77.i.2:51820
//! braid-prx: braid server (TUN braid0 10.99.0.1/24) -> routing -> 10.78.0.2 (braid-srv)
//! braid-srv: route back to 10.99.0.0/24 via the proxy
//! ```
//! The proxy routes rather than NATs here (the lab's server has a route
//! back); docs/DEPLOY.md gives the masquerade rule for a real deployment.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use braid_core::crypto::PrivateKey;
use braid_core::sched::SchedulerKind;
use braid_lab::cmd::ns_run;
use braid_lab::relayhost;
use braid_lab::topo::{self, NS_CLI, NS_PRX, NS_SRV};
use braid_lab::{BenchContext, LabConfig, Mode, ModeSetup, NsProcess};

/// The tunnel network in the lab, and the client's fixed address on it.
pub const TUNNEL_NET: &str = "10.99.0.0/24";
pub const CLIENT_TUNNEL_ADDR: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 2);
const PORT: u16 = 51820;
/// Where the bench keeps keys, configs and daemon logs.
pub const WORK_DIR: &str = "/run/braid-lab-tunnel";

pub(crate) fn os_rng() -> anyhow::Result<rand_chacha::ChaCha20Rng> {
    use rand_chacha::rand_core::SeedableRng;
    let mut seed = [0u8; 32];
    getrandom::getrandom(&mut seed).map_err(|e| anyhow::anyhow!("no OS randomness: {e}"))?;
    Ok(rand_chacha::ChaCha20Rng::from_seed(seed))
}

/// Writes keys and both config files; returns (server config, client config).
pub fn write_configs(
    cfg: &LabConfig,
    kind: SchedulerKind,
    dir: &Path,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    write_configs_with(cfg, kind, dir, "")
}

/// [`write_configs`] with `extra` TOML (whole tables, e.g. a
/// `[redundancy]` section) appended to both files.
pub fn write_configs_with(
    cfg: &LabConfig,
    kind: SchedulerKind,
    dir: &Path,
    extra: &str,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    write_configs_relayed(cfg, kind, dir, extra, None)
}

/// Port a lab relay listens on (next to the server's).
pub const RELAY_PORT: u16 = PORT + 1;

/// [`write_configs_with`], with path `relayed` (if any) bound to the
/// client's end of its local link to the relay host and naming the relay
/// there (`bind = "10.79.0.1"`, `via = "10.79.0.2:51821"`) instead of the
/// server.
fn write_configs_relayed(
    cfg: &LabConfig,
    kind: SchedulerKind,
    dir: &Path,
    extra: &str,
    relayed: Option<usize>,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut rng = os_rng()?;
    let (server_key, client_key) = (
        PrivateKey::generate(&mut rng),
        PrivateKey::generate(&mut rng),
    );
    let (skf, ckf) = (dir.join("server.key"), dir.join("client.key"));
    crate::keygen::write_private_key(&skf, &server_key, true)?;
    crate::keygen::write_private_key(&ckf, &client_key, true)?;
    let sched = kind.as_str();
    let server = format!(
        r#"listen = "0.0.0.0:{PORT}"
private_key_file = "{skf}"
network = "{TUNNEL_NET}"
scheduler = "{sched}"
control_socket = "{dir}/server.sock"
log_level = "info"

[metrics]
enabled = false

[[client]]
name = "lab"
public_key = "{cpub}"
address = "{CLIENT_TUNNEL_ADDR}"
"#,
        skf = skf.display(),
        dir = dir.display(),
        cpub = client_key.public_key().to_base64(),
    );
    let mut client = format!(
        r#"server = "{first}:{PORT}"
server_public_key = "{spub}"
private_key_file = "{ckf}"
scheduler = "{sched}"
routes = ["{srv}/32"]
control_socket = "{dir}/client.sock"
log_level = "info"

[metrics]
enabled = false
"#,
        first = topo::prx_addr(0),
        spub = server_key.public_key().to_base64(),
        ckf = ckf.display(),
        srv = topo::SRV_ADDR,
        dir = dir.display(),
    );
    for (i, p) in cfg.paths.iter().enumerate() {
        let (bind, key, to) = if relayed == Some(i) {
            (
                relayhost::CLI_LAN_ADDR,
                "via",
                SocketAddr::from((relayhost::RLY_LAN_ADDR, RELAY_PORT)),
            )
        } else {
            (
                topo::cli_addr(i),
                "server",
                SocketAddr::from((topo::prx_addr(i), PORT)),
            )
        };
        client.push_str(&format!(
            "\n[[path]]\nname = \"{}\"\nbind = \"{bind}\"\n{key} = \"{to}\"\n",
            p.name,
        ));
    }
    let (sc, cc) = (dir.join("server.toml"), dir.join("client.toml"));
    std::fs::write(&sc, format!("{server}\n{extra}"))?;
    std::fs::write(&cc, format!("{client}\n{extra}"))?;
    Ok((sc, cc))
}

/// Undoes what [`start`] changed outside the daemons.
pub type Teardown = Box<dyn FnOnce()>;

/// Starts server and client (the `braid` executable `exe`) and waits
/// until the tunnel carries traffic. Returns the daemons (stopped when
/// dropped) and what undoes the route on the lab's server.
pub fn start(
    cfg: &LabConfig,
    kind: SchedulerKind,
    exe: &Path,
) -> anyhow::Result<(Vec<NsProcess>, Teardown)> {
    start_with(cfg, kind, exe, "")
}

/// [`start`] with `extra` TOML appended to both daemons' configurations
/// (see [`write_configs_with`]).
pub fn start_with(
    cfg: &LabConfig,
    kind: SchedulerKind,
    exe: &Path,
    extra: &str,
) -> anyhow::Result<(Vec<NsProcess>, Teardown)> {
    start_relayed(cfg, kind, exe, extra, None)
}

/// Writes `relay.toml` for a relay on the relay host that listens on its
/// local link, admits the client's address there, and forwards to the
/// server's address on path `i`, over the relay's uplink.
fn write_relay_config(dir: &Path, i: usize) -> anyhow::Result<PathBuf> {
    let text = format!(
        r#"listen = "{listen}:{RELAY_PORT}"
server = "{server}:{PORT}"
report_every_s = 1
log_level = "info"
control_socket = "{dir}/relay.sock"

[[client]]
name = "lab"
addr = "{client}"
rate_kbps = 1000000
"#,
        listen = relayhost::RLY_LAN_ADDR,
        server = topo::prx_addr(i),
        client = relayhost::CLI_LAN_ADDR,
        dir = dir.display(),
    );
    let path = dir.join("relay.toml");
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// [`start_with`], and with `relayed = Some(i)` a community relay
/// (`braid relay`, PRISM Sections 2-3) carries the client's path `i`: a
/// relay host ([`braid_lab::relayhost`]) takes that emulated path as its
/// own uplink, the relay runs there, listens on the host's local link to
/// the client and forwards over the uplink to the server; the client's
/// path binds to its end of the local link and names the relay with
/// `via`. The relay logs its per-client counters every second to
/// `WORK_DIR/relay.log` and answers `braid status --socket
/// WORK_DIR/relay.sock`. The teardown gives the path back to the client.
pub fn start_relayed(
    cfg: &LabConfig,
    kind: SchedulerKind,
    exe: &Path,
    extra: &str,
    relayed: Option<usize>,
) -> anyhow::Result<(Vec<NsProcess>, Teardown)> {
    if let Some(i) = relayed {
        anyhow::ensure!(
            i < cfg.paths.len(),
            "path {i} cannot be relayed: the lab has {} paths",
            cfg.paths.len()
        );
    }
    let dir = PathBuf::from(WORK_DIR);
    let (sc, cc) = write_configs_relayed(cfg, kind, &dir, extra, relayed)?;
    if let Some(i) = relayed {
        relayhost::add(i)?;
    }
    let undo_relay_host = move || {
        if let Some(i) = relayed {
            if let Err(e) = relayhost::remove(i) {
                tracing::warn!("giving path {i} back from the relay host: {e:#}");
            }
        }
    };
    match start_daemons(&dir, &exe.to_string_lossy(), &sc, &cc, relayed) {
        Ok(processes) => {
            let teardown: Teardown = Box::new(move || {
                let _ = ns_run(NS_SRV, &["ip", "route", "del", TUNNEL_NET]);
                undo_relay_host();
            });
            Ok((processes, teardown))
        }
        Err(e) => {
            undo_relay_host();
            Err(e)
        }
    }
}

/// Starts server, relay (for a relayed path) and client, routes the
/// tunnel network back from the lab's server, and waits until the tunnel
/// carries traffic.
fn start_daemons(
    dir: &Path,
    exe: &str,
    sc: &Path,
    cc: &Path,
    relayed: Option<usize>,
) -> anyhow::Result<Vec<NsProcess>> {
    let server = NsProcess::spawn(
        NS_PRX,
        &[exe, "server", "--config", &sc.to_string_lossy()],
        Some(&dir.join("server.log")),
    )?;
    let relay = match relayed {
        None => None,
        Some(i) => {
            let rc = write_relay_config(dir, i)?;
            Some(NsProcess::spawn(
                topo::NS_RLY,
                &[exe, "relay", "--config", &rc.to_string_lossy()],
                Some(&dir.join("relay.log")),
            )?)
        }
    };
    // The lab's "internet" host routes the tunnel network back via the proxy.
    let _ = ns_run(
        NS_SRV,
        &[
            "ip",
            "route",
            "replace",
            TUNNEL_NET,
            "via",
            &topo::PRX_WAN_ADDR.to_string(),
        ],
    );
    let client = NsProcess::spawn(
        NS_CLI,
        &[exe, "client", "--config", &cc.to_string_lossy()],
        Some(&dir.join("client.log")),
    )?;
    let mut processes = vec![client, server];
    processes.extend(relay);
    braid_lab::probe::wait_reachable(
        NS_CLI,
        Some(CLIENT_TUNNEL_ADDR),
        topo::SRV_ADDR,
        Duration::from_secs(15),
    )
    .with_context(|| {
        format!("the tunnel did not come up; see {WORK_DIR}/server.log and {WORK_DIR}/client.log")
    })?;
    Ok(processes)
}

/// Waits until every path of the lab client's tunnel is up (its `braid
/// status`), or `most` has passed, whichever is first
/// (`BenchOptions::wait_paths_s`). A status that cannot be read counts as
/// not yet up; after `most` the measurement starts anyway, with a warning.
/// One status read may take up to the control socket's 5 s timeout.
fn wait_paths_up(most: Duration) {
    let socket = Path::new(WORK_DIR).join("client.sock");
    let all_up = || {
        let Ok(text) = crate::status::query(&socket) else {
            return false;
        };
        serde_json::from_str::<crate::status::StatusReport>(&text).is_ok_and(|r| {
            r.tunnels
                .iter()
                .all(|t| !t.paths.is_empty() && t.paths.iter().all(|p| p.up))
        })
    };
    let t0 = std::time::Instant::now();
    while !all_up() {
        if t0.elapsed() >= most {
            tracing::warn!(
                "--wait-paths: not every path of the tunnel was up after {:.1} s; measuring anyway (see {WORK_DIR}/client.log)",
                most.as_secs_f64()
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The bench mode `name` running `exe` with scheduler `kind`.
pub fn mode(name: &str, kind: SchedulerKind, exe: PathBuf) -> anyhow::Result<Mode> {
    mode_with(name, kind, exe, String::new(), None)
}

/// TOML the `-rpc` bench modes add to both daemons: PRISM's reverse-path
/// ACK control instead of resequencing.
pub const PRISM_RPC_TUNING: &str = "[tuning]\nreorder = \"prism-rpc\"\n";

/// [`mode`] with `extra` TOML appended to both daemons' configurations,
/// and path `relayed` (if any) carried by a community relay
/// ([`start_relayed`]).
pub fn mode_with(
    name: &str,
    kind: SchedulerKind,
    exe: PathBuf,
    extra: String,
    relayed: Option<usize>,
) -> anyhow::Result<Mode> {
    Ok(Mode::custom(
        name,
        move |ctx: &BenchContext| -> anyhow::Result<ModeSetup> {
            let (processes, teardown) = start_relayed(ctx.cfg, kind, &exe, &extra, relayed)?;
            if ctx.opts.wait_paths_s > 0.0 {
                wait_paths_up(Duration::from_secs_f64(ctx.opts.wait_paths_s));
            }
            if ctx.opts.idle_s > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(ctx.opts.idle_s));
            }
            Ok(ModeSetup {
                target: topo::SRV_ADDR,
                bind: Some(CLIENT_TUNNEL_ADDR),
                mptcp: false,
                processes,
                teardown: Some(teardown),
                transfer: None,
            })
        },
    ))
}
