//! A path's share when other traffic competes for its bottleneck.
//!
//! Why: a path is paced at its packet-pair estimate, which measures the
//! bottleneck's capacity, and the tunnel repairs the path's losses, so
//! the inner TCP never sees them. On a path that other flows share (the
//! other devices behind a home router) the tunnel then keeps sending at
//! the capacity while the other flows back off at every loss: in the lab a
//! kernel TCP flow sharing a 10 Mbit/s path with the tunnel was left 0.3-0.4
//! Mbit/s (`braid lab bench lab/two-equal.toml --cross-tcp a`). The share
//! cap gives the path the response of a TCP flow instead: a loss the
//! classifier takes for congestion (R-MTP §3.2) while the path holds a
//! standing queue cuts the path's rate multiplicatively, and the cap then
//! grows additively, by a fraction of a packet per round trip, until it
//! reaches the measured capacity and lifts.
//!
//! The constants are those of CUBIC's TCP-friendly region (RFC 8312
//! §4.2): a cut to β = 0.7 of the rate, and an additive increase of
//! α = 3 (1 - β) / (1 + β) ≈ 0.53 packets per round trip, which shares a
//! bottleneck evenly with Reno and with CUBIC at these round trips. A
//! cut while a cap stands starts from the lower of the cap and the rate,
//! so repeated congestion compounds as TCP's window cuts do; random
//! losses, and losses while a queue is only rising, never cut (see
//! `Sender::consider_repair`).

use crate::time::{Duration, Instant};

/// Multiplicative decrease on a congestion loss (RFC 8312's β_cubic).
pub const BETA: f64 = 0.7;
/// Additive increase, packets per round trip (RFC 8312 §4.2's α for β).
pub const ALPHA_PACKETS: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);
/// The packet the increase counts in: a full-size tunnel datagram.
const PACKET_BITS: f64 = 1500.0 * 8.0;
/// Round trips shorter than this grow the cap as if they were this long
/// (a 0 ms sample must not make the increase unbounded).
const MIN_RTT: Duration = Duration::from_millis(1);

/// The cap on one path's pacing rate that congestion losses set.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct ShareCap {
    /// The cap in bit/s, `None` while no congestion constrains the path.
    cap: Option<f64>,
    /// When the cap last grew (or was set).
    grown_at: Option<Instant>,
    /// When the last cut was made.
    cut_at: Option<Instant>,
}

impl ShareCap {
    /// A congestion loss at `now` on a path paced at `rate` bit/s, whose
    /// round trip is `rtt`: the cap becomes β times the lower of the rate
    /// and the standing cap. At most one cut per round trip, as TCP cuts
    /// its window once per loss event: the losses of one overflow (often
    /// reported in one batch) are one signal.
    pub fn cut(&mut self, now: Instant, rate: f64, rtt: Duration) {
        if !(rate.is_finite() && rate > 0.0) {
            return;
        }
        if self.cut_at.is_some_and(|t| now.saturating_since(t) < rtt) {
            return;
        }
        self.cut_at = Some(now);
        let from = self.cap.map_or(rate, |c| c.min(rate));
        self.cap = Some(from * BETA);
        self.grown_at = Some(now);
    }

    /// Grows the cap by α packets per round trip of `srtt` for the time
    /// since it last grew, and lifts it once it reaches `capacity` (the
    /// path's measured rate): congestion no longer holds the path below
    /// what it can carry.
    pub fn grow(&mut self, now: Instant, srtt: Duration, capacity: Option<f64>) {
        let (Some(cap), Some(at)) = (self.cap, self.grown_at) else {
            return;
        };
        let rtt = srtt.max(MIN_RTT).as_secs_f64();
        let dt = now.saturating_since(at).as_secs_f64();
        let cap = cap + ALPHA_PACKETS * PACKET_BITS / (rtt * rtt) * dt;
        self.grown_at = Some(now);
        self.cap = match capacity {
            Some(c) if cap >= c => None,
            _ => Some(cap),
        };
    }

    /// The cap in bit/s, if congestion holds the path below its capacity.
    pub fn limit(&self) -> Option<f64> {
        self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_nanos(v * 1_000_000)
    }

    #[test]
    fn a_congestion_loss_cuts_to_beta_and_the_cap_grows_a_packet_fraction_per_rtt() {
        let mut c = ShareCap::default();
        assert_eq!(c.limit(), None);
        c.cut(ms(0), 10e6, Duration::from_millis(40));
        assert!((c.limit().unwrap() - 7e6).abs() < 1.0);
        // Ten round trips of 40 ms: 10 x 0.53 packets of 12 000 bits per 40 ms.
        c.grow(ms(400), Duration::from_millis(40), Some(10e6));
        let want = 7e6 + 10.0 * ALPHA_PACKETS * 12_000.0 / 0.04;
        assert!((c.limit().unwrap() - want).abs() < 1.0, "{:?}", c.limit());
    }

    #[test]
    fn cuts_compound_from_the_lower_of_cap_and_rate_once_per_round_trip() {
        let rtt = Duration::from_millis(40);
        let mut c = ShareCap::default();
        c.cut(ms(0), 10e6, rtt);
        // The same loss event (a batch at one instant, or within the RTT).
        c.cut(ms(0), 7e6, rtt);
        c.cut(ms(39), 7e6, rtt);
        assert!((c.limit().unwrap() - 7e6).abs() < 1.0);
        c.cut(ms(50), 10e6, rtt);
        assert!((c.limit().unwrap() - 4.9e6).abs() < 1.0);
        c.cut(ms(100), 2e6, rtt);
        assert!((c.limit().unwrap() - 1.4e6).abs() < 1.0);
    }

    #[test]
    fn the_cap_lifts_at_the_paths_capacity() {
        let mut c = ShareCap::default();
        c.cut(ms(0), 10e6, Duration::from_millis(40));
        // 0.53 packets per 40 ms round trip is ~4 Mbit/s per second: 3 Mbit/s
        // of headroom is regained within a second.
        c.grow(ms(1000), Duration::from_millis(40), Some(10e6));
        assert_eq!(c.limit(), None);
        // Nothing to grow without a cap, and a bad rate sets none.
        c.grow(ms(2000), Duration::from_millis(40), Some(10e6));
        c.cut(ms(2000), f64::NAN, Duration::from_millis(40));
        assert_eq!(c.limit(), None);
    }
}
