//! The payloads the sending tunnel keeps for repair: every data packet
//! until it is acknowledged, its repair time has passed, or memory runs
//! out, whichever comes first.
//!
//! Bounded: at most `max_bytes` of payload and entries at most `max_age`
//! old; beyond either the oldest go first. Entries are kept in send order,
//! so pruning looks only at the front (O(1) per packet amortised).

use std::collections::{HashMap, VecDeque};

use crate::time::{Duration, Instant};

/// Payloads of recently sent packets by tunnel sequence number.
#[derive(Debug)]
pub struct Retained {
    max_bytes: usize,
    max_age: Duration,
    by_seq: HashMap<u64, Vec<u8>>,
    /// (sequence number, when stored), oldest first.
    order: VecDeque<(u64, Instant)>,
    bytes: usize,
    /// Payloads dropped for memory before their time was up.
    pub evicted_for_memory: u64,
}

impl Retained {
    pub fn new(max_bytes: usize, max_age: Duration) -> Self {
        Retained {
            max_bytes,
            max_age,
            by_seq: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            evicted_for_memory: 0,
        }
    }

    /// Keeps `payload` of packet `seq`, sent at `now`. A payload larger
    /// than the whole budget is not kept.
    pub fn insert(&mut self, now: Instant, seq: u64, payload: &[u8]) {
        if payload.len() > self.max_bytes || self.by_seq.contains_key(&seq) {
            return;
        }
        while self.bytes + payload.len() > self.max_bytes {
            if !self.pop_front() {
                break;
            }
            self.evicted_for_memory += 1;
        }
        self.bytes += payload.len();
        self.by_seq.insert(seq, payload.to_vec());
        self.order.push_back((seq, now));
    }

    /// The payload of `seq`, if still kept.
    pub fn get(&self, seq: u64) -> Option<&[u8]> {
        self.by_seq.get(&seq).map(|v| v.as_slice())
    }

    /// Forgets the oldest entries while they are older than `max_age` or
    /// `done` says they need no repair any more (acknowledged).
    pub fn prune(&mut self, now: Instant, mut done: impl FnMut(u64) -> bool) {
        while let Some(&(seq, at)) = self.order.front() {
            if now.saturating_since(at) <= self.max_age && !done(seq) {
                break;
            }
            self.pop_front();
        }
    }

    fn pop_front(&mut self) -> bool {
        let Some((seq, _)) = self.order.pop_front() else {
            return false;
        };
        if let Some(v) = self.by_seq.remove(&seq) {
            self.bytes -= v.len();
        }
        true
    }

    /// Payload bytes kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Packets kept.
    pub fn len(&self) -> usize {
        self.by_seq.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.by_seq.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keeps_until_acked_or_old() {
        let mut r = Retained::new(10_000, Duration::from_secs(2));
        let t0 = Instant::from_millis(0);
        for seq in 0..5 {
            r.insert(t0, seq, &[seq as u8; 100]);
        }
        assert_eq!((r.len(), r.bytes()), (5, 500));
        assert_eq!(r.get(3), Some(&[3u8; 100][..]));
        // 0 and 1 acknowledged: gone; 3 acknowledged but behind 2: kept.
        r.prune(t0, |s| s == 0 || s == 1 || s == 3);
        assert_eq!(r.len(), 3);
        assert!(r.get(1).is_none() && r.get(2).is_some());
        // Past the age bound everything goes.
        r.prune(t0 + Duration::from_millis(2001), |_| false);
        assert!(r.is_empty());
        assert_eq!(r.bytes(), 0);
    }

    proptest! {
        /// Whatever is inserted, kept bytes never exceed the bound and
        /// match the sum of what is kept.
        #[test]
        fn memory_stays_bounded(
            max in 1usize..5000,
            ops in proptest::collection::vec((0usize..2000, 0u64..50, any::<bool>()), 1..300),
        ) {
            let mut r = Retained::new(max, Duration::from_millis(100));
            let mut now = Instant::ZERO;
            for (i, (len, dt, ack)) in ops.into_iter().enumerate() {
                now += Duration::from_millis(dt);
                r.insert(now, i as u64, &vec![1u8; len]);
                prop_assert!(r.bytes() <= max);
                if ack {
                    r.prune(now, |s| s % 2 == 0);
                }
                let sum: usize = (0..=i as u64).filter_map(|s| r.get(s)).map(|v| v.len()).sum();
                prop_assert_eq!(sum, r.bytes());
            }
        }
    }
}
