//! A fixed-size ring of bits indexed by packet sequence number.
//!
//! Both ends of the TCP model need a set of packet numbers that lives inside
//! a sliding window: the receiver's out-of-order store (ns-2 `TCPSink` keeps
//! a `seen_` array of the same kind) and the sender's SACK scoreboard
//! (RFC 6675 Section 3). Because neither side ever looks further than one
//! window past its left edge, bit `seq mod capacity` can stand for `seq`,
//! provided the owner clears bits as the left edge passes them. The memory is
//! allocated once, at construction; every operation afterwards is
//! allocation-free and works a 64-bit word at a time, so scanning a window of
//! 10 000 packets costs about 160 word operations.

/// Bit ring; see the module documentation. All range arguments are
/// half-open `[from, to)` sequence ranges no longer than [`Self::capacity`].
#[derive(Clone, Debug)]
pub(crate) struct BitRing {
    words: Vec<u64>,
    mask: u64,
}

/// One word-aligned piece of a sequence range: the word index in the ring,
/// the mask of bits inside the range, and the sequence number of bit 0.
#[derive(Copy, Clone, Debug)]
struct Chunk {
    idx: usize,
    mask: u64,
    base: u64,
}

#[inline]
fn low_mask(n: u64) -> u64 {
    if n >= 64 {
        !0
    } else {
        (1u64 << n) - 1
    }
}

impl BitRing {
    /// A ring holding at least `min_bits` consecutive sequence numbers
    /// (rounded up to a power of two, at least 64).
    pub(crate) fn new(min_bits: u64) -> Self {
        let cap = min_bits.max(64).next_power_of_two();
        BitRing {
            words: vec![0; (cap / 64) as usize],
            mask: cap - 1,
        }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.mask + 1
    }

    #[inline]
    fn loc(&self, seq: u64) -> (usize, u64) {
        let i = seq & self.mask;
        ((i >> 6) as usize, 1u64 << (i & 63))
    }

    #[inline]
    pub(crate) fn get(&self, seq: u64) -> bool {
        let (w, b) = self.loc(seq);
        self.words[w] & b != 0
    }

    /// Sets the bit; returns true if it was clear.
    #[inline]
    pub(crate) fn set(&mut self, seq: u64) -> bool {
        let (w, b) = self.loc(seq);
        let was = self.words[w] & b;
        self.words[w] |= b;
        was == 0
    }

    #[inline]
    pub(crate) fn clear(&mut self, seq: u64) {
        let (w, b) = self.loc(seq);
        self.words[w] &= !b;
    }

    /// Splits `[from, to)` into word-aligned chunks, lowest first.
    #[inline]
    fn chunk_fwd(&self, pos: u64, to: u64) -> Chunk {
        let bit = pos & 63;
        let n = (64 - bit).min(to - pos);
        Chunk {
            idx: ((pos & self.mask) >> 6) as usize,
            mask: low_mask(n) << bit,
            base: pos - bit,
        }
    }

    /// The highest word-aligned chunk of `[from, end)`.
    #[inline]
    fn chunk_rev(&self, from: u64, end: u64) -> Chunk {
        let last = end - 1;
        let base = last - (last & 63);
        let start = from.max(base);
        let n = end - start;
        Chunk {
            idx: ((last & self.mask) >> 6) as usize,
            mask: low_mask(n) << (start & 63),
            base,
        }
    }

    #[inline]
    fn clamp(&self, from: u64, to: u64) -> u64 {
        debug_assert!(
            to <= from || to - from <= self.capacity(),
            "range wider than ring"
        );
        to.min(from.saturating_add(self.capacity()))
    }

    /// Sets every bit in `[from, to)`.
    pub(crate) fn set_range(&mut self, from: u64, to: u64) {
        let to = self.clamp(from, to);
        let mut pos = from;
        while pos < to {
            let c = self.chunk_fwd(pos, to);
            self.words[c.idx] |= c.mask;
            pos = c.base + 64;
        }
    }

    /// Clears every bit in `[from, to)`; a range wider than the ring clears
    /// the whole ring.
    pub(crate) fn clear_range(&mut self, from: u64, to: u64) {
        if to <= from {
            return;
        }
        if to - from >= self.capacity() {
            self.words.iter_mut().for_each(|w| *w = 0);
            return;
        }
        let mut pos = from;
        while pos < to {
            let c = self.chunk_fwd(pos, to);
            self.words[c.idx] &= !c.mask;
            pos = c.base + 64;
        }
    }

    /// Number of set bits in `[from, to)`.
    pub(crate) fn count_ones(&self, from: u64, to: u64) -> u64 {
        self.fold_pair(self, from, to, |a, _| a)
    }

    /// Sum over `[from, to)` of the set bits of `f(self_word, other_word)`;
    /// `other` must have the same capacity.
    #[inline]
    pub(crate) fn fold_pair(
        &self,
        other: &BitRing,
        from: u64,
        to: u64,
        f: impl Fn(u64, u64) -> u64,
    ) -> u64 {
        debug_assert_eq!(self.mask, other.mask);
        let to = self.clamp(from, to);
        let mut pos = from;
        let mut n = 0;
        while pos < to {
            let c = self.chunk_fwd(pos, to);
            n += u64::from((f(self.words[c.idx], other.words[c.idx]) & c.mask).count_ones());
            pos = c.base + 64;
        }
        n
    }

    /// Lowest sequence number in `[from, to)` whose bit in
    /// `f(self_word, other_word)` is set.
    #[inline]
    pub(crate) fn find_pair(
        &self,
        other: &BitRing,
        from: u64,
        to: u64,
        f: impl Fn(u64, u64) -> u64,
    ) -> Option<u64> {
        debug_assert_eq!(self.mask, other.mask);
        let to = self.clamp(from, to);
        let mut pos = from;
        while pos < to {
            let c = self.chunk_fwd(pos, to);
            let w = f(self.words[c.idx], other.words[c.idx]) & c.mask;
            if w != 0 {
                return Some(c.base + u64::from(w.trailing_zeros()));
            }
            pos = c.base + 64;
        }
        None
    }

    /// Lowest set sequence number in `[from, to)`.
    pub(crate) fn next_one(&self, from: u64, to: u64) -> Option<u64> {
        self.find_pair(self, from, to, |a, _| a)
    }

    /// Lowest clear sequence number in `[from, to)`.
    pub(crate) fn next_zero(&self, from: u64, to: u64) -> Option<u64> {
        self.find_pair(self, from, to, |a, _| !a)
    }

    #[inline]
    fn find_rev(&self, from: u64, to: u64, invert: bool) -> Option<u64> {
        let from = to.saturating_sub(self.capacity()).max(from);
        let mut end = to;
        while end > from {
            let c = self.chunk_rev(from, end);
            let word = if invert {
                !self.words[c.idx]
            } else {
                self.words[c.idx]
            };
            let w = word & c.mask;
            if w != 0 {
                return Some(c.base + 63 - u64::from(w.leading_zeros()));
            }
            end = c.base.max(from);
        }
        None
    }

    /// Highest set sequence number in `[from, to)`.
    pub(crate) fn prev_one(&self, from: u64, to: u64) -> Option<u64> {
        self.find_rev(from, to, false)
    }

    /// Highest clear sequence number in `[from, to)`.
    pub(crate) fn prev_zero(&self, from: u64, to: u64) -> Option<u64> {
        self.find_rev(from, to, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Every query agrees with a BTreeSet model over a window that
        /// slides through several wraps of the ring.
        #[test]
        fn matches_btreeset(ops in proptest::collection::vec((0u8..6, 0u64..128, 0u64..128), 1..200)) {
            let mut ring = BitRing::new(128);
            let mut model = BTreeSet::new();
            let mut base = 1000u64; // live window [base, base + 128)
            for (op, x, y) in ops {
                let (a, b) = (base + x.min(y), base + x.max(y));
                match op {
                    0 => { ring.set(base + x); model.insert(base + x); }
                    1 => { ring.set_range(a, b); model.extend(a..b); }
                    2 => { ring.clear_range(a, b); for s in a..b { model.remove(&s); } }
                    3 => {
                        // slide the window: clear what falls off the left edge
                        let nb = base + x / 2;
                        ring.clear_range(base, nb);
                        model.retain(|&s| s >= nb);
                        base = nb;
                    }
                    _ => {}
                }
                let (a, b) = (base + x.min(y), base + x.max(y));
                prop_assert_eq!(ring.count_ones(a, b), model.range(a..b).count() as u64);
                prop_assert_eq!(ring.next_one(a, b), model.range(a..b).next().copied());
                prop_assert_eq!(ring.prev_one(a, b), model.range(a..b).next_back().copied());
                prop_assert_eq!(ring.next_zero(a, b), (a..b).find(|s| !model.contains(s)));
                prop_assert_eq!(ring.prev_zero(a, b), (a..b).rev().find(|s| !model.contains(s)));
                prop_assert_eq!(ring.get(base + x), model.contains(&(base + x)));
            }
        }
    }
}
