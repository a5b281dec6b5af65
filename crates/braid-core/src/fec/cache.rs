//! Codes kept by shape, so a block is coded without building its code.
//!
//! Building a `(k + m, k)` code inverts a `k × k` matrix over GF(2^8)
//! (`O(k³)`); MPLOT's blocks have 80-250 shards, where that takes longer
//! than sending the block. Measured in the lab (`perf record` of `braid
//! send` and `braid recv` on lab/cellular, 2026-11-26): with a code built
//! per block the sender spent 50 % and the receiver 60 % of their time in
//! that inversion, and the receiver's delay before its ACKs read to the
//! sender as a standing queue of 15-25 ms on every path.

use super::{BlockCode, FecError};

/// The codes of the last few block shapes used, most recent last.
#[derive(Clone, Debug)]
pub struct CodeCache {
    codes: Vec<BlockCode>,
    cap: usize,
}

impl CodeCache {
    /// A cache of at most `cap` codes (at least one). Each code keeps its
    /// own bounded cache of decoding matrices (the crate's LRU of 254
    /// loss patterns, `k²` bytes each), so a receiver's cache should stay
    /// small.
    pub fn new(cap: usize) -> Self {
        CodeCache {
            codes: Vec::new(),
            cap: cap.max(1),
        }
    }

    /// The code with `data` data and `parity` parity shards, built on
    /// first use; the least recently used code leaves when the cache is
    /// full.
    pub fn get(&mut self, data: usize, parity: usize) -> Result<&BlockCode, FecError> {
        let hit = self
            .codes
            .iter()
            .position(|c| c.data_shards() == data && c.parity_shards() == parity);
        let code = match hit {
            Some(i) => self.codes.remove(i),
            None => BlockCode::new(data, parity)?,
        };
        if self.codes.len() >= self.cap {
            self.codes.remove(0);
        }
        self.codes.push(code);
        Ok(self.codes.last().expect("just pushed"))
    }

    /// Codes held.
    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_kept_up_to_the_cap_least_recent_first_out() {
        let mut c = CodeCache::new(2);
        assert_eq!(c.get(4, 2).unwrap().data_shards(), 4);
        c.get(5, 1).unwrap();
        // A hit makes (4, 2) the most recent, so (5, 1) leaves next.
        c.get(4, 2).unwrap();
        c.get(6, 3).unwrap();
        assert_eq!(c.len(), 2);
        let shapes: Vec<_> = c
            .codes
            .iter()
            .map(|k| (k.data_shards(), k.parity_shards()))
            .collect();
        assert_eq!(shapes, vec![(4, 2), (6, 3)]);
        assert!(c.get(0, 1).is_err());
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn a_cached_code_codes_as_a_new_one() {
        let mut c = CodeCache::new(4);
        let data: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 16]).collect();
        let fresh = BlockCode::new(5, 3).unwrap().encode(&data).unwrap();
        c.get(5, 3).unwrap();
        c.get(2, 2).unwrap();
        assert_eq!(c.get(5, 3).unwrap().encode(&data).unwrap(), fresh);
    }
}
