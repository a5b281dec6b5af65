//! braid-sim: a deterministic discrete-event simulator for braid.
//!
//! It reproduces the experiments of PET/BMP (Chebrolu, Raman, Rao) with
//! the shipped protocol core: the proxy and the client of every tunnelled
//! scheme are `braid_core::sender::Sender` and
//! `braid_core::receiver::Receiver`, exchanging real wire-format frames.
//! The same scenario and seed always give the same output.
//!
//! [`mplot`] runs MPLOT's experiments (paper 002 §IV) with the shipped
//! `braid_core::mplot` transport and its baselines.
//!
//! [`tunnel`] runs lab files instead: the shipped tunnel endpoints
//! (`braid_core::conn`), handshake and encryption included, carry a
//! Linux-like TCP over links of the shared model `braid-net`.

#![forbid(unsafe_code)]

pub mod analysis;
pub mod cross;
pub mod event;
pub mod mplot;
pub mod packet;
pub mod plot;
pub mod prism;
pub mod ratio;
pub mod report;
pub mod rmtp;
pub mod rng;
pub mod rows;
pub mod scenario;
pub mod swarm;
pub mod sweep;
pub mod tcp;
pub mod tunnel;
pub mod world;

pub use report::Report;
pub use scenario::{Scenario, Scheme};
pub use sweep::{run, SweepOptions, SweepOutput};
