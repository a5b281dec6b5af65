//! wireguard-tools habits: an instance is a configuration file
//! `/etc/braid/NAME.toml`. `braid up NAME` starts its daemon in the
//! background (server or client, as the file says) and returns once the
//! daemon answers on its control socket; `braid down NAME` stops it
//! through that socket (the daemon then cleans up as on SIGTERM);
//! `braid showconf NAME` prints the configuration as the daemon sees it,
//! defaults filled in and the public keys derived.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::config::{load_client, load_server, RUN_DIR};

/// Where `braid up NAME` and `braid server NAME` look for NAME's file.
pub const CONFIG_DIR: &str = "/etc/braid";

/// `/etc/braid/NAME.toml`, or NAME itself if it is a path.
pub fn config_path(name: &str) -> PathBuf {
    if name.contains('/') || name.ends_with(".toml") {
        PathBuf::from(name)
    } else {
        Path::new(CONFIG_DIR).join(format!("{name}.toml"))
    }
}

/// Which daemon a configuration file is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    Server,
    Client,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

/// A server's file has `listen`, a client's has `server`.
pub fn role_of(file: &Path) -> Result<Role> {
    let text = std::fs::read_to_string(file).with_context(|| {
        format!(
            "cannot read configuration file {} (start from examples/server.toml or examples/client.toml)",
            file.display()
        )
    })?;
    let v: toml::Table =
        toml::from_str(&text).with_context(|| format!("{}: not valid TOML", file.display()))?;
    match (v.contains_key("listen"), v.contains_key("server")) {
        (true, false) => Ok(Role::Server),
        (false, true) => Ok(Role::Client),
        _ => bail!(
            "{}: cannot tell a server's file (with `listen`) from a client's (with `server`)",
            file.display()
        ),
    }
}

/// The instance's control socket, from its file.
fn control_socket(file: &Path, role: Role) -> Result<PathBuf> {
    let s = match role {
        Role::Server => load_server(file)?.control_socket,
        Role::Client => load_client(file)?.control_socket,
    };
    s.with_context(|| {
        format!(
            "{}: control_socket is disabled (\"\"); braid up/down need it",
            file.display()
        )
    })
}

/// `braid up` / `braid down` / `braid showconf` argument.
#[derive(Args, Debug)]
pub struct InstanceArgs {
    /// The instance: /etc/braid/NAME.toml (or a path to a .toml file).
    #[arg(value_name = "NAME")]
    pub name: String,
}

/// `braid up NAME`.
pub fn up(a: InstanceArgs) -> Result<()> {
    let file = config_path(&a.name);
    let role = role_of(&file)?;
    let socket = control_socket(&file, role)?;
    if crate::status::query(&socket).is_ok() {
        bail!(
            "{}: already running (control socket {})",
            a.name,
            socket.display()
        );
    }
    std::fs::create_dir_all(RUN_DIR).with_context(|| format!("cannot create {RUN_DIR}"))?;
    let stem = file.file_stem().unwrap_or_default().to_string_lossy();
    let log_path = Path::new(RUN_DIR).join(format!("{stem}.log"));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    let exe = std::env::current_exe().context("cannot find the braid executable")?;
    let mut cmd = Command::new(exe);
    cmd.args([role.as_str(), "--config"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    {
        use std::os::unix::process::CommandExt;
        // Its own session: closing the terminal does not reach it.
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().context("cannot start the daemon")?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            bail!(
                "{}: the {} exited ({status}):\n{}",
                a.name,
                role.as_str(),
                log.trim_end()
            );
        }
        if crate::status::query(&socket).is_ok() {
            break;
        }
        if start.elapsed() > Duration::from_secs(10) {
            bail!(
                "{}: the {} (pid {}) does not answer on {} after 10 s; see {}",
                a.name,
                role.as_str(),
                child.id(),
                socket.display(),
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "{}: {} running (pid {}); log {}; `braid status --socket {}`; stop with `braid down {}`",
        a.name,
        role.as_str(),
        child.id(),
        log_path.display(),
        socket.display(),
        a.name
    );
    Ok(())
}

/// `braid down NAME`.
pub fn down(a: InstanceArgs) -> Result<()> {
    let file = config_path(&a.name);
    let role = role_of(&file)?;
    let socket = control_socket(&file, role)?;
    crate::status::command(&socket, "stop")
        .with_context(|| format!("{}: is it running?", a.name))?;
    let start = Instant::now();
    while socket.exists() {
        if start.elapsed() > Duration::from_secs(10) {
            bail!(
                "{}: asked to stop, but its control socket {} is still there after 10 s",
                a.name,
                socket.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("{}: {} stopped", a.name, role.as_str());
    Ok(())
}

/// `braid showconf NAME`: the effective configuration.
pub fn showconf(a: InstanceArgs) -> Result<()> {
    let file = config_path(&a.name);
    print!("{}", effective(&file)?);
    Ok(())
}

/// The configuration in `file` as the daemon would run it.
pub fn effective(file: &Path) -> Result<String> {
    let mut o = String::new();
    let _ = writeln!(o, "# {} (effective settings)", file.display());
    match role_of(file)? {
        Role::Server => {
            let s = load_server(file)?;
            let _ = writeln!(o, "role = \"server\"");
            let _ = writeln!(o, "listen = \"{}\"", s.listen);
            let _ = writeln!(
                o,
                "public_key = \"{}\"",
                s.private_key.public_key().to_base64()
            );
            let _ = writeln!(o, "network = \"{}\"", s.core.network);
            common(
                &mut o,
                &s.tun_name,
                &s.control_socket,
                s.metrics,
                &s.log_level,
            );
            match &s.nat_out_interface {
                Some(out) => {
                    let _ = writeln!(
                        o,
                        "nat = \"table ip {} masquerades {} out of {out}\"",
                        crate::daemon::net::nat_table(&s.tun_name),
                        s.core.network
                    );
                }
                None => {
                    let _ = writeln!(o, "nat = \"off\"");
                }
            }
            for c in &s.core.clients {
                let _ = writeln!(o, "\n[[client]]\nname = \"{}\"", c.name);
                let _ = writeln!(o, "public_key = \"{}\"", c.key.to_base64());
                match c.address {
                    Some(a) => writeln!(o, "address = \"{a}\""),
                    None => writeln!(o, "address = \"next free\""),
                }
                .ok();
            }
        }
        Role::Client => {
            let s = load_client(file)?;
            let _ = writeln!(o, "role = \"client\"");
            let _ = writeln!(
                o,
                "public_key = \"{}\"",
                s.private_key.public_key().to_base64()
            );
            let _ = writeln!(o, "server_public_key = \"{}\"", s.server_key.to_base64());
            let routes: Vec<String> = s.routes.iter().map(|r| format!("\"{r}\"")).collect();
            let _ = writeln!(o, "routes = [{}]", routes.join(", "));
            common(
                &mut o,
                &s.tun_name,
                &s.control_socket,
                s.metrics,
                &s.log_level,
            );
            for p in &s.paths {
                let _ = writeln!(o, "\n[[path]]  # id {}\nname = \"{}\"", p.id.0, p.name);
                let _ = writeln!(o, "server = \"{}\"", p.server);
                if let Some(d) = &p.device {
                    let _ = writeln!(o, "device = \"{d}\"");
                }
                if let Some(b) = p.bind {
                    let _ = writeln!(o, "bind = \"{b}\"");
                }
            }
        }
    }
    Ok(o)
}

fn common(
    o: &mut String,
    tun: &str,
    socket: &Option<PathBuf>,
    metrics: Option<std::net::SocketAddr>,
    log_level: &str,
) {
    let _ = writeln!(o, "tun.name = \"{tun}\"");
    let _ = writeln!(
        o,
        "control_socket = \"{}\"",
        socket
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string())
    );
    let _ = writeln!(
        o,
        "metrics = \"{}\"",
        metrics.map_or("off".into(), |a| format!("http://{a}/metrics"))
    );
    let _ = writeln!(o, "log_level = \"{log_level}\"");
}
