//! braid lab: an emulated multipath testbed on one Linux host.
//!
//! * [`config`]: lab files (`lab/*.toml`) describing the paths.
//! * [`topo`]: network namespaces, veths and routing ([`up`] / [`down`]).
//! * [`emulator`]: the userspace link emulator process ([`run_emulator`]).
//! * [`iperf`] and [`bench`]: measurements (iperf3, kernel MPTCP, and an
//!   extension point for braid's own tunnel).
//!
//! * [`preflight`]: the programs the lab starts, checked (and installed as
//!   root) before anything is created; [`probe`]: in-process reachability.
//! * [`relayhost`]: a community relay's host, whose uplink is one of the
//!   emulated paths.
//! * [`snmp`]: a namespace's kernel counters (socket drops, retransmissions).
//!
//! Everything needs root; see [`preflight::lab_preflight`].

pub mod bench;
pub mod cmd;
pub mod config;
pub mod emulator;
pub mod iperf;
pub mod link;
pub mod preflight;
pub mod probe;
pub mod rawsock;
pub mod relayhost;
pub mod snmp;
pub mod stats;
pub mod topo;

/// Runtime directory: emulator pid file, stats file, logs.
pub const RUN_DIR: &str = "/run/braid-lab";

pub use bench::{
    bench, bench_with, end_connections_in, end_leftover_connections, BenchContext, BenchOptions,
    BenchReport, BenchResult, Mode, ModeSetup, TransferFn, Transferred,
};
pub use cmd::NsProcess;
pub use config::{load_config, shipped, ConfigError, Direction, LabConfig, PathConfig};
pub use emulator::run_emulator;
pub use iperf::{ping, run_iperf3, IperfResult, IperfSpec, PingStats};
pub use stats::{read_stats, EmuStats};
pub use topo::{down, up, EmulatorCommand, LabInfo};
