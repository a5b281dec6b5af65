//! Time as the core sees it: a monotonic nanosecond counter chosen by the
//! caller. The simulator starts at [`Instant::ZERO`]; the daemon maps its
//! monotonic clock onto it. Nanoseconds because packet-pair dispersion at
//! 1 Gbit/s is 12 µs per 1500-byte packet.

use core::ops::{Add, AddAssign, Sub};
pub use core::time::Duration;

/// A point in time, in nanoseconds since an arbitrary origin.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    nanos: u64,
}

impl Instant {
    /// The origin; simulations start here.
    pub const ZERO: Instant = Instant { nanos: 0 };
    /// Later than any time a run reaches; used as "never".
    pub const FAR_FUTURE: Instant = Instant {
        nanos: u64::MAX / 2,
    };

    pub const fn from_nanos(nanos: u64) -> Self {
        Instant { nanos }
    }
    pub const fn from_micros(us: u64) -> Self {
        Instant { nanos: us * 1_000 }
    }
    pub const fn from_millis(ms: u64) -> Self {
        Instant {
            nanos: ms * 1_000_000,
        }
    }
    pub fn from_secs_f64(s: f64) -> Self {
        Instant {
            nanos: (s * 1e9).max(0.0) as u64,
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.nanos
    }
    pub fn as_secs_f64(self) -> f64 {
        self.nanos as f64 / 1e9
    }
    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.nanos.saturating_sub(earlier.nanos))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant {
            nanos: self
                .nanos
                .saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        }
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant {
            nanos: self
                .nanos
                .saturating_sub(d.as_nanos().min(u64::MAX as u128) as u64),
        }
    }
}

/// Saturating difference; use when the order is known.
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

/// Transmission time of `bytes` at `rate_bps` bits per second.
pub fn tx_time(bytes: u32, rate_bps: f64) -> Duration {
    if rate_bps <= 0.0 {
        return Duration::from_secs(3600);
    }
    Duration::from_nanos(((bytes as f64) * 8.0 * 1e9 / rate_bps).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_millis(5);
        assert_eq!(t - Instant::from_millis(7), Duration::ZERO);
        assert_eq!(t - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(t + Duration::from_millis(1), Instant::from_millis(6));
    }

    #[test]
    fn tx_time_of_1500_bytes_at_10_mbps_is_1_2_ms() {
        assert_eq!(tx_time(1500, 10e6), Duration::from_micros(1200));
    }
}
