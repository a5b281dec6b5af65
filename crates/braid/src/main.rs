//! The `braid` command: simulator front end, benchmarks, and (as they
//! land) the tunnel daemon and the lab.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod analyze;
mod bench;
mod benchflood;
mod benchtunnel;
mod demo;
mod lab;
mod sendrecv;
mod sim;

/// braid: stripe ordinary TCP and UDP connections across several network
/// paths (PET/BMP scheduling and resequencing).
#[derive(Parser)]
#[command(name = "braid", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Deterministic simulation of the paper's experiments.
    #[command(subcommand)]
    Sim(sim::SimCmd),
    /// When striping one TCP flow over these paths is safe (Phatak et al.):
    /// optimal split, timeout-free bandwidth ratios, duplicate-ACK bound.
    /// `braid analyze --path 10mbit,20ms --path 2mbit,20ms [--format json]`
    /// or `braid analyze lab/fast-slow.toml`.
    Analyze(analyze::AnalyzeArgs),
    /// Benchmarks (simulator speed, ...).
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Emulated multipath testbed: network namespaces and a userspace link emulator.
    #[command(subcommand)]
    Lab(lab::LabCmd),
    /// Show what braid does, with no setup: as root, the real tunnel over
    /// three emulated paths; otherwise the simulated experiment.
    Demo {
        /// Run the simulated demo even as root.
        #[arg(long)]
        simulate: bool,
        /// Seconds per measurement in the lab demo.
        #[arg(long, default_value_t = 10)]
        seconds: u32,
    },
    /// Run the tunnel server (proxy) in the foreground: `braid server NAME`
    /// (/etc/braid/NAME.toml) or `braid server --config server.toml`.
    Server(braid::DaemonArgs),
    /// Run the tunnel client in the foreground: `braid client NAME` or
    /// `braid client --config client.toml`.
    Client(braid::DaemonArgs),
    /// Start instance NAME (/etc/braid/NAME.toml, server or client) in the
    /// background; returns once it answers.
    Up(braid::instance::InstanceArgs),
    /// Stop instance NAME (it cleans up as on SIGTERM).
    Down(braid::instance::InstanceArgs),
    /// Print instance NAME's effective configuration (defaults filled in,
    /// public keys derived).
    Showconf(braid::instance::InstanceArgs),
    /// Generate a key pair (private key file mode 0600).
    Keygen(braid::keygen::KeygenArgs),
    /// Show a running daemon's paths and counters.
    Status(braid::status::StatusArgs),
    /// Lend this host's uplink to listed clients (PRISM's community relay):
    /// forward their tunnel datagrams to the server and the replies back,
    /// undecrypted, rate-limited per client. `braid relay --config relay.toml`
    /// (see examples/relay.toml); a client path uses it with `via`. With
    /// `control_socket` set, `braid status --socket PATH` shows its
    /// per-client counters.
    Relay(braid::DaemonArgs),
    /// Send a file over several paths with braid's own multipath transport
    /// (MPLOT), encrypted with the tunnel's keys:
    /// `braid send FILE --to HOST:PORT --path ADDR_OR_IFACE --path ... --key FILE --peer-key KEY`.
    /// Prints the file's SHA-256 once the receiver has verified it.
    Send(sendrecv::SendArgs),
    /// Receive files sent with `braid send`:
    /// `braid recv --listen ADDR:PORT --key FILE --allow SENDER_KEY [--out DIR]`.
    /// Stores the file only when complete and its SHA-256 matches.
    Recv(sendrecv::RecvArgs),
}

/// Commands that print results die quietly on a closed pipe
/// (`braid demo | head`), as command-line tools do, instead of panicking
/// in `println!`. Rust ignores SIGPIPE by default; the daemons keep that,
/// since a failed write must not kill a tunnel.
fn default_sigpipe() {
    // SAFETY: restoring the default disposition of one signal before any
    // thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(
        cli.cmd,
        Command::Server(_) | Command::Client(_) | Command::Relay(_)
    ) {
        default_sigpipe();
    }
    let r = match cli.cmd {
        Command::Sim(c) => sim::run(c),
        Command::Analyze(a) => analyze::run(a),
        Command::Bench(c) => bench::run(c),
        Command::Lab(c) => lab::run(c),
        Command::Demo { simulate, seconds } => demo::run(simulate, seconds),
        Command::Server(a) => braid::run_server(a),
        Command::Client(a) => braid::run_client(a),
        Command::Up(a) => braid::instance::up(a),
        Command::Down(a) => braid::instance::down(a),
        Command::Showconf(a) => braid::instance::showconf(a),
        Command::Keygen(a) => braid::keygen::run(a),
        Command::Status(a) => braid::status::run(a),
        Command::Relay(a) => braid::relay::run_cmd(&a.file("relay"), a.check),
        Command::Send(a) => sendrecv::send(a),
        Command::Recv(a) => sendrecv::recv(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("braid: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
