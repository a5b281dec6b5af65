//! The `braid` tunnel daemon as a library, so that integration tests can
//! run server and client in-process (over loopback UDP and in-memory TUN
//! devices). The `braid` binary (`src/main.rs`) adds the simulator, lab and
//! benchmark front ends.
//!
//! - [`config`]: `server.toml` / `client.toml`, checked at start;
//! - [`daemon`]: the tokio runtime around `braid_core::conn` (sockets, TUN,
//!   control socket, Prometheus endpoint);
//! - [`keygen`]: `braid keygen`;
//! - [`relay`]: `braid relay`, a neighbour's host forwarding a client's
//!   tunnel datagrams over its uplink (PRISM's community relay);
//! - [`status`]: `braid status` and the report both it and `/metrics` render;
//! - [`transport`]: `braid send` / `braid recv`, a file over several UDP
//!   paths with braid's own MPLOT transport.

pub mod config;
pub mod daemon;
pub mod instance;
pub mod keygen;
pub mod labsend;
pub mod labtunnel;
pub mod relay;
pub mod status;
pub mod transport;

use std::path::PathBuf;

use clap::Args;

/// `braid server` / `braid client` flags.
#[derive(Args, Debug)]
pub struct DaemonArgs {
    /// The instance: reads /etc/braid/NAME.toml. Default: /etc/braid/server.toml
    /// or /etc/braid/client.toml.
    #[arg(value_name = "NAME", conflicts_with = "config")]
    pub name: Option<String>,
    /// The configuration file (see examples/server.toml, examples/client.toml).
    #[arg(long, short, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Check the configuration and exit.
    #[arg(long)]
    pub check: bool,
}

impl DaemonArgs {
    /// The file to read: `--config`, else /etc/braid/NAME.toml with NAME
    /// defaulting to the role.
    pub fn file(&self, role: &str) -> PathBuf {
        match (&self.config, &self.name) {
            (Some(c), _) => c.clone(),
            (None, Some(n)) => instance::config_path(n),
            (None, None) => instance::config_path(role),
        }
    }
}

/// `braid server`.
pub fn run_server(a: DaemonArgs) -> anyhow::Result<()> {
    let file = a.file("server");
    let s = config::load_server(&file)?;
    if a.check {
        println!(
            "{}: ok ({} clients, network {})",
            file.display(),
            s.core.clients.len(),
            s.core.network
        );
        return Ok(());
    }
    daemon::server::run_cmd(s)
}

/// `braid client`.
pub fn run_client(a: DaemonArgs) -> anyhow::Result<()> {
    let file = a.file("client");
    let s = config::load_client(&file)?;
    if a.check {
        println!("{}: ok ({} paths)", file.display(), s.paths.len());
        return Ok(());
    }
    daemon::client::run_cmd(s)
}
