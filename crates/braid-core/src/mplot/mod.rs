//! MPLOT (paper 002, Sharma, Kar, Ramakrishnan, Kalyanaraman; `SPECS.md`
//! §2) as braid's own reliable multipath transport, sans-IO.
//!
//! Reliability belongs to the aggregate of all paths, congestion control to
//! each path:
//! - the stream is cut into blocks, each systematic Reed-Solomon coded over
//!   GF(2^8) ([`crate::fec::BlockCode`]) into a p-block (data plus PFEC,
//!   eq 9) sent at once and an r-block of reserve RFEC sent on demand
//!   (eq 10) ([`block`]);
//! - block and packet sizes follow eq 12 and the {750, 550, 250} B rule;
//!   all formulas are pure functions in [`crate::fec::mplot`];
//! - each path has its own ECN-driven window and RTO ([`cc`]);
//! - packets go to paths by rank (eq 1, GOOD/BAD) ([`sender`]);
//! - every packet is acknowledged, on a reverse path drawn at random, with
//!   each forward path's latest CE state echoed ([`receiver`]);
//! - frames are checked on decode ([`wire`]).
//!
//! Neither half reads a clock or touches a socket: they take `now`, and the
//! receiver's randomness comes from the seed in its config. The simulator
//! (`braid-sim`) and `braid send`/`braid recv` drive this same code.

pub mod block;
pub mod cc;
pub mod receiver;
pub mod sender;
pub mod wire;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_limits;

pub use cc::{CcConfig, PathCc};
pub use receiver::{Chunk, Receiver, ReceiverConfig, RecvError};
pub use sender::{
    Coding, Mapping, Pacing, Sender, SenderConfig, SenderError, Transmit, FILE_OVERHEAD,
    FILE_PACKET,
};
pub use wire::{Ack, DataHeader, DataView, Frame, FrameError};
