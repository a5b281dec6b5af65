//! One channel as the sender sees it (`SPECS.md` §4.1): its state
//! (probing, running, down, removed), its rate controller
//! ([`ChannelRate`]) and pacing slot, its frames in flight in send order
//! (what an ACK on the channel makes markers of, see `sender`), and its
//! RTT and silence timer.

use std::collections::VecDeque;

use crate::pacer::Pacer;
use crate::rmtp::rate::{ChannelRate, RateConfig};
use crate::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Needs a packet pair.
    Probe,
    /// A pair is out; it is deemed lost at this time (a probe timeout
    /// after it was sent, or one RTT after its first frame's ACK).
    Probing(Instant),
    Up,
    /// Silent: reprobed at the given time.
    Down(Instant),
    /// Removed by the application.
    Removed,
}

#[derive(Clone, Debug)]
pub(crate) struct Channel {
    pub(crate) state: State,
    pub(crate) rate: ChannelRate,
    /// The pacing slot (the shared [`Pacer`]), at the controller's rate.
    pub(crate) pacer: Pacer,
    pub(crate) chan_seq: u32,
    /// (chan_seq, seq, sent_at, pair position: 0 none, 1 first, 2
    /// second) of frames in flight, in send order.
    pub(crate) outstanding: VecDeque<(u32, u64, Instant, u8)>,
    pub(crate) srtt: Option<Duration>,
    pub(crate) rttvar: Duration,
    pub(crate) last_ack_at: Instant,
    pub(crate) silent: u32,
    pub(crate) since_pair: u64,
    /// The second frame of a pair goes out right after the first.
    pub(crate) pair_pending: bool,
}

impl Channel {
    pub(crate) fn new(rate: RateConfig) -> Self {
        Channel {
            state: State::Probe,
            rate: ChannelRate::new(rate),
            pacer: Pacer::new(),
            chan_seq: 0,
            outstanding: VecDeque::new(),
            srtt: None,
            rttvar: Duration::ZERO,
            last_ack_at: Instant::ZERO,
            silent: 0,
            since_pair: 0,
            pair_pending: false,
        }
    }

    pub(crate) fn rto(&self, min: Duration) -> Duration {
        let base = match self.srtt {
            Some(s) => (s + self.rttvar * 4).max(min),
            None => min.max(Duration::from_secs(1)),
        };
        base * (1u32 << self.silent.min(6))
    }

    pub(crate) fn rtt_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let d = s.abs_diff(r);
                self.rttvar = (self.rttvar * 3 + d) / 4;
                self.srtt = Some((s * 7 + r) / 8);
            }
        }
    }

    pub(crate) fn rto_deadline(&self, min: Duration) -> Option<Instant> {
        let &(_, _, sent, _) = self.outstanding.front()?;
        Some(sent.max(self.last_ack_at) + self.rto(min))
    }

    /// Takes the pacing slot at `now` for one frame (two periods for the
    /// first of a packet pair, whose second frame follows at once).
    ///
    /// Slots missed because the caller came late (a sleeping or
    /// descheduled send loop: 1-10 ms on a loaded host) are caught up, up
    /// to `catch_up` in whole periods; without that every late wake-up
    /// lost its slots and the channel ran below its rate. An idle channel
    /// does not save up more for a burst ([`Pacer::take`], the slot MPLOT's
    /// paths use too).
    pub(crate) fn take_slot(&mut self, now: Instant, catch_up: Duration, pair: bool) {
        let period = self.rate.period();
        let slots =
            (catch_up.as_nanos() / period.as_nanos().max(1)).min(u128::from(u32::MAX)) as u32;
        let gap = if pair { period * 2 } else { period };
        self.pacer.take(now, gap, period * slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_caller_catches_up_its_slots_within_the_bound() {
        let mut c = Channel::new(RateConfig::default());
        // 1000 frames/s: a period of 1 ms.
        c.rate.on_pair(Duration::from_micros(500));
        assert!((c.rate.rate_fps() - 1000.0).abs() < 1e-9);
        let t0 = Instant::from_millis(100);
        c.pacer.reset(t0);
        // The caller comes 3 ms late: the missed slots stay due.
        let now = t0 + Duration::from_millis(3);
        c.take_slot(now, Duration::from_millis(4), false);
        assert_eq!(c.pacer.next(), t0 + Duration::from_millis(1));
        // 50 ms late: at most 4 ms (4 slots) are caught up.
        let now = t0 + Duration::from_millis(50);
        c.take_slot(now, Duration::from_millis(4), false);
        assert_eq!(c.pacer.next(), now - Duration::from_millis(3));
        // No catch-up allowed: an idle channel starts from now.
        c.take_slot(now + Duration::from_millis(20), Duration::ZERO, true);
        assert_eq!(c.pacer.next(), now + Duration::from_millis(22));
    }
}
