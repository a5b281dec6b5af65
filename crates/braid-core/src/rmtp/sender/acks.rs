//! What an acknowledgement does at the sender: the SACK bitmap, the
//! marker frames that find losses without a timer, the RTT, packet-pair
//! and jitter inputs of the channel's rate, and receiver-queue flow
//! control (§3.4 (2)). See the module doc of `sender`.

use super::Sender;
use crate::rmtp::channel::State;
use crate::rmtp::wire::Ack;
use crate::time::{Duration, Instant};

impl Sender {
    /// An acknowledgement arrived.
    pub fn handle_ack(&mut self, now: Instant, ack: &Ack) {
        let ch = usize::from(ack.channel);
        if !ack.update && ch < self.channels.len() {
            self.on_channel_ack(now, ch, ack);
        }
        // SACK: frames the bitmap shows held.
        let top = ack.cum.saturating_add(u64::from(ack.words) * 32);
        let held: Vec<u64> = self
            .frames
            .range(ack.cum..top)
            .filter(|(s, f)| !f.sacked && ack.has(**s))
            .map(|(s, _)| *s)
            .collect();
        for s in held {
            if let Some(f) = self.frames.get_mut(&s) {
                f.sacked = true;
            }
            self.retx.remove(&s);
        }
        if ack.cum > self.cum {
            self.cum = ack.cum.min(self.next_seq);
            self.frames = self.frames.split_off(&self.cum);
            self.retx = self.retx.split_off(&self.cum);
        }
        if ack.done || (self.fin_sent && self.cum >= self.next_seq) {
            self.done = true;
            self.frames.clear();
            self.retx.clear();
        }
        // Flow control on the receiver queue.
        if ack.queue_free == 0 {
            if !self.stopped {
                self.stopped = true;
                self.stats.flow_stops += 1;
                self.persist_at = Some(now + self.cfg.persist);
                for c in &mut self.channels {
                    c.rate.halve();
                }
            }
        } else if self.stopped {
            self.stopped = false;
            self.persist_at = None;
        }
    }

    fn on_channel_ack(&mut self, now: Instant, ch: usize, ack: &Ack) {
        let min_rto = self.cfg.min_rto;
        let c = &mut self.channels[ch];
        c.last_ack_at = now;
        c.silent = 0;
        // The acknowledged transmission, and the markers it makes of the
        // frames sent before it on this channel.
        let mut pair_pos = 0;
        let mut lost = Vec::new();
        while let Some(&(cs, seq, sent, pp)) = c.outstanding.front() {
            let d = ack.chan_seq.wrapping_sub(cs) as i32;
            if d < 0 {
                break;
            }
            c.outstanding.pop_front();
            if d == 0 {
                let rtt = now.saturating_since(sent);
                c.rtt_sample(rtt);
                pair_pos = pp;
                // Acknowledged but not held (it fell outside the
                // receiver's window): lost, or nothing would ever resend
                // it, since no later marker covers it.
                if !ack.has(seq) {
                    lost.push(seq);
                }
                // The second frame's ACK follows the first's within a
                // dispersion; one RTT later the pair is given up.
                if let (1, State::Probing(dl)) = (pp, c.state) {
                    c.state = State::Probing(dl.min(now + rtt));
                }
                break;
            }
            if !ack.has(seq) {
                lost.push(seq);
            }
        }
        let srtt = c.srtt.unwrap_or(min_rto);
        if pair_pos == 2 {
            if ack.pair_us > 0 {
                c.rate
                    .on_pair(Duration::from_micros(u64::from(ack.pair_us)));
                if matches!(c.state, State::Probing(_) | State::Down(_)) {
                    c.state = State::Up;
                    c.pacer.reset(now);
                }
            } else if matches!(c.state, State::Probing(_)) {
                c.state = State::Probe;
            }
        }
        if c.state == State::Up {
            if ack.ce {
                c.rate.on_ce(now, srtt);
            }
            c.rate.on_jitter(now, ack.jitter_us, srtt);
        }
        for s in lost {
            self.mark_lost(s, false);
        }
        self.maybe_fix_window(now);
    }
}
