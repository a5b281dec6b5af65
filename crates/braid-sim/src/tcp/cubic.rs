//! CUBIC congestion control (RFC 9438) and HyStart's delay detection as
//! Linux runs them (`net/ipv4/tcp_cubic.c`), in packets like the rest of
//! the model.
//!
//! - Window growth in congestion avoidance (RFC 9438 Section 4.2, eq. 1-2):
//!   `W_cubic(t) = C (t − K)^3 + W_max`, `K = cbrt(W_max (1 − β) / C)`,
//!   `C = 0.4`, `β = 0.7`; per acknowledged packet the window moves by
//!   `(target − cwnd) / cwnd` toward `target = W_cubic(t + RTT)`, clamped
//!   to `[cwnd, 1.5 cwnd]` (Section 4.2).
//! - Reno-friendly region (Section 4.3): `W_est` grows by
//!   `α = 3 (1 − β) / (1 + β)` per window; when it exceeds `W_cubic` the
//!   window follows it.
//! - Multiplicative decrease (Section 4.6) `ssthresh = max(β cwnd, 2)`, with
//!   fast convergence (Section 4.7): a new `W_max` below the previous one
//!   is lowered further to `W_max (1 + β) / 2`.
//! - Before the first congestion event (no `W_max` yet, e.g. after HyStart
//!   ended slow start), the window grows by at least 5 % per RTT, one
//!   packet per 20 acknowledged, as Linux's `bictcp_update` does ("the
//!   initial growth of cubic function may be too conservative when the
//!   available bandwidth is still unknown": `cnt` is capped at 20 while
//!   `last_max_cwnd == 0`). RFC 9438 leaves this out; without it the
//!   window after an early HyStart exit follows `C t^3` from the exit
//!   point and needs seconds to double (lab/three-paths: from 48 packets
//!   at 0.2 s to the ~160 at which PET uses the 150 ms path only at
//!   6.7 s), where the kernel gets there within about a second.
//! - HyStart (Ha and Rhee 2011; Linux's defaults): in slow start with at
//!   least 16 packets of window, the minimum of the first 8 RTT samples of
//!   a round is compared with the smallest RTT seen; if it exceeds that by
//!   `clamp(min_rtt / 8, 4 ms, 16 ms)`, slow start ends (ssthresh = cwnd).
//!   Linux's ACK-train detection is not modelled: with the lab's
//!   one-BDP queues the delay test fires first.

use braid_core::time::{Duration, Instant};

/// CUBIC's `C`, in packets per second cubed.
pub const C: f64 = 0.4;
/// CUBIC's multiplicative decrease factor.
pub const BETA: f64 = 0.7;
/// HyStart acts only above this window (Linux `hystart_low_window`).
pub const HYSTART_LOW_WINDOW: f64 = 16.0;
/// RTT samples per round that HyStart looks at (Linux `HYSTART_MIN_SAMPLES`).
pub const HYSTART_SAMPLES: u32 = 8;
/// Before the first congestion event the window grows by at least one
/// packet per this many acknowledged (Linux `bictcp_update`: `cnt` at most
/// 20, 5 % per RTT).
pub const INITIAL_GROWTH_CNT: f64 = 20.0;

/// CUBIC's state between congestion events.
#[derive(Clone, Debug, Default)]
pub struct Cubic {
    w_max: f64,
    w_last_max: f64,
    k: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch: Option<Instant>,
    w_est: f64,
    min_rtt: Option<Duration>,
    // HyStart
    round_end: u64,
    round_min: Option<Duration>,
    round_samples: u32,
    /// Slow starts HyStart ended.
    pub hystart_exits: u64,
}

impl Cubic {
    /// Smallest RTT sampled so far.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// A congestion event with window `cwnd`: returns the new ssthresh
    /// (Section 4.6, 4.7) and starts a new epoch at the next ACK.
    pub fn on_congestion(&mut self, cwnd: f64) -> f64 {
        self.w_max = if cwnd < self.w_last_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.w_last_max = cwnd;
        self.epoch = None;
        (cwnd * BETA).max(2.0)
    }

    /// Congestion avoidance: the new window after `acked` packets were
    /// acknowledged at `now` with window `cwnd`.
    pub fn on_ack_ca(&mut self, now: Instant, cwnd: f64, acked: u64) -> f64 {
        let rtt = self.min_rtt.unwrap_or(Duration::from_millis(100));
        let epoch = match self.epoch {
            Some(e) => e,
            None => {
                self.epoch = Some(now);
                if self.w_max <= cwnd {
                    // Leaving slow start or after growing past W_max: the
                    // plateau is here (Section 4.8).
                    self.k = 0.0;
                    self.w_max = cwnd;
                } else {
                    self.k = (self.w_max * (1.0 - BETA) / C).cbrt();
                }
                self.w_est = cwnd;
                now
            }
        };
        let t = (now - epoch).as_secs_f64() + rtt.as_secs_f64();
        let w_cubic = |t: f64| C * (t - self.k).powi(3) + self.w_max;
        let target = w_cubic(t).clamp(cwnd, 1.5 * cwnd);
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        let mut w = cwnd;
        for _ in 0..acked.min(1 << 16) {
            self.w_est += alpha / w;
            let goal = if self.w_est > w_cubic(t - rtt.as_secs_f64()) {
                self.w_est.max(target)
            } else {
                target
            };
            let mut inc = (goal - w).max(0.0) / w;
            if self.w_last_max == 0.0 {
                inc = inc.max(1.0 / INITIAL_GROWTH_CNT);
            }
            w += inc;
        }
        w
    }

    /// After a retransmission timeout the epoch restarts.
    pub fn on_timeout(&mut self, cwnd: f64) -> f64 {
        self.on_congestion(cwnd)
    }

    /// An RTT sample in slow start; returns true when HyStart ends slow
    /// start. `snd_una`/`snd_max` delimit rounds.
    pub fn on_rtt_sample(
        &mut self,
        rtt: Duration,
        in_slow_start: bool,
        cwnd: f64,
        snd_una: u64,
        snd_max: u64,
    ) -> bool {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        if !in_slow_start {
            return false;
        }
        if snd_una >= self.round_end {
            self.round_end = snd_max;
            self.round_min = None;
            self.round_samples = 0;
        }
        if cwnd < HYSTART_LOW_WINDOW {
            return false;
        }
        if self.round_samples < HYSTART_SAMPLES {
            self.round_samples += 1;
            self.round_min = Some(self.round_min.map_or(rtt, |m| m.min(rtt)));
            if self.round_samples == HYSTART_SAMPLES {
                let base = self.min_rtt.unwrap_or(rtt);
                let thresh = (base / 8).clamp(Duration::from_millis(4), Duration::from_millis(16));
                if self.round_min.is_some_and(|m| m >= base + thresh) {
                    self.hystart_exits += 1;
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `secs` of one ACK per packet, one window per `rtt` after a
    /// loss at W_max = 100; returns when the window first reached 99.5 and
    /// the final window.
    fn grow_after_loss(rtt_ms: u64, secs: u64) -> (f64, f64) {
        let mut c = Cubic {
            min_rtt: Some(Duration::from_millis(rtt_ms)),
            ..Cubic::default()
        };
        let mut cwnd = c.on_congestion(100.0);
        assert!((cwnd - 70.0).abs() < 1e-9);
        let mut now = Instant::from_millis(1000);
        let mut at_k = None;
        // One ACK per packet, one window per 10 ms RTT.
        for _ in 0..secs * 1000 / rtt_ms {
            for _ in 0..cwnd as u64 {
                cwnd = c.on_ack_ca(now, cwnd, 1);
            }
            now += Duration::from_millis(rtt_ms);
            if at_k.is_none() && cwnd >= 99.5 {
                at_k = Some(now);
            }
        }
        let k = (at_k.unwrap() - Instant::from_millis(1000)).as_secs_f64();
        (k, cwnd)
    }

    /// With a 100 ms RTT the cubic curve dominates: after the drop to 70
    /// the window approaches W_max on W(t) = 0.4 (t − K)^3 + 100 with
    /// K = cbrt(100 * 0.3 / 0.4) = 4.217 s, concave before K and convex
    /// after (RFC 9438 eq. 1). It reaches 99.5 where the target, one RTT
    /// ahead, does: t = K − cbrt(0.5 / 0.4) − 0.1 = 3.04 s, plus the lag of
    /// following the target by (target − cwnd) / cwnd per ACK.
    #[test]
    fn window_returns_to_w_max_after_k_seconds() {
        let (k, cwnd) = grow_after_loss(100, 10);
        assert!((3.04..3.4).contains(&k), "reached W_max after {k} s");
        assert!(cwnd > 150.0, "convex growth beyond W_max: {cwnd}");
    }

    /// With a 10 ms RTT the Reno-friendly estimate (+0.53 packets per RTT,
    /// RFC 9438 Section 4.3) reaches W_max first: 30 packets in ~57 RTTs.
    #[test]
    fn reno_friendly_region_at_short_rtt() {
        let (k, _) = grow_after_loss(10, 2);
        assert!((0.5..0.7).contains(&k), "reached W_max after {k} s");
    }

    /// Before any congestion event (HyStart ended slow start at 48
    /// packets) the window grows by 5 % per RTT at least, as Linux's: 48 ×
    /// 1.05^20 = 127 after 20 RTTs, where `C t^3` from the exit point alone
    /// would add about 0.4 × 2^3 = 3 packets in the same 2 s. After a loss
    /// the floor is gone and the cubic curve rules again.
    #[test]
    fn window_grows_five_percent_per_rtt_before_the_first_loss() {
        let mut c = Cubic {
            min_rtt: Some(Duration::from_millis(100)),
            ..Cubic::default()
        };
        let mut cwnd = 48.0;
        let mut now = Instant::from_millis(1000);
        for _ in 0..20 {
            for _ in 0..cwnd as u64 {
                cwnd = c.on_ack_ca(now, cwnd, 1);
            }
            now += Duration::from_millis(100);
        }
        assert!((115.0..135.0).contains(&cwnd), "{cwnd}");
        let w = c.on_congestion(cwnd);
        let mut c2 = c.clone();
        let after = c2.on_ack_ca(now, w, w as u64);
        assert!(after - w < w / 20.0, "{w} -> {after}");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = Cubic::default();
        c.on_congestion(100.0);
        c.on_congestion(80.0);
        assert!((c.w_max - 80.0 * 0.85).abs() < 1e-9);
    }

    #[test]
    fn hystart_exits_on_delay_increase() {
        let mut c = Cubic::default();
        let ms = Duration::from_millis;
        // Round 1: RTT 40 ms.
        for i in 0..8 {
            assert!(!c.on_rtt_sample(ms(40), true, 20.0, 0, 100 + i));
        }
        // Round 2 starts when snd_una passes 100; RTTs 46 ms >= 40 + 5.
        let mut exited = false;
        for i in 0..8 {
            exited |= c.on_rtt_sample(ms(46), true, 40.0, 101 + i, 300);
        }
        assert!(exited);
        // Below the threshold it stays in slow start.
        let mut c = Cubic::default();
        for i in 0..8 {
            c.on_rtt_sample(ms(40), true, 20.0, 0, 100 + i);
        }
        assert!(!(0..8).any(|i| c.on_rtt_sample(ms(44), true, 40.0, 101 + i, 300)));
    }
}
