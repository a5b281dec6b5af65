//! The sender's reliability window: sized from the channels' probes
//! ([`crate::rmtp::window`]), fixed, and grown for a channel that comes up
//! later.

use super::Sender;
use crate::rmtp::channel::State;
use crate::rmtp::window::{self, ChannelShape};
use crate::rmtp::wire::MAX_WORDS;
use crate::time::Instant;

impl Sender {
    pub(super) fn window_words(&self) -> u8 {
        self.window.div_ceil(32).clamp(1, MAX_WORDS) as u8
    }

    /// Fixes the window once every channel has probed, or a probe timeout
    /// after the start; grows it (never shrinks it) when a channel it was
    /// not sized from comes up later. The paper fixes the window for the
    /// connection's life; but a channel whose first pair comes back after
    /// the probe timeout (a 600 ms path behind a loaded host) or one added
    /// while running would otherwise be held to a window sized without it:
    /// in the lab (`lab/far.toml`, 20 and 300 ms) one run in three carried
    /// 0.08 of the paths' sum that way. The receiver follows the window the
    /// data frames announce, so growing it needs nothing more.
    pub(super) fn maybe_fix_window(&mut self, now: Instant) {
        if self.window_fixed {
            let up = self
                .channels
                .iter()
                .filter(|c| {
                    c.state == State::Up && c.srtt.is_some() && c.rate.ideal_fps().is_some()
                })
                .count();
            if up <= self.sized_with {
                return;
            }
        }
        let all_up = self
            .channels
            .iter()
            .all(|c| matches!(c.state, State::Up | State::Removed));
        let late = self
            .started
            .is_some_and(|s| now.saturating_since(s) >= self.cfg.probe_timeout);
        if !(all_up || late) {
            return;
        }
        let shapes: Vec<ChannelShape> = self
            .channels
            .iter()
            .filter(|c| c.state == State::Up)
            .filter_map(|c| {
                let rtt = c.srtt?.as_secs_f64();
                Some(ChannelShape {
                    rate_fps: c.rate.ideal_fps()?,
                    rtt_s: rtt,
                    one_way_s: rtt / 2.0,
                })
            })
            .collect();
        if shapes.is_empty() {
            return;
        }
        self.window = self
            .window
            .max(window::window_frames(&shapes, self.cfg.max_window));
        self.sized_with = shapes.len();
        self.window_fixed = true;
    }
}
