//! Random Early Detection (Floyd and Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", 1993, Section 4) in bytes, with ECN
//! marking (RFC 3168 Section 5: a RED queue marks CE instead of dropping
//! an ECN-capable packet early).
//!
//! The average is updated at every arrival, `avg = (1 - w) avg + w q`;
//! after an idle period the average decays as if `m` small packets had
//! arrived to an empty queue, `avg = (1 - w)^m avg`, with `m` the idle
//! time over the transmission time of a 1500-byte packet (the paper's
//! `s`). Between the thresholds the early-drop probability is
//! `p_b = max_p (avg - min_th) / (max_th - min_th)`, spread out by the
//! count since the last early drop: `p_a = p_b / (1 - count p_b)`. In
//! byte mode (`RedParams::max_packet_bytes`; the paper's Section 4 scales
//! by the packet's size over the largest packet's) the count is of bytes,
//! in largest packets, and `p_a` is then scaled by that share, as ns-2's
//! `REDQueue::modify_p` does.

use braid_core::time::{Duration, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::params::RedParams;

/// What RED decides for an arrival.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RedVerdict {
    Pass,
    /// Early congestion signal: mark CE if the packet is ECN-capable,
    /// otherwise drop.
    Signal,
    /// The average is above `max_th`: drop.
    Drop,
}

#[derive(Clone, Debug)]
pub struct Red {
    p: RedParams,
    avg: f64,
    /// Arrivals since the last early signal; -1 after the average left
    /// the band (the paper's initialisation).
    count: i64,
    /// Bytes arrived since the last early signal (byte mode's count).
    count_bytes: u64,
    /// When the queue last went empty, if it is empty.
    idle_since: Option<Instant>,
}

impl Red {
    pub fn new(p: RedParams) -> Self {
        Red {
            p,
            avg: 0.0,
            count: -1,
            count_bytes: 0,
            idle_since: Some(Instant::ZERO),
        }
    }

    pub fn avg_bytes(&self) -> f64 {
        self.avg
    }

    /// An arrival of `bytes` at `now` finds `queued` bytes; `slot` is the
    /// time one 1500-byte packet takes at the current rate, `idle_since`
    /// when the queue last emptied if it is empty now.
    pub fn on_arrival(
        &mut self,
        now: Instant,
        queued: u64,
        bytes: u64,
        idle_since: Option<Instant>,
        slot: Duration,
        rng: &mut ChaCha8Rng,
    ) -> RedVerdict {
        let w = self.p.weight;
        match idle_since.or(self.idle_since) {
            Some(since) if queued == 0 => {
                let m = (now - since).as_secs_f64() / slot.as_secs_f64().max(1e-9);
                self.avg *= (1.0 - w).powf(m);
            }
            _ => self.avg = (1.0 - w) * self.avg + w * queued as f64,
        }
        self.idle_since = if queued == 0 { Some(now) } else { None };
        let (min, max) = (self.p.min_th_bytes as f64, self.p.max_th_bytes as f64);
        if self.avg < min {
            self.count = -1;
            self.count_bytes = 0;
            return RedVerdict::Pass;
        }
        let gentle = self.p.gentle && self.avg < 2.0 * max;
        if self.avg >= max && !gentle {
            self.count = 0;
            self.count_bytes = 0;
            return RedVerdict::Drop;
        }
        self.count += 1;
        self.count_bytes += bytes;
        let pb = if self.avg >= max {
            // Gentle: max_p at max_th, rising to 1 at 2 max_th.
            self.p.max_p + (1.0 - self.p.max_p) * (self.avg - max) / max
        } else {
            self.p.max_p * (self.avg - min) / (max - min)
        };
        // The spreading by the count since the last signal, counted in
        // packets, or in byte mode in largest packets' worth of bytes; then
        // byte mode scales by this packet's share of the largest (ns-2's
        // `REDQueue::modify_p`). Scaling before the spreading would spread
        // a small packet's lower probability over the same packet count,
        // and in a queue of mixed sizes give small packets less than their
        // per-byte share.
        let count = match self.p.max_packet_bytes {
            Some(m) => self.count_bytes as f64 / f64::from(m),
            None => self.count as f64,
        };
        let denom = 1.0 - count * pb;
        let mut pa = if denom <= 0.0 { 1.0 } else { pb / denom };
        if let Some(m) = self.p.max_packet_bytes {
            if pa < 1.0 {
                pa *= (bytes as f64 / f64::from(m)).min(1.0);
            }
        }
        if rng.gen::<f64>() < pa {
            self.count = 0;
            self.count_bytes = 0;
            RedVerdict::Signal
        } else {
            RedVerdict::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// RED marking (ECN) between 10 and 30 kB with max_p 0.1, its average
    /// the instantaneous queue (weight 1), with a packet's slot and an
    /// arrival time to test it with.
    fn thresholds_10k_30k(gentle: bool) -> (Red, Duration, Instant) {
        let p = RedParams {
            min_th_bytes: 10_000,
            max_th_bytes: 30_000,
            max_p: 0.1,
            weight: 1.0,
            ecn: true,
            gentle,
            max_packet_bytes: None,
        };
        (
            Red::new(p),
            Duration::from_micros(1200),
            Instant::from_millis(1),
        )
    }

    #[test]
    fn passes_below_min_signals_between_drops_above() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (mut r, slot, t) = thresholds_10k_30k(false);
        assert_eq!(
            r.on_arrival(t, 5_000, 1500, None, slot, &mut rng),
            RedVerdict::Pass
        );
        assert_eq!(
            r.on_arrival(t, 40_000, 1500, None, slot, &mut rng),
            RedVerdict::Drop
        );
        // At the midpoint p_b = 0.05; with the count spreading, roughly one
        // signal per 1/(2 p_b) ~ 10..20 arrivals.
        let (mut r, _, _) = thresholds_10k_30k(false);
        let n = 20_000;
        let signals = (0..n)
            .filter(|_| r.on_arrival(t, 20_000, 1500, None, slot, &mut rng) == RedVerdict::Signal)
            .count();
        let rate = signals as f64 / n as f64;
        assert!((0.05..0.11).contains(&rate), "{rate}");
    }

    /// Byte mode: at the same average a 250-byte packet is signalled about
    /// a third as often as a 750-byte one, so both sources see the same
    /// signals per byte; packet mode signals them alike.
    #[test]
    fn byte_mode_signals_per_byte() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (r0, slot, t) = thresholds_10k_30k(false);
        let rate = |max_packet_bytes, bytes, rng: &mut ChaCha8Rng| {
            let mut r = Red::new(RedParams {
                max_packet_bytes,
                ..r0.p
            });
            let n = 40_000;
            (0..n)
                .filter(|_| r.on_arrival(t, 20_000, bytes, None, slot, rng) == RedVerdict::Signal)
                .count() as f64
                / n as f64
        };
        let (big, small) = (
            rate(Some(750), 750, &mut rng),
            rate(Some(750), 250, &mut rng),
        );
        let ratio = small / big;
        assert!((0.28..0.40).contains(&ratio), "{small} / {big}");
        let (big, small) = (rate(None, 750, &mut rng), rate(None, 250, &mut rng));
        assert!((0.9..1.1).contains(&(small / big)), "{small} / {big}");
        // One queue of both sizes, equal bytes of each (three small
        // packets to a large one): marks per byte within 15 % of equal.
        let mut r = Red::new(RedParams {
            max_packet_bytes: Some(750),
            ..r0.p
        });
        let (mut big_marks, mut small_marks) = (0u32, 0u32);
        for i in 0..200_000u32 {
            let bytes = if i % 4 == 0 { 750 } else { 250 };
            if r.on_arrival(t, 20_000, bytes, None, slot, &mut rng) == RedVerdict::Signal {
                if bytes == 750 {
                    big_marks += 1;
                } else {
                    small_marks += 1;
                }
            }
        }
        let per_byte = f64::from(small_marks) / f64::from(big_marks);
        assert!(
            (0.85..1.15).contains(&per_byte),
            "{small_marks} / {big_marks}"
        );
    }

    #[test]
    fn gentle_signals_between_max_and_twice_max() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (mut r, slot, t) = thresholds_10k_30k(true);
        let mut rate = |queued: u64| {
            let n = 10_000;
            let v: Vec<RedVerdict> = (0..n)
                .map(|_| r.on_arrival(t, queued, 1500, None, slot, &mut rng))
                .collect();
            assert!(!v.contains(&RedVerdict::Drop), "dropped at {queued}");
            v.iter().filter(|x| **x == RedVerdict::Signal).count() as f64 / n as f64
        };
        // Just above max_th: p_b = 0.1 + 0.9 * 3000 / 30000 = 0.19, spread
        // by the count to about 2 p_b / (1 + p_b) = 0.32.
        let low = rate(33_000);
        assert!((0.2..0.45).contains(&low), "{low}");
        // From p_b = 1/2 on the count makes every arrival a signal (as
        // ns-2's gentle RED does).
        let high = rate(45_000);
        assert!(high > 0.99, "{high}");
        assert_eq!(
            r.on_arrival(t, 60_000, 1500, None, slot, &mut rng),
            RedVerdict::Drop
        );
    }

    #[test]
    fn average_decays_while_idle() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let p = RedParams {
            weight: 0.1,
            ..RedParams::default()
        };
        let slot = Duration::from_micros(1200);
        let mut r = Red::new(p);
        let mut t = Instant::from_millis(1);
        for _ in 0..200 {
            r.on_arrival(t, 40_000, 1500, None, slot, &mut rng);
            t += Duration::from_micros(10);
        }
        let high = r.avg_bytes();
        assert!(high > 39_000.0);
        // 100 slots idle: (0.9)^100 ~ 3e-5.
        let idle_from = t;
        t += slot * 100;
        r.on_arrival(t, 0, 1500, Some(idle_from), slot, &mut rng);
        assert!(r.avg_bytes() < high * 1e-3, "{}", r.avg_bytes());
    }
}
