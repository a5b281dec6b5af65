//! Anti-replay sliding window (RFC 6479, "IPsec Anti-Replay Algorithm
//! without Bit Shifting").
//!
//! Why a window and not "counter must grow": braid spreads one session's
//! packets over several paths with different delays, so they arrive out of
//! order by design. A packet is accepted if its counter is newer than any
//! seen, or within [`WINDOW_SIZE`] of the newest and not seen before.
//!
//! Why RFC 6479's ring of blocks: moving the window forward clears whole
//! 64-bit blocks instead of shifting a large bitmap, so the cost of an
//! update is bounded by the number of blocks skipped (at most
//! [`RING_BLOCKS`]), whatever the jump. The layout and the arithmetic follow
//! wireguard-go `replay/replay.go`; the zero value (counter 0 not yet seen)
//! is ready to use.
//!
//! Why two phases (as boringtun's `will_accept` / `mark_did_receive`):
//! [`ReplayWindow::will_accept`] is a cheap read-only check done *before*
//! decryption so that replayed or stale packets cost no AEAD work, and
//! [`ReplayWindow::mark`] is done only *after* authentication, so a forged
//! packet (which fails authentication) can never move the window or
//! poison a counter the real sender will use later.

/// log2 of the bits in a block.
const BLOCK_BITS_LOG: u32 = 6;
/// Bits in one bitmap block (one `u64`).
const BLOCK_BITS: u64 = 1 << BLOCK_BITS_LOG;
/// Blocks in the ring; a power of two so that `& BLOCK_MASK` is the modulo.
pub const RING_BLOCKS: usize = 128;
const BLOCK_MASK: u64 = RING_BLOCKS as u64 - 1;
const BIT_MASK: u64 = BLOCK_BITS - 1;

/// How far behind the newest counter a packet may be and still be
/// accepted: `(RING_BLOCKS - 1) * 64 = 8128` counters (RFC 6479 Section 2:
/// one block of the ring is the one being recycled). Chosen as large as
/// wireguard-go's because multipath reordering is deeper than single-path
/// reordering: at 90 kpps and a 50 ms delay spread between paths a packet
/// can be ~4500 counters late. It costs 1 KiB per session.
pub const WINDOW_SIZE: u64 = (RING_BLOCKS as u64 - 1) * BLOCK_BITS;

/// RFC 6479 sliding window over 64-bit packet counters.
#[derive(Clone, PartialEq, Eq)]
pub struct ReplayWindow {
    /// Greatest counter marked so far (0 when none).
    last: u64,
    /// Bitmap of seen counters; block `(c >> 6) % RING_BLOCKS`, bit `c & 63`.
    ring: [u64; RING_BLOCKS],
}

impl ReplayWindow {
    /// An empty window: every counter, including 0, is acceptable.
    pub const fn new() -> Self {
        ReplayWindow {
            last: 0,
            ring: [0; RING_BLOCKS],
        }
    }

    /// Forgets everything seen.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// The greatest counter marked so far (0 if none).
    pub fn last(&self) -> u64 {
        self.last
    }

    /// Would `counter` be accepted? Read-only; call before decrypting.
    pub fn will_accept(&self, counter: u64) -> bool {
        if counter > self.last {
            return true;
        }
        if self.last - counter > WINDOW_SIZE {
            return false; // behind the window: cannot tell, so refuse
        }
        let (block, bit) = Self::position(counter);
        self.ring[block] & bit == 0
    }

    /// Records `counter` as received; call only after the packet was
    /// authenticated. Returns `false` (and changes nothing) if the counter
    /// is a duplicate or too old, `true` if it was fresh.
    pub fn mark(&mut self, counter: u64) -> bool {
        if counter > self.last {
            // Move the window forward: clear the blocks between the old
            // newest block (exclusive) and the new one (inclusive). A jump of
            // more than the ring clears the whole ring (RFC 6479 Section 3).
            let current = self.last >> BLOCK_BITS_LOG;
            let diff = ((counter >> BLOCK_BITS_LOG) - current).min(RING_BLOCKS as u64);
            for i in 1..=diff {
                self.ring[((current + i) & BLOCK_MASK) as usize] = 0;
            }
            self.last = counter;
        } else if self.last - counter > WINDOW_SIZE {
            return false;
        }
        let (block, bit) = Self::position(counter);
        let old = self.ring[block];
        self.ring[block] = old | bit;
        old & bit == 0
    }

    /// Ring block index and bit mask of `counter`.
    fn position(counter: u64) -> (usize, u64) {
        (
            ((counter >> BLOCK_BITS_LOG) & BLOCK_MASK) as usize,
            1u64 << (counter & BIT_MASK),
        )
    }
}

impl Default for ReplayWindow {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for ReplayWindow {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ReplayWindow")
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both phases, as a session uses them.
    fn accept(w: &mut ReplayWindow, c: u64) -> bool {
        w.will_accept(c) && w.mark(c)
    }

    #[test]
    fn counter_zero_is_accepted_once() {
        let mut w = ReplayWindow::new();
        assert!(w.will_accept(0));
        assert!(w.mark(0));
        assert!(!w.will_accept(0));
        assert!(!w.mark(0));
    }

    #[test]
    fn in_order_all_accepted_then_all_duplicates() {
        let mut w = ReplayWindow::new();
        for c in 0..10_000 {
            assert!(accept(&mut w, c), "counter {c}");
        }
        for c in 10_000 - WINDOW_SIZE..10_000 {
            assert!(!accept(&mut w, c), "duplicate {c}");
        }
    }

    #[test]
    fn reordered_within_window_accepted() {
        let mut w = ReplayWindow::new();
        assert!(accept(&mut w, 10_000));
        for c in (10_000 - WINDOW_SIZE..10_000).rev() {
            assert!(accept(&mut w, c), "late counter {c}");
        }
        assert!(accept(&mut w, 10_001));
        for c in 10_000 - WINDOW_SIZE..=10_001 {
            assert!(!w.will_accept(c));
        }
    }

    #[test]
    fn will_accept_does_not_mutate() {
        let mut w = ReplayWindow::new();
        assert!(w.will_accept(100));
        assert!(w.will_accept(100));
        assert_eq!(w.last(), 0);
        assert!(w.mark(100));
        assert!(!w.will_accept(100));
    }

    #[test]
    fn duplicate_rejected() {
        let mut w = ReplayWindow::new();
        assert!(accept(&mut w, 7));
        assert!(accept(&mut w, 3));
        assert!(!accept(&mut w, 7));
        assert!(!accept(&mut w, 3));
        assert!(accept(&mut w, 4));
    }

    #[test]
    fn too_old_rejected() {
        let mut w = ReplayWindow::new();
        let top = 100_000;
        assert!(accept(&mut w, top));
        assert!(w.will_accept(top - WINDOW_SIZE));
        assert!(!w.will_accept(top - WINDOW_SIZE - 1));
        assert!(!w.mark(top - WINDOW_SIZE - 1));
        assert!(!accept(&mut w, 0));
        assert_eq!(w.last(), top);
    }

    #[test]
    fn far_jump_ahead_clears_whole_ring() {
        let mut w = ReplayWindow::new();
        for c in 0..WINDOW_SIZE {
            assert!(accept(&mut w, c));
        }
        // Jump exactly one ring ahead: the same ring slots come back around
        // and must read as unseen.
        let jump = RING_BLOCKS as u64 * BLOCK_BITS;
        let top = WINDOW_SIZE - 1 + jump;
        assert!(accept(&mut w, top));
        for c in top - WINDOW_SIZE..top {
            assert!(
                w.will_accept(c),
                "counter {c} should be fresh after the jump"
            );
        }
        // And a huge jump.
        let huge = u64::MAX - 1;
        assert!(accept(&mut w, huge));
        assert!(!accept(&mut w, top));
        for c in huge - WINDOW_SIZE..huge {
            assert!(w.will_accept(c), "counter {c}");
        }
        assert!(accept(&mut w, u64::MAX));
        assert!(!accept(&mut w, u64::MAX));
    }

    #[test]
    fn small_jump_clears_only_skipped_blocks() {
        let mut w = ReplayWindow::new();
        for c in 0..200 {
            assert!(accept(&mut w, c));
        }
        assert!(accept(&mut w, 1000));
        for c in 0..200 {
            assert!(!w.will_accept(c), "counter {c} still seen");
        }
        for c in 200..1000 {
            assert!(w.will_accept(c), "counter {c} unseen");
        }
    }

    #[test]
    fn reset_forgets() {
        let mut w = ReplayWindow::new();
        assert!(accept(&mut w, 42));
        w.reset();
        assert!(accept(&mut w, 42));
    }
}
