//! Which handshake initiations the server's reader puts into the
//! handshake queue ([`super::intake`]), before any of them is copied:
//! per source address, and for all unconnected addresses together, in
//! three budgets (Diffie-Hellman, cookie reply only, retries with a MAC2).
//!
//! Why three: a flood from spoofed, ever new addresses passes every
//! per-address limit, so a cap on all of them together keeps it from
//! filling the main loop with DH work (WireGuard paper Section 5.3: under
//! load, no DH without a valid MAC2). But a brand-new client's first
//! initiation looks like the flood's; beyond the DH budget it is still
//! admitted for a cookie reply (cheap, and it puts the server under load
//! so that nothing admitted that way gets a DH), and its retry, which
//! carries a MAC2, has a budget the flood cannot use up.

use std::net::{IpAddr, Ipv4Addr};

use braid_core::conn::ratelimit::RateLimiter;
use braid_core::crypto::cookie::MAC_LEN;
use braid_core::crypto::handshake::INIT_MIN_LEN;
use braid_core::time::Instant;

use super::intake::HANDSHAKE_READS_SPREAD;

/// Initiations per second (and burst) one source address may put into the
/// handshake queue: twice the core's per-address limit on processed ones,
/// far above what a client sends (one per path every 5 s).
pub const ADMIT_PER_SECOND: u64 = 40;
pub const ADMIT_BURST: u64 = 10;
/// Source addresses the admission limit tracks at once.
pub const ADMIT_ENTRIES: usize = 4096;
/// Initiations per second (and burst) from all addresses not connected
/// together: a flood from ever new (spoofed) addresses passes every
/// per-address limit, and must not fill the main loop with work.
pub const ADMIT_ALL_PER_SECOND: u64 = 2000;
pub const ADMIT_ALL_BURST: u64 = 200;
/// Beyond [`ADMIT_ALL_PER_SECOND`], initiations without a MAC2 are still
/// admitted up to this many a second, but only as work for a cookie
/// reply: admitting one puts the server under load, where the core
/// answers it with a cookie (about 2.7 µs) and spends no DH. A
/// brand-new client whose first initiation is read during a spoofed flood
/// thus gets its cookie, instead of losing to the flood a second time for
/// a place in the DH budget.
pub const ADMIT_COOKIE_PER_SECOND: u64 = HANDSHAKE_READS_SPREAD - ADMIT_ALL_PER_SECOND;
pub const ADMIT_COOKIE_BURST: u64 = 2000;
/// Initiations per second (and burst) that carry a MAC2, from addresses
/// not connected, together: retries after a cookie reply, in their own
/// budget, which a flood without MAC2s cannot use up ([`super::steer`]
/// steers them to the data socket). A flood that forges MAC2s uses up
/// this budget alone; the core checks each MAC2 before any DH.
pub const ADMIT_MAC2_PER_SECOND: u64 = 500;
pub const ADMIT_MAC2_BURST: u64 = 50;
/// What the reader does with an initiation.
#[derive(Debug, PartialEq)]
pub enum Admit {
    Yes,
    /// Queued, and the server is under load for it: a cookie reply.
    CookieOnly,
    /// Dropped and counted.
    No,
}

/// Whether initiation `bytes` carries a MAC2 (its last [`MAC_LEN`]
/// bytes are not all zero), as the steering program tells.
pub fn has_mac2(bytes: &[u8]) -> bool {
    bytes.len() >= INIT_MIN_LEN && bytes[bytes.len() - MAC_LEN..].iter().any(|&b| b != 0)
}

/// The admission limits' state.
pub struct Admission {
    per_source: RateLimiter,
    /// One bucket for all addresses together (keyed by a fixed address).
    all: RateLimiter,
    /// Beyond it, for cookie replies only.
    cookie: RateLimiter,
    /// Initiations with a MAC2, together.
    mac2: RateLimiter,
    /// Initiations the per-address limit refused so far (the reader reads
    /// less of a flood it mostly refuses).
    pub refused_per_source: u64,
}

impl Default for Admission {
    fn default() -> Self {
        Self::new()
    }
}

impl Admission {
    pub fn new() -> Admission {
        Admission {
            per_source: RateLimiter::new(ADMIT_PER_SECOND, ADMIT_BURST, ADMIT_ENTRIES),
            all: RateLimiter::new(ADMIT_ALL_PER_SECOND, ADMIT_ALL_BURST, 1),
            cookie: RateLimiter::new(ADMIT_COOKIE_PER_SECOND, ADMIT_COOKIE_BURST, 1),
            mac2: RateLimiter::new(ADMIT_MAC2_PER_SECOND, ADMIT_MAC2_BURST, 1),
            refused_per_source: 0,
        }
    }

    /// An initiation from `ip` at `now`, with a MAC2 or not, from a
    /// connected client's address (`known`) or not: connected addresses
    /// always; others within their own rate and the rate of all of them
    /// together: with a MAC2 in its own budget, without in the DH budget
    /// and beyond it, for a cookie reply only, in the cookie budget.
    pub fn check(&mut self, ip: IpAddr, now: Instant, mac2: bool, known: bool) -> Admit {
        let all = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        if known {
            Admit::Yes
        } else if !self.per_source.allow(ip, now) {
            self.refused_per_source += 1;
            Admit::No
        } else if mac2 {
            if self.mac2.allow(all, now) {
                Admit::Yes
            } else {
                Admit::No
            }
        } else if self.all.allow(all, now) {
            Admit::Yes
        } else if self.cookie.allow(all, now) {
            Admit::CookieOnly
        } else {
            Admit::No
        }
    }
}
