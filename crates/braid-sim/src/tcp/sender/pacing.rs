//! Linux's pacing of a TCP sender's own packets (`tcp_update_pacing_rate`,
//! the earliest-departure-time model): each packet leaves no sooner than
//! the previous one plus its length at the pacing rate, `tcp_pacing_ss_ratio`
//! (200 %) of cwnd/SRTT while the window is below half of ssthresh
//! (slow start) and `tcp_pacing_ca_ratio` (120 %) after.
//!
//! Why the model needs it: the lab's kernel paces even with the `noqueue`
//! qdisc and CUBIC (a capture on the lab client's interface: after the
//! first window, data leaves in pairs spaced by twice the window per round
//! trip). Unpaced, each slow-start round left in bursts at twice the rate
//! the ACKs came back, queued at the bottleneck, and HyStart ended slow
//! start at 144 packets on a 600 ms path where the kernel went on to 1297
//! (README, "Simulated vs lab"). Only new data is paced here (the window's
//! go-back-N included); retransmissions in recovery leave at once.
//!
//! On in `TcpConfig::linux`: one 10 Mbit/s path 300 ms away carries 8.16
//! Mbit/s (the kernel 8.74, unpaced 5.54). Tests of faults that need a
//! burst ask for an unpaced sender explicitly (README, "Simulated vs
//! lab").

use braid_core::time::{Duration, Instant};

use super::TcpSender;

/// Pacing rate over cwnd/SRTT in slow start (Linux `tcp_pacing_ss_ratio`).
const SS_RATIO: f64 = 2.0;
/// ... and in congestion avoidance (Linux `tcp_pacing_ca_ratio`).
const CA_RATIO: f64 = 1.2;

impl TcpSender {
    /// The pacing rate in packets per second, if pacing is on and the RTT
    /// has been measured.
    fn pacing_pps(&self) -> Option<f64> {
        if !self.cfg.pacing {
            return None;
        }
        let srtt = self.rto.srtt()?.as_secs_f64();
        if srtt <= 0.0 {
            return None;
        }
        let ratio = if self.cwnd < self.ssthresh as f64 / 2.0 {
            SS_RATIO
        } else {
            CA_RATIO
        };
        let window = self.cwnd.max((self.snd_max - self.snd_una) as f64);
        Some(ratio * window / srtt)
    }

    /// Whether the pacer lets a packet leave at `now`.
    pub(super) fn pace_allows(&self, now: Instant) -> bool {
        self.pace_next.is_none_or(|t| t <= now)
    }

    /// A packet left at `now`: the next may leave one packet time later.
    pub(super) fn pace_sent(&mut self, now: Instant) {
        let Some(pps) = self.pacing_pps() else {
            self.pace_next = None;
            return;
        };
        let from = self.pace_next.map_or(now, |t| t.max(now));
        self.pace_next = Some(from + Duration::from_secs_f64(1.0 / pps));
    }

    /// When the pacer will let the next new packet go, if one is waiting
    /// for it: the window has room, there is data, and no SACK recovery
    /// (which sends on ACKs) is running.
    pub(super) fn paced_send_at(&self) -> Option<Instant> {
        let t = self.pace_next?;
        let room = self.snd_nxt < (self.snd_una + self.window()).min(self.total);
        (room && !(self.in_recovery && self.sb.is_some())).then_some(t)
    }
}
