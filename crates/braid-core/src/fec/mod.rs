//! Forward erasure coding: systematic Reed-Solomon blocks over GF(2^8).
//!
//! MPLOT (paper 002 §III-B) codes each block of `k` data packets into
//! `k + m` packets so that any `k` of them rebuild the block; the lossy-path
//! repair of the tunnel uses the same code for proactive repair. The code is
//! systematic: the `k` data packets go out unchanged, and a receiver that
//! loses none of them never decodes.
//!
//! The arithmetic is the `reed-solomon-erasure` crate's (a Vandermonde-derived
//! systematic matrix over GF(2^8), with up to 256 shards per block). This
//! module adds what a network protocol needs around it: checked block shapes,
//! typed errors instead of the crate's, a zero-parity block (a code rate of 1
//! is a valid choice of MPLOT's eq 9 on a clean path), and padding for
//! packets of unequal length.

mod block;
mod cache;
pub mod mplot;

pub use block::{BlockCode, FecError, MAX_SHARDS};
pub use cache::CodeCache;
