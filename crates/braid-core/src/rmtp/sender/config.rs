//! A sender's settings, its errors, the frames it hands out and its
//! counters (`SPECS.md` §4.1).

use crate::rmtp::rate::RateConfig;
use crate::rmtp::wire::{DataHeader, MAX_CHANNELS, MAX_WORDS};
use crate::time::Duration;

/// Settings of a sender.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderConfig {
    /// Channels at the start (more may be added).
    pub channels: usize,
    /// Payload bytes per frame (the paper's runs: 1400).
    pub frame_payload: usize,
    /// Largest window the receiver accepts, frames.
    pub max_window: usize,
    /// Frames carry sizes only (simulation).
    pub virtual_payload: bool,
    pub rate: RateConfig,
    /// A pair that is not acknowledged by then is sent again.
    pub probe_timeout: Duration,
    pub min_rto: Duration,
    /// Timeouts in a row that take a channel down.
    pub dead_after: u32,
    /// A down channel is probed again this often.
    pub reprobe: Duration,
    /// A packet pair is sent every this many frames of a channel.
    pub pair_every: u64,
    /// While the receiver queue is full, one frame is sent this often.
    pub persist: Duration,
    /// Pacing slots a channel may catch up after the sender was late, as
    /// time (whole periods of it; none when shorter than a period).
    pub pacing_catch_up: Duration,
}

impl SenderConfig {
    pub fn new(channels: usize) -> Self {
        SenderConfig {
            channels,
            frame_payload: 1400,
            max_window: 32 * MAX_WORDS,
            virtual_payload: false,
            rate: RateConfig::default(),
            probe_timeout: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            dead_after: 3,
            reprobe: Duration::from_secs(1),
            pair_every: 64,
            persist: Duration::from_millis(500),
            pacing_catch_up: Duration::from_millis(4),
        }
    }
}

/// Why a sender could not be built or written to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SenderError {
    #[error("an R-MTP session needs 1..={MAX_CHANNELS} channels, not {0}")]
    Channels(usize),
    #[error("frame_payload = {0}: it must be 1..=65535 bytes")]
    Payload(usize),
    #[error("the stream is finished; nothing more can be written")]
    Finished,
    #[error("bytes written to a sender configured for virtual (size-only) frames, or the reverse")]
    WrongCoding,
    #[error("no channel {0}")]
    NoChannel(usize),
}

/// One frame to put on a channel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub channel: usize,
    pub header: DataHeader,
    /// The payload (empty for virtual frames).
    pub payload: Vec<u8>,
}

/// Counters for reports and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub frames_sent: u64,
    pub retransmits: u64,
    pub lost_marker: u64,
    pub lost_timeout: u64,
    pub pairs: u64,
    pub flow_stops: u64,
    pub channels_down: u64,
}
