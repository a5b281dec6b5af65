//! Liveness and traffic counters of one path of one tunnel.
//!
//! Pure bookkeeping: the tunnel decides what to do on the transitions this
//! reports (see "Path liveness" in [`super`]).

use std::net::SocketAddr;

use crate::path::PathId;
use crate::time::{Duration, Instant};

/// How recent a keepalive round trip must be for `status()` to prefer it
/// over the feedback RTT: a few keepalive intervals (200 ms by default).
pub(crate) const KEEPALIVE_RTT_FRESH: Duration = Duration::from_millis(1000);

/// One path as the connection layer sees it.
#[derive(Clone, Debug)]
pub(crate) struct PathLink {
    pub id: PathId,
    /// Where datagrams for this path go: configured on the client, learnt
    /// from authenticated datagrams on the server.
    pub remote: Option<SocketAddr>,
    /// Something authenticated arrived within `path_timeout`.
    pub up: bool,
    pub last_rx: Option<Instant>,
    pub last_keepalive_tx: Option<Instant>,
    /// The smallest keepalive round trip measured (see `silence_limit`).
    pub keepalive_rtt_min: Option<Duration>,
    /// Next keepalive identifier (echoed by the peer).
    pub next_keepalive_id: u32,
    /// Latest keepalive round trip, and when it was measured.
    pub keepalive_rtt: Option<Duration>,
    pub keepalive_rtt_at: Option<Instant>,
    /// The client's name for the path (configured on the client, told to
    /// the server in a `PATH_NAME` control frame).
    pub name: Option<String>,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub data_rx_packets: u64,
    pub data_rx_bytes: u64,
    /// Rate probe pairs sent since the path last came up, and when the
    /// latest went (`tunnel::rate_probe`).
    pub rate_probes: u32,
    pub rate_probe_at: Option<Instant>,
    /// When the path last came up.
    pub up_at: Option<Instant>,
}

impl PathLink {
    pub(crate) fn new(id: PathId, remote: Option<SocketAddr>) -> Self {
        PathLink {
            id,
            remote,
            up: false,
            last_rx: None,
            last_keepalive_tx: None,
            keepalive_rtt_min: None,
            next_keepalive_id: 0,
            keepalive_rtt: None,
            keepalive_rtt_at: None,
            name: None,
            tx_packets: 0,
            tx_bytes: 0,
            rx_packets: 0,
            rx_bytes: 0,
            data_rx_packets: 0,
            data_rx_bytes: 0,
            rate_probes: 0,
            rate_probe_at: None,
            up_at: None,
        }
    }

    /// An authenticated datagram of `len` bytes arrived. Returns whether
    /// this brought the path up.
    pub(crate) fn on_rx(&mut self, now: Instant, len: usize) -> bool {
        self.rx_packets += 1;
        self.rx_bytes += len as u64;
        self.last_rx = Some(self.last_rx.map_or(now, |t| t.max(now)));
        let was_up = self.up;
        self.up = true;
        if !was_up {
            self.up_at = Some(now);
        }
        !was_up
    }

    /// The round-trip time `status()` shows, given the sender's smoothed
    /// RTT from data feedback (if any). Feedback is batched at the
    /// receiver (up to 10 ms, 40 ms while it reports only small packets),
    /// and that hold time is in every feedback sample: an idle 0.06 ms LAN
    /// path read 40 ms. A keepalive is echoed at once, so a round trip
    /// measured within [`KEEPALIVE_RTT_FRESH`] is the truth about the
    /// path; the feedback RTT is shown only while keepalives are not sent
    /// (the path is busy) or none came back.
    pub(crate) fn shown_rtt(
        &self,
        now: Instant,
        feedback_srtt: Option<Duration>,
    ) -> Option<Duration> {
        let fresh = self
            .keepalive_rtt_at
            .is_some_and(|t| now.saturating_since(t) <= KEEPALIVE_RTT_FRESH);
        match (fresh, self.keepalive_rtt, feedback_srtt) {
            (true, Some(k), _) => Some(k),
            (_, k, f) => f.or(k),
        }
    }

    /// Server: whether to send a keepalive of its own along with the echo
    /// of the client's. The client's keepalives measure the client's round
    /// trip; the server learns one only from keepalives it sends itself.
    /// Riding on the client's (which come only on idle paths) costs the
    /// server no timer per path; at most one per half the freshness span
    /// keeps the shown RTT fresh.
    pub(crate) fn wants_own_keepalive(&self, now: Instant) -> bool {
        let half = KEEPALIVE_RTT_FRESH / 2;
        let stale = |t: Option<Instant>| t.is_none_or(|t| now.saturating_since(t) >= half);
        stale(self.keepalive_rtt_at) && stale(self.last_keepalive_tx)
    }

    pub(crate) fn on_tx(&mut self, len: usize) {
        self.tx_packets += 1;
        self.tx_bytes += len as u64;
    }

    /// When the path goes down unless something arrives first.
    pub(crate) fn down_at(&self, timeout: Duration) -> Option<Instant> {
        if !self.up {
            return None;
        }
        self.last_rx.map(|t| t + timeout)
    }

    /// When the client should next send a keepalive: `interval` after both
    /// the last keepalive and the last arrival. Before anything was sent,
    /// right away.
    pub(crate) fn keepalive_at(&self, interval: Duration) -> Option<Instant> {
        self.remote?;
        let Some(sent) = self.last_keepalive_tx else {
            return Some(Instant::ZERO);
        };
        let after_rx = self.last_rx.map_or(Instant::ZERO, |t| t + interval);
        Some((sent + interval).max(after_rx))
    }

    /// How long the path may stay silent before it is taken out of use:
    /// `timeout`, or longer on a path whose keepalive round trip needs it.
    /// An idle path hears an echo only every `interval` + RTT (the next
    /// keepalive leaves `interval` after the last arrival), so a path with
    /// a round trip above `timeout` - `interval` (a 300 ms satellite hop:
    /// 600 ms against 600 - 200 ms) went down and up every few seconds
    /// while idle, and with it the pacing bound the far path lengthens.
    /// It gets one more interval of margin.
    pub(crate) fn silence_limit(&self, timeout: Duration, interval: Duration) -> Duration {
        let need = self
            .keepalive_rtt_min
            .map_or(Duration::ZERO, |r| r + interval * 2);
        timeout.max(need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_rtt_prefers_a_fresh_keepalive_round_trip() {
        let mut l = PathLink::new(PathId(0), None);
        let batched = Some(Duration::from_millis(40));
        assert_eq!(l.shown_rtt(Instant::from_nanos(0), batched), batched);
        l.keepalive_rtt = Some(Duration::from_micros(60));
        l.keepalive_rtt_at = Some(Instant::from_nanos(1_000_000_000));
        let soon = Instant::from_nanos(1_500_000_000);
        assert_eq!(l.shown_rtt(soon, batched), Some(Duration::from_micros(60)));
        // A busy path sends no keepalives: the feedback RTT again.
        let later = Instant::from_nanos(3_000_000_000);
        assert_eq!(l.shown_rtt(later, batched), batched);
        assert_eq!(l.shown_rtt(later, None), Some(Duration::from_micros(60)));
    }

    #[test]
    fn liveness_deadlines() {
        let ms = Instant::from_millis;
        let iv = Duration::from_millis(200);
        let mut l = PathLink::new(PathId(1), Some("127.0.0.1:1".parse().unwrap()));
        assert_eq!(l.down_at(iv), None);
        assert_eq!(l.keepalive_at(iv), Some(Instant::ZERO));
        l.last_keepalive_tx = Some(ms(0));
        assert_eq!(l.keepalive_at(iv), Some(ms(200)));
        assert!(l.on_rx(ms(150), 40));
        assert!(!l.on_rx(ms(100), 40), "already up; time does not go back");
        assert_eq!(l.keepalive_at(iv), Some(ms(350)));
        assert_eq!(l.down_at(Duration::from_millis(600)), Some(ms(750)));
        assert_eq!((l.rx_packets, l.rx_bytes), (2, 80));
        // A far path may stay silent for its keepalive round trip plus two
        // intervals: an idle one hears an echo every interval + RTT.
        let timeout = Duration::from_millis(600);
        assert_eq!(l.silence_limit(timeout, iv), timeout);
        l.keepalive_rtt_min = Some(Duration::from_millis(600));
        assert_eq!(l.silence_limit(timeout, iv), Duration::from_millis(1000));
        l.remote = None;
        assert_eq!(l.keepalive_at(iv), None);
    }
}
