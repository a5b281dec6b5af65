//! braid-net: one model of a network path direction, shared by the
//! simulator (`braid-sim`), the connection tests of `braid-core` and,
//! through a comparison test, the lab's userspace link emulator.
//!
//! A [`Link`] is one direction of one path. It is a pure function of the
//! arrivals offered to it: every packet gets a verdict at the instant it
//! arrives, either a delivery time or a drop with its reason, computed on
//! a virtual timeline exactly as the lab emulator does
//! (`crates/braid-lab/src/link.rs`):
//!
//! ```text
//! depart  = max(arrival, previous depart) + ip_bytes * 8 / rate
//! deliver = max(depart + one-way delay, previous deliver)
//! ```
//!
//! so a simulator needs no per-link events, and a late caller never turns
//! into a rate error. On this timeline sit, in the order a packet meets
//! them:
//!
//! 1. the path being up (trace steps with `up`, paths joining and leaving);
//! 2. the random loss process of the channel ([`loss`]): Bernoulli,
//!    Gilbert-Elliott (per packet, as the lab), or an n-state
//!    Markov-modulated process with exponential holding times (MPLOT
//!    §IV-A/B, including a DOWN state), optionally correlated across paths
//!    ([`correlated`], MPLOT §IV-E);
//! 3. the queue: drop-tail on the bytes not yet serialized, or RED with
//!    ECN marking ([`red`], Floyd and Jacobson 1993, RFC 3168), and the
//!    lab's ECN step: an ECN-capable packet that finds more than
//!    `ecn_mark_bytes` queued is marked CE;
//! 4. serialization at the current rate and the current one-way delay;
//! 5. optionally, a cellular link's link-layer retransmissions ([`rlc`],
//!    PRISM Section 5): a packet's delivery is delayed by a random number
//!    of TTIs and never overtakes the packet ahead of it.
//!
//! Pareto on/off cross traffic ([`cross`], PRISM Fig 12) shares the queue
//! and the serializer; its packets are injected in time order before each
//! offered packet.
//!
//! [`QueuedLink`] is the same path direction for PET/BMP's topology: a
//! queue that holds the packets and picks their order, FIFO or fair
//! queueing ([`wfq`]), so it is driven by the end of each transmission
//! rather than giving a verdict at the arrival (under fair queueing a
//! packet's turn depends on later arrivals of other flows). It shares the
//! parameters, loss processes and counters; `braid-sim`'s paper world
//! (`world/`) builds its links from it.
//!
//! Parameters ([`LinkParams`]) use the lab files' names (`rate_mbit`,
//! `delay_ms`, `queue_bytes`, `ecn_mark_bytes`, `loss`, `gilbert`, `trace`) and add the
//! models the lab files do not have (`red`, `markov`, `cross`, `rlc`, trace
//! `up`).

pub mod correlated;
pub mod coupled;
pub mod cross;
pub mod link;
pub mod loss;
pub mod params;
pub mod queued;
pub mod red;
pub mod rlc;
pub mod wfq;

pub use correlated::CorrelatedLinks;
pub use coupled::CoupledStates;
pub use link::{Drop, Link, LinkStats, Verdict};
pub use params::{
    GilbertParams, LinkParams, MarkovParams, MarkovState, ParetoOnOffParams, RedParams, RlcParams,
    TraceStep,
};
pub use queued::{Discipline, QueuedLink, TxDone};
