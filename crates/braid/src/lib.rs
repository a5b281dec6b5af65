//! The `braid` tunnel daemon as a library, so that integration tests can
//! run server and client in-process (over loopback UDP and in-memory TUN
//! devices). The `braid` binary (`src/main.rs`) adds the simulator, lab and
//! benchmark front ends.
//!
//! - [`config`]: `server.toml` / `client.toml`, checked at start;
//! - [`daemon`]: the tokio runtime around `braid_core::conn` (sockets, TUN,
//!   control socket, Prometheus endpoint);
//! - [`keygen`]: `braid keygen`;
//! - [`status`]: `braid status` and the report both it and `/metrics` render.

pub mod config;
pub mod daemon;
pub mod keygen;
pub mod labtunnel;
pub mod status;

use std::path::PathBuf;

use clap::Args;

/// `braid server` / `braid client` flags.
#[derive(Args, Debug)]
pub struct DaemonArgs {
    /// The configuration file (see examples/server.toml, examples/client.toml).
    #[arg(long, short, value_name = "FILE")]
    pub config: PathBuf,
    /// Check the configuration and exit.
    #[arg(long)]
    pub check: bool,
}

/// `braid server`.
pub fn run_server(a: DaemonArgs) -> anyhow::Result<()> {
    let s = config::load_server(&a.config)?;
    if a.check {
        println!(
            "{}: ok ({} clients, network {})",
            a.config.display(),
            s.core.clients.len(),
            s.core.network
        );
        return Ok(());
    }
    daemon::server::run_cmd(s)
}

/// `braid client`.
pub fn run_client(a: DaemonArgs) -> anyhow::Result<()> {
    let s = config::load_client(&a.config)?;
    if a.check {
        println!("{}: ok ({} paths)", a.config.display(), s.paths.len());
        return Ok(());
    }
    daemon::client::run_cmd(s)
}
