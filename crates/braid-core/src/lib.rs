//! braid-core: the sans-IO protocol core of braid.
//!
//! Nothing here touches a socket, a clock, a runtime or a global random
//! number generator. Every call that depends on time takes `now`; every call
//! that wants to transmit returns the bytes (or the decision) to the caller;
//! every component that needs to be woken exposes `poll_timeout`. The
//! deterministic simulator (`braid-sim`) and the tunnel daemon (`braid`)
//! drive exactly this code.
//!
//! Layout, one concept per module:
//! - [`time`]: a nanosecond `Instant` that starts at zero in simulation.
//! - [`path`]: per-path estimators (RTT, packet-pair bandwidth, relative
//!   one-way delay, loss) bundled in [`path::PathState`].
//! - [`sched`]: the [`sched::Scheduler`] trait and the schedulers of the
//!   papers (RoundRobin, WeightedRoundRobin, EDPF, PET, MinRtt, Single,
//!   and PRISM's ADAS).
//! - [`reorder`]: the receiver's resequencer (BMP of PET/BMP, Section V-B).
//! - [`rpc`]: PRISM's reverse-path ACK controller, the alternative to
//!   resequencing the data: it holds and rewrites the inner TCP's ACKs.
//! - [`wire`]: the tunnel frame formats, checked decoding.
//! - [`checksum`]: the Internet checksum (RFC 1071), for the headers
//!   the tunnel rebuilds or rewrites.
//! - [`compress`]: the inner IPv4/TCP headers in 26 bytes instead of 52,
//!   with contexts both ends hold.
//! - [`sender`] / [`receiver`]: the two halves of one tunnel direction.
//! - [`redundancy`]: the redundant ("reliability first") mode: which
//!   packets are copied onto a second path.
//! - [`mplot`]: MPLOT, braid's own reliable multipath transport (block
//!   FEC across paths, per-path ECN congestion control).
//! - [`pacer`]: the pacing slot MPLOT's paths and R-MTP's channels share.
//! - [`rmtp`]: R-MTP, the transport's second mode (rate-based, packet-pair
//!   probing, jitter-trend congestion detection, SACK-bitmap window).
//! - [`conn`]: the tunnel connection (client [`conn::Connection`], server
//!   [`conn::Server`]): handshake, encryption, both directions, liveness.

#![forbid(unsafe_code)]

pub mod checksum;
pub mod compress;
pub mod conn;
pub mod crypto;
pub mod fec;
pub mod flow;
pub mod mplot;
pub mod pacer;
pub mod path;
pub mod receiver;
pub mod redundancy;
pub mod reorder;
pub mod repair;
pub mod rmtp;
pub mod rpc;
pub mod sched;
pub mod sender;
pub mod time;
pub mod wire;

pub use path::PathId;
pub use time::Instant;
