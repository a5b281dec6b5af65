//! The `braid status` command: which daemon's control socket to ask
//! (by instance name, by path, or every one in the run directory), and
//! the one-line protocol on that socket (a command, then the answer
//! until the daemon closes the connection).

use std::path::PathBuf;
use std::time::Duration as StdDuration;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::StatusReport;
use crate::config::{default_control_socket, RUN_DIR};

/// `braid status` flags.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// The instance: its TUN device name (`tun.name`, default braid0),
    /// whose control socket is /run/braid/NAME.sock. Default: every
    /// daemon with a socket in /run/braid.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// The daemon's control socket (`control_socket` in its configuration).
    #[arg(long, value_name = "PATH", conflicts_with = "name")]
    pub socket: Option<PathBuf>,
    /// Print the raw JSON report instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The control sockets in `dir`, by name.
fn sockets_in(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub fn run(a: StatusArgs) -> Result<()> {
    let sockets = match (a.socket, a.name) {
        (Some(s), _) => vec![s],
        (None, Some(n)) => {
            // The TUN device name, or an instance file /etc/braid/NAME.toml.
            let by_tun = default_control_socket(&n);
            let file = crate::instance::config_path(&n);
            if !by_tun.exists() && file.exists() {
                let role = crate::instance::role_of(&file)?;
                let s = match role {
                    crate::instance::Role::Server => {
                        crate::config::load_server(&file)?.control_socket
                    }
                    crate::instance::Role::Client => {
                        crate::config::load_client(&file)?.control_socket
                    }
                };
                vec![s.unwrap_or(by_tun)]
            } else {
                vec![by_tun]
            }
        }
        (None, None) => {
            let found = sockets_in(std::path::Path::new(RUN_DIR));
            if found.is_empty() {
                bail!(
                    "no braid daemon socket in {RUN_DIR}; is the daemon running? \
                     (pass --socket PATH if its configuration sets control_socket)"
                );
            }
            if found.len() > 1 && a.json {
                bail!(
                    "several braid daemons run here ({}); name one: braid status NAME --json",
                    found
                        .iter()
                        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            found
        }
    };
    for (i, socket) in sockets.iter().enumerate() {
        let json = query(socket)?;
        if a.json {
            println!("{}", json.trim_end());
        } else {
            let report: StatusReport = serde_json::from_str(&json)
                .with_context(|| format!("unexpected answer from {}", socket.display()))?;
            if sockets.len() > 1 {
                let name = socket.file_stem().unwrap_or_default().to_string_lossy();
                println!(
                    "{}== {name} ({}) ==",
                    if i > 0 { "\n" } else { "" },
                    socket.display()
                );
            }
            print!("{}", report.to_table());
        }
    }
    Ok(())
}

/// Asks the daemon at `socket` for its report (JSON text).
pub fn query(socket: &std::path::Path) -> Result<String> {
    command(socket, "status")
}

/// Sends one command line (`status`, `stop`) to the daemon at `socket`;
/// its answer.
pub fn command(socket: &std::path::Path, cmd: &str) -> Result<String> {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(socket).with_context(|| {
        format!(
            "cannot connect to {}; is the daemon running (and are you allowed to open its socket)?",
            socket.display()
        )
    })?;
    s.set_read_timeout(Some(StdDuration::from_secs(5)))?;
    s.write_all(format!("{cmd}\n").as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)
        .with_context(|| format!("reading the answer from {}", socket.display()))?;
    Ok(out)
}
