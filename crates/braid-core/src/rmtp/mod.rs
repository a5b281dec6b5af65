//! R-MTP (paper 004, Magalhaes & Kravets, ICNP'01; `SPECS.md` §4) as the
//! second mode of braid's reliable multipath transport, sans-IO.
//!
//! A rate-based transport with selective acknowledgements over one-way
//! *channels*, one per interface pair; the sender multiplexes one stream
//! across them and the receiver resequences:
//! - each channel's rate comes from a packet pair, starts at half of it,
//!   is paced, and falls only when the long-run jitter grows (§3.2):
//!   losses without that trend are wireless and cut nothing ([`rate`],
//!   [`jitter`]); an ECN Congestion Experienced mark, when the socket can
//!   read one, is passed to [`Receiver::handle_data_ecn`], echoed in the
//!   ACK and cuts at once ([`rate`]);
//! - each channel's sender-side state and pacing slot is in `channel`;
//! - reliability is a fixed-size SACK bitmap window, the smallest multiple
//!   of 32 above `max(2·ΣBDP, MWS)` ([`window`]), with timer-free loss
//!   detection by marker frames ([`sender`]);
//! - a receiver queue after the reliability buffer gives flow control:
//!   full, it stops the sender and halves its rates ([`receiver`]);
//! - channels are added and removed while running ([`sender`]);
//! - frames are checked on decode ([`wire`]).
//!
//! The supplied text of the paper breaks off between §3.2 and the middle
//! of §3.3 and omits channel management and the header "for space": the
//! rate-update rule, the loss classifier, the marker mechanism, channel
//! add/remove and the frame layout are braid's design, each documented
//! where it is implemented and unit-tested there.
//!
//! Neither half reads a clock or touches a socket: they take `now`. The
//! simulator (`braid-sim`) and `braid send`/`braid recv --transport rmtp`
//! drive this same code.

mod channel;
pub mod jitter;
pub mod rate;
pub mod receiver;
pub mod sender;
pub mod window;
pub mod wire;

#[cfg(test)]
mod tests;

pub use rate::{ChannelRate, RateConfig};
pub use receiver::{Chunk, Receiver, ReceiverConfig, RecvError};
pub use sender::{Sender, SenderConfig, SenderError, SenderStats, Transmit};
pub use wire::{Ack, DataHeader, DataView, Frame, FrameError};
