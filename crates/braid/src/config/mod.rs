//! The daemon's configuration files: one TOML file per side, checked
//! completely at start.
//!
//! Parsing is strict (`deny_unknown_fields`: a misspelt key is an error,
//! not a silently ignored line). Every error names the offending key and
//! says how to fix it. The files and every key are documented in
//! `examples/server.toml` and `examples/client.toml`; the structures
//! below mirror them.
//!
//! A private key file must not be accessible to group or others (`chmod
//! 600`), as ssh insists for identity files.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use braid_core::conn::{ClientEntry, ConnConfig, Ipv4Net, ServerConfig};
use braid_core::crypto::{check_key_file_mode, PrivateKey, PublicKey};
use braid_core::path::{PathId, MAX_PATHS};
use braid_core::time::Duration;
use serde::Deserialize;

/// Default UDP port of the server.
pub const DEFAULT_PORT: u16 = 51820;
/// Default control socket of each side.
pub const RUN_DIR: &str = "/run/braid";
/// Where docs/DEPLOY.md installs the example configurations, which error
/// messages point at.
pub const EXAMPLES_DIR: &str = "/usr/local/share/doc/braid/examples";

/// The default control socket of the instance whose TUN device is `tun`:
/// `/run/braid/<tun>.sock`. Named per instance (the TUN device name is
/// unique on a host) so that two daemons on one host, or a server and a
/// client, never share one; `braid status NAME` finds it.
pub fn default_control_socket(tun: &str) -> PathBuf {
    Path::new(RUN_DIR).join(format!("{tun}.sock"))
}
/// Default metrics endpoints (loopback only).
pub const DEFAULT_SERVER_METRICS: &str = "127.0.0.1:9184";
pub const DEFAULT_CLIENT_METRICS: &str = "127.0.0.1:9185";

mod file;
mod tuning;

pub use file::*;
use tuning::{conn_config, redundancy_config};

// ---------------------------------------------------------------------------
// Checked settings

/// `[metrics]` after checking: where to serve `/metrics`, if anywhere.
pub type MetricsAddr = Option<SocketAddr>;

/// Everything `braid server` needs, checked.
#[derive(Debug)]
pub struct ServerSettings {
    pub listen: SocketAddr,
    pub private_key: PrivateKey,
    pub core: ServerConfig,
    pub tun_name: String,
    pub control_socket: Option<PathBuf>,
    pub metrics: MetricsAddr,
    pub log_level: String,
    pub nat_out_interface: Option<String>,
}

/// One client path, checked.
#[derive(Clone, Debug)]
pub struct PathSettings {
    pub id: PathId,
    pub name: String,
    pub bind: Option<IpAddr>,
    pub device: Option<String>,
    pub server: SocketAddr,
}

/// Everything `braid client` needs, checked.
#[derive(Debug)]
pub struct ClientSettings {
    pub private_key: PrivateKey,
    pub server_key: PublicKey,
    pub conn: ConnConfig,
    pub paths: Vec<PathSettings>,
    pub tun_name: String,
    pub routes: Vec<Ipv4Net>,
    pub control_socket: Option<PathBuf>,
    pub metrics: MetricsAddr,
    pub log_level: String,
}

/// Reads and checks `server.toml`.
pub fn load_server(path: &Path) -> Result<ServerSettings> {
    let text = read(path)?;
    let file: ServerFile = parse(path, &text)?;
    server_settings(file, path.parent().unwrap_or(Path::new(".")))
        .with_context(|| format!("{}", path.display()))
}

/// Reads and checks `client.toml`.
pub fn load_client(path: &Path) -> Result<ClientSettings> {
    let text = read(path)?;
    let file: ClientFile = parse(path, &text)?;
    client_settings(file, path.parent().unwrap_or(Path::new(".")))
        .with_context(|| format!("{}", path.display()))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read configuration file {} (templates: {EXAMPLES_DIR}/server.toml and client.toml, examples/ in the source)",
            path.display()
        )
    })
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        // toml's message names the key (unknown, missing, wrong type) and
        // shows the line.
        anyhow!(
            "{}: {}\n(every key is documented in {EXAMPLES_DIR}/server.toml and client.toml, examples/ in the source)",
            path.display(),
            e.to_string().trim_end()
        )
    })
}

/// Checks a parsed `server.toml`; relative key paths are taken from `base`.
pub fn server_settings(f: ServerFile, base: &Path) -> Result<ServerSettings> {
    let listen = socket_addr("listen", &f.listen, "listen = \"0.0.0.0:51820\"")?;
    let network = Ipv4Net::parse(&f.network)
        .map_err(|e| anyhow!("`network`: {e}; write e.g. network = \"10.77.0.0/24\""))?;
    let mut conn = conn_config(&f.scheduler, &f.tuning, f.tun.mtu)?;
    conn.redundancy = redundancy_config(&f.redundancy)?;
    let private_key = load_private_key(&resolve(base, &f.private_key_file), "private_key_file")?;
    if f.clients.is_empty() {
        bail!(
            "no `[[client]]` entries: the server admits only listed clients; add\n\
             [[client]]\nname = \"laptop\"\npublic_key = \"<output of braid keygen on the client>\""
        );
    }
    let mut clients = Vec::new();
    for (i, c) in f.clients.iter().enumerate() {
        reject_placeholder(
            &format!("`client[{i}].public_key` ({})", c.name),
            &c.public_key,
            "the client's public key (`braid keygen --public-of` its key file, on the client)",
        )?;
        let key = PublicKey::from_base64(&c.public_key).map_err(|e| {
            anyhow!(
                "`client[{i}].public_key` ({}): {e}; paste the public key `braid keygen` printed",
                c.name
            )
        })?;
        if clients.iter().any(|e: &ClientEntry| e.key == key) {
            bail!(
                "`client[{i}].public_key` ({}): the same key is listed twice",
                c.name
            );
        }
        let address = match &c.address {
            None => None,
            Some(a) => Some(a.parse::<Ipv4Addr>().map_err(|_| {
                anyhow!("`client[{i}].address` ({}): `{a}` is not an IPv4 address; write e.g. address = \"10.77.0.2\" or leave it out", c.name)
            })?),
        };
        clients.push(ClientEntry {
            name: c.name.clone(),
            key,
            address,
        });
    }
    let mut core = ServerConfig::new(network, clients);
    core.conn = conn;
    if let Some(s) = f.peer_idle_timeout_s {
        if s == 0 {
            bail!("`peer_idle_timeout_s` must be at least 1");
        }
        core.peer_idle_timeout = Duration::from_secs(s);
    }
    // The same check the server makes at start, reported against the keys.
    let fixed: Vec<Option<Ipv4Addr>> = core.clients.iter().map(|c| c.address).collect();
    network
        .assign(&fixed)
        .map_err(|e| anyhow!("`client[].address` / `network`: {e}"))?;
    let nat_out_interface = if f.nat.enabled {
        Some(f.nat.out_interface.clone().ok_or_else(|| {
            anyhow!("`nat.out_interface` is required when `nat.enabled = true`; write e.g. out_interface = \"eth0\"")
        })?)
    } else {
        None
    };
    let tun = tun_name(&f.tun)?;
    Ok(ServerSettings {
        listen,
        private_key,
        core,
        tun_name: tun.clone(),
        control_socket: control_socket(f.control_socket, &tun),
        metrics: metrics(&f.metrics, DEFAULT_SERVER_METRICS)?,
        log_level: log_level(f.log_level)?,
        nat_out_interface,
    })
}

/// The examples' placeholder keys start with this: they are well-formed
/// base64 keys, so without this check a copied example loads, and the
/// handshake fails in silence.
const PLACEHOLDER_KEY_PREFIX: &str = "REPLACE";

/// Refuses a key left as the examples' placeholder, naming the field.
fn reject_placeholder(field: &str, key: &str, what: &str) -> Result<()> {
    if key
        .trim()
        .to_ascii_uppercase()
        .starts_with(PLACEHOLDER_KEY_PREFIX)
    {
        bail!("{field} is still the example's placeholder `{key}`; replace it with {what}");
    }
    Ok(())
}

/// Checks a parsed `client.toml`; relative key paths are taken from `base`.
pub fn client_settings(f: ClientFile, base: &Path) -> Result<ClientSettings> {
    let server = socket_addr("server", &f.server, "server = \"203.0.113.1:51820\"")?;
    reject_placeholder(
        "`server_public_key`",
        &f.server_public_key,
        "the server's public key (`braid keygen --public-of` its key file, on the server)",
    )?;
    let server_key = PublicKey::from_base64(&f.server_public_key).map_err(|e| {
        anyhow!(
            "`server_public_key`: {e}; paste the public key `braid keygen` printed on the server"
        )
    })?;
    let mut conn = conn_config(&f.scheduler, &f.tuning, f.tun.mtu)?;
    conn.redundancy = redundancy_config(&f.redundancy)?;
    if f.paths.is_empty() {
        bail!(
            "no `[[path]]` entries: list each network path, e.g.\n\
             [[path]]\nname = \"wlan\"\nbind = \"192.168.1.10\"\ndevice = \"wlan0\""
        );
    }
    if f.paths.len() > MAX_PATHS {
        bail!(
            "{} `[[path]]` entries: at most {MAX_PATHS} are supported",
            f.paths.len()
        );
    }
    let mut paths = Vec::new();
    for (i, p) in f.paths.iter().enumerate() {
        if paths.iter().any(|q: &PathSettings| q.name == p.name) {
            bail!("`path[{i}].name`: the name `{}` is used twice", p.name);
        }
        let bind = match &p.bind {
            None => None,
            Some(b) => Some(b.parse::<IpAddr>().map_err(|_| {
                anyhow!("`path[{i}].bind` ({}): `{b}` is not an IP address; write the interface's address, e.g. bind = \"192.168.1.10\"", p.name)
            })?),
        };
        if bind.is_none() && p.device.is_none() {
            bail!("`path[{i}]` ({}): give `bind` (source address) or `device` (interface), or both, so the path uses its own interface", p.name);
        }
        let server = match (&p.server, &p.via) {
            (Some(_), Some(_)) => bail!(
                "`path[{i}]` ({}): give `server` or `via` (a relay), not both",
                p.name
            ),
            (None, None) => server,
            (Some(s), None) => socket_addr(
                &format!("path[{i}].server"),
                s,
                "server = \"203.0.113.1:51820\"",
            )?,
            // The relay forwards to the server; to this path it is the
            // server's address.
            (None, Some(v)) => {
                socket_addr(&format!("path[{i}].via"), v, "via = \"192.168.7.1:51821\"")?
            }
        };
        paths.push(PathSettings {
            id: PathId(i as u8),
            name: p.name.clone(),
            bind,
            device: p.device.clone(),
            server,
        });
    }
    let mut routes = Vec::new();
    for (i, r) in f.routes.iter().enumerate() {
        routes.push(Ipv4Net::parse_route(r).map_err(|e| {
            anyhow!("`routes[{i}]`: {e}; write e.g. routes = [\"0.0.0.0/1\", \"128.0.0.0/1\"]")
        })?);
    }
    let private_key = load_private_key(&resolve(base, &f.private_key_file), "private_key_file")?;
    let tun = tun_name(&f.tun)?;
    Ok(ClientSettings {
        private_key,
        server_key,
        conn,
        paths,
        tun_name: tun.clone(),
        routes,
        control_socket: control_socket(f.control_socket, &tun),
        metrics: metrics(&f.metrics, DEFAULT_CLIENT_METRICS)?,
        log_level: log_level(f.log_level)?,
    })
}

fn socket_addr(key: &str, v: &str, example: &str) -> Result<SocketAddr> {
    v.parse()
        .map_err(|_| anyhow!("`{key}`: `{v}` is not an address with port; write e.g. {example}"))
}

fn tun_name(t: &TunFile) -> Result<String> {
    let name = t.name.clone().unwrap_or_else(|| "braid0".into());
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ']) {
        bail!("`tun.name`: `{name}` is not a valid interface name (1..15 characters, no '/' or spaces)");
    }
    Ok(name)
}

fn control_socket(v: Option<PathBuf>, tun: &str) -> Option<PathBuf> {
    match v {
        Some(p) if p.as_os_str().is_empty() => None,
        Some(p) => Some(p),
        None => Some(default_control_socket(tun)),
    }
}

fn metrics(m: &MetricsFile, default: &str) -> Result<MetricsAddr> {
    if m.enabled == Some(false) {
        return Ok(None);
    }
    let listen = m.listen.as_deref().unwrap_or(default);
    socket_addr("metrics.listen", listen, "listen = \"127.0.0.1:9184\"").map(Some)
}

fn log_level(v: Option<String>) -> Result<String> {
    let v = v.unwrap_or_else(|| "info".into());
    match v.as_str() {
        "error" | "warn" | "info" | "debug" | "trace" => Ok(v),
        _ => bail!("`log_level`: `{v}` is not a level; use error, warn, info, debug or trace"),
    }
}

fn resolve(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Reads a private key file (`key` names the configuration key, for
/// errors). Refused if group or others can access it.
pub fn load_private_key(path: &Path, key: &str) -> Result<PrivateKey> {
    let meta = std::fs::metadata(path).with_context(|| {
        format!(
            "`{key}`: cannot read {}; create it with `braid keygen --out {}`",
            path.display(),
            path.display()
        )
    })?;
    check_key_file_mode(meta.permissions().mode()).map_err(|e| {
        anyhow!(
            "`{key}`: {}: {}",
            path.display(),
            e.to_string().replace("FILE", &path.display().to_string())
        )
    })?;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("`{key}`: cannot read {}", path.display()))?;
    PrivateKey::from_base64(&text).map_err(|e| {
        anyhow!(
            "`{key}`: {}: {e}; the file must hold one base64 key as `braid keygen` writes it",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests;
