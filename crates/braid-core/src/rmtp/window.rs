//! Sizing of the reliability window (§3.1, §3.3; `SPECS.md` §4.1).
//!
//! R-MTP's window is a SACK bitmap of fixed size, so that the header stays
//! the same size for the life of the connection: the **smallest multiple
//! of 32 greater than 2·Σ_i BDP_i**, BDP in frames. The paper does not say
//! whether BDP_i uses a channel's initial or its ideal rate; braid uses the
//! **ideal** rate `1/τ_pp` (the rate the channel converges to), since a
//! window sized for half the rate would cap the channel once it got there.
//!
//! The **minimum window size** (MWS) is the window without which the
//! slowest channel stalls the others: while a frame crosses the slowest
//! channel and its ACK comes back over the fastest, every channel keeps
//! sending, so `MWS = Σ_i (d_slowest + d_fastest) · rate_i` (frames; the
//! printed formula divides by the rate, the prose multiplies, `SPECS.md`
//! follows the prose). braid's window is the smallest multiple of 32
//! greater than the larger of the two, capped by the bitmap's
//! [`MAX_WORDS`].

use crate::rmtp::wire::MAX_WORDS;

/// What sizing needs to know of one channel.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ChannelShape {
    /// Ideal rate, frames per second (1/τ_pp).
    pub rate_fps: f64,
    /// Round-trip time, seconds.
    pub rtt_s: f64,
    /// One-way delay, seconds (half the RTT when only the RTT is known).
    pub one_way_s: f64,
}

/// `2 · Σ_i rate_i · rtt_i`, frames.
pub fn twice_sum_bdp(ch: &[ChannelShape]) -> f64 {
    2.0 * ch.iter().map(|c| c.rate_fps * c.rtt_s).sum::<f64>()
}

/// `MWS = Σ_i (d_slowest + d_fastest) · rate_i`, frames, where the slowest
/// channel is the one of largest one-way delay and the fastest the one of
/// smallest.
pub fn minimum_window(ch: &[ChannelShape]) -> f64 {
    if ch.is_empty() {
        return 0.0;
    }
    let slow = ch.iter().map(|c| c.one_way_s).fold(0.0, f64::max);
    let fast = ch.iter().map(|c| c.one_way_s).fold(f64::INFINITY, f64::min);
    ch.iter().map(|c| (slow + fast) * c.rate_fps).sum()
}

/// The smallest multiple of 32 strictly greater than `x` (at least 32).
pub fn next_multiple_of_32_above(x: f64) -> usize {
    if !x.is_finite() || x < 0.0 {
        return 32;
    }
    ((x / 32.0).floor() as usize + 1).saturating_mul(32)
}

/// The window in frames: the smallest multiple of 32 greater than
/// `max(2·ΣBDP, MWS)`, at most `32 · MAX_WORDS` and at most `cap`
/// (rounded down to a multiple of 32, at least 32).
pub fn window_frames(ch: &[ChannelShape], cap: usize) -> usize {
    let want = next_multiple_of_32_above(twice_sum_bdp(ch).max(minimum_window(ch)));
    let cap = (cap.min(32 * MAX_WORDS) / 32).max(1) * 32;
    want.min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiple_of_32_is_strictly_greater() {
        assert_eq!(next_multiple_of_32_above(0.0), 32);
        assert_eq!(next_multiple_of_32_above(31.9), 32);
        assert_eq!(next_multiple_of_32_above(32.0), 64);
        assert_eq!(next_multiple_of_32_above(100.0), 128);
        assert_eq!(next_multiple_of_32_above(f64::NAN), 32);
    }

    #[test]
    fn window_is_twice_the_bdp_sum_rounded_up() {
        // 100 frames/s over 200 ms and 10 frames/s over 1 s: BDP 20 + 10,
        // twice is 60: the window is 64.
        let ch = [
            ChannelShape {
                rate_fps: 100.0,
                rtt_s: 0.2,
                one_way_s: 0.1,
            },
            ChannelShape {
                rate_fps: 10.0,
                rtt_s: 1.0,
                one_way_s: 0.5,
            },
        ];
        assert!((twice_sum_bdp(&ch) - 60.0).abs() < 1e-9);
        // MWS: (0.5 + 0.1) · (100 + 10) = 66 frames > 60: MWS decides.
        assert!((minimum_window(&ch) - 66.0).abs() < 1e-9);
        assert_eq!(window_frames(&ch, 4096), 96);
        assert_eq!(window_frames(&ch, 50), 32, "capped by the receiver");
        assert_eq!(window_frames(&[], 4096), 32);
    }

    #[test]
    fn mws_uses_slowest_plus_fastest_delay() {
        let ch = [
            ChannelShape {
                rate_fps: 50.0,
                rtt_s: 0.02,
                one_way_s: 0.01,
            },
            ChannelShape {
                rate_fps: 50.0,
                rtt_s: 0.02,
                one_way_s: 0.01,
            },
        ];
        // Equal channels: (0.01 + 0.01) · 100 = 2 frames.
        assert!((minimum_window(&ch) - 2.0).abs() < 1e-9);
    }
}
