//! Per-source-address rate limit on the handshake initiations a server
//! under load processes (WireGuard paper Section 5.3; wireguard-go
//! `ratelimiter/ratelimiter.go`).
//!
//! Under load the server processes a message 1 only with a valid MAC2, so
//! the sender receives at its source address; this limit then caps what
//! any one such address can make the server spend on Diffie-Hellman. A
//! token bucket per IP address (IPv6: per /64, what one host usually
//! holds): [`PACKETS_PER_SECOND`] on average, bursts of [`BURST`], as
//! wireguard-go.
//!
//! State is bounded: at most [`MAX_ENTRIES`] addresses. An entry that has
//! been idle long enough to refill its bucket says nothing and is
//! forgotten at the next sweep; if the table is still full, a new address
//! is refused until entries age out. Only addresses that proved they
//! receive (valid MAC2) reach the table, so spoofed floods cannot fill it.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::time::{Duration, Instant};

/// Sustained initiations per second processed from one address.
pub const PACKETS_PER_SECOND: u64 = 20;
/// Initiations one address may send back to back.
pub const BURST: u64 = 5;
/// Most addresses tracked at once.
pub const MAX_ENTRIES: usize = 16_384;

/// Sweep idle entries at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// And a full table at most this often.
const FULL_SWEEP_EVERY: Duration = Duration::from_millis(100);

#[derive(Copy, Clone, Debug)]
struct Bucket {
    /// Nanoseconds of credit.
    tokens: u64,
    last: Instant,
}

/// Token buckets per source address.
#[derive(Debug)]
pub struct RateLimiter {
    buckets: HashMap<IpAddr, Bucket>,
    max_entries: usize,
    last_sweep: Instant,
    /// Cost of one packet, in nanoseconds of refill.
    packet_cost: u64,
    /// A full bucket.
    max_tokens: u64,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self::with_capacity(MAX_ENTRIES)
    }
}

impl RateLimiter {
    /// WireGuard's limit ([`PACKETS_PER_SECOND`], [`BURST`]) for at most
    /// `max_entries` addresses.
    pub fn with_capacity(max_entries: usize) -> Self {
        Self::new(PACKETS_PER_SECOND, BURST, max_entries)
    }

    /// `per_second` packets on average and bursts of `burst` per address,
    /// for at most `max_entries` addresses (the daemon also uses one to
    /// admit initiations into its handshake queue).
    pub fn new(per_second: u64, burst: u64, max_entries: usize) -> Self {
        let packet_cost = 1_000_000_000 / per_second.max(1);
        RateLimiter {
            buckets: HashMap::new(),
            max_entries: max_entries.max(1),
            last_sweep: Instant::ZERO,
            packet_cost,
            max_tokens: packet_cost * burst.max(1),
        }
    }

    /// Whether one more initiation from `ip` may be processed at `now`
    /// (and, if so, charges it).
    pub fn allow(&mut self, ip: IpAddr, now: Instant) -> bool {
        let key = bucket_key(ip);
        if now.saturating_since(self.last_sweep) >= SWEEP_EVERY {
            self.sweep(now);
        }
        if !self.buckets.contains_key(&key) && self.buckets.len() >= self.max_entries {
            // A full table is swept at most every `FULL_SWEEP_EVERY`: a
            // flood from ever new (spoofed) addresses must not cost a walk
            // of the whole table per packet.
            if now.saturating_since(self.last_sweep) >= FULL_SWEEP_EVERY {
                self.sweep(now);
            }
            if self.buckets.len() >= self.max_entries {
                return false;
            }
        }
        let (cost, max) = (self.packet_cost, self.max_tokens);
        let b = self.buckets.entry(key).or_insert(Bucket {
            tokens: max,
            last: now,
        });
        let refill = now.saturating_since(b.last).as_nanos().min(max as u128) as u64;
        b.tokens = b.tokens.saturating_add(refill).min(max);
        b.last = b.last.max(now);
        if b.tokens < cost {
            return false;
        }
        b.tokens -= cost;
        true
    }

    /// Addresses tracked.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Whether no address is tracked.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// Forgets entries whose bucket would be full again by `now`.
    fn sweep(&mut self, now: Instant) {
        let full_after = Duration::from_nanos(self.max_tokens);
        self.buckets
            .retain(|_, b| now.saturating_since(b.last) < full_after);
        self.last_sweep = now;
    }
}

/// IPv4 addresses as they are; IPv6 addresses by their /64.
fn bucket_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => {
            let mut o = v6.octets();
            o[8..].fill(0);
            IpAddr::V6(o.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn burst_then_sustained_rate() {
        let mut r = RateLimiter::default();
        let a = ip("192.0.2.1");
        let t0 = Instant::from_millis(10);
        for i in 0..BURST {
            assert!(r.allow(a, t0), "burst packet {i}");
        }
        assert!(!r.allow(a, t0), "burst exhausted");
        // Another address has its own bucket.
        assert!(r.allow(ip("192.0.2.2"), t0));
        // One packet's worth of refill every 50 ms.
        assert!(!r.allow(a, t0 + Duration::from_millis(49)));
        assert!(r.allow(a, t0 + Duration::from_millis(50)));
        assert!(!r.allow(a, t0 + Duration::from_millis(51)));
        // Over 10 s at a steady flood, about 20 per second get through.
        let mut passed = 0;
        for ms in 0..10_000u64 {
            if r.allow(a, t0 + Duration::from_millis(100 + ms)) {
                passed += 1;
            }
        }
        assert!((199..=206).contains(&passed), "{passed}");
    }

    #[test]
    fn custom_rate() {
        let mut r = RateLimiter::new(100, 2, 8);
        let (a, t0) = (ip("192.0.2.9"), Instant::ZERO);
        assert!(r.allow(a, t0) && r.allow(a, t0));
        assert!(!r.allow(a, t0));
        assert!(r.allow(a, t0 + Duration::from_millis(10)));
    }

    #[test]
    fn ipv6_limited_per_64() {
        let mut r = RateLimiter::default();
        let t0 = Instant::ZERO;
        for i in 0..BURST {
            assert!(r.allow(ip(&format!("2001:db8:1:2::{i:x}")), t0));
        }
        assert!(!r.allow(ip("2001:db8:1:2:ffff::1"), t0));
        assert!(r.allow(ip("2001:db8:1:3::1"), t0));
    }

    #[test]
    fn table_is_bounded_and_idle_entries_age_out() {
        let mut r = RateLimiter::with_capacity(3);
        let t0 = Instant::from_millis(1);
        for i in 1..=3 {
            assert!(r.allow(ip(&format!("10.0.0.{i}")), t0));
        }
        assert!(!r.allow(ip("10.0.0.4"), t0), "table full");
        assert_eq!(r.len(), 3);
        // New addresses keep being refused without a sweep each time.
        for i in 5..100 {
            assert!(!r.allow(ip(&format!("10.0.1.{i}")), t0));
        }
        // Known addresses still work while it is full.
        assert!(r.allow(ip("10.0.0.1"), t0));
        // Once their buckets would be full again they are forgotten.
        let later = t0 + Duration::from_millis(1000 / PACKETS_PER_SECOND * BURST);
        assert!(r.allow(ip("10.0.0.4"), later));
        assert_eq!(r.len(), 1);
    }
}
